package engine

// Slices that lead straight into a cube port (cube.Type.SliceChains): a
// slicer serves more slices than it has ports because the engine, not a
// port, links each such slice with its chain. The slicer enters the chain
// through the hop written, by slice id, into its datapath.MapChainHops;
// the entry port, which has no peer, hops back into the slicer on virtual
// port datapath.MaxPorts+id. So each link is checked here (the entry
// exists, is unpeered, is one slice's only, is the slice's tenant's own
// cube, at the slicer's hook), planned with the hops (plan.go) and
// followed by the dirty set (dirty.go).

import (
	"fmt"
	"maps"
	"slices"

	"github.com/cilium/ebpf"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/datapath"
)

// chainRef is one slice that leads straight into a cube port.
type chainRef struct {
	slicer string
	cube.SliceChain
}

// chainIndex holds the slices of a topology that lead straight into cube
// ports.
type chainIndex struct {
	byEntry  map[string]chainRef          // "cube:port" → its slice
	bySlicer map[string][]cube.SliceChain // slicer → its slices
	// dup is the first entry two slices name (a conflict validate reports).
	dup [2]chainRef
}

// sliceChainsOf lists c's slices that lead straight into a cube port.
func sliceChainsOf(c *cube.Cube) []cube.SliceChain {
	typ, err := cube.Lookup(c.Type)
	if err != nil || typ.SliceChains == nil {
		return nil
	}
	return typ.SliceChains(c)
}

// isSlicer reports whether c's type has slices that may lead straight into
// cube ports.
func isSlicer(c *cube.Cube) bool {
	typ, err := cube.Lookup(c.Type)
	return err == nil && typ.SliceChains != nil
}

// indexChains indexes the slices of the named cubes of t (all of t's
// slicers must be among them).
func indexChains(t *cube.Topology, names []string) *chainIndex {
	idx := &chainIndex{byEntry: map[string]chainRef{}, bySlicer: map[string][]cube.SliceChain{}}
	for _, name := range names {
		c := t.Lookup(name)
		if c == nil {
			continue
		}
		list := sliceChainsOf(c)
		if len(list) == 0 {
			continue
		}
		idx.bySlicer[name] = list
		for _, sc := range list {
			ref := chainRef{slicer: name, SliceChain: sc}
			if was, dup := idx.byEntry[sc.Entry]; dup && idx.dup[0].slicer == "" {
				idx.dup = [2]chainRef{was, ref}
			}
			idx.byEntry[sc.Entry] = ref
		}
	}
	return idx
}

// indexChainsAll indexes the slices of all of t's cubes.
func indexChainsAll(t *cube.Topology) *chainIndex {
	return indexChains(t, t.CubeNames())
}

// slicersOf names the cubes of next that are slicers: those of the applied
// topology (e.slicers) still there, and the changed ones that are.
func (e *Engine) slicersOf(next *cube.Topology, changed []string) []string {
	set := map[string]bool{}
	for name := range e.slicers {
		if c := next.Lookup(name); c != nil && isSlicer(c) {
			set[name] = true
		}
	}
	for _, name := range changed {
		if c := next.Lookup(name); c != nil && isSlicer(c) {
			set[name] = true
		}
	}
	return sorted(set)
}

// chainsOf indexes next, a change of the applied topology whose changed
// cubes are known.
func (e *Engine) chainsOf(next *cube.Topology, changed []string) *chainIndex {
	return indexChains(next, e.slicersOf(next, changed))
}

// noteSlicers keeps e.slicers, the slicers of the applied topology, up to
// date with a change made.
func (e *Engine) noteSlicers(next *cube.Topology, cs *changeSet) {
	for name := range cs.changed {
		if c := next.Lookup(name); c != nil && isSlicer(c) {
			e.slicers[name] = true
		} else {
			delete(e.slicers, name)
		}
	}
}

// validate checks a change: the topology's own rules (cube.ValidateChanged),
// then the links of slices straight into cube ports.
func (e *Engine) validate(next *cube.Topology, changed []string) error {
	if err := next.ValidateChanged(e.topo, changed, e.sys()); err != nil {
		return err
	}
	return checkChains(next, e.chainsOf(next, changed))
}

// checkChains checks every slice that leads straight into a cube port.
// What a tenant owns decides where its slices may lead: only into its own
// cubes, so a slice never carries one tenant's traffic into another's
// chain; and an entry has no other peer, so nothing else reaches the chain
// that way or leaves it by the slice's way back.
func checkChains(t *cube.Topology, idx *chainIndex) error {
	if d := idx.dup; d[0].slicer != "" {
		return cube.Conflict(chainField(d[1]), "%s is already slice %s's chain entry (slicer %s): an entry serves one slice", d[1].Entry, d[0].Slice, d[0].slicer)
	}
	for _, entry := range slices.Sorted(maps.Keys(idx.byEntry)) {
		ref := idx.byEntry[entry]
		field := chainField(ref)
		ep, err := cube.ParseEndpoint(entry)
		if err != nil || !ep.IsCube() {
			return cube.Errorf(field, "%q is not a cube port (cube:port)", entry)
		}
		c := t.Lookup(ep.Cube)
		if c == nil {
			return cube.NotFound(field, "slice %s leads into %s: no cube named %q (delete or change the slice first)", ref.Slice, entry, ep.Cube)
		}
		if typ, err := cube.Lookup(c.Type); err == nil && typ.Transparent {
			return cube.Unprocessable(field, "cube %s is a %s, a transparent cube: it has no ports to enter", c.Name, c.Type)
		}
		p := c.Port(ep.Port)
		if p == nil {
			return cube.NotFound(field, "slice %s leads into %s: cube %s has no port %q (delete or change the slice first)", ref.Slice, entry, c.Name, ep.Port)
		}
		if p.Peer != "" {
			return cube.Conflict(field, "port %s is peered with %s: a slice's chain entry has no peer but its slice, which it hops back to", entry, p.Peer)
		}
		if c.Tenant != ref.Tenant {
			return cube.Conflict(field, "cube %s is %s and slice %s is %s: a slice leads only into its own tenant's cubes", c.Name, ownerName(c.Tenant), ref.Slice, ownerName(ref.Tenant))
		}
		if s := t.Lookup(ref.slicer); s != nil && s.Hook != c.Hook {
			return cube.Unprocessable(field, "cube %s runs at %s and slicer %s at %s: a chain is entered at the slicer's hook", c.Name, c.Hook, s.Name, s.Hook)
		}
	}
	return nil
}

// chainField names a slice's chain in errors.
func chainField(ref chainRef) string {
	return fmt.Sprintf("cubes.%s.tables.slices[%s].chain", ref.slicer, ref.Slice)
}

// chainHops plans the hop into each of a slicer's slices' entries: the
// entry cube's slot and port, with the transparent cubes attached at the
// entry on the way in (the slice's capture point among them).
func (pl *planner) chainHops(slicer string) (map[int]datapath.Hop, error) {
	out := map[int]datapath.Hop{}
	for _, sc := range pl.chains.bySlicer[slicer] {
		ep, err := cube.ParseEndpoint(sc.Entry)
		if err != nil {
			return nil, err
		}
		c := pl.t.Lookup(ep.Cube)
		if c == nil || c.Port(ep.Port) == nil {
			continue // refused by checkChains; a state file's: it drops
		}
		h, err := datapath.NewHop(datapath.DstCube, 0, pl.slots[ep.Cube], uint32(c.Port(ep.Port).Index), pl.stack(sc.Entry, datapath.Ingress))
		if err != nil {
			return nil, cube.Within("attachments."+sc.Entry, err)
		}
		out[sc.ID] = h
	}
	return out, nil
}

// backHop is the hop of an unpeered port that is a slice's chain entry:
// into its slicer on the slice's virtual port, through the transparent
// cubes attached at the entry on the way out.
func (pl *planner) backHop(point string) (datapath.Hop, bool, error) {
	ref, ok := pl.chains.byEntry[point]
	if !ok {
		return datapath.Hop{}, false, nil
	}
	h, err := datapath.NewHop(datapath.DstCube, 0, pl.slots[ref.slicer], uint32(datapath.MaxPorts+ref.ID), pl.stack(point, datapath.Egress))
	return h, true, err
}

// writeChainHops writes the hops into slices' chains that differ from
// what was last written.
func (e *Engine) writeChainHops(p *plan) error {
	for name, hops := range p.chainHops {
		l := e.cubes[name]
		if l == nil || l.dc == nil || l.down != "" {
			continue // a stand-in drops everything (restore.go)
		}
		var m *ebpf.Map
		put := func(id int, h datapath.Hop) error {
			if m == nil {
				var err error
				if m, err = l.dc.Map(datapath.MapChainHops); err != nil {
					return fmt.Errorf("cube %s: %w", name, err)
				}
			}
			if err := m.Update(uint32(id), h, ebpf.UpdateAny); err != nil {
				return fmt.Errorf("cube %s slice %d: %w", name, id, err)
			}
			return nil
		}
		for id, h := range hops {
			if old, ok := l.chainHops[id]; ok && old == h {
				continue
			}
			if err := put(id, h); err != nil {
				return err
			}
			l.chainHops[id] = h
		}
		for id := range l.chainHops {
			if _, ok := hops[id]; !ok {
				if err := put(id, datapath.Hop{}); err != nil {
					return err
				}
				delete(l.chainHops, id)
			}
		}
	}
	return nil
}
