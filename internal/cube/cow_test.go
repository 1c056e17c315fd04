package cube_test

import (
	"encoding/json"
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
	work := applied.Fork()

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
	for name, c := range applied.Cubes() {
		if !c.Equal(orig.Lookup(name)) || !slices.Equal(applied.Attachments["c:p0"], nil) {
			t.Errorf("the shared cube %s changed: %+v", name, c)
		}
		if work.Lookup(name) == c { // every cube was edited: each is the working copy's own
			t.Errorf("cube %s was edited without a copy", name)
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
	if cubes, _ := work.Touched(); !slices.Contains(cubes, "b") || work.Lookup("b") != nil || applied.Lookup("b") == nil {
		t.Errorf("delete: touched %v; working copy has b: %v; applied has b: %v", cubes, work.Lookup("b") != nil, applied.Lookup("b") != nil)
	}
}
