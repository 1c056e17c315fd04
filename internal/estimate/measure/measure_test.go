package measure_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"strings"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/datapath"
	"github.com/edgenf/edgenf/internal/estimate/measure"
	"github.com/edgenf/edgenf/internal/netlab"
	"github.com/edgenf/edgenf/internal/nf/router"
	"github.com/edgenf/edgenf/internal/nftest"
	"github.com/edgenf/edgenf/internal/testenv"
)

// A router forwards a frame with TTL 2 and punts it with TTL 1. Measured
// through the restore entry, every repetition sees TTL 2 again: all of
// them are forwarded, none punted, and the frame is still as it was.
func TestEveryRepetitionSeesTheOriginalFrame(t *testing.T) {
	testenv.NeedRoot(t)
	for _, hook := range []datapath.Hook{datapath.XDP, datapath.TC} {
		t.Run(string(hook), func(t *testing.T) {
			r := nftest.New(t, router.Type, &cube.Cube{Name: "r1", Type: "router", Hook: hook,
				Ports: []cube.Port{
					{Name: "p0", Index: 0, MAC: "02:00:00:00:aa:00", Addresses: []string{"198.18.0.1/24"}},
					{Name: "p1", Index: 1, MAC: "02:00:00:00:aa:01", Addresses: []string{"198.18.1.1/24"}},
				},
				Tables: map[string]map[string]json.RawMessage{"arp": {"198.18.1.2": nftest.Entry(router.Neighbor{IP: "198.18.1.2", MAC: "02:00:00:00:00:11"})}}})
			entry := r.Entry("p0")
			m, err := measure.New(hook)
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			frame := nftest.Serialize(
				&layers.Ethernet{SrcMAC: nftest.MAC("02:00:00:00:00:10"), DstMAC: nftest.MAC("02:00:00:00:aa:00"), EthernetType: layers.EthernetTypeIPv4},
				&layers.IPv4{Version: 4, TTL: 2, Protocol: layers.IPProtocolUDP, SrcIP: net.ParseIP("198.18.0.2"), DstIP: net.ParseIP("198.18.1.2")},
				&layers.UDP{SrcPort: 1, DstPort: 2}, gopacket.Payload(make([]byte, 18)))
			res, err := m.Measure(context.Background(), []measure.Item{{Name: "router", Prog: entry, Frame: frame}}, measure.Options{Rounds: 2, Repeat: 500})
			if err != nil {
				t.Fatal(err)
			}
			// the rounds, and the three repetitions whose ends they must end as
			st := r.Stats()
			if st[1].TxPackets != 1003 || st[0].PuntPackets != 0 {
				t.Fatalf("after 2 x 500 repetitions and three: p1 sent %d, p0 punted %d; want 1003 sent, none punted", st[1].TxPackets, st[0].PuntPackets)
			}
			t.Logf("%s: %.1f ns (%.1f-%.1f)", hook, res[0].NS, res[0].Lo, res[0].Hi)
			// Two rounds on a loaded machine can average below the empty
			// program's cost; a router that no round prices above it is a
			// broken measurement.
			if res[0].Hi <= 0 {
				t.Fatalf("cost %.1f ns (%.1f-%.1f): no round priced the router above the empty program", res[0].NS, res[0].Lo, res[0].Hi)
			}
		})
	}
}

// countingProg is a program of hook that counts its runs in the first slot
// of runs (the count also in R7, the context in R6) and then does what
// tail says, which returns its verdict.
func countingProg(t *testing.T, hook datapath.Hook, runs *ebpf.Map, tail ...asm.Instruction) *ebpf.Program {
	t.Helper()
	insns := asm.Instructions{
		asm.Mov.Reg(asm.R6, asm.R1),
		asm.StoreImm(asm.RFP, -4, 0, asm.Word),
		asm.Mov.Reg(asm.R2, asm.RFP),
		asm.Add.Imm(asm.R2, -4),
		asm.LoadMapPtr(asm.R1, runs.FD()),
		asm.FnMapLookupElem.Call(),
		asm.JEq.Imm(asm.R0, 0, "counted"),
		asm.Mov.Imm(asm.R1, 1),
		asm.StoreXAdd(asm.R0, asm.R1, asm.DWord),
		asm.LoadMem(asm.R7, asm.R0, 0, asm.DWord),
		asm.Mov.Reg(asm.R1, asm.R6).WithSymbol("counted"),
	}
	// as the restore entry is loaded (ELF sections "xdp", "tc"): a tail
	// call's target must match its caller
	typ, attach := ebpf.XDP, ebpf.AttachXDP
	if hook == datapath.TC {
		typ, attach = ebpf.SchedCLS, ebpf.AttachNone
	}
	prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{Type: typ, AttachType: attach, License: "GPL", Instructions: append(insns, tail...)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { prog.Close() })
	return prog
}

func runsMap(t *testing.T) *ebpf.Map {
	t.Helper()
	m, err := ebpf.NewMap(&ebpf.MapSpec{Type: ebpf.Array, KeySize: 4, ValueSize: 8, MaxEntries: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

func udpFrame() []byte {
	return nftest.Serialize(
		&layers.Ethernet{SrcMAC: nftest.MAC("02:00:00:00:00:10"), DstMAC: nftest.MAC("02:00:00:00:aa:00"), EthernetType: layers.EthernetTypeIPv4},
		&layers.IPv4{Version: 4, TTL: 64, Protocol: layers.IPProtocolUDP, SrcIP: net.ParseIP("198.18.0.2"), DstIP: net.ParseIP("198.18.1.2")},
		&layers.UDP{SrcPort: 1, DstPort: 2}, gopacket.Payload(make([]byte, 18)))
}

// At TC a VLAN tag a program pushes goes into the skb, not the frame, so
// restoring the frame's bytes does not take it off. Every repetition must
// still run the program on the untagged frame it was given (this one
// drops a tagged one). Before the restore took the tag off, the second
// repetition found the first's tag; the slicer's return from a VLAN slice,
// which pushes again, moved it into the frame, the restore then failed on
// the 802.1Q frame and every later repetition ended in the restore: it
// measured 0 to 1.4 ns at TC.
func TestEveryRepetitionPushesOntoAnUntaggedFrame(t *testing.T) {
	testenv.NeedRoot(t)
	m, err := measure.New(datapath.TC)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	runs := runsMap(t)
	// push VLAN 20 onto a frame without one, else return TC_ACT_SHOT
	push := countingProg(t, datapath.TC, runs,
		asm.LoadMem(asm.R2, asm.R6, 20, asm.Word), // __sk_buff.vlan_present
		asm.JNE.Imm(asm.R2, 0, "tagged"),
		asm.Mov.Imm(asm.R2, 0x0081), // htons(ETH_P_8021Q)
		asm.Mov.Imm(asm.R3, 20),
		asm.FnSkbVlanPush.Call(),
		asm.JNE.Imm(asm.R0, 0, "tagged"),
		asm.Mov.Imm(asm.R0, datapath.TCActOK),
		asm.Return(),
		asm.Mov.Imm(asm.R0, datapath.TCActShot).WithSymbol("tagged"),
		asm.Return(),
	)
	const rounds, repeat = 3, 1000
	res, err := m.Measure(context.Background(), []measure.Item{{Name: "push", Prog: push, Frame: udpFrame()}}, measure.Options{Rounds: rounds, Repeat: repeat})
	if err != nil {
		t.Fatal(err)
	}
	if res[0].Diverged != "" {
		t.Fatalf("push: %s", res[0].Diverged)
	}
	var n uint64
	if err := runs.Lookup(uint32(0), &n); err != nil {
		t.Fatal(err)
	}
	// the rounds, and the three repetitions whose ends the rounds must end as
	if n != rounds*repeat+3 {
		t.Fatalf("the program ran %d times in %d rounds of %d repetitions: the restore gave up on the others", n, rounds, repeat)
	}
	t.Logf("push: %.1f ns (%.1f-%.1f)", res[0].NS, res[0].Lo, res[0].Hi)
}

// A program whose repetitions after the first end otherwise (here: from
// its second run on, it drops) measures another path: Measure says so
// beside the figure.
func TestRepetitionsThatEndOtherwiseAreFlagged(t *testing.T) {
	testenv.NeedRoot(t)
	for _, hook := range []datapath.Hook{datapath.XDP, datapath.TC} {
		t.Run(string(hook), func(t *testing.T) {
			m, err := measure.New(hook)
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			runs := runsMap(t)
			pass, drop := datapath.XDPPass, datapath.XDPDrop
			if hook == datapath.TC {
				pass, drop = datapath.TCActOK, datapath.TCActShot
			}
			prog := countingProg(t, hook, runs,
				asm.Mov.Imm(asm.R0, int32(pass)),
				asm.JLE.Imm(asm.R7, 1, "first"),
				asm.Mov.Imm(asm.R0, int32(drop)),
				asm.Return().WithSymbol("first"),
			)
			res, err := m.Measure(context.Background(), []measure.Item{{Name: "flip", Prog: prog, Frame: udpFrame()}}, measure.Options{Rounds: 2, Repeat: 100})
			if err != nil {
				t.Fatal(err)
			}
			if want := fmt.Sprintf("2 of 2 runs ended with verdict %d, one repetition with %d", drop, pass); !strings.Contains(res[0].Diverged, want) {
				t.Fatalf("Measure of a program whose verdict changes after its first run: %q; want %q", res[0].Diverged, want)
			}
		})
	}
}

// At TC, a VLAN tag popped from the frame makes the skb's protocol the
// inner one: the restored frame is tagged again, but the next repetition's
// pop, seeing an IPv4 skb, does nothing and the frame leaves tagged. Every
// repetition still passes the frame: only its length shows the other path
// (the bridge from a trunk to an access port measured it). Measure says so
// beside the figure.
func TestRepetitionsThatLeaveAnotherFrameAreFlagged(t *testing.T) {
	testenv.NeedRoot(t)
	m, err := measure.New(datapath.TC)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	pop := countingProg(t, datapath.TC, runsMap(t),
		asm.FnSkbVlanPop.Call(),
		asm.Mov.Imm(asm.R0, datapath.TCActOK),
		asm.Return(),
	)
	u := udpFrame()
	tagged := append(append(append([]byte{}, u[:12]...), 0x81, 0x00, 0x00, 0x14), u[12:]...)
	res, err := m.Measure(context.Background(), []measure.Item{{Name: "pop", Prog: pop, Frame: tagged}}, measure.Options{Rounds: 2, Repeat: 100})
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("a second repetition ended with verdict %d, a frame of %d bytes, the first with verdict %d, a frame of %d bytes", datapath.TCActOK, len(tagged), datapath.TCActOK, len(u))
	if !strings.HasPrefix(res[0].Diverged, want) {
		t.Fatalf("Measure of a program that pops a tag at TC: %q; want %q", res[0].Diverged, want)
	}
	// measured a run per call, each on a new skb, it pops every time
	res, err = m.Measure(context.Background(), []measure.Item{{Name: "pop", Prog: pop, Frame: tagged, Single: true}}, measure.Options{Rounds: 2, Repeat: 100})
	if err != nil {
		t.Fatal(err)
	}
	if res[0].Diverged != "" {
		t.Fatalf("a run per call: %s", res[0].Diverged)
	}
}

// An item received on an interface (Item.Ifindex) is run as a frame from
// that interface (xdp_md.ingress_ifindex) in its check and in every round:
// the framework's shared stub finds an interface's hop by it. Given no
// interface, a frame comes from the loopback, and a chain behind a stub
// passed it to the stack unmeasured. Only XDP takes an interface.
func TestItemReceivedOnItsInterface(t *testing.T) {
	testenv.NeedRoot(t)
	lab, err := netlab.New(netlab.UniquePrefix())
	if err != nil {
		t.Fatal(err)
	}
	defer lab.Close()
	name, _, err := lab.RootVeth("m0", "m1")
	if err != nil {
		t.Fatal(err)
	}
	ifc, err := net.InterfaceByName(name)
	if err != nil {
		t.Fatal(err)
	}
	m, err := measure.New(datapath.XDP)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	runs := runsMap(t)
	// pass a frame received on the veth, drop any other
	prog := countingProg(t, datapath.XDP, runs,
		asm.LoadMem(asm.R2, asm.R6, 12, asm.Word), // xdp_md.ingress_ifindex
		asm.Mov.Imm(asm.R0, datapath.XDPDrop),
		asm.JNE.Imm(asm.R2, int32(ifc.Index), "other"),
		asm.Mov.Imm(asm.R0, datapath.XDPPass),
		asm.Return().WithSymbol("other"),
	)
	it := measure.Item{Name: "on the veth", Prog: prog, Frame: udpFrame(), Ifindex: ifc.Index}
	if v, err := m.VerdictOf(it); err != nil || v != datapath.XDPPass {
		t.Fatalf("received on %s: verdict %d (%v), want pass", name, v, err)
	}
	if v, err := m.Verdict(prog, it.Frame); err != nil || v != datapath.XDPDrop {
		t.Fatalf("received on the loopback: verdict %d (%v), want drop", v, err)
	}
	res, err := m.Measure(context.Background(), []measure.Item{it}, measure.Options{Rounds: 2, Repeat: 100})
	if err != nil {
		t.Fatal(err)
	}
	if res[0].Diverged != "" {
		t.Fatalf("the rounds ran another path than the check: %s", res[0].Diverged)
	}
	tc, err := measure.New(datapath.TC)
	if err != nil {
		t.Fatal(err)
	}
	defer tc.Close()
	if _, err := tc.VerdictOf(measure.Item{Name: "tc", Prog: countingProg(t, datapath.TC, runs, asm.Mov.Imm(asm.R0, 0), asm.Return()), Frame: it.Frame, Ifindex: ifc.Index}); err == nil || !strings.Contains(err.Error(), "XDP only") {
		t.Fatalf("a TC item received on an interface: %v, want an error saying XDP only", err)
	}
}

// A program whose path changed between the caller's check and the rounds
// (state it needs expired; here: it drops from its second run on) runs
// alike in every round, so nothing diverges: the result's verdict is what
// tells the caller, who checked another.
func TestResultCarriesTheVerdictTheRoundsStartedWith(t *testing.T) {
	testenv.NeedRoot(t)
	m, err := measure.New(datapath.XDP)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	prog := countingProg(t, datapath.XDP, runsMap(t),
		asm.Mov.Imm(asm.R0, datapath.XDPPass),
		asm.JLE.Imm(asm.R7, 1, "first"),
		asm.Mov.Imm(asm.R0, datapath.XDPDrop),
		asm.Return().WithSymbol("first"),
	)
	if v, err := m.Verdict(prog, udpFrame()); err != nil || v != datapath.XDPPass {
		t.Fatalf("check: verdict %d (%v), want pass", v, err)
	}
	res, err := m.Measure(context.Background(), []measure.Item{{Name: "expired", Prog: prog, Frame: udpFrame()}}, measure.Options{Rounds: 2, Repeat: 100})
	if err != nil {
		t.Fatal(err)
	}
	if res[0].Verdict != datapath.XDPDrop || res[0].Diverged != "" {
		t.Fatalf("verdict %d, diverged %q; want drop, nothing diverged", res[0].Verdict, res[0].Diverged)
	}
}
