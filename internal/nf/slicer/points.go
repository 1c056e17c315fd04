package slicer

import (
	"sort"
	"strings"

	"github.com/edgenf/edgenf/internal/cube"
)

// Point is where a slice's traffic can be seen as the slice's alone: the
// slicer port that leads into its chain (frames leaving the slicer by it
// enter the slice's chain; frames arriving on it leave the slice), or,
// for a slice that names its chain's entry, that entry (the other way
// round: frames arriving on it enter the chain).
type Point struct {
	Slicer, Slice, Tenant string
	Port                  string // the slicer's port: Slicer:Port
	Chain                 string // or the chain's entry, cube:port
}

// String is the point as cube:port.
func (p Point) String() string {
	if p.Chain != "" {
		return p.Chain
	}
	return p.Slicer + ":" + p.Port
}

// IntoChain is the direction at the point ("in": towards the point's
// cube; "out") of the frames that enter the slice's chain.
func (p Point) IntoChain() string {
	if p.Chain != "" {
		return "in"
	}
	return "out"
}

// FindSlice resolves "SLICER/SLICE", or "SLICE" when one slicer alone has
// a slice of that name, among the slices visible to tenant ("": all, the
// administrator's view): another tenant's slice is not found, as if it
// did not exist.
func FindSlice(t *cube.Topology, name, tenant string) (Point, error) {
	slicerName, sliceName, qualified := strings.Cut(name, "/")
	if !qualified {
		sliceName, slicerName = slicerName, ""
	}
	var found []Point
	for _, cn := range t.CubeNames() {
		c := t.Lookup(cn)
		if c.Type != Type.Name || (slicerName != "" && cn != slicerName) {
			continue
		}
		for _, s := range others(c, "") {
			if s.Name == sliceName && (tenant == "" || s.Tenant == tenant) {
				found = append(found, Point{Slicer: cn, Slice: s.Name, Tenant: s.Tenant, Port: s.Port, Chain: s.Chain})
			}
		}
	}
	switch len(found) {
	case 0:
		return Point{}, cube.NotFound("slice", "no slice named %q", name)
	case 1:
		return found[0], nil
	}
	var names []string
	for _, p := range found {
		names = append(names, p.Slicer+"/"+p.Slice)
	}
	sort.Strings(names)
	return Point{}, cube.Conflict("slice", "slice %q is in several slicers: name one of %s", name, strings.Join(names, ", "))
}

// slicesOf are the slices of c (cube.Type.Slices): their ports into and
// out of their chains, owners and budgets.
func slicesOf(c *cube.Cube) ([]cube.Slice, error) {
	set := &Settings{}
	if err := cube.DecodeInto("config", c.Config, set); err != nil {
		return nil, err
	}
	var out []cube.Slice
	for _, s := range others(c, "") {
		entry := s.Entry
		if entry == "" {
			entry = set.Uplink
		}
		out = append(out, cube.Slice{Name: s.Name, Tenant: s.Tenant, Port: s.Port, Entry: entry, Chain: s.Chain, BudgetNS: s.BudgetNS})
	}
	return out, nil
}
