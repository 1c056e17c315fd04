package firewall

import (
	"fmt"
	"strconv"
	"testing"

	"github.com/edgenf/edgenf/internal/datapath"
	"github.com/edgenf/edgenf/internal/nftest"
)

// benchRules: n rules "<proto> dport 10000+i drop" (none matches the
// traffic), or with mixed, rules each matching the traffic in all fields but
// one.
func benchRules(n int, proto string, mixed bool) []Rule {
	out := make([]Rule, 0, n)
	for i := 0; i < n; i++ {
		r := Rule{ID: i + 1, Proto: proto, Dport: fmt.Sprint(10000 + i), Action: "drop"}
		if mixed {
			if i%2 == 0 {
				r = Rule{ID: i + 1, Src: "198.18.0.0/24", Dst: fmt.Sprintf("198.19.%d.%d", 1+i/250%200, i%250), Proto: proto, Dport: "9", Action: "drop"}
			} else {
				r = Rule{ID: i + 1, Src: fmt.Sprintf("198.18.%d.0/24", 2+i%200), Dst: "198.19.0.0/16", Proto: proto, Dport: "1-100", Action: "drop"}
			}
		}
		out = append(out, r)
	}
	return out
}

// perPacket runs the firewall program on one frame with BPF_PROG_RUN Repeat
// and returns ns per packet (the framework's entry and redirect included).
// cached: a UDP flow, whose connection caches its verdict after the first
// run; otherwise TCP ACKs of no connection (state invalid, accepted by the
// policy, never tracked), so every run goes through the classifier.
// v6: the same in IPv6.
func perPacket(b *testing.B, n int, mixed, cached, v6 bool) {
	proto, frame := "udp", udp("198.18.0.10", "198.19.0.1", 1234, 9)
	if !cached {
		proto, frame = "tcp", tcp("198.18.0.10", "198.19.0.1", 1234, 9, "A")
	}
	if v6 {
		frame = udp6("2001:db8::10", "2001:db8:1::1", 1234, 9)
		if !cached {
			frame = tcp6("2001:db8::10", "2001:db8:1::1", 1234, 9, fACK)
		}
	}
	r := nftest.New(b, Type, fwModel(datapath.XDP, nil, benchRules(n, proto, mixed), nil))
	if res := r.RunTransparent(datapath.Ingress, frame); res.Verdict != datapath.XDPRedirect {
		b.Fatalf("verdict %d", res.Verdict)
	}
	b.ResetTimer()
	_, d, err := r.Prog.EBPF().Benchmark(frame, b.N, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(d.Nanoseconds()), "ns/pkt")
}

func BenchmarkClassify(b *testing.B) {
	for _, cached := range []bool{true, false} {
		name := "cached"
		if !cached {
			name = "classifier"
		}
		for _, n := range []int{10, 100, 1000, 10000} {
			b.Run(name+"/"+strconv.Itoa(n), func(b *testing.B) { perPacket(b, n, false, cached, false) })
		}
		b.Run(name+"/10000-mixed", func(b *testing.B) { perPacket(b, 10000, true, cached, false) })
		for _, n := range []int{10, 1000} {
			b.Run(name+"/ipv6-"+strconv.Itoa(n), func(b *testing.B) { perPacket(b, n, false, cached, true) })
		}
	}
}

// BenchmarkBulkLoad compiles and loads a 10,000-rule chain (Sync).
func BenchmarkBulkLoad(b *testing.B) {
	r := nftest.New(b, Type, fwModel(datapath.XDP, nil, nil, nil))
	m := fwModel(datapath.XDP, nil, benchRules(10000, "udp", true), nil)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := r.Ctl.Sync(r.Handle(), m); err != nil {
			b.Fatal(err)
		}
	}
}
