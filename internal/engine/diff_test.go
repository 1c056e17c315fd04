package engine

import (
	"encoding/json"
	"testing"

	"github.com/edgenf/edgenf/internal/cube"
)

func TestDiffListsOnlyWhatChanged(t *testing.T) {
	a := cube.NewTopology()
	a.Put(&cube.Cube{Name: "c1", Type: "portfwd", Hook: "xdp",
		Tables: map[string]map[string]json.RawMessage{"rules": {"p0": json.RawMessage(`{"in_port":"p0","out_port":"p1"}`)}}})
	a.Put(&cube.Cube{Name: "c2", Type: "portfwd", Hook: "xdp"})
	if d := Diff(a, a.Clone()); len(d) != 0 {
		t.Fatalf("identical topologies differ: %v", d)
	}
	b := a.Clone()
	b.Lookup("c1").Tables["rules"]["p0"] = json.RawMessage(`{ "out_port": "p1", "in_port": "p0" }`) // same, reordered
	if d := Diff(a, b); len(d) != 0 {
		t.Fatalf("key order counted as a change: %v", d)
	}
	b.Lookup("c1").Tables["rules"]["p1"] = json.RawMessage(`{"in_port":"p1","action":"drop"}`)
	b.Remove("c2")
	b.Put(&cube.Cube{Name: "m1", Type: "monitor", Hook: "tc"})
	b.Attachments["c1:p0"] = []string{"m1"}
	d := Diff(a, b)
	want := []string{
		"~ cube c1: [table rules +1 -0 ~0]",
		"- cube c2: portfwd",
		"+ cube m1: monitor at tc, 0 ports",
		"+ attachment c1:p0: [m1]",
	}
	if len(d) != len(want) {
		t.Fatalf("diff %v", d)
	}
	for i := range want {
		if d[i].String() != want[i] {
			t.Errorf("change %d: %q, want %q", i, d[i], want[i])
		}
	}
}
