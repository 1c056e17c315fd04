package estimate

import (
	"slices"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/datapath"
)

// Slices that name their chain's entry (cube.Slice.Chain): no port of the
// slicer leads into them. A frame classified into one is handed straight
// to the entry (a hop through the patch panel, with the transparent cubes
// attached there), and what the chain sends back out of that entry, an
// unpeered port, returns to the slicer (on a virtual port), which sends it
// out of the slice's entry port. Chains walks both ways so, and a chain
// slice's estimate, and its budget_ns, count the same cubes as a port
// slice's.

// chainEntry is the slicer and slice a chain entry ("cube:port") belongs to.
type chainEntry struct {
	slicer *cube.Cube
	slice  cube.Slice
}

// chainEntries maps every chain entry of a topology's slicers to its slice
// (the engine lets one entry serve one slice only), and keeps each
// slicer's slices decoded: a walk meets a slicer of 1,000 slices once per
// slice, on the way back. An admission check's walks of a changed
// topology see the entries of the applied one (by) through the changed
// slicers' (over), and record what they read (refs: incremental.go).
type chainEntries struct {
	by     map[string]chainEntry
	over   map[string]*chainEntry // nil: the entry is gone
	slices map[*cube.Cube]*slicer
	refs   map[string]bool
	units  *unitWalk
}

// unitWalk splits an admission check's walk of a start into units, one
// per way of the first slicer it fans out at (a slice's port or chain
// entry), so that a change inside one slice re-walks that slice only
// (incremental.go). Each unit's walk records what it read apart (refs,
// by unit: "slicer/way"); only, when set, is the one unit walked again.
type unitWalk struct {
	only  string
	refs  map[string]map[string]bool
	order []string // the units in walk order
	again bool     // a unit was met twice (a loop through the slicer)
}

// branch is the walk of ch into the way of a slicer that fans out, and
// the entries it walks with: a unit of its own at the first slicer. It
// says false for a way the walk leaves out (not the unit walked again).
func (e chainEntries) branch(ch Chain, unit string) (Chain, chainEntries, bool) {
	u := e.units
	if u == nil || ch.unit != "" {
		return ch, e, true
	}
	if u.only != "" && unit != u.only {
		return ch, e, false
	}
	ch.unit = unit
	refs, seen := u.refs[unit]
	if seen {
		u.again = true
	} else {
		refs = map[string]bool{}
		u.refs[unit] = refs
		u.order = append(u.order, unit)
	}
	e.refs = refs
	return ch, e, true
}

// slicer is a slicing cube's slices, decoded, and indexed by way: a
// slice's port, or the entry of the chain it names.
type slicer struct {
	slices []cube.Slice
	first  map[string]int    // way → the first slice of that way
	entry  map[string]string // way → the entry port of its last slice
}

func newSlicer(sls []cube.Slice) *slicer {
	s := &slicer{slices: sls, first: make(map[string]int, len(sls)), entry: make(map[string]string, len(sls))}
	for i, sl := range sls {
		way := sl.Port
		if sl.Chain != "" {
			way = sl.Chain
		}
		if _, ok := s.first[way]; !ok {
			s.first[way] = i
		}
		s.entry[way] = sl.Entry
	}
	return s
}

// of is the first slice whose way is one of ways.
func (s *slicer) of(ways ...string) (cube.Slice, bool) {
	best := -1
	for _, w := range ways {
		if i, ok := s.first[w]; ok && (best < 0 || i < best) {
			best = i
		}
	}
	if best < 0 {
		return cube.Slice{}, false
	}
	return s.slices[best], true
}

func chainEntriesOf(t *cube.Topology) chainEntries {
	out := chainEntries{by: map[string]chainEntry{}, slices: map[*cube.Cube]*slicer{}}
	for _, name := range t.CubeNames() {
		c := t.Lookup(name)
		for _, sl := range out.slicerOf(c).slices {
			if sl.Chain != "" {
				out.by[sl.Chain] = chainEntry{slicer: c, slice: sl}
			}
		}
	}
	return out
}

// slicerOf are c's slices, none for a cube that is no slicer (or whose
// table is bad: every port, as for any cube).
func (e chainEntries) slicerOf(c *cube.Cube) *slicer {
	s, ok := e.slices[c]
	if !ok {
		sls, _ := slicesOf(c)
		s = newSlicer(sls)
		e.slices[c] = s
	}
	return s
}

// entry is the slice whose chain entry is key ("cube:port").
func (e chainEntries) entry(key string) (chainEntry, bool) {
	if ce, ok := e.over[key]; ok {
		if ce == nil {
			return chainEntry{}, false
		}
		return *ce, true
	}
	ce, ok := e.by[key]
	return ce, ok
}

// ref notes that a walk read a cube or (with an @) an attachment point.
func (e chainEntries) ref(name string) {
	if e.refs != nil {
		e.refs[name] = true
	}
}

// stack is stackHops, noted.
func (e chainEntries) stack(t *cube.Topology, point string, dir datapath.Direction) []Hop {
	if e.refs != nil {
		e.refs["@"+point] = true
		for _, n := range t.Attachments[point] {
			e.refs[n] = true
		}
	}
	return stackHops(t, point, dir)
}

// intoChains extends ch, a frame entering slicer c by port in, into the
// chain of every slice of c that names its entry, unless in is a slice's
// way back (then the frame only returns: outPorts).
func intoChains(t *cube.Topology, ch Chain, c *cube.Cube, in cube.Port, visited map[string]bool, entries chainEntries) []Chain {
	sc := entries.slicerOf(c)
	if _, back := sc.first[in.Name]; back {
		return nil
	}
	var res []Chain
	for _, sl := range sc.slices {
		if sl.Chain == "" {
			continue
		}
		// the slice's unit first: what follows is read for it alone
		next, entries, ok := entries.branch(ch, c.Name+"/"+sl.Chain)
		if !ok {
			continue
		}
		into := &chainEntry{slicer: c, slice: sl}
		ep, err := cube.ParseEndpoint(sl.Chain)
		if err != nil || !ep.IsCube() {
			continue
		}
		entries.ref(ep.Cube)
		first := t.Lookup(ep.Cube)
		if first == nil || first.Port(ep.Port) == nil {
			continue
		}
		next.slice = into
		next.Hops = append(slices.Clone(ch.Hops), Hop{Cube: c.Name, Type: c.Type, In: in.Name, Out: sl.Chain})
		next.Hops = append(next.Hops, entries.stack(t, sl.Chain, datapath.Ingress)...)
		res = append(res, follow(t, next, first, *first.Port(ep.Port), visited, entries)...)
	}
	return res
}
