// Package engine owns the desired state and makes the kernel match it. Every
// change is validated as a whole, applied by reconciling kernel objects with
// the new topology (rolled back by reconciling with the old one if any step
// fails), then persisted atomically.
package engine

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"os"
	"slices"
	"sync"

	"github.com/cilium/ebpf"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/datapath"
	"github.com/edgenf/edgenf/internal/state"
	"github.com/edgenf/edgenf/internal/tenant"
)

// Config locates the engine's kernel objects and state file.
type Config struct {
	PinRoot   string // bpffs directory of this daemon's objects
	StateFile string
	Logger    *slog.Logger
	// AdoptEmpty lets a state file that names nothing win over pinned
	// objects (which are then removed) instead of refusing to start.
	AdoptEmpty bool
	// Tenants declared in the token file: they are not stored in the
	// state, and the API cannot change them.
	Tenants []tenant.Tenant
	// DefaultQuota overrides tenant.Defaults for every tenant.
	DefaultQuota tenant.Quota
}

// Engine is the daemon's core. Safe for concurrent use.
type Engine struct {
	mu    sync.Mutex
	cfg   Config
	log   *slog.Logger
	dp    *datapath.Datapath
	topo  *cube.Topology
	slots map[string]uint32
	cubes map[string]*live
	// bySlot finds a cube by its panel slot (a punt names only that), in
	// O(1) however many cubes there are.
	bySlot   map[uint32]*live
	stubs    map[StubKey]*datapath.Stub
	stubHops map[StubKey]datapath.Hop
	// stubEntry is the cube whose direct entry runs on a stub's interface
	// (nil: the stub program).
	stubEntry map[StubKey]*datapath.Program
	specs     map[[32]byte]*ebpf.CollectionSpec
	slow      *slowPath
	// gen is the generation of the last snapshot of the state; journal
	// holds the entry changes made since.
	gen     uint64
	journal *state.Journal
	// snapSize is the size of the cubes in the last snapshot: the journal
	// is folded into a new one once it is as big (compactJournal).
	snapSize int64
	// applying is the topology a reconcile is making real; controllers
	// synced during it see it through their handle.
	applying *cube.Topology
	// rev counts the changes made (Revision).
	rev uint64
	// goesDown, while set, says which cubes a reconcile puts down
	// (restore.go) instead of failing when they cannot be made real: all
	// of them when restoring, those that were down when rolling back.
	goesDown func(name string) bool
	tenants  tenantState // tenants.go
}

// Revision counts the changes the engine has made (topology updates and
// entry changes, one each): a caller that derived something from the
// configuration knows it is still current while the revision is the same.
func (e *Engine) Revision() uint64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.rev
}

// current is the topology controllers see: the one being applied, if any.
func (e *Engine) current() *cube.Topology {
	if e.applying != nil {
		return e.applying
	}
	return e.topo
}

// live is a loaded cube.
type live struct {
	typ   *cube.Type
	dc    *datapath.Program
	ctl   cube.Controller
	c     *cube.Cube // as last synced
	attch string     // its attachment context when synced (attachContext)
	json  []byte     // c marshalled, for the state file
	obj   [32]byte   // hash of the loaded object (types with per-cube objects)
	hops  map[int]datapath.Hop
	flood map[int]int
	// slowCopies counts the copies the fast path could not make itself
	// and the daemon transmitted (copy.h, EDGENF_PUNT_TRANSMIT).
	slowCopies uint64
	// down, when not empty, is why the cube could not be restored: a
	// stand-in that drops everything runs in its place (restore.go).
	down string
}

// Open starts the engine: opens or re-adopts the pinned objects and restores
// the state file. Cubes and stubs already pinned keep running untouched.
func Open(cfg Config) (*Engine, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	dp, err := datapath.Open(cfg.PinRoot)
	if err != nil {
		return nil, err
	}
	f, err := state.Load(cfg.StateFile)
	if err != nil {
		dp.Close()
		return nil, err
	}
	for _, w := range f.Warnings {
		cfg.Logger.Warn(w)
	}
	if f.Empty() && !cfg.AdoptEmpty {
		if err := checkEmptyState(dp, cfg); err != nil {
			dp.Close()
			return nil, err
		}
	}
	e := &Engine{
		cfg: cfg, log: cfg.Logger, dp: dp,
		topo:      cube.NewTopology(),
		slots:     f.Slots,
		cubes:     map[string]*live{},
		bySlot:    map[uint32]*live{},
		stubs:     map[StubKey]*datapath.Stub{},
		stubHops:  map[StubKey]datapath.Hop{},
		stubEntry: map[StubKey]*datapath.Program{},
		specs:     map[[32]byte]*ebpf.CollectionSpec{},
	}
	if err := e.tenants.init(cfg, f.Tenants); err != nil {
		dp.Close()
		return nil, err
	}
	for _, c := range f.Topology.Cubes {
		c.Down = "" // never part of the state
	}
	invalid, err := invalidCubes(f.Topology)
	if err != nil {
		dp.Close()
		return nil, fmt.Errorf("state file %s: %w", cfg.StateFile, err)
	}
	// A cube that cannot be restored is put down; the others come up.
	// Services the restored cubes start wait until the state is restored.
	e.mu.Lock()
	fail := func(err error) (*Engine, error) {
		e.mu.Unlock()
		e.Close()
		return nil, err
	}
	e.goesDown = func(string) bool { return true }
	if err := e.assignSlots(f.Topology); err != nil {
		return fail(err)
	}
	for name, reason := range invalid {
		if err := e.putDown(f.Topology.Cubes[name], attachContext(f.Topology, name), reason); err != nil {
			return fail(err)
		}
	}
	err = e.reconcile(f.Topology, true)
	e.goesDown = nil
	if err != nil {
		return fail(fmt.Errorf("restore state: %w", err))
	}
	e.topo, e.gen = f.Topology, f.Gen
	// What the kernel holds beyond the state goes, before the snapshot
	// below drops the journal that says what that may be.
	e.removeResidues(f.Residues)
	if err := e.removeLeftovers(cfg.AdoptEmpty && f.Empty()); err != nil {
		return fail(fmt.Errorf("restore state: %w", err))
	}
	// A fresh snapshot folds the journal in and starts a new one.
	if err := e.save(e.topo); err != nil {
		return fail(fmt.Errorf("persist state: %w", err))
	}
	e.mu.Unlock()
	if e.slow, err = startSlowPath(e); err != nil {
		e.Close()
		return nil, err
	}
	return e, nil
}

// Close stops the engine and releases handles; the datapath keeps forwarding.
func (e *Engine) Close() {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.slow != nil {
		e.slow.stop()
		e.slow = nil
	}
	for _, l := range e.cubes {
		closeController(l)
		l.dc.Close()
	}
	for _, s := range e.stubs {
		s.Close()
	}
	e.cubes = map[string]*live{}
	e.bySlot = map[uint32]*live{}
	e.stubs = map[StubKey]*datapath.Stub{}
	if e.journal != nil {
		e.journal.Close()
		e.journal = nil
	}
	e.dp.Close()
}

// Destroy removes every kernel object of this engine and its state: all
// traffic through it stops. For tests and `edgenfd --destroy`.
func (e *Engine) Destroy() error {
	e.mu.Lock()
	err := e.reconcile(cube.NewTopology(), false)
	slow := e.slow
	e.mu.Unlock()
	e.Close()
	if slow != nil {
		slow.inj.DeleteLink()
	}
	if rerr := e.dp.Destroy(); err == nil {
		err = rerr
	}
	return err
}

// DestroyAt removes every kernel object pinned under cfg.PinRoot, the
// injection interface and the state file, without restoring anything first
// (peered interfaces may be gone).
func DestroyAt(cfg Config) error {
	dp, err := datapath.Open(cfg.PinRoot)
	if err != nil {
		return err
	}
	dp.DeleteInjector()
	err = dp.Destroy()
	for _, f := range []string{cfg.StateFile, state.JournalPath(cfg.StateFile)} {
		if rerr := os.Remove(f); rerr != nil && !errors.Is(rerr, os.ErrNotExist) && err == nil {
			err = rerr
		}
	}
	return err
}

// Every operation on one cube takes who asks: a cube its actor does not
// own is answered as if it did not exist, checked under the engine's lock
// (the cube cannot change hands between the check and the operation).

// owned returns a cube of the applied state if who owns it.
func (e *Engine) owned(who tenant.Actor, name string) (*cube.Cube, bool) {
	c, ok := e.topo.Cubes[name]
	return c, ok && who.Owns(c)
}

// live returns a loaded cube if who owns it.
func (e *Engine) live(who tenant.Actor, name string) (*live, error) {
	l, ok := e.cubes[name]
	if !ok || !who.Owns(e.topo.Cubes[name]) {
		return nil, noCube(name)
	}
	return l, nil
}

// Cube returns a copy of one cube of the applied state.
func (e *Engine) Cube(who tenant.Actor, name string) (*cube.Cube, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	c, ok := e.owned(who, name)
	if !ok {
		return nil, false
	}
	out := c.Clone()
	e.markDown(out)
	return out, true
}

// markDown tells, in a copy of a cube, whether it is down and why.
func (e *Engine) markDown(c *cube.Cube) {
	if l := e.cubes[c.Name]; l != nil {
		c.Down = l.down
	}
}

// CubeHeader returns a copy of one cube of the applied state without its
// table entries: cheap whatever the size of its tables.
func (e *Engine) CubeHeader(who tenant.Actor, name string) (*cube.Cube, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	c, ok := e.owned(who, name)
	if !ok {
		return nil, false
	}
	h := *c
	h.Tables = nil
	out := h.Clone()
	e.markDown(out)
	return out, true
}

// Entries returns the entries of one table of a cube, ordered by key.
func (e *Engine) Entries(who tenant.Actor, name, table string) []json.RawMessage {
	e.mu.Lock()
	defer e.mu.Unlock()
	c, ok := e.owned(who, name)
	if !ok {
		return nil
	}
	rows := c.Tables[table]
	out := make([]json.RawMessage, 0, len(rows))
	for _, k := range slices.Sorted(maps.Keys(rows)) {
		out = append(out, rows[k])
	}
	return out
}

// Entry returns one table entry of a cube.
func (e *Engine) Entry(who tenant.Actor, name, table, key string) (json.RawMessage, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	c, ok := e.owned(who, name)
	if !ok {
		return nil, false
	}
	raw, ok := c.Tables[table][key]
	return raw, ok
}

// Topology returns a copy of the applied desired state.
func (e *Engine) Topology() *cube.Topology {
	e.mu.Lock()
	defer e.mu.Unlock()
	t := e.topo.Clone()
	for _, c := range t.Cubes {
		e.markDown(c)
	}
	return t
}

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
		c := t.Cubes[name]
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
	if err := next.ValidateChange(e.topo, e.sys()); err != nil {
		return nil, err
	}
	changes := Diff(e.topo, next)
	if dryRun || len(changes) == 0 {
		return changes, nil
	}
	return changes, e.apply(next)
}

// commit checks next is a change who may make, validates it, checks who's
// quotas and applies it.
func (e *Engine) commit(who tenant.Actor, next *cube.Topology) error {
	if err := e.scope(who).Change(e.topo, next); err != nil {
		return err
	}
	if err := next.ValidateChange(e.topo, e.sys()); err != nil {
		return err
	}
	if err := e.checkQuota(who, next); err != nil {
		return err
	}
	return e.apply(next)
}

// apply reconciles the kernel with a validated topology and persists it. On
// any failure the kernel is reconciled back and nothing changes.
func (e *Engine) apply(next *cube.Topology) error {
	prev, prevSlots := e.topo, cloneSlots(e.slots)
	// Entries the kernel gets before the snapshot below are journalled
	// first: a restart in between removes them (restore.go).
	if err := e.journalIntents(prev, next); err != nil {
		return fmt.Errorf("persist state: %w", err)
	}
	wasDown := map[string]bool{}
	for name, l := range e.cubes {
		if l.down != "" {
			wasDown[name] = true
		}
	}
	if err := e.reconcile(next, false); err != nil {
		// cubes that were down go down again rather than fail the rollback
		e.goesDown = func(name string) bool { return wasDown[name] }
		if rerr := e.reconcile(prev, false); rerr != nil {
			e.log.Error("rollback failed; kernel state may differ from the desired state", "err", rerr)
		}
		e.goesDown = nil
		e.slots = prevSlots
		return err
	}
	crashPoint("topology-applied")
	if err := e.save(next); err != nil {
		e.reconcile(prev, false)
		e.slots = prevSlots
		return fmt.Errorf("persist state: %w", err)
	}
	e.topo = next
	e.rev++
	e.tenants.entries = nil // counted again when next needed
	return nil
}

// save writes a snapshot of next, whose cubes have just been reconciled,
// and empties the journal it supersedes.
func (e *Engine) save(next *cube.Topology) error {
	parts := make(map[string]json.RawMessage, len(next.Cubes))
	for name := range next.Cubes {
		l := e.cubes[name]
		if l.json == nil { // entries changed since it was last encoded
			l.json, _ = l.c.MarshalJSON()
		}
		parts[name] = l.json
	}
	if err := state.SaveParts(e.cfg.StateFile, e.gen+1, parts, next.Attachments, e.slots, e.tenants.declared); err != nil {
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

func cloneSlots(m map[string]uint32) map[string]uint32 {
	out := make(map[string]uint32, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// sysInfo answers validation questions from the running system. Interfaces
// the current state already uses count as present even if they vanished (a
// deleted namespace must not block unrelated changes); new peers must exist.
type sysInfo struct{ known map[string]bool }

func (s sysInfo) IfaceExists(name string) bool {
	if s.known[name] {
		return true
	}
	_, err := net.InterfaceByName(name)
	return err == nil
}

func (e *Engine) sys() sysInfo {
	known := map[string]bool{}
	for _, c := range e.topo.Cubes {
		for _, p := range c.Ports {
			known[p.Peer] = true
		}
	}
	for p := range e.topo.Attachments {
		known[p] = true
	}
	return sysInfo{known}
}

func ifindex(name string) (int, error) {
	i, err := net.InterfaceByName(name)
	if err != nil {
		return 0, cube.NotFound("peer", "no Linux interface named %q", name)
	}
	return i.Index, nil
}

// reconcile makes the kernel objects match desired. It is idempotent, so
// reconciling with the previous topology undoes a failed change. With adopt,
// pinned cubes of an earlier daemon are re-opened instead of reloaded.
func (e *Engine) reconcile(desired *cube.Topology, adopt bool) error {
	if err := e.assignSlots(desired); err != nil {
		return err
	}
	pl := &planner{t: desired, slots: e.slots, ifindex: ifindex}
	p, err := pl.makePlan()
	if err != nil {
		return err
	}
	for _, name := range pl.missing {
		e.log.Warn("peered interface does not exist; its traffic is dropped until it is back", "interface", name)
	}
	e.applying = desired
	defer func() { e.applying = nil }()
	for _, name := range desired.CubeNames() {
		c, attch := desired.Cubes[name], attachContext(desired, name)
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
	if err := e.reconcileStubs(p); err != nil {
		return err
	}
	if err := e.ensureRedirectTargets(p); err != nil {
		return err
	}
	for name, l := range e.cubes {
		if _, keep := desired.Cubes[name]; !keep {
			if err := l.dc.Unload(); err != nil {
				return fmt.Errorf("unload cube %s: %w", name, err)
			}
			e.forget(name)
		}
	}
	for name := range e.slots {
		if _, keep := desired.Cubes[name]; !keep {
			delete(e.slots, name)
		}
	}
	return nil
}

// assignSlots gives every new cube the lowest free panel slot. A slot is
// free only once its cube is unloaded: a cube this change deletes keeps
// running until the end of the reconcile (its traffic is moved away first),
// and unloading it empties its slot and removes its direct entries' source,
// so a new cube must not share the slot in the meantime.
func (e *Engine) assignSlots(t *cube.Topology) error {
	used := map[uint32]bool{}
	for name, s := range e.slots {
		if _, ok := t.Cubes[name]; ok {
			used[s] = true
		}
	}
	for _, l := range e.cubes {
		used[l.dc.Slot] = true
	}
	next := uint32(0)
	for _, name := range t.CubeNames() {
		if _, ok := e.slots[name]; ok {
			continue
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
		e.bySlot[l.dc.Slot] = l
		if svc, ok := l.ctl.(cube.Service); ok {
			svc.Start(&store{e: e, l: l})
		}
	} else if err := e.reprogram(l, c); err != nil {
		return err
	}
	if err := e.syncCube(l, c, attch); err != nil {
		return err
	}
	l.c, l.attch = c.Clone(), attch
	l.json, _ = c.MarshalJSON() // direct: json.Marshal would re-scan every entry
	return nil
}

// forget drops an unloaded cube.
func (e *Engine) forget(name string) {
	l := e.cubes[name]
	if l == nil {
		return
	}
	closeController(l)
	delete(e.bySlot, l.dc.Slot)
	delete(e.cubes, name)
}

// closeController lets a cube's controller stop its goroutines and release
// what it holds beyond the cube's maps, if it does.
func closeController(l *live) {
	if cl, ok := l.ctl.(cube.Closer); ok {
		cl.Close()
	}
}

func (e *Engine) loadCube(c *cube.Cube, adopt bool) (*live, error) {
	typ, err := cube.Lookup(c.Type)
	if err != nil {
		return nil, err
	}
	obj, err := typ.ObjectOf(c)
	if err != nil {
		return nil, err
	}
	spec, err := e.spec(typ, obj)
	if err != nil {
		return nil, err
	}
	l := &live{typ: typ, ctl: typ.New(), hops: map[int]datapath.Hop{}, flood: map[int]int{}, obj: sha256.Sum256(obj)}
	slot := e.slots[c.Name]
	if adopt {
		if l.dc, err = e.dp.AdoptCube(c.Name, c.Hook, slot, spec); err == nil {
			// what the kernel has, so that what the state no longer
			// names is removed, not left in place
			if hops, flood, err := l.dc.PortState(); err == nil {
				l.hops, l.flood = hops, flood
			}
			return l, nil
		}
		e.log.Info("no pinned program to adopt, loading", "cube", c.Name, "reason", err)
	}
	if l.dc, err = e.dp.ReloadCube(c.Name, c.Hook, slot, spec, datapath.LoadOptions{Reprogram: typ.ObjectFor != nil}); err != nil {
		return nil, explain(typ, c, err)
	}
	return l, nil
}

// spec parses an object. The objects of NF types without per-cube objects
// are parsed once and shared by all their cubes (10,000 cubes, one spec).
func (e *Engine) spec(typ *cube.Type, obj []byte) (*ebpf.CollectionSpec, error) {
	if typ.ObjectFor != nil {
		return datapath.LoadSpec(obj)
	}
	sum := sha256.Sum256(obj)
	if s, ok := e.specs[sum]; ok {
		return s, nil
	}
	s, err := datapath.LoadSpec(obj)
	if err != nil {
		return nil, err
	}
	e.specs[sum] = s
	return s, nil
}

// explain lets the NF type put a load failure in its own terms.
func explain(t *cube.Type, c *cube.Cube, err error) error {
	if t.ExplainLoadError != nil {
		return t.ExplainLoadError(c, err)
	}
	return err
}

// reprogram swaps a cube's program when its settings select another object
// (a P4 cube given a new program): one panel update, maps of unchanged
// layout kept.
func (e *Engine) reprogram(l *live, c *cube.Cube) error {
	if l.typ.ObjectFor == nil {
		return nil
	}
	obj, err := l.typ.ObjectOf(c)
	if err != nil {
		return err
	}
	sum := sha256.Sum256(obj)
	if sum == l.obj {
		return nil
	}
	spec, err := datapath.LoadSpec(obj)
	if err != nil {
		return err
	}
	dc, err := e.dp.ReloadCube(c.Name, c.Hook, l.dc.Slot, spec, datapath.LoadOptions{Reprogram: true})
	if err != nil {
		return explain(l.typ, c, err)
	}
	l.dc.Close()
	l.dc, l.obj = dc, sum
	l.hops, l.flood = map[int]datapath.Hop{}, map[int]int{} // new maps: rewrite
	return nil
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
			l.hops[idx] = h
		}
		for idx := range l.hops {
			if _, ok := hops[idx]; !ok {
				if err := l.dc.SetHop(uint32(idx), datapath.Hop{}); err != nil {
					return err
				}
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
func (e *Engine) ensureRedirectTargets(p *plan) error {
	for iface := range p.redirects {
		idx, err := ifindex(iface)
		if err != nil {
			continue // reported as missing by the planner
		}
		if err := e.dp.EnsureRedirectTarget(idx); err != nil {
			return err
		}
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

func (e *Engine) reconcileStubs(p *plan) error {
	first := e.entryCubes()
	for k, h := range p.stubs {
		direct := first[k.Hook][h.First()]
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
		if k.Hook == datapath.XDP {
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
		if ok {
			s.Close()
		}
		e.stubs[k], e.stubHops[k], e.stubEntry[k] = ns, h, direct
	}
	for k, s := range e.stubs {
		if _, keep := p.stubs[k]; keep {
			continue
		}
		if err := e.dp.DetachStub(k.Iface, k.Hook, k.Dir); err != nil {
			return err
		}
		s.Close()
		delete(e.stubs, k)
		delete(e.stubHops, k)
		delete(e.stubEntry, k)
	}
	return nil
}

// entryCubes indexes the loaded cubes that have a direct entry by hook and
// panel slot.
func (e *Engine) entryCubes() map[datapath.Hook]map[uint32]*datapath.Program {
	out := map[datapath.Hook]map[uint32]*datapath.Program{datapath.XDP: {}, datapath.TC: {}}
	for _, l := range e.cubes {
		if l.dc.HasEntry() {
			out[l.dc.Hook][l.dc.Slot] = l.dc
		}
	}
	return out
}

// noCube is the error for operations on a missing cube.
func noCube(name string) error {
	return cube.NotFound("cube", "no cube named %q", name)
}
