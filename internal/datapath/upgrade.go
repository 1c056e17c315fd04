package datapath

// Upgrades: a daemon started over cubes an earlier daemon pinned adopts
// their programs only when they were built from the object it would load
// itself. Every load records a digest of that object beside the cube's pins
// (enf-digest); a cube whose digest differs, or that has none, is upgraded:
// its program reloaded from the current object in one panel update, its maps
// kept where their layout is unchanged and reset where it changed.

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/cilium/ebpf"
)

const (
	// digestPin is the pinned one-slot array holding the digest of what
	// the cube's program was built from. A hyphen cannot occur in a map
	// name of an object, so no object map collides with it.
	digestPin = "enf-digest"
	// asideSuffix marks a map an upgrade set aside until the new program
	// is in place (restored if the load fails, removed once it succeeded).
	asideSuffix = "-aside"
)

// Digest identifies what a cube's program was built from (the engine's
// choice: the object's bytes, the hook, the loader's version).
type Digest [32]byte

// MapReset is a pinned map an upgrade could not keep: its contents are lost.
type MapReset struct {
	Map    string
	Reason string
}

func (r MapReset) String() string { return r.Map + " (" + r.Reason + ")" }

// absentReason: a pinned map the new object does not declare.
const absentReason = "the new object has no such map"

// Absent reports a map removed because the new object no longer has it
// (nothing of its layout changed: nothing uses it any more).
func (r MapReset) Absent() bool { return r.Reason == absentReason }

// Upgraded says what an upgrade did to the cube's pinned maps.
type Upgraded struct {
	// Reset: maps whose contents are lost (gone from the object, or of
	// another layout).
	Reset []MapReset
	// Uncompared: maps kept on their sizes and flags alone, their key and
	// value types unknown (created without BTF); Reason says so.
	Uncompared []MapReset
}

// notAMap: the cube directory's entries that are not its object's maps.
func notAMap(name string) bool {
	return name == progPin || name == digestPin || name == attachedPin || name == linkPin || name == copierPin ||
		strings.HasSuffix(name, "_new") || strings.HasSuffix(name, asideSuffix)
}

// HasPinnedProgram reports whether a program is pinned for the cube.
func (d *Datapath) HasPinnedProgram(name string) bool {
	_, err := os.Stat(filepath.Join(d.cubeDir(name), progPin))
	return err == nil
}

// PinnedDigest reads the digest recorded with the cube's pinned program;
// ok is false when none is (pinned by a daemon that did not record one, by
// a stand-in, or by a daemon killed between load and record).
func (d *Datapath) PinnedDigest(name string) (dg Digest, ok bool, err error) {
	m, err := ebpf.LoadPinnedMap(filepath.Join(d.cubeDir(name), digestPin), nil)
	if errors.Is(err, os.ErrNotExist) {
		return dg, false, nil
	}
	if err != nil {
		return dg, false, fmt.Errorf("cube %s digest: %w", name, err)
	}
	defer m.Close()
	if m.ValueSize() != uint32(len(dg)) {
		return dg, false, nil // not one this daemon wrote: no digest
	}
	if err := m.Lookup(uint32(0), &dg); err != nil {
		return dg, false, fmt.Errorf("cube %s digest: %w", name, err)
	}
	return dg, true, nil
}

// SetDigest records what the cube's program was built from. LoadCube
// clears the record before it changes the program, so a daemon killed
// before SetDigest leaves none: the next start reloads the cube, never
// adopts a program the record does not describe. A stand-in records none.
func (c *Program) SetDigest(dg Digest) error {
	m, err := ebpf.NewMap(&ebpf.MapSpec{Name: "enf_digest", Type: ebpf.Array, KeySize: 4, ValueSize: uint32(len(dg)), MaxEntries: 1})
	if err != nil {
		return fmt.Errorf("cube %s digest: %w", c.Name, err)
	}
	defer m.Close()
	if err := m.Put(uint32(0), dg); err != nil {
		return fmt.Errorf("cube %s digest: %w", c.Name, err)
	}
	path := filepath.Join(c.dir, digestPin)
	if err := clearDigest(c.dir); err != nil {
		return err
	}
	if err := m.Pin(path); err != nil {
		return fmt.Errorf("cube %s digest: %w", c.Name, err)
	}
	return nil
}

// clearDigest removes the digest recorded in a cube's pin directory.
func clearDigest(dir string) error {
	if err := os.Remove(filepath.Join(dir, digestPin)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("clear digest: %w", err)
	}
	return nil
}

// UpgradeOptions change what UpgradeCubeWith keeps.
type UpgradeOptions struct {
	// KeepAbsent keeps the pinned maps the new object does not declare
	// (a down cube's stand-in: they wait for the cube's own program).
	KeepAbsent bool
	// the hook the pinned program runs at and the one it is reloaded
	// at, when they differ (set by UpgradeCubeWith)
	from, to Hook
}

// UpgradeCube replaces the program an earlier daemon pinned for the cube by
// spec's, in one panel update: traffic moves from the old program to the new
// one without a gap. Maps of unchanged layout (btflayout.go) are kept with
// their contents; the others are reset (returned, for the log): the new program gets empty
// ones, and the old one keeps its own until the panel no longer runs it. If
// the new program cannot be loaded, nothing changes: the old program keeps
// its slot and its maps their pins.
func (d *Datapath) UpgradeCube(name string, hook Hook, slot uint32, spec *ebpf.CollectionSpec) (*Program, Upgraded, error) {
	return d.UpgradeCubeWith(name, hook, slot, spec, UpgradeOptions{})
}

// UpgradeCubeWith is UpgradeCube with options. A pinned program of the
// other hook (the state moved the cube from xdp to tc, or back) leaves its
// panel slot once the new one is in place, and the cube's program arrays,
// which hold programs of the old hook's type only, are reset.
func (d *Datapath) UpgradeCubeWith(name string, hook Hook, slot uint32, spec *ebpf.CollectionSpec, o UpgradeOptions) (*Program, Upgraded, error) {
	dir := d.cubeDir(name)
	var none Upgraded
	old, oldID, err := d.pinnedProgram(name)
	if err != nil {
		return nil, none, fmt.Errorf("upgrade cube %s: %w", name, err)
	}
	o.from, o.to = "", hook
	if old != "" && old != hook {
		o.from = old
	}
	up, err := incompatibleMaps(dir, spec, o)
	if err != nil {
		return nil, none, fmt.Errorf("upgrade cube %s: %w", name, err)
	}
	names := make([]string, len(up.Reset))
	for i, r := range up.Reset {
		names[i] = r.Map
	}
	restore, drop, err := setAside(dir, names)
	if err != nil {
		return nil, none, fmt.Errorf("upgrade cube %s: %w", name, err)
	}
	c, err := d.LoadCube(name, hook, slot, spec, nil)
	if err != nil {
		restore()
		return nil, none, err
	}
	drop()
	if o.from != "" {
		if err := d.vacate(o.from, slot, oldID); err != nil {
			c.Close()
			return nil, none, fmt.Errorf("upgrade cube %s: the %s panel: %w", name, o.from, err)
		}
	}
	// The ports map is kept: its direct hops are the earlier daemon's.
	if err := c.adoptDirect(); err != nil {
		c.Close()
		return nil, none, err
	}
	return c, up, nil
}

// setAside renames the pins of maps in dir out of the way of a load:
// restore puts them back (the load failed), drop removes them (the new
// program has its own).
func setAside(dir string, maps []string) (restore, drop func(), err error) {
	var aside []string
	restore = func() {
		for _, m := range aside {
			os.Rename(filepath.Join(dir, m+asideSuffix), filepath.Join(dir, m))
		}
	}
	drop = func() {
		for _, m := range aside {
			os.Remove(filepath.Join(dir, m+asideSuffix))
		}
	}
	for _, m := range maps {
		p := filepath.Join(dir, m)
		os.Remove(p + asideSuffix) // an earlier upgrade's, cut short
		if err := os.Rename(p, p+asideSuffix); err != nil {
			restore()
			return nil, nil, err
		}
		aside = append(aside, m)
	}
	return restore, drop, nil
}

// PinnedHook is the hook of the program pinned for the cube ("" if none).
func (d *Datapath) PinnedHook(name string) (Hook, error) {
	h, _, err := d.pinnedProgram(name)
	return h, err
}

// pinnedProgram is the hook and id of the program pinned for the cube.
func (d *Datapath) pinnedProgram(name string) (Hook, uint32, error) {
	prog, err := ebpf.LoadPinnedProgram(filepath.Join(d.cubeDir(name), progPin), nil)
	if errors.Is(err, os.ErrNotExist) {
		return "", 0, nil
	}
	if err != nil {
		return "", 0, err
	}
	defer prog.Close()
	info, err := prog.Info()
	if err != nil {
		return "", 0, err
	}
	id, _ := info.ID()
	return hookOf(prog.Type()), uint32(id), nil
}

func hookOf(t ebpf.ProgramType) Hook {
	if t == ebpf.XDP {
		return XDP
	}
	return TC
}

// vacate empties the hook's panel slot if it still runs program id (a cube
// that moved to the other hook): frames still sent there are dropped by the
// tail call's failure, no stale program runs them.
func (d *Datapath) vacate(hook Hook, slot, id uint32) error {
	var held uint32
	if err := d.panels[hook].Lookup(slot, &held); err != nil || held != id {
		return nil // empty, or another program's
	}
	if err := d.panels[hook].Delete(slot); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
		return err
	}
	return d.setOwner(hook, slot, nil)
}

// incompatibleMaps lists the maps pinned in dir that spec cannot reuse: gone
// from the object (unless o.KeepAbsent), of another layout, or program
// arrays of a cube whose hook changed (o.from to o.to); and those kept
// whose key and value types could not be compared.
func incompatibleMaps(dir string, spec *ebpf.CollectionSpec, o UpgradeOptions) (Upgraded, error) {
	from, to := o.from, o.to
	var out Upgraded
	ents, err := os.ReadDir(dir)
	if err != nil {
		if os.IsNotExist(err) {
			return out, nil
		}
		return out, err
	}
	for _, e := range ents {
		name := e.Name()
		if notAMap(name) || isShared(name) {
			continue
		}
		ms, ok := spec.Maps[name]
		if !ok && o.KeepAbsent {
			continue
		}
		if !ok {
			out.Reset = append(out.Reset, MapReset{name, absentReason})
			continue
		}
		m, err := ebpf.LoadPinnedMap(filepath.Join(dir, name), nil)
		if err != nil {
			return out, fmt.Errorf("map %s: %w", name, err)
		}
		if from != "" && m.Type() == ebpf.ProgramArray {
			// a program array takes programs of one type only
			m.Close()
			out.Reset = append(out.Reset, MapReset{name, fmt.Sprintf("it holds %s programs, the cube now runs at %s", from, to)})
			continue
		}
		if err := ms.Compatible(m); err == nil && ms.InnerMap != nil {
			if err := innerCompatible(ms.InnerMap, m); err != nil {
				m.Close()
				out.Reset = append(out.Reset, MapReset{name, err.Error()})
				continue
			}
		}
		changed, err := mapFits(ms, m)
		m.Close()
		switch {
		case errors.Is(err, errNoLayout), errors.Is(err, errNoNewType):
			out.Uncompared = append(out.Uncompared, MapReset{name, err.Error()})
		case changed != "":
			out.Reset = append(out.Reset, MapReset{name, changed})
		}
	}
	return out, nil
}

// innerCompatible checks a map of maps against the inner map spec of the new
// object, on one of its inner maps (the kernel does not say the template it
// was created with). An empty one is replaced: nothing is lost, and the new
// program is verified against its own template.
func innerCompatible(inner *ebpf.MapSpec, outer *ebpf.Map) error {
	k := make([]byte, outer.KeySize())
	var id uint32
	it := outer.Iterate()
	if !it.Next(k, &id) {
		if err := it.Err(); err != nil {
			return err
		}
		return errors.New("map of maps: empty, made again from the new object's inner map")
	}
	m, err := ebpf.NewMapFromID(ebpf.MapID(id))
	if err != nil {
		return err
	}
	defer m.Close()
	var diffs []string
	if m.Type() != inner.Type {
		diffs = append(diffs, fmt.Sprintf("inner Type: %s changed to %s", m.Type(), inner.Type))
	}
	if m.KeySize() != inner.KeySize {
		diffs = append(diffs, fmt.Sprintf("inner KeySize: %d changed to %d", m.KeySize(), inner.KeySize))
	}
	if m.ValueSize() != inner.ValueSize {
		diffs = append(diffs, fmt.Sprintf("inner ValueSize: %d changed to %d", m.ValueSize(), inner.ValueSize))
	}
	if len(diffs) > 0 {
		return errors.New(strings.Join(diffs, ", "))
	}
	return nil
}
