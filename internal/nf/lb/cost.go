package lb

import (
	"encoding/json"
	"fmt"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/estimate"
)

// The load balancer's cost model: a packet of a known flow finds it in the
// connection table and goes to its backend, rewritten (NAT mode: address,
// port, checksums) or only re-addressed (DSR mode: MACs). Maglev places a
// flow's first packet; the backends' number does not show after that.
const (
	termNAT = "lb.nat"
	termDSR = "lb.dsr"
)

func init() {
	estimate.Register(&estimate.Model{Type: "lb",
		Terms: []estimate.Term{
			{Name: termNAT, Doc: "a packet of a known flow to a NAT-mode service"},
			{Name: termDSR, Doc: "a packet of a known flow to a DSR-mode service"},
		},
		Uses:  costUses,
		Cases: costCases,
	})
}

func costUses(_ *estimate.Profile, c *cube.Cube, _ string) ([]estimate.Use, []string, error) {
	svcs, err := servicesTable.Entries(c)
	if err != nil {
		return nil, nil, err
	}
	nat, dsr := 0, 0
	for _, s := range svcs {
		if s.(*Service).Mode == "nat" {
			nat++
		} else {
			dsr++
		}
	}
	if nat > dsr {
		return []estimate.Use{{Term: termNAT, N: 1, What: "lb: known flow, NAT"}}, []string{fmt.Sprintf("%d of %d services in NAT mode", nat, nat+dsr)}, nil
	}
	return []estimate.Use{{Term: termDSR, N: 1, What: "lb: known flow, DSR"}}, []string{fmt.Sprintf("%d of %d services in DSR mode", dsr, nat+dsr)}, nil
}

// costCases: a TCP flow to a service in each mode, 2 and 16 backends.
func costCases(holdout bool) []estimate.Case {
	mk := func(mode string, n int) estimate.Case {
		c := &cube.Cube{Name: "lb1", Type: "lb",
			Ports:  []cube.Port{{Name: "front", Index: 0, MAC: "02:00:00:00:0f:00", Addresses: []string{"198.18.1.1/24"}}, {Name: "back", Index: 1}},
			Tables: map[string]map[string]json.RawMessage{"services": {}}}
		s := Service{VIP: "198.18.9.100", Protocol: "tcp", Port: 80, Mode: mode, TableSize: 251}
		if n > 16 {
			s.TableSize = 1021
		}
		for i := 0; i < n; i++ {
			w := uint32(1)
			s.Backends = append(s.Backends, Backend{Name: fmt.Sprintf("be%d", i+1), Address: fmt.Sprintf("198.18.2.%d", 11+i),
				MAC: fmt.Sprintf("02:00:00:00:be:%02x", i+1), Port: "back", Weight: &w})
		}
		c.Tables["services"][s.Key()] = estimate.Row(s)
		return estimate.Case{Name: fmt.Sprintf("%s mode, %d backends", mode, n), Cube: c, InPort: "front",
			Frame: estimate.Frame(estimate.FrameSpec{Proto: "tcp", TCPFlags: "A", SrcMAC: "02:00:00:00:00:01", DstMAC: "02:00:00:00:0f:00",
				Src: "198.18.1.2", Dst: "198.18.9.100", Sport: 40000, Dport: 80})}
	}
	if holdout {
		return []estimate.Case{mk("nat", 4), mk("dsr", 8), mk("dsr", 32)}
	}
	return []estimate.Case{mk("nat", 2), mk("dsr", 2), mk("nat", 16)}
}
