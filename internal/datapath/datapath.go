package datapath

import (
	"bytes"
	_ "embed"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/cilium/ebpf"
	"github.com/edgenf/edgenf/internal/privdir"
)

// Framework map names shared by every program of a hook.
const (
	mapPanel   = "enf_panel"
	mapScratch = "enf_scratch"
	mapPunt    = "enf_punt_ring"
	mapConfig  = "enf_config"
	// the copy machine's maps (copy.h), layouts taken from the stub object
	mapCopyRing = "enf_copy_ring"
	mapCopyCPU  = "enf_copy_cpu"
	mapCopyDevs = "enf_copy_devs"
	// MapPorts and MapStats exist once per cube.
	MapPorts = "enf_ports"
	MapStats = "enf_stats"
	MapFlood = "enf_flood_map"
	// MapPuntBudget is a cube's punt budget (PuntBudget), in the objects
	// of cubes that punt.
	MapPuntBudget = "enf_punt_budget"
	// MapChainHops is, in a cube whose slices lead straight into their
	// chains (cube.Type.SliceChains), the hop into each slice's chain
	// entry, by slice id; the engine writes it.
	MapChainHops = "enf_chain_hops"
	// ProgName is the entry point of every cube object.
	ProgName = "edgenf_cube"
)

// DefaultRoot is where a production daemon pins its objects.
const DefaultRoot = "/sys/fs/bpf/edgenf"

// Datapath is the set of pinned kernel objects under one bpffs root. Several
// datapaths with different roots coexist (tests run one each).
type Datapath struct {
	root    string
	panels  map[Hook]*ebpf.Map
	scratch *ebpf.Map
	punt    *ebpf.Map
	config  *ebpf.Map
	copies  map[string]*ebpf.Map // the copy machine's shared maps
	// direct hops (direct.go): which program each panel slot runs, and
	// the cubes' ports whose direct hops enter each slot
	owners  map[Hook]*ebpf.Map
	peersMu sync.Mutex
	callers map[Hook]map[uint32]map[peerRef]bool
	// entered is callers the other way: the slot each port's hop enters
	// (a hop rewritten or a cube unloaded costs one lookup, not a walk)
	entered map[Hook]map[peerRef]uint32
	// what a direct hop into no cube holds, by hook (vacant.go)
	vacants map[Hook]*ebpf.Program
	// TC programs go on interfaces the classic way (tcclassic.go)
	classicTC bool
	// the copy machine's program, loaded once (copier.go)
	copierMu sync.Mutex
	copier   *ebpf.Program
	// the shared maps' kernel ids (their pinned names by id), and those
	// Open made anew because the pinned ones no longer fit (framework.go)
	sharedIDs map[ebpf.MapID]string
	renewed   []MapReset
	renewing  bool // at this start, or one cut short (set-aside pins)
	// the interface programs and their maps, by hook and direction
	// (ifaces.go)
	setsMu  sync.Mutex
	sets    map[string]*ifaceSet
	stubsMu sync.Mutex
	// stubDirs serialise what is done to one interface program: a change
	// may prepare one (PrepareStub) while another attaches it.
	stubDirs map[string]*sync.Mutex
}

// Open creates the global maps under root, or re-adopts them if pinned. TC
// programs are attached as $EDGENF_TC_ATTACH says (TCAttach; auto if unset).
func Open(root string) (*Datapath, error) {
	shared, err := sharedSpecs()
	if err != nil {
		return nil, err
	}
	return open(root, shared)
}

// open is Open over the shared maps of shared (sharedSpecs: this build's).
func open(root string, shared map[string]*ebpf.MapSpec) (*Datapath, error) {
	classic, err := tcAttachFromEnv()
	if err != nil {
		return nil, err
	}
	if err := ensureBPFFS(root); err != nil {
		return nil, err
	}
	// /sys/fs/bpf is often writable by all (sticky): a directory another
	// user made would let them rename pins from one cube to another
	if err := privdir.Ensure(root); err != nil {
		return nil, fmt.Errorf("bpffs directory: %w", err)
	}
	for _, sub := range []string{"", "cubes", "ifaces"} {
		if err := os.MkdirAll(filepath.Join(root, sub), 0o700); err != nil {
			return nil, err
		}
	}
	d := &Datapath{root: root, panels: map[Hook]*ebpf.Map{}, classicTC: classic, owners: map[Hook]*ebpf.Map{},
		callers: map[Hook]map[uint32]map[peerRef]bool{XDP: {}, TC: {}},
		entered: map[Hook]map[peerRef]uint32{XDP: {}, TC: {}}, sharedIDs: map[ebpf.MapID]string{}, sets: map[string]*ifaceSet{}, stubDirs: map[string]*sync.Mutex{}}
	if err := d.renewShared(shared); err != nil { // framework.go
		d.Close()
		return nil, err
	}
	d.copies = map[string]*ebpf.Map{}
	for _, s := range []struct {
		dst  **ebpf.Map
		name string
	}{
		{&d.scratch, "scratch"}, {&d.punt, "punt_ring"}, {&d.config, "config"},
	} {
		if *s.dst, err = d.sharedMap(shared[s.name]); err != nil {
			d.Close()
			return nil, err
		}
	}
	for _, name := range []string{mapCopyRing, mapCopyCPU, mapCopyDevs} {
		m, err := d.sharedMap(shared[strings.TrimPrefix(name, "enf_")])
		if err != nil {
			d.Close()
			return nil, err
		}
		d.copies[name] = m
	}
	for _, h := range []Hook{XDP, TC} {
		m, err := d.sharedMap(shared[string(h)+"_panel"])
		if err != nil {
			d.Close()
			return nil, err
		}
		d.panels[h] = m
		if m, err = d.sharedMap(shared[string(h)+ownerPinPart]); err != nil {
			d.Close()
			return nil, err
		}
		d.owners[h] = m
	}
	return d, nil
}

func pinnedMap(root string, spec *ebpf.MapSpec) (*ebpf.Map, error) {
	spec.Pinning = ebpf.PinByName
	m, err := ebpf.NewMapWithOptions(spec, ebpf.MapOptions{PinPath: root})
	if err != nil {
		return nil, fmt.Errorf("map %s under %s: %w", spec.Name, root, err)
	}
	return m, nil
}

// Root is the bpffs directory of this datapath.
func (d *Datapath) Root() string { return d.root }

// PuntMap is the perf event array the slow path reads.
func (d *Datapath) PuntMap() *ebpf.Map { return d.punt }

// Config is the datapath's settings as the fast path sees them.
func (d *Datapath) Config() (Config, error) {
	var c Config
	err := d.config.Lookup(uint32(0), &c)
	return c, err
}

// SetConfig changes the datapath's settings.
func (d *Datapath) SetConfig(c Config) error { return d.config.Update(uint32(0), c, ebpf.UpdateAny) }

// Close releases this process's handles; pinned objects stay, so traffic
// keeps flowing without the daemon.
func (d *Datapath) Close() {
	for _, m := range append([]*ebpf.Map{d.scratch, d.punt, d.config}, d.panels[XDP], d.panels[TC], d.owners[XDP], d.owners[TC]) {
		if m != nil {
			m.Close()
		}
	}
	for _, m := range d.copies {
		m.Close()
	}
	d.closeVacants()
	d.setsMu.Lock()
	for _, s := range d.sets {
		s.close()
	}
	clear(d.sets)
	d.setsMu.Unlock()
	d.copierMu.Lock()
	if d.copier != nil {
		d.copier.Close()
		d.copier = nil
	}
	d.copierMu.Unlock()
}

// Destroy removes every pinned object under the root: all cubes, stubs and
// links. Traffic through them stops.
func (d *Datapath) Destroy() error {
	d.Close()
	// classic TC filters belong to the interfaces, not to the pins
	err := d.detachAllClassic()
	return errors.Join(err, os.RemoveAll(d.root))
}

// prepare readies a cube or stub object for loading: framework maps are
// replaced by the shared ones, the rest is pinned by name under dir so a reload
// (hot swap, daemon restart) finds and keeps them.
func (d *Datapath) prepare(spec *ebpf.CollectionSpec, hook Hook) map[string]*ebpf.Map {
	repl := map[string]*ebpf.Map{}
	for name, ms := range spec.Maps {
		switch name {
		case mapPanel:
			repl[name] = d.panels[hook]
		case mapOwner:
			repl[name] = d.owners[hook]
		case mapScratch:
			repl[name] = d.scratch
		case mapPunt:
			repl[name] = d.punt
		case mapConfig:
			repl[name] = d.config
		case mapCopyRing, mapCopyCPU, mapCopyDevs:
			repl[name] = d.copies[name]
		default:
			if ms.Type != ebpf.PerfEventArray && !isSection(name) {
				ms.Pinning = ebpf.PinByName
			}
		}
	}
	return repl
}

func isShared(name string) bool {
	switch name {
	case mapPanel, mapOwner, mapScratch, mapPunt, mapConfig, mapCopyRing, mapCopyCPU, mapCopyDevs:
		return true
	}
	return false
}

// isSection reports the maps libbpf makes for .data/.rodata/.bss: their
// contents are load-time constants, never pinned.
func isSection(name string) bool {
	return len(name) > 0 && name[0] == '.'
}

// LoadSpec parses an embedded ELF object.
func LoadSpec(obj []byte) (*ebpf.CollectionSpec, error) {
	if len(obj) == 0 {
		return nil, errors.New("empty eBPF object (was `make bpf` run?)")
	}
	return ebpf.LoadCollectionSpecFromReader(bytes.NewReader(obj))
}

func sizeOf[T any]() int {
	var v T
	return binarySize(v)
}
