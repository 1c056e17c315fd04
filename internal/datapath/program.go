package datapath

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/cilium/ebpf"
)

// Program is a cube as the kernel holds it: its program, loaded and sitting
// in a panel slot, and its maps. (cube.Cube is the model the user writes.)
type Program struct {
	Name string
	Hook Hook
	Slot uint32

	dir  string
	prog *ebpf.Program
	maps map[string]*ebpf.Map
	d    *Datapath
	// spec is the object the cube runs, kept (shared, read-only) to load
	// its direct entry; nil when it has none that can serve as one.
	spec *ebpf.CollectionSpec
}

const progPin = "prog"

func (d *Datapath) cubeDir(name string) string { return filepath.Join(d.root, "cubes", name) }

// LoadCube loads spec as cube name into slot of the hook's panel. Maps the
// cube already has pinned (earlier load, hot swap, daemon restart) are kept
// with their contents; a map whose layout changed is an error and nothing
// changes. consts sets `volatile const` variables before load.
//
// Putting the program into the panel is one atomic update, so a reload swaps
// programs without losing a packet.
func (d *Datapath) LoadCube(name string, hook Hook, slot uint32, spec *ebpf.CollectionSpec, consts map[string]any) (*Program, error) {
	if slot >= MaxSlots {
		return nil, fmt.Errorf("slot %d out of range (max %d)", slot, MaxSlots-1)
	}
	if spec.Programs[ProgName] == nil {
		return nil, fmt.Errorf("object has no program %q", ProgName)
	}
	dir := d.cubeDir(name)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	// Whatever the slot runs from here on is not what the recorded digest
	// says until the caller records its own (SetDigest): a daemon killed
	// in between reloads the cube at start rather than adopt it.
	if err := clearDigest(dir); err != nil {
		return nil, err
	}
	coll, err := d.loadCollection(withoutEntry(spec), hook, dir, consts, nil)
	if err != nil {
		return nil, fmt.Errorf("load cube %s: %w", name, err)
	}
	c := &Program{Name: name, Hook: hook, Slot: slot, dir: dir, d: d, maps: map[string]*ebpf.Map{}, spec: entrySpec(spec)}
	c.prog = coll.Programs[ProgName]
	delete(coll.Programs, ProgName)
	for n, m := range coll.Maps {
		if !isShared(n) && !isSection(n) && !isDirectMap(n) {
			c.maps[n] = m
			delete(coll.Maps, n) // kept: not closed with the collection
		}
	}
	coll.Close()
	if err := d.panels[hook].Update(slot, c.prog, ebpf.UpdateAny); err != nil {
		c.Close()
		return nil, fmt.Errorf("patch panel slot %d: %w", slot, err)
	}
	if err := d.setOwner(hook, slot, c.prog); err != nil {
		c.Close()
		return nil, err
	}
	if err := repin(c.prog, filepath.Join(dir, progPin)); err != nil {
		return nil, err
	}
	return c, nil
}

// loadCollection loads a copy of spec with the framework's shared maps and
// extra replacing maps of the same names, pinning the others in dir.
func (d *Datapath) loadCollection(spec *ebpf.CollectionSpec, hook Hook, dir string, consts map[string]any, extra map[string]*ebpf.Map) (*ebpf.Collection, error) {
	spec = spec.Copy()
	dropUnused(spec)
	repl := d.prepare(spec, hook)
	for n, m := range extra {
		repl[n] = m
	}
	for k, v := range consts {
		vs, ok := spec.Variables[k]
		if !ok {
			return nil, fmt.Errorf("object has no variable %q", k)
		}
		if err := vs.Set(v); err != nil {
			return nil, fmt.Errorf("variable %s: %w", k, err)
		}
	}
	// Only maps the object uses may be replaced.
	for n := range repl {
		if _, ok := spec.Maps[n]; !ok {
			delete(repl, n)
		}
	}
	coll, err := ebpf.NewCollectionWithOptions(spec, ebpf.CollectionOptions{
		Maps:            ebpf.MapOptions{PinPath: dir},
		MapReplacements: repl,
	})
	if err != nil {
		err = explainLoadError(spec, err) // "needs Linux X.Y" (kernel.go)
		var ve *ebpf.VerifierError
		if errors.As(err, &ve) {
			return nil, &VerifierError{ve}
		}
		return nil, err
	}
	return coll, nil
}

// VerifierError is a program the kernel refused, with the end of the
// verifier's log (the full log is in Unwrap's *ebpf.VerifierError).
type VerifierError struct{ Err *ebpf.VerifierError }

func (e *VerifierError) Error() string { return fmt.Sprintf("verifier: %+20v", e.Err) }
func (e *VerifierError) Unwrap() error { return e.Err }

// repin replaces a program pin: pins cannot be overwritten in place. (bpffs
// names cannot contain dots.)
func repin(p *ebpf.Program, path string) error {
	tmp := path + "_new"
	os.Remove(tmp)
	if err := p.Pin(tmp); err != nil {
		return fmt.Errorf("pin %s: %w", path, err)
	}
	return os.Rename(tmp, path)
}

// LoadOptions change how LoadCube treats the cube's existing maps.
type LoadOptions struct {
	// Reprogram replaces the maps whose layout the new object changes, and
	// drops those it no longer has, instead of refusing to load: for a new
	// program in place of another (a P4 cube given a new program). Maps with
	// the same name and layout keep their contents.
	Reprogram bool
}

// ReloadCube is LoadCube for a cube whose program changes with options.
func (d *Datapath) ReloadCube(name string, hook Hook, slot uint32, spec *ebpf.CollectionSpec, opts LoadOptions) (*Program, error) {
	if opts.Reprogram {
		if err := d.dropIncompatible(d.cubeDir(name), spec); err != nil {
			return nil, err
		}
	}
	return d.LoadCube(name, hook, slot, spec, nil)
}

// dropIncompatible unpins the cube's maps that spec cannot reuse. Programs
// still running hold their own references, so traffic is unaffected until the
// panel switches to the new program.
func (d *Datapath) dropIncompatible(dir string, spec *ebpf.CollectionSpec) error {
	drop, err := incompatibleMaps(dir, spec, UpgradeOptions{})
	if err != nil {
		return err
	}
	for _, r := range drop.Reset {
		if err := os.Remove(filepath.Join(dir, r.Map)); err != nil {
			return err
		}
	}
	return nil
}

// AdoptCube re-opens a cube pinned by an earlier daemon without reloading it.
// spec, the object it runs, may be nil: the cube then gets no direct entry.
func (d *Datapath) AdoptCube(name string, hook Hook, slot uint32, spec *ebpf.CollectionSpec) (*Program, error) {
	dir := d.cubeDir(name)
	prog, err := ebpf.LoadPinnedProgram(filepath.Join(dir, progPin), nil)
	if err != nil {
		return nil, fmt.Errorf("adopt cube %s: %w", name, err)
	}
	c := &Program{Name: name, Hook: hook, Slot: slot, dir: dir, d: d, prog: prog, maps: map[string]*ebpf.Map{}, spec: entrySpec(spec)}
	ents, err := os.ReadDir(dir)
	if err != nil {
		c.Close()
		return nil, err
	}
	for _, e := range ents {
		if notAMap(e.Name()) || isDirectMap(e.Name()) {
			continue
		}
		m, err := ebpf.LoadPinnedMap(filepath.Join(dir, e.Name()), nil)
		if err != nil {
			c.Close()
			return nil, fmt.Errorf("adopt cube %s map %s: %w", name, e.Name(), err)
		}
		c.maps[e.Name()] = m
	}
	// The panel is pinned too, but make sure the slot holds this program.
	if err := d.panels[hook].Update(slot, prog, ebpf.UpdateAny); err != nil {
		c.Close()
		return nil, err
	}
	if err := d.setOwner(hook, slot, prog); err != nil {
		c.Close()
		return nil, err
	}
	if err := c.adoptDirect(); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// Map returns one of the cube's own maps by its name in the object.
func (c *Program) Map(name string) (*ebpf.Map, error) {
	m, ok := c.maps[name]
	if !ok {
		return nil, fmt.Errorf("cube %s has no map %q", c.Name, name)
	}
	return m, nil
}

// EBPF is the loaded program itself (for tests and benchmarks).
func (c *Program) EBPF() *ebpf.Program { return c.prog }

// SetHop points one port somewhere.
func (c *Program) SetHop(port uint32, h Hop) error {
	m, err := c.Map(MapPorts)
	if err != nil {
		return err
	}
	if err := m.Update(port, h, ebpf.UpdateAny); err != nil {
		return err
	}
	return c.setDirect(port, h)
}

// SetFlood adds (ifindex > 0) or removes the interface peer of a port from the
// XDP flood set.
func (c *Program) SetFlood(port uint32, ifindex uint32) error {
	m, ok := c.maps[MapFlood]
	if !ok {
		return nil
	}
	if ifindex == 0 {
		if err := m.Delete(port); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
			return err
		}
		return nil
	}
	return m.Update(port, ifindex, ebpf.UpdateAny)
}

// SetPuntBudget sets how many messages the cube may send to the slow path
// (verdict.h: enf_punt_allowed), starting from a full bucket. A cube whose
// object never punts has no budget to set.
func (c *Program) SetPuntBudget(b PuntBudget) error {
	m, ok := c.maps[MapPuntBudget]
	if !ok {
		return nil
	}
	b.TAT = 0
	return m.Update(uint32(0), b, ebpf.UpdateAny)
}

// Stats returns the counters of each port and, last, the cube-wide entry.
func (c *Program) Stats() ([]Stats, error) {
	m, err := c.Map(MapStats)
	if err != nil {
		return nil, err
	}
	return readStats(m, MaxPorts+1)
}

// ResetStats zeroes every counter of the cube.
func (c *Program) ResetStats() error {
	m, err := c.Map(MapStats)
	if err != nil {
		return err
	}
	return zeroPerCPU(m, MaxPorts+1)
}

// Close releases this process's handles; the cube keeps running.
func (c *Program) Close() {
	if c.d != nil {
		c.d.dropEntries(c)
	}
	if c.prog != nil {
		c.prog.Close()
	}
	for _, m := range c.maps {
		m.Close()
	}
}

// Unload takes the cube out of the panel and removes its pins.
func (c *Program) Unload() error {
	err := c.d.panels[c.Hook].Delete(c.Slot)
	if errors.Is(err, ebpf.ErrKeyNotExist) {
		err = nil
	}
	err = errors.Join(err, c.d.setOwner(c.Hook, c.Slot, nil), c.forgetDirect())
	c.Close()
	if rerr := os.RemoveAll(c.dir); rerr != nil && err == nil {
		err = rerr
	}
	return err
}

// RemovePinned removes what is pinned for a cube that was never adopted.
func (d *Datapath) RemovePinned(name string) error { return os.RemoveAll(d.cubeDir(name)) }

// Maps returns the cube's own maps by name (a copy of the index; the maps
// stay owned by the cube).
func (c *Program) Maps() map[string]*ebpf.Map {
	out := make(map[string]*ebpf.Map, len(c.maps))
	for k, v := range c.maps {
		out[k] = v
	}
	return out
}

// PortStats returns the counters of ports 0..n-1 only: what telemetry reads
// of every cube at every scrape, in one system call.
func (c *Program) PortStats(n int) ([]Stats, error) {
	if n < 0 || n > MaxPorts {
		return nil, fmt.Errorf("port stats: %d ports out of range (max %d)", n, MaxPorts)
	}
	m, err := c.Map(MapStats)
	if err != nil {
		return nil, err
	}
	return readStats(m, n)
}
