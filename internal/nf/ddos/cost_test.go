package ddos

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/edgenf/edgenf/internal/cube"
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

// The cost model counts the IPv4 prefix lengths in use per blacklist (a
// probe each), addresses alone as /32, IPv6 entries not at all.
func TestCostCountsIPv4PrefixLengths(t *testing.T) {
	c := &cube.Cube{Name: "dd", Type: "ddos", Tables: map[string]map[string]json.RawMessage{
		"blacklist_src": {"198.18.0.1": nil, "10.0.0.0/8": nil, "10.1.0.0/16": nil, "10.2.0.0/16": nil, "2001:db8::/32": nil},
		"blacklist_dst": {"198.18.0.2": nil, "2001:db8::1": nil},
	}}
	uses, _, err := costUses(nil, c, "ingress")
	if err != nil {
		t.Fatal(err)
	}
	var n float64
	for _, u := range uses {
		if u.Term == termLength {
			n = u.N
		}
	}
	if n != 4 {
		t.Fatalf("%v prefix lengths probed, want 4 (/32, /8, /16 of sources, /32 of destinations): %+v", n, uses)
	}
}
