package engine

// Making the kernel objects match a topology: slots, programs, controllers'
// sync, hops, flooding and stubs.

import (
	"bytes"
	"fmt"
	"maps"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/datapath"
)

// reconcile makes the kernel objects match desired. It is idempotent, so
// reconciling with the previous topology undoes a failed change. With adopt,
// pinned cubes of an earlier daemon are re-opened instead of reloaded.
func (e *Engine) reconcile(desired *cube.Topology, adopt bool) error {
	return e.reconcileSet(desired, adopt, nil)
}

// reconcileSet is reconcile for the part of desired a change touches (cs,
// dirty.go; nil: all of it). Slots, hops and stubs outside it are left as
// they are: the change did not alter them.
func (e *Engine) reconcileSet(desired *cube.Topology, adopt bool, cs *changeSet) error {
	var names, gone []string
	if cs != nil {
		names = sorted(cs.ensure)
		for _, name := range sorted(cs.changed) {
			if !desired.Has(name) {
				gone = append(gone, name)
			}
		}
	} else {
		names = desired.CubeNames()
		for name := range e.cubes {
			if !desired.Has(name) {
				gone = append(gone, name)
			}
		}
		for name := range e.slots {
			if !desired.Has(name) && e.cubes[name] == nil {
				gone = append(gone, name)
			}
		}
	}
	if err := e.assignSlots(desired, names); err != nil {
		return err
	}
	var chains *chainChange
	if cs != nil {
		chains = cs.chains
	} else {
		chains = allChains(desired)
	}
	pl := &planner{t: desired, slots: e.slots, ifindex: ifindex, only: cs, chains: chains}
	p, err := pl.makePlan()
	if err != nil {
		return err
	}
	for _, name := range pl.missing {
		e.log.Warn("peered interface does not exist; its traffic is dropped until it is back", "interface", name)
	}
	e.noteMissing(cs, pl.missing)
	e.applying = desired
	defer func() { e.applying = nil }()
	defer e.publishPuntViews() // what the cubes' punt workers see of them
	for _, name := range names {
		c, attch := desired.Lookup(name), attachContext(desired, name)
		if err := e.ensureCube(c, attch, adopt); err != nil {
			if e.goesDown == nil || !e.goesDown(name) {
				return cube.Within("cubes."+name, err)
			}
			if err := e.putDown(c, attch, err); err != nil {
				return err
			}
		}
	}
	if err := e.writeHops(p); err != nil {
		return err
	}
	if err := e.writeChainHops(p); err != nil {
		return err
	}
	if err := e.reconcileStubs(p, cs, adopt); err != nil {
		return err
	}
	if err := e.ensureRedirectTargets(p); err != nil {
		return err
	}
	for _, name := range gone {
		if l := e.cubes[name]; l != nil {
			if err := l.dc.Unload(); err != nil {
				return fmt.Errorf("unload cube %s: %w", name, err)
			}
			e.forget(name)
		}
		delete(e.slots, name)
	}
	return nil
}

// assignSlots gives every new cube among names (cubes of t) the lowest free
// panel slot. A slot is
// free only once its cube is unloaded: a cube this change deletes keeps
// running until the end of the reconcile (its traffic is moved away first),
// and unloading it empties its slot and removes its direct entries' source,
// so a new cube must not share the slot in the meantime.
func (e *Engine) assignSlots(t *cube.Topology, names []string) error {
	var used map[uint32]bool
	next := uint32(0)
	for _, name := range names {
		if _, ok := e.slots[name]; ok {
			continue
		}
		if used == nil {
			used = map[uint32]bool{}
			for name, s := range e.slots {
				if t.Has(name) {
					used[s] = true
				}
			}
			for _, l := range e.cubes {
				used[l.dc.Slot] = true
			}
		}
		for used[next] {
			next++
		}
		if next >= datapath.MaxSlots {
			return cube.Errorf("cubes", "more than %d cubes", datapath.MaxSlots)
		}
		e.slots[name] = next
		used[next] = true
	}
	return nil
}

// ensureCube loads (or re-adopts) the cube's program if needed and syncs its
// control plane when its spec changed.
func (e *Engine) ensureCube(c *cube.Cube, attch string, adopt bool) error {
	l := e.cubes[c.Name]
	if l != nil && l.down != "" {
		if l.c.Equal(c) {
			l.attch = attch // still down: nothing of it to change
			l.takeRuntime(c)
			return nil
		}
		return e.bringUp(l, c, attch) // restore.go
	}
	if l != nil && (l.typ.Name != c.Type || l.dc.Hook != c.Hook) {
		// Type or hook changed (declarative apply): replace the cube.
		if err := l.dc.Unload(); err != nil {
			return err
		}
		e.forget(c.Name)
		l = nil
	}
	if l != nil && l.c != nil && l.c.Equal(c) && l.attch == attch {
		l.takeRuntime(c)
		return nil
	}
	if l == nil {
		if !adopt {
			// A new cube: pins of that name are leftovers (restore.go),
			// whose maps must not leak into it.
			if err := e.dp.RemovePinned(c.Name); err != nil {
				return err
			}
		}
		var err error
		if l, err = e.loadCube(c, adopt); err != nil {
			return err
		}
		e.cubes[c.Name] = l
		e.bindSlot(l)
		if svc, ok := l.ctl.(cube.Service); ok {
			svc.Start(&store{e: e, l: l})
		}
	} else if err := e.reprogram(l, c); err != nil {
		return err
	}
	// a new program, or the cube given to another owner
	if err := e.writePuntBudget(l, c.Tenant); err != nil {
		return err
	}
	if err := e.syncCube(l, c, attch); err != nil {
		return err
	}
	// encoded when a snapshot or a cube record needs it: a change of a
	// few entries is journalled as those (persist)
	l.c, l.attch, l.json = c.Clone(), attch, nil
	return nil
}

// takeRuntime records a change of the cube's runtime state alone: no
// program or control plane needs it, the state file does.
func (l *live) takeRuntime(c *cube.Cube) {
	if !l.c.SameRuntime(c) {
		if l.sharesCube() {
			own := *l.c
			l.c = &own
		}
		l.c.Runtime = maps.Clone(c.Runtime)
		l.json = nil
	}
}

// forget drops an unloaded cube.
func (e *Engine) forget(name string) {
	l := e.cubes[name]
	if l == nil {
		return
	}
	retire(l)
	dropDups(l)
	e.unbindSlot(l)
	delete(e.cubes, name)
}

// retire stops the calls into a cube's controller made without the
// engine's lock (one in flight finishes on its duplicated maps), lets the
// controller stop its goroutines and release what it holds beyond the
// cube's maps, and ends its punt worker (its queued punts are never
// handed over). Called with e.mu held.
func retire(l *live) {
	l.gone.Store(true)
	if cl, ok := l.ctl.(cube.Closer); ok {
		cl.Close()
	}
	l.sink.stop()
}

// syncCube hands the change to the controller: entry by entry when only
// tables changed and the controller can do that, else a full Sync.
func (e *Engine) syncCube(l *live, c *cube.Cube, attch string) error {
	h := &handle{e: e, l: l}
	if ew, ok := l.ctl.(cube.EntryWriter); ok && l.c != nil && cube.SameButTables(l.c, c) && l.attch == attch {
		return e.syncEntries(h, ew, l.c, c)
	}
	return l.ctl.Sync(h, c)
}

func (e *Engine) syncEntries(h *handle, ew cube.EntryWriter, old, c *cube.Cube) error {
	for _, tb := range h.l.typ.Tables {
		before, after := old.Tables[tb.Name], c.Tables[tb.Name]
		for key, raw := range before {
			if _, still := after[key]; still {
				continue
			}
			item, _, err := tb.DecodeEntry(old, raw)
			if err != nil {
				return err
			}
			if err := ew.DeleteEntry(h, c, tb.Name, item); err != nil {
				return err
			}
		}
		for key, raw := range after {
			if prev, ok := before[key]; ok && bytes.Equal(prev, raw) {
				continue
			}
			item, _, err := tb.DecodeEntry(c, raw)
			if err != nil {
				return err
			}
			if err := ew.PutEntry(h, c, tb.Name, item); err != nil {
				return err
			}
		}
	}
	return nil
}

// writeHops writes the port maps and flood sets that differ from what was
// last written.
func (e *Engine) writeHops(p *plan) error {
	for name, hops := range p.hops {
		l := e.cubes[name]
		for idx, h := range hops {
			if old, ok := l.hops[idx]; ok && old == h {
				continue
			}
			if err := l.dc.SetHop(uint32(idx), h); err != nil {
				return fmt.Errorf("cube %s port %d: %w", name, idx, err)
			}
			e.hopWrites++
			l.hops[idx] = h
		}
		for idx := range l.hops {
			if _, ok := hops[idx]; !ok {
				if err := l.dc.SetHop(uint32(idx), datapath.Hop{}); err != nil {
					return err
				}
				e.hopWrites++
				delete(l.hops, idx)
			}
		}
		if err := e.writeFlood(l, p.flood[name]); err != nil {
			return fmt.Errorf("cube %s: %w", name, err)
		}
	}
	return nil
}

// ensureRedirectTargets runs after the stubs are in place: a stub detached
// from one end of a veth pair may have been the XDP program its peer's
// redirects relied on.
// An interface prepared once stays prepared until a stub is detached
// (reconcileStubs forgets them all then): a change costs what it adds, not
// a look into every pod's namespace.
func (e *Engine) ensureRedirectTargets(p *plan) error {
	for iface := range p.redirects {
		idx, err := ifindex(iface)
		if err != nil {
			continue // reported as missing by the planner
		}
		if e.redirectReady[idx] {
			continue
		}
		if err := e.dp.EnsureRedirectTarget(idx); err != nil {
			return err
		}
		e.redirectReady[idx] = true
	}
	return nil
}

func (e *Engine) writeFlood(l *live, want map[int]int) error {
	for idx, ifx := range want {
		if l.flood[idx] == ifx {
			continue
		}
		if err := l.dc.SetFlood(uint32(idx), uint32(ifx)); err != nil {
			return err
		}
		l.flood[idx] = ifx
	}
	for idx := range l.flood {
		if _, ok := want[idx]; !ok {
			if err := l.dc.SetFlood(uint32(idx), 0); err != nil {
				return err
			}
			delete(l.flood, idx)
		}
	}
	return nil
}

// reconcileStubs puts on each interface of the plan its program and hop.
// The far end of an XDP interface is ready already when the change
// prepared it outside the lock (stubprep.go) and, at start (adopt), when
// the interface runs what it ran (a veth made again while the daemon was
// down is not).
func (e *Engine) reconcileStubs(p *plan, cs *changeSet, adopt bool) error {
	for k, h := range p.stubs {
		direct := e.entryCube(k.Hook, h.First())
		s, ok := e.stubs[k]
		if cur, known := e.stubEntry[k]; ok && known && cur == direct {
			if e.stubHops[k] == h {
				continue
			}
			if err := s.SetHop(h); err != nil {
				return err
			}
			e.stubHops[k] = h
			continue
		}
		idx, err := ifindex(k.Iface)
		if err != nil {
			return err
		}
		if k.Hook == datapath.XDP && !e.prepared[k] && !(adopt && e.dp.StubCurrent(k.Iface, idx, k.Hook, k.Dir, direct)) {
			if err := e.dp.EnsureXDPIngress(idx); err != nil {
				return cube.Errorf("peer", "interface %s: %v", k.Iface, err)
			}
		}
		ns, err := e.dp.AttachStub(k.Iface, idx, k.Hook, k.Dir, h, direct)
		if err != nil {
			if ok {
				// A replacement that failed half way may have left the
				// link on the plain stub and the hop changed: forget what
				// it runs, so the next reconcile (the rollback) attaches
				// it again instead of trusting the old record.
				delete(e.stubEntry, k)
			}
			return cube.Errorf("peer", "interface %s: %v", k.Iface, err)
		}
		e.logStubReset(k, ns) // upgrade.go
		if ns.Adopted && adopt {
			e.started.InterfacesAdopted++
		}
		e.stubs[k], e.stubHops[k], e.stubEntry[k] = ns, h, direct
	}
	for _, k := range e.stubsOf(cs) {
		if _, keep := p.stubs[k]; keep {
			continue
		}
		if err := e.dp.DetachStub(k.Iface, k.Hook, k.Dir); err != nil {
			return err
		}
		clear(e.redirectReady) // its peer may have relied on it
		delete(e.stubs, k)
		delete(e.stubHops, k)
		delete(e.stubEntry, k)
	}
	return nil
}

// stubsOf lists the stubs on the interfaces of cs (nil: all stubs).
func (e *Engine) stubsOf(cs *changeSet) []StubKey {
	var out []StubKey
	if cs == nil {
		for k := range e.stubs {
			out = append(out, k)
		}
		return out
	}
	for iface := range cs.ifaces {
		out = append(out, e.stubKeysOf(iface)...)
	}
	return out
}

// entryCube is the loaded cube in a panel slot, if it runs at hook and has
// a direct entry.
func (e *Engine) entryCube(hook datapath.Hook, slot uint32) *datapath.Program {
	if l := e.bySlot[slot]; l != nil && l.dc.Hook == hook && l.dc.HasEntry() {
		return l.dc
	}
	return nil
}
