// Package counters reads and resets the per-CPU counters NFs keep with
// bpf/include/edgenf/counters.h: named event counters (ENF_COUNTERS, one
// __u64 per index) and traffic counters (ENF_TRAFFIC_COUNTERS, packets and
// bytes per index). The kernel keeps one copy per CPU, so that the fast path
// never contends; these sum them.
package counters

import (
	"fmt"

	"github.com/cilium/ebpf"
	"github.com/edgenf/edgenf/internal/cube"
)

// Named are an NF's event counters: the map ENF_COUNTERS declared, whose
// index i counts Names[i] (the order of the C enum).
type Named struct {
	Map   string
	Names []string
}

// Counter is one named counter, summed over the CPUs.
type Counter struct {
	Name  string `json:"name"`
	Value uint64 `json:"value"`
}

// Read returns every counter, in the order of Names.
func (n Named) Read(h cube.Handle) ([]Counter, error) {
	m, err := h.Map(n.Map)
	if err != nil {
		return nil, err
	}
	out := make([]Counter, 0, len(n.Names))
	var per []uint64
	for i, name := range n.Names {
		if err := m.Lookup(uint32(i), &per); err != nil {
			return nil, fmt.Errorf("%s[%d]: %w", n.Map, i, err)
		}
		var sum uint64
		for _, v := range per {
			sum += v
		}
		out = append(out, Counter{name, sum})
	}
	return out, nil
}

// Values returns the counters by name.
func (n Named) Values(h cube.Handle) (map[string]uint64, error) {
	cs, err := n.Read(h)
	if err != nil {
		return nil, err
	}
	out := make(map[string]uint64, len(cs))
	for _, c := range cs {
		out[c.Name] = c.Value
	}
	return out, nil
}

// Reset zeroes every counter.
func (n Named) Reset(h cube.Handle) error {
	m, err := h.Map(n.Map)
	if err != nil {
		return err
	}
	keys := make([]uint32, len(n.Names))
	for i := range keys {
		keys[i] = uint32(i)
	}
	return Zero[uint64](m, keys...)
}

// View is the cube's "counters" view: every counter, in order.
func (n Named) View(doc string) cube.View {
	return cube.View{Name: "counters", Doc: doc, Item: &Counter{},
		List: func(h cube.Handle, _ *cube.Cube) (any, error) { return n.Read(h) }}
}

// ResetAction is the cube's "reset_counters" action. also, if set, zeroes
// the NF's other counters after these.
func (n Named) ResetAction(doc string, also func(h cube.Handle) error) cube.Action {
	return cube.Action{Name: "reset_counters", Doc: doc, Do: func(h cube.Handle, _ *cube.Cube, _ any) (any, error) {
		if err := n.Reset(h); err != nil {
			return nil, err
		}
		if also != nil {
			if err := also(h); err != nil {
				return nil, err
			}
		}
		return Reset, nil
	}}
}

// Reset is what a reset action answers.
var Reset = map[string]string{"result": "counters reset"}

// Traffic mirrors struct enf_traffic: what one traffic counter counted.
type Traffic struct {
	Packets uint64
	Bytes   uint64
}

// ReadTraffic sums traffic counter idx of map m over the CPUs.
func ReadTraffic(m *ebpf.Map, idx uint32) (Traffic, error) {
	var per []Traffic
	if err := m.Lookup(idx, &per); err != nil {
		return Traffic{}, err
	}
	var s Traffic
	for _, c := range per {
		s.Packets += c.Packets
		s.Bytes += c.Bytes
	}
	return s, nil
}

// Zero zeroes entries keys of per-CPU array m, whose values are Vs, on
// every CPU.
func Zero[V any](m *ebpf.Map, keys ...uint32) error {
	zero := make([]V, CPUs)
	for _, k := range keys {
		if err := m.Put(k, zero); err != nil {
			return err
		}
	}
	return nil
}

// CPUs is the number of copies a per-CPU map keeps of each value.
var CPUs = func() int {
	n, err := ebpf.PossibleCPU()
	if err != nil {
		return 1
	}
	return n
}()
