package estimate

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync/atomic"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/datapath"
)

// MaxChainHops bounds a chain, as the fast path does (EDGENF_MAX_HOPS).
const MaxChainHops = 30

// Hop is one program a chain's packet runs: a standard cube (entered on a
// port) or a transparent cube (seen in a direction).
type Hop struct {
	Cube        string `json:"cube"`
	Type        string `json:"type"`
	Transparent bool   `json:"transparent,omitempty"`
	// In is the port a standard cube is entered on, or the direction a
	// transparent cube sees the packet in; Out the port it leaves by.
	In  string `json:"in"`
	Out string `json:"out,omitempty"`
	// At is a transparent cube's attachment point.
	At string `json:"at,omitempty"`
}

func (h Hop) String() string {
	if h.Transparent {
		return fmt.Sprintf("%s (%s, %s at %s)", h.Cube, h.Type, h.In, h.At)
	}
	return fmt.Sprintf("%s (%s, %s→%s)", h.Cube, h.Type, h.In, h.Out)
}

// Chain is one path of packets through a topology: from an interface,
// through cubes, to an interface (or the Linux stack, or a port peered
// with nothing).
type Chain struct {
	From   string        `json:"from"`
	To     string        `json:"to"` // an interface, "linux" or "nothing (drop)"
	Hops   []Hop         `json:"hops"`
	Tenant string        `json:"tenant,omitempty"` // of the first cube
	Hook   datapath.Hook `json:"hook"`
	// slice is the chain slice the walk went into or came back from
	// (slicechains.go), so pricing need not look it up among a slicer's
	// many slices.
	slice *chainEntry
	// unit is the slice branch the walk took at the first slicer it
	// split at (unitWalk), "" before any.
	unit string
}

// ID names a chain by its route, stable across topology changes that keep
// the route.
func (c Chain) ID() string {
	var b strings.Builder
	b.WriteString(c.From)
	for _, h := range c.Hops {
		b.WriteString(" → ")
		b.WriteString(h.Cube)
		if !h.Transparent && h.Out != "" {
			b.WriteString(":" + h.Out)
		}
	}
	b.WriteString(" → " + c.To)
	return b.String()
}

// Chains lists the paths of packets through t: from every interface peered
// with a cube port (and every interface carrying only attachments), through
// each port a cube may send out of (every port but the one a packet came
// in on), until an interface, the Linux stack, an unpeered port, or a loop.
func Chains(t *cube.Topology) []Chain {
	var out []Chain
	entries := chainEntriesOf(t)
	peered := map[string]bool{}
	for _, name := range t.CubeNames() {
		c := t.Lookup(name)
		for _, p := range c.Ports {
			if iface, ok := ifacePeer(p); ok {
				peered[iface] = true
				out = append(out, chainsFrom(t, c, p, entries)...)
			}
		}
	}
	points := make([]string, 0, len(t.Attachments))
	for p := range t.Attachments {
		points = append(points, p)
	}
	sort.Strings(points)
	for _, point := range points {
		if ch, ok := attachedChain(t, point, peered, entries); ok {
			out = append(out, ch)
		}
	}
	return out
}

// ifacePeer is the interface port p is peered with, if it is.
func ifacePeer(p cube.Port) (string, bool) {
	ep, err := cube.ParseEndpoint(p.Peer)
	if err != nil || ep.IsCube() {
		return "", false
	}
	return ep.Iface, true
}

// chainsFrom are the chains of packets entering cube c by port p from the
// interface p is peered with.
func chainsFrom(t *cube.Topology, c *cube.Cube, p cube.Port, entries chainEntries) []Chain {
	iface, _ := ifacePeer(p)
	entries.ref(c.Name)
	ch := Chain{From: iface, Tenant: c.Tenant, Hook: hookOf(c)}
	ch.Hops = append(ch.Hops, entries.stack(t, iface, datapath.Ingress)...)
	ch.Hops = append(ch.Hops, entries.stack(t, c.Name+":"+p.Name, datapath.Ingress)...)
	return follow(t, ch, c, p, map[string]bool{}, entries)
}

// attachedChain is the chain of an interface carrying attachments only
// (none: it is peered with a cube port, or carries nothing).
func attachedChain(t *cube.Topology, point string, peered map[string]bool, entries chainEntries) (Chain, bool) {
	ep, err := cube.ParseEndpoint(point)
	if err != nil || ep.IsCube() || peered[ep.Iface] || len(t.Attachments[point]) == 0 {
		return Chain{}, false
	}
	ch := Chain{From: ep.Iface, To: "linux", Hops: entries.stack(t, point, datapath.Ingress)}
	if first := t.Lookup(t.Attachments[point][0]); first != nil {
		ch.Tenant, ch.Hook = first.Tenant, hookOf(first)
	}
	return ch, true
}

// follow extends ch into cube c entered on port in, once per port c can
// send out of (and, for a slicer, once per slice that names its chain's
// entry: slicechains.go).
func follow(t *cube.Topology, ch Chain, c *cube.Cube, in cube.Port, visited map[string]bool, entries chainEntries) []Chain {
	key := c.Name + ":" + in.Name
	if visited[key] || len(ch.Hops) >= MaxChainHops {
		ch.To = "loop (dropped)"
		return []Chain{ch}
	}
	visited = maps(visited)
	visited[key] = true
	entries.ref(c.Name)
	sc := entries.slicerOf(c)
	_, fromSlice := sc.entry[in.Name]
	fans := len(sc.slices) > 0 && !fromSlice // one branch per slice's way
	outs := outPorts(c, in, sc)
	var res []Chain
	for _, out := range outs {
		next := ch
		entries := entries // the branch's, when it is a unit of its own
		if fans {
			var ok bool
			if next, entries, ok = entries.branch(next, c.Name+"/"+out.Name); !ok {
				continue
			}
		}
		next.Hops = append(slices.Clone(ch.Hops), Hop{Cube: c.Name, Type: c.Type, In: in.Name, Out: out.Name})
		next.Hops = append(next.Hops, entries.stack(t, c.Name+":"+out.Name, datapath.Egress)...)
		if out.Peer == "" {
			if back, ok := entries.entry(c.Name + ":" + out.Name); ok {
				next.slice = &back
				res = append(res, follow(t, next, back.slicer, cube.Port{Name: back.slice.Chain}, visited, entries)...)
				continue
			}
			next.To = "nothing (drop)"
			res = append(res, next)
			continue
		}
		ep, err := cube.ParseEndpoint(out.Peer)
		if err != nil {
			continue
		}
		if !ep.IsCube() {
			if hookOf(c) == datapath.XDP {
				next.Hops = append(next.Hops, entries.stack(t, ep.Iface, datapath.Egress)...)
			}
			next.To = ep.Iface
			res = append(res, next)
			continue
		}
		entries.ref(ep.Cube)
		peer := t.Lookup(ep.Cube)
		if peer == nil || peer.Port(ep.Port) == nil {
			continue
		}
		next.Hops = append(next.Hops, entries.stack(t, ep.String(), datapath.Ingress)...)
		res = append(res, follow(t, next, peer, *peer.Port(ep.Port), visited, entries)...)
	}
	return append(res, intoChains(t, ch, c, in, visited, entries)...)
}

// outPorts are the ports a packet entering c by in may leave by: every
// other port (a one-port cube sends back where it received), but a
// slicing cube sends what enters by an entry port to its slices, and a
// slice's return traffic to that slice's entry only. sc are c's slices
// (a bad table: none, every port as for any cube).
func outPorts(c *cube.Cube, in cube.Port, sc *slicer) []cube.Port {
	sliced := len(sc.slices) > 0
	entry, fromSlice := sc.entry[in.Name] // a chain slice's way back too (slicechains.go)
	outs := make([]cube.Port, 0, len(c.Ports))
	for _, p := range c.Ports {
		switch {
		case p.Name == in.Name:
		case fromSlice:
			if p.Name == entry {
				outs = append(outs, p)
			}
		case sliced:
			if _, toSlice := sc.entry[p.Name]; toSlice {
				outs = append(outs, p)
			}
		default:
			outs = append(outs, p)
		}
	}
	if len(outs) == 0 && !sliced {
		outs = append(outs, in) // a one-port cube sends back where it received
	}
	return outs
}

func maps(m map[string]bool) map[string]bool {
	n := make(map[string]bool, len(m)+1)
	for k, v := range m {
		n[k] = v
	}
	return n
}

// stackHops are the transparent cubes attached at point, in the order a
// packet in direction dir meets them.
func stackHops(t *cube.Topology, point string, dir datapath.Direction) []Hop {
	names := slices.Clone(t.Attachments[point])
	if dir == datapath.Egress {
		slices.Reverse(names)
	}
	out := make([]Hop, 0, len(names))
	for _, n := range names {
		typ := ""
		if c := t.Lookup(n); c != nil {
			typ = c.Type
		}
		out = append(out, Hop{Cube: n, Type: typ, Transparent: true, In: dir.String(), At: point})
	}
	return out
}

// HopCost is one hop of a chain estimate.
type HopCost struct {
	Hop
	// Own is the cube's cost alone (its model's typical packet).
	Own     Breakdown `json:"own"`
	Notes   []string  `json:"notes,omitempty"`
	Unknown bool      `json:"unknown,omitempty"`
	// NS is what the hop adds to the chain: the cube's own cost, less the
	// framework's share it does not pay again after the first hop.
	NS float64 `json:"ns"`
	// Panel is set when the cube is entered through the patch panel, not
	// by a direct jump (TermPanelHop).
	Panel bool `json:"panel,omitempty"`
}

// ChainCost is a chain's estimate.
type ChainCost struct {
	Chain
	ID   string    `json:"id"`
	Hops []HopCost `json:"hops"`
	NS   float64   `json:"ns"`
	PPS  float64   `json:"pps"`
	// LowerBound is set when a hop's NF type has no cost model.
	LowerBound bool     `json:"lower_bound,omitempty"`
	Notes      []string `json:"notes,omitempty"`
	// Slice is the slice the chain carries traffic of ("slicer/slice"),
	// when it crosses a slice's port of a slicer; BudgetNS is that
	// slice's own budget per packet (0: none).
	Slice    string  `json:"slice,omitempty"`
	BudgetNS float64 `json:"budget_ns,omitempty"`
}

// Estimator prices chains with a profile per hook.
type Estimator struct {
	Profiles map[datapath.Hook]*Profile
	// priced counts the cubes priced for chains (Priced).
	priced atomic.Int64
}

// Priced is how many times a cube was priced for a chain so far (a
// cube on many chains of one estimate is priced once): what an admission
// check costs, in tests and benchmarks.
func (e *Estimator) Priced() int64 { return e.priced.Load() }

// Cube prices one cube with the profile of its hook (its type's default
// hook when it names none), for a packet entering it on in.
func (e *Estimator) Cube(c *cube.Cube, in string) (CubeCost, error) {
	return e.cubeVia(c, in, "")
}

// cubeVia prices a cube for a packet entering by in and leaving by out
// ("": the model's typical way).
func (e *Estimator) cubeVia(c *cube.Cube, in, out string) (CubeCost, error) {
	p := e.Profiles[hookOf(c)]
	if p == nil {
		return CubeCost{}, fmt.Errorf("no profile for hook %s", hookOf(c))
	}
	if out == "" {
		return p.CubeEstimate(c, in)
	}
	return p.CubeEstimateVia(c, in, out)
}

// Chain prices one chain: the first program's standalone cost, then each
// later cube's cost less the framework share (TermHop, TermTransparentHop),
// plus the indirect call's extra for a standard cube entered through the
// panel (TermPanelHop).
func (e *Estimator) Chain(t *cube.Topology, ch Chain) (ChainCost, error) {
	return e.chain(t, ch, newCubeCosts())
}

// cubeCosts are the costs of cubes already priced, by cube and the port or
// direction a packet enters by: a cube on many chains, or the same cube in
// the topologies before and after a change (Admission), is priced once;
// and the slices of slicers, decoded once (a slicer of 1,000 slices is on
// 2,000 chains). A cube is never changed in place while its cost is kept.
type cubeCosts struct {
	own    map[*cube.Cube]map[inOut]CubeCost
	slices map[*cube.Cube]*slicer
}

func newCubeCosts() cubeCosts {
	return cubeCosts{own: map[*cube.Cube]map[inOut]CubeCost{}, slices: map[*cube.Cube]*slicer{}}
}

// forget drops what is kept of c.
func (cs cubeCosts) forget(c *cube.Cube) {
	delete(cs.own, c)
	delete(cs.slices, c)
}

type inOut struct {
	in, out string // out only for types priced by their way out (Model.Via)
}

func (e *Estimator) chain(t *cube.Topology, ch Chain, costs cubeCosts) (ChainCost, error) {
	cc := ChainCost{Chain: ch, ID: ch.ID()}
	for i, h := range ch.Hops {
		c := t.Lookup(h.Cube)
		if c == nil {
			return cc, fmt.Errorf("chain %s: no cube %s", cc.ID, h.Cube)
		}
		key := inOut{in: h.In}
		if m, ok := ModelOf(c.Type); ok && m.Via != nil && !h.Transparent {
			key.out = h.Out
		}
		own, ok := costs.own[c][key]
		if !ok {
			var err error
			if own, err = e.cubeVia(c, key.in, key.out); err != nil {
				return cc, err
			}
			e.priced.Add(1)
			if costs.own[c] == nil {
				costs.own[c] = map[inOut]CubeCost{}
			}
			costs.own[c][key] = own
		}
		hc := HopCost{Hop: h, Own: own.Cost, Notes: own.Notes, Unknown: own.Unknown, NS: own.Cost.Total}
		if i > 0 {
			costs := e.Profiles[hookOf(c)].Costs
			switch {
			case h.Transparent:
				hc.NS -= costs[TermTransparentHop]
			case panelHop(t, ch.Hops[i-1]):
				hc.NS += costs[TermPanelHop] - costs[TermHop]
				hc.Panel = true
			default:
				hc.NS -= costs[TermHop]
			}
		}
		if own.Unknown {
			cc.LowerBound = true
			hc.NS = 0
		}
		cc.Hops = append(cc.Hops, hc)
		cc.NS += hc.NS
		if cc.Slice == "" && ch.slice != nil && c == ch.slice.slicer {
			cc.Slice, cc.BudgetNS = c.Name+"/"+ch.slice.slice.Name, ch.slice.slice.BudgetNS
		}
		if cc.Slice == "" && !h.Transparent {
			sl, ok, err := costs.sliceOf(c, h)
			if err != nil {
				return cc, err
			}
			if ok {
				cc.Slice, cc.BudgetNS = c.Name+"/"+sl.Name, sl.BudgetNS
			}
		}
	}
	if len(ch.Hops) == 0 {
		if p := e.Profiles[ch.Hook]; p != nil {
			cc.NS = p.Costs[TermEntry]
		}
	}
	cc.PPS = PPS(cc.NS)
	return cc, nil
}

// panelHop says whether a standard cube that follows hop prev is entered
// through the patch panel rather than by a direct jump (enf_to_peer): when
// prev is a transparent cube (the end of a stack delivers through the
// panel), a cube whose type hops through the panel only, or a cube sending
// from a port past the direct ones.
func panelHop(t *cube.Topology, prev Hop) bool {
	if prev.Transparent {
		return true
	}
	c := t.Lookup(prev.Cube)
	if c == nil {
		return true
	}
	if m, ok := ModelOf(c.Type); ok && m.PanelHops {
		return true
	}
	p := c.Port(prev.Out)
	return p == nil || p.Index >= datapath.DirectPorts
}

// sliceOf is the slice of a slicing cube whose port hop h leaves by (into
// the slice's chain) or enters by (the slice's return traffic).
func (cs cubeCosts) sliceOf(c *cube.Cube, h Hop) (cube.Slice, bool, error) {
	sc, ok := cs.slices[c]
	if !ok {
		sls, err := slicesOf(c)
		if err != nil {
			return cube.Slice{}, false, fmt.Errorf("cube %s: %w", c.Name, err)
		}
		sc = newSlicer(sls)
		cs.slices[c] = sc
	}
	sl, ok := sc.of(h.Out, h.In)
	return sl, ok, nil
}

// slicesOf are the slices of a slicing cube (cube.Type.Slices), none for
// other cubes.
func slicesOf(c *cube.Cube) ([]cube.Slice, error) {
	typ, err := cube.Lookup(c.Type)
	if err != nil || typ.Slices == nil {
		return nil, nil
	}
	return typ.Slices(c)
}

// SliceCost is a slice's estimate: that of its dearest chain, the one
// each of its packets may cost at most.
type SliceCost struct {
	Slice    string  `json:"slice"`
	Chain    string  `json:"chain"` // the dearest chain's ID
	Chains   int     `json:"chains"`
	NS       float64 `json:"ns"`
	PPS      float64 `json:"pps"`
	BudgetNS float64 `json:"budget_ns,omitempty"`
}

// Slices sums chains up by slice, by slice name.
func Slices(chains []ChainCost) []SliceCost {
	by := map[string]*SliceCost{}
	var names []string
	for _, cc := range chains {
		if cc.Slice == "" {
			continue
		}
		s := by[cc.Slice]
		if s == nil {
			s = &SliceCost{Slice: cc.Slice, BudgetNS: cc.BudgetNS}
			by[cc.Slice] = s
			names = append(names, cc.Slice)
		}
		s.Chains++
		if s.Chain == "" || cc.NS > s.NS {
			s.Chain, s.NS, s.PPS = cc.ID, cc.NS, cc.PPS
		}
	}
	sort.Strings(names)
	out := make([]SliceCost, 0, len(names))
	for _, n := range names {
		out = append(out, *by[n])
	}
	return out
}

// HasSliceBudget says whether a slice of t has a budget of its own: the
// admission check runs for it even without a daemon-wide budget.
func HasSliceBudget(t *cube.Topology) bool {
	if t == nil {
		return false
	}
	for _, c := range t.Cubes() {
		sls, err := slicesOf(c)
		if err != nil {
			return true // let the check report it
		}
		for _, sl := range sls {
			if sl.BudgetNS > 0 {
				return true
			}
		}
	}
	return false
}

func hookOf(c *cube.Cube) datapath.Hook {
	if c.Hook == "" {
		if t, err := cube.Lookup(c.Type); err == nil {
			return t.Hooks[0]
		}
	}
	return c.Hook
}

// Topology prices every chain of t.
func (e *Estimator) Topology(t *cube.Topology) ([]ChainCost, error) {
	return e.topology(t, newCubeCosts())
}

func (e *Estimator) topology(t *cube.Topology, costs cubeCosts) ([]ChainCost, error) {
	var out []ChainCost
	for _, ch := range Chains(t) {
		cc, err := e.chain(t, ch, costs)
		if err != nil {
			return nil, err
		}
		out = append(out, cc)
	}
	return out, nil
}
