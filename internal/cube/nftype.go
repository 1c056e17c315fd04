package cube

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"net"
	"net/netip"
	"reflect"
	"sort"
	"sync"
	"time"

	"github.com/cilium/ebpf"
	"github.com/edgenf/edgenf/internal/datapath"
)

// Type describes an NF type once; the daemon derives its REST resources, CLI
// access, OpenAPI schema and validation from it.
type Type struct {
	Name        string
	Description string
	// Transparent types have no ports; they are attached to a cube port or
	// an interface and can only pass, drop or punt.
	Transparent bool
	// Hooks the type can run at; the first is the default.
	Hooks []datapath.Hook
	// Object returns the compiled eBPF object for a hook: HookObjects
	// serves an NF's embedded bpf/<type>_<hook>.o.
	Object func(hook datapath.Hook) ([]byte, error)
	// ObjectFor, when set, is used instead of Object: the object depends on
	// the cube's settings (a P4 cube's program). When it changes, the engine
	// swaps the cube's program in place, keeping the maps whose layout did
	// not change.
	ObjectFor func(c *Cube) ([]byte, error)
	// SizeMaps, when set, sizes the maps of the type's parsed object for
	// this machine and cube c before it is loaded (SpecOf): a plain array
	// with a row per possible CPU, arrays as large as c's settings ask,
	// the load-time constants that bound indexes into them. The sizes must
	// depend on the machine and c's persisted settings only, so that a
	// restarted daemon finds the pinned maps compatible; the kernel memory
	// a tenant's quota counts is the sized object's.
	SizeMaps func(c *Cube, spec *ebpf.CollectionSpec) error
	// ExplainLoadError, when set, rewrites a load failure in the terms of
	// the cube's source (a verifier rejection as a P4 line).
	ExplainLoadError func(c *Cube, err error) error
	// Prepare, when set, does the slow work a cube's settings need (compile
	// a P4 program) before the change is made: the engine calls it without
	// holding its lock, with the time limit of the requester, and calls
	// release once the change is made or refused.
	Prepare func(ctx context.Context, c *Cube) (release func(), err error)
	// Config is a pointer to the zero settings value (nil: no settings).
	// A value implementing Validator is validated against the cube; one
	// implementing InterfaceUser names the interfaces the settings use.
	Config any
	// PortConfig is a pointer to the zero per-port settings value, if any.
	PortConfig any
	// PortAddresses, when set, is the format (internal/schema) of its
	// ports' addresses, narrower than any port's.
	PortAddresses string
	// PortNames, when set, are the only names its ports may have (a upf's
	// n3, n6, n9); PortIndexMax, when set, the highest index a port may
	// have (below the framework's).
	PortNames    []string
	PortIndexMax int
	// Tables are the type's collections of entries.
	Tables []Table
	// Views are read-only data read from the kernel (learned tables,
	// sessions, counters).
	Views []View
	// Slices, when set, lists the slices a cube splits its entry point's
	// traffic into (a slicer): the cubes reached from a slice's port are
	// that slice's (telemetry labels them with it), and the chains through
	// it are admitted against the slice's budget (internal/estimate).
	Slices func(c *Cube) ([]Slice, error)
	// SliceChains, when set, lists the slices of the cube that lead
	// straight into a cube port of their chain, with no port of the cube
	// between (a slicer's slices beyond its ports): the engine checks each
	// (the entry exists, is unpeered, is the slice's tenant's, at the
	// cube's hook), plans the entry port's hop back into the cube on
	// virtual port datapath.MaxPorts+ID, and writes the hop into each
	// entry into the cube's datapath.MapChainHops, by ID. A slice's chain
	// is read from its own entry alone: a change of a few entries asks for
	// theirs only, with the cube holding just them (Cube.WithRows).
	SliceChains func(c *Cube) []SliceChain
	// Actions are operations on a cube (flush a table, ...).
	Actions []Action
	// New makes the control plane of one cube.
	New func() Controller
	// Plug, when set, readies port (just added for a workload, a pod, whose
	// addresses are addrs) the way the type routes: it sets what the cube
	// needs to reach the workload and returns the gateways the workload
	// routes through (a router: a link-local address per port, a host
	// route per workload address). gateways, when given, are the ones the
	// workload was given before (a declarative apply re-plugs it): Plug
	// keeps them or fails. Without Plug a workload is on the cube's layer-2
	// segment. Unplug removes what Plug added, but the port.
	Plug   func(c *Cube, port string, addrs []netip.Prefix, gateways []netip.Addr) ([]netip.Addr, error)
	Unplug func(c *Cube, port string)
	// Upgrade, when set, rewrites a cube of an older state file or
	// document into today's form before it is validated (settings keys
	// that moved to the cube's Runtime).
	Upgrade func(c *Cube) error
}

// SliceChain is one slice that leads straight into a cube port.
type SliceChain struct {
	Slice  string
	ID     int    // its index in the cube's datapath.MapChainHops
	Tenant string // its owner: the entry must be this tenant's cube
	Entry  string // "cube:port", the first cube of the slice's chain
}

// Table is a keyed collection of entries of one Go type.
type Table struct {
	Name string
	Doc  string
	// Item is a pointer to the zero entry value; an entry implementing
	// Validator is validated against the cube.
	Item any
	// Key derives the entry's key (its identity) from a decoded entry.
	Key func(item any) string
	// Max bounds the number of entries (0: no bound); MaxOf, when set,
	// bounds those of cube c (its settings size its maps), never above Max.
	Max   int
	MaxOf func(c *Cube) int
}

// Limit is how many entries cube c may hold in the table (0: no bound).
func (tb *Table) Limit(c *Cube) int {
	if tb.MaxOf == nil {
		return tb.Max
	}
	if n := tb.MaxOf(c); n > 0 && (tb.Max == 0 || n < tb.Max) {
		return n
	}
	return tb.Max
}

// View is read-only data of a cube.
type View struct {
	Name string
	Doc  string
	Item any // pointer to a zero element, for the schema
	// Object: List returns one Item, not a list of them.
	Object bool
	// Unlocked: List walks large maps, so it runs without the engine's
	// lock (the API and other cubes go on meanwhile), like a Sweep: h.Map
	// returns duplicated handles, and List reads of c its name, ports and
	// settings only, never its tables (a change may write them meanwhile),
	// and the controller's state under the controller's own lock.
	Unlocked bool
	List     func(h Handle, c *Cube) (any, error)
}

// Action is an operation on a cube.
type Action struct {
	Name string
	Doc  string
	Args any // pointer to zero arguments value, or nil
	Do   func(h Handle, c *Cube, args any) (any, error)
	// Injects says each call sends a frame into the datapath: a tenant's
	// calls are bounded by its injects_per_second quota.
	Injects bool
}

// Waiter is what an action returns when its answer has to be waited for (a
// long poll: new slow-path messages). The API calls Wait after the engine
// released its lock, with the request's context; Wait returns the answer.
type Waiter interface {
	Wait(ctx context.Context) (any, error)
}

// Validator is implemented by settings and entries that need checks beyond
// their Go types. c is the cube as it will be after the change.
type Validator interface {
	Validate(c *Cube) error
}

// InterfaceUser is implemented by settings that name Linux interfaces
// besides the cube's peers (a mirror interface): a tenant may name only
// interfaces it was given.
type InterfaceUser interface {
	Interfaces() []string
}

// Shaper is implemented by settings that take over the egress qdisc of
// Linux interfaces (a slicer's HTB or fq tree): one cube shapes an
// interface, since a second would replace the first's tree, and with it
// the guarantees that tree keeps.
type Shaper interface {
	Shaped() []string
}

// Closer is implemented by controllers that hold resources beyond their
// cube's maps (goroutines, a compiled program kept in a cache). Close is
// called once, when the cube goes: deleted, replaced, or the daemon
// stopping. It may be called with the engine's lock held: it must not wait
// for goroutines that may be waiting for the store (their calls fail once
// the cube is gone).
type Closer interface {
	Close()
}

// Controller is the control plane of one cube.
type Controller interface {
	// Sync writes the cube's settings and tables into its maps. It is called
	// after load, after a daemon restart and after every change to the cube,
	// and must leave state the fast path learned (MACs, connections) alone.
	Sync(h Handle, c *Cube) error
}

// EntryWriter is implemented by controllers that apply single-entry table
// changes without a full Sync (large tables).
type EntryWriter interface {
	PutEntry(h Handle, c *Cube, table string, item any) error
	DeleteEntry(h Handle, c *Cube, table string, item any) error
}

// PuntHandler is implemented by controllers with a slow path.
type PuntHandler interface {
	HandlePunt(h Handle, c *Cube, p Punt)
}

// Ticker is implemented by controllers with periodic work (aging, timers).
// Tick runs under the engine's lock, so it must be short: a walk of a large
// map belongs in Sweep.
type Ticker interface {
	Tick(h Handle, c *Cube, now time.Time)
}

// Sweeper is implemented by controllers with long periodic work: walks of
// large maps (aging a connection table, ending blocks), which under the
// engine's lock would stall the API and every other cube. The engine calls
// Sweep each tick, after the Ticks, without its lock: h.Map returns
// duplicates of the cube's maps, valid for the call whatever a concurrent
// change does to the cube (h's other methods are not for Sweep). A change
// may call Sync meanwhile: the controller guards its own state.
type Sweeper interface {
	Sweep(h Handle, now time.Time)
}

// EntryTx stages changes to the entries of one table of a cube; they take
// effect together, or not at all (the engine's transaction).
type EntryTx interface {
	Get(key string) (json.RawMessage, bool)
	// Put adds or replaces the entry raw describes (validated against the
	// cube) and returns its key.
	Put(raw json.RawMessage) (string, error)
	// PutValue is Put for an entry of the table's item type (a pointer, as
	// the table's Item), validated in place; it belongs to the engine
	// afterwards and must not be changed.
	PutValue(v any) (string, error)
	Delete(key string) error
	Len() int
}

// Store changes a cube's own tables from goroutines its controller runs (a
// control protocol's agent), with the engine's validation, kernel writes and
// persistence. It must not be called from a call of the engine into the
// controller (Sync, PutEntry, HandlePunt, Tick, views, actions): those hold
// the engine's lock.
type Store interface {
	// Entry reads one entry.
	Entry(table, key string) (json.RawMessage, bool)
	ChangeEntries(table string, fn func(tx EntryTx) error) error
	// Do runs fn with the engine's lock held and the cube's handle, as the
	// engine's own calls into the controller do (to inject or transmit).
	Do(fn func(h Handle) error) error
}

// Service is implemented by controllers that run goroutines of their own.
// Start is called once the cube is loaded, before its first Sync, with the
// cube's store; Close stops the goroutines when the cube goes.
type Service interface {
	Start(s Store)
	Closer
}

// Metric is one sample of an NF type's own metrics (Prometheus): exported as
// edgenf_<type>_<Name> with a cube label and Labels.
type Metric struct {
	Name   string
	Help   string
	Gauge  bool // else a counter
	Labels map[string]string
	Value  float64
	// Histogram, when set, makes the metric a histogram (Value unused):
	// Prometheus gets <Name>_bucket, _sum and _count.
	Histogram *Histogram
}

// Histogram is a distribution as Prometheus exposes it.
type Histogram struct {
	Bounds []float64 // upper bounds of the buckets, increasing (+Inf implied)
	Counts []uint64  // observations <= each bound (cumulative)
	Count  uint64    // all observations
	Sum    float64
}

// Observe adds one observation.
func (h *Histogram) Observe(v float64) {
	for i, b := range h.Bounds {
		if v <= b {
			h.Counts[i]++
		}
	}
	h.Count++
	h.Sum += v
}

// Clone copies h (to report it outside a lock).
func (h *Histogram) Clone() *Histogram {
	c := *h
	c.Counts = append([]uint64(nil), h.Counts...)
	return &c
}

// MetricsReporter is implemented by controllers with metrics of their own.
type MetricsReporter interface {
	Metrics(h Handle, c *Cube) []Metric
}

// Punt is a packet the fast path sent to the slow path.
type Punt struct {
	// InPort is the port the packet came in on (standard cubes) or the
	// direction it was seen in, 0 ingress / 1 egress (transparent cubes).
	InPort  int
	Reason  uint32
	Arg     uint32
	PktLen  int
	Ifindex int
	Frame   []byte
}

// Handle is what a controller may touch: its cube's kernel objects and the
// slow path's packet I/O.
type Handle interface {
	Map(name string) (*ebpf.Map, error)
	// Inject makes frame arrive on the cube's port as if received there.
	Inject(port int, frame []byte) error
	// Transmit sends frame out of the cube's port, to whatever it is peered with.
	Transmit(port int, frame []byte) error
	// PortIface returns the Linux interface a port is peered with, if any.
	PortIface(port int) (*net.Interface, bool)
	// PrepareRedirect readies an interface the NF redirects to by itself
	// (a mirror port named in its settings): a veth's far end gets the XDP
	// program that veth delivery needs.
	PrepareRedirect(ifindex int) error
	// AttachPoint returns the point a transparent cube is attached to
	// ("cube:port" or a Linux interface name; "" when detached) and the
	// point's addresses: a cube port's Addresses, or the interface's
	// configured addresses (NAT masquerade translates to them). During a
	// change it answers for the topology being applied.
	AttachPoint() (point string, addrs []netip.Prefix)
	// Controller is the cube's own controller (for views and actions);
	// NF code reads it typed, with ControllerOf.
	Controller() Controller
	Logf(format string, args ...any)
}

// ControllerOf returns the controller of h's cube as its NF type's own
// controller type C. Views and actions are called only for cubes of their
// type, so another type is a bug of the NF: it panics, naming both.
func ControllerOf[C Controller](h Handle) C {
	ctl, ok := h.Controller().(C)
	if !ok {
		panic(fmt.Sprintf("cube: controller is %T, not %T", h.Controller(), ctl))
	}
	return ctl
}

// ListOn makes a View's List of a method of the NF's controller:
// List: cube.ListOn((*controller).status).
func ListOn[C Controller](fn func(ctl C, h Handle, c *Cube) (any, error)) func(Handle, *Cube) (any, error) {
	return func(h Handle, c *Cube) (any, error) { return fn(ControllerOf[C](h), h, c) }
}

// DoOn makes an Action's Do of a method of the NF's controller:
// Do: cube.DoOn((*controller).flush).
func DoOn[C Controller](fn func(ctl C, h Handle, c *Cube, args any) (any, error)) func(Handle, *Cube, any) (any, error) {
	return func(h Handle, c *Cube, args any) (any, error) { return fn(ControllerOf[C](h), h, c, args) }
}

var (
	regMu sync.RWMutex
	reg   = map[string]*Type{}
)

// Register adds an NF type; NF packages call it from init.
func Register(t *Type) {
	regMu.Lock()
	defer regMu.Unlock()
	if _, dup := reg[t.Name]; dup {
		panic("cube: duplicate NF type " + t.Name)
	}
	if len(t.Hooks) == 0 || (t.Object == nil && t.ObjectFor == nil) || t.New == nil {
		panic("cube: NF type " + t.Name + " lacks hooks, object or controller")
	}
	if t.ObjectFor == nil {
		for _, h := range t.Hooks {
			if _, err := t.Object(h); err != nil {
				panic(fmt.Sprintf("cube: NF type %s: %v", t.Name, err))
			}
		}
	}
	for _, tb := range t.Tables {
		if tb.Item == nil || tb.Key == nil || reflect.TypeOf(tb.Item).Kind() != reflect.Pointer {
			panic(fmt.Sprintf("cube: NF type %s table %s needs a pointer Item and a Key", t.Name, tb.Name))
		}
	}
	reg[t.Name] = t
}

// Lookup finds a registered type.
func Lookup(name string) (*Type, error) {
	regMu.RLock()
	defer regMu.RUnlock()
	t, ok := reg[name]
	if !ok {
		return nil, NotFound("type", "unknown NF type %q (known: %v)", name, typeNamesLocked())
	}
	return t, nil
}

// Types lists the registered types by name.
func Types() []*Type {
	regMu.RLock()
	defer regMu.RUnlock()
	out := make([]*Type, 0, len(reg))
	for _, n := range typeNamesLocked() {
		out = append(out, reg[n])
	}
	return out
}

func typeNamesLocked() []string {
	names := make([]string, 0, len(reg))
	for n := range reg {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Table finds a table of the type.
func (t *Type) Table(name string) (*Table, error) {
	for i := range t.Tables {
		if t.Tables[i].Name == name {
			return &t.Tables[i], nil
		}
	}
	return nil, NotFound("table", "NF type %s has no table %q", t.Name, name)
}

// HookObjects serves the objects an NF type embeds, one per hook: base
// followed by _xdp.o or _tc.o ("bpf/nat" → bpf/nat_xdp.o, bpf/nat_tc.o),
// as make bpf builds them. A hook without one is an error, which Register
// reports for the type's hooks when the program starts.
//
//	//go:embed bpf/*.o
//	var objects embed.FS
//	...
//	Object: cube.HookObjects(objects, "bpf/nat"),
//
// Each call reads a copy (loading a cube is rare), so that the objects are
// not held twice in memory.
func HookObjects(fsys fs.FS, base string) func(datapath.Hook) ([]byte, error) {
	return func(h datapath.Hook) ([]byte, error) {
		b, err := fs.ReadFile(fsys, base+"_"+string(h)+".o")
		if err != nil {
			return nil, fmt.Errorf("no %s object: %w", h, err)
		}
		return b, nil
	}
}

// ObjectOf returns the eBPF object cube c runs.
func (t *Type) ObjectOf(c *Cube) ([]byte, error) {
	if t.ObjectFor != nil {
		return t.ObjectFor(c)
	}
	return t.Object(c.Hook)
}

// SpecOf parses obj, an object of the type, and sizes its maps for this
// machine and cube c (SizeMaps): what c loads.
func (t *Type) SpecOf(c *Cube, obj []byte) (*ebpf.CollectionSpec, error) {
	spec, err := datapath.LoadSpec(obj)
	if err != nil || t.SizeMaps == nil {
		return spec, err
	}
	if err := t.SizeMaps(c, spec); err != nil {
		return nil, fmt.Errorf("%s: sizing the maps: %w", t.Name, err)
	}
	return spec, nil
}

// ConfigInterfaces lists the interfaces the cube's settings name. Settings
// that do not decode name none (validation reports them).
func (t *Type) ConfigInterfaces(c *Cube) []string {
	if t.Config == nil || len(c.Config) == 0 {
		return nil
	}
	v, err := Decode("config", c.Config, t.Config)
	if err != nil {
		return nil
	}
	if iu, ok := v.(InterfaceUser); ok {
		return iu.Interfaces()
	}
	return nil
}

// SupportsHook reports whether the type runs at hook.
func (t *Type) SupportsHook(h datapath.Hook) bool {
	for _, x := range t.Hooks {
		if x == h {
			return true
		}
	}
	return false
}

// Slice is one slice of a slicing cube.
type Slice struct {
	Name   string
	Tenant string
	// Port is the cube's port that leads into the slice's chain; Entry
	// the one its return traffic leaves by. A frame entering by an entry
	// port leaves by a slice's port, one entering by a slice's port by
	// that slice's entry: never from one slice into another.
	Port, Entry string
	// Chain, for a slice no port of the cube leads into, is its chain's
	// entry (cube:port; Port is then empty): frames go straight to it,
	// and come back by it.
	Chain string
	// BudgetNS is the slice's own budget per packet (0: none but the
	// daemon's -core-budget-ns).
	BudgetNS float64
}
