package slicer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/datapath"
	"github.com/edgenf/edgenf/internal/engine"
	"github.com/edgenf/edgenf/internal/netlab"
	"github.com/edgenf/edgenf/internal/nftest"
	"github.com/edgenf/edgenf/internal/tenant"
	"github.com/edgenf/edgenf/internal/testenv"
)

// chainCube is slice k's one-cube chain: a portfwd whose port in is the
// slice's entry (no peer) and whose port out goes to out ("": nowhere).
func chainCube(k int, tenantName, out string) *cube.Cube {
	return &cube.Cube{Name: fmt.Sprintf("c%d", k), Type: "portfwd", Hook: "tc", Tenant: tenantName,
		Ports: []cube.Port{{Name: "in", Index: 0}, {Name: "out", Index: 1, Peer: out}},
		Tables: map[string]map[string]json.RawMessage{"rules": {
			"in":  json.RawMessage(`{"in_port":"in","out_port":"out"}`),
			"out": json.RawMessage(`{"in_port":"out","out_port":"in"}`),
		}}}
}

// More slices than a slicer has ports: 70 slices, each leading straight
// into its own one-cube chain (chain, no slicer port). A ping from s to d
// is slice 66's (its dst rule): it goes through c66 alone, and d's reply
// comes back through c66 into the slicer and out by the uplink. No other
// slice sees a frame. The slices keep forwarding while the daemon is
// stopped, and a restarted daemon takes them over: the ping still goes
// through, and the slice can be taken apart.
func TestE2EMoreSlicesThanPorts(t *testing.T) {
	testenv.E2E(t)
	for _, hook := range []datapath.Hook{datapath.TC, datapath.XDP} {
		t.Run(string(hook), func(t *testing.T) { moreSlicesThanPorts(t, hook) })
	}
}

func moreSlicesThanPorts(t *testing.T, hook datapath.Hook) {
	const n, target = 70, 66
	lab := netlab.NewT(t)
	s, err := lab.Host("s")
	if err != nil {
		t.Fatal(err)
	}
	d, err := lab.Host("d")
	if err != nil {
		t.Fatal(err)
	}
	vs, err := lab.Veth(s, "eth0", "vs", "198.18.0.10/24")
	if err != nil {
		t.Fatal(err)
	}
	vd, err := lab.Veth(d, "eth0", "vd", "198.18.0.20/24")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []struct {
		h      *netlab.Host
		ip, to string
	}{{s, "198.18.0.20", "198.18.0.10"}, {d, "198.18.0.10", "198.18.0.20"}} {
		peer := map[*netlab.Host]*netlab.Host{s: d, d: s}[p.h]
		mac, err := peer.MAC("eth0")
		if err != nil {
			t.Fatal(err)
		}
		if err := p.h.SetNeigh("eth0", p.ip, mac.String()); err != nil {
			t.Fatal(err)
		}
	}
	cfg := engine.Config{PinRoot: filepath.Join("/sys/fs/bpf", fmt.Sprintf("enfe-%d-chains-%s", os.Getpid(), hook)),
		StateFile: filepath.Join(t.TempDir(), "state.json"), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	e, err := engine.Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := engine.DestroyAt(cfg); err != nil {
			t.Errorf("destroy engine: %v", err)
		}
	})
	nftest.MustUpdate(t, e, func(tp *cube.Topology) error {
		rows := map[string]json.RawMessage{}
		for k := 1; k <= n; k++ {
			dst, out := fmt.Sprintf("198.18.1.%d", k), ""
			if k == target {
				dst, out = "198.18.0.20", vd
			}
			name := fmt.Sprintf("s%d", k)
			rows[name] = nftest.Entry(Slice{Name: name, ID: k, Tenant: "t", Chain: fmt.Sprintf("c%d:in", k), Rules: []Rule{{Dst: dst}}})
			c := chainCube(k, "t", out)
			c.Hook = hook
			tp.Put(c)
		}
		tp.Put(&cube.Cube{Name: "sl", Type: "slicer", Hook: hook, Config: json.RawMessage(`{"uplink":"up"}`),
			Tables: map[string]map[string]json.RawMessage{"slices": rows},
			Ports:  []cube.Port{{Name: "up", Index: 0, Peer: vs}}})
		return nil
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.Ping(ctx, "198.18.0.20", 3); err != nil {
		t.Fatalf("ping through slice %d of %d: %v", target, n, err)
	}
	v, err := e.View(tenant.Admin, "sl", "status")
	if err != nil {
		t.Fatal(err)
	}
	for _, sl := range v.(*Status).Slices {
		if sl.Name == fmt.Sprintf("s%d", target) {
			if sl.InPackets < 3 || sl.ReturnPackets < 3 {
				t.Errorf("slice %s: in %d, return %d; want the 3 echoes in and their replies back", sl.Name, sl.InPackets, sl.ReturnPackets)
			}
		} else if sl.InPackets+sl.ReturnPackets > 0 {
			t.Errorf("slice %s saw %d in, %d back: another slice's frames", sl.Name, sl.InPackets, sl.ReturnPackets)
		}
	}
	if got := engine.SliceOf(e.Topology())[fmt.Sprintf("c%d", target)]; got != fmt.Sprintf("s%d", target) {
		t.Errorf("cube c%d's slice: %q", target, got)
	}
	e.Close()
	if err := s.Ping(ctx, "198.18.0.20", 2); err != nil {
		t.Fatalf("ping through slice %d with the daemon stopped: %v", target, err)
	}
	if e, err = engine.Open(cfg); err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if err := s.Ping(ctx, "198.18.0.20", 2); err != nil {
		t.Fatalf("ping through slice %d after a restart: %v", target, err)
	}
	// Taken apart: the slice goes, and its entry cube may be peered again.
	nftest.MustUpdate(t, e, func(tp *cube.Topology) error {
		if err := tp.DeleteEntry("sl", "slices", fmt.Sprintf("s%d", target)); err != nil {
			return err
		}
		return tp.SetPeer(fmt.Sprintf("c%d:in", target), "c1:out")
	})
	short, stop := context.WithTimeout(ctx, 3*time.Second)
	defer stop()
	if err := s.Ping(short, "198.18.0.20", 1); err == nil {
		t.Errorf("ping through a deleted slice (no default slice): answered")
	}
}

// A slice's chain entry is checked against the topology: it must be a port
// of a cube of the slice's tenant, at the slicer's hook, with no peer, and
// no other slice's; the cube and port cannot go while the slice leads into
// them. Each refusal names the field and leaves the state as it was.
func TestChainEntryRefusals(t *testing.T) {
	testenv.NeedRoot(t)
	e := nftest.Engine(t)
	slice := func(name string, id int, tenantName, chain string) json.RawMessage {
		return nftest.Entry(Slice{Name: name, ID: id, Tenant: tenantName, Chain: chain, Rules: []Rule{{Dst: fmt.Sprintf("198.18.0.%d", id)}}})
	}
	nftest.MustUpdate(t, e, func(tp *cube.Topology) error {
		for name, c := range map[string]*cube.Cube{"red1": chainCube(1, "red", ""), "blue1": chainCube(2, "blue", "")} {
			c.Name = name
			tp.Put(c)
		}
		tp.Put(&cube.Cube{Name: "sl", Type: "slicer", Hook: "tc", Config: json.RawMessage(`{"uplink":"up"}`),
			Tables: map[string]map[string]json.RawMessage{"slices": {"r": slice("r", 1, "red", "red1:in")}},
			Ports:  []cube.Port{{Name: "up", Index: 0}}})
		return nil
	})
	rev := e.Revision()
	cases := []struct {
		name  string
		fn    func(tp *cube.Topology) error
		want  error
		field string
	}{
		{"another tenant's cube", func(tp *cube.Topology) error {
			sl, err := tp.Edit("sl")
			sl.SetRow("slices", "b", slice("b", 2, "red", "blue1:in"))
			return err
		}, cube.ErrConflict, "cubes.sl.tables.slices[b].chain"},
		{"no such cube", func(tp *cube.Topology) error {
			sl, err := tp.Edit("sl")
			sl.SetRow("slices", "b", slice("b", 2, "red", "nope:in"))
			return err
		}, cube.ErrNotFound, "cubes.sl.tables.slices[b].chain"},
		{"entry of another slice", func(tp *cube.Topology) error {
			sl, err := tp.Edit("sl")
			sl.SetRow("slices", "b", slice("b", 2, "red", "red1:in"))
			return err
		}, cube.ErrConflict, "chain"},
		{"peered entry", func(tp *cube.Topology) error {
			return tp.SetPeer("red1:in", "blue1:in")
		}, cube.ErrConflict, "cubes.sl.tables.slices[r].chain"},
		{"entry cube deleted", func(tp *cube.Topology) error {
			return tp.DeleteCube("red1")
		}, cube.ErrNotFound, "cubes.sl.tables.slices[r].chain"},
		{"port and chain", func(tp *cube.Topology) error {
			sl, err := tp.Edit("sl")
			sl.SetRow("slices", "b", nftest.Entry(Slice{Name: "b", ID: 2, Port: "x", Chain: "blue1:in"}))
			return err
		}, cube.ErrUnprocessable, "chain"},
	}
	for _, c := range cases {
		err := e.Update(c.fn)
		if err == nil {
			t.Errorf("%s: accepted", c.name)
			continue
		}
		if !errors.Is(err, c.want) || !containsField(err, c.field) {
			t.Errorf("%s: %v; want %v naming %s", c.name, err, c.want, c.field)
		}
	}
	if e.Revision() != rev {
		t.Errorf("refused changes changed the state (revision %d, was %d)", e.Revision(), rev)
	}
	if tp := e.Topology(); tp.Lookup("red1") == nil || len(tp.Lookup("sl").Tables["slices"]) != 1 {
		t.Errorf("state changed by refused changes")
	}
}

// containsField: err is a cube.FieldError whose field ends with field.
func containsField(err error, field string) bool {
	var fe *cube.FieldError
	return errors.As(err, &fe) && strings.HasSuffix(fe.Field, field)
}
