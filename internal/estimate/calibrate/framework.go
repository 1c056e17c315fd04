package calibrate

import (
	"encoding/json"
	"fmt"
	"math"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/datapath"
	"github.com/edgenf/edgenf/internal/estimate"
	"github.com/edgenf/edgenf/internal/estimate/measure"
	"github.com/edgenf/edgenf/internal/nfrig"
)

// The framework's measurements: chains of 1 to 5 portfwd cubes (the
// smallest standard cube) entered directly, hopping by direct jumps; two
// whose hop goes through the panel (out of a port past the direct ones);
// one entered through the stub,
// stacks of 1 to 4 monitor cubes (the smallest transparent cube) on an
// interface's hop, and the stub alone (to an interface, and to nothing).
var (
	chainLens = []int{1, 2, 3, 5}
	stackLens = []int{1, 2, 4}
)

const (
	monitorSlot = 10
	// panelSlot is the portfwd whose hop to pf1 leaves by port
	// datapath.DirectPorts: through the panel.
	panelSlot = 8
)

var frameworkFrame = estimate.Frame(estimate.FrameSpec{Src: "198.18.0.10", Dst: "198.18.1.1", Sport: 1234, Dport: 5678})

func portfwdModel(name string) *cube.Cube {
	return &cube.Cube{Name: name, Type: "portfwd", Ports: []cube.Port{{Name: "p0", Index: 0}, {Name: "p1", Index: 1}},
		Tables: map[string]map[string]json.RawMessage{"rules": {"p0": json.RawMessage(`{"in_port":"p0","out_port":"p1"}`)}}}
}

func (s *session) loadFramework() error {
	pf, err := cube.Lookup("portfwd")
	if err != nil {
		return err
	}
	mon, err := cube.Lookup("monitor")
	if err != nil {
		return err
	}
	model := portfwdModel("pf1")
	model.Hook = s.opt.Hook
	r, err := nfrig.Open(pf, model)
	if err != nil {
		return err
	}
	s.closer = append(s.closer, r.Close)
	// pf<k> at slot k sends to pf<k-1>; pf1 (the rig's cube, slot 1) to
	// the interface: entering pf<n> crosses n cubes.
	cubes := map[uint32]*datapath.Program{nfrig.Slot: r.Prog}
	last := uint32(chainLens[len(chainLens)-1])
	for k := uint32(2); k <= last; k++ {
		m := portfwdModel(fmt.Sprintf("pf%d", k))
		m.Hook = s.opt.Hook
		dc, err := r.Add(pf, m, k)
		if err != nil {
			return err
		}
		if err := dc.SetHop(1, datapath.Hop{Kind: datapath.DstCube, Slot: k - 1, Port: 0}); err != nil {
			return err
		}
		cubes[k] = dc
	}
	pm := &cube.Cube{Name: "pfpanel", Type: "portfwd", Hook: s.opt.Hook,
		Ports:  []cube.Port{{Name: "p0", Index: 0}, {Name: "p1", Index: datapath.DirectPorts}},
		Tables: map[string]map[string]json.RawMessage{"rules": {"p0": json.RawMessage(`{"in_port":"p0","out_port":"p1"}`)}}}
	panel, err := r.Add(pf, pm, panelSlot)
	if err != nil {
		return err
	}
	if err := panel.SetHop(datapath.DirectPorts, datapath.Hop{Kind: datapath.DstCube, Slot: nfrig.Slot, Port: 0}); err != nil {
		return err
	}
	var mons []*datapath.Program
	for i := 0; i < stackLens[len(stackLens)-1]; i++ {
		m := &cube.Cube{Name: fmt.Sprintf("mon%d", i), Type: "monitor", Hook: s.opt.Hook}
		dc, err := r.Add(mon, m, uint32(monitorSlot+i))
		if err != nil {
			return err
		}
		mons = append(mons, dc)
	}
	entry := func(name string, hop datapath.Hop, direct *datapath.Program) error {
		prog, err := r.DP.Entry(s.opt.Hook, hop, direct)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		s.add(item{Item: measure.Item{Name: name, Prog: prog, Frame: frameworkFrame}, group: "framework", anchor: true}, prog)
		return nil
	}
	if err := entry(fwStub, datapath.Hop{Kind: datapath.DstIface, Ifindex: nfrig.FakeIfindex}, nil); err != nil {
		return err
	}
	if err := entry(fwNone, datapath.Hop{Kind: datapath.DstNone}, nil); err != nil {
		return err
	}
	if err := entry(fwViaStub, datapath.Hop{Kind: datapath.DstCube, Slot: nfrig.Slot, Port: 0}, nil); err != nil {
		return err
	}
	for _, n := range chainLens {
		if err := entry(chainName(n), datapath.Hop{Kind: datapath.DstCube, Slot: uint32(n), Port: 0}, cubes[uint32(n)]); err != nil {
			return err
		}
	}
	if err := entry(fwPanel, datapath.Hop{Kind: datapath.DstCube, Slot: panelSlot, Port: 0}, panel); err != nil {
		return err
	}
	for _, k := range stackLens {
		var stack []datapath.Transparent
		for i := 0; i < k; i++ {
			stack = append(stack, datapath.Transparent{Slot: uint32(monitorSlot + i), Dir: datapath.Ingress})
		}
		hop, err := datapath.NewHop(datapath.DstIface, nfrig.FakeIfindex, 0, 0, stack)
		if err != nil {
			return err
		}
		if err := entry(stackName(k), hop, mons[0]); err != nil {
			return err
		}
	}
	return nil
}

const (
	fwStub    = "framework: stub → interface"
	fwNone    = "framework: stub → Linux (no destination)"
	fwViaStub = "framework: stub → portfwd → interface"
	fwPanel   = "framework: 2 portfwd cubes, the hop through the panel"
)

func chainName(n int) string { return fmt.Sprintf("framework: %d portfwd cubes in a chain", n) }
func stackName(k int) string { return fmt.Sprintf("framework: %d monitor cubes on a hop", k) }

// fitFramework derives the framework's terms from the chains and stacks:
// each extra cube's cost is the slope; what a cube alone costs beyond it
// (entry, test run, redirect) is the share later cubes do not pay.
func (s *session) fitFramework(p *estimate.Profile) error {
	ns := map[string]float64{}
	for _, it := range s.items {
		if it.group == "framework" {
			ns[it.Name] = it.res.NS
		}
	}
	line := func(xs []int, name func(int) string) (a, b float64, err error) {
		var sx, sy, sxx, sxy float64
		for _, x := range xs {
			y, ok := ns[name(x)]
			if !ok {
				return 0, 0, fmt.Errorf("no measurement %q", name(x))
			}
			sx, sy, sxx, sxy = sx+float64(x), sy+y, sxx+float64(x*x), sxy+float64(x)*y
		}
		n := float64(len(xs))
		b = (n*sxy - sx*sy) / (n*sxx - sx*sx)
		return (sy - b*sx) / n, b, nil
	}
	a, b, err := line(chainLens, chainName)
	if err != nil {
		return err
	}
	at, bt, err := line(stackLens, stackName)
	if err != nil {
		return err
	}
	p.Costs[estimate.TermChainHop] = round(b)
	p.Costs[estimate.TermHop] = round(a) // cost(1) - b
	p.Costs[estimate.TermTransparentHop] = round(at)
	p.Costs[estimate.TermEntry] = round(ns[fwStub])
	p.Costs[estimate.TermRedirect] = round(ns[fwStub] - ns[fwNone])
	p.Costs[estimate.TermStub] = round(ns[fwViaStub] - ns[chainName(1)])
	// the same two cubes as chainName(2), but for the jump between them
	p.Costs[estimate.TermPanelHop] = round(math.Max(0, ns[fwPanel]-(a+2*b)))
	// the fitted lines, for the measurements' model column
	s.frameworkModel = map[string]float64{}
	for _, n := range chainLens {
		s.frameworkModel[chainName(n)] = a + b*float64(n)
	}
	s.frameworkModel[fwPanel] = a + 2*b + p.Costs[estimate.TermPanelHop]
	for _, k := range stackLens {
		s.frameworkModel[stackName(k)] = at + bt*float64(k)
	}
	return nil
}
