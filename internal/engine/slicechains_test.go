package engine

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/datapath"
	_ "github.com/edgenf/edgenf/internal/nf/portfwd"
	"github.com/edgenf/edgenf/internal/nf/slicer"
)

// entryCube is the one-cube chain of slice k: portfwd c<k>, entered on its
// unpeered port "in".
func entryCube(k int) *cube.Cube {
	return &cube.Cube{Name: fmt.Sprintf("c%d", k), Type: "portfwd", Hook: "tc", Tenant: "t",
		Ports: []cube.Port{{Name: "in", Index: 0}, {Name: "out", Index: 1}},
		Tables: map[string]map[string]json.RawMessage{"rules": {
			"in": json.RawMessage(`{"in_port":"in","out_port":"out"}`),
		}}}
}

// chainSlice is slice k of slicer sl, leading into entry.
func chainSlice(k int, entry string) json.RawMessage {
	raw, err := json.Marshal(slicer.Slice{Name: fmt.Sprintf("s%d", k), ID: k, Tenant: "t", Chain: entry,
		Rules: []slicer.Rule{{Dst: fmt.Sprintf("198.18.%d.%d", k>>8, k&0xff)}}})
	if err != nil {
		panic(err)
	}
	return raw
}

// TestSliceChangeCostsThatSlice: adding a slice to a slicer that holds 200
// plans, checks and writes that slice alone: the slicer's hop into the new
// slice's entry and the entry's hop back (two writes), no other entry cube
// planned, the slice journalled as its entry; changing one slice's chain
// and removing a slice likewise. After each change the hops in the kernel
// and the kept index are what a plan of the whole topology makes. (Before,
// each change planned every entry cube and every slice of the slicer.)
func TestSliceChangeCostsThatSlice(t *testing.T) {
	const n = 200
	e := testEngine(t, "enfslch")
	if err := e.Update(func(tp *cube.Topology) error {
		for k := 1; k <= n+1; k++ {
			tp.Put(entryCube(k))
		}
		sl := &cube.Cube{Name: "sl", Type: "slicer", Hook: "tc", Config: json.RawMessage(`{"uplink":"up"}`),
			Ports: []cube.Port{{Name: "up", Index: 0}}, Tables: map[string]map[string]json.RawMessage{"slices": {}}}
		for k := 1; k <= n; k++ {
			sl.SetRow("slices", fmt.Sprintf("s%d", k), chainSlice(k, fmt.Sprintf("c%d:in", k)))
		}
		return tp.AddCube(sl)
	}); err != nil {
		t.Fatal(err)
	}
	step := func(what string, fn func(sl *cube.Cube), planned []string, ids []int, writes uint64, journal []string) {
		t.Helper()
		before, journalled := e.hopWrites, len(journalCubes(t, e))
		if err := e.Update(func(tp *cube.Topology) error {
			sl, err := tp.Edit("sl")
			if err == nil {
				fn(sl)
			}
			return err
		}); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		cs := e.lastChange
		if got := sorted(cs.plan); !slices.Equal(got, planned) {
			t.Errorf("%s: planned cubes %v, want %v", what, got, planned)
		}
		if got := slices.Sorted(maps.Keys(cs.chainIDs["sl"])); !slices.Equal(got, ids) || len(cs.chainIDs) != 1 {
			t.Errorf("%s: planned slices %v, want sl's %v", what, cs.chainIDs, ids)
		}
		if got := e.hopWrites - before; got != writes {
			t.Errorf("%s: %d hops written, want %d", what, got, writes)
		}
		if got := journalCubes(t, e)[journalled:]; !slices.Equal(got, journal) {
			t.Errorf("%s: journalled %v, want %v", what, got, journal)
		}
		// what a plan of the whole topology makes
		all := allChains(e.topo)
		want := newChainIndex()
		all.applyTo(want)
		if !maps.Equal(e.chains.byEntry, want.byEntry) || !maps.EqualFunc(e.chains.bySlicer, want.bySlicer, maps.Equal) {
			t.Errorf("%s: the kept index differs from one made afresh", what)
		}
		p, err := (&planner{t: e.topo, slots: e.slots, ifindex: ifindex, chains: all}).makePlan()
		if err != nil {
			t.Fatal(err)
		}
		wantHops := maps.Clone(p.chainHops["sl"])
		maps.DeleteFunc(wantHops, func(_ int, h datapath.Hop) bool { return h == datapath.Hop{} })
		if !maps.Equal(e.cubes["sl"].chainHops, wantHops) {
			t.Errorf("%s: the slicer's chain hops differ from a plan of the whole topology", what)
		}
		for name, hops := range p.hops {
			if !maps.Equal(e.cubes[name].hops, hops) {
				t.Errorf("%s: cube %s's hops %v, a plan of the whole topology %v", what, name, e.cubes[name].hops, hops)
			}
		}
	}
	step("add a slice", func(sl *cube.Cube) { sl.SetRow("slices", "s201", chainSlice(n+1, "c201:in")) },
		[]string{"c201", "sl"}, []int{n + 1}, 2, []string{":sls201"})
	// refused: c5:in is s5's, which the change did not touch
	if err := e.Update(func(tp *cube.Topology) error {
		sl, err := tp.Edit("sl")
		if err == nil {
			sl.SetRow("slices", "s201", chainSlice(n+1, "c5:in"))
		}
		return err
	}); err == nil || !strings.Contains(err.Error(), "already slice s5's chain entry") {
		t.Fatalf("a slice into another slice's entry: %v", err)
	}
	step("remove a slice", func(sl *cube.Cube) { sl.SetRow("slices", "s7", nil) },
		[]string{"c7", "sl"}, []int{7}, 2, []string{":sls7"})
	step("move a slice to a free entry", func(sl *cube.Cube) { sl.SetRow("slices", "s201", chainSlice(n+1, "c7:in")) },
		[]string{"c201", "c7", "sl"}, []int{n + 1}, 3, []string{":sls201"})
}
