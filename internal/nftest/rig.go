// Package nftest runs an NF type's program on crafted packets with
// BPF_PROG_TEST_RUN: no namespaces, no daemon. NF packages use it for their
// datapath tests.
package nftest

import (
	"encoding/json"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/datapath"
	"github.com/edgenf/edgenf/internal/testenv"
)

// Rig is one cube of an NF type loaded into a private datapath.
type Rig struct {
	t     testing.TB
	DP    *datapath.Datapath
	Prog  *datapath.Program
	Model *cube.Cube
	Type  *cube.Type
	Ctl   cube.Controller
	// Injected and Transmitted record the slow path's packet output.
	Injected    []Frame
	Transmitted []Frame
	// Point and PointAddrs are what the handle's AttachPoint answers (a
	// transparent cube's attachment point and its addresses).
	Point      string
	PointAddrs []netip.Prefix
}

// Frame is a frame the controller sent through its handle.
type Frame struct {
	Port int
	Data []byte
}

// FakeIfindex is the interface index every port appears to be peered with.
const FakeIfindex = 1

const rigSlot = 1

var seq atomic.Uint32

// New loads model (a cube of typ) into a datapath of its own and syncs its
// control plane. Every port looks peered with an interface, so a frame sent
// out of it comes back as XDP_REDIRECT / TC_ACT_REDIRECT with RunResult.Port
// set. Everything is removed when the test ends.
func New(t testing.TB, typ *cube.Type, model *cube.Cube) *Rig {
	t.Helper()
	testenv.NeedRoot(t)
	if model.Type == "" {
		model.Type = typ.Name
	}
	if model.Hook == "" {
		model.Hook = typ.Hooks[0]
	}
	topo := cube.NewTopology()
	topo.Cubes[model.Name] = model
	if err := topo.Validate(nil); err != nil {
		t.Fatalf("model: %v", err)
	}
	root := filepath.Join("/sys/fs/bpf", fmt.Sprintf("enft-%d-%d", os.Getpid(), seq.Add(1)))
	dp, err := datapath.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dp.Destroy() })
	obj, err := typ.ObjectOf(model)
	if err != nil {
		t.Fatal(err)
	}
	spec, err := datapath.LoadSpec(obj)
	if err != nil {
		t.Fatal(err)
	}
	dc, err := dp.LoadCube(model.Name, model.Hook, rigSlot, spec, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := &Rig{t: t, DP: dp, Prog: dc, Model: model, Type: typ, Ctl: typ.New()}
	for _, p := range model.Ports {
		if err := dc.SetHop(uint32(p.Index), datapath.Hop{Kind: datapath.DstIface, Ifindex: FakeIfindex}); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.Ctl.Sync(r.Handle(), model); err != nil {
		t.Fatalf("sync: %v", err)
	}
	return r
}

// Update replaces the model (after validating it) and re-syncs.
func (r *Rig) Update(model *cube.Cube) error {
	topo := cube.NewTopology()
	topo.Cubes[model.Name] = model
	if err := topo.Validate(nil); err != nil {
		return err
	}
	r.Model = model
	return r.Ctl.Sync(r.Handle(), model)
}

// Run feeds frame to the cube as received on the named port.
func (r *Rig) Run(inPort string, frame []byte) datapath.RunResult {
	r.t.Helper()
	p := r.Model.Port(inPort)
	if p == nil {
		r.t.Fatalf("no port %q", inPort)
	}
	res, err := r.DP.Run(r.Prog, uint32(p.Index), frame)
	if err != nil {
		r.t.Fatal(err)
	}
	return res
}

// RunTransparent feeds frame to a transparent cube as seen in direction dir,
// on a hop that ends at an interface.
func (r *Rig) RunTransparent(dir datapath.Direction, frame []byte) datapath.RunResult {
	r.t.Helper()
	hop, err := datapath.NewHop(datapath.DstIface, FakeIfindex, 0, 0, []datapath.Transparent{{Slot: rigSlot, Dir: dir}})
	if err != nil {
		r.t.Fatal(err)
	}
	if err := r.DP.SetMetadata(datapath.Metadata{Cube: datapath.MaxSlots, Hop: hop}); err != nil {
		r.t.Fatal(err)
	}
	out := make([]byte, len(frame)+512)
	ro := &ebpf.RunOptions{Data: frame, DataOut: out}
	v, err := r.Prog.EBPF().Run(ro)
	if err != nil {
		r.t.Fatal(err)
	}
	return datapath.RunResult{Verdict: v, Port: -1, Data: ro.DataOut}
}

// Stats returns the cube's per-port counters.
func (r *Rig) Stats() []datapath.Stats {
	r.t.Helper()
	s, err := r.Prog.Stats()
	if err != nil {
		r.t.Fatal(err)
	}
	return s
}

// Entry marshals a table entry for a cube model.
func Entry(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// Handle is the controller's view of the rig.
func (r *Rig) Handle() cube.Handle { return rigHandle{r} }

type rigHandle struct{ r *Rig }

func (h rigHandle) Map(name string) (*ebpf.Map, error) { return h.r.Prog.Map(name) }
func (h rigHandle) Inject(port int, frame []byte) error {
	h.r.Injected = append(h.r.Injected, Frame{port, append([]byte(nil), frame...)})
	return nil
}
func (h rigHandle) Transmit(port int, frame []byte) error {
	h.r.Transmitted = append(h.r.Transmitted, Frame{port, append([]byte(nil), frame...)})
	return nil
}
func (h rigHandle) PortIface(int) (*net.Interface, bool)  { return nil, false }
func (h rigHandle) PrepareRedirect(ifindex int) error     { return h.r.DP.EnsureRedirectTarget(ifindex) }
func (h rigHandle) AttachPoint() (string, []netip.Prefix) { return h.r.Point, h.r.PointAddrs }
func (h rigHandle) Controller() cube.Controller           { return h.r.Ctl }
func (h rigHandle) Logf(format string, args ...any)       { h.r.t.Logf(format, args...) }
