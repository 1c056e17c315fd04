package estimate

// The admission check of a daemon, change by change. Pricing every chain
// of the topology before and after each change made a change cost the size
// of the topology. The check keeps instead, for the state the daemon has
// applied, the priced chains of each start (an interface peered with a
// cube port, or one that only carries attachments) and what each start's
// walk read: cubes and attachment points. A change affects the starts
// that read one of its changed cubes or points (or a cube it makes a
// slice's chain entry, or an interface it peers with); only those are
// walked and priced again, and only the groups they have chains in are
// judged (a group none of whose chains changed is judged as it was: never
// refused). The verdicts are Check's.

import (
	"cmp"
	"slices"

	"github.com/edgenf/edgenf/internal/cube"
)

// Change is a change to judge.
type Change struct {
	// Rev numbers the state Prev is; a change applied makes Next the state
	// Rev+1. The check keeps what it priced of Prev, and of Next until the
	// next check says whether Next was applied.
	Rev        uint64
	Prev, Next *cube.Topology
	// Was are cubes of Prev as they were before the change altered them in
	// place (Prev holds them altered: table entries written directly).
	Was map[string]*cube.Cube
	// Cubes and Points are what Next changes of Prev; All: anything may
	// differ (a declarative apply).
	Cubes, Points []string
	All           bool
}

// startKey names a start: a cube port peered with an interface, or an
// attachment point of an interface that is peered with no cube; or, with
// unit, one slice's part of a start that fans out into slices (unitWalk):
// a change inside one slice walks that part again, not the interface's
// thousand slices. The start itself (no unit) then keeps what its walk
// read before the slicer, and no chain.
type startKey struct{ cube, port, point, unit string }

// base is the start a unit is part of.
func (k startKey) base() startKey { k.unit = ""; return k }

// started is what a start's walk found.
type started struct {
	// order sorts starts as Chains lists them: ports by cube name and
	// position, then attachment points by name.
	order  startOrder
	from   string // the interface
	chains []ChainCost
	refs   []string // cubes, and attachment points with an @, the walk read
	// branch places a unit's chains among its start's (walk order)
	branch int
}

// seq is the place of the start's chain i among those its start lists.
func (s *started) seq(i int) int { return s.branch<<20 + i }

type startOrder struct {
	attached bool
	name     string
	pos      int
}

func (o startOrder) compare(p startOrder) int {
	if o.attached != p.attached {
		if o.attached {
			return 1
		}
		return -1
	}
	return cmp.Or(cmp.Compare(o.name, p.name), cmp.Compare(o.pos, p.pos))
}

// admitted is what the check keeps of a state.
type admitted struct {
	rev    uint64
	topo   *cube.Topology
	starts map[startKey]*started
	// indexes of starts: by what their walks read, by the groups of their
	// chains, by their interface
	refs    map[string]map[startKey]bool
	groups  map[string]map[startKey]bool
	from    map[string]map[startKey]bool
	units   map[startKey]map[startKey]bool // a start's units, and itself
	entries map[string]chainEntry
	// budgeted are the slicers with a slice that has a budget of its own
	// (or a table that cannot be read: Check reports it).
	budgeted map[string]bool
	// chains: starts are kept (only while something is judged).
	chains bool
}

// delta is a judged change, kept until the next check says whether it
// was applied.
type delta struct {
	rev     uint64
	topo    *cube.Topology
	gone    []startKey
	starts  map[startKey]*started
	entries map[string]*chainEntry
	// budgeted: the changed cubes', after the change
	budgeted map[string]bool
	// fresh are the changed cubes as they are after the change, whose
	// costs are forgotten if it is not applied
	fresh []*cube.Cube
}

func indexAdd(idx map[string]map[startKey]bool, k string, s startKey) {
	set := idx[k]
	if set == nil {
		set = map[startKey]bool{}
		idx[k] = set
	}
	set[s] = true
}

func indexDrop(idx map[string]map[startKey]bool, k string, s startKey) {
	if set := idx[k]; set != nil {
		delete(set, s)
		if len(set) == 0 {
			delete(idx, k)
		}
	}
}

func groupKey(cc ChainCost) string {
	if cc.Slice != "" {
		return "slice " + cc.Slice
	}
	return cc.From + " → " + cc.To
}

func (st *admitted) put(k startKey, s *started) {
	st.drop(k)
	st.starts[k] = s
	for _, r := range s.refs {
		indexAdd(st.refs, r, k)
	}
	for _, cc := range s.chains {
		indexAdd(st.groups, groupKey(cc), k)
	}
	indexAdd(st.from, s.from, k)
	setAdd(st.units, k.base(), k)
}

func setAdd(idx map[startKey]map[startKey]bool, k, v startKey) {
	if idx[k] == nil {
		idx[k] = map[startKey]bool{}
	}
	idx[k][v] = true
}

func (st *admitted) drop(k startKey) {
	s := st.starts[k]
	if s == nil {
		return
	}
	for _, r := range s.refs {
		indexDrop(st.refs, r, k)
	}
	for _, cc := range s.chains {
		indexDrop(st.groups, groupKey(cc), k)
	}
	indexDrop(st.from, s.from, k)
	if set := st.units[k.base()]; set != nil {
		delete(set, k)
		if len(set) == 0 {
			delete(st.units, k.base())
		}
	}
	delete(st.starts, k)
}

// build counts t's budgeted slicers and, with chains, prices its starts.
func (a *Admission) build(rev uint64, t *cube.Topology, chains bool) (*admitted, error) {
	st := &admitted{rev: rev, topo: t, starts: map[startKey]*started{}, refs: map[string]map[startKey]bool{},
		groups: map[string]map[startKey]bool{}, from: map[string]map[startKey]bool{}, units: map[startKey]map[startKey]bool{},
		budgeted: map[string]bool{}, chains: chains}
	for name, c := range t.Cubes() {
		if budgeted(c) {
			st.budgeted[name] = true
		}
	}
	a.costs = newCubeCosts()
	if !chains {
		return st, nil
	}
	entries := chainEntriesOf(t)
	for c, sc := range entries.slices { // kept with the costs (walkChange)
		a.costs.slices[c] = sc
	}
	entries.slices = a.costs.slices
	st.entries = entries.by
	peered := map[string]bool{}
	var keys []startKey
	for name, c := range t.Cubes() {
		for _, p := range c.Ports {
			if iface, ok := ifacePeer(p); ok {
				peered[iface] = true
				keys = append(keys, startKey{cube: name, port: p.Name})
			}
		}
	}
	for point := range t.Attachments {
		keys = append(keys, startKey{point: point})
	}
	for _, k := range keys {
		units, err := a.walkStart(t, k, entries, func(iface string) bool { return peered[iface] }, a.costs)
		if err != nil {
			return nil, err
		}
		for uk, s := range units {
			st.put(uk, s)
		}
	}
	return st, nil
}

// budgeted says whether c has a slice with a budget of its own, or a slice
// table that cannot be read (HasSliceBudget).
func budgeted(c *cube.Cube) bool {
	sls, err := slicesOf(c)
	if err != nil {
		return true
	}
	for _, sl := range sls {
		if sl.BudgetNS > 0 {
			return true
		}
	}
	return false
}

// CheckChange is Check for a daemon's change: it prices what the change
// affects (see the top of this file) and judges as Check does.
func (a *Admission) CheckChange(ch Change) error {
	if a == nil {
		return nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if p := a.pending; p != nil {
		if a.state != nil && p.rev == ch.Rev && p.topo == ch.Prev && a.state.rev+1 == p.rev {
			a.apply(p) // the change judged last was applied
		} else {
			a.forget(p)
		}
		a.pending = nil
	}
	if a.state != nil && (a.state.rev != ch.Rev || a.state.topo != ch.Prev) {
		a.state = nil
	}
	prev := ch.Prev
	if len(ch.Was) > 0 {
		prev = ch.Prev.Fork()
		for _, c := range ch.Was {
			prev.Put(c)
		}
	}
	if ch.All {
		// a declarative apply: priced whole, and counted again next time
		a.state = nil
		if a.BudgetNS <= 0 && !HasSliceBudget(ch.Next) {
			return nil
		}
		return a.Check(prev, ch.Next)
	}
	if a.state == nil {
		st, err := a.build(ch.Rev, prev, false)
		if err != nil {
			return err
		}
		st.topo = ch.Prev
		a.state = st
	}
	judge := a.BudgetNS > 0 || a.hasSliceBudget(ch)
	switch {
	case judge && !a.state.chains:
		st, err := a.build(ch.Rev, prev, true)
		if err != nil {
			return err
		}
		st.topo = ch.Prev
		a.state = st
	case !judge && a.state.chains:
		st, _ := a.build(ch.Rev, prev, false) // nothing is judged: no chains kept
		st.topo = ch.Prev
		a.state = st
	}
	d, err := a.walkChange(ch)
	if err != nil {
		a.forget(d)
		return cube.Errorf("", "estimating the change: %v", err)
	}
	if judge {
		before, after := a.judged(d)
		if err := verdict(before, after); err != nil {
			a.forget(d)
			return err
		}
	}
	a.pending = d
	return nil
}

// hasSliceBudget says whether a slice has a budget of its own in the
// change's topology: a kept slicer's the change leaves alone, or a changed
// cube's.
func (a *Admission) hasSliceBudget(ch Change) bool {
	for n := range a.state.budgeted {
		if !slices.Contains(ch.Cubes, n) {
			return true
		}
	}
	for _, n := range ch.Cubes {
		if c := ch.Next.Lookup(n); c != nil && budgeted(c) {
			return true
		}
	}
	return false
}

// walkChange walks and prices the starts of ch.Next the change affects
// (none while no chains are kept: then only the budgeted slicers).
func (a *Admission) walkChange(ch Change) (*delta, error) {
	st := a.state
	d := &delta{rev: ch.Rev + 1, topo: ch.Next, starts: map[startKey]*started{}, entries: map[string]*chainEntry{}, budgeted: map[string]bool{}}
	prevCube := func(n string) *cube.Cube {
		if c, ok := ch.Was[n]; ok {
			return c
		}
		return ch.Prev.Lookup(n)
	}
	affected := map[startKey]bool{}
	dirty := map[string]bool{}
	var candidates []startKey // starts Next may have that the kept state lacks
	for _, n := range ch.Cubes {
		dirty[n] = true
		// costs kept of the cube are of what it was (or, changed in place,
		// of what it was before)
		a.costs.forget(prevCube(n))
		a.costs.forget(ch.Prev.Lookup(n))
		next := ch.Next.Lookup(n)
		if next != nil {
			a.costs.forget(next)
			d.fresh = append(d.fresh, next)
			d.budgeted[n] = budgeted(next)
		} else {
			d.budgeted[n] = false
		}
		if !st.chains {
			continue
		}
		for _, c := range []*cube.Cube{prevCube(n), next} {
			if c == nil {
				continue
			}
			for _, p := range c.Ports {
				if iface, ok := ifacePeer(p); ok {
					dirty["iface:"+iface] = true
					candidates = append(candidates, startKey{cube: n, port: p.Name}, startKey{point: iface})
				}
			}
			// its chain entries, as they were and are: the cubes they
			// name hand what leaves them back to the slicer
			sls, _ := slicesOf(c)
			for _, sl := range sls {
				if sl.Chain == "" {
					continue
				}
				if ep, err := cube.ParseEndpoint(sl.Chain); err == nil {
					dirty[ep.Cube] = true
				}
				if _, ok := d.entries[sl.Chain]; !ok {
					d.entries[sl.Chain] = nil
				}
			}
		}
		if next != nil {
			sls, _ := slicesOf(next)
			for _, sl := range sls {
				if sl.Chain != "" {
					d.entries[sl.Chain] = &chainEntry{slicer: next, slice: sl}
				}
			}
		}
	}
	if !st.chains {
		return d, nil
	}
	for _, p := range ch.Points {
		dirty["@"+p] = true
		candidates = append(candidates, startKey{point: p})
	}
	for r := range dirty {
		for k := range st.refs[r] {
			affected[k] = true
		}
	}
	for _, k := range candidates {
		affected[k] = true
	}
	// Next's chain entries: the kept ones, under the changed slicers'.
	// slicers decoded are kept with the costs (a slicer of 1,000 slices
	// decoded again for every change inside one slice was most of it)
	entries := chainEntries{by: st.entries, over: d.entries, slices: a.costs.slices}
	peered := func(iface string) bool {
		for k := range st.from[iface] {
			if k.point == "" && !dirty[k.cube] {
				return true
			}
		}
		for _, n := range ch.Cubes {
			if c := ch.Next.Lookup(n); c != nil {
				for _, p := range c.Ports {
					if i, ok := ifacePeer(p); ok && i == iface {
						return true
					}
				}
			}
		}
		return false
	}
	whole := map[startKey]bool{} // starts walked whole
	for k := range affected {
		if k.unit == "" {
			whole[k] = true
		}
	}
	for k := range affected {
		if k.unit != "" && whole[k.base()] {
			continue // the whole start is walked (or was)
		}
		units, err := a.walkStart(ch.Next, k, entries, peered, a.costs)
		if err != nil {
			return d, err
		}
		if k.unit != "" {
			if s := units[k]; s != nil {
				s.branch = st.starts[k].branch
				d.starts[k] = s
				continue
			}
			// the slice's branch is not where it was: the whole start
			if units, err = a.walkStart(ch.Next, k.base(), entries, peered, a.costs); err != nil {
				return d, err
			}
			k = k.base()
			whole[k] = true
		}
		for uk, s := range units {
			d.starts[uk] = s
		}
		for uk := range st.units[k] {
			if units[uk] == nil {
				d.gone = append(d.gone, uk)
			}
		}
	}
	return d, nil
}

// apply makes the kept state the one a judged change made.
func (a *Admission) apply(d *delta) {
	st := a.state
	for n, b := range d.budgeted {
		if b {
			st.budgeted[n] = true
		} else {
			delete(st.budgeted, n)
		}
	}
	if st.chains {
		for _, k := range d.gone {
			st.drop(k)
		}
		for k, s := range d.starts {
			st.put(k, s)
		}
		for key, ce := range d.entries {
			if ce == nil {
				delete(st.entries, key)
			} else {
				st.entries[key] = *ce
			}
		}
	}
	st.rev, st.topo = d.rev, d.topo
}

// forget drops the costs of a change that was not applied.
func (a *Admission) forget(d *delta) {
	if d == nil {
		return
	}
	for _, c := range d.fresh {
		a.costs.forget(c)
	}
}
