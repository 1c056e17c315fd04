// Package bpfmap walks, fills and prunes large BPF maps with batch operations.
// Map.Iterate costs two system calls per entry: a full 256k-entry
// connection table took 0.6 s to sweep here, with the daemon's engine lock
// held by the controller's tick; batches of 4096 take 80 ms.
package bpfmap

import (
	"errors"

	"github.com/cilium/ebpf"
)

// batch is the number of entries one system call reads or deletes.
const batch = 4096

// Each calls fn with every entry of m until fn returns false. Map types
// without batch operations are walked one entry at a time.
func Each[K, V any](m *ebpf.Map, fn func(k K, v V) bool) error {
	var cur ebpf.MapBatchCursor
	keys, vals := make([]K, batch), make([]V, batch)
	for {
		n, err := m.BatchLookup(&cur, keys, vals, nil)
		if errors.Is(err, ebpf.ErrNotSupported) {
			return each(m, fn)
		}
		for i := range n {
			if !fn(keys[i], vals[i]) {
				return nil
			}
		}
		if errors.Is(err, ebpf.ErrKeyNotExist) {
			return nil // the end
		}
		if err != nil {
			return err
		}
	}
}

func each[K, V any](m *ebpf.Map, fn func(k K, v V) bool) error {
	var k K
	var v V
	it := m.Iterate()
	for it.Next(&k, &v) {
		if !fn(k, v) {
			return nil
		}
	}
	return it.Err()
}

// Delete removes keys from m, in batches; keys already gone are skipped.
func Delete[K any](m *ebpf.Map, keys []K) error {
	for len(keys) > 0 {
		chunk := keys[:min(batch, len(keys))]
		n, err := m.BatchDelete(chunk, nil)
		switch {
		case err == nil:
			keys = keys[len(chunk):]
		case errors.Is(err, ebpf.ErrKeyNotExist):
			keys = keys[n+1:] // the kernel stopped at a missing key
		case errors.Is(err, ebpf.ErrNotSupported):
			return deleteEach(m, keys)
		default:
			return err
		}
	}
	return nil
}

func deleteEach[K any](m *ebpf.Map, keys []K) error {
	for _, k := range keys {
		if err := m.Delete(k); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
			return err
		}
	}
	return nil
}

// Put writes keys[i] = vals[i] into m, in batches. Map types without batch
// updates, or a batch the kernel refuses, are written one entry at a time
// (which names the entry at fault).
func Put[K, V any](m *ebpf.Map, keys []K, vals []V) error {
	for len(keys) > 0 {
		n := min(batch, len(keys))
		if _, err := m.BatchUpdate(keys[:n], vals[:n], nil); err != nil {
			for i := range n {
				if err := m.Put(keys[i], vals[i]); err != nil {
					return err
				}
			}
		}
		keys, vals = keys[n:], vals[n:]
	}
	return nil
}
