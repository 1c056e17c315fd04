package estimate

// Walking one start of the incremental check (incremental.go): the whole
// start, split into one unit per slice where it fans out at a slicer, or
// one unit again after a change inside its slice.

import (
	"slices"

	"github.com/edgenf/edgenf/internal/cube"
)

// walkStart walks and prices one start of t: its units (unitWalk) and
// itself, or, for a unit, that unit only (none: t has no such start).
func (a *Admission) walkStart(t *cube.Topology, k startKey, entries chainEntries, peered func(string) bool, costs cubeCosts) (map[startKey]*started, error) {
	entries.refs = map[string]bool{}
	var chains []Chain
	var order startOrder
	from := ""
	if k.point != "" {
		ep, err := cube.ParseEndpoint(k.point)
		if err != nil || ep.IsCube() {
			return nil, nil
		}
		entries.refs["iface:"+ep.Iface] = true
		entries.refs["@"+k.point] = true
		pm := map[string]bool{ep.Iface: peered(ep.Iface)}
		ch, ok := attachedChain(t, k.point, pm, entries)
		if !ok {
			return nil, nil
		}
		chains = []Chain{ch}
		order, from = startOrder{attached: true, name: k.point}, ep.Iface
	} else {
		c := t.Lookup(k.cube)
		if c == nil {
			return nil, nil
		}
		pos := slices.IndexFunc(c.Ports, func(p cube.Port) bool { return p.Name == k.port })
		if pos < 0 {
			return nil, nil
		}
		iface, ok := ifacePeer(c.Ports[pos])
		if !ok {
			return nil, nil
		}
		entries.units = &unitWalk{only: k.unit, refs: map[string]map[string]bool{}}
		chains = chainsFrom(t, c, c.Ports[pos], entries)
		order, from = startOrder{name: k.cube, pos: pos}, iface
	}
	// Units apart when every chain went through the first slicer's
	// branches, each branch once: the start's chains are then its units'
	// in turn.
	u := entries.units
	split := u != nil && len(u.order) > 0 && !u.again &&
		!slices.ContainsFunc(chains, func(ch Chain) bool { return ch.unit == "" })
	if u != nil && u.only != "" {
		if !split {
			return nil, nil
		}
		s, err := a.priced(t, chains, costs, order, from, u.refs[u.only])
		if err != nil || s == nil {
			return nil, err
		}
		return map[startKey]*started{k: s}, nil
	}
	out := map[startKey]*started{}
	if !split {
		if u != nil {
			for _, refs := range u.refs {
				for r := range refs {
					entries.refs[r] = true
				}
			}
		}
		s, err := a.priced(t, chains, costs, order, from, entries.refs)
		if err != nil {
			return nil, err
		}
		out[k] = s
		return out, nil
	}
	base, err := a.priced(t, nil, costs, order, from, entries.refs)
	if err != nil {
		return nil, err
	}
	out[k] = base
	for i, unit := range u.order {
		var mine []Chain
		for _, ch := range chains {
			if ch.unit == unit {
				mine = append(mine, ch)
			}
		}
		s, err := a.priced(t, mine, costs, order, from, u.refs[unit])
		if err != nil {
			return nil, err
		}
		s.branch = i + 1
		uk := k
		uk.unit = unit
		out[uk] = s
	}
	return out, nil
}

// priced is a start (or unit) of chains, priced, that read refs.
func (a *Admission) priced(t *cube.Topology, chains []Chain, costs cubeCosts, order startOrder, from string, refs map[string]bool) (*started, error) {
	s := &started{order: order, from: from}
	a.walked += int64(len(chains))
	for _, ch := range chains {
		cc, err := a.Estimator.chain(t, ch, costs)
		if err != nil {
			return nil, err
		}
		s.chains = append(s.chains, cc)
	}
	s.refs = make([]string, 0, len(refs))
	for r := range refs {
		s.refs = append(s.refs, r)
	}
	return s, nil
}
