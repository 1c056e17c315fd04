package portfwd

import (
	"encoding/json"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/estimate"
)

// The portfwd cube's cost model: one array lookup and a redirect, and a
// 6-byte store per MAC address its in-port's rule rewrites. The rewrite is
// a fraction of a nanosecond per address: the calibration measures it over
// several rules (none, one, both addresses) so that the noise of a shared
// machine averages out rather than lands on one term.
const (
	termForward = "portfwd.forward"
	termRewrite = "portfwd.mac_rewrite"
)

func init() {
	estimate.Register(&estimate.Model{Type: "portfwd",
		Terms: []estimate.Term{
			{Name: termForward, Doc: "a packet forwarded by its in-port's rule"},
			{Name: termRewrite, Doc: "rewriting one MAC address (source or destination)"},
		},
		Uses:  costUses,
		Cases: costCases,
	})
}

// costUses prices the rule of the port the packet enters on; when that is
// unknown, the dearest rule.
func costUses(_ *estimate.Profile, c *cube.Cube, in string) ([]estimate.Use, []string, error) {
	uses := []estimate.Use{{Term: termForward, N: 1, What: "portfwd: forward"}}
	rules, err := rulesTable.Entries(c)
	if err != nil {
		return nil, nil, err
	}
	macs := 0
	for _, r := range rules {
		r := r.(*Rule)
		if in != "" && r.InPort != in {
			continue
		}
		n := 0
		if r.SrcMAC != "" {
			n++
		}
		if r.DstMAC != "" {
			n++
		}
		macs = max(macs, n)
	}
	if macs == 0 {
		return uses, nil, nil
	}
	uses = append(uses, estimate.Use{Term: termRewrite, N: float64(macs), What: "portfwd: MAC rewrite"})
	note := "its rule rewrites a MAC address"
	if macs == 2 {
		note = "its rule rewrites both MAC addresses"
	}
	return uses, []string{note}, nil
}

// costCases are the calibration cases, or with holdout others.
func costCases(holdout bool) []estimate.Case {
	mk := func(name string, rule Rule) estimate.Case {
		c := &cube.Cube{Name: "pf", Type: "portfwd", Ports: []cube.Port{{Name: "p0", Index: 0}, {Name: "p1", Index: 1}},
			Tables: map[string]map[string]json.RawMessage{"rules": {rule.InPort: estimate.Row(rule)}}}
		return estimate.Case{Name: name, Cube: c, InPort: rule.InPort, Frame: estimate.Frame(estimate.FrameSpec{Src: "198.18.0.10", Dst: "198.18.1.1", Sport: 1, Dport: 2})}
	}
	if holdout {
		return []estimate.Case{
			mk("forward, destination MAC rewritten", Rule{InPort: "p0", Action: "forward", OutPort: "p1", DstMAC: "02:00:00:00:0a:09"}),
			mk("forward from the second port, both MACs rewritten", Rule{InPort: "p1", Action: "forward", OutPort: "p0", SrcMAC: "02:00:00:00:0b:01", DstMAC: "02:00:00:00:0b:02"}),
		}
	}
	return []estimate.Case{
		mk("forward", Rule{InPort: "p0", Action: "forward", OutPort: "p1"}),
		mk("forward from the second port", Rule{InPort: "p1", Action: "forward", OutPort: "p0"}),
		mk("forward, source MAC rewritten", Rule{InPort: "p0", Action: "forward", OutPort: "p1", SrcMAC: "02:00:00:00:0a:01"}),
		mk("forward with MAC rewrite", Rule{InPort: "p0", Action: "forward", OutPort: "p1", SrcMAC: "02:00:00:00:0a:01", DstMAC: "02:00:00:00:0a:02"}),
	}
}
