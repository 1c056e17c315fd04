package portfwd

import (
	"encoding/json"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/estimate"
)

// The portfwd cube's cost model: one array lookup and a redirect, and the
// MAC rewrite when its rules ask for one.
const (
	termForward = "portfwd.forward"
	termRewrite = "portfwd.mac_rewrite"
)

func init() {
	estimate.Register(&estimate.Model{Type: "portfwd",
		Terms: []estimate.Term{
			{Name: termForward, Doc: "a packet forwarded by its in-port's rule"},
			{Name: termRewrite, Doc: "rewriting its MAC addresses"},
		},
		Uses:  costUses,
		Cases: costCases,
	})
}

func costUses(_ *estimate.Profile, c *cube.Cube, _ string) ([]estimate.Use, []string, error) {
	uses := []estimate.Use{{Term: termForward, N: 1, What: "portfwd: forward"}}
	rules, err := rulesTable.Entries(c)
	if err != nil {
		return nil, nil, err
	}
	for _, r := range rules {
		if r := r.(*Rule); r.SrcMAC != "" || r.DstMAC != "" {
			uses = append(uses, estimate.Use{Term: termRewrite, N: 1, What: "portfwd: MAC rewrite"})
			return uses, []string{"its rules rewrite MAC addresses"}, nil
		}
	}
	return uses, nil, nil
}

// costCases are the calibration cases, or with holdout others.
func costCases(holdout bool) []estimate.Case {
	mk := func(name string, rule Rule) estimate.Case {
		c := &cube.Cube{Name: "pf", Type: "portfwd", Ports: []cube.Port{{Name: "p0", Index: 0}, {Name: "p1", Index: 1}},
			Tables: map[string]map[string]json.RawMessage{"rules": {"p0": estimate.Row(rule)}}}
		return estimate.Case{Name: name, Cube: c, InPort: "p0", Frame: estimate.Frame(estimate.FrameSpec{Src: "198.18.0.10", Dst: "198.18.1.1", Sport: 1, Dport: 2})}
	}
	if holdout {
		return []estimate.Case{mk("forward, destination MAC rewritten", Rule{InPort: "p0", Action: "forward", OutPort: "p1", DstMAC: "02:00:00:00:0a:09"})}
	}
	return []estimate.Case{
		mk("forward", Rule{InPort: "p0", Action: "forward", OutPort: "p1"}),
		mk("forward with MAC rewrite", Rule{InPort: "p0", Action: "forward", OutPort: "p1", SrcMAC: "02:00:00:00:0a:01", DstMAC: "02:00:00:00:0a:02"}),
	}
}
