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

// chainIndex holds the slices of the applied topology that lead straight
// into cube ports, kept from one change to the next (applyTo): a change
// looks at the slices it changed, not at every slice of its slicer.
type chainIndex struct {
	byEntry  map[string]chainRef         // "cube:port" → its slice
	bySlicer map[string]map[int]chainRef // slicer → slice id → the slice
}

func newChainIndex() *chainIndex {
	return &chainIndex{byEntry: map[string]chainRef{}, bySlicer: map[string]map[int]chainRef{}}
}

// chainChange is what a change does to the index: the slices of its
// changed slicers as they were (gone) and as they are (added), read as
// one index over the applied one (entry, slice).
type chainChange struct {
	base        *chainIndex
	gone, added []chainRef
	entries     map[string]*chainRef         // by entry; nil: gone
	ids         map[string]map[int]*chainRef // by slicer and id; nil: gone
	// full are the slicers every slice of which the change plans: new,
	// changed beyond their slices, or without a running program whose
	// chain hops stand.
	full map[string]bool
	// check are the entries to check: those of the added slices and those
	// that are ports of changed cubes.
	check []string
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

// diffChains works out what next, prev with d's cubes changed, does to
// base, prev's index. A slicer whose entries alone changed is read for
// those entries only (dirty.rowsOf); running says whether a cube's
// program is up, with the chain hops last written (a slicer that is not
// has all of them planned).
func diffChains(base *chainIndex, prev, next *cube.Topology, d dirty, running func(string) bool) *chainChange {
	x := &chainChange{base: base, entries: map[string]*chainRef{}, ids: map[string]map[int]*chainRef{}, full: map[string]bool{}}
	check := map[string]bool{}
	for _, name := range d.cubes {
		old, c := prev.Lookup(name), next.Lookup(name)
		for _, v := range []*cube.Cube{old, c} {
			if v != nil {
				for _, p := range v.Ports {
					check[name+":"+p.Name] = true
				}
			}
		}
		if (old == nil || !isSlicer(old)) && (c == nil || !isSlicer(c)) {
			continue
		}
		var was, now []cube.SliceChain
		if running(name) && entriesOnly(old, c) {
			rows := d.rowsOf(name, old, c)
			if len(rows) == 0 {
				continue
			}
			was, now = sliceChainsOf(old.WithRows(rows)), sliceChainsOf(c.WithRows(rows))
		} else {
			x.full[name] = true
			for _, id := range slices.Sorted(maps.Keys(base.bySlicer[name])) {
				was = append(was, base.bySlicer[name][id].SliceChain)
			}
			if c != nil {
				now = sliceChainsOf(c)
			}
		}
		for _, sc := range was {
			x.gone = append(x.gone, chainRef{name, sc})
		}
		for _, sc := range now {
			x.added = append(x.added, chainRef{name, sc})
		}
	}
	for _, ref := range x.gone {
		x.entries[ref.Entry] = nil
		x.byID(ref.slicer)[ref.ID] = nil
	}
	for _, ref := range x.added {
		if was, taken := x.entry(ref.Entry); taken && x.dup[0].slicer == "" {
			x.dup = [2]chainRef{was, ref}
		}
		x.entries[ref.Entry] = &ref
		x.byID(ref.slicer)[ref.ID] = &ref
		check[ref.Entry] = true
	}
	x.check = slices.Sorted(maps.Keys(check))
	return x
}

// allChains indexes every slice of t that leads straight into a cube port
// (a reconcile of the whole topology).
func allChains(t *cube.Topology) *chainChange {
	return diffChains(newChainIndex(), cube.NewTopology(), t, dirty{cubes: t.CubeNames()}, func(string) bool { return false })
}

func (x *chainChange) byID(slicer string) map[int]*chainRef {
	m := x.ids[slicer]
	if m == nil {
		m = map[int]*chainRef{}
		x.ids[slicer] = m
	}
	return m
}

// entry is the slice that leads into port point ("cube:port").
func (x *chainChange) entry(point string) (chainRef, bool) {
	if ref, ok := x.entries[point]; ok {
		if ref == nil {
			return chainRef{}, false
		}
		return *ref, true
	}
	ref, ok := x.base.byEntry[point]
	return ref, ok
}

// slice is slicer's slice of that id.
func (x *chainChange) slice(slicer string, id int) (chainRef, bool) {
	if ref, ok := x.ids[slicer][id]; ok {
		if ref == nil {
			return chainRef{}, false
		}
		return *ref, true
	}
	ref, ok := x.base.bySlicer[slicer][id]
	return ref, ok
}

// sliceIDs are the ids of slicer's slices, those the change put in
// among them.
func (x *chainChange) sliceIDs(slicer string) []int {
	set := map[int]bool{}
	for id := range x.base.bySlicer[slicer] {
		set[id] = true
	}
	for id := range x.ids[slicer] {
		set[id] = true
	}
	return slices.Sorted(maps.Keys(set))
}

// applyTo makes idx, the index of the topology the change was made to,
// that of the topology it made.
func (x *chainChange) applyTo(idx *chainIndex) {
	for _, ref := range x.gone {
		if idx.byEntry[ref.Entry] == ref {
			delete(idx.byEntry, ref.Entry)
		}
		if m := idx.bySlicer[ref.slicer]; m[ref.ID] == ref {
			delete(m, ref.ID)
			if len(m) == 0 {
				delete(idx.bySlicer, ref.slicer)
			}
		}
	}
	for _, ref := range x.added {
		idx.byEntry[ref.Entry] = ref
		if idx.bySlicer[ref.slicer] == nil {
			idx.bySlicer[ref.slicer] = map[int]chainRef{}
		}
		idx.bySlicer[ref.slicer][ref.ID] = ref
	}
}

// chainsOf is what next, a change of the applied topology whose changed
// cubes are known, does to the applied topology's slices.
func (e *Engine) chainsOf(next *cube.Topology, d dirty) *chainChange {
	return diffChains(e.chains, e.topo, next, d, func(name string) bool {
		l := e.cubes[name]
		return l != nil && l.dc != nil && l.down == ""
	})
}

// validate checks a change: the topology's own rules (cube.ValidateChanged),
// then the links of slices straight into cube ports.
func (e *Engine) validate(next *cube.Topology, d dirty) error {
	if err := next.ValidateChanged(e.topo, d.cubes, e.sys()); err != nil {
		return err
	}
	return checkChains(next, e.chainsOf(next, d))
}

// checkChains checks the slices a change may have made wrong that lead
// straight into a cube port: those it added or changed and those that
// enter its changed cubes (the others are as they were, and so are their
// entries).
// What a tenant owns decides where its slices may lead: only into its own
// cubes, so a slice never carries one tenant's traffic into another's
// chain; and an entry has no other peer, so nothing else reaches the chain
// that way or leaves it by the slice's way back.
func checkChains(t *cube.Topology, x *chainChange) error {
	if d := x.dup; d[0].slicer != "" {
		return cube.Conflict(chainField(d[1]), "%s is already slice %s's chain entry (slicer %s): an entry serves one slice", d[1].Entry, d[0].Slice, d[0].slicer)
	}
	for _, entry := range x.check {
		ref, ok := x.entry(entry)
		if !ok {
			continue
		}
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

// chainHops plans the hops into slicer's slices' entries (ids nil: all
// of them): the entry cube's slot and port, with the transparent cubes
// attached at the entry on the way in (the slice's capture point among
// them). A slice that is gone, or whose entry is not there, gets none
// (the zero hop, which drops).
func (pl *planner) chainHops(slicer string, ids []int) (map[int]datapath.Hop, error) {
	if ids == nil {
		ids = pl.chains.sliceIDs(slicer)
	}
	out := make(map[int]datapath.Hop, len(ids))
	for _, id := range ids {
		out[id] = datapath.Hop{}
		sc, ok := pl.chains.slice(slicer, id)
		if !ok {
			continue
		}
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
		out[id] = h
	}
	return out, nil
}

// backHop is the hop of an unpeered port that is a slice's chain entry:
// into its slicer on the slice's virtual port, through the transparent
// cubes attached at the entry on the way out.
func (pl *planner) backHop(point string) (datapath.Hop, bool, error) {
	ref, ok := pl.chains.entry(point)
	if !ok {
		return datapath.Hop{}, false, nil
	}
	h, err := datapath.NewHop(datapath.DstCube, 0, pl.slots[ref.slicer], uint32(datapath.MaxPorts+ref.ID), pl.stack(point, datapath.Egress))
	return h, true, err
}

// writeChainHops writes the planned hops into slices' chains that differ
// from what was last written; a zero hop clears one. Where the plan has
// every slice of a slicer (chainFull), the slices it does not name are
// cleared too.
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
			e.hopWrites++
			return nil
		}
		for id, h := range hops {
			old, ok := l.chainHops[id]
			if ok && old == h || !ok && h == (datapath.Hop{}) {
				continue
			}
			if err := put(id, h); err != nil {
				return err
			}
			if h == (datapath.Hop{}) {
				delete(l.chainHops, id)
			} else {
				l.chainHops[id] = h
			}
		}
		if !p.chainFull[name] {
			continue
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
