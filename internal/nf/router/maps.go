package router

import (
	"errors"
	"fmt"

	"github.com/cilium/ebpf"
)

// writtenMap is a kernel map the router fills from its tables (the IPv4 and
// the IPv6 routes) and what it wrote there, so that a sync writes only
// differences: with 100k routes, rewriting all of them on every change would
// stall the engine.
type writtenMap[K, V comparable] struct {
	name    string
	written map[K]V // nil until the first sync reads the map back (a restarted daemon)
}

// sync makes m hold exactly want.
func (w *writtenMap[K, V]) sync(m *ebpf.Map, want map[K]V) error {
	if w.written == nil {
		w.written = map[K]V{}
		var k K
		var v V
		it := m.Iterate()
		for it.Next(&k, &v) {
			w.written[k] = v
		}
	}
	for k := range w.written {
		if _, ok := want[k]; !ok {
			if err := w.delete(m, k); err != nil {
				return err
			}
		}
	}
	for k, v := range want {
		if old, ok := w.written[k]; ok && old == v {
			continue
		}
		if err := w.put(m, k, v); err != nil {
			return err
		}
	}
	return nil
}

// put writes one entry.
func (w *writtenMap[K, V]) put(m *ebpf.Map, k K, v V) error {
	if err := m.Put(k, v); err != nil {
		return fmt.Errorf("%s %v: %w", w.name, k, err)
	}
	if w.written != nil {
		w.written[k] = v
	}
	return nil
}

// delete removes one entry (absent is fine).
func (w *writtenMap[K, V]) delete(m *ebpf.Map, k K) error {
	if err := m.Delete(k); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
		return fmt.Errorf("%s: %w", w.name, err)
	}
	if w.written != nil {
		delete(w.written, k)
	}
	return nil
}

// syncHash makes a small hash map (own addresses → port) hold exactly want.
func syncHash[K, V comparable](m *ebpf.Map, name string, want map[K]V) error {
	var k K
	var v V
	var del []K
	it := m.Iterate()
	for it.Next(&k, &v) {
		if w, ok := want[k]; !ok || w != v {
			del = append(del, k)
		}
	}
	for _, k := range del {
		m.Delete(k)
	}
	for k, v := range want {
		if err := m.Put(k, v); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
	return nil
}
