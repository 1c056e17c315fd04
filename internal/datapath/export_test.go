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
