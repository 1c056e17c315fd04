package gen

import (
	"context"
	"testing"
	"time"

	"github.com/vishvananda/netlink"

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
