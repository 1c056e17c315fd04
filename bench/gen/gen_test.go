package gen

import (
	"context"
	"encoding/binary"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/edgenf/edgenf/bench/kern"
	"github.com/edgenf/edgenf/internal/netlab"
)

// TestGeneratorMatchesSink: frames generated into a veth whose peer runs the
// sink all arrive: the generator's count equals the sink's, for several flow
// counts and frame sizes, and with timestamps.
func TestGeneratorMatchesSink(t *testing.T) {
	l := netlab.NewT(t)
	g0, g1, err := l.RootVethQ("g0", "g1", 2)
	if err != nil {
		t.Fatal(err)
	}
	l0, _ := netlink.LinkByName(g0)
	l1, _ := netlink.LinkByName(g1)
	for _, tc := range []struct {
		flows, size int
		stamp       bool
		cpus        int
	}{{1, 64, false, 1}, {1000, 64, false, 2}, {7, 1500, true, 1}} {
		objs, err := kern.Load(kern.Options{Flows: tc.flows, Stamp: tc.stamp})
		if err != nil {
			t.Fatal(err)
		}
		defer objs.Close()
		if err := objs.SetGenTarget(l0.Attrs().Index); err != nil {
			t.Fatal(err)
		}
		lk, err := kern.AttachXDP(objs.Sink, l1.Attrs().Index)
		if err != nil {
			t.Fatal(err)
		}
		frame, err := kern.Frame{Size: tc.size, SrcMAC: l0.Attrs().HardwareAddr, DstMAC: l1.Attrs().HardwareAddr,
			SrcIP: []byte{198, 18, 0, 0}, DstIP: []byte{198, 19, 0, 1}}.Bytes()
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		const n = 200000
		res, err := Run(ctx, objs, frame, Options{Packets: n, Duration: 15 * time.Second, CPUs: tc.cpus})
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(50 * time.Millisecond)
		pkts, bytes, _, err := objs.SinkCounts()
		if err != nil {
			t.Fatal(err)
		}
		// Repeat is a minimum: an interrupted BPF_PROG_RUN is restarted
		// and may run a batch again. Every generated frame must arrive.
		if res.Sent < n || pkts != res.Sent || bytes != res.Sent*uint64(tc.size) {
			t.Errorf("%+v: generated %d, sink saw %d frames %d bytes", tc, res.Sent, pkts, bytes)
		}
		if tc.stamp {
			h, err := objs.Histogram(true)
			if err != nil {
				t.Fatal(err)
			}
			var tot uint64
			for _, c := range h {
				tot += c
			}
			if tot != res.Sent || kern.Quantile(h, 0.5) <= 0 {
				t.Errorf("histogram holds %d samples, p50 %v", tot, kern.Quantile(h, 0.5))
			}
		}
		t.Logf("%+v: %d frames in %v (%.2f Mpps)", tc, res.Sent, res.Elapsed, float64(res.Sent)/res.Elapsed.Seconds()/1e6)
		lk.Close()
	}
}

func TestPaced(t *testing.T) {
	l := netlab.NewT(t)
	g0, g1, err := l.RootVeth("g0", "g1")
	if err != nil {
		t.Fatal(err)
	}
	l0, _ := netlink.LinkByName(g0)
	l1, _ := netlink.LinkByName(g1)
	objs, err := kern.Load(kern.Options{Stamp: true})
	if err != nil {
		t.Fatal(err)
	}
	defer objs.Close()
	objs.SetGenTarget(l0.Attrs().Index)
	lk, err := kern.AttachXDP(objs.Sink, l1.Attrs().Index)
	if err != nil {
		t.Fatal(err)
	}
	defer lk.Close()
	frame, _ := kern.Frame{SrcMAC: l0.Attrs().HardwareAddr, DstMAC: l1.Attrs().HardwareAddr,
		SrcIP: []byte{198, 18, 0, 0}, DstIP: []byte{198, 19, 0, 1}}.Bytes()
	res, err := Paced(context.Background(), objs, frame, 2000, 20000)
	if err != nil || res.Sent < 2000 {
		t.Fatal(res, err)
	}
	h, _ := objs.Histogram(false)
	t.Logf("paced: %v, p50 %.0f ns p99 %.0f ns", res.Elapsed, kern.Quantile(h, .5), kern.Quantile(h, .99))
}

func TestBuckets(t *testing.T) {
	// BucketLow must invert the BPF bucket function.
	prev := uint64(0)
	for b := 1; b < 600; b++ {
		lo := kern.BucketLow(b)
		if lo <= prev {
			t.Fatalf("bucket %d low %d not increasing (prev %d)", b, lo, prev)
		}
		prev = lo
	}
	if kern.BucketLow(16) != 16 || kern.BucketLow(17) != 17 || kern.BucketLow(32) != 32 || kern.BucketLow(33) != 34 {
		t.Fatal(kern.BucketLow(16), kern.BucketLow(17), kern.BucketLow(32), kern.BucketLow(33))
	}
}

// TestGTPAndDownlinkModes: in ModeGTPUL the generator sends G-PDUs whose
// TEID and inner source cycle through the flows, in ModeDL plain frames
// whose destination does; the sink counts both kinds, and a socket on the
// far end sees the flows in order.
func TestGTPAndDownlinkModes(t *testing.T) {
	l := netlab.NewT(t)
	g0, g1, err := l.RootVeth("g0", "g1")
	if err != nil {
		t.Fatal(err)
	}
	l0, _ := netlink.LinkByName(g0)
	l1, _ := netlink.LinkByName(g1)
	flows := []kern.GenFlow{{TEID: 0x1001, Addr: [4]byte{10, 0, 0, 1}}, {TEID: 0x2002, Addr: [4]byte{10, 0, 0, 2}}, {TEID: 0x3003, Addr: [4]byte{10, 0, 0, 3}}}
	base := kern.Frame{Size: 64, SrcMAC: l0.Attrs().HardwareAddr, DstMAC: l1.Attrs().HardwareAddr,
		SrcIP: []byte{10, 0, 0, 1}, DstIP: []byte{198, 19, 0, 1}}
	for _, tc := range []struct {
		mode uint32
		gtp  bool
	}{{kern.ModeGTPUL, true}, {kern.ModeDL, false}} {
		objs, err := kern.Load(kern.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer objs.Close()
		if err := objs.SetGenTarget(l0.Attrs().Index); err != nil {
			t.Fatal(err)
		}
		if err := objs.SetMode(tc.mode, flows); err != nil {
			t.Fatal(err)
		}
		f := base
		if tc.gtp {
			f.GTP = &kern.GTPOuter{SrcIP: []byte{198, 18, 0, 10}, DstIP: []byte{198, 18, 0, 1}, TEID: 0x1001}
		}
		frame, err := f.Bytes()
		if err != nil {
			t.Fatal(err)
		}
		// First the frames themselves, through XDP_PASS to a socket.
		got := generated(t, objs, l1.Attrs().Index, frame, 6)
		for i, fr := range got {
			want := flows[i%3]
			if tc.gtp {
				if len(fr) != 100 || binary.BigEndian.Uint32(fr[46:]) != want.TEID || [4]byte(fr[62:66]) != want.Addr {
					t.Errorf("G-PDU %d: % x", i, fr)
				}
			} else if len(fr) != 64 || [4]byte(fr[30:34]) != want.Addr {
				t.Errorf("frame %d: % x", i, fr)
			}
		}
		// Then the sink: every frame counted.
		lk, err := kern.AttachXDP(objs.Sink, l1.Attrs().Index)
		if err != nil {
			t.Fatal(err)
		}
		res, err := Run(context.Background(), objs, frame, Options{Packets: 30000, Duration: 10 * time.Second, CPUs: 1})
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(50 * time.Millisecond)
		pkts, _, other, _ := objs.SinkCounts()
		if pkts != res.Sent || other != 0 {
			t.Errorf("mode %d: generated %d, sink saw %d (%d others)", tc.mode, res.Sent, pkts, other)
		}
		lk.Close()
	}
}

// generated returns n frames the generator sends towards ifindex (whose XDP
// passes them to a packet socket).
func generated(t *testing.T, objs *kern.Objects, ifindex int, frame []byte, n int) [][]byte {
	t.Helper()
	pass, err := kern.AttachXDP(objs.Pass, ifindex)
	if err != nil {
		t.Fatal(err)
	}
	defer pass.Close()
	return captureFrames(t, ifindex, n, func() {
		if _, err := Run(context.Background(), objs, frame, Options{Packets: uint64(n), Duration: 5 * time.Second, CPUs: 1}); err != nil {
			t.Fatal(err)
		}
	})
}

// captureFrames returns the first n IPv4 or IPv6/UDP frames received on
// ifindex while fn runs.
func captureFrames(t *testing.T, ifindex, n int, fn func()) [][]byte {
	t.Helper()
	// Protocol 0: the socket receives nothing until the bind names the
	// interface and the protocol (opened with ETH_P_ALL it would take every
	// interface's frames meanwhile, another generator's too).
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	if err := unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: htons(unix.ETH_P_ALL), Ifindex: ifindex}); err != nil {
		t.Fatal(err)
	}
	tv := unix.Timeval{Sec: 2}
	unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv)
	fn()
	var out [][]byte
	buf := make([]byte, 2048)
	for len(out) < n {
		k, _, err := unix.Recvfrom(fd, buf, 0)
		if err != nil {
			t.Fatalf("%d frames of %d: %v", len(out), n, err)
		}
		// IPv4, or IPv6/UDP (not the interface's own neighbour discovery)
		if k >= 34 && binary.BigEndian.Uint16(buf[12:]) == 0x0800 ||
			k >= 54 && binary.BigEndian.Uint16(buf[12:]) == 0x86dd && buf[20] == 17 {
			out = append(out, append([]byte(nil), buf[:k]...))
		}
	}
	return out
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }

// TestIPv6Mode: IPv6 frames vary their source address and port per flow,
// carry a valid UDP checksum (mandatory in IPv6) whatever the flow,
// sequence number and timestamp, and the sink counts them all.
func TestIPv6Mode(t *testing.T) {
	l := netlab.NewT(t)
	g0, g1, err := l.RootVeth("g0", "g1")
	if err != nil {
		t.Fatal(err)
	}
	l0, _ := netlink.LinkByName(g0)
	l1, _ := netlink.LinkByName(g1)
	objs, err := kern.Load(kern.Options{Flows: 100, Stamp: true})
	if err != nil {
		t.Fatal(err)
	}
	defer objs.Close()
	if err := objs.SetGenTarget(l0.Attrs().Index); err != nil {
		t.Fatal(err)
	}
	if err := objs.SetMode(kern.ModeV6, nil); err != nil {
		t.Fatal(err)
	}
	frame, err := kern.Frame{Size: 64, SrcMAC: l0.Attrs().HardwareAddr, DstMAC: l1.Attrs().HardwareAddr,
		SrcIP: net.ParseIP("2001:db8:a::"), DstIP: net.ParseIP("2001:db8:ff::1")}.Bytes()
	if err != nil {
		t.Fatal(err)
	}
	if len(frame) != kern.Template6Len {
		t.Fatalf("frame of %d bytes, want the smallest IPv6 one, %d", len(frame), kern.Template6Len)
	}
	got := generated(t, objs, l1.Attrs().Index, frame, 20)
	srcs := map[string]bool{}
	for i, fr := range got {
		p := gopacket.NewPacket(fr, layers.LayerTypeEthernet, gopacket.Default)
		ip, _ := p.Layer(layers.LayerTypeIPv6).(*layers.IPv6)
		udp, _ := p.Layer(layers.LayerTypeUDP).(*layers.UDP)
		if ip == nil || udp == nil {
			t.Fatalf("frame %d is not IPv6/UDP: % x", i, fr)
		}
		want := udp.Checksum
		udp.SetNetworkLayerForChecksum(ip)
		buf := gopacket.NewSerializeBuffer()
		if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{ComputeChecksums: true}, udp, gopacket.Payload(udp.Payload)); err != nil {
			t.Fatal(err)
		}
		if sum := binary.BigEndian.Uint16(buf.Bytes()[6:]); sum != want {
			t.Errorf("frame %d (%s port %d): UDP checksum %#04x, want %#04x", i, ip.SrcIP, udp.SrcPort, want, sum)
		}
		srcs[fmt.Sprintf("%s:%d", ip.SrcIP, udp.SrcPort)] = true
	}
	if len(srcs) != 20 {
		t.Errorf("%d distinct sources in 20 frames of 100 flows", len(srcs))
	}
	lk, err := kern.AttachXDP(objs.Sink, l1.Attrs().Index)
	if err != nil {
		t.Fatal(err)
	}
	defer lk.Close()
	res, err := Run(context.Background(), objs, frame, Options{Packets: 30000, Duration: 10 * time.Second, CPUs: 1})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	if pkts, _, other, _ := objs.SinkCounts(); pkts != res.Sent || other != 0 {
		t.Errorf("generated %d, sink saw %d (%d others)", res.Sent, pkts, other)
	}
}
