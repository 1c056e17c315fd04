package engine

// What one change touches. A topology of thousands of cubes changes a few
// at a time: the cubes that differ are loaded or synced, their hops and
// those of the cubes peered with them are planned and written, the stubs of
// their interfaces reconciled, and only they are journalled. Nothing else
// is looked at, so a change costs what it changes, not the size of the
// topology.

import (
	"maps"
	"slices"

	"github.com/edgenf/edgenf/internal/cube"
)

// changeSet is the part of the topology a change touches.
type changeSet struct {
	// changed are the cubes added, changed or deleted: made real and
	// persisted.
	changed map[string]bool
	// ensure are the cubes synced: the changed ones and the transparent
	// cubes whose attachment (point or the addresses of its port) changed.
	ensure map[string]bool
	// plan are the cubes whose hops are computed again: the ensured ones
	// and their peers (a hop names the peer's slot and port index).
	plan map[string]bool
	// ifaces are the interfaces whose stubs are reconciled: the peers of
	// planned cubes and the interfaces whose attachments changed.
	ifaces map[string]bool
	// points are the attachment points whose stack changed.
	points []string
	// chains are next's slices that lead straight into cube ports, and
	// chainIDs the ids of those whose hop is planned again, by slicer:
	// the slices the change added, changed or removed, and those that
	// enter planned cubes.
	chains   *chainChange
	chainIDs map[string]map[int]bool
}

// slicers are the slicers with slices planned.
func (cs *changeSet) slicers() map[string]bool {
	out := make(map[string]bool, len(cs.chainIDs))
	for name := range cs.chainIDs {
		out[name] = true
	}
	return out
}

// planChain plans the hop into ref's entry and the entry's hop back.
func (cs *changeSet) planChain(ref chainRef) {
	if cs.chainIDs[ref.slicer] == nil {
		cs.chainIDs[ref.slicer] = map[int]bool{}
	}
	cs.chainIDs[ref.slicer][ref.ID] = true
}

// changes finds what turns prev into next, whose changed cubes and
// attachment points are known (cow.go); peerOf names the cube port peered
// with an interface in prev (the engine's index: index.go).
func changes(prev, next *cube.Topology, d dirty, chains *chainChange, peerOf func(iface string) (string, bool)) *changeSet {
	cs := &changeSet{changed: map[string]bool{}, ensure: map[string]bool{}, plan: map[string]bool{}, ifaces: map[string]bool{},
		chains: chains, chainIDs: map[string]map[int]bool{}}
	for _, name := range d.cubes {
		cs.changed[name] = true
	}
	cs.points = d.points
	if d.all {
		cs.points = nil
		for point, list := range next.Attachments {
			if !slices.Equal(prev.Attachments[point], list) {
				cs.points = append(cs.points, point)
			}
		}
		for point, list := range prev.Attachments {
			if _, ok := next.Attachments[point]; !ok && len(list) > 0 {
				cs.points = append(cs.points, point)
			}
		}
		slices.Sort(cs.points)
	}
	for name := range cs.changed {
		cs.ensure[name] = true
		// transparent cubes on its ports see the ports' addresses
		for _, t := range []*cube.Topology{prev, next} {
			if c := t.Lookup(name); c != nil {
				for _, p := range c.Ports {
					cs.addAll(cs.ensure, next.Attachments[name+":"+p.Name], next)
				}
			}
		}
	}
	for _, point := range cs.points {
		cs.addAll(cs.ensure, prev.Attachments[point], next)
		cs.addAll(cs.ensure, next.Attachments[point], next)
		ep, err := cube.ParseEndpoint(point)
		if err != nil {
			continue
		}
		if ep.IsCube() {
			// the hop out of the port runs its egress stack, the hop into
			// it (its peer's) the ingress one
			cs.plan[ep.Cube] = true
			continue
		}
		cs.ifaces[ep.Iface] = true
		// the hop into its cube runs its ingress stack (and an XDP cube's
		// hop out of it its egress stack). The cube peered with it in
		// prev is the one in next unless the change changed that cube,
		// and the changed ones are planned anyway.
		if peer, ok := peerOf(ep.Iface); ok {
			if pe, err := cube.ParseEndpoint(peer); err == nil {
				cs.plan[pe.Cube] = true
			}
		}
	}
	for name := range cs.ensure {
		cs.plan[name] = true
	}
	// Peers of what is planned: their hops name its slot and port index.
	for _, name := range slices.Collect(maps.Keys(cs.plan)) {
		for _, t := range []*cube.Topology{prev, next} {
			c := t.Lookup(name)
			if c == nil {
				continue
			}
			for _, p := range c.Ports {
				ep, err := cube.ParseEndpoint(p.Peer)
				if err != nil {
					continue
				}
				if !ep.IsCube() {
					cs.ifaces[ep.Iface] = true
				} else if next.Has(ep.Cube) {
					cs.plan[ep.Cube] = true
				}
			}
		}
	}
	// Slices that lead straight into cube ports (slicechains.go): the
	// entries of the slices the change added, changed or removed hop back
	// into their slicer (or no more), and their slicer into them; a
	// slicer hops into each planned entry (its slot, port index and
	// ingress stack).
	for _, list := range [][]chainRef{chains.gone, chains.added} {
		for _, ref := range list {
			if ep, err := cube.ParseEndpoint(ref.Entry); err == nil {
				cs.plan[ep.Cube] = true
			}
			cs.planChain(ref)
		}
	}
	for name := range cs.plan {
		if c := next.Lookup(name); c != nil {
			for _, p := range c.Ports {
				if ref, ok := chains.entry(name + ":" + p.Name); ok {
					cs.planChain(ref)
				}
			}
		}
	}
	for name := range cs.plan {
		if !next.Has(name) {
			delete(cs.plan, name)
		}
	}
	for name := range cs.ensure {
		if !next.Has(name) {
			delete(cs.ensure, name)
		}
	}
	return cs
}

// addAll adds the names that are cubes of t.
func (cs *changeSet) addAll(set map[string]bool, names []string, t *cube.Topology) {
	for _, n := range names {
		if t.Has(n) {
			set[n] = true
		}
	}
}

// sorted lists a set's names in order.
func sorted(set map[string]bool) []string {
	return slices.Sorted(maps.Keys(set))
}
