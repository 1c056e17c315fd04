package datapath

import (
	"fmt"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"
)

// The direct entry of a cube object (EDGENF_CUBE and EDGENF_TRANSPARENT
// define it): the cube's program entered where it does the stub's work
// itself, attached to an interface in place of the stub when the
// interface's hop starts with that cube. It saves the stub's tail call. It
// is loaded once per cube and direction over the interface maps of that
// hook and direction (ifaces.go), so the stub's hops and counters stay
// authoritative.
const EntryName = "edgenf_entry"

// withoutEntry is spec minus the direct entry, for loading the cube itself.
func withoutEntry(spec *ebpf.CollectionSpec) *ebpf.CollectionSpec {
	if spec.Programs[EntryName] == nil {
		return spec
	}
	spec = spec.Copy()
	delete(spec.Programs, EntryName)
	for _, n := range ifaceMapNames {
		delete(spec.Maps, n)
	}
	return spec
}

// entrySpec returns spec if its direct entry can stand in for the stub: it
// has one, reading the interface maps (ifaces.go), and no mutable globals
// (.data, .bss), which a second copy of the program would not share with
// the first.
func entrySpec(spec *ebpf.CollectionSpec) *ebpf.CollectionSpec {
	if spec == nil || spec.Programs[EntryName] == nil {
		return nil
	}
	for name, ms := range spec.Maps {
		if isSection(name) && ms.Flags&unix.BPF_F_RDONLY_PROG == 0 {
			return nil
		}
	}
	for _, n := range ifaceMapNames {
		if spec.Maps[n] == nil {
			return nil // built against an earlier cube.h: one entry per interface then
		}
	}
	return spec
}

// HasEntry reports whether the cube can be entered directly from an
// interface.
func (c *Program) HasEntry() bool { return c.spec != nil }

// loadEntry loads c's direct entry over the interface maps ifmaps: the
// cube's own maps (through their pins), the shared ones, and the
// interfaces' hops and counters.
func (d *Datapath) loadEntry(c *Program, ifmaps map[string]*ebpf.Map) (*ebpf.Program, error) {
	spec := c.spec.Copy()
	for n := range spec.Programs {
		if n != EntryName {
			delete(spec.Programs, n)
		}
	}
	coll, err := d.loadCollection(spec, c.Hook, c.dir, nil, ifmaps)
	if err != nil {
		return nil, fmt.Errorf("direct entry of cube %s: %w", c.Name, err)
	}
	prog := coll.Programs[EntryName]
	delete(coll.Programs, EntryName)
	coll.Close()
	return prog, nil
}
