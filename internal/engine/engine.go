// Package engine owns the desired state and makes the kernel match it. Every
// change is validated as a whole, applied by reconciling kernel objects with
// the new topology (rolled back by reconciling with the old one if any step
// fails), then persisted atomically.
package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/cilium/ebpf"
	"github.com/vishvananda/netlink"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/datapath"
	"github.com/edgenf/edgenf/internal/endpoint"
	"github.com/edgenf/edgenf/internal/privdir"
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
	// Admit, when set, judges every change after validation and before
	// it is made (the cost estimate against the core budget, edgenfd
	// -core-budget-ns): an error refuses the change, and a dry run.
	Admit func(prev, next *cube.Topology) error
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
	pio       *packetIO
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
	// lastChange is what the last topology change touched (dirty.go).
	lastChange *changeSet
	// spare is a deep copy of topo for the next change to work on, and
	// spareStale the cubes of topo changed in place since (dirty.go).
	spare      *cube.Topology
	spareStale map[string]bool
	// goesDown, while set, says which cubes a reconcile puts down
	// (restore.go) instead of failing when they cannot be made real: all
	// of them when restoring, those that were down when rolling back.
	goesDown func(name string) bool
	tenants  tenantState // tenants.go
	// endpoints are the workloads plugged into tenants' cubes, by name
	// (endpoints.go).
	endpoints map[string]*endpoint.Endpoint
	// slicers are the cubes of topo whose slices may lead straight into
	// cube ports (slicechains.go).
	slicers map[string]bool
	// redirectReady are the interfaces (by index) prepared to receive
	// XDP redirects (ensureRedirectTargets), until a stub is detached.
	redirectReady map[int]bool
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
	// chainHops are the hops into its slices' chains last written, by
	// slice id (slicechains.go).
	chainHops map[int]datapath.Hop
	// slowCopies counts the copies the fast path could not make itself
	// and the daemon transmitted (copy.h, EDGENF_PUNT_TRANSMIT).
	slowCopies uint64
	// dups are duplicates of dc's maps for sweeps (sweep.go).
	dups *dupMaps
	// down, when not empty, is why the cube could not be restored: a
	// stand-in that drops everything runs in its place (restore.go).
	down string
	// readers counts the calls into the controller in flight without the
	// engine's lock (punts, actions: controllers.go), which read c: while
	// there are any, an entry change copies the table it changes instead
	// of writing into c (entries.go). Guarded by e.mu.
	readers int
	// gone is set when the cube is unloaded or the engine closes: calls
	// made without the engine's lock then stop.
	gone atomic.Bool
	// punts queue the punted packets for the cube's own worker (nil until
	// the first), so that a slow handler delays only its own cube's;
	// puntDrops counts those a full queue refused.
	punts     chan cube.Punt
	puntDrops uint64
}

// checkStateFiles refuses a state file (or journal) another user could
// replace or change, and the daemon would trust at its next start.
func checkStateFiles(path string) error {
	if err := privdir.Ensure(filepath.Dir(path)); err != nil {
		return fmt.Errorf("state: %w", err)
	}
	for _, f := range []string{path, state.JournalPath(path)} {
		if err := privdir.CheckFile(f); err != nil {
			return fmt.Errorf("state: %w", err)
		}
	}
	return nil
}

// Open starts the engine: opens or re-adopts the pinned objects and restores
// the state file. Cubes and stubs already pinned keep running untouched.
func Open(cfg Config) (*Engine, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if err := checkStateFiles(cfg.StateFile); err != nil {
		return nil, err
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

		spareStale:    map[string]bool{},
		slicers:       map[string]bool{},
		redirectReady: map[int]bool{},
	}
	if err := e.tenants.init(cfg, f.Tenants); err != nil {
		dp.Close()
		return nil, err
	}
	for _, c := range f.Topology.Cubes {
		c.Down = "" // never part of the state
	}
	if err := f.Topology.Upgrade(); err != nil {
		dp.Close()
		return nil, fmt.Errorf("state file %s: %w", cfg.StateFile, err)
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
	if err := e.assignSlots(f.Topology, f.Topology.CubeNames()); err != nil {
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
	for name, c := range e.topo.Cubes {
		if isSlicer(c) {
			e.slicers[name] = true
		}
	}
	e.restoreEndpoints(f.Endpoints)
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
	if e.pio, err = startPacketIO(e); err != nil {
		e.Close()
		return nil, err
	}
	return e, nil
}

// Close stops the engine and releases handles; the datapath keeps forwarding.
func (e *Engine) Close() {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.pio != nil {
		e.pio.stop()
		e.pio = nil
	}
	for _, l := range e.cubes {
		retire(l)
		dropDups(l)
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
// It may follow Close: the injection veth is found by its name, not through
// the packet I/O Close stopped (which left it behind).
func (e *Engine) Destroy() error {
	e.mu.Lock()
	err := e.reconcile(cube.NewTopology(), false)
	e.mu.Unlock()
	e.Close()
	e.dp.DeleteInjector()
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

// running returns a loaded cube who owns whose program runs (not down).
func (e *Engine) running(who tenant.Actor, name string) (*live, error) {
	l, err := e.live(who, name)
	if err != nil {
		return nil, err
	}
	if l.down != "" {
		return nil, downErr(l)
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
	keepRuntime(e.topo, next)
	if err := e.keepEndpoints(next); err != nil {
		return nil, err
	}
	changed := next.ChangedSince(e.topo)
	if err := e.validate(next, changed); err != nil {
		return nil, err
	}
	changes := Diff(e.topo, next)
	if len(changes) == 0 {
		return changes, nil
	}
	if err := e.admit(e.topo, next); err != nil {
		return nil, err
	}
	if dryRun {
		return changes, nil
	}
	return changes, e.applyChange(next, changed, false)
}

// keepRuntime carries the runtime state of the cubes a declarative apply
// keeps (same name and type) over to the new state: a document does not
// hold it (a P4Runtime controller's cookie outlives an apply).
func keepRuntime(prev, next *cube.Topology) {
	for name, c := range next.Cubes {
		old := prev.Cubes[name]
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

// admit runs the admission check, if there is one.
func (e *Engine) admit(prev, next *cube.Topology) error {
	if e.cfg.Admit == nil {
		return nil
	}
	return e.cfg.Admit(prev, next)
}

// commit checks next, a working copy whose changed cubes are known
// (ChangedSince), is a change who may make, validates it, checks who's
// quotas and applies it.
func (e *Engine) commit(who tenant.Actor, next *cube.Topology, changed []string) error {
	if err := e.scope(who).Change(e.topo, next); err != nil {
		return err
	}
	if err := e.checkEndpoints(next); err != nil {
		return err
	}
	if err := e.validate(next, changed); err != nil {
		return err
	}
	if err := e.checkNames(who, next, changed); err != nil {
		return err
	}
	if err := e.checkQuota(who, next); err != nil {
		return err
	}
	if err := e.admit(e.topo, next); err != nil {
		return err
	}
	return e.applyChange(next, changed, false)
}

// applyChange reconciles the kernel with a validated topology, a working
// copy whose changed cubes are known (ChangedSince), and persists it. On
// any failure the kernel is reconciled back and nothing changes. Only what
// the change touches is reconciled and journalled (dirty.go); with
// snapshot the state is written whole (the change also altered what the
// journal does not hold: endpoints).
func (e *Engine) applyChange(next *cube.Topology, changed []string, snapshot bool) error {
	prev := e.topo
	cs := changes(prev, next, changed, e.chainsOf(next, changed))
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
	if err := e.journalIntents(prev, next, cs); err != nil {
		return fmt.Errorf("persist state: %w", err)
	}
	wasDown := map[string]bool{}
	for name, l := range e.cubes {
		if l.down != "" {
			wasDown[name] = true
		}
	}
	if err := e.reconcileSet(next, false, cs); err != nil {
		// cubes that were down go down again rather than fail the rollback
		e.goesDown = func(name string) bool { return wasDown[name] }
		if rerr := e.reconcile(prev, false); rerr != nil {
			e.log.Error("rollback failed; kernel state may differ from the desired state", "err", rerr)
		}
		e.goesDown = nil
		restoreSlots()
		return err
	}
	crashPoint("topology-applied")
	if err := e.persist(next, cs, snapshot); err != nil {
		e.reconcile(prev, false)
		restoreSlots()
		return fmt.Errorf("persist state: %w", err)
	}
	e.topo = next
	e.noteSlicers(next, cs)
	e.keepSpare(prev, next, cs)
	e.rev++
	e.tenants.entries = nil // counted again when next needed
	e.compactJournal()
	return nil
}

// persist makes a change durable: the cubes and attachment points it
// changed appended to the journal as one transaction (a crash keeps all of
// it or none), or a snapshot when one is due or the journal cannot take it.
func (e *Engine) persist(next *cube.Topology, cs *changeSet, snapshot bool) error {
	if snapshot || e.journal == nil || e.journal.Broken() {
		return e.save(next)
	}
	var recs []state.Record
	for _, name := range sorted(cs.changed) {
		if l := e.cubes[name]; l != nil && next.Cubes[name] != nil {
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
	parts := make(map[string]json.RawMessage, len(next.Cubes))
	for name := range next.Cubes {
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
	t     *cube.Topology
	known map[string]bool // the interfaces t uses, when first needed
}

func (s *sysInfo) IfaceExists(name string) bool {
	if _, err := netlink.LinkByName(name); err == nil {
		return true
	}
	if s.known == nil {
		s.known = usedIfaces(s.t)
	}
	return s.known[name]
}

func (e *Engine) sys() *sysInfo { return &sysInfo{t: e.topo} }

// usedIfaces are the interfaces a topology peers with or attaches to.
func usedIfaces(t *cube.Topology) map[string]bool {
	known := map[string]bool{}
	for _, c := range t.Cubes {
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

// noCube is the error for operations on a missing cube.
func noCube(name string) error {
	return cube.NotFound("cube", "no cube named %q", name)
}
