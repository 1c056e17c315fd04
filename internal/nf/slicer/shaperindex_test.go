package slicer

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/edgenf/edgenf/internal/cube"
)

// shaperIndex is a System that keeps the interfaces' shapers
// (cube.ShaperIndex), as the engine's index does.
type shaperIndex map[string]string

func (shaperIndex) IfaceExists(string) bool { return true }
func (x shaperIndex) IfaceShaper(iface string) (string, bool) {
	name, ok := x[iface]
	return name, ok
}

// onlyExists is a System without an index: validation walks the cubes.
type onlyExists struct{}

func (onlyExists) IfaceExists(string) bool { return true }

// A change to a shaping slicer asks the index who shapes an interface
// instead of walking every cube, with the verdicts of the walk.
func TestShaperCheckAsksTheIndex(t *testing.T) {
	shaping := func(name, iface string) *cube.Cube {
		cfg, _ := json.Marshal(map[string]any{"uplink": "up", "egress": []map[string]any{{"interface": iface, "rate_bps": 100000000}}})
		return &cube.Cube{Name: name, Type: "slicer", Hook: "tc", Config: cfg,
			Tables: map[string]map[string]json.RawMessage{"slices": {}}, Ports: []cube.Port{{Name: "up"}}}
	}
	prev := cube.NewTopology()
	index := shaperIndex{}
	for i := range 20 {
		prev.Put(shaping(fmt.Sprintf("sl%d", i), fmt.Sprintf("eth%d", i)))
		index[fmt.Sprintf("eth%d", i)] = fmt.Sprintf("sl%d", i)
	}
	for _, c := range []struct {
		what string
		edit func(t *cube.Topology)
		want string // "": valid
	}{
		{"an interface an unchanged slicer shapes", func(t *cube.Topology) { t.Put(shaping("sl1", "eth7")) },
			"interface eth7 is already shaped by cube sl7"},
		{"an interface a changed slicer let go of", func(t *cube.Topology) {
			t.Put(shaping("sl1", "eth2"))
			t.Put(shaping("sl2", "eth-new"))
		}, ""},
		{"its own interface, the slicer's settings written again", func(t *cube.Topology) { t.Put(shaping("sl3", "eth3")) }, ""},
	} {
		for _, sys := range []cube.System{index, onlyExists{}} {
			next := prev.Fork()
			c.edit(next)
			changed, _ := next.Touched()
			before := cube.CubeWalks()
			err := next.ValidateChanged(prev, changed, sys)
			if got := fmt.Sprint(err); (c.want == "" && err != nil) || (c.want != "" && !strings.Contains(got, c.want)) {
				t.Errorf("%s (%T): %v, want %q", c.what, sys, err, c.want)
			}
			if _, indexed := sys.(cube.ShaperIndex); indexed && cube.CubeWalks() != before {
				t.Errorf("%s: validation walked the cubes with a shaper index", c.what)
			}
		}
	}
}
