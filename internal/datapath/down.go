package datapath

import (
	_ "embed"

	"github.com/cilium/ebpf"
)

var (
	//go:embed bpf/down_xdp.o
	downXDP []byte
	//go:embed bpf/down_tc.o
	downTC []byte
	//go:embed bpf/down_transparent_xdp.o
	downTransparentXDP []byte
	//go:embed bpf/down_transparent_tc.o
	downTransparentTC []byte
)

// DownSpec is the program that stands in for a cube that cannot run (it
// failed to restore): it drops and counts every frame sent to it. Loaded
// in the cube's place (LoadCube), it keeps the cube's panel slot, hops and
// maps.
func DownSpec(hook Hook, transparent bool) (*ebpf.CollectionSpec, error) {
	obj := downXDP
	switch {
	case hook == TC && transparent:
		obj = downTransparentTC
	case hook == TC:
		obj = downTC
	case transparent:
		obj = downTransparentXDP
	}
	return LoadSpec(obj)
}
