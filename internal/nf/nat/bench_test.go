package nat

import (
	"testing"

	"github.com/edgenf/edgenf/internal/datapath"
	"github.com/edgenf/edgenf/internal/nftest"
)

// BenchmarkTranslate measures a reply packet of an established SNAT flow
// (the heavier direction: two lookups) through the NAT with BPF_PROG_RUN
// Repeat (ns/pkt, the framework's entry and redirect included). Repeat
// reruns the program on the same buffer, so the rule maps the inside host to
// itself: lookups, state update and checksum path run in full, only the final
// stores are no-ops. (Repeats run as ingress: the rig's metadata direction
// holds for the first run only.)
func BenchmarkTranslate(b *testing.B) {
	for _, h := range []datapath.Hook{datapath.XDP, datapath.TC} {
		b.Run(string(h), func(b *testing.B) {
			r := nftest.New(b, Type, natModel(h, nil, tables{"snat": {SNATRule{ID: 1, Internal: "198.18.1.2/32", External: "198.18.1.2"}}}))
			r.RunTransparent(datapath.Egress, udp4(in1, server, 5000, 53, make([]byte, 18)))
			frame := udp4(server, in1, 53, 5000, make([]byte, 18))
			r.RunTransparent(datapath.Ingress, frame)
			if cs := mustCounters(b, r); cs["translated"] != 2 {
				b.Fatalf("counters %v", cs)
			}
			if ss, _ := sessions(r.Handle()); len(ss) != 1 {
				b.Fatalf("sessions %+v", ss)
			}
			b.ResetTimer()
			_, d, err := r.Prog.EBPF().Benchmark(frame, b.N, nil)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(d.Nanoseconds()), "ns/pkt")
			b.StopTimer()
			if cs := mustCounters(b, r); cs["translated"] != uint64(b.N)+2 {
				b.Fatalf("not every repeat was translated: %v", cs)
			}
		})
	}
}
