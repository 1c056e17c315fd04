package slicer

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"testing"

	"github.com/edgenf/edgenf/internal/datapath"
	"github.com/edgenf/edgenf/internal/nftest"
)

// overlapping destination prefixes of four lengths per family, and a
// source rule to fall back on
var overlapping = []Slice{
	{Name: "wide", ID: 1, Port: "s1", Rules: []Rule{{Dst: "198.18.0.0/15"}, {Dst: "2001:db8::/32"}}},
	{Name: "mid", ID: 2, Port: "s2", Rules: []Rule{{Dst: "198.19.0.0/16"}, {Dst: "2001:db8:8000::/33"}}},
	{Name: "net", ID: 3, Port: "s3", Rules: []Rule{{Dst: "198.19.5.0/24"}, {Dst: "2001:db8:0:1::/64"}}},
	{Name: "host", ID: 4, Port: "s4", Rules: []Rule{{Dst: "198.19.5.7"}, {Dst: "2001:db8:0:1::1"}}},
	{Name: "src", ID: 5, Port: "s5", Rules: []Rule{{Src: "198.18.6.0/23"}, {Src: "2001:db8:6::/127"}}},
}

var overlapCases = []struct {
	src, dst string
	want     int // port index, -1 dropped
}{
	{"198.18.6.1", "198.19.5.7", 14},         // the /32 over /24, /16, /15
	{"198.18.6.1", "198.19.5.8", 13},         // the /24
	{"198.18.6.1", "198.19.6.8", 12},         // the /16
	{"198.18.6.1", "198.18.77.1", 11},        // the /15
	{"198.18.7.1", "203.0.113.1", 15},        // no destination: the source /23
	{"198.18.8.1", "203.0.113.1", -1},        // nothing
	{"2001:db8:6::1", "2001:db8:0:1::1", 14}, // the /128
	{"2001:db8:6::1", "2001:db8:0:1::2", 13}, // the /64
	{"2001:db8:6::1", "2001:db8:8000::1", 12},
	{"2001:db8:6::1", "2001:db8:7fff::1", 11}, // the /32: bit 33 clear
	{"2001:db8:6::1", "2001:db9::1", 15},      // the source /127
	{"2001:db8:6::2", "2001:db9::1", -1},
}

func overlapFrame(src, dst string) []byte {
	if netip.MustParseAddr(dst).Is4() {
		return nftest.UDP4(src, dst, 1000, 2000, nil)
	}
	return nftest.UDP6(src, dst, 1000, 2000, nil)
}

func readConfig(t testing.TB, r *nftest.Rig) cfgVal {
	t.Helper()
	m, err := r.Handle().Map("sl_config")
	if err != nil {
		t.Fatal(err)
	}
	var c cfgVal
	if err := m.Lookup(uint32(0), &c); err != nil {
		t.Fatal(err)
	}
	return c
}

// emptyMap deletes the entries of a map of the rig's cube whose key
// matches.
func emptyMap(t *testing.T, r *nftest.Rig, name string, match func(key []byte) bool) {
	t.Helper()
	m, err := r.Handle().Map(name)
	if err != nil {
		t.Fatal(err)
	}
	var keys [][]byte
	k := make([]byte, m.KeySize())
	it := m.Iterate()
	for it.Next(&k, new(uint32)) {
		if match(k) {
			keys = append(keys, append([]byte(nil), k...))
		}
	}
	if err := it.Err(); err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		if err := m.Delete(k); err != nil {
			t.Fatal(err)
		}
	}
}

func anyKey([]byte) bool { return true }

// ipv4Key matches the IPv4 keys of a trie (sl_lpm_key: the family after
// the length).
func ipv4Key(k []byte) bool { return binary.NativeEndian.Uint32(k[4:]) == 4 }

// force makes the control plane classify every prefix field one way
// (inline: IPv4 only; IPv6 then takes the trie), until the test ends.
func force(t testing.TB, way int) {
	pick = func(_, _ int, v4 bool) int {
		if way == wayInline && !v4 {
			return wayTrie
		}
		return way
	}
	t.Cleanup(func() { pick = cheapest })
}

type emptied struct {
	name  string
	match func([]byte) bool
}

// Overlapping prefixes of several lengths go to the longest one, in both
// families, whether the fast path tries each length by hash, walks the
// trie or (IPv4) compares against the prefixes listed in its config. Each
// way is checked with the others' maps emptied, so the test sees which one
// answered.
func TestPrefixLengthsLongestFirst(t *testing.T) {
	for _, h := range hooks {
		for _, tc := range []struct {
			name  string
			way   int
			lens  [2]uint8 // nlens of the destination field, IPv4 and IPv6
			empty []emptied
		}{
			{"hash", wayHash, [2]uint8{4, 4}, []emptied{{"sl_dst", anyKey}, {"sl_src", anyKey}}},
			{"trie", wayTrie, [2]uint8{lensTrie, lensTrie}, []emptied{{"sl_pfx4", anyKey}, {"sl_pfx6", anyKey}}},
			{"inline", wayInline, [2]uint8{lensInline, lensTrie}, []emptied{{"sl_pfx4", anyKey}, {"sl_pfx6", anyKey}, {"sl_dst", ipv4Key}, {"sl_src", ipv4Key}}},
		} {
			t.Run(string(h.hook)+"/"+tc.name, func(t *testing.T) {
				force(t, tc.way)
				r := nftest.New(t, Type, model(h.hook, Settings{Uplink: "up"}, overlapping...))
				c := readConfig(t, r)
				if c.NLens[pfxDst] != tc.lens {
					t.Fatalf("lengths in use: %v, want destination %v", c.NLens, tc.lens)
				}
				if tc.way == wayHash && (c.Lens[pfxDst][0] != [maxLens]uint8{32, 24, 16, 15} || c.Lens[pfxDst][1] != [maxLens]uint8{128, 64, 33, 32}) {
					t.Fatalf("destination lengths %v, want longest first", c.Lens[pfxDst])
				}
				for _, e := range tc.empty {
					emptyMap(t, r, e.name, e.match)
				}
				for _, oc := range overlapCases {
					if res := r.Run("up", overlapFrame(oc.src, oc.dst)); res.Port != oc.want {
						t.Errorf("%s > %s: out of port %d (verdict %d), want %d", oc.src, oc.dst, res.Port, res.Verdict, oc.want)
					}
				}
			})
		}
	}
}

// The control plane picks the cheapest way per field and family: a list
// for a few IPv4 prefixes, hash lookups for many prefixes of few lengths,
// else the trie.
func TestCheapestWay(t *testing.T) {
	for _, tc := range []struct {
		prefixes, lens int
		v4             bool
		way            int
	}{
		{1, 1, true, wayInline},
		{4, 4, true, wayInline},
		{1, 1, false, wayTrie},      // a one-node trie
		{1000, 1, true, wayHash},    // 1,000 slices of a /26 each: 11 levels against one lookup
		{1000, 1, false, wayHash},   //
		{1000, 5, true, wayTrie},    // a miss would try five
		{100000, 4, false, wayHash}, // deep enough for four
		{100000, 9, true, wayTrie},
	} {
		if got := cheapest(tc.prefixes, tc.lens, tc.v4); got != tc.way {
			t.Errorf("%d prefixes of %d lengths (IPv4 %v): way %d, want %d", tc.prefixes, tc.lens, tc.v4, got, tc.way)
		}
	}
	var r prefixRules
	for k := 0; k < 1000; k++ {
		r.add(kindDst, netip.MustParsePrefix(fmt.Sprintf("198.19.%d.%d/26", k*64>>8&0xff, k*64&0xff)), 1)
	}
	r.add(kindSrc, netip.MustParsePrefix("198.18.0.0/23"), 2)
	r.add(kindSrc, netip.MustParsePrefix("198.18.1.0/24"), 3)
	n, lens, inl := r.lengths()
	if n[pfxDst] != [2]uint8{1, 0} || lens[pfxDst][0][0] != 26 || n[pfxSrc] != [2]uint8{lensInline, 0} || n[pfxUE] != [2]uint8{} {
		t.Fatalf("nlens %v lens %v", n, lens)
	}
	want := [maxInline]inline4{{[4]byte{198, 18, 1, 0}, [4]byte{255, 255, 255, 0}, 3}, {[4]byte{198, 18, 0, 0}, [4]byte{255, 255, 254, 0}, 2}}
	if inl[pfxSrc] != want {
		t.Fatalf("listed source prefixes %v, want %v", inl[pfxSrc], want)
	}
}

// A rule of length 0 matches every address of its family, and only as the
// last resort.
func TestPrefixZeroLength(t *testing.T) {
	r := nftest.New(t, Type, model(datapath.XDP, Settings{Uplink: "up"},
		Slice{Name: "all4", ID: 1, Port: "s1", Rules: []Rule{{Dst: "0.0.0.0/0"}}},
		Slice{Name: "all6", ID: 2, Port: "s2", Rules: []Rule{{Dst: "::/0"}}},
		Slice{Name: "one", ID: 3, Port: "s3", Rules: []Rule{{Dst: "198.19.1.0/31"}, {Dst: "2001:db8::/127"}}}))
	for _, oc := range []struct {
		src, dst string
		want     int
	}{
		{"198.18.0.1", "198.19.1.1", 13}, {"198.18.0.1", "198.19.1.2", 11},
		{"2001:db8:9::1", "2001:db8::1", 13}, {"2001:db8:9::1", "2001:db8::2", 12},
	} {
		if res := r.Run("up", overlapFrame(oc.src, oc.dst)); res.Port != oc.want {
			t.Errorf("%s: port %d, want %d", oc.dst, res.Port, oc.want)
		}
	}
}

// lpmRef is the longest-prefix match the fast path must agree with.
func lpmRef(rules map[netip.Prefix]int, a netip.Addr) int {
	best, id := -1, -1
	for p, s := range rules {
		if p.Contains(a) && p.Bits() > best {
			best, id = p.Bits(), s
		}
	}
	return id
}

// randPrefix is a random prefix of length l inside 198.18.0.0/15 or
// 2001:db8::/32 (shorter lengths: the block's own first bits).
func randPrefix(rng *rand.Rand, v6 bool, l int) netip.Prefix {
	if !v6 {
		b := [4]byte{198, 18 | byte(rng.IntN(2)), byte(rng.IntN(4)), byte(rng.IntN(256))}
		return netip.PrefixFrom(netip.AddrFrom4(b), l).Masked()
	}
	b := [16]byte{0x20, 0x01, 0x0d, 0xb8}
	for i := 4; i < 16; i++ {
		b[i] = byte(rng.IntN(4)) // few values: prefixes overlap
	}
	return netip.PrefixFrom(netip.AddrFrom16(b), l).Masked()
}

// randIn is a random address in p.
func randIn(rng *rand.Rand, p netip.Prefix) netip.Addr {
	b := p.Addr().AsSlice()
	for i := p.Bits(); i < len(b)*8; i++ {
		b[i/8] |= byte(rng.IntN(2)) << (7 - i%8)
	}
	a, _ := netip.AddrFromSlice(b)
	return a
}

// Random overlapping prefixes of 1 to 8 lengths, by hash lookups, the
// trie or (up to 4 IPv4 prefixes) the list in the config, classify random
// addresses exactly as a longest-prefix match does.
func TestPrefixesAgreeWithLongestPrefixMatch(t *testing.T) {
	rng := rand.New(rand.NewPCG(15, 23))
	r := nftest.New(t, Type, model(datapath.XDP, Settings{Uplink: "up"}))
	for round := 0; round < 48; round++ {
		v6 := round%2 == 1
		nl := 1 + round/6
		pool4, pool6 := []int{15, 16, 22, 24, 26, 30, 31, 32}, []int{32, 33, 64, 100, 125, 126, 127, 128}
		pool := pool4
		if v6 {
			pool = pool6
		}
		rng.Shuffle(len(pool), func(i, j int) { pool[i], pool[j] = pool[j], pool[i] })
		rules := map[netip.Prefix]int{}
		var slices []Slice
		for id := 1; id <= 8; id++ {
			s := Slice{Name: fmt.Sprintf("s%d", id), ID: id, Port: fmt.Sprintf("s%d", id)}
			for k := 0; k < 6; k++ {
				p := randPrefix(rng, v6, pool[rng.IntN(nl)])
				if _, dup := rules[p]; dup {
					continue
				}
				rules[p] = 10 + id
				s.Rules = append(s.Rules, Rule{Dst: p.String()})
			}
			slices = append(slices, s)
		}
		way := []int{wayHash, wayHash, wayTrie, wayTrie, wayInline, wayInline}[round%6]
		force(t, way)
		if way == wayInline && !v6 { // a list holds 4
			slices = slices[:min(len(slices), 4)]
			for i := range slices {
				slices[i].Rules = slices[i].Rules[:min(len(slices[i].Rules), 1)]
			}
			rules = map[netip.Prefix]int{}
			for _, s := range slices {
				for _, r := range s.Rules {
					rules[netip.MustParsePrefix(r.Dst)] = 10 + s.ID
				}
			}
		}
		if err := r.Update(model(datapath.XDP, Settings{Uplink: "up"}, slices...)); err != nil {
			t.Fatal(err)
		}
		c := readConfig(t, r)
		fam, lens := 0, map[int]bool{}
		if v6 {
			fam = 1
		}
		for p := range rules {
			lens[p.Bits()] = true
		}
		want := map[int]uint8{wayHash: uint8(len(lens)), wayTrie: lensTrie, wayInline: lensInline}[way]
		if way == wayInline && v6 {
			want = lensTrie
		}
		if c.NLens[pfxDst][fam] != want {
			t.Fatalf("round %d: %d lengths in use, nlens %d, want %d", round, len(lens), c.NLens[pfxDst][fam], want)
		}
		block := netip.MustParsePrefix("198.18.0.0/15")
		if v6 {
			block = netip.MustParsePrefix("2001:db8::/32")
		}
		var list []netip.Prefix
		for p := range rules {
			list = append(list, p)
		}
		for i := 0; i < 200; i++ {
			// half inside a rule's prefix, half anywhere in the block
			a := randIn(rng, block)
			if i%2 == 0 {
				a = randIn(rng, list[rng.IntN(len(list))])
			}
			src := "198.18.0.1"
			if v6 {
				src = "2001:db8:9::1"
			}
			want := lpmRef(rules, a)
			if res := r.Run("up", overlapFrame(src, a.String())); res.Port != want {
				t.Fatalf("round %d (%d lengths): %s out of port %d, want %d; rules %v", round, len(lens), a, res.Port, want, rules)
			}
		}
	}
}

// BenchmarkClassify measures a frame through the slicer's entry with
// BPF_PROG_RUN Repeat (ns/pkt, the framework's entry and redirect
// included): one destination prefix; 1,000 /26 prefixes (one length: one
// hash lookup); the same 1,000 with five lengths in use (the trie); and a
// frame that misses four lengths before its source rule hits (forced to
// hash lookups: what cheapest prices as a miss).
func BenchmarkClassify(b *testing.B) {
	many := func(extra ...Rule) []Slice {
		var out []Slice
		for id := 1; id <= 8; id++ {
			s := Slice{Name: fmt.Sprintf("s%d", id), ID: id, Port: fmt.Sprintf("s%d", id)}
			for k := (id - 1) * 125; k < id*125; k++ {
				s.Rules = append(s.Rules, Rule{Dst: fmt.Sprintf("198.19.%d.%d/26", k*64>>8, k*64&0xff)})
			}
			out = append(out, s)
		}
		out[7].Rules = append(out[7].Rules, extra...)
		return out
	}
	lens4 := []Rule{{Dst: "198.18.0.0/16"}, {Dst: "198.18.1.0/24"}, {Dst: "198.18.1.1/32"}}
	cases := []struct {
		name   string
		slices []Slice
		src    string
	}{
		{"one-prefix", []Slice{{Name: "s1", ID: 1, Port: "s1", Rules: []Rule{{Dst: "198.19.0.0/26"}}}}, "198.18.0.1"},
		{"1000-prefixes-one-length", many(), "198.18.0.1"},
		{"1000-prefixes-five-lengths-trie", many(append(lens4, Rule{Dst: "198.18.2.0/23"})...), "198.18.0.1"},
		{"miss-four-lengths-then-source", func() []Slice {
			out := many(lens4...)
			out[0].Rules = []Rule{{Src: "198.18.200.0/24"}}
			return out
		}(), "198.18.200.1"},
	}
	for _, h := range []datapath.Hook{datapath.XDP, datapath.TC} {
		for _, tc := range cases {
			b.Run(string(h)+"/"+tc.name, func(b *testing.B) {
				if tc.name == "miss-four-lengths-then-source" {
					force(b, wayHash)
				}
				r := nftest.New(b, Type, model(h, Settings{Uplink: "up"}, tc.slices...))
				dst := "198.19.0.1"
				if tc.name == "miss-four-lengths-then-source" {
					dst = "203.0.113.1"
				}
				frame := nftest.UDP4(tc.src, dst, 1000, 2000, make([]byte, 18))
				if res := r.Run("up", frame); res.Port != 11 {
					b.Fatalf("out of port %d, want 11", res.Port)
				}
				b.ResetTimer()
				_, d, err := r.Prog.EBPF().Benchmark(frame, b.N, nil)
				if err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(float64(d.Nanoseconds()), "ns/pkt")
			})
		}
	}
}
