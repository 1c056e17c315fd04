package stf

import (
	"fmt"
	"testing"

	"github.com/edgenf/edgenf/internal/p4/p4info"
)

// BenchmarkSelector is the per-packet cost of an action selector against
// the same route in a plain table (the bench group p4-selector, without
// the wire): examples/p4/l3fwd.p4 with its action in the LPM entry, and
// examples/p4/ecmp.p4 whose entry names a group of 4 members. Compare
// the two ns/packet of one run.
func BenchmarkSelector(b *testing.B) {
	pkt := []byte{0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 2, 0x08, 0x00,
		0x45, 0x00, 0x00, 0x1c, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11, 0xad, 0xa9, 0xc6, 0x13, 0x00, 0x01, 0xc6, 0x12, 0x01, 0x01,
		0x04, 0xd2, 0x16, 0x2e, 0x00, 0x08, 0x00, 0x00}
	route := []p4info.Match{{Field: "hdr.ipv4.dstAddr", Value: "198.18.0.0/16"}}
	fwd := func(port int) []p4info.Arg {
		return []p4info.Arg{{Name: "srcAddr", Value: "0xa0"}, {Name: "dstAddr", Value: "0xa1"}, {Name: "port", Value: fmt.Sprint(port)}}
	}
	run := func(b *testing.B, r *Runner) {
		if o, err := r.Send(0, pkt); err != nil || o == nil || o.Port == 0 {
			b.Fatalf("not routed: %+v %v", o, err)
		}
		b.ResetTimer()
		_, d, err := r.Prog.Benchmark(pkt, b.N, nil)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(d.Nanoseconds()), "ns/packet")
	}
	for _, hook := range []string{"xdp", "tc"} {
		b.Run("table-"+hook, func(b *testing.B) {
			r := load(b, compileFile(b, "../../../examples/p4/l3fwd.p4"), hook)
			if err := r.RT.AddEntry("routes", route, "forward", fwd(1), 0); err != nil {
				b.Fatal(err)
			}
			run(b, r)
		})
		b.Run("selector-"+hook, func(b *testing.B) {
			r := load(b, compileFile(b, "../../../examples/p4/ecmp.p4"), hook)
			var members []uint32
			for m := range uint32(4) {
				if err := r.RT.SetMember("next_hops", m, "forward", fwd(int(m)+1)); err != nil {
					b.Fatal(err)
				}
				members = append(members, m)
			}
			if err := r.RT.SetGroup("next_hops", 1, members); err != nil {
				b.Fatal(err)
			}
			if err := r.RT.AddRefEntry("routes", route, p4info.Ref{Group: true, ID: 1}, 0); err != nil {
				b.Fatal(err)
			}
			run(b, r)
		})
	}
}
