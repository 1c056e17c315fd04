package nat

import (
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/datapath"
	"github.com/edgenf/edgenf/internal/estimate"
)

// The NAT's cost model: a packet of a translated flow finds its session
// and is rewritten (addresses, ports, checksums); the rules are only looked
// at by a flow's first packet.
const termTranslate = "nat.translate"

func init() {
	estimate.Register(&estimate.Model{Type: "nat",
		Terms: []estimate.Term{{Name: termTranslate, Doc: "a packet of a translated flow (session found, rewritten)"}},
		Uses: func(_ *estimate.Profile, c *cube.Cube, _ string) ([]estimate.Use, []string, error) {
			return []estimate.Use{{Term: termTranslate, N: 1, What: "nat: session, rewrite"}},
				[]string{"a flow's first packet also picks a port and opens the session"}, nil
		},
		Cases: costCases,
	})
}

// costCases: an outbound UDP flow translated by an SNAT rule, with 1 and
// 100 rules.
func costCases(holdout bool) []estimate.Case {
	mk := func(rules int) estimate.Case {
		c := &cube.Cube{Name: "nat", Type: "nat", Tables: map[string]map[string]json.RawMessage{"snat": {}}}
		for i := 0; i < rules; i++ {
			r := SNATRule{ID: i + 1, Internal: fmt.Sprintf("10.%d.%d.0/24", i/256, i%256), External: "198.19.0.1"}
			if i == rules-1 {
				r.Internal = "198.18.0.0/24"
			}
			c.Tables["snat"][strconv.Itoa(r.ID)] = estimate.Row(r)
		}
		name := fmt.Sprintf("outbound UDP flow, %d SNAT rules", rules)
		if rules == 1 {
			name = "outbound UDP flow, 1 SNAT rule"
		}
		return estimate.Case{Name: name, Cube: c, Dir: datapath.Egress,
			Frame: estimate.Frame(estimate.FrameSpec{Src: "198.18.0.10", Dst: "198.19.9.9", Sport: 40000, Dport: 53})}
	}
	if holdout {
		return []estimate.Case{mk(10), mk(500)}
	}
	return []estimate.Case{mk(1), mk(100)}
}
