package datapath

import (
	"github.com/cilium/ebpf"
)

// PreallocBytes is the kernel memory a cube loaded from spec allocates for
// its own maps at load time, whatever they hold later: arrays, and hash
// maps the kernel preallocates (all but those created with
// BPF_F_NO_PREALLOC; LRU maps always are), and every hash map's buckets
// (a power of two at least its maximum entries, allocated at creation
// whether its elements are or not). LPM tries and the elements of
// unpreallocated hash maps grow with their entries, which the entry quota
// bounds; the
// framework's shared maps, and the interface maps the direct entry reads
// (the framework's too: ifaces.go), are not the cube's. The figures follow the
// kernel's allocators (8-byte rounded keys and values, a 48-byte element
// header in hash maps, one value per possible CPU in per-CPU maps), close
// to what `bpftool map` reports as memlock.
func PreallocBytes(spec *ebpf.CollectionSpec) uint64 {
	cpus, err := ebpf.PossibleCPU()
	if err != nil || cpus < 1 {
		cpus = 1
	}
	var total uint64
	for name, m := range spec.Maps {
		if isShared(name) || isIfaceMap(name) {
			continue
		}
		total += mapBytes(m, uint64(cpus))
	}
	return total
}

const (
	bpfNoPrealloc = 1 // BPF_F_NO_PREALLOC
	htabElemSize  = 48
	htabBucket    = 16 // struct bucket: a list head and a spinlock
)

// htabBuckets is the bucket array of a hash map of n entries.
func htabBuckets(n uint64) uint64 {
	b := uint64(1)
	for b < n {
		b <<= 1
	}
	return b * htabBucket
}

func round8(n uint32) uint64 { return (uint64(n) + 7) &^ 7 }

func mapBytes(m *ebpf.MapSpec, cpus uint64) uint64 {
	n := uint64(m.MaxEntries)
	switch m.Type {
	case ebpf.Array, ebpf.ProgramArray, ebpf.PerfEventArray, ebpf.ArrayOfMaps, ebpf.CGroupArray,
		ebpf.DevMap, ebpf.CPUMap, ebpf.XSKMap:
		return n * round8(m.ValueSize)
	case ebpf.PerCPUArray:
		return n * (8 + round8(m.ValueSize)*cpus)
	case ebpf.Hash, ebpf.HashOfMaps:
		if m.Flags&bpfNoPrealloc != 0 {
			return htabBuckets(n)
		}
		return htabBuckets(n) + n*(htabElemSize+round8(m.KeySize)+round8(m.ValueSize))
	case ebpf.DevMapHash:
		return n * (htabElemSize + round8(m.KeySize) + round8(m.ValueSize))
	case ebpf.LRUHash:
		return htabBuckets(n) + n*(htabElemSize+round8(m.KeySize)+round8(m.ValueSize))
	case ebpf.PerCPUHash, ebpf.LRUCPUHash:
		if m.Type == ebpf.PerCPUHash && m.Flags&bpfNoPrealloc != 0 {
			return htabBuckets(n)
		}
		return htabBuckets(n) + n*(htabElemSize+round8(m.KeySize)+8+round8(m.ValueSize)*cpus)
	case ebpf.RingBuf:
		return n
	case ebpf.Queue, ebpf.Stack:
		return (n + 1) * round8(m.ValueSize)
	case ebpf.LPMTrie:
		return 0
	}
	return n * 8
}
