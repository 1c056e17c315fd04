package cube_test

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"testing"

	"github.com/edgenf/edgenf/internal/cube"
	_ "github.com/edgenf/edgenf/internal/nf/monitor"
	_ "github.com/edgenf/edgenf/internal/nf/portfwd"
)

// TestEditsCopyOnWrite: a shared topology's mutations copy a cube before
// changing it, leave the original (the applied state's) as it was, and
// record what they touched; a cube that ended as it was is not changed.
func TestEditsCopyOnWrite(t *testing.T) {
	applied := cube.NewTopology()
	for _, c := range []*cube.Cube{
		{Name: "a", Type: "portfwd", Hook: "xdp", Ports: []cube.Port{{Name: "p0"}, {Name: "p1", Index: 1, Peer: "b:p0"}}},
		{Name: "b", Type: "portfwd", Hook: "xdp", Ports: []cube.Port{{Name: "p0", Peer: "a:p1"}, {Name: "p1", Index: 1}}},
		{Name: "c", Type: "portfwd", Hook: "xdp", Ports: []cube.Port{{Name: "p0"}}},
		{Name: "m", Type: "monitor", Hook: "xdp"},
	} {
		applied.Put(c)
	}
	orig := applied.Clone()
	work := &cube.Topology{Cubes: map[string]*cube.Cube{}, Attachments: map[string][]string{}}
	for name, c := range applied.Cubes {
		work.Cubes[name] = c
	}
	work.Share()

	if err := work.Unpeer("a:p1"); err != nil {
		t.Fatal(err)
	}
	if _, err := work.PutEntry("c", "rules", json.RawMessage(`{"in_port":"p0","out_port":"p0"}`)); err != nil {
		t.Fatal(err)
	}
	if err := work.Attach("m", "c:p0", "last"); err != nil {
		t.Fatal(err)
	}
	if err := work.SetConfig("m", nil); err != nil { // touched, unchanged
		t.Fatal(err)
	}
	if _, err := work.Edit("nosuch"); err == nil {
		t.Fatal("Edit of a cube that does not exist: no error")
	}
	for name, c := range applied.Cubes {
		if !c.Equal(orig.Cubes[name]) || !slices.Equal(applied.Attachments["c:p0"], nil) {
			t.Errorf("the shared cube %s changed: %+v", name, c)
		}
		if work.Owns(name) == (work.Cubes[name] == c) {
			t.Errorf("cube %s: owned %v, but shared %v", name, work.Owns(name), work.Cubes[name] == c)
		}
	}
	cubes, points := work.Touched()
	if want := []string{"a", "b", "c", "m"}; !slices.Equal(cubes, want) {
		t.Errorf("touched %v, want %v", cubes, want)
	}
	if want := []string{"c:p0"}; !slices.Equal(points, want) {
		t.Errorf("touched points %v, want %v", points, want)
	}
	if got, want := work.ChangedAmong(applied, cubes), []string{"a", "b", "c"}; !slices.Equal(got, want) {
		t.Errorf("changed %v, want %v", got, want)
	}
	// a second edit changes the change's own copy, not another one
	first, _ := work.Edit("a")
	again, _ := work.Edit("a")
	if first != again {
		t.Error("a second Edit copied the cube again")
	}
	// deleting is recorded too
	if err := work.DeleteCube("b"); err != nil {
		t.Fatal(err)
	}
	if cubes, _ := work.Touched(); !slices.Contains(cubes, "b") || work.Cubes["b"] != nil || applied.Cubes["b"] == nil {
		t.Errorf("delete: touched %v; working copy has b: %v; applied has b: %v", cubes, work.Cubes["b"] != nil, applied.Cubes["b"] != nil)
	}
}

// TestUntrackedFindsEditsAroundTheAccessors: against an applied state
// whose cubes are marked, a working copy's cubes set or deleted in
// t.Cubes directly are found, however they were made (a new cube, a
// Clone, a struct copy, another cube moved under the key, a cube the
// applied state no longer holds); edits through the accessors are not.
func TestUntrackedFindsEditsAroundTheAccessors(t *testing.T) {
	applied := cube.NewTopology()
	for _, n := range []string{"a", "b", "c"} {
		applied.Cubes[n] = &cube.Cube{Name: n, Type: "portfwd"}
	}
	applied.MarkApplied("a", "b", "c")
	old := applied.Cubes["c"]
	// c is replaced by an applied change: its old copy is no longer applied
	applied.Unmark("c")
	applied.Cubes["c"] = &cube.Cube{Name: "c", Type: "portfwd", Tenant: "red"}
	applied.MarkApplied("c")
	working := func() *cube.Topology {
		w := &cube.Topology{Cubes: maps.Clone(applied.Cubes), Attachments: map[string][]string{}}
		w.Share()
		return w
	}
	cases := []struct {
		what    string
		edit    func(w *cube.Topology)
		set     []string
		deleted bool
	}{
		{"nothing", func(w *cube.Topology) {}, nil, false},
		{"tracked edit, put and remove", func(w *cube.Topology) {
			c, _ := w.Edit("a")
			c.Tenant = "red"
			w.Put(&cube.Cube{Name: "d"})
			w.Remove("b")
		}, nil, false},
		{"a new cube set directly", func(w *cube.Topology) { w.Cubes["d"] = &cube.Cube{Name: "d"} }, []string{"d"}, false},
		{"a cube replaced by its Clone", func(w *cube.Topology) { w.Cubes["a"] = w.Cubes["a"].Clone() }, []string{"a"}, false},
		{"a cube replaced by a struct copy", func(w *cube.Topology) { c := *w.Cubes["a"]; w.Cubes["a"] = &c }, []string{"a"}, false},
		{"a cube moved under another key", func(w *cube.Topology) { w.Cubes["a"] = w.Cubes["b"] }, []string{"a"}, false},
		{"a cube the applied state no longer holds", func(w *cube.Topology) { w.Cubes["c"] = old }, []string{"c"}, false},
		{"a cube deleted directly", func(w *cube.Topology) { delete(w.Cubes, "b") }, nil, true},
		{"a cube deleted directly, another put", func(w *cube.Topology) { delete(w.Cubes, "b"); w.Put(&cube.Cube{Name: "d"}) }, nil, true},
		{"a cube deleted directly, another edited", func(w *cube.Topology) { delete(w.Cubes, "b"); w.Edit("a") }, nil, true},
	}
	for _, c := range cases {
		w := working()
		c.edit(w)
		set, deleted := w.Untracked(applied)
		slices.Sort(set)
		if !slices.Equal(set, c.set) || deleted != c.deleted {
			t.Errorf("%s: untracked %v, deleted %v; want %v, %v", c.what, set, deleted, c.set, c.deleted)
		}
	}
}

// BenchmarkUntracked: the untracked-edit guard a daemon runs on every
// change, at N cubes, with the marks (Untracked) and, as the baseline in
// the same run, comparing every cube with the applied state's (the guard
// before marks: a lookup per cube).
func BenchmarkUntracked(b *testing.B) {
	for _, n := range []int{100, 3000} {
		applied := cube.NewTopology()
		for i := range n {
			name := fmt.Sprintf("t%da", i)
			applied.Cubes[name] = &cube.Cube{Name: name, Type: "portfwd"}
		}
		applied.MarkApplied(applied.CubeNames()...)
		w := &cube.Topology{Cubes: maps.Clone(applied.Cubes), Attachments: map[string][]string{}}
		w.Share()
		w.Edit("t1a")
		b.Run(fmt.Sprintf("cubes=%d/marks", n), func(b *testing.B) {
			for b.Loop() {
				if set, deleted := w.Untracked(applied); len(set) > 0 || deleted {
					b.Fatal(set, deleted)
				}
			}
		})
		b.Run(fmt.Sprintf("cubes=%d/lookups", n), func(b *testing.B) {
			for b.Loop() {
				kept, set := 0, 0
				for name, c := range w.Cubes {
					old, ok := applied.Cubes[name]
					if ok {
						kept++
					}
					if c != old && !w.Owns(name) {
						set++
					}
				}
				if set > 0 || kept != n {
					b.Fatal(set, kept)
				}
			}
		})
	}
}
