package ddos

import (
	"fmt"
	"net/netip"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/edgenf/edgenf/internal/datapath"
	"github.com/edgenf/edgenf/internal/nftest"
)

// BenchmarkCost reports the per-packet cost (BPF_PROG_RUN, Repeat) of the
// ddos cube program alone on a blacklisted source (exact and prefix), a
// passing packet with detection on, and a bare XDP_DROP program.
func BenchmarkCost(b *testing.B) {
	drop, err := ebpf.NewProgram(&ebpf.ProgramSpec{Type: ebpf.XDP, License: "GPL",
		Instructions: asm.Instructions{asm.Mov.Imm(asm.R0, 1), asm.Return()}})
	if err != nil {
		b.Fatal(err)
	}
	defer drop.Close()
	r := nftest.New(b, Type, model(datapath.XDP, &Config{Scan: &ScanConfig{DistinctPorts: 100}, Rate: &RateConfig{Threshold: 1 << 30}},
		[]Entry{{Prefix: "198.18.0.10"}, {Prefix: "198.18.7.0/24"}}, nil))
	hop, _ := datapath.NewHop(datapath.DstIface, nftest.FakeIfindex, 0, 0, []datapath.Transparent{{Slot: 1}})
	for _, c := range []struct {
		name  string
		prog  *ebpf.Program
		frame []byte
	}{
		{"bare-xdp-drop", drop, nftest.UDP4("198.18.0.10", "198.19.0.1", 1024, 9, make([]byte, 18))},
		{"ddos-exact-drop", r.Prog.EBPF(), nftest.UDP4("198.18.0.10", "198.19.0.1", 1024, 9, make([]byte, 18))},
		{"ddos-prefix-drop", r.Prog.EBPF(), nftest.UDP4("198.18.7.10", "198.19.0.1", 1024, 9, make([]byte, 18))},
		{"ddos-pass-detect", r.Prog.EBPF(), nftest.UDP4("198.18.0.11", "198.19.0.1", 1024, 9, make([]byte, 18))},
	} {
		b.Run(c.name, func(b *testing.B) {
			if err := r.DP.SetMetadata(datapath.Metadata{Cube: datapath.MaxSlots, Hop: hop}); err != nil {
				b.Fatal(err)
			}
			_, d, err := c.prog.Benchmark(c.frame, b.N, nil)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(d.Nanoseconds()), "ns/pkt")
		})
	}
}

// BenchmarkCostLengths reports what a passing IPv4 packet (no detection)
// costs against the number of prefix lengths the source blacklist uses:
// one probe sequence per length in the table, and one trie lookup when
// lengths overflow into the fallback trie (17 and more).
func BenchmarkCostLengths(b *testing.B) {
	hop, _ := datapath.NewHop(datapath.DstIface, nftest.FakeIfindex, 0, 0, []datapath.Transparent{{Slot: 1}})
	frame := nftest.UDP4("198.18.0.11", "198.19.0.1", 1024, 9, make([]byte, 18))
	for _, n := range []int{0, 1, 2, 4, 8, 16, 17} {
		var list []Entry
		for i := 0; i < n; i++ {
			bits := 32 - i
			list = append(list, Entry{Prefix: netip.PrefixFrom(netip.MustParseAddr("203.0.113.255"), bits).Masked().String()})
		}
		r := nftest.New(b, Type, model(datapath.XDP, nil, list, nil))
		b.Run(fmt.Sprintf("pass-%d-lengths", n), func(b *testing.B) {
			if err := r.DP.SetMetadata(datapath.Metadata{Cube: datapath.MaxSlots, Hop: hop}); err != nil {
				b.Fatal(err)
			}
			_, d, err := r.Prog.EBPF().Benchmark(frame, b.N, nil)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(d.Nanoseconds()), "ns/pkt")
		})
	}
}
