package slicer

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/cilium/ebpf"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/datapath"
	"github.com/edgenf/edgenf/internal/engine"
	"github.com/edgenf/edgenf/internal/netlab"
	"github.com/edgenf/edgenf/internal/nftest"
	"github.com/edgenf/edgenf/internal/tenant"
	"github.com/edgenf/edgenf/internal/testenv"
)

// The interface a slicer's entry port is peered with runs the slicer's
// direct entry in place of the framework's stub: a frame meets one program
// (classification included) before the slice's chain. Checked on the
// program the engine really attached, at both hooks: it classifies (the
// slice's frame goes on into its chain, an unmatched one is a policy
// drop); after a restart it still does; the
// entry port re-peered moves the entry to the new interface and takes it
// off the old one; and with the slicer gone, the interface peered straight
// with the chain's cube runs that cube's entry instead.
func TestSlicerIsTheInterfaceEntry(t *testing.T) {
	testenv.E2E(t)
	for _, hook := range []datapath.Hook{datapath.TC, datapath.XDP} {
		t.Run(string(hook), func(t *testing.T) { slicerIsTheEntry(t, hook) })
	}
}

func slicerIsTheEntry(t *testing.T, hook datapath.Hook) {
	lab := netlab.NewT(t)
	h, err := lab.Host("h")
	if err != nil {
		t.Fatal(err)
	}
	// The host's ends send nothing of their own: with IPv6 on, their router
	// solicitations and MLD reports reach the slicer's entry as frames of no
	// slice, and the policy drop counts below would count them too (it
	// failed so under load, where those timers fire during the checks).
	for _, key := range []string{"net.ipv6.conf.all.disable_ipv6", "net.ipv6.conf.default.disable_ipv6"} {
		if err := h.Sysctl(key, "1"); err != nil {
			t.Fatal(err)
		}
	}
	var ifs [3]string
	for i := range ifs {
		if ifs[i], err = lab.Veth(h, fmt.Sprintf("eth%d", i), fmt.Sprintf("v%d", i), fmt.Sprintf("198.18.%d.10/24", i)); err != nil {
			t.Fatal(err)
		}
	}
	entryIf, outIf, otherIf := ifs[0], ifs[1], ifs[2]
	cfg := engine.Config{PinRoot: filepath.Join("/sys/fs/bpf", fmt.Sprintf("enfe-%d-entry-%s", os.Getpid(), hook)),
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
		c := chainCube(1, "t", outIf)
		c.Hook = hook
		tp.Put(c)
		tp.Put(&cube.Cube{Name: "sl", Type: "slicer", Hook: hook, Config: json.RawMessage(`{"uplink":"up"}`),
			Ports: []cube.Port{{Name: "up", Index: 0, Peer: entryIf}},
			Tables: map[string]map[string]json.RawMessage{"slices": {
				"s1": nftest.Entry(Slice{Name: "s1", ID: 1, Tenant: "t", Chain: "c1:in", Rules: []Rule{{Dst: "198.19.5.0/24"}}})}}})
		return nil
	})
	sent, dropped := uint32(datapath.XDPRedirect), uint32(datapath.XDPDrop)
	if hook == datapath.TC {
		sent, dropped = datapath.TCActRedirect, datapath.TCActShot
	}
	slice, other := nftest.UDP4("198.18.0.1", "198.19.5.7", 1000, 2000, nil), nftest.UDP4("198.18.0.1", "198.19.6.7", 1000, 2000, nil)
	// attached is the program on iface's ingress, and its name.
	attached := func(iface string) (*ebpf.Program, string) {
		t.Helper()
		p, err := datapath.AttachedProgram(cfg.PinRoot, iface, hook, datapath.Ingress)
		if err != nil {
			t.Fatalf("%s: %v", iface, err)
		}
		t.Cleanup(func() { p.Close() })
		info, err := p.Info()
		if err != nil {
			t.Fatal(err)
		}
		return p, info.Name
	}
	// run runs p on frame as received on iface: interface programs find
	// the interface's hop by its index.
	run := func(p *ebpf.Program, iface string, frame []byte) uint32 {
		t.Helper()
		ifi, err := net.InterfaceByName(iface)
		if err != nil {
			t.Fatal(err)
		}
		ro := &ebpf.RunOptions{Data: frame, DataOut: make([]byte, len(frame)+512)}
		if hook == datapath.TC {
			ro.Context = make([]byte, 192) // struct __sk_buff: ifindex at 40
			binary.NativeEndian.PutUint32(ro.Context.([]byte)[40:], uint32(ifi.Index))
		} else {
			ctx := make([]byte, 24) // struct xdp_md: data_end at 4, ingress_ifindex at 12
			binary.NativeEndian.PutUint32(ctx[4:], uint32(len(frame)))
			binary.NativeEndian.PutUint32(ctx[12:], uint32(ifi.Index))
			ro.Context = ctx
		}
		v, err := p.Run(ro)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	status := func() (in, policy uint64) {
		t.Helper()
		v, err := e.View(tenant.Admin, "sl", "status")
		if err != nil {
			t.Fatal(err)
		}
		st := v.(*Status)
		return st.Slices[0].InPackets, st.PolicyDropPackets
	}
	// classifies checks that p sorts one frame of the slice and one of no
	// slice as the slicer does.
	classifies := func(p *ebpf.Program, iface, what string) {
		t.Helper()
		in0, pol0 := status()
		if v := run(p, iface, slice); v != sent {
			t.Errorf("%s: the slice's frame: verdict %d, want %d (into its chain and out)", what, v, sent)
		}
		if v := run(p, iface, other); v != dropped {
			t.Errorf("%s: a frame of no slice: verdict %d, want %d", what, v, dropped)
		}
		if in, pol := status(); in != in0+1 || pol != pol0+1 {
			t.Errorf("%s: slice in %d → %d, policy drops %d → %d; want one more each", what, in0, in, pol0, pol)
		}
	}

	p, name := attached(entryIf)
	if name != datapath.EntryName {
		t.Fatalf("%s runs %q, want the slicer's direct entry %q", entryIf, name, datapath.EntryName)
	}
	classifies(p, entryIf, "the slicer's entry")
	tag, _ := p.Info()

	e.Close() // the daemon stops: the link stays
	if e, err = engine.Open(cfg); err != nil {
		t.Fatal(err)
	}
	defer func() { e.Close() }()
	// (The restarted engine loads the entry again and swaps it in through
	// the plain stub, which follows the same hop: the link, and the
	// interface's traffic, stay.)
	p, name = attached(entryIf)
	if name != datapath.EntryName {
		t.Fatalf("after a restart %s runs %q, want the slicer's direct entry", entryIf, name)
	}
	classifies(p, entryIf, "after a restart")

	nftest.MustUpdate(t, e, func(tp *cube.Topology) error {
		if err := tp.Unpeer("sl:up"); err != nil {
			return err
		}
		return tp.SetPeer("sl:up", otherIf)
	})
	if _, err := datapath.AttachedProgram(cfg.PinRoot, entryIf, hook, datapath.Ingress); err == nil {
		t.Errorf("%s still has an entry after the slicer's port moved to %s", entryIf, otherIf)
	}
	p, name = attached(otherIf)
	if name != datapath.EntryName {
		t.Fatalf("re-peered: %s runs %q, want the slicer's direct entry", otherIf, name)
	}
	classifies(p, otherIf, "re-peered")

	// The slicer gone: the interface is the chain cube's own peer, and
	// enters that cube's program, which forwards whatever the address.
	nftest.MustUpdate(t, e, func(tp *cube.Topology) error {
		if err := tp.DeleteCube("sl"); err != nil {
			return err
		}
		return tp.SetPeer("c1:in", otherIf)
	})
	p, _ = attached(otherIf)
	if now, _ := p.Info(); now.Tag == tag.Tag {
		t.Errorf("with the slicer deleted, %s still runs the slicer's program", otherIf)
	}
	if v := run(p, otherIf, other); v != sent {
		t.Errorf("without the slicer, a frame of no slice: verdict %d, want %d (c1 forwards it)", v, sent)
	}
}
