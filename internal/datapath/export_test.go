package datapath

import "github.com/cilium/ebpf"

// OpenBuild is Open by a build whose shared maps are this one's as change
// leaves them: another release's.
func OpenBuild(root string, change func(map[string]*ebpf.MapSpec)) (*Datapath, error) {
	shared, err := sharedSpecs()
	if err != nil {
		return nil, err
	}
	change(shared)
	return open(root, shared)
}

// SlotsInUse counts the interface slots of hook and dir given out.
func (d *Datapath) SlotsInUse(hook Hook, dir Direction) int {
	s, err := d.ifaceSet(hook, dir)
	if err != nil {
		return -1
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.used)
}
