package datapath

// An interface program's own maps (its hop, its counters) are pinned in its
// directory and kept from one attach to the next, across daemon restarts.
// A release that changes their layout must not run its stub over them: at
// attach, a pinned map the stub object no longer declares the same way is
// set aside and the new stub gets a new one; its hop is written before the
// link moves to the new program, so the first frame it runs finds its hop.
// The earlier program keeps its own maps until the link leaves it.

import (
	"github.com/cilium/ebpf"
)

// renewStubMaps sets aside the maps pinned in the stub directory sdir that
// spec cannot reuse. restore puts them back (the new stub did not load),
// drop removes them (it did). A directory is checked once per datapath:
// after its first attach its maps are this build's, and later attaches
// (a hop that changes the interface's program) do not pay for reading
// their layouts again.
func (d *Datapath) renewStubMaps(sdir string, spec *ebpf.CollectionSpec) (reset []MapReset, restore, drop func(), err error) {
	d.stubsMu.Lock()
	seen := d.stubsChecked[sdir]
	d.stubsMu.Unlock()
	nothing := func() {}
	if seen {
		return nil, nothing, nothing, nil
	}
	reset, restore, dropAside, err := renewMaps(sdir, spec)
	if err != nil {
		return nil, nil, nil, err
	}
	return reset, restore, func() {
		dropAside()
		d.stubsMu.Lock()
		d.stubsChecked[sdir] = true
		d.stubsMu.Unlock()
	}, nil
}

// renewMaps sets aside the maps pinned in dir that spec cannot reuse.
func renewMaps(sdir string, spec *ebpf.CollectionSpec) (reset []MapReset, restore, drop func(), err error) {
	up, err := incompatibleMaps(sdir, spec, UpgradeOptions{})
	if err != nil {
		return nil, nil, nil, err
	}
	names := make([]string, len(up.Reset))
	for i, r := range up.Reset {
		names[i] = r.Map
	}
	restore, drop, err = setAside(sdir, names)
	if err != nil {
		return nil, nil, nil, err
	}
	return up.Reset, restore, drop, nil
}

// hopRenewed: the stub's hop map is new (renewStubMaps), so no program
// reads it yet and the hop goes in before the link moves.
func (s *Stub) hopRenewed() bool {
	for _, r := range s.Reset {
		if r.Map == MapPorts {
			return true
		}
	}
	return false
}
