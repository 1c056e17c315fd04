package slicer

// Prefix rules (src, dst, ue_pool) in the datapath's terms: exact-match
// hash entries keyed by field, prefix length and masked address, and per
// field and family the lengths in use, longest first, that the fast path
// tries one hash lookup each (slicer.bpf.c: sl_prefix). Where the trie is
// cheaper (few prefixes: a shallow trie; or many lengths: many lookups on a
// miss), the field is looked up in its LPM trie instead; the tries always
// hold every prefix, so either way is ready.

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

// useHashes tells whether a field's rules in one family, n prefixes of
// lens distinct lengths, are cheaper to classify by one hash lookup per
// length (counting a miss, every length tried) than by the trie's walk.
func useHashes(n, lens int) bool {
	return lens <= maxLens && lens*hashLookupNS < trieLevelNS*(bits.Len(uint(n))+1)
}

// pick is the choice lengths makes (tests force one way or the other).
var pick = useHashes

// lensTrie is SL_LENS_TRIE: the field is looked up in its trie.
const lensTrie = 0xff

var pfxField = map[int]uint8{kindSrc: pfxSrc, kindDst: pfxDst, kindUE: pfxUE}

// prefixRules collects the prefix rules of a slicer.
type prefixRules struct {
	v4   map[pfx4Key]uint32
	v6   map[pfx6Key]uint32
	lens [pfxFields][2]map[uint8]int // prefixes by length
}

func (r *prefixRules) add(kind int, p netip.Prefix, id uint32) {
	if r.v4 == nil {
		r.v4, r.v6 = map[pfx4Key]uint32{}, map[pfx6Key]uint32{}
	}
	f, l := pfxField[kind], uint8(p.Bits())
	fam := 0
	if p.Addr().Is4() {
		r.v4[pfx4Key{Field: f, Len: l, Addr: p.Addr().As4()}] = id
	} else {
		fam = 1
		r.v6[pfx6Key{Field: f, Len: l, Addr: p.Addr().As16()}] = id
	}
	if r.lens[f][fam] == nil {
		r.lens[f][fam] = map[uint8]int{}
	}
	r.lens[f][fam][l]++
}

// lengths are sl_config's nlens and lens: per field and family the
// lengths in use, longest first, or lensTrie where the trie is cheaper.
func (r *prefixRules) lengths() (n [pfxFields][2]uint8, lens [pfxFields][2][maxLens]uint8) {
	for f := range r.lens {
		for fam, set := range r.lens[f] {
			var ls []uint8
			prefixes := 0
			for l, k := range set {
				ls = append(ls, l)
				prefixes += k
			}
			if len(set) > 0 && !pick(prefixes, len(set)) {
				n[f][fam] = lensTrie
				continue
			}
			slices.Sort(ls)
			slices.Reverse(ls)
			n[f][fam] = uint8(len(ls))
			copy(lens[f][fam][:], ls)
		}
	}
	return n, lens
}
