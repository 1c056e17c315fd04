package bridge

import (
	"encoding/json"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/estimate"
)

// The bridge's cost model: a known unicast destination (the source already
// learned) is two FDB lookups and a redirect, whatever the FDB holds; VLAN
// ports add the tag's handling.
const (
	termForward = "bridge.forward"
	termVLAN    = "bridge.vlan"
)

func init() {
	estimate.Register(&estimate.Model{Type: "bridge",
		Terms: []estimate.Term{
			{Name: termForward, Doc: "a frame to a known MAC, its source known"},
			{Name: termVLAN, Doc: "extra for a frame between an access port and a trunk (tag pushed or popped)"},
		},
		Uses:  costUses,
		Cases: costCases,
	})
}

func costUses(_ *estimate.Profile, c *cube.Cube, _ string) ([]estimate.Use, []string, error) {
	uses := []estimate.Use{{Term: termForward, N: 1, What: "bridge: FDB hit"}}
	for _, p := range c.Ports {
		var pc PortConfig
		if err := cube.DecodeInto("config", p.Config, &pc); err != nil {
			return nil, nil, err
		}
		if pc.Mode == "trunk" {
			uses = append(uses, estimate.Use{Term: termVLAN, N: 1, What: "bridge: VLAN tag"})
			return uses, []string{"a frame between an access port and a trunk"}, nil
		}
	}
	return uses, []string{"destination known, source already learned"}, nil
}

// costCases are the calibration cases, or with holdout others: a
// learned destination, and a tagged frame from a trunk to an access port.
func costCases(holdout bool) []estimate.Case {
	frame := estimate.Frame(estimate.FrameSpec{SrcMAC: "02:00:00:00:00:01", DstMAC: "02:00:00:00:00:02", Src: "198.18.0.10", Dst: "198.18.0.20", Sport: 1, Dport: 2})
	flat := &cube.Cube{Name: "br", Type: "bridge", Ports: []cube.Port{{Name: "p0", Index: 0}, {Name: "p1", Index: 1}, {Name: "p2", Index: 2}},
		Tables: map[string]map[string]json.RawMessage{"fdb": {"02:00:00:00:00:02/1": estimate.Row(FDBEntry{MAC: "02:00:00:00:00:02", VLAN: 1, Port: "p1"})}}}
	vlan := &cube.Cube{Name: "br", Type: "bridge",
		Ports: []cube.Port{{Name: "p0", Index: 0, Config: json.RawMessage(`{"vlan":10}`)},
			{Name: "p1", Index: 1, Config: json.RawMessage(`{"mode":"trunk","allowed_vlans":"10,20"}`)}},
		Tables: map[string]map[string]json.RawMessage{"fdb": {"02:00:00:00:00:02/10": estimate.Row(FDBEntry{MAC: "02:00:00:00:00:02", VLAN: 10, Port: "p1"})}}}
	if holdout {
		learned := &cube.Cube{Name: "br", Type: "bridge", Ports: []cube.Port{{Name: "p0", Index: 0}, {Name: "p1", Index: 1}, {Name: "p2", Index: 2}, {Name: "p3", Index: 3}}}
		back := estimate.Frame(estimate.FrameSpec{SrcMAC: "02:00:00:00:00:02", DstMAC: "02:00:00:00:00:01", Src: "198.18.0.20", Dst: "198.18.0.10", Sport: 2, Dport: 1})
		tagged := append(append(append([]byte{}, back[:12]...), 0x81, 0x00, 0x00, 0x0a), back[12:]...)
		return []estimate.Case{
			{Name: "unicast to a MAC learned on another port", Cube: learned, InPort: "p1", Frame: back, Warm: [][]byte{frame}, WarmPort: "p0"},
			{Name: "unicast, trunk to access port (learned)", Cube: vlan.Clone(), InPort: "p1", Frame: tagged, Warm: [][]byte{frame}, WarmPort: "p0", ChangesSkb: true},
		}
	}
	return []estimate.Case{
		{Name: "unicast, access ports", Cube: flat, InPort: "p0", Frame: frame},
		{Name: "unicast, access port to trunk", Cube: vlan, InPort: "p0", Frame: frame, ChangesSkb: true},
	}
}
