package engine

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/datapath"
	"github.com/edgenf/edgenf/internal/netlab"
	"github.com/edgenf/edgenf/internal/tenant"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
)

// eventually polls cond for up to 20 s.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after 20 s: %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// home is the test's network namespace. Not the process's (/proc/PID):
// that is its main thread's, which a lab's host may have switched into its
// own namespace for a while.
func home(t *testing.T) netns.NsHandle {
	t.Helper()
	ns, err := netns.Get()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ns.Close() })
	return ns
}

// ifSlotOf is the slot the engine's shared interface maps give ifindex.
func ifSlotOf(t *testing.T, e *Engine, hook datapath.Hook, ifindex int) uint32 {
	t.Helper()
	m, err := ebpf.LoadPinnedMap(filepath.Join(e.cfg.PinRoot, "ifprogs", string(hook)+"_ingress", "enf_if_slot"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	var slot uint32
	if err := m.Lookup(uint32(ifindex), &slot); err != nil {
		t.Fatal(err)
	}
	return slot
}

// runsProgram says whether interface name, in host's namespace (nil: the
// test's), runs an XDP program or, at TC, a TCX ingress program.
func runsProgram(t *testing.T, host *netlab.Host, name string, hook datapath.Hook) bool {
	t.Helper()
	var runs bool
	query := func() error {
		lk, err := netlink.LinkByName(name)
		if err != nil {
			return err
		}
		if hook == datapath.XDP {
			runs = lk.Attrs().Xdp != nil && lk.Attrs().Xdp.Attached
			return nil
		}
		res, err := link.QueryPrograms(link.QueryOptions{Target: lk.Attrs().Index, Attach: ebpf.AttachTCXIngress})
		if err != nil {
			return err
		}
		runs = len(res.Programs) > 0
		return nil
	}
	var err error
	if host == nil {
		err = query()
	} else {
		err = host.Do(query)
	}
	if err != nil {
		t.Fatal(err)
	}
	return runs
}

// TestMovedInterfaceIsDetachedAndPeeredAgain: a peered interface moved to
// another namespace is detached there (no program of edgenf runs on it in
// its new namespace, whose ifindexes are not the engine's), its cube's
// port shows the peering down with the reason, and its hop leads nowhere;
// a new interface that takes the old ifindex inherits nothing (no stub,
// no slot, no cube redirects into it); moved back (same name, a new
// ifindex), it is peered again as the topology asks.
func TestMovedInterfaceIsDetachedAndPeeredAgain(t *testing.T) {
	for _, hook := range []datapath.Hook{datapath.XDP, datapath.TC} {
		t.Run(string(hook), func(t *testing.T) {
			e := testEngine(t, "enflnk")
			lab := netlab.NewT(t)
			a, _, err := lab.RootVeth("mva", "mvb")
			if err != nil {
				t.Fatal(err)
			}
			lk, err := netlink.LinkByName(a)
			if err != nil {
				t.Fatal(err)
			}
			old := lk.Attrs().Index
			if err := e.Update(func(tp *cube.Topology) error {
				tp.Put(&cube.Cube{Name: "c", Type: "portfwd", Hook: hook, Ports: []cube.Port{{Name: "p0", Index: 0, Peer: a}, {Name: "p1", Index: 1}}})
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			if !runsProgram(t, nil, a, hook) {
				t.Fatalf("%s runs no program once peered", a)
			}
			away, err := lab.Host("away")
			if err != nil {
				t.Fatal(err)
			}
			if err := netlink.LinkSetNsFd(lk, int(away.NsHandle())); err != nil {
				t.Fatal(err)
			}
			down := func() string {
				st, err := e.Stats(tenant.Admin, "c")
				if err != nil {
					t.Fatal(err)
				}
				return st.Ports[0].PeerDown
			}
			eventually(t, "the port peered with the moved interface does not show its peering down", func() bool { return down() != "" })
			if why := down(); !strings.Contains(why, a) || !strings.Contains(why, "namespace") {
				t.Errorf("the peering is down because %q: want the interface and what may have happened", why)
			}
			if runsProgram(t, away, a, hook) {
				t.Errorf("%s still runs a program of edgenf in the namespace it moved to", a)
			}
			e.mu.Lock()
			hop, stubs := e.cubes["c"].hops[0], len(e.stubs)
			e.mu.Unlock()
			if hop.Kind != datapath.DstNone {
				t.Errorf("the hop out of p0 is %+v after its interface moved, want none", hop)
			}
			if stubs != 0 {
				t.Errorf("the engine holds %d stubs after the only peered interface moved", stubs)
			}
			if _, err := e.IfaceStats(a); err == nil || !strings.Contains(err.Error(), "namespace") {
				t.Errorf("the moved interface's stats: %v, want why it has no program", err)
			}

			// a new interface with the old number
			reuse := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: lab.Name("mvr"), Index: old}, PeerName: lab.Name("mvs")}
			if err := netlink.LinkAdd(reuse); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { netlink.LinkDel(reuse) })
			if err := netlink.LinkSetUp(reuse); err != nil {
				t.Fatal(err)
			}
			time.Sleep(200 * time.Millisecond) // its events handled, if they did anything
			if runsProgram(t, nil, reuse.Name, hook) {
				t.Errorf("a new interface with the moved one's ifindex %d runs a program of edgenf", old)
			}
			if slot := ifSlotOf(t, e, hook, old); slot != 0 {
				t.Errorf("ifindex %d, now a new interface's, still leads to slot %d", old, slot)
			}
			e.mu.Lock()
			hop = e.cubes["c"].hops[0]
			e.mu.Unlock()
			if hop.Kind == datapath.DstIface && int(hop.Ifindex) == old {
				t.Errorf("p0 redirects into ifindex %d, now a new interface's", old)
			}

			// back home: same name, a new number
			moved, err := away.Netlink().LinkByName(a)
			if err != nil {
				t.Fatal(err)
			}
			if err := away.Netlink().LinkSetNsFd(moved, int(home(t))); err != nil {
				t.Fatal(err)
			}
			back, err := netlink.LinkByName(a)
			if err != nil {
				t.Fatal(err)
			}
			idx := back.Attrs().Index
			if idx == old {
				t.Fatalf("%s came back with its old ifindex %d, taken by another interface", a, old)
			}
			k := StubKey{a, hook, datapath.Ingress}
			eventually(t, a+" moved back is not peered again by its new ifindex", func() bool {
				e.mu.Lock()
				defer e.mu.Unlock()
				s := e.stubs[k]
				h := e.cubes["c"].hops[0]
				return s != nil && s.Ifindex() == idx && h.Kind == datapath.DstIface && int(h.Ifindex) == idx
			})
			if why := down(); why != "" {
				t.Errorf("the port still shows its peering down once the interface is back: %q", why)
			}
			if !runsProgram(t, nil, a, hook) {
				t.Errorf("%s moved back runs no program", a)
			}
			if slot := ifSlotOf(t, e, hook, idx); slot == 0 {
				t.Errorf("%s's new ifindex %d leads to no slot", a, idx)
			}
		})
	}
}

// TestInterfaceMovedWhileStoppedIsDetachedAtStart: a peered interface
// moved to another namespace while the daemon was stopped no longer runs
// the daemon's program there once it starts, its port shows the peering
// down; moved back, it is peered again.
func TestInterfaceMovedWhileStoppedIsDetachedAtStart(t *testing.T) {
	for _, hook := range []datapath.Hook{datapath.XDP, datapath.TC} {
		t.Run(string(hook), func(t *testing.T) {
			e := testEngine(t, "enflns")
			lab := netlab.NewT(t)
			a, _, err := lab.RootVeth("msa", "msb")
			if err != nil {
				t.Fatal(err)
			}
			if err := e.Update(func(tp *cube.Topology) error {
				tp.Put(&cube.Cube{Name: "c", Type: "portfwd", Hook: hook, Ports: []cube.Port{{Name: "p0", Index: 0, Peer: a}, {Name: "p1", Index: 1}}})
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			cfg := e.cfg
			e.Close()
			away, err := lab.Host("away")
			if err != nil {
				t.Fatal(err)
			}
			lk, err := netlink.LinkByName(a)
			if err != nil {
				t.Fatal(err)
			}
			if err := netlink.LinkSetNsFd(lk, int(away.NsHandle())); err != nil {
				t.Fatal(err)
			}
			r, err := Open(cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Destroy()
			if runsProgram(t, away, a, hook) {
				t.Errorf("%s, moved to another namespace while the daemon was stopped, still runs its program there after the start", a)
			}
			st, err := r.Stats(tenant.Admin, "c")
			if err != nil {
				t.Fatal(err)
			}
			if st.Ports[0].PeerDown == "" {
				t.Errorf("p0's peering with the missing %s does not show down after the start", a)
			}
			moved, err := away.Netlink().LinkByName(a)
			if err != nil {
				t.Fatal(err)
			}
			if err := away.Netlink().LinkSetNsFd(moved, int(home(t))); err != nil {
				t.Fatal(err)
			}
			eventually(t, a+" moved back is not peered again", func() bool {
				r.mu.Lock()
				defer r.mu.Unlock()
				return r.stubs[StubKey{a, hook, datapath.Ingress}] != nil && r.cubes["c"].hops[0].Kind == datapath.DstIface
			})
			if !runsProgram(t, nil, a, hook) {
				t.Errorf("%s moved back runs no program", a)
			}
		})
	}
}
