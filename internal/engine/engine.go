// Package engine owns the desired state and makes the kernel match it. Every
// change is validated as a whole, applied by reconciling kernel objects with
// the new topology (rolled back by reconciling with the old one if any step
// fails), then persisted atomically.
package engine

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"

	"github.com/cilium/ebpf"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/datapath"
	"github.com/edgenf/edgenf/internal/endpoint"
	"github.com/edgenf/edgenf/internal/privdir"
	"github.com/edgenf/edgenf/internal/ratelimit"
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
	// PuntRate and PuntBurst are the punt budget of each of the
	// administrator's cubes (a tenant's are its punts_per_second and
	// punt_burst quotas); PuntRate 0 is no limit.
	PuntRate, PuntBurst int64
	// Admit, when set, judges every change after validation and before
	// it is made (the cost estimate against the core budget, edgenfd
	// -core-budget-ns): an error refuses the change, and a dry run.
	Admit func(AdmitChange) error
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
	// O(1) however many cubes there are; sinks are the same by slot for
	// the punt reader, which reads them without the lock (punts.go).
	bySlot map[uint32]*live
	sinks  []atomic.Pointer[puntSink]
	// punting are the cubes whose punt workers asked for views of them
	// (punts.go).
	punting  map[*live]bool
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
	// rev counts the changes made (Revision); topoRev those of the
	// topology (AdmitChange.Rev).
	rev, topoRev uint64
	// lastChange is what the last topology change touched (dirty.go).
	lastChange *changeSet
	// spare is the working copy of topo for the next change (cow.go).
	spare *cube.Topology
	// checkEdits: changes are checked to edit their working copy only
	// through the copy-on-write accessors, against witness, a deep copy
	// of topo's cubes (witnessStale: those to take again) (cow.go).
	checkEdits   bool
	witness      map[string]*cube.Cube
	witnessStale map[string]bool
	// goesDown, while set, says which cubes a reconcile puts down
	// (restore.go) instead of failing when they cannot be made real: all
	// of them when restoring, those that were down when rolling back.
	goesDown func(name string) bool
	tenants  tenantState // tenants.go
	// injects are the tenants' injects_per_second buckets (budgets.go).
	injects *ratelimit.Buckets
	// endpoints are the workloads plugged into tenants' cubes, by name
	// (endpoints.go).
	endpoints map[string]*endpoint.Endpoint
	// chains are topo's slices that lead straight into cube ports
	// (slicechains.go).
	chains *chainIndex
	// hopWrites counts the hops written into the kernel (ports' and
	// slices' chains'): a test's proof that a change writes what it
	// changed.
	hopWrites uint64
	// redirectReady are the interfaces (by index) prepared to receive
	// XDP redirects (ensureRedirectTargets), until a stub is detached.
	redirectReady map[int]bool
	// started is what the start adopted and reloaded (upgrade.go).
	started StartReport
	// index indexes topo for requests and quotas (index.go), epIndex the
	// endpoints (endpointindex.go).
	index   topoIndex
	epIndex endpointIndex

	// prepared are the interface programs the change being applied put
	// in place outside the lock (stubprep.go).
	prepared map[StubKey]bool
	// links follows the peered interfaces' link events, and ifaceDown
	// says why the peerings of interfaces that are missing are down, by
	// name (links.go).
	links     *linkWatch
	ifaceDown map[string]string
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
	// and the daemon transmitted (copy.h, EDGENF_PUNT_TRANSMIT), on the
	// cube's punt worker (punts.go).
	slowCopies atomic.Uint64
	// dups are duplicates of dc's maps for sweeps (sweep.go).
	dups *dupMaps
	// down, when not empty, is why the cube could not be restored: a
	// stand-in that drops everything runs in its place (restore.go).
	down string
	// readers counts the calls into the controller in flight without the
	// engine's lock (views, actions: controllers.go), which read c: while
	// there are any, or a punt worker's view holds c (sharesCube), an
	// entry change copies the table it changes instead of writing into c
	// (entries.go). Guarded by e.mu.
	readers int
	// gone is set when the cube is unloaded or the engine closes: calls
	// made without the engine's lock then stop.
	gone atomic.Bool
	// sink is where the punt reader hands the cube's punts (punts.go).
	sink *puntSink
	// punt is the punt budget last written into the cube's map (puntSet:
	// one was written into these maps) (budgets.go).
	punt    datapath.PuntBudget
	puntSet bool
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
		punting:   map[*live]bool{},
		sinks:     make([]atomic.Pointer[puntSink], datapath.MaxSlots),
		stubs:     map[StubKey]*datapath.Stub{},
		stubHops:  map[StubKey]datapath.Hop{},
		stubEntry: map[StubKey]*datapath.Program{},
		specs:     map[[32]byte]*ebpf.CollectionSpec{},

		checkEdits:    checkEditsOn(),
		witnessStale:  map[string]bool{},
		chains:        newChainIndex(),
		redirectReady: map[int]bool{},
		ifaceDown:     map[string]string{},
		injects:       ratelimit.New(nil),
	}
	if err := e.tenants.init(cfg, f.Tenants); err != nil {
		dp.Close()
		return nil, err
	}
	for _, c := range f.Topology.Cubes() {
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
	e.logRenewed() // upgrade.go
	e.goesDown = func(string) bool { return true }
	if err := e.assignSlots(f.Topology, f.Topology.CubeNames()); err != nil {
		return fail(err)
	}
	for name, reason := range invalid {
		if err := e.putDown(f.Topology.Lookup(name), attachContext(f.Topology, name), reason); err != nil {
			return fail(err)
		}
	}
	err = e.reconcile(f.Topology, true)
	e.goesDown = nil
	if err != nil {
		return fail(fmt.Errorf("restore state: %w", err))
	}
	e.topo, e.gen = f.Topology, f.Gen
	e.rebuildIndex(e.topo) // counted from the restored state, its down cubes known
	allChains(e.topo).applyTo(e.chains)
	e.restoreEndpoints(f.Endpoints)
	// What the kernel holds beyond the state goes, before the snapshot
	// below drops the journal that says what that may be.
	e.removeResidues(f.Residues)
	if err := e.removeLeftovers(cfg.AdoptEmpty && f.Empty()); err != nil {
		return fail(fmt.Errorf("restore state: %w", err))
	}
	// every interface runs this daemon's programs: an earlier release's
	// framework maps can go (datapath/framework.go)
	if err := e.dp.DropRenewed(); err != nil {
		e.log.Warn("an earlier release's framework maps are still pinned", "bpffs", cfg.PinRoot, "err", err)
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
	e.mu.Lock()
	e.links = startLinkWatch(e)
	e.mu.Unlock()
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
	if e.links != nil {
		e.links.stop()
		e.links = nil
	}
	for _, l := range e.cubes {
		retire(l)
		l.sink.dropView()
		dropDups(l)
		l.dc.Close()
	}
	clear(e.punting)
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

// noCube is the error for operations on a missing cube.
func noCube(name string) error {
	return cube.NotFound("cube", "no cube named %q", name)
}
