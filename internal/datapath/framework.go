package datapath

// The framework's shared maps (patch panels, their owners, the metadata
// scratch, the configuration, the punt ring, the copy machine's maps) are
// pinned at the root and read by every program: stubs, cubes, direct
// entries, the copy machine, the injector. A release may change their
// layout (struct edgenf_md grows, EDGENF_MAX_SLOTS changes). Open checks
// each pinned one as an upgrade checks a cube's maps (btflayout.go); if one
// no longer fits, all are renewed: their pins removed and new maps made.
// The programs of the earlier daemon keep the old ones (set aside, still
// pinned: DropRenewed) and keep forwarding; the engine then reloads every pinned
// program that still runs over an old one (StaleFramework) and attaches
// every interface program again, so no new program ever reads an
// old-layout map, and each interface moves to the new programs in one
// link update.

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/cilium/ebpf"
)

// sharedSpecs are the shared maps as the framework creates them. The
// scratch, configuration and copy machine's maps take the stub object's
// declarations, BTF included, so a layout change of the same size is seen
// too; the others have no value type to compare.
func sharedSpecs() (map[string]*ebpf.MapSpec, error) {
	stub, err := LoadSpec(stubTC)
	if err != nil {
		return nil, err
	}
	out := map[string]*ebpf.MapSpec{
		"punt_ring": {Name: "punt_ring", Type: ebpf.PerfEventArray},
	}
	for _, name := range []string{mapScratch, mapConfig, mapCopyRing, mapCopyCPU, mapCopyDevs} {
		ms, ok := stub.Maps[name]
		if !ok {
			return nil, fmt.Errorf("stub object has no map %s", name)
		}
		ms = ms.Copy()
		ms.Name = strings.TrimPrefix(name, "enf_")
		out[ms.Name] = ms
	}
	if out["scratch"].ValueSize != uint32(sizeOf[Metadata]()) || out["config"].ValueSize != uint32(sizeOf[Config]()) {
		return nil, errors.New("the stub object's metadata or configuration is not the size this daemon writes (rebuild the eBPF objects)")
	}
	for _, h := range []Hook{XDP, TC} {
		out[string(h)+"_panel"] = &ebpf.MapSpec{Name: string(h) + "_panel", Type: ebpf.ProgramArray, KeySize: 4, ValueSize: 4, MaxEntries: MaxSlots}
		out[string(h)+ownerPinPart] = &ebpf.MapSpec{Name: string(h) + ownerPinPart, Type: ebpf.Array, KeySize: 4, ValueSize: 4, MaxEntries: MaxSlots}
	}
	return out, nil
}

// renewShared sets the pins of the shared maps aside if one of them no
// longer fits its spec: all of them, because they change together. A new
// program over a new scratch must never be entered from an earlier one
// through a panel they share; with every map new, the earlier release's
// stubs, panel and cubes stay one whole that forwards until each
// interface's link moves to the new programs. The reasons go to
// d.renewed.
//
// Set-aside pins found at open say an earlier renewal was cut short (the
// daemon stopped before every interface moved), and some interfaces may
// still run over each generation set aside. So nothing set aside is
// removed here: the pins of the latest renewal not yet set aside (of the
// release before it) are set aside with it, and if what it made does not
// fit this build either (a third release), that is set aside too, as a
// generation of its own. At worst that renews a map that was already new:
// the cubes loaded over it are reloaded once more (StaleFramework),
// nothing runs over a mix. DropRenewed removes every generation.
func (d *Datapath) renewShared(specs map[string]*ebpf.MapSpec) error {
	names := slices.Sorted(maps.Keys(specs))
	gen, err := setAsideGeneration(d.root)
	if err != nil {
		return err
	}
	if gen > 0 {
		d.renewing = true
		for _, name := range names {
			p := filepath.Join(d.root, name)
			if _, err := os.Stat(setAsidePin(p, gen)); err == nil {
				continue
			}
			if err := os.Rename(p, setAsidePin(p, gen)); err == nil {
				d.renewed = append(d.renewed, MapReset{name, "made anew: an earlier start stopped in the middle of renewing the framework's maps"})
			}
		}
	}
	changed := map[string]string{}
	var pinned, first []string
	for _, name := range names {
		p := filepath.Join(d.root, name)
		m, err := ebpf.LoadPinnedMap(p, nil)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return fmt.Errorf("map %s under %s: %w", name, d.root, err)
		}
		why, err := mapFits(specs[name], m)
		m.Close()
		if err != nil && !errors.Is(err, errNoLayout) && !errors.Is(err, errNoNewType) {
			return fmt.Errorf("map %s under %s: %w", name, d.root, err)
		}
		pinned = append(pinned, name)
		if why != "" {
			changed[name] = why
			first = append(first, name)
		}
	}
	if len(changed) == 0 {
		return nil
	}
	d.renewing = true
	for _, name := range pinned {
		p := filepath.Join(d.root, name)
		if err := os.Rename(p, setAsidePin(p, gen+1)); err != nil {
			return fmt.Errorf("map %s under %s: %w", name, d.root, err)
		}
		why, ok := changed[name]
		if !ok {
			why = "made anew with " + strings.Join(first, ", ") + ": the framework's maps change together"
		}
		d.renewed = append(d.renewed, MapReset{name, why})
	}
	return nil
}

// oldSuffix marks the pin of a shared map renewShared replaced: it stays
// pinned until every interface runs the new programs (DropRenewed). A
// program array whose last pin and descriptor go is emptied by the kernel
// (its user references drop to zero), however many programs still use it:
// the earlier release's panel would stop forwarding before the interfaces
// moved off it. The first generation set aside is NAME-old, later ones
// (renewals with a start cut short between them) NAME-old2, NAME-old3...
const oldSuffix = "-old"

// setAsideName matches the pins renewShared set aside, with their generation.
var setAsideName = regexp.MustCompile(`^[a-z_]+` + oldSuffix + `([0-9]*)$`)

// setAsidePin is the pin path a shared map pinned at p is set aside to as
// generation gen (1, 2, ...).
func setAsidePin(p string, gen int) string {
	if gen == 1 {
		return p + oldSuffix
	}
	return p + oldSuffix + strconv.Itoa(gen)
}

// setAsideGeneration is the latest generation of set-aside pins under root
// (0: none, no renewal left unfinished).
func setAsideGeneration(root string) (int, error) {
	ents, err := os.ReadDir(root)
	if err != nil {
		return 0, err
	}
	latest := 0
	for _, e := range ents {
		m := setAsideName.FindStringSubmatch(e.Name())
		if m == nil {
			continue
		}
		gen := 1
		if m[1] != "" {
			if gen, err = strconv.Atoi(m[1]); err != nil {
				continue
			}
		}
		latest = max(latest, gen)
	}
	return latest, nil
}

// DropRenewed removes the pins of the shared maps earlier releases left
// (renewShared set them aside, one generation per renewal): called once
// every interface runs the new programs, the earlier ones free theirs as
// their links leave them.
func (d *Datapath) DropRenewed() error {
	ents, err := os.ReadDir(d.root)
	if err != nil {
		return err
	}
	var errs []error
	for _, e := range ents {
		if setAsideName.MatchString(e.Name()) {
			errs = append(errs, os.Remove(filepath.Join(d.root, e.Name())))
		}
	}
	return errors.Join(errs...)
}

// sharedMap opens the shared map pinned as spec.Name under the root, or
// makes and pins it.
func (d *Datapath) sharedMap(spec *ebpf.MapSpec) (*ebpf.Map, error) {
	m, err := pinnedMap(d.root, spec.Copy())
	if err != nil {
		return nil, err
	}
	if info, err := m.Info(); err == nil {
		if id, ok := info.ID(); ok {
			d.sharedIDs[id] = spec.Name
		}
	}
	return m, nil
}

// mapFits says why a pinned map cannot serve as spec's ("" if it can): its
// type, sizes or flags differ, or its key or value layout does.
// errNoLayout and errNoNewType come with "": kept on the sizes alone.
func mapFits(spec *ebpf.MapSpec, m *ebpf.Map) (string, error) {
	if err := spec.Compatible(m); err != nil {
		return strings.TrimSuffix(err.Error(), ": "+ebpf.ErrMapIncompatible.Error()), nil
	}
	changed, err := layoutChange(spec, m)
	if err != nil && !errors.Is(err, errNoLayout) && !errors.Is(err, errNoNewType) {
		return "its layout could not be read: " + err.Error(), nil
	}
	return changed, err
}

// RenewedMaps lists the shared maps Open made anew because the pinned ones
// (an earlier release's) no longer fit this build, with what changed.
func (d *Datapath) RenewedMaps() []MapReset { return d.renewed }

// StaleFramework says why the program pinned for the cube must not be
// adopted although built from the current object ("" if nothing stops it):
// it runs over a shared map that is no longer the framework's (one Open
// renewed, at this start or at an earlier one cut short).
func (d *Datapath) StaleFramework(name string) (string, error) {
	if !d.renewing {
		return "", nil // no renewal at this start, none left unfinished
	}
	prog, err := ebpf.LoadPinnedProgram(filepath.Join(d.cubeDir(name), progPin), nil)
	if err != nil {
		return "", fmt.Errorf("cube %s: %w", name, err)
	}
	defer prog.Close()
	return d.staleMaps(prog)
}

// staleMaps names a shared map prog uses that is not the current one.
func (d *Datapath) staleMaps(prog *ebpf.Program) (string, error) {
	info, err := prog.Info()
	if err != nil {
		return "", err
	}
	ids, ok := info.MapIDs()
	if !ok {
		return "", errors.New("the kernel does not list the maps of a program")
	}
	for _, id := range ids {
		if _, cur := d.sharedIDs[id]; cur {
			continue
		}
		m, err := ebpf.NewMapFromID(id)
		if err != nil {
			continue // freed meanwhile: nothing runs over it
		}
		mi, err := m.Info()
		m.Close()
		if err != nil {
			return "", err
		}
		for _, name := range d.sharedIDs {
			if mi.Name == name {
				return fmt.Sprintf("it runs over the framework map %s of an earlier edgenf, replaced because its layout changed", name), nil
			}
		}
	}
	return "", nil
}
