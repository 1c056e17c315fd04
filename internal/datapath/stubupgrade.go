package datapath

// The interface programs' maps (their hops, their counters: ifaces.go) are
// pinned and kept across daemon restarts. A release that changes their
// layout must not run its stub over them: when the set is opened, a pinned
// map the stub object no longer declares the same way is set aside and the
// new stub gets a new one; each interface's hop is written into it before
// its link moves to the new program (Stub.replace), so the first frame it
// runs finds its hop. The earlier programs keep their maps until the links
// leave them.

import (
	"github.com/cilium/ebpf"
)

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
