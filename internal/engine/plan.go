package engine

import (
	"fmt"
	"maps"
	"slices"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/datapath"
)

// StubKey names one framework program on a Linux interface.
type StubKey struct {
	Iface string
	Hook  datapath.Hook
	Dir   datapath.Direction
}

// plan is the kernel state a topology needs, apart from the cube programs
// and their NF maps.
type plan struct {
	hops      map[string]map[int]datapath.Hop // cube → port index → hop
	flood     map[string]map[int]int          // cube → port index → ifindex (XDP)
	stubs     map[StubKey]datapath.Hop
	redirects map[string]bool // interfaces XDP programs redirect into
	// chainHops are the hops into slicers' slices' chains, by slicer and
	// slice id (slicechains.go): every slice of the slicers in chainFull,
	// the slices a change touched of the others.
	chainHops map[string]map[int]datapath.Hop
	chainFull map[string]bool
}

// planner resolves names to slots and interface indexes.
type planner struct {
	t       *cube.Topology
	slots   map[string]uint32
	ifindex func(string) (int, error)
	// chains are the slices that lead straight into cube ports.
	chains *chainChange
	// only, when set, limits the plan to the hops of its planned cubes
	// and the stubs of its interfaces (a change's, dirty.go).
	only *changeSet
	// missing collects peered interfaces that do not exist (deleted while
	// peered): their hops drop until the interface is back.
	missing []string
}

// makePlan computes every hop of a validated topology: for each port, the
// transparent cubes to run (own egress attachments, then the peer's ingress
// attachments) and the destination.
func (pl *planner) makePlan() (*plan, error) {
	p := &plan{
		hops:      map[string]map[int]datapath.Hop{},
		flood:     map[string]map[int]int{},
		stubs:     map[StubKey]datapath.Hop{},
		redirects: map[string]bool{},
		chainHops: map[string]map[int]datapath.Hop{},
		chainFull: map[string]bool{},
	}
	for _, name := range pl.cubes() {
		c := pl.t.Lookup(name)
		if isSlicer(c) && (pl.only == nil || pl.chains.full[name]) {
			hops, err := pl.chainHops(name, nil)
			if err != nil {
				return nil, cube.Within("cubes."+name, err)
			}
			p.chainHops[name], p.chainFull[name] = hops, true
		}
		p.hops[name] = map[int]datapath.Hop{}
		p.flood[name] = map[int]int{}
		for _, port := range c.Ports {
			h, ifidx, err := pl.portHop(c, port)
			if err != nil {
				return nil, cube.Within(fmt.Sprintf("cubes.%s.ports[%s]", name, port.Name), err)
			}
			p.hops[name][port.Index] = h
			if ifidx > 0 && c.Hook == datapath.XDP {
				p.flood[name][port.Index] = ifidx
				p.redirects[port.Peer] = true
			}
		}
	}
	if pl.only != nil {
		for _, name := range sorted(pl.only.slicers()) {
			if p.chainFull[name] || !pl.t.Has(name) {
				continue
			}
			hops, err := pl.chainHops(name, slices.Sorted(maps.Keys(pl.only.chainIDs[name])))
			if err != nil {
				return nil, cube.Within("cubes."+name, err)
			}
			p.chainHops[name] = hops
		}
	}
	if err := pl.planStubs(p); err != nil {
		return nil, err
	}
	return p, nil
}

// cubes are the cubes whose hops are planned.
func (pl *planner) cubes() []string {
	if pl.only != nil {
		return sorted(pl.only.plan)
	}
	return pl.t.CubeNames()
}

func (pl *planner) stack(point string, dir datapath.Direction) []datapath.Transparent {
	names := pl.t.Attachments[point]
	out := make([]datapath.Transparent, 0, len(names))
	for _, n := range names {
		out = append(out, datapath.Transparent{Slot: pl.slots[n], Dir: dir})
	}
	if dir == datapath.Egress {
		slices.Reverse(out)
	}
	return out
}

func (pl *planner) portHop(c *cube.Cube, port cube.Port) (datapath.Hop, int, error) {
	self := c.Name + ":" + port.Name
	stack := pl.stack(self, datapath.Egress)
	if port.Peer == "" {
		if h, ok, err := pl.backHop(self); ok {
			return h, 0, err
		}
		return datapath.Hop{Kind: datapath.DstNone}, 0, nil
	}
	ep, err := cube.ParseEndpoint(port.Peer)
	if err != nil {
		return datapath.Hop{}, 0, err
	}
	if ep.IsCube() {
		peer := pl.t.Lookup(ep.Cube)
		stack = append(stack, pl.stack(ep.String(), datapath.Ingress)...)
		h, err := datapath.NewHop(datapath.DstCube, 0, pl.slots[ep.Cube], uint32(peer.Port(ep.Port).Index), stack)
		return h, 0, err
	}
	idx, err := pl.ifindex(ep.Iface)
	if err != nil {
		pl.missing = append(pl.missing, ep.Iface)
		return datapath.Hop{Kind: datapath.DstNone}, 0, nil
	}
	// XDP redirects bypass the TC egress hook, so the interface's own
	// attachments run on the hop; with TC the interface's egress stub runs them.
	if c.Hook == datapath.XDP {
		stack = append(stack, pl.stack(ep.Iface, datapath.Egress)...)
	}
	h, err := datapath.NewHop(datapath.DstIface, uint32(idx), 0, 0, stack)
	return h, idx, err
}

// planStubs decides the stub on each interface that is a peer or carries
// attachments.
func (pl *planner) planStubs(p *plan) error {
	peered := map[string]bool{}
	for _, name := range pl.cubes() {
		c := pl.t.Lookup(name)
		for _, port := range c.Ports {
			ep, err := cube.ParseEndpoint(port.Peer)
			if err != nil || ep.IsCube() || (pl.only != nil && !pl.only.ifaces[ep.Iface]) {
				continue
			}
			peered[ep.Iface] = true
			if _, err := pl.ifindex(ep.Iface); err != nil {
				continue // reported by portHop
			}
			stack := append(pl.stack(ep.Iface, datapath.Ingress), pl.stack(c.Name+":"+port.Name, datapath.Ingress)...)
			h, err := datapath.NewHop(datapath.DstCube, 0, pl.slots[c.Name], uint32(port.Index), stack)
			if err != nil {
				return cube.Within("attachments."+ep.Iface, err)
			}
			p.stubs[StubKey{ep.Iface, c.Hook, datapath.Ingress}] = h
			if c.Hook == datapath.TC && len(pl.t.Attachments[ep.Iface]) > 0 {
				p.stubs[StubKey{ep.Iface, datapath.TC, datapath.Egress}], _ = datapath.NewHop(
					datapath.DstStack, 0, 0, 0, pl.stack(ep.Iface, datapath.Egress))
			}
		}
	}
	for _, point := range pl.stubPoints() {
		names := pl.t.Attachments[point]
		ep, err := cube.ParseEndpoint(point)
		if err != nil || ep.IsCube() || peered[ep.Iface] || len(names) == 0 {
			continue
		}
		if _, err := pl.ifindex(ep.Iface); err != nil {
			pl.missing = append(pl.missing, ep.Iface)
			continue
		}
		hook := pl.t.Lookup(names[0]).Hook
		h, err := datapath.NewHop(datapath.DstStack, 0, 0, 0, pl.stack(point, datapath.Ingress))
		if err != nil {
			return cube.Within("attachments."+point, err)
		}
		p.stubs[StubKey{point, hook, datapath.Ingress}] = h
		if hook == datapath.TC {
			p.stubs[StubKey{point, hook, datapath.Egress}], _ = datapath.NewHop(
				datapath.DstStack, 0, 0, 0, pl.stack(point, datapath.Egress))
		}
	}
	return nil
}

// stubPoints are the attachment points whose stubs are planned: all, or
// the interfaces of the change.
func (pl *planner) stubPoints() []string {
	if pl.only == nil {
		return slices.Collect(maps.Keys(pl.t.Attachments))
	}
	return sorted(pl.only.ifaces)
}
