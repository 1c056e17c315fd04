package gen

import (
	"context"
	"encoding/binary"
	"testing"
	"time"

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
		pass, err := kern.AttachXDP(objs.Pass, l1.Attrs().Index)
		if err != nil {
			t.Fatal(err)
		}
		got := captureFrames(t, l1.Attrs().Index, 6, func() {
			if _, err := Run(context.Background(), objs, frame, Options{Packets: 6, Duration: 5 * time.Second, CPUs: 1}); err != nil {
				t.Fatal(err)
			}
		})
		pass.Close()
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

// captureFrames returns the first n frames received on ifindex while fn runs.
func captureFrames(t *testing.T, ifindex, n int, fn func()) [][]byte {
	t.Helper()
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW, int(htons(unix.ETH_P_ALL)))
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
		if k >= 34 && binary.BigEndian.Uint16(buf[12:]) == 0x0800 {
			out = append(out, append([]byte(nil), buf[:k]...))
		}
	}
	return out
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }
