package datapath_test

import (
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/edgenf/edgenf/internal/datapath"
	"github.com/edgenf/edgenf/internal/nf/portfwd"
	"github.com/edgenf/edgenf/internal/nftest"
	"github.com/edgenf/edgenf/internal/testenv"
)

var seq atomic.Uint32

// pfEntry mirrors struct pf_entry of portfwd.bpf.c.
type pfEntry struct {
	OutPort uint32
	Flags   uint16
	Action  uint16
	Src     [6]byte
	Dst     [6]byte
}

// chainOf loads n portfwd cubes forwarding p0→p1, c_i:p1 peered with
// c_{i+1}:p0, the last one sending to an interface, and returns them with the
// entry program of an interface peered with c0:p0: the stub, or with direct
// c0's direct entry.
func chainOf(tb testing.TB, hook datapath.Hook, n int, direct bool) ([]*datapath.Program, *ebpf.Program) {
	testenv.NeedRoot(tb)
	root := filepath.Join("/sys/fs/bpf", fmt.Sprintf("enfb-%d-%d", os.Getpid(), seq.Add(1)))
	dp, err := datapath.Open(root)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { dp.Destroy() })
	obj, _ := portfwd.Type.Object(hook)
	spec, err := datapath.LoadSpec(obj)
	if err != nil {
		tb.Fatal(err)
	}
	cubes := make([]*datapath.Program, n)
	for i := range cubes {
		if cubes[i], err = dp.LoadCube(fmt.Sprintf("c%d", i), hook, uint32(i), spec, nil); err != nil {
			tb.Fatal(err)
		}
	}
	for i, c := range cubes {
		hop := datapath.Hop{Kind: datapath.DstIface, Ifindex: 1}
		if i+1 < n {
			hop = datapath.Hop{Kind: datapath.DstCube, Slot: uint32(i + 1), Port: 0}
		}
		if err := c.SetHop(1, hop); err != nil {
			tb.Fatal(err)
		}
		m, _ := c.Map("pf_table")
		if err := m.Put(uint32(0), pfEntry{OutPort: 1, Flags: 1}); err != nil {
			tb.Fatal(err)
		}
	}
	var first *datapath.Program
	if direct {
		first = cubes[0]
	}
	entry, err := dp.Entry(hook, datapath.Hop{Kind: datapath.DstCube, Slot: 0, Port: 0}, first)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { entry.Close() })
	return cubes, entry
}

// A chain forwards through every cube, entered through the stub or directly:
// each one counts the frame once.
func TestChainOfCubesCountsEveryHop(t *testing.T) {
	for _, tc := range []struct {
		hook   datapath.Hook
		direct bool
	}{{datapath.XDP, false}, {datapath.XDP, true}, {datapath.TC, false}, {datapath.TC, true}} {
		hook := tc.hook
		cubes, entry := chainOf(t, hook, 8, tc.direct)
		frame := nftest.UDP4("198.18.0.1", "198.18.0.2", 1, 2, make([]byte, 22))
		v, _, err := entry.Benchmark(frame, 1000, nil)
		if err != nil {
			t.Fatal(err)
		}
		if want := map[datapath.Hook]uint32{datapath.XDP: datapath.XDPRedirect, datapath.TC: datapath.TCActRedirect}[hook]; v != want {
			t.Fatalf("%s: verdict %d, want %d", hook, v, want)
		}
		for i, c := range cubes {
			st, err := c.Stats()
			if err != nil {
				t.Fatal(err)
			}
			if st[0].RxPackets != 1000 || st[1].TxPackets != 1000 || st[1].TxBytes != 64000 {
				t.Fatalf("%s (direct %v) cube %d: p0 %+v p1 %+v, want 1000 frames through", hook, tc.direct, i, st[0], st[1])
			}
		}
	}
}

// BenchmarkHop reports the per-packet cost (ns) of a frame crossing chains of
// portfwd cubes, from the interface's entry program on (the stub, or the
// first cube's direct entry).
func BenchmarkHop(b *testing.B) {
	frame := nftest.UDP4("198.18.0.1", "198.18.0.2", 1, 2, make([]byte, 22)) // 64 bytes
	for _, hook := range []datapath.Hook{datapath.XDP, datapath.TC} {
		for _, n := range []int{1, 2, 5, 8} {
			for _, direct := range []bool{false, true} {
				b.Run(fmt.Sprintf("%s/cubes=%d/direct=%v", hook, n, direct), func(b *testing.B) {
					_, entry := chainOf(b, hook, n, direct)
					_, per, err := entry.Benchmark(frame, b.N, nil)
					if err != nil {
						b.Fatal(err)
					}
					b.ReportMetric(float64(per.Nanoseconds()), "ns/pkt")
					b.ReportMetric(0, "ns/op")
				})
			}
		}
	}
}
