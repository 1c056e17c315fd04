package portfwd

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/cilium/ebpf/perf"
	"github.com/edgenf/edgenf/internal/datapath"
	"github.com/edgenf/edgenf/internal/nftest"
	"github.com/edgenf/edgenf/internal/tenant"
)

// Two cubes punt through the one punt ring: cube A, over its budget, gets
// only its burst through (the rest dropped and counted as punt_rate
// drops); cube B's punts, interleaved with A's, all arrive.
func TestPuntBudgetIsPerCube(t *testing.T) {
	const frames = 40
	for _, h := range hooks {
		t.Run(string(h.hook), func(t *testing.T) {
			r := nftest.New(t, Type, model(h.hook, Rule{InPort: "p2", Action: "punt"}))
			b := model(h.hook, Rule{InPort: "p2", Action: "punt"})
			b.Name = "pfb"
			progB, err := r.Add(Type, b, 2)
			if err != nil {
				t.Fatal(err)
			}
			// A: one a second in bursts of 3; B: bursts of 1000
			if err := r.Prog.SetPuntBudget(datapath.NewPuntBudget(1, 3, false)); err != nil {
				t.Fatal(err)
			}
			if err := progB.SetPuntBudget(datapath.NewPuntBudget(1, 1000, false)); err != nil {
				t.Fatal(err)
			}
			rd, err := perf.NewReader(r.DP.PuntMap(), 16*os.Getpagesize())
			if err != nil {
				t.Fatal(err)
			}
			defer rd.Close()
			frame := nftest.UDP4("198.18.0.1", "198.19.0.1", 1, 2, []byte("punt me"))
			start := time.Now()
			for i := 0; i < frames; i++ {
				if res := r.Run("p2", frame); res.Verdict != h.drop {
					t.Fatalf("A: verdict %d", res.Verdict)
				}
				if res, err := r.DP.Run(progB, 5, frame); err != nil || res.Verdict != h.drop {
					t.Fatalf("B: verdict %d, %v", res.Verdict, err)
				}
			}
			refill := int(time.Since(start)/time.Second) + 1 // A's tokens since
			got := map[uint32]int{}
			for {
				rd.SetDeadline(time.Now().Add(100 * time.Millisecond))
				rec, err := rd.Read()
				if err != nil {
					break
				}
				var hdr datapath.PuntHeader
				if binary.Read(bytes.NewReader(rec.RawSample), binary.LittleEndian, &hdr) == nil && hdr.Magic == datapath.PuntMagic {
					got[hdr.Cube]++
				}
			}
			if got[2] != frames {
				t.Errorf("cube B: %d of its %d punts reached the slow path", got[2], frames)
			}
			if got[1] < 3 || got[1] > 3+refill {
				t.Errorf("cube A: %d punts reached the slow path, want its burst of 3 (+%d refilled)", got[1], refill)
			}
			stA, stB := r.Stats(), mustStats(t, progB)
			if stA[5].PuntPackets != uint64(got[1]) || stA[5].PuntRateDrops != uint64(frames-got[1]) {
				t.Errorf("cube A counters: %d punts, %d over budget; want %d and %d", stA[5].PuntPackets, stA[5].PuntRateDrops, got[1], frames-got[1])
			}
			if stB[5].PuntPackets != frames || stB[5].PuntRateDrops != 0 {
				t.Errorf("cube B counters: %d punts, %d over budget; want %d and 0", stB[5].PuntPackets, stB[5].PuntRateDrops, frames)
			}
		})
	}
}

func mustStats(t *testing.T, p *datapath.Program) []datapath.Stats {
	t.Helper()
	st, err := p.Stats()
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// BenchmarkPuntPath prices the punt budget on the punt path (the fast
// path never reads it): a punt with no budget (one map lookup), one within
// its budget (the clock, a compare and swap) and one over it (the clock and
// a counter instead of the ring), at XDP, in rounds interleaved so that the
// machine's load falls on all alike; the medians are reported, ns a punt.
// The ring is drained meanwhile, as the daemon does.
func BenchmarkPuntPath(b *testing.B) {
	r := nftest.New(b, Type, model(datapath.XDP, Rule{InPort: "p2", Action: "punt"}))
	rd, err := perf.NewReader(r.DP.PuntMap(), 256*os.Getpagesize())
	if err != nil {
		b.Fatal(err)
	}
	defer rd.Close()
	go func() {
		for {
			if _, err := rd.Read(); errors.Is(err, perf.ErrClosed) {
				return
			}
		}
	}()
	if err := r.DP.SetMetadata(datapath.Metadata{Cube: r.Prog.Slot, InPort: 5, IngressIfindex: 1}); err != nil {
		b.Fatal(err)
	}
	frame := nftest.UDP4("198.18.0.1", "198.19.0.1", 1, 2, []byte("punt me"))
	variants := []struct {
		name   string
		budget datapath.PuntBudget
	}{
		{"no-budget", datapath.NewPuntBudget(0, 0, true)},
		{"within", datapath.NewPuntBudget(tenant.MaxRate, tenant.MaxBurst, false)},
		{"over", datapath.NewPuntBudget(0, 0, false)},
	}
	per := make([][]float64, len(variants))
	for round := 0; round < 7; round++ {
		for i, v := range variants {
			if err := r.Prog.SetPuntBudget(v.budget); err != nil {
				b.Fatal(err)
			}
			_, d, err := r.Prog.EBPF().Benchmark(frame, max(b.N, 100_000), nil)
			if err != nil {
				b.Fatal(err)
			}
			per[i] = append(per[i], float64(d.Nanoseconds()))
		}
	}
	for i, v := range variants {
		slices.Sort(per[i])
		b.ReportMetric(per[i][len(per[i])/2], v.name+"-ns/punt")
		b.Logf("%s: ns a punt, 7 rounds: %v", v.name, per[i])
	}
}
