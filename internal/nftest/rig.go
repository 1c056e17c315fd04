// Package nftest runs an NF type's program on crafted packets with
// BPF_PROG_TEST_RUN: no namespaces, no daemon. NF packages use it for their
// datapath tests.
package nftest

import (
	"encoding/json"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/datapath"
	"github.com/edgenf/edgenf/internal/nfrig"
	"github.com/edgenf/edgenf/internal/testenv"
)

// Rig is one cube of an NF type loaded into a private datapath (nfrig),
// whose operations fail the test instead of returning errors.
type Rig struct {
	*nfrig.Rig
	t testing.TB
}

// Frame is a frame the controller sent through its handle.
type Frame = nfrig.Frame

// FakeIfindex is the interface index every port appears to be peered with.
const FakeIfindex = nfrig.FakeIfindex

// New loads model (a cube of typ) into a datapath of its own and syncs its
// control plane. Every port looks peered with an interface, so a frame sent
// out of it comes back as XDP_REDIRECT / TC_ACT_REDIRECT with RunResult.Port
// set. Everything is removed when the test ends.
func New(t testing.TB, typ *cube.Type, model *cube.Cube) *Rig {
	t.Helper()
	testenv.NeedRoot(t)
	r, err := nfrig.Open(typ, model)
	if err != nil {
		t.Fatal(err)
	}
	r.Log = t.Logf
	t.Cleanup(r.Close)
	return &Rig{Rig: r, t: t}
}

// Run feeds frame to the cube as received on the named port.
func (r *Rig) Run(inPort string, frame []byte) datapath.RunResult {
	r.t.Helper()
	res, err := r.Rig.Run(inPort, frame)
	if err != nil {
		r.t.Fatal(err)
	}
	return res
}

// RunTransparent feeds frame to a transparent cube as seen in direction dir,
// on a hop that ends at an interface.
func (r *Rig) RunTransparent(dir datapath.Direction, frame []byte) datapath.RunResult {
	r.t.Helper()
	res, err := r.Rig.RunTransparent(dir, frame)
	if err != nil {
		r.t.Fatal(err)
	}
	return res
}

// Stats returns the cube's per-port counters.
func (r *Rig) Stats() []datapath.Stats {
	r.t.Helper()
	s, err := r.Rig.Stats()
	if err != nil {
		r.t.Fatal(err)
	}
	return s
}

// Entry returns the program an interface peered with the named port would
// run (the cube's direct entry), unattached; closed when the test ends.
func (r *Rig) Entry(inPort string) *ebpf.Program {
	r.t.Helper()
	prog, err := r.Rig.Entry(inPort)
	if err != nil {
		r.t.Fatal(err)
	}
	r.t.Cleanup(func() { prog.Close() })
	return prog
}

// Entry marshals a table entry for a cube model.
func Entry(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}
