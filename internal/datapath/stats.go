package datapath

import (
	"errors"

	"github.com/cilium/ebpf"
)

// readStats sums the per-CPU counters of entries 0..n-1 of a stats map. One
// batch lookup reads them all (a scrape of thousands of cubes makes one
// system call per cube, not one per port); where it fails (kernels before
// 5.6 have no batch lookups of arrays) entries are read one by one.
func readStats(m *ebpf.Map, n int) ([]Stats, error) {
	cpus, err := ebpf.PossibleCPU()
	if err != nil {
		return nil, err
	}
	keys := make([]uint32, n)
	percpu := make([]Stats, n*cpus)
	var cursor ebpf.MapBatchCursor
	got, err := m.BatchLookup(&cursor, keys, percpu, nil)
	if err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
		// ErrKeyNotExist only says the batch reached the map's end
		return readStatsEach(m, n)
	}
	out := make([]Stats, n)
	for i := 0; i < got; i++ {
		for _, s := range percpu[i*cpus : (i+1)*cpus] {
			out[keys[i]].Add(s)
		}
	}
	return out, nil
}

func readStatsEach(m *ebpf.Map, n int) ([]Stats, error) {
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
