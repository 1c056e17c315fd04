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

type chainEntries map[string]chainEntry

// chainEntriesOf maps every chain entry of t's slicers to its slice (the
// engine lets one entry serve one slice only).
func chainEntriesOf(t *cube.Topology) chainEntries {
	out := chainEntries{}
	for _, name := range t.CubeNames() {
		c := t.Cubes[name]
		sls, _ := slicesOf(c) // a bad table: no chain slices
		for _, sl := range sls {
			if sl.Chain != "" {
				out[sl.Chain] = chainEntry{slicer: c, slice: sl}
			}
		}
	}
	return out
}

// intoChains extends ch, a frame entering slicer c by port in, into the
// chain of every slice of c that names its entry, unless in is a slice's
// way back (then the frame only returns: outPorts).
func intoChains(t *cube.Topology, ch Chain, c *cube.Cube, in cube.Port, visited map[string]bool, entries chainEntries) []Chain {
	sls, _ := slicesOf(c)
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
		ep, err := cube.ParseEndpoint(sl.Chain)
		if err != nil || !ep.IsCube() {
			continue
		}
		first := t.Cubes[ep.Cube]
		if first == nil || first.Port(ep.Port) == nil {
			continue
		}
		next := ch
		next.Hops = append(slices.Clone(ch.Hops), Hop{Cube: c.Name, Type: c.Type, In: in.Name, Out: sl.Chain})
		next.Hops = append(next.Hops, stackHops(t, sl.Chain, datapath.Ingress)...)
		res = append(res, follow(t, next, first, *first.Port(ep.Port), visited, entries)...)
	}
	return res
}
