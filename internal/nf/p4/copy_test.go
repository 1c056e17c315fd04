package p4

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"net"
	"testing"
	"time"

	"github.com/cilium/ebpf/perf"
	"golang.org/x/sys/unix"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/datapath"
	"github.com/edgenf/edgenf/internal/netlab"
	"github.com/edgenf/edgenf/internal/nftest"
	"github.com/edgenf/edgenf/internal/p4/tableruntime"
)

// capture opens a packet socket on eth0 of a new host whose root end is
// returned: frames sent out of the root end arrive there.
func capture(t *testing.T) (root *net.Interface, recv func() [][]byte) {
	t.Helper()
	lab := netlab.NewT(t)
	h, err := lab.Host("x")
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Sysctl("net.ipv6.conf.default.disable_ipv6", "1"); err != nil {
		t.Fatal(err)
	}
	name, err := lab.Veth(h, "eth0", "x")
	if err != nil {
		t.Fatal(err)
	}
	if root, err = net.InterfaceByName(name); err != nil {
		t.Fatal(err)
	}
	fd := -1
	proto := uint16(unix.ETH_P_ALL)<<8 | uint16(unix.ETH_P_ALL)>>8
	if err := h.Do(func() error {
		ifi, err := net.InterfaceByName("eth0")
		if err != nil {
			return err
		}
		if fd, err = unix.Socket(unix.AF_PACKET, unix.SOCK_RAW, int(proto)); err != nil {
			return err
		}
		return unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: proto, Ifindex: ifi.Index})
	}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	tv := unix.NsecToTimeval((200 * time.Millisecond).Nanoseconds())
	if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
		t.Fatal(err)
	}
	return root, func() [][]byte {
		var out [][]byte
		buf := make([]byte, 4096)
		for {
			n, _, err := unix.Recvfrom(fd, buf, 0)
			if err != nil {
				return out
			}
			out = append(out, append([]byte(nil), buf[:n]...))
		}
	}
}

// At TC, a multicast copy for a port that leads to another cube is cloned
// in the kernel into the injection veth, with the hop trailer the injector
// takes it by; without an injector it goes to the slow path. The frame
// itself is untouched by the trailer and leaves by the last replica.
func TestP4TCCopyToCubeIsClonedIntoInjector(t *testing.T) {
	root, recv := capture(t)
	g := McastGroup{Group: 1, Replicas: []tableruntime.Replica{{Port: 1}, {Port: 2}, {Port: 3}, {Port: 4}}}
	model := &cube.Cube{Name: "sw", Type: "p4", Hook: datapath.TC,
		Config: inline(`{"program": "../../../examples/p4/l2learn.p4"}`),
		Ports:  []cube.Port{{Name: "p1", Index: 1}, {Name: "p2", Index: 2}, {Name: "p3", Index: 3}, {Name: "p4", Index: 4}},
		Tables: map[string]map[string]json.RawMessage{"mcast_groups": {mcGroupsTable.Key(&g): nftest.Entry(g)}}}
	r := nftest.New(t, Type, model)
	toCube := datapath.Hop{Kind: datapath.DstCube, Slot: 9, Port: 5}
	stacked, err := datapath.NewHop(datapath.DstIface, 77, 0, 0, []datapath.Transparent{{Slot: 11, Dir: datapath.Egress}})
	if err != nil {
		t.Fatal(err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(r.Prog.SetHop(2, toCube))
	must(r.Prog.SetHop(3, stacked))
	must(r.DP.SetConfig(datapath.Config{InjectIfindex: uint32(root.Index)}))
	recv()
	frame := nftest.UDP4("198.18.0.1", "198.18.0.2", 5000, 6000, bytes.Repeat([]byte("payload-"), 20))
	res := r.Run("p1", frame)
	if res.Verdict != datapath.TCActRedirect || !bytes.Equal(res.Data, frame) {
		t.Fatalf("verdict %d, frame\n%x\nwant the frame unchanged", res.Verdict, res.Data)
	}
	got := recv()
	if len(got) != 2 {
		t.Fatalf("%d frames reached the injector, want the copies for p2 and p3", len(got))
	}
	for i, want := range []datapath.Hop{toCube, stacked} {
		f := got[i]
		if len(f) != len(frame)+trailerLen || !bytes.Equal(f[:len(frame)], frame) {
			t.Fatalf("copy %d:\n%x\nwant the frame and a %d-byte trailer", i, f, trailerLen)
		}
		var tr struct {
			Hop   datapath.Hop
			Hook  uint32
			Magic uint32
		}
		must(binary.Read(bytes.NewReader(f[len(frame):]), binary.LittleEndian, &tr))
		if tr.Hop != want || tr.Hook != 1 || tr.Magic != 0x696e6a65 {
			t.Fatalf("copy %d trailer %+v, want hop %+v at tc", i, tr, want)
		}
	}
	st := r.Stats()
	for p := 2; p <= 4; p++ {
		if st[p].TxPackets != 1 || st[p].TxBytes != uint64(len(frame)) {
			t.Fatalf("port %d counters %+v, want one frame of %d bytes", p, st[p], len(frame))
		}
	}

	// no injector: the copies go to the slow path, nothing is cloned
	must(r.DP.SetConfig(datapath.Config{}))
	if res := r.Run("p1", frame); res.Verdict != datapath.TCActRedirect || !bytes.Equal(res.Data, frame) {
		t.Fatalf("without an injector: verdict %d", res.Verdict)
	}
	if got := recv(); len(got) != 0 {
		t.Fatalf("without an injector %d frames were cloned", len(got))
	}
	if st := r.Stats(); st[2].TxPackets != 2 || st[3].TxPackets != 2 || st[4].TxPackets != 2 {
		t.Fatalf("counters without an injector: %+v", st[2:5])
	}
}

// trailerLen is the size of struct edgenf_inject_trailer.
var trailerLen = binary.Size(datapath.Hop{}) + 8

// At XDP, with the copy machine behind the interface, a packet's copies
// are recorded in a ring slot (each copy's header bytes and hop; the
// payload is shared) and the packet leaves with XDP_PASS for the copy
// machine; without it the copies go to the slow path and the packet is
// redirected out of the last replica's port.
func TestP4XDPCopiesAreRecordedForTheCopyMachine(t *testing.T) {
	g := McastGroup{Group: 1, Replicas: []tableruntime.Replica{{Port: 1}, {Port: 2}, {Port: 3}, {Port: 4}}}
	model := &cube.Cube{Name: "sw", Type: "p4", Hook: datapath.XDP,
		Config: inline(`{"program": "../../../examples/p4/l2learn.p4"}`),
		Ports:  []cube.Port{{Name: "p1", Index: 1}, {Name: "p2", Index: 2}, {Name: "p3", Index: 3}, {Name: "p4", Index: 4}},
		Tables: map[string]map[string]json.RawMessage{"mcast_groups": {mcGroupsTable.Key(&g): nftest.Entry(g)}}}
	r := nftest.New(t, Type, model)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	toCube := datapath.Hop{Kind: datapath.DstCube, Slot: 9, Port: 5}
	iface := datapath.Hop{Kind: datapath.DstIface, Ifindex: nftest.FakeIfindex}
	must(r.Prog.SetHop(2, toCube))
	must(r.DP.SetConfig(datapath.Config{InjectIfindex: 77}))
	// test runs see frames arrive on the loopback interface
	must(r.DP.MarkCopier(1, true))
	frame := nftest.UDP4("198.18.0.1", "198.18.0.2", 5000, 6000, bytes.Repeat([]byte("payload-"), 20))
	res := r.Run("p1", frame)
	// a test run returns the frame from its data_meta: the slot comes first
	if res.Verdict != datapath.XDPPass || len(res.Data) != 16+len(frame) || !bytes.Equal(res.Data[16:], frame) {
		t.Fatalf("verdict %d (want XDP_PASS to the copy machine), frame\n%x", res.Verdict, res.Data)
	}
	var meta struct{ Magic, Slot, Seq, CPU uint32 }
	must(binary.Read(bytes.NewReader(res.Data[:16]), binary.LittleEndian, &meta))
	if meta.Magic != 0x636f7079 || meta.Slot != 0 || meta.Seq == 0 {
		t.Fatalf("data_meta %+v, want the copy magic and slot 0", meta)
	}
	slots, err := r.DP.CopySlots(0)
	if err != nil {
		t.Fatal(err)
	}
	var sl *datapath.CopySlot
	for i := range slots {
		if len(slots[i].Copies) > 0 {
			sl = &slots[i]
		}
	}
	if sl == nil || sl.Seq != meta.Seq || len(sl.Copies) != 3 {
		t.Fatalf("ring slot 0: %+v, want the 3 copies", slots)
	}
	hlen := len(frame) - int(sl.Payload)
	if hlen != 14 {
		t.Fatalf("payload %d bytes: the copies' headers are %d bytes, want the Ethernet header", sl.Payload, hlen)
	}
	for i, want := range []datapath.Hop{toCube, iface, iface} {
		c := sl.Copies[i]
		if c.Hop != want || !bytes.Equal(c.Header, frame[:hlen]) || c.Trunc != 0 {
			t.Fatalf("copy %d: %+v, want hop %+v and header %x", i, c, want, frame[:hlen])
		}
	}
	st := r.Stats()
	for p := 2; p <= 4; p++ {
		if st[p].TxPackets != 1 || st[p].TxBytes != uint64(len(frame)) {
			t.Fatalf("port %d counters %+v, want one frame of %d bytes", p, st[p], len(frame))
		}
	}

	// a second packet takes the next slot, with a higher sequence
	r.Run("p1", frame)
	next, err := r.DP.CopySlots(1)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, s := range next {
		found = found || (len(s.Copies) == 3 && s.Seq == sl.Seq+1)
	}
	if !found {
		t.Fatalf("ring slot 1 after a second packet: %+v", next)
	}

	// no copy machine behind the interface: slow path, the packet leaves
	// by the last replica's port
	must(r.DP.MarkCopier(1, false))
	if res := r.Run("p1", frame); res.Verdict != datapath.XDPRedirect || !bytes.Equal(res.Data, frame) {
		t.Fatalf("without the copy machine: verdict %d", res.Verdict)
	}
	if st := r.Stats(); st[2].TxPackets != 3 || st[3].TxPackets != 3 || st[4].TxPackets != 3 {
		t.Fatalf("counters: %+v", st[2:5])
	}
}

// At TC, bpf_clone_redirect runs the egress programs of the interface it
// clones to before it returns, on the same CPU: an edgenf stub there (the
// interface carries transparent cubes) starts a hop of its own in the
// per-CPU metadata. The cube's metadata must survive it: a packet-in copy
// after a copy to such an interface still comes from the cube and the port
// the packet came in on, and the last copy still leaves.
func TestP4TCCopyKeepsMetadataAcrossNestedEgressStub(t *testing.T) {
	root, recv := capture(t)
	g := McastGroup{Group: 1, Replicas: []tableruntime.Replica{{Port: 1}, {Port: 510}, {Port: 2}}}
	model := &cube.Cube{Name: "sw", Type: "p4", Hook: datapath.TC,
		Config: inline(`{"program": "../../../examples/p4/l2learn.p4"}`),
		Ports:  []cube.Port{{Name: "p1", Index: 1}, {Name: "p2", Index: 2}, {Name: "p3", Index: 3}},
		Tables: map[string]map[string]json.RawMessage{"mcast_groups": {mcGroupsTable.Key(&g): nftest.Entry(g)}}}
	r := nftest.New(t, Type, model)
	if err := r.Prog.SetHop(1, datapath.Hop{Kind: datapath.DstIface, Ifindex: uint32(root.Index)}); err != nil {
		t.Fatal(err)
	}
	stub, err := r.DP.AttachStub(root.Name, root.Index, datapath.TC, datapath.Egress, datapath.Hop{Kind: datapath.DstStack}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.DP.DetachStub(root.Name, datapath.TC, datapath.Egress) })
	rd, err := perf.NewReader(r.DP.PuntMap(), 4096)
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	recv()
	frame := udpFrom("02:00:00:00:00:0b", "02:00:00:00:00:0a")
	res := r.Run("p3", frame)
	if res.Verdict != datapath.TCActRedirect {
		t.Fatalf("verdict %d, want the last copy redirected out of p2", res.Verdict)
	}
	if got := recv(); len(got) != 1 || !bytes.Equal(got[0], frame) {
		t.Fatalf("%d frames out of p1's interface, want the copy", len(got))
	}
	if st, err := stub.Stats(); err != nil || st.RxPackets != 1 {
		t.Fatalf("egress stub counters %+v (%v): the copy did not run it", st, err)
	}
	var packetIn *datapath.PuntHeader
	for {
		rd.SetDeadline(time.Now().Add(100 * time.Millisecond))
		rec, err := rd.Read()
		if err != nil {
			break
		}
		var hdr datapath.PuntHeader
		if binary.Read(bytes.NewReader(rec.RawSample), binary.LittleEndian, &hdr) != nil || hdr.Magic != datapath.PuntMagic {
			continue
		}
		if hdr.Reason == 1 { // P4_PUNT_PACKET_IN
			packetIn = &hdr
		}
	}
	if packetIn == nil {
		t.Fatal("no packet-in for the CPU port's copy")
	}
	if packetIn.Cube != r.Prog.Slot || packetIn.InPort != 3 || packetIn.Ifindex != 1 {
		t.Fatalf("packet-in from cube slot %d, port %d, interface %d; want slot %d, port 3, interface 1 (the stub's metadata leaked into the cube's)",
			packetIn.Cube, packetIn.InPort, packetIn.Ifindex, r.Prog.Slot)
	}
}
