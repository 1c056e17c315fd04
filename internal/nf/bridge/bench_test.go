package bridge

import (
	"testing"

	"github.com/edgenf/edgenf/internal/datapath"
	"github.com/edgenf/edgenf/internal/nftest"
)

// BenchmarkUnicast: per-packet cost of a learned unicast frame between two
// access ports (learning refresh + FDB lookup + send), BPF_PROG_RUN Repeat.
func BenchmarkUnicast(b *testing.B) {
	for _, hook := range []datapath.Hook{datapath.XDP, datapath.TC} {
		b.Run(string(hook), func(b *testing.B) {
			r := nftest.New(b, Type, flat(hook))
			r.Run("p1", frame(macB, macA, 0))
			f := frame(macA, macB, 0)
			if res := r.Run("p0", f); res.Port != 1 {
				b.Fatalf("port %d", res.Port)
			}
			if err := r.DP.SetMetadata(datapath.Metadata{Cube: r.Prog.Slot, InPort: 0, IngressIfindex: 1}); err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			var sum float64
			const runs = 20
			for i := 0; i < runs; i++ {
				_, d, err := r.Prog.EBPF().Benchmark(f, 100000, nil)
				if err != nil {
					b.Fatal(err)
				}
				sum += float64(d.Nanoseconds())
			}
			b.ReportMetric(sum/runs, "ns/pkt")
		})
	}
}

var _ = nftest.MAC
