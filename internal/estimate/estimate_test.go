package estimate_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/datapath"
	"github.com/edgenf/edgenf/internal/estimate"
	_ "github.com/edgenf/edgenf/internal/nf/bridge"
	_ "github.com/edgenf/edgenf/internal/nf/monitor"
)

// Models of test types: a standard cube whose cost is its "cost" setting
// (and the same hopping through the panel only), a transparent one that
// costs 20.
func init() {
	estimate.Register(&estimate.Model{Type: "teststd", Terms: []estimate.Term{{Name: "teststd.ns"}},
		Uses: func(_ *estimate.Profile, c *cube.Cube, _ string) ([]estimate.Use, []string, error) {
			var cfg struct{ Cost float64 }
			json.Unmarshal(c.Config, &cfg)
			return []estimate.Use{{Term: "teststd.ns", N: cfg.Cost, What: "work"}}, nil, nil
		}})
	estimate.Register(&estimate.Model{Type: "testpanel", Terms: []estimate.Term{{Name: "teststd.ns"}}, PanelHops: true,
		Uses: func(_ *estimate.Profile, c *cube.Cube, _ string) ([]estimate.Use, []string, error) {
			var cfg struct{ Cost float64 }
			json.Unmarshal(c.Config, &cfg)
			return []estimate.Use{{Term: "teststd.ns", N: cfg.Cost, What: "work"}}, nil, nil
		}})
	estimate.Register(&estimate.Model{Type: "testtr", Terms: []estimate.Term{{Name: "testtr.ns"}},
		Uses: func(*estimate.Profile, *cube.Cube, string) ([]estimate.Use, []string, error) {
			return []estimate.Use{{Term: "testtr.ns", N: 20}}, nil, nil
		}})
}

func testProfile() *estimate.Profile {
	return &estimate.Profile{Format: estimate.Format, Unit: "ns", Hook: datapath.XDP, Costs: map[string]float64{
		estimate.TermHop: 5, estimate.TermTransparentHop: 3, estimate.TermEntry: 10, estimate.TermStub: 1, estimate.TermChainHop: 1, estimate.TermRedirect: 1,
		"teststd.ns": 1, "testtr.ns": 1}}
}

func std(name string, cost float64, ports ...cube.Port) *cube.Cube {
	return &cube.Cube{Name: name, Type: "teststd", Hook: datapath.XDP, Config: json.RawMessage(fmt.Sprintf(`{"Cost":%g}`, cost)), Ports: ports}
}

// a → r1 → b, a firewall-like cube on r1:p0 and another on b; r1:p1 → r2 → c.
func testTopology(cost float64) *cube.Topology {
	t := cube.NewTopology()
	t.Put(std("r1", cost, cube.Port{Name: "p0", Peer: "a"}, cube.Port{Name: "p1", Index: 1, Peer: "r2:p0"}))
	t.Put(std("r2", 30, cube.Port{Name: "p0", Peer: "r1:p1"}, cube.Port{Name: "p1", Index: 1, Peer: "c"}))
	t.Put(&cube.Cube{Name: "f1", Type: "testtr", Hook: datapath.XDP})
	t.Attachments["r1:p0"] = []string{"f1"}
	return t
}

func TestChains(t *testing.T) {
	var got []string
	for _, c := range estimate.Chains(testTopology(50)) {
		got = append(got, c.ID())
	}
	want := []string{"a → f1 → r1:p1 → r2:p1 → c", "c → r2:p0 → r1:p0 → f1 → a"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("chains %q, want %q", got, want)
	}
}

// A chain costs its first program alone, then each later one less the
// framework share it does not pay again.
func TestChainCost(t *testing.T) {
	e := &estimate.Estimator{Profiles: map[datapath.Hook]*estimate.Profile{datapath.XDP: testProfile()}}
	cs, err := e.Topology(testTopology(50))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := cs[0].NS, 20+(50-5)+(30-5.0); got != want {
		t.Fatalf("%s: %.1f ns, want %.1f", cs[0].ID, got, want)
	}
	if got, want := cs[1].NS, 30+(50-5)+(20-3.0); got != want {
		t.Fatalf("%s: %.1f ns, want %.1f", cs[1].ID, got, want)
	}
	if cs[0].PPS != 1e9/cs[0].NS {
		t.Fatalf("pps %v", cs[0].PPS)
	}
}

// A standard cube entered by a direct jump pays no more than fw.hop
// allows for; one entered through the panel pays fw.panel_hop on top:
// after a transparent stack, from a port past the direct ones, and from a
// type that hops through the panel only.
func TestPanelHops(t *testing.T) {
	p := testProfile()
	p.Costs[estimate.TermPanelHop] = 7
	e := &estimate.Estimator{Profiles: map[datapath.Hook]*estimate.Profile{datapath.XDP: p}}
	price := func(tp *cube.Topology) estimate.ChainCost {
		t.Helper()
		cs, err := e.Topology(tp)
		if err != nil {
			t.Fatal(err)
		}
		return cs[0] // a → ... → c
	}
	panels := func(cc estimate.ChainCost) (out []bool) {
		for _, h := range cc.Hops {
			out = append(out, h.Panel)
		}
		return out
	}
	// a → f1 → r1 (after a stack: panel) → r2 (r1's port 1: direct) → c
	cc := price(testTopology(50))
	if want := 20 + (50 - 5 + 7) + (30 - 5.0); cc.NS != want || fmt.Sprint(panels(cc)) != "[false true false]" {
		t.Fatalf("%s: %.1f ns %v, want %.1f [false true false]", cc.ID, cc.NS, panels(cc), want)
	}
	// r1 sends to r2 from port 16: through the panel
	tp := testTopology(50)
	tp.Lookup("r1").Ports[1].Index = datapath.DirectPorts
	if cc = price(tp); cc.NS != 20+(50-5+7)+(30-5+7.0) || fmt.Sprint(panels(cc)) != "[false true true]" {
		t.Fatalf("port %d: %.1f ns %v", datapath.DirectPorts, cc.NS, panels(cc))
	}
	// r1 of a type that hops through the panel only
	tp = testTopology(50)
	tp.Lookup("r1").Type = "testpanel"
	if cc = price(tp); cc.NS != 20+(50-5+7)+(30-5+7.0) || fmt.Sprint(panels(cc)) != "[false true true]" {
		t.Fatalf("a panel-only sender: %.1f ns %v", cc.NS, panels(cc))
	}
}

// A cube of a type without a model counts 0 and makes the total a lower
// bound, saying so.
func TestUnknownTypeIsALowerBound(t *testing.T) {
	tp := testTopology(50)
	tp.Lookup("r2").Type = "nomodel"
	e := &estimate.Estimator{Profiles: map[datapath.Hook]*estimate.Profile{datapath.XDP: testProfile()}}
	cs, err := e.Topology(tp)
	if err != nil {
		t.Fatal(err)
	}
	if !cs[0].LowerBound || !strings.Contains(strings.Join(cs[0].Hops[2].Notes, ""), "no cost model") {
		t.Fatalf("%+v", cs[0])
	}
}

// Admission refuses a change that takes a chain over the budget, with the
// numbers; lets one that stays under, shrinks, or leaves an over-budget
// chain as it was.
func TestAdmission(t *testing.T) {
	a := &estimate.Admission{Estimator: &estimate.Estimator{Profiles: map[datapath.Hook]*estimate.Profile{datapath.XDP: testProfile()}}, BudgetNS: 100}
	small, big := testTopology(50), testTopology(80) // 90 and 120 ns
	if err := a.Check(nil, small); err != nil {
		t.Fatalf("under the budget: %v", err)
	}
	err := a.Check(small, big)
	if err == nil || !strings.Contains(err.Error(), "would cost 120.0 ns per packet") || !strings.Contains(err.Error(), "over the core budget of 100 ns") ||
		!strings.Contains(err.Error(), "it costs 90.0 ns now") || !strings.Contains(err.Error(), "teststd r1 75.0") {
		t.Fatalf("over the budget: %v", err)
	}
	if err := a.Check(big, small); err != nil {
		t.Fatalf("shrinking: %v", err)
	}
	if err := a.Check(big, big.Clone()); err != nil {
		t.Fatalf("unchanged: %v", err)
	}
	// removing a cube from a chain over the budget changes its route, not
	// where its packets come from and go: allowed
	withoutF1 := func(tp *cube.Topology) *cube.Topology {
		tp.Remove("f1")
		delete(tp.Attachments, "r1:p0")
		return tp
	}
	if err := a.Check(big, withoutF1(testTopology(80))); err != nil {
		t.Fatalf("removing a cube: %v", err)
	}
	// adding one is held to what the chain between the same interfaces costs
	a.BudgetNS = 80
	err = a.Check(withoutF1(testTopology(50)), small)
	if err == nil || !strings.Contains(err.Error(), "chain a → f1 → r1:p1 → r2:p1 → c would cost 90.0 ns per packet") ||
		!strings.Contains(err.Error(), "it costs 75.0 ns now") {
		t.Fatalf("adding a cube: %v", err)
	}
	a.BudgetNS = 100
	// a chain to another interface is held to the dearest from the same
	// one (the way back, from an interface new to the topology, is new
	// and over the budget)
	toD := func(cost float64) *cube.Topology {
		tp := testTopology(cost)
		tp.Lookup("r2").Ports[1].Peer = "d"
		return tp
	}
	if err := a.Check(big, toD(80)); err == nil || strings.Contains(err.Error(), "chain a →") || !strings.Contains(err.Error(), "chain d → r2:p0") {
		t.Fatalf("re-peered, as dear as before: %v", err)
	}
	if err := a.Check(big, toD(90)); err == nil || !strings.Contains(err.Error(), "would cost 130.0 ns per packet") ||
		!strings.Contains(err.Error(), "packets from a cost at most 120.0 ns now") {
		t.Fatalf("re-peered, dearer: %v", err)
	}
}

// A slicing test type: its slices and their budgets are its config
// (cube.Type.Slices); it costs 10. It is never loaded.
func init() {
	estimate.Register(&estimate.Model{Type: "testslicer", Terms: []estimate.Term{{Name: "testtr.ns"}},
		Uses: func(*estimate.Profile, *cube.Cube, string) ([]estimate.Use, []string, error) {
			return []estimate.Use{{Term: "testtr.ns", N: 10}}, nil, nil
		}})
	cube.Register(&cube.Type{Name: "testslicer", Hooks: []datapath.Hook{datapath.XDP},
		ObjectFor: func(*cube.Cube) ([]byte, error) { return nil, errors.New("a test type: never loaded") },
		New:       func() cube.Controller { return nil },
		Slices: func(c *cube.Cube) ([]cube.Slice, error) {
			var cfg struct{ Slices []cube.Slice }
			if err := json.Unmarshal(c.Config, &cfg); err != nil {
				return nil, err
			}
			return cfg.Slices, nil
		}})
}

// e → sl (entry port up) → slice gold by port g → r1 (cost) → o1, and
// slice silver by port s → r2 (30) → o2. gold's budget is goldBudget.
func sliceTopology(cost, goldBudget float64) *cube.Topology {
	t := cube.NewTopology()
	cfg, _ := json.Marshal(map[string]any{"Slices": []cube.Slice{{Name: "gold", Port: "g", Entry: "up", BudgetNS: goldBudget}, {Name: "silver", Port: "s", Entry: "up"}}})
	t.Put(&cube.Cube{Name: "sl", Type: "testslicer", Hook: datapath.XDP, Config: cfg,
		Ports: []cube.Port{{Name: "up", Peer: "e"}, {Name: "g", Index: 1, Peer: "r1:p0"}, {Name: "s", Index: 2, Peer: "r2:p0"}}})
	t.Put(std("r1", cost, cube.Port{Name: "p0", Peer: "sl:g"}, cube.Port{Name: "p1", Index: 1, Peer: "o1"}))
	t.Put(std("r2", 30, cube.Port{Name: "p0", Peer: "sl:s"}, cube.Port{Name: "p1", Index: 1, Peer: "o2"}))
	return t
}

// A slice's chains, in and back, are estimated as one: the slice costs
// its dearest chain.
func TestSliceEstimates(t *testing.T) {
	e := &estimate.Estimator{Profiles: map[datapath.Hook]*estimate.Profile{datapath.XDP: testProfile()}}
	cs, err := e.Topology(sliceTopology(50, 0))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range estimate.Slices(cs) {
		got = append(got, fmt.Sprintf("%s %d %.0f %s", c.Slice, c.Chains, c.NS, c.Chain))
	}
	// e → sl → r1 → o1: 10 + (50-5) = 55; o1 → r1 → sl → e: 50 + (10-5) =
	// 55 (a tie: the first chain listed); never o1 → r1 → sl → r2 → o2.
	want := []string{"sl/gold 2 55 o1 → r1:p0 → sl:up → e", "sl/silver 2 35 o2 → r2:p0 → sl:up → e"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("slices %q, want %q", got, want)
	}
	for _, c := range cs {
		if c.Slice == "" {
			t.Fatalf("chain %s has no slice", c.ID)
		}
	}
}

// A slice's own budget is enforced without a daemon-wide one, on that
// slice only; setting a budget the slice is already over is refused; the
// tighter of the two budgets holds.
func TestSliceAdmission(t *testing.T) {
	a := &estimate.Admission{Estimator: &estimate.Estimator{Profiles: map[datapath.Hook]*estimate.Profile{datapath.XDP: testProfile()}}}
	if err := a.Check(sliceTopology(50, 0), sliceTopology(500, 0)); err != nil {
		t.Fatalf("no budget at all: %v", err)
	}
	if err := a.Check(nil, sliceTopology(50, 100)); err != nil {
		t.Fatalf("under the slice's budget: %v", err)
	}
	err := a.Check(sliceTopology(50, 100), sliceTopology(120, 100))
	if err == nil || !strings.Contains(err.Error(), "slice sl/gold: chain ") || !strings.Contains(err.Error(), "would cost 125.0 ns per packet") ||
		!strings.Contains(err.Error(), "over the slice's budget of 100 ns; it costs 55.0 ns now") || strings.Contains(err.Error(), "silver") {
		t.Fatalf("over the slice's budget: %v", err)
	}
	if err := a.Check(sliceTopology(120, 0), sliceTopology(120, 100)); err == nil || !strings.Contains(err.Error(), "over the slice's budget of 100 ns") {
		t.Fatalf("a budget the slice is over: %v", err)
	}
	if err := a.Check(sliceTopology(120, 100), sliceTopology(110, 100)); err != nil {
		t.Fatalf("shrinking a slice over its budget: %v", err)
	}
	a.BudgetNS = 50
	err = a.Check(sliceTopology(40, 100), sliceTopology(60, 100))
	if err == nil || !strings.Contains(err.Error(), "over the core budget of 50 ns") {
		t.Fatalf("the core budget is tighter: %v", err)
	}
}

// A missing profile falls back to the built-in one and says so; one made
// on another machine warns, naming both machines.
func TestResolveProfiles(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "nope.json")
	p, notes, err := estimate.Resolve(missing, datapath.XDP)
	if err != nil || p.Source != "built-in" || len(notes) == 0 || !strings.Contains(notes[0], missing+" not found: using the built-in profile") {
		t.Fatalf("missing profile: %v %v %v", p, notes, err)
	}
	other, err := estimate.Builtin(datapath.XDP)
	if err != nil {
		t.Fatal(err)
	}
	other.Kernel, other.CPU = "4.19.0-elsewhere", "Some Other CPU @ 1.0GHz"
	path := filepath.Join(dir, "xdp.json")
	if err := other.Save(path); err != nil {
		t.Fatal(err)
	}
	_, notes, err = estimate.Resolve(path, datapath.XDP)
	here := estimate.ThisHost()
	if err != nil || len(notes) != 1 {
		t.Fatalf("%v %v", notes, err)
	}
	for _, s := range []string{"4.19.0-elsewhere", "Some Other CPU @ 1.0GHz", here.Kernel, here.CPU, "warning"} {
		if !strings.Contains(notes[0], s) {
			t.Fatalf("warning %q does not name %q", notes[0], s)
		}
	}
	if _, _, err := estimate.Resolve(path, datapath.TC); err == nil || !strings.Contains(err.Error(), "is for hook xdp, not tc") {
		t.Fatalf("wrong hook: %v", err)
	}
}

// A profile made before a framework term existed (fw.panel_hop) is still
// valid; the term comes from the built-in profile, and a note says so.
func TestProfileOlderThanATerm(t *testing.T) {
	old, err := estimate.Builtin(datapath.XDP)
	if err != nil {
		t.Fatal(err)
	}
	builtin := old.Costs[estimate.TermPanelHop]
	if builtin <= 0 {
		t.Fatalf("the built-in profile prices %s at %v", estimate.TermPanelHop, builtin)
	}
	delete(old.Costs, estimate.TermPanelHop)
	path := filepath.Join(t.TempDir(), "xdp.json")
	if err := old.Save(path); err != nil {
		t.Fatal(err)
	}
	p, _, err := estimate.Resolve(path, datapath.XDP)
	if err != nil {
		t.Fatalf("a profile without %s: %v", estimate.TermPanelHop, err)
	}
	filled, notes := p.WithDefaults()
	if filled.Costs[estimate.TermPanelHop] != builtin || len(notes) != 1 || !strings.Contains(notes[0], estimate.TermPanelHop) {
		t.Fatalf("filled %v, notes %q", filled.Costs[estimate.TermPanelHop], notes)
	}
	if _, ok := p.Costs[estimate.TermPanelHop]; ok {
		t.Fatal("WithDefaults changed the profile it was given")
	}
}

// A file that is not a valid profile is an error, never a silent fallback.
func TestBadProfiles(t *testing.T) {
	dir := t.TempDir()
	good, _ := estimate.Builtin(datapath.XDP)
	for name, mutate := range map[string]func(p map[string]any){
		"not an edgenf estimate profile": func(p map[string]any) { p["format"] = "something/2" },
		"only ns is supported":           func(p map[string]any) { p["unit"] = "cycles" },
		"want xdp or tc":                 func(p map[string]any) { p["hook"] = "egress" },
		"no cost for fw.hop":             func(p map[string]any) { delete(p["costs"].(map[string]any), "fw.hop") },
		"not a plausible number":         func(p map[string]any) { p["costs"].(map[string]any)["fw.hop"] = 1e12 },
		"unknown field":                  func(p map[string]any) { p["colour"] = "blue" },
	} {
		b, _ := json.Marshal(good)
		var m map[string]any
		json.Unmarshal(b, &m)
		mutate(m)
		b, _ = json.Marshal(m)
		path := filepath.Join(dir, "p.json")
		os.WriteFile(path, b, 0o644)
		if _, _, err := estimate.Resolve(path, datapath.XDP); err == nil || !strings.Contains(err.Error(), name) {
			t.Fatalf("%s: %v", name, err)
		}
	}
}

// A cube that names no hook (as a topology file or a dry run sends it) is
// priced at its type's default hook, with the stacks an XDP cube's packets
// cross on the way out of an interface.
func TestCubeWithoutAHook(t *testing.T) {
	tp := cube.NewTopology()
	tp.Put(&cube.Cube{Name: "br", Type: "bridge", Ports: []cube.Port{{Name: "p0", Peer: "a"}, {Name: "p1", Index: 1, Peer: "b"}}})
	tp.Put(&cube.Cube{Name: "mon", Type: "monitor"})
	tp.Attachments["b"] = []string{"mon"}
	p, err := estimate.Builtin(datapath.XDP)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := (&estimate.Estimator{Profiles: map[datapath.Hook]*estimate.Profile{datapath.XDP: p}}).Topology(tp)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, c := range cs {
		ids = append(ids, c.ID)
	}
	if want := "a → br:p1 → mon → b|b → mon → br:p0 → a"; strings.Join(ids, "|") != want {
		t.Fatalf("chains %q, want %q", ids, want)
	}
}
