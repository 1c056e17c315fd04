package slicer

// Prefix rules (src, dst, ue_pool) in the datapath's terms: exact-match
// hash entries keyed by field, prefix length and masked address, and per
// field and family the lengths in use, longest first, that the fast path
// tries one hash lookup each (slicer.bpf.c: sl_prefix). Where the trie is
// cheaper (few prefixes: a shallow trie; or many lengths: many lookups on a
// miss), the field is looked up in its LPM trie instead, and up to four
// IPv4 prefixes are listed in sl_config itself and compared in place. The
// tries and hash maps always hold every prefix, so every way is ready.

import (
	"math/bits"
	"net/netip"
	"slices"
)

// Prefix fields, in the order of slicer.bpf.c's SL_P_*.
const (
	pfxSrc = iota
	pfxDst
	pfxUE
	pfxFields
)

// maxLens is SL_LENS, the room for lengths per field and family in
// sl_config.
const maxLens = 8

// What a lookup costs, measured with BenchmarkClassify (Program.Run, XDP,
// loaded machine): a hash lookup about 14 ns, hit or miss, whatever the
// map holds; the trie about 5 ns a level, and it walks about one level
// per distinguishing bit (1 prefix: one level; 1,000 /26 prefixes: 11).
const (
	hashLookupNS = 14
	trieLevelNS  = 5
)

// maxInline is SL_INLINE: IPv4 prefixes a field can list in sl_config.
const maxInline = 4

// How the fast path looks a prefix field up, in one family.
const (
	wayTrie   = iota // its LPM trie
	wayHash          // one hash lookup per length in use, longest first
	wayInline        // (IPv4) a compare against each prefix listed in sl_config
)

// cheapest is the cheapest way to classify a field's rules in one family,
// n prefixes of lens distinct lengths: up to maxInline IPv4 prefixes, a
// compare each (about a nanosecond, no map); else one hash lookup per
// length (counting a miss, every length tried) where that costs less than
// the trie's walk; else the trie.
func cheapest(n, lens int, v4 bool) int {
	switch {
	case v4 && n <= maxInline:
		return wayInline
	case lens <= maxLens && lens*hashLookupNS < trieLevelNS*trieLevels(n):
		return wayHash
	}
	return wayTrie
}

// trieLevels is about how many levels a lookup in an LPM trie of n
// prefixes walks: one per distinguishing bit, and the root.
func trieLevels(n int) int { return bits.Len(uint(n)) + 1 }

// pick is the choice lengths makes (tests force one way).
var pick = cheapest

// sl_config.nlens values other than a number of lengths
const (
	lensTrie   = 0xff // SL_LENS_TRIE
	lensInline = 0xfe // SL_LENS_INLINE
)

var pfxField = map[int]uint8{kindSrc: pfxSrc, kindDst: pfxDst, kindUE: pfxUE}

// prefixRules collects the prefix rules of a slicer.
type prefixRules struct {
	// v4 are the IPv4 prefixes by field, with their slice ids: a field
	// listed inline (inline) reads its own few.
	v4   [pfxFields]map[pfx4Key]uint32
	lens [pfxFields][2]map[uint8]int // prefixes by length
}

// pfxKeys is the exact-match key of prefix p of a rule of kind, in its
// family (v4: k4, else k6).
func pfxKeys(kind int, p netip.Prefix) (k4 pfx4Key, k6 pfx6Key, v4 bool) {
	f, l := pfxField[kind], uint8(p.Bits())
	if p.Addr().Is4() {
		return pfx4Key{Field: f, Len: l, Addr: p.Addr().As4()}, k6, true
	}
	return k4, pfx6Key{Field: f, Len: l, Addr: p.Addr().As16()}, false
}

func (r *prefixRules) add(kind int, p netip.Prefix, id uint32) {
	f, l, fam := pfxField[kind], uint8(p.Bits()), 0
	if k4, _, v4 := pfxKeys(kind, p); v4 {
		if r.v4[f] == nil {
			r.v4[f] = map[pfx4Key]uint32{}
		}
		r.v4[f][k4] = id
	} else {
		fam = 1
	}
	if r.lens[f][fam] == nil {
		r.lens[f][fam] = map[uint8]int{}
	}
	r.lens[f][fam][l]++
}

// remove takes out what add put in.
func (r *prefixRules) remove(kind int, p netip.Prefix) {
	f, l, fam := pfxField[kind], uint8(p.Bits()), 0
	if k4, _, v4 := pfxKeys(kind, p); v4 {
		delete(r.v4[f], k4)
	} else {
		fam = 1
	}
	if r.lens[f][fam][l]--; r.lens[f][fam][l] <= 0 {
		delete(r.lens[f][fam], l)
	}
}

// lengths are sl_config's nlens, lens and inline4: per field and family
// the way picked (lensTrie, lensInline, or the number of lengths), the
// lengths in use, longest first, and the listed IPv4 prefixes, longest
// first.
func (r *prefixRules) lengths() (n [pfxFields][2]uint8, lens [pfxFields][2][maxLens]uint8, inl [pfxFields][maxInline]inline4) {
	for f := range r.lens {
		for fam, set := range r.lens[f] {
			if len(set) == 0 {
				continue
			}
			var ls []uint8
			for l := range set {
				ls = append(ls, l)
			}
			slices.Sort(ls)
			slices.Reverse(ls)
			way, _, _ := r.choice(f, fam)
			switch way {
			case wayTrie:
				n[f][fam] = lensTrie
			case wayInline:
				n[f][fam] = lensInline
				inl[f] = r.inline(uint8(f))
			default:
				n[f][fam] = uint8(len(ls))
				copy(lens[f][fam][:], ls)
			}
		}
	}
	return n, lens, inl
}

// choice is the way picked for field f (pfxSrc...) in family fam (0 IPv4,
// 1 IPv6), with the field's prefixes and distinct lengths in that family:
// no prefixes, no lookup (wayHash over no length).
func (r *prefixRules) choice(f, fam int) (way, prefixes, lens int) {
	set := r.lens[f][fam]
	if len(set) == 0 {
		return wayHash, 0, 0
	}
	for _, k := range set {
		prefixes += k
	}
	return pick(prefixes, len(set), fam == 0), prefixes, len(set)
}

// inline lists field's IPv4 prefixes, longest first (at most maxInline:
// cheapest picks the list for no more).
func (r *prefixRules) inline(field uint8) (out [maxInline]inline4) {
	var keys []pfx4Key
	for k := range r.v4[field] {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b pfx4Key) int { return int(b.Len) - int(a.Len) })
	for i, k := range keys[:min(len(keys), maxInline)] {
		m := uint32(0)
		if k.Len > 0 {
			m = ^uint32(0) << (32 - k.Len)
		}
		out[i] = inline4{Addr: k.Addr, Mask: [4]byte{byte(m >> 24), byte(m >> 16), byte(m >> 8), byte(m)}, ID: r.v4[field][k]}
	}
	return out
}
