package datapath_test

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/edgenf/edgenf/internal/datapath"
	"github.com/edgenf/edgenf/internal/netlab"
	"github.com/edgenf/edgenf/internal/nftest"
	"github.com/edgenf/edgenf/internal/testenv"
	"github.com/vishvananda/netlink"
)

// ifaceLab is a datapath and veths to attach interface programs to.
func ifaceLab(t testing.TB) (*datapath.Datapath, string, *netlab.Lab) {
	testenv.NeedRoot(t)
	root := filepath.Join("/sys/fs/bpf", fmt.Sprintf("enfi-%d-%d", os.Getpid(), seq.Add(1)))
	dp, err := datapath.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dp.Destroy() })
	return dp, root, netlab.NewT(t)
}

func veth(t *testing.T, lab *netlab.Lab, a, b string) (string, int) {
	t.Helper()
	na, _, err := lab.RootVeth(a, b)
	if err != nil {
		t.Fatal(err)
	}
	l, err := netlink.LinkByName(na)
	if err != nil {
		t.Fatal(err)
	}
	return na, l.Attrs().Index
}

// runOn runs prog on frame as if it arrived on (XDP, TC ingress) interface
// ifindex, and returns the verdict.
func runOn(t *testing.T, prog *ebpf.Program, hook datapath.Hook, ifindex int, frame []byte) uint32 {
	t.Helper()
	var ctx []byte
	if hook == datapath.XDP {
		// struct xdp_md: data, data_end, data_meta, ingress_ifindex, ...
		ctx = make([]byte, 24)
		binary.NativeEndian.PutUint32(ctx[4:], uint32(len(frame)))
		binary.NativeEndian.PutUint32(ctx[12:], uint32(ifindex))
	} else {
		// struct __sk_buff up to ifindex
		ctx = make([]byte, 44)
		binary.NativeEndian.PutUint32(ctx[40:], uint32(ifindex))
	}
	v, err := prog.Run(&ebpf.RunOptions{Data: frame, Context: ctx})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func attached(t *testing.T, root, ifname string, hook datapath.Hook) *ebpf.Program {
	t.Helper()
	p, err := datapath.AttachedProgram(root, ifname, hook, datapath.Ingress)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// slotOf is the slot the interface maps of hook's ingress give ifindex.
func slotOf(t *testing.T, root string, hook datapath.Hook, ifindex int) uint32 {
	t.Helper()
	slots, err := ebpf.LoadPinnedMap(filepath.Join(root, "ifprogs", string(hook)+"_ingress", "enf_if_slot"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer slots.Close()
	var slot uint32
	if err := slots.Lookup(uint32(ifindex), &slot); err != nil {
		t.Fatal(err)
	}
	return slot
}

func progID(t *testing.T, p *ebpf.Program) ebpf.ProgramID {
	t.Helper()
	info, err := p.Info()
	if err != nil {
		t.Fatal(err)
	}
	id, _ := info.ID()
	return id
}

var (
	passed = map[datapath.Hook]uint32{datapath.XDP: datapath.XDPPass, datapath.TC: datapath.TCActOK}
	sent   = map[datapath.Hook]uint32{datapath.XDP: datapath.XDPRedirect, datapath.TC: datapath.TCActRedirect}
)

// One stub program serves every interface of a hook: each frame takes the
// hop of the interface it arrived on, counted on that interface; an
// interface no hop was written for passes its frames to Linux.
func TestOneStubServesEveryInterface(t *testing.T) {
	for _, hook := range []datapath.Hook{datapath.XDP, datapath.TC} {
		t.Run(string(hook), func(t *testing.T) {
			dp, root, lab := ifaceLab(t)
			a, ai := veth(t, lab, "sa", "sb")
			b, bi := veth(t, lab, "sc", "sd")
			sa, err := dp.AttachStub(a, ai, hook, datapath.Ingress, datapath.Hop{Kind: datapath.DstIface, Ifindex: uint32(bi)}, nil)
			if err != nil {
				t.Fatal(err)
			}
			sb, err := dp.AttachStub(b, bi, hook, datapath.Ingress, datapath.Hop{}, nil)
			if err != nil {
				t.Fatal(err)
			}
			pa, pb := attached(t, root, a, hook), attached(t, root, b, hook)
			if progID(t, pa) != progID(t, pb) {
				t.Fatalf("%s runs program %d, %s program %d: want one stub", a, progID(t, pa), b, progID(t, pb))
			}
			frame := nftest.UDP4("198.18.0.1", "198.18.0.2", 1, 2, make([]byte, 22))
			if v := runOn(t, pa, hook, ai, frame); v != sent[hook] {
				t.Errorf("a frame on %s: verdict %d, want %d (its hop)", a, v, sent[hook])
			}
			if v := runOn(t, pa, hook, bi, frame); v != passed[hook] {
				t.Errorf("a frame on %s (empty hop): verdict %d, want %d", b, v, passed[hook])
			}
			if v := runOn(t, pa, hook, 1, frame); v != passed[hook] {
				t.Errorf("a frame on an interface with no stub: verdict %d, want %d", v, passed[hook])
			}
			if st, err := sa.Stats(); err != nil || st.RxPackets != 1 {
				t.Errorf("%s counted %+v (%v), want its one frame", a, st, err)
			}
			if st, err := sb.Stats(); err != nil || st.RxPackets != 0 {
				t.Errorf("%s counted %+v (%v), want none", b, st, err)
			}
			if err := sb.SetHop(datapath.Hop{Kind: datapath.DstIface, Ifindex: uint32(ai)}); err != nil {
				t.Fatal(err)
			}
			if v := runOn(t, pa, hook, bi, frame); v != sent[hook] {
				t.Errorf("a frame on %s after its hop was set: verdict %d, want %d", b, v, sent[hook])
			}
			if err := dp.DetachStub(a, hook, datapath.Ingress); err != nil {
				t.Fatal(err)
			}
			if v := runOn(t, pb, hook, ai, frame); v != passed[hook] {
				t.Errorf("a frame on %s after its detach: verdict %d, want %d", a, v, passed[hook])
			}
			if slot := slotOf(t, root, hook, ai); slot != 0 {
				t.Errorf("%s's ifindex still leads to slot %d after its detach", a, slot)
			}
			if v := runOn(t, pb, hook, bi, frame); v != sent[hook] {
				t.Errorf("a frame on %s after %s's detach: verdict %d, want %d", b, a, v, sent[hook])
			}
		})
	}
}

// The direct entry of a cube is loaded once and shared by the interfaces
// whose hop starts with that cube; each frame enters at its interface's
// port.
func TestDirectEntryIsSharedByItsInterfaces(t *testing.T) {
	for _, hook := range []datapath.Hook{datapath.XDP, datapath.TC} {
		t.Run(string(hook), func(t *testing.T) {
			dp, root, lab := ifaceLab(t)
			c, err := dp.LoadCube("c0", hook, 0, pfSpec(t, hook), nil)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(c.Close)
			m, _ := c.Map("pf_table")
			// port 0 goes out of port 1 (to an interface); port 2 has no rule
			if err := m.Put(uint32(0), pfEntry{OutPort: 1, Flags: 1}); err != nil {
				t.Fatal(err)
			}
			if err := c.SetHop(1, datapath.Hop{Kind: datapath.DstIface, Ifindex: 1}); err != nil {
				t.Fatal(err)
			}
			a, ai := veth(t, lab, "ea", "eb")
			b, bi := veth(t, lab, "ec", "ed")
			for _, x := range []struct {
				name  string
				index int
				port  uint32
			}{{a, ai, 0}, {b, bi, 2}} {
				if _, err := dp.AttachStub(x.name, x.index, hook, datapath.Ingress, datapath.Hop{Kind: datapath.DstCube, Slot: 0, Port: x.port}, c); err != nil {
					t.Fatal(err)
				}
			}
			pa, pb := attached(t, root, a, hook), attached(t, root, b, hook)
			if progID(t, pa) != progID(t, pb) {
				t.Fatalf("%s runs program %d, %s program %d: want the cube's one direct entry", a, progID(t, pa), b, progID(t, pb))
			}
			frame := nftest.UDP4("198.18.0.1", "198.18.0.2", 1, 2, make([]byte, 22))
			if v := runOn(t, pa, hook, ai, frame); v != sent[hook] {
				t.Errorf("a frame on %s (port 0): verdict %d, want %d", a, v, sent[hook])
			}
			before, err := c.Stats()
			if err != nil {
				t.Fatal(err)
			}
			runOn(t, pa, hook, bi, frame)
			after, err := c.Stats()
			if err != nil {
				t.Fatal(err)
			}
			if after[2].RxPackets != before[2].RxPackets+1 || after[0].RxPackets != before[0].RxPackets {
				t.Errorf("a frame on %s: port 0 rx %d→%d, port 2 rx %d→%d; want it on port 2", b,
					before[0].RxPackets, after[0].RxPackets, before[2].RxPackets, after[2].RxPackets)
			}
			// a new hop into the same cube with the record of what a runs
			// lost (a daemon stopped mid-attach): through the stub, back
			// on the entry
			if err := os.Remove(filepath.Join(root, "ifaces", a+"_"+string(hook)+"_ingress", "enf-attached")); err != nil {
				t.Fatal(err)
			}
			if _, err := dp.AttachStub(a, ai, hook, datapath.Ingress, datapath.Hop{Kind: datapath.DstCube, Slot: 0, Port: 2}, c); err != nil {
				t.Fatal(err)
			}
			if now := attached(t, root, a, hook); progID(t, now) != progID(t, pb) {
				t.Errorf("%s runs program %d after its hop moved within the cube, want the entry %d", a, progID(t, now), progID(t, pb))
			}
		})
	}
}

// An interface deleted without a detach leaves its slot, and the ifindex it
// had may come back on a new interface (given explicitly here; the kernel
// hands out freed numbers in other namespaces and after wrapping). The new
// interface, prepared with an empty hop, passes its frames to Linux: it
// never reaches the old interface's cube. The late detach of the old
// interface leaves the new one's hop alone.
func TestReusedIfindexDoesNotEnterTheOldHop(t *testing.T) {
	for _, hook := range []datapath.Hook{datapath.XDP, datapath.TC} {
		t.Run(string(hook), func(t *testing.T) {
			dp, root, lab := ifaceLab(t)
			a, ai := veth(t, lab, "ua", "ub")
			if _, err := dp.AttachStub(a, ai, hook, datapath.Ingress, datapath.Hop{Kind: datapath.DstIface, Ifindex: 1}, nil); err != nil {
				t.Fatal(err)
			}
			prog := attached(t, root, a, hook)
			// a new interface, another name, a's number
			b, _ := veth(t, lab, "uc", "ud")
			for _, n := range []string{a, b} {
				l, err := netlink.LinkByName(n)
				if err != nil {
					t.Fatal(err)
				}
				if err := netlink.LinkDel(l); err != nil {
					t.Fatal(err)
				}
			}
			nb := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: b, Index: ai}, PeerName: b + "p"}
			if err := netlink.LinkAdd(nb); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { netlink.LinkDel(nb) })
			if err := dp.PrepareStub(b, ai, hook, datapath.Ingress, nil); err != nil {
				t.Fatal(err)
			}
			frame := nftest.UDP4("198.18.0.1", "198.18.0.2", 1, 2, make([]byte, 22))
			if v := runOn(t, prog, hook, ai, frame); v != passed[hook] {
				t.Fatalf("a frame on the new interface with %s's number: verdict %d, want %d (Linux)", a, v, passed[hook])
			}
			if err := dp.DetachStub(a, hook, datapath.Ingress); err != nil {
				t.Fatal(err)
			}
			if _, err := dp.AttachStub(b, ai, hook, datapath.Ingress, datapath.Hop{Kind: datapath.DstIface, Ifindex: 1}, nil); err != nil {
				t.Fatal(err)
			}
			if v := runOn(t, prog, hook, ai, frame); v != sent[hook] {
				t.Fatalf("a frame on the new interface once peered: verdict %d, want %d", v, sent[hook])
			}
		})
	}
}

// A stale ifindex entry that points at a slot given to another interface
// since delivers nothing: the slot says which interface it is for.
func TestSlotOfAnotherInterfaceDeliversNothing(t *testing.T) {
	dp, root, lab := ifaceLab(t)
	a, ai := veth(t, lab, "ga", "gb")
	_, bi := veth(t, lab, "gc", "gd")
	if _, err := dp.AttachStub(a, ai, datapath.XDP, datapath.Ingress, datapath.Hop{Kind: datapath.DstIface, Ifindex: 1}, nil); err != nil {
		t.Fatal(err)
	}
	slots, err := ebpf.LoadPinnedMap(filepath.Join(root, "ifprogs", "xdp_ingress", "enf_if_slot"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer slots.Close()
	var slot uint32
	if err := slots.Lookup(uint32(ai), &slot); err != nil || slot == 0 {
		t.Fatalf("%s's slot %d (%v)", a, slot, err)
	}
	if err := slots.Put(uint32(bi), slot); err != nil {
		t.Fatal(err)
	}
	frame := nftest.UDP4("198.18.0.1", "198.18.0.2", 1, 2, make([]byte, 22))
	prog := attached(t, root, a, datapath.XDP)
	if v := runOn(t, prog, datapath.XDP, bi, frame); v != datapath.XDPPass {
		t.Fatalf("a frame on an interface whose entry points at %s's slot: verdict %d, want pass", a, v)
	}
}

// A daemon stopped between writing an interface's slot and recording the
// attach (a crash mid-peering) leaves a slot no record claims: the next
// datapath over the root frees it, and its interface's frames go to Linux
// until it is attached again.
func TestStartFreesSlotsNoRecordClaims(t *testing.T) {
	dp, root, lab := ifaceLab(t)
	a, ai := veth(t, lab, "ka", "kb")
	b, bi := veth(t, lab, "kc", "kd")
	if _, err := dp.AttachStub(a, ai, datapath.XDP, datapath.Ingress, datapath.Hop{Kind: datapath.DstIface, Ifindex: 1}, nil); err != nil {
		t.Fatal(err)
	}
	prog := attached(t, root, a, datapath.XDP)
	if err := os.Remove(filepath.Join(root, "ifaces", a+"_xdp_ingress", "enf-attached")); err != nil {
		t.Fatal(err)
	}
	dp.Close()
	again, err := datapath.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	if _, err := again.AttachStub(b, bi, datapath.XDP, datapath.Ingress, datapath.Hop{Kind: datapath.DstIface, Ifindex: 1}, nil); err != nil {
		t.Fatal(err)
	}
	frame := nftest.UDP4("198.18.0.1", "198.18.0.2", 1, 2, make([]byte, 22))
	if v := runOn(t, prog, datapath.XDP, ai, frame); v != datapath.XDPPass {
		t.Errorf("a frame on %s, whose attach was never recorded: verdict %d, want pass", a, v)
	}
	if slot := slotOf(t, root, datapath.XDP, ai); slot != 0 {
		t.Errorf("%s's ifindex still leads to slot %d after the start", a, slot)
	}
	if v := runOn(t, prog, datapath.XDP, bi, frame); v != datapath.XDPRedirect {
		t.Errorf("a frame on %s: verdict %d, want its hop", b, v)
	}
	if _, err := again.AttachStub(a, ai, datapath.XDP, datapath.Ingress, datapath.Hop{Kind: datapath.DstIface, Ifindex: 1}, nil); err != nil {
		t.Fatal(err)
	}
	if v := runOn(t, prog, datapath.XDP, ai, frame); v != datapath.XDPRedirect {
		t.Errorf("a frame on %s attached again: verdict %d, want its hop", a, v)
	}
}

// A restart finds the shared stub and an interface on it as they were: the
// attach writes the hop only (adopted), loads nothing and moves no link.
func TestRestartAdoptsTheSharedStub(t *testing.T) {
	for _, hook := range []datapath.Hook{datapath.XDP, datapath.TC} {
		t.Run(string(hook), func(t *testing.T) {
			dp, root, lab := ifaceLab(t)
			a, ai := veth(t, lab, "ra", "rb")
			hop := datapath.Hop{Kind: datapath.DstIface, Ifindex: 1}
			if _, err := dp.AttachStub(a, ai, hook, datapath.Ingress, hop, nil); err != nil {
				t.Fatal(err)
			}
			before := progID(t, attached(t, root, a, hook))
			dp.Close()
			again, err := datapath.Open(root)
			if err != nil {
				t.Fatal(err)
			}
			defer again.Close()
			if !again.StubCurrent(a, ai, hook, datapath.Ingress, nil) {
				t.Fatalf("after a restart %s does not run what an attach would put there", a)
			}
			s, err := again.AttachStub(a, ai, hook, datapath.Ingress, hop, nil)
			if err != nil {
				t.Fatal(err)
			}
			if !s.Adopted {
				t.Errorf("the attach after a restart was not an adoption")
			}
			if now := progID(t, attached(t, root, a, hook)); now != before {
				t.Errorf("%s runs program %d after the restart, %d before", a, now, before)
			}
		})
	}
}

// An attach that fails after its link is made (here: the link cannot be
// pinned, the place taken) gives back the slot it took and the ifindex
// it wrote: neither leaks until the next start, the interface's frames go
// to Linux, and the next attach succeeds.
func TestFailedAttachLeaksNoSlot(t *testing.T) {
	for _, hook := range []datapath.Hook{datapath.XDP, datapath.TC} {
		t.Run(string(hook), func(t *testing.T) {
			dp, root, lab := ifaceLab(t)
			a, ai := veth(t, lab, "fa", "fb")
			b, bi := veth(t, lab, "fc", "fd")
			hop := datapath.Hop{Kind: datapath.DstIface, Ifindex: 1}
			if _, err := dp.AttachStub(b, bi, hook, datapath.Ingress, hop, nil); err != nil {
				t.Fatal(err)
			}
			before := dp.SlotsInUse(hook, datapath.Ingress)
			lpath := filepath.Join(root, "ifaces", a+"_"+string(hook)+"_ingress", "link")
			if err := os.MkdirAll(lpath, 0o700); err != nil {
				t.Fatal(err)
			}
			if _, err := dp.AttachStub(a, ai, hook, datapath.Ingress, hop, nil); err == nil {
				t.Fatal("the attach succeeded with its link's pin taken")
			}
			if n := dp.SlotsInUse(hook, datapath.Ingress); n != before {
				t.Errorf("%d interface slots in use after a failed attach, %d before", n, before)
			}
			if slot := slotOf(t, root, hook, ai); slot != 0 {
				t.Errorf("%s's ifindex leads to slot %d after its attach failed", a, slot)
			}
			if err := os.Remove(lpath); err != nil {
				t.Fatal(err)
			}
			if _, err := dp.AttachStub(a, ai, hook, datapath.Ingress, hop, nil); err != nil {
				t.Fatalf("the attach once the pin is free: %v", err)
			}
			frame := nftest.UDP4("198.18.0.1", "198.18.0.2", 1, 2, make([]byte, 22))
			if v := runOn(t, attached(t, root, a, hook), hook, ai, frame); v != sent[hook] {
				t.Errorf("a frame on %s attached again: verdict %d, want its hop", a, v)
			}
		})
	}
}
