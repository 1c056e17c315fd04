package estimate_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/datapath"
	"github.com/edgenf/edgenf/internal/estimate"
)

// changeOf is the change from prev to next, as the engine describes it.
func changeOf(rev uint64, prev, next *cube.Topology) estimate.Change {
	ch := estimate.Change{Rev: rev, Prev: prev, Next: next, Cubes: next.ChangedSince(prev)}
	for _, t := range []*cube.Topology{prev, next} {
		for p := range t.Attachments {
			if !slices.Equal(prev.Attachments[p], next.Attachments[p]) && !slices.Contains(ch.Points, p) {
				ch.Points = append(ch.Points, p)
			}
		}
	}
	return ch
}

func errText(err error) string {
	if err == nil {
		return "admitted"
	}
	return err.Error()
}

func testAdmission(budget float64) *estimate.Admission {
	return &estimate.Admission{Estimator: &estimate.Estimator{Profiles: map[datapath.Hook]*estimate.Profile{datapath.XDP: testProfile()}}, BudgetNS: budget}
}

// slicedSite is a slicer sl entered from interface up with n slices,
// slice i by port s<i> (an odd one by naming its entry) into a chain
// c<i> → d<i> → interface o<i>, slice i
// with budget budgets[i] (0: none); and m chains a<j> → x<j> → b<j> of no
// slice, a monitor-like cube on every third.
func slicedSite(n, m int, costs map[string]float64, budgets []float64) *cube.Topology {
	t := cube.NewTopology()
	cost := func(name string) float64 {
		if c, ok := costs[name]; ok {
			return c
		}
		return 20
	}
	var sls []cube.Slice
	ports := []cube.Port{{Name: "up", Peer: "up"}}
	for i := range n {
		c, d := fmt.Sprintf("c%d", i), fmt.Sprintf("d%d", i)
		into := "" // an odd slice names its chain's entry (slicechains.go)
		if i%2 == 0 {
			sls = append(sls, cube.Slice{Name: fmt.Sprintf("s%d", i), Port: fmt.Sprintf("s%d", i), Entry: "up", BudgetNS: budgets[i]})
			ports = append(ports, cube.Port{Name: fmt.Sprintf("s%d", i), Index: 1 + i, Peer: c + ":p0"})
			into = fmt.Sprintf("sl:s%d", i)
		} else {
			sls = append(sls, cube.Slice{Name: fmt.Sprintf("s%d", i), Chain: c + ":p0", Entry: "up", BudgetNS: budgets[i]})
		}
		t.Put(std(c, cost(c), cube.Port{Name: "p0", Peer: into}, cube.Port{Name: "p1", Index: 1, Peer: d + ":p0"}))
		t.Put(std(d, cost(d), cube.Port{Name: "p0", Peer: c + ":p1"}, cube.Port{Name: "p1", Index: 1, Peer: fmt.Sprintf("o%d", i)}))
	}
	cfg, _ := json.Marshal(map[string]any{"Slices": sls})
	t.Put(&cube.Cube{Name: "sl", Type: "testslicer", Hook: datapath.XDP, Config: cfg, Ports: ports})
	for j := range m {
		x := fmt.Sprintf("x%d", j)
		t.Put(std(x, cost(x), cube.Port{Name: "p0", Peer: fmt.Sprintf("a%d", j)}, cube.Port{Name: "p1", Index: 1, Peer: fmt.Sprintf("b%d", j)}))
		if j%3 == 0 {
			f := fmt.Sprintf("f%d", j)
			t.Put(&cube.Cube{Name: f, Type: "testtr", Hook: datapath.XDP})
			t.Attachments[x+":p0"] = []string{f}
		}
	}
	return t
}

// The incremental check (CheckChange) judges every change as Check does,
// word for word, along a sequence of changes of every kind (costs up and
// down, slices' budgets set and changed, cubes removed and added back,
// attachments moved, a re-peering), applied when admitted and not when
// refused, with and without a daemon-wide budget. Changes inside one
// slice (a cost, a cube of its chain removed and put back, a monitor
// attached in it and taken off) are judged by that slice's unit alone.
func TestCheckChangeJudgesAsCheck(t *testing.T) {
	for _, budget := range []float64{0, 60} {
		t.Run(fmt.Sprintf("budget=%v", budget), func(t *testing.T) {
			full, inc := testAdmission(budget), testAdmission(budget)
			rnd := rand.New(rand.NewPCG(1, uint64(budget)))
			const n, m = 6, 6
			costs, budgets := map[string]float64{}, make([]float64, n)
			gone := map[string]bool{}
			build := func() *cube.Topology {
				t := slicedSite(n, m, costs, budgets)
				for i := range n { // a monitor inside slice i, unless gone
					g := fmt.Sprintf("g%d", i)
					t.Put(&cube.Cube{Name: g, Type: "testtr", Hook: datapath.XDP})
					t.Attachments[fmt.Sprintf("c%d:p1", i)] = []string{g}
				}
				for name := range gone {
					t.Remove(name)
					for p, list := range t.Attachments {
						if slices.Contains(list, name) {
							delete(t.Attachments, p)
						}
					}
				}
				return t
			}
			prev := build()
			var rev uint64
			refused := 0
			for step := range 300 {
				what := ""
				switch rnd.IntN(7) {
				case 0, 1:
					name := fmt.Sprintf("%c%d", "cdx"[rnd.IntN(3)], rnd.IntN(n))
					costs[name] = float64(5 + rnd.IntN(50))
					what = fmt.Sprintf("%s costs %v", name, costs[name])
				case 2:
					i := rnd.IntN(n)
					budgets[i] = float64([]int{0, 40, 60, 90}[rnd.IntN(4)])
					what = fmt.Sprintf("slice s%d budget %v", i, budgets[i])
				case 3:
					name := fmt.Sprintf("f%d", 3*rnd.IntN(m/3))
					gone[name] = !gone[name]
					if !gone[name] {
						delete(gone, name)
					}
					what = "monitor " + name + " toggled"
				case 4:
					name := fmt.Sprintf("x%d", rnd.IntN(m))
					gone[name] = !gone[name]
					if !gone[name] {
						delete(gone, name)
					}
					what = "chain cube " + name + " toggled"
				case 5:
					name := fmt.Sprintf("%c%d", "dg"[rnd.IntN(2)], rnd.IntN(n))
					gone[name] = !gone[name]
					if !gone[name] {
						delete(gone, name)
					}
					what = "slice cube " + name + " toggled"
				case 6:
					name := fmt.Sprintf("d%d", rnd.IntN(n))
					costs[name] = float64(5 + rnd.IntN(50))
					what = fmt.Sprintf("slice cube %s costs %v", name, costs[name])
				}
				next := build()
				// unchanged cubes are shared, as in the engine's working copy
				for name, c := range next.Cubes() {
					if old := prev.Lookup(name); old != nil && old.Equal(c) {
						next.Put(old)
					}
				}
				want := errText(full.Check(prev, next))
				got := errText(inc.CheckChange(changeOf(rev, prev, next)))
				if got != want {
					t.Fatalf("step %d (%s): the incremental check says\n  %s\nCheck says\n  %s", step, what, got, want)
				}
				if want != "admitted" {
					refused++
					// the change is not made: the state stays prev
					costs, budgets, gone = settingsOf(prev)
					continue
				}
				prev, rev = next, rev+1
			}
			if refused == 0 || refused == 300 {
				t.Fatalf("%d of 300 changes refused: the sequence does not test both verdicts", refused)
			}
		})
	}
}

// settingsOf recovers slicedSite's settings from a topology it made.
func settingsOf(t *cube.Topology) (map[string]float64, []float64, map[string]bool) {
	costs := map[string]float64{}
	for name, c := range t.Cubes() {
		if c.Type == "teststd" {
			var cfg struct{ Cost float64 }
			json.Unmarshal(c.Config, &cfg)
			costs[name] = cfg.Cost
		}
	}
	var cfg struct{ Slices []cube.Slice }
	json.Unmarshal(t.Lookup("sl").Config, &cfg)
	budgets := make([]float64, len(cfg.Slices))
	for i, sl := range cfg.Slices {
		budgets[i] = sl.BudgetNS
	}
	gone := map[string]bool{}
	names := []string{"f0", "f3", "x0", "x1", "x2", "x3", "x4", "x5"}
	for i := range len(budgets) {
		names = append(names, fmt.Sprintf("d%d", i), fmt.Sprintf("g%d", i))
	}
	for _, name := range names {
		if t.Lookup(name) == nil {
			gone[name] = true
		}
	}
	return costs, budgets, gone
}

// A change prices what it can affect: a change far from the budgeted
// slices prices its own chain, never theirs; a change in one slice prices
// that slice's chains.
func TestCheckChangePricesWhatItAffects(t *testing.T) {
	const n, m = 40, 40
	budgets := make([]float64, n)
	budgets[0] = 200
	a := testAdmission(0)
	site := slicedSite(n, m, nil, budgets)
	if err := a.CheckChange(changeOf(0, site, site)); err != nil { // the first check prices everything once
		t.Fatal(err)
	}
	start := a.Estimator.Priced()
	next := slicedSite(n, m, map[string]float64{"x7": 35}, budgets)
	for name := range next.Cubes() {
		if name != "x7" {
			next.ShareCube(name, site)
		}
	}
	if err := a.CheckChange(changeOf(0, site, next)); err != nil {
		t.Fatal(err)
	}
	// x7, entered by each of its two ports
	if priced := a.Estimator.Priced() - start; priced != 2 {
		t.Fatalf("a change of chain x7 priced %d cubes, want 2 (x7 both ways)", priced)
	}
}

// A change inside one slice walks that slice's chains only, not every
// slice of the slicer's entry interface: each slice is a unit of the
// check of its own. A change of the slicer itself walks them all.
func TestCheckChangeWalksOneSlice(t *testing.T) {
	const n, m = 40, 4
	budgets := make([]float64, n)
	budgets[0] = 200
	a := testAdmission(0)
	site := slicedSite(n, m, nil, budgets)
	if err := a.CheckChange(changeOf(0, site, site)); err != nil { // the first check walks everything once
		t.Fatal(err)
	}
	change := func(rev uint64, prev *cube.Topology, costs map[string]float64, budgets []float64, name string) (*cube.Topology, int64) {
		t.Helper()
		next := slicedSite(n, m, costs, budgets)
		for c := range next.Cubes() {
			if c != name {
				next.ShareCube(c, prev)
			}
		}
		start := a.Walked()
		if err := a.CheckChange(changeOf(rev, prev, next)); err != nil {
			t.Fatal(err)
		}
		return next, a.Walked() - start
	}
	// d7 is in slice s7 (a chain slice), d8 in s8 (a port slice): the
	// slice's chain from the entry interface, and the one back from o7 (o8)
	next, walked := change(0, site, map[string]float64{"d7": 35}, budgets, "d7")
	if walked != 2 {
		t.Fatalf("a change of d7, in slice s7, walked %d chains, want 2 (s7's from up, and from o7)", walked)
	}
	next, walked = change(1, next, map[string]float64{"d7": 35, "d8": 35}, budgets, "d8")
	if walked != 2 {
		t.Fatalf("a change of d8, in slice s8, walked %d chains, want 2 (s8's from up, and from o8)", walked)
	}
	budgets = slices.Clone(budgets)
	budgets[3] = 90
	if _, walked = change(2, next, map[string]float64{"d7": 35, "d8": 35}, budgets, "sl"); walked < n {
		t.Fatalf("a change of the slicer walked %d chains, want its %d slices' at least", walked, n)
	}
}
