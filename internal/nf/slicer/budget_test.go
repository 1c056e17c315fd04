package slicer

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/datapath"
	"github.com/edgenf/edgenf/internal/estimate"
	"github.com/edgenf/edgenf/internal/nftest"
)

// A slice that names its chain's entry is estimated like one a port leads
// into: the walk goes from the slicer straight into the entry, and back
// from it to the slice's entry port, each way the slice's; its budget_ns
// refuses a change that would push its chain past it (a cube more in it),
// with the numbers,
// and another slice's chain stays out of its group.
func TestChainSliceBudget(t *testing.T) {
	pf := func(name, out string) *cube.Cube {
		return &cube.Cube{Name: name, Type: "portfwd", Hook: datapath.TC,
			Ports: []cube.Port{{Name: "p0", Index: 0}, {Name: "p1", Index: 1, Peer: out}},
			Tables: map[string]map[string]json.RawMessage{"rules": {
				"p0": json.RawMessage(`{"in_port":"p0","out_port":"p1"}`),
				"p1": json.RawMessage(`{"in_port":"p1","out_port":"p0"}`)}}}
	}
	// gold's chain: g, or g then g2 (longer)
	topo := func(budget float64, longer bool) *cube.Topology {
		t := cube.NewTopology()
		t.Put(&cube.Cube{Name: "edge", Type: "slicer", Hook: datapath.TC, Config: json.RawMessage(`{"uplink":"up"}`),
			Ports: []cube.Port{{Name: "up", Index: 0, Peer: "eth-up"}},
			Tables: map[string]map[string]json.RawMessage{"slices": {
				"gold":   nftest.Entry(Slice{Name: "gold", ID: 1, Chain: "g:p0", BudgetNS: budget, Rules: []Rule{{Dst: "198.18.1.0/24"}}}),
				"silver": nftest.Entry(Slice{Name: "silver", ID: 2, Chain: "s:p0", Rules: []Rule{{Dst: "198.18.2.0/24"}}}),
			}}})
		t.Put(pf("g", "eth-g"))
		t.Put(pf("s", "eth-s"))
		if longer {
			t.Lookup("g").Ports[1].Peer = "g2:p0"
			t.Put(pf("g2", "eth-g"))
			t.Lookup("g2").Ports[0].Peer = "g:p1"
		}
		return t
	}
	prof, err := estimate.Builtin(datapath.TC)
	if err != nil {
		t.Fatal(err)
	}
	est := &estimate.Estimator{Profiles: map[datapath.Hook]*estimate.Profile{datapath.TC: prof}}
	gold := func(tp *cube.Topology) (ns float64, routes []string) {
		for _, ch := range estimate.Chains(tp) {
			cc, err := est.Chain(tp, ch)
			if err != nil {
				t.Fatal(err)
			}
			if cc.Slice == "edge/gold" {
				ns = max(ns, cc.NS)
				routes = append(routes, cc.ID)
			}
		}
		return ns, routes
	}
	small, routes := gold(topo(0, false))
	want := []string{"eth-up → edge:g:p0 → g:p1 → eth-g", "eth-g → g:p0 → edge:up → eth-up"}
	if strings.Join(routes, "; ") != strings.Join(want, "; ") && strings.Join(routes, "; ") != want[1]+"; "+want[0] {
		t.Fatalf("slice gold's chains: %q, want %q", routes, want)
	}
	big, _ := gold(topo(0, true))
	if big <= small {
		t.Fatalf("slice gold with two cubes is estimated at %.1f ns, with one %.1f", big, small)
	}
	budget := (small + big) / 2
	adm := &estimate.Admission{Estimator: est}
	if err := adm.Check(topo(0, false), topo(budget, false)); err != nil {
		t.Fatalf("a budget the slice is within: %v", err)
	}
	err = adm.Check(topo(budget, false), topo(budget, true))
	if err == nil || !strings.Contains(err.Error(), "slice edge/gold: chain") || !strings.Contains(err.Error(), "over the slice's budget") ||
		!strings.Contains(err.Error(), "portfwd g2") {
		t.Fatalf("a cube that pushes the chain slice past its budget: %v", err)
	}
	if strings.Contains(err.Error(), "edge/silver") {
		t.Fatalf("silver's chains held to gold's budget: %v", err)
	}
}
