package estimate

// Which groups a change judged incrementally touches (incremental.go), and
// what they cost before and after it.

import (
	"cmp"
	"slices"
)

// chainAt is a chain where Chains lists it: its start's place, then its
// own among the start's chains.
type chainAt struct {
	order startOrder
	seq   int
	cc    ChainCost
}

func sortChains(cs []chainAt) {
	slices.SortFunc(cs, func(x, y chainAt) int { return cmp.Or(x.order.compare(y.order), cmp.Compare(x.seq, y.seq)) })
}

// byGroup files the chains of starts by group.
func byGroup(starts []*started) map[string][]chainAt {
	out := map[string][]chainAt{}
	for _, s := range starts {
		for i, cc := range s.chains {
			k := groupKey(cc)
			out[k] = append(out[k], chainAt{s.order, s.seq(i), cc})
		}
	}
	for _, cs := range out {
		sortChains(cs)
	}
	return out
}

// sameChains says whether two lists of a group's chains judge alike:
// the same routes at the same costs and budgets, in the same order.
func sameChains(x, y []chainAt) bool {
	return slices.EqualFunc(x, y, func(a, b chainAt) bool {
		return a.order == b.order && a.seq == b.seq && a.cc.ID == b.cc.ID && a.cc.NS == b.cc.NS && a.cc.BudgetNS == b.cc.BudgetNS
	})
}

// judged are the groups a judged change touches, before and after it:
// those in which its affected starts have chains that differ, and those
// with chains from the interfaces of its new groups (a new group is held
// to the dearest group entered by the same interface). A group whose
// chains are all as they were is judged as it was: never refused.
func (a *Admission) judged(d *delta) (before, after map[string]group) {
	st := a.state
	var was, now []*started
	for k, s := range d.starts {
		now = append(now, s)
		if s := st.starts[k]; s != nil {
			was = append(was, s)
		}
	}
	for _, k := range d.gone {
		was = append(was, st.starts[k])
	}
	wasBy, nowBy := byGroup(was), byGroup(now)
	changed := func(k startKey) bool {
		_, ok := d.starts[k]
		return ok || slices.Contains(d.gone, k)
	}
	// a group's chains: those of the starts the change leaves alone, and
	// those of the changed ones as they were (prev) or are
	pick := func(key string, prev bool) (group, bool) {
		var cs []chainAt
		for k := range st.groups[key] {
			if !changed(k) {
				s := st.starts[k]
				for i, cc := range s.chains {
					if groupKey(cc) == key {
						cs = append(cs, chainAt{s.order, s.seq(i), cc})
					}
				}
			}
		}
		if prev {
			cs = append(cs, wasBy[key]...)
		} else {
			cs = append(cs, nowBy[key]...)
		}
		sortChains(cs)
		chains := make([]ChainCost, len(cs))
		for i, c := range cs {
			chains[i] = c.cc
		}
		g, ok := a.groupsOf(chains)[key]
		return g, ok
	}
	before, after = map[string]group{}, map[string]group{}
	for _, by := range []map[string][]chainAt{wasBy, nowBy} {
		for key := range by {
			if _, done := after[key]; done || sameChains(wasBy[key], nowBy[key]) {
				continue
			}
			if g, ok := pick(key, true); ok {
				before[key] = g
			}
			if g, ok := pick(key, false); ok {
				after[key] = g
			}
		}
	}
	for key, g := range after {
		if _, existed := before[key]; existed {
			continue
		}
		for k := range st.from[g.From] {
			for _, cc := range st.starts[k].chains {
				gk := groupKey(cc)
				if _, done := before[gk]; !done {
					if g, ok := pick(gk, true); ok {
						before[gk] = g
					}
				}
			}
		}
	}
	return before, after
}
