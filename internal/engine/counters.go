package engine

import (
	"slices"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/datapath"
)

// CubeCounters is a cube as telemetry sees it: who it is and its counters.
type CubeCounters struct {
	Cube   string `json:"cube"`
	Type   string `json:"type"`
	Tenant string `json:"tenant,omitempty"`
	// Slice is the slice whose chain the cube is part of. Telemetry labels
	// every series with it; the cube model has no slices yet (issue 15),
	// so it is empty until they come.
	Slice string `json:"slice,omitempty"`
	// Up is false for a cube that could not be restored: a stand-in drops
	// its frames.
	Up bool `json:"up"`
	// Ports: a standard cube's ports in index order; a transparent cube's
	// two directions through its attachment point, "ingress" and "egress".
	Ports      []PortStats `json:"ports"`
	SlowCopies uint64      `json:"slow_copies"`
	// NF are the NF type's own metrics (cube.MetricsReporter), read in the
	// same hold of the lock.
	NF []cube.Metric `json:"-"`
}

// countersChunk is how many cubes one hold of the engine's lock reads: a
// scrape of 10,000 cubes lets API requests in between chunks.
const countersChunk = 128

// Counters reads the counters of every cube keep accepts (it sees each
// cube's applied state and must not keep or change it), ordered by name.
// The engine's lock is held for one chunk of cubes at a time, never for the
// whole read: each cube's counters are consistent with its ports, and a
// change made meanwhile shows in the cubes read after it.
func (e *Engine) Counters(keep func(*cube.Cube) bool) []CubeCounters {
	e.mu.Lock()
	names := make([]string, 0, len(e.topo.Cubes))
	for n, c := range e.topo.Cubes {
		if keep(c) {
			names = append(names, n)
		}
	}
	e.mu.Unlock()
	slices.Sort(names)
	out := make([]CubeCounters, 0, len(names))
	for len(names) > 0 {
		n := min(countersChunk, len(names))
		out = e.appendCounters(out, names[:n], keep)
		names = names[n:]
	}
	return out
}

func (e *Engine) appendCounters(out []CubeCounters, names []string, keep func(*cube.Cube) bool) []CubeCounters {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, name := range names {
		c, l := e.topo.Cubes[name], e.cubes[name]
		if c == nil || l == nil || !keep(c) { // deleted or given away since
			continue
		}
		cc := CubeCounters{Cube: name, Type: c.Type, Tenant: c.Tenant, Up: l.down == "", SlowCopies: l.slowCopies, Ports: []PortStats{}}
		if l.typ.Transparent {
			if raw, err := l.dc.PortStats(2); err == nil {
				cc.Ports = []PortStats{{Port: "ingress", Index: 0, Stats: raw[0]}, {Port: "egress", Index: 1, Stats: raw[1]}}
			}
		} else if len(l.c.Ports) > 0 {
			last := 0
			for _, p := range l.c.Ports {
				last = max(last, p.Index)
			}
			if raw, err := l.dc.PortStats(min(last+1, datapath.MaxPorts)); err == nil {
				cc.Ports = make([]PortStats, 0, len(l.c.Ports))
				for _, p := range l.c.Ports {
					cc.Ports = append(cc.Ports, PortStats{Port: p.Name, Index: p.Index, Stats: raw[p.Index]})
				}
			}
		}
		if mr, ok := l.ctl.(cube.MetricsReporter); ok {
			cc.NF = mr.Metrics(&handle{e: e, l: l}, l.c)
		}
		out = append(out, cc)
	}
	return out
}
