package engine

// Changing the desired state: a change is validated as a whole (validate),
// checked against who makes it (commit), reconciled into the kernel and
// rolled back if any step fails (applyChange), then persisted (persist,
// save).

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/vishvananda/netlink"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/state"
	"github.com/edgenf/edgenf/internal/tenant"
)

// Update applies fn to a copy of the topology and makes the result the new
// state, or changes nothing and returns the first error. It acts for the
// administrator; UpdateAs (tenants.go) for anyone.
func (e *Engine) Update(fn func(t *cube.Topology) error) error {
	return e.UpdateAs(context.Background(), tenant.Admin, func(t *cube.Topology, _ tenant.Scope) error { return fn(t) })
}

// Replace makes t the whole desired state (declarative apply) and returns
// what changed; with dryRun only the difference is computed. It is the
// administrator's; P4 programs are compiled before the lock is taken.
func (e *Engine) Replace(ctx context.Context, t *cube.Topology, dryRun bool) ([]Change, error) {
	for _, name := range t.CubeNames() {
		c := t.Lookup(name)
		if typ, err := cube.Lookup(c.Type); err != nil || typ.Prepare == nil {
			continue
		}
		release, err := prepare(ctx, c, adminCompileLimit)
		if err != nil {
			return nil, err
		}
		defer release()
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	next := t.Clone()
	keepRuntime(e.topo, next)
	if err := e.keepEndpoints(next); err != nil {
		return nil, err
	}
	d := e.dirtyAll(next)
	if err := e.validate(next, d); err != nil {
		return nil, err
	}
	changes := Diff(e.topo, next)
	if len(changes) == 0 {
		return changes, nil
	}
	if err := e.admit(next, d); err != nil {
		return nil, err
	}
	if dryRun {
		return changes, nil
	}
	return changes, e.applyChange(next, d, nil)
}

// keepRuntime carries the runtime state of the cubes a declarative apply
// keeps (same name and type) over to the new state: a document does not
// hold it (a P4Runtime controller's cookie outlives an apply).
func keepRuntime(prev, next *cube.Topology) {
	for name, c := range next.Cubes() {
		old := prev.Lookup(name)
		if old == nil || old.Type != c.Type {
			continue
		}
		for k, v := range old.Runtime {
			if _, set := c.Runtime[k]; !set {
				if c.Runtime == nil {
					c.Runtime = map[string]json.RawMessage{}
				}
				c.Runtime[k] = v
			}
		}
	}
}

// commit checks next, a working copy whose changes are known (dirtyOf),
// is a change who may make, validates it, checks who's quotas and applies
// it.
func (e *Engine) commit(who tenant.Actor, next *cube.Topology, d dirty) error {
	if err := e.check(who, next, d); err != nil {
		return err
	}
	return e.applyChange(next, d, nil)
}

// check is commit's judgement of a change, before anything is made real.
func (e *Engine) check(who tenant.Actor, next *cube.Topology, d dirty) error {
	if err := e.scope(who).ChangeOf(e.topo, next, d.cubes); err != nil {
		return err
	}
	if err := e.checkEndpoints(next, d); err != nil {
		return err
	}
	if err := e.validate(next, d); err != nil {
		return err
	}
	if err := e.checkNames(who, next, d.cubes); err != nil {
		return err
	}
	if err := e.checkQuota(who, next, d); err != nil {
		return err
	}
	return e.admit(next, d)
}

// applyChange reconciles the kernel with a validated topology, whose
// changes are known (dirtyOf, dirtyAll), and persists it. On
// any failure the kernel is reconciled back and nothing changes. Only what
// the change touches is reconciled and journalled (dirty.go), with the
// endpoints it plugged in or out (named in endpoints; e.endpoints holds
// them as they now are).
func (e *Engine) applyChange(next *cube.Topology, d dirty, endpoints []string) error {
	prev := e.topo
	cs := changes(prev, next, d, e.chainsOf(next, d), e.PeerOf)
	// a change assigns and frees the slots of its changed cubes only
	prevSlots := map[string]*uint32{}
	for name := range cs.changed {
		if s, ok := e.slots[name]; ok {
			prevSlots[name] = &s
		} else {
			prevSlots[name] = nil
		}
	}
	restoreSlots := func() {
		for name, s := range prevSlots {
			if s != nil {
				e.slots[name] = *s
			} else {
				delete(e.slots, name)
			}
		}
	}
	e.lastChange = cs
	// Entries the kernel gets before the change is persisted are
	// journalled first: a restart in between removes them (restore.go).
	if err := e.journalIntents(prev, next, cs, d); err != nil {
		return fmt.Errorf("persist state: %w", err)
	}
	// Cubes that were down go down again rather than fail a rollback. The
	// change brings up or takes down only the cubes it ensures or removes:
	// theirs is noted now, the others' (as it still is) on a failure.
	wasDown := map[string]bool{}
	for _, set := range []map[string]bool{cs.ensure, cs.changed} {
		for name := range set {
			l := e.cubes[name]
			wasDown[name] = l != nil && l.down != ""
		}
	}
	if err := e.reconcileSet(next, false, cs); err != nil {
		for name, l := range e.cubes {
			if _, noted := wasDown[name]; !noted {
				wasDown[name] = l.down != ""
			}
		}
		e.goesDown = func(name string) bool { return wasDown[name] }
		if rerr := e.reconcile(prev, false); rerr != nil {
			e.log.Error("rollback failed; kernel state may differ from the desired state", "err", rerr)
		}
		e.goesDown = nil
		restoreSlots()
		return err
	}
	crashPoint("topology-applied")
	if err := e.persist(prev, next, cs, d, endpoints); err != nil {
		e.reconcile(prev, false)
		restoreSlots()
		return fmt.Errorf("persist state: %w", err)
	}
	e.topo = next
	e.noteIndex(prev, next, cs, d.all) // before keepSpare makes prev the spare copy
	cs.chains.applyTo(e.chains)
	e.keepSpare(prev, next, cs, d.all)
	e.witnessChanged(cs, d.all)
	e.rev++
	e.topoRev++
	e.compactJournal()
	return nil
}

// persist makes a change durable: the cubes, attachment points and
// endpoints it changed appended to the journal as one transaction (a crash
// keeps all of it or none), or a snapshot when the journal cannot take it.
// A cube whose entries alone changed is journalled as those entries: the
// record of a slice added to a slicer of 1,000 is one slice, not 1,001.
func (e *Engine) persist(prev, next *cube.Topology, cs *changeSet, d dirty, endpoints []string) error {
	if e.journal == nil || e.journal.Broken() {
		return e.save(next)
	}
	var recs []state.Record
	for _, name := range sorted(cs.changed) {
		if old, c := prev.Lookup(name), next.Lookup(name); entriesOnly(old, c) {
			for _, r := range d.rowsOf(name, old, c) {
				recs = append(recs, state.Record{Cube: name, Table: r.Table, Key: r.Key, Value: c.Tables[r.Table][r.Key]})
			}
			continue
		}
		if l := e.cubes[name]; l != nil && next.Lookup(name) != nil {
			if l.json == nil {
				l.json, _ = l.c.MarshalJSON()
			}
			recs = append(recs, state.CubeRecord(name, l.json, e.slots[name]))
			continue
		}
		recs = append(recs, state.CubeRecord(name, nil, 0))
	}
	for _, point := range cs.points {
		recs = append(recs, state.AttachmentRecord(point, next.Attachments[point]))
	}
	for _, name := range endpoints {
		recs = append(recs, state.EndpointRecord(name, e.endpoints[name]))
	}
	if err := e.journal.Append(recs); err != nil {
		return err
	}
	crashPoint("change-journalled")
	return nil
}

// Checkpoint folds the journal into a new snapshot: the daemon does it when
// it stops cleanly, so that the state file alone holds the whole state (for
// an operator who reads or edits it while the daemon is stopped). A killed
// daemon's journal is folded in at the next start.
func (e *Engine) Checkpoint() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.journal == nil || (e.journal.Size() == 0 && !e.journal.Broken()) {
		return nil
	}
	return e.save(e.topo)
}

// save writes a snapshot of next, whose cubes have just been reconciled,
// and empties the journal it supersedes.
func (e *Engine) save(next *cube.Topology) error {
	parts := make(map[string]json.RawMessage, next.NumCubes())
	for name := range next.Cubes() {
		l := e.cubes[name]
		if l.json == nil { // entries changed since it was last encoded
			l.json, _ = l.c.MarshalJSON()
		}
		parts[name] = l.json
	}
	if err := state.SaveParts(e.cfg.StateFile, e.gen+1, parts, next.Attachments, e.slots, e.tenants.declared, e.endpoints); err != nil {
		return err
	}
	e.gen++
	e.snapSize = 0
	for _, p := range parts {
		e.snapSize += int64(len(p))
	}
	if e.journal == nil {
		j, err := state.OpenJournal(e.cfg.StateFile, e.gen)
		if err != nil {
			return err
		}
		e.journal = j
		return nil
	}
	if err := e.journal.Reset(e.gen); err != nil {
		// Harmless: the records left are of an older generation, which
		// loading skips.
		e.log.Warn("state journal not truncated", "err", err)
	}
	return nil
}

// sysInfo answers validation questions from the running system. Interfaces
// the current state already uses count as present even if they vanished (a
// deleted namespace must not block unrelated changes); new peers must exist.
type sysInfo struct {
	t        *cube.Topology
	peerOf   func(iface string) (string, bool) // in t (index.go)
	shaperOf func(iface string) (string, bool) // in t (index.go)
}

func (s *sysInfo) IfaceExists(name string) bool {
	if _, err := netlink.LinkByName(name); err == nil {
		return true
	}
	if _, ok := s.peerOf(name); ok {
		return true
	}
	_, attached := s.t.Attachments[name]
	return attached
}

func (e *Engine) sys() *sysInfo { return &sysInfo{t: e.topo, peerOf: e.PeerOf, shaperOf: e.ShaperOf} }

// IfacePeer answers validation from the index (cube.PeerIndex).
func (s *sysInfo) IfacePeer(iface string) (string, bool) { return s.peerOf(iface) }

// IfaceShaper answers validation from the index (cube.ShaperIndex).
func (s *sysInfo) IfaceShaper(iface string) (string, bool) { return s.shaperOf(iface) }

// usedIfaces are the interfaces a topology peers with or attaches to.
func usedIfaces(t *cube.Topology) map[string]bool {
	known := map[string]bool{}
	for _, c := range t.Cubes() {
		for _, p := range c.Ports {
			known[p.Peer] = true
		}
	}
	for p := range t.Attachments {
		known[p] = true
	}
	return known
}

// ifindex asks the kernel for one interface (net.InterfaceByName would
// list them all, for every peer of every change).
func ifindex(name string) (int, error) {
	l, err := netlink.LinkByName(name)
	if err != nil {
		return 0, cube.NotFound("peer", "no Linux interface named %q", name)
	}
	return l.Attrs().Index, nil
}
