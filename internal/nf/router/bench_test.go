package router

import (
	"encoding/json"
	"math/rand/v2"
	"net/netip"
	"testing"

	"github.com/edgenf/edgenf/internal/datapath"
	"github.com/edgenf/edgenf/internal/nftest"
)

// benchRoutes makes n distinct static routes inside 198.18.0.0/15 (lengths
// /16../32, most of them /24../32 as in real tables), all via 198.18.1.20,
// plus those on the way to 198.19.77.5 so the lookup walks a deep path.
func benchRoutes(n int) map[string]json.RawMessage {
	rows := map[string]json.RawMessage{}
	add := func(pf netip.Prefix) {
		if pf.Bits() < 16 || pf.Overlaps(netip.MustParsePrefix("198.18.0.0/22")) && pf.Bits() >= 22 {
			return // keep clear of the connected subnets
		}
		r := Route{Prefix: pf.String(), NextHop: "198.18.1.20"}
		rows[r.Prefix] = nftest.Entry(r)
	}
	dst := netip.MustParseAddr("198.19.77.5")
	for _, bits := range []int{16, 20, 24, 28} {
		if len(rows) < n {
			add(netip.PrefixFrom(dst, bits).Masked())
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for len(rows) < n {
		v := 198<<24 | 18<<16 | rng.Uint32N(1<<17)
		bits := 16 + rng.IntN(17)
		if bits < 24 && rng.IntN(4) != 0 {
			bits += 8
		}
		a := netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
		add(netip.PrefixFrom(a, bits).Masked())
	}
	return rows
}

func benchRig(b testing.TB, hook datapath.Hook, n int, cache bool) *nftest.Rig {
	// The next hop's MAC is the ingress port's own, so a forwarded frame is
	// still addressed to the router: BPF_PROG_RUN's Repeat reruns the
	// program on the same, already rewritten buffer.
	c := model(hook, nil, []Neighbor{{IP: "198.18.1.20", MAC: macP0}})
	c.Tables["routes"] = benchRoutes(n)
	if !cache {
		c.Config = json.RawMessage(`{"disable_route_cache": true}`)
	}
	return nftest.New(b, Type, c)
}

// perPacket measures the forwarding cost in ns per packet with Repeat
// batches of 250 (the TTL, starting at 255, must not run out within a
// batch), at most 40 batches whatever b.N: each BPF_PROG_RUN with Repeat
// costs ~20 ms of set-up outside the measured loop.
func perPacket(b testing.TB, r *nftest.Rig, total int) float64 {
	frame := udpTo(macP0, "198.18.0.10", "198.19.77.5", 255)
	if res := r.Run("p0", frame); res.Port != 1 {
		b.Fatalf("not forwarded: port %d", res.Port)
	}
	if err := r.DP.SetMetadata(datapath.Metadata{Cube: r.Prog.Slot, InPort: 0, IngressIfindex: 1}); err != nil {
		b.Fatal(err)
	}
	const batch = 250
	var sum float64
	runs := 0
	for done := 0; done < min(total, 40*batch); done += batch {
		ret, d, err := r.Prog.EBPF().Benchmark(frame, batch, nil)
		if err != nil || (ret != datapath.XDPRedirect && ret != datapath.TCActRedirect) {
			b.Fatalf("ret %d err %v", ret, err)
		}
		sum += float64(d.Nanoseconds())
		runs++
	}
	return sum / float64(runs)
}

// BenchmarkLookup: per-packet cost of forwarding one UDP packet (route
// lookup, ARP, TTL, MAC rewrite, send) with 10 and 100k routes, with the
// route cache (the default) and without it (every packet walks the LPM trie).
func BenchmarkLookup(b *testing.B) {
	for _, cache := range []bool{true, false} {
		for _, n := range []int{10, 100000} {
			name := map[int]string{10: "routes=10", 100000: "routes=100k"}[n]
			if !cache {
				name += "/trie-only"
			}
			b.Run(name, func(b *testing.B) {
				r := benchRig(b, datapath.XDP, n, cache)
				b.ResetTimer()
				b.ReportMetric(perPacket(b, r, max(b.N, 250)), "ns/pkt")
			})
		}
	}
}

// BenchmarkSourceCheck: the per-packet cost of forwarding with the ingress
// port's source check off and on (one LPM lookup in rt_src), 10 routes.
func BenchmarkSourceCheck(b *testing.B) {
	for _, on := range []bool{false, true} {
		b.Run(map[bool]string{false: "off", true: "on"}[on], func(b *testing.B) {
			c := model(datapath.XDP, nil, []Neighbor{{IP: "198.18.1.20", MAC: macP0}})
			c.Tables["routes"] = benchRoutes(10)
			if on {
				c.Ports[0].Config = json.RawMessage(`{"source_check": "on"}`)
			}
			r := nftest.New(b, Type, c)
			b.ResetTimer()
			b.ReportMetric(perPacket(b, r, max(b.N, 250)), "ns/pkt")
		})
	}
}
