package estimate

import (
	"slices"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/datapath"
)

// Slices that name their chain's entry (cube.Slice.Chain): no port of the
// slicer leads into them. A frame classified into one is handed straight
// to the entry (a hop through the patch panel, with the transparent cubes
// attached there), and what the chain sends back out of that entry, an
// unpeered port, returns to the slicer (on a virtual port), which sends it
// out of the slice's entry port. Chains walks both ways so, and a chain
// slice's estimate, and its budget_ns, count the same cubes as a port
// slice's.

// chainEntry is the slicer and slice a chain entry ("cube:port") belongs to.
type chainEntry struct {
	slicer *cube.Cube
	slice  cube.Slice
}

// chainEntries maps every chain entry of a topology's slicers to its slice
// (the engine lets one entry serve one slice only), and keeps each
// slicer's slices decoded: a walk meets a slicer of 1,000 slices once per
// slice, on the way back.
type chainEntries struct {
	by     map[string]chainEntry
	slices map[*cube.Cube][]cube.Slice
}

func chainEntriesOf(t *cube.Topology) chainEntries {
	out := chainEntries{by: map[string]chainEntry{}, slices: map[*cube.Cube][]cube.Slice{}}
	for _, name := range t.CubeNames() {
		c := t.Cubes[name]
		sls, _ := slicesOf(c) // a bad table: no slices (every port, as for any cube)
		if len(sls) > 0 {
			out.slices[c] = sls
		}
		for _, sl := range sls {
			if sl.Chain != "" {
				out.by[sl.Chain] = chainEntry{slicer: c, slice: sl}
			}
		}
	}
	return out
}

// slicesOf are c's slices, none for a cube that is no slicer.
func (e chainEntries) slicesOf(c *cube.Cube) []cube.Slice { return e.slices[c] }

// intoChains extends ch, a frame entering slicer c by port in, into the
// chain of every slice of c that names its entry, unless in is a slice's
// way back (then the frame only returns: outPorts).
func intoChains(t *cube.Topology, ch Chain, c *cube.Cube, in cube.Port, visited map[string]bool, entries chainEntries) []Chain {
	sls := entries.slicesOf(c)
	for _, sl := range sls {
		if (sl.Chain != "" && sl.Chain == in.Name) || (sl.Chain == "" && sl.Port == in.Name) {
			return nil
		}
	}
	var res []Chain
	for _, sl := range sls {
		if sl.Chain == "" {
			continue
		}
		into := &chainEntry{slicer: c, slice: sl}
		ep, err := cube.ParseEndpoint(sl.Chain)
		if err != nil || !ep.IsCube() {
			continue
		}
		first := t.Cubes[ep.Cube]
		if first == nil || first.Port(ep.Port) == nil {
			continue
		}
		next := ch
		next.slice = into
		next.Hops = append(slices.Clone(ch.Hops), Hop{Cube: c.Name, Type: c.Type, In: in.Name, Out: sl.Chain})
		next.Hops = append(next.Hops, stackHops(t, sl.Chain, datapath.Ingress)...)
		res = append(res, follow(t, next, first, *first.Port(ep.Port), visited, entries)...)
	}
	return res
}
