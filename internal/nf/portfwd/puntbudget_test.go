package portfwd

import (
	"bytes"
	"encoding/binary"
	"os"
	"testing"
	"time"

	"github.com/cilium/ebpf/perf"
	"github.com/edgenf/edgenf/internal/datapath"
	"github.com/edgenf/edgenf/internal/nftest"
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
