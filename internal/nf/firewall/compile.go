package firewall

import (
	"net/netip"
	"sort"
)

// Classifier compilation: rules → per-field bit vectors (see firewall.bpf.c).

const (
	words    = MaxRules / 64
	sumWords = 3
)

// Fields, as enum fw_dim.
const (
	dSrc = iota
	dDst
	dSport
	dDport
	dProto
	dFlags
	dState
	nDims
)

// bv mirrors struct fw_bv.
type bv struct {
	Sum [sumWords]uint64
	W   [words]uint64
}

func (b *bv) set(i int)   { b.W[i/64] |= 1 << (i % 64) }
func (b *bv) clear(i int) { b.W[i/64] &^= 1 << (i % 64) }
func (b *bv) or(o *bv, n int) {
	for i := 0; i < n; i++ {
		b.W[i] |= o.W[i]
	}
}

func (b *bv) summarize() {
	b.Sum = [sumWords]uint64{}
	for i, w := range b.W {
		if w != 0 {
			b.Sum[i/64] |= 1 << (i % 64)
		}
	}
}

// chainSet is one chain compiled.
type chainSet struct {
	rules  []compiled // by bit index (sorted by id)
	policy uint8
	dims   uint32
	lpm    [2]map[netip.Prefix]*bv // src, dst
	// ports: class per port value, and the class vectors.
	portCls  [2][]uint32
	portVecs [2][]*bv
	proto    map[uint32]*bv // protocol number, 256: any other
	flagCls  []uint32       // per flags byte
	flagVecs []*bv
	state    [4]*bv
}

func compileChain(rules []compiled, policy uint8) *chainSet {
	sort.Slice(rules, func(i, j int) bool { return rules[i].id < rules[j].id })
	cs := &chainSet{rules: rules, policy: policy}
	n := len(rules)
	nw := (n + 63) / 64
	for _, r := range rules {
		if r.src.IsValid() {
			cs.dims |= 1 << dSrc
		}
		if r.dst.IsValid() {
			cs.dims |= 1 << dDst
		}
		if r.hasSp {
			cs.dims |= 1 << dSport
		}
		if r.hasDp {
			cs.dims |= 1 << dDport
		}
		if r.proto >= 0 {
			cs.dims |= 1 << dProto
		}
		if r.flagMask != 0 {
			cs.dims |= 1 << dFlags
		}
		if r.states != 0 {
			cs.dims |= 1 << dState
		}
	}
	for d := dSrc; d <= dDst; d++ {
		if cs.dims&(1<<d) != 0 {
			cs.lpm[d] = compilePrefixes(rules, d, nw)
		}
	}
	for d := 0; d < 2; d++ {
		if cs.dims&(1<<(dSport+d)) != 0 {
			cs.portCls[d], cs.portVecs[d] = compilePorts(rules, d, nw)
		}
	}
	if cs.dims&(1<<dProto) != 0 {
		cs.proto = map[uint32]*bv{256: {}}
		for _, r := range rules {
			if r.proto >= 0 && cs.proto[uint32(r.proto)] == nil {
				cs.proto[uint32(r.proto)] = &bv{}
			}
		}
		for i, r := range rules {
			for v, b := range cs.proto {
				if r.proto < 0 || uint32(r.proto) == v {
					b.set(i)
				}
			}
		}
	}
	if cs.dims&(1<<dFlags) != 0 {
		cs.flagCls = make([]uint32, 256)
		dedup := map[bv]uint32{}
		for f := 0; f < 256; f++ {
			var b bv
			for i, r := range rules {
				if r.flagMask == 0 || uint8(f)&r.flagMask == r.flag {
					b.set(i)
				}
			}
			cs.flagCls[f] = classOf(dedup, &cs.flagVecs, &b)
		}
	}
	if cs.dims&(1<<dState) != 0 {
		for s := 0; s < 4; s++ {
			b := &bv{}
			for i, r := range rules {
				if r.states == 0 || r.states&(1<<s) != 0 {
					b.set(i)
				}
			}
			cs.state[s] = b
		}
	}
	cs.each(func(b *bv) { b.summarize() })
	return cs
}

func (cs *chainSet) each(fn func(*bv)) {
	for _, m := range cs.lpm {
		for _, b := range m {
			fn(b)
		}
	}
	for _, vs := range cs.portVecs {
		for _, b := range vs {
			fn(b)
		}
	}
	for _, b := range cs.proto {
		fn(b)
	}
	for _, b := range cs.flagVecs {
		fn(b)
	}
	for _, b := range cs.state {
		if b != nil {
			fn(b)
		}
	}
}

func classOf(dedup map[bv]uint32, vecs *[]*bv, b *bv) uint32 {
	if c, ok := dedup[*b]; ok {
		return c
	}
	c := uint32(len(*vecs))
	cp := *b
	*vecs = append(*vecs, &cp)
	dedup[cp] = c
	return c
}

// compilePrefixes gives every distinct prefix P of the field (and each
// family's 0/0) the vector of rules whose prefix contains P: the
// longest-prefix match of an address then yields exactly the rules matching
// it. A rule without a prefix is in both families' roots.
func compilePrefixes(rules []compiled, d int, nw int) map[netip.Prefix]*bv {
	any4 := netip.PrefixFrom(netip.IPv4Unspecified(), 0)
	any6 := netip.PrefixFrom(netip.IPv6Unspecified(), 0)
	own := map[netip.Prefix]*bv{any4: {}, any6: {}}
	for i, r := range rules {
		p := r.src
		if d == dDst {
			p = r.dst
		}
		if !p.IsValid() {
			own[any4].set(i)
			own[any6].set(i)
			continue
		}
		b := own[p]
		if b == nil {
			b = &bv{}
			own[p] = b
		}
		b.set(i)
	}
	out := make(map[netip.Prefix]*bv, len(own))
	for p := range own {
		b := &bv{}
		for l := 0; l <= p.Bits(); l++ {
			if o, ok := own[netip.PrefixFrom(p.Addr(), l).Masked()]; ok {
				b.or(o, nw)
			}
		}
		out[p] = b
	}
	return out
}

// compilePorts splits the port space into intervals where the set of
// matching rules is constant (a sweep over range ends) and dedups them.
func compilePorts(rules []compiled, d int, nw int) ([]uint32, []*bv) {
	type ev struct {
		at  int
		bit int
		add bool
	}
	var evs []ev
	var cur bv
	for i, r := range rules {
		has, rg := r.hasSp, r.sport
		if d == 1 {
			has, rg = r.hasDp, r.dport
		}
		if !has {
			cur.set(i)
			continue
		}
		evs = append(evs, ev{int(rg[0]), i, true})
		if rg[1] < 65535 {
			evs = append(evs, ev{int(rg[1]) + 1, i, false})
		}
	}
	sort.Slice(evs, func(i, j int) bool { return evs[i].at < evs[j].at })
	cls := make([]uint32, 65536)
	var vecs []*bv
	dedup := map[bv]uint32{}
	pos := 0
	for i := 0; i <= len(evs); i++ {
		next := 65536
		if i < len(evs) {
			next = evs[i].at
		}
		if next > pos {
			c := classOf(dedup, &vecs, &cur)
			for p := pos; p < next; p++ {
				cls[p] = c
			}
			pos = next
		}
		if i < len(evs) {
			if evs[i].add {
				cur.set(evs[i].bit)
			} else {
				cur.clear(evs[i].bit)
			}
		}
	}
	_ = nw
	return cls, vecs
}
