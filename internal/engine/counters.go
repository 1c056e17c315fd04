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
	// Slice is the slice whose chain the cube is part of (SliceOf).
	// Telemetry labels every series with it.
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
	names := make([]string, 0, e.topo.NumCubes())
	for n, c := range e.topo.Cubes() {
		if keep(c) {
			names = append(names, n)
		}
	}
	sliceOf := SliceOf(e.topo)
	e.mu.Unlock()
	slices.Sort(names)
	out := make([]CubeCounters, 0, len(names))
	for len(names) > 0 {
		n := min(countersChunk, len(names))
		out = e.appendCounters(out, names[:n], keep, sliceOf)
		names = names[n:]
	}
	return out
}

func (e *Engine) appendCounters(out []CubeCounters, names []string, keep func(*cube.Cube) bool, sliceOf map[string]string) []CubeCounters {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, name := range names {
		c, l := e.topo.Lookup(name), e.cubes[name]
		if c == nil || l == nil || !keep(c) { // deleted or given away since
			continue
		}
		cc := CubeCounters{Cube: name, Type: c.Type, Tenant: c.Tenant, Slice: sliceOf[name], Up: l.down == "", SlowCopies: l.slowCopies.Load(), Ports: []PortStats{}}
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
					cc.Ports = append(cc.Ports, PortStats{Port: p.Name, Index: p.Index, PeerDown: e.peerDown(p.Peer), Stats: raw[p.Index]})
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

// SliceOf names the slice of every cube in a slice's chain: the cubes
// reached from a port that leads into a slice (cube.Type.Slices) or from a
// slice's chain entry (cube.Type.SliceChains), through
// cube-to-cube peers and the transparent cubes attached on the way, up to
// the next slicer. A cube reached from several slices (shared by them) is
// none's.
func SliceOf(t *cube.Topology) map[string]string {
	out := map[string]string{}
	shared := map[string]bool{}
	mark := func(name, slice string) bool {
		if shared[name] {
			return false
		}
		if was, ok := out[name]; ok {
			if was != slice {
				delete(out, name)
				shared[name] = true
			}
			return false
		}
		out[name] = slice
		return true
	}
	isSlicer := func(c *cube.Cube) bool {
		typ, err := cube.Lookup(c.Type)
		return err == nil && typ.Slices != nil
	}
	for _, name := range t.CubeNames() {
		c := t.Lookup(name)
		typ, err := cube.Lookup(c.Type)
		if err != nil || typ.Slices == nil {
			continue
		}
		points := map[string]string{} // where each slice's chain starts
		sls, _ := typ.Slices(c)       // a bad table: no slices to label by
		for _, sl := range sls {
			if sl.Port != "" { // (a chain slice's entry: SliceChains)
				points[name+":"+sl.Port] = sl.Name
			}
		}
		if typ.SliceChains != nil {
			for _, sc := range typ.SliceChains(c) {
				points[sc.Entry] = sc.Slice
			}
		}
		for point, slice := range points {
			var queue []string
			enter := func(point string) {
				for _, a := range t.Attachments[point] {
					mark(a, slice)
				}
				ep, err := cube.ParseEndpoint(point)
				if err != nil || !ep.IsCube() {
					return
				}
				if n := t.Lookup(ep.Cube); n != nil && !isSlicer(n) && mark(ep.Cube, slice) {
					queue = append(queue, ep.Cube)
				}
			}
			if ep, err := cube.ParseEndpoint(point); err == nil && ep.Cube == name {
				if p := c.Port(ep.Port); p != nil {
					enter(point)
					if p.Peer != "" {
						enter(p.Peer)
					}
				}
			} else {
				enter(point) // a chain entry: the slice's first cube
			}
			for len(queue) > 0 {
				n := t.Lookup(queue[0])
				queue = queue[1:]
				for _, p := range n.Ports {
					enter(n.Name + ":" + p.Name)
					if p.Peer != "" {
						enter(p.Peer)
					}
				}
			}
		}
	}
	return out
}
