package datapath

import (
	"github.com/cilium/ebpf"
)

func readStats(m *ebpf.Map, n int) ([]Stats, error) {
	out := make([]Stats, n)
	var percpu []Stats
	for i := 0; i < n; i++ {
		if err := m.Lookup(uint32(i), &percpu); err != nil {
			return nil, err
		}
		for _, s := range percpu {
			out[i].Add(s)
		}
	}
	return out, nil
}

func zeroPerCPU(m *ebpf.Map, n int) error {
	cpus, err := ebpf.PossibleCPU()
	if err != nil {
		return err
	}
	zero := make([]Stats, cpus)
	for i := 0; i < n; i++ {
		if err := m.Update(uint32(i), zero, ebpf.UpdateAny); err != nil {
			return err
		}
	}
	return nil
}
