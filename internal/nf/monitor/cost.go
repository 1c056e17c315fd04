package monitor

import (
	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/datapath"
	"github.com/edgenf/edgenf/internal/estimate"
)

// The monitor's cost model: it parses and counts every packet, whatever it
// is, and passes it.
const termPass = "monitor.pass"

func init() {
	estimate.Register(&estimate.Model{Type: "monitor",
		Terms: []estimate.Term{{Name: termPass, Doc: "a packet counted and passed"}},
		Uses: func(*estimate.Profile, *cube.Cube, string) ([]estimate.Use, []string, error) {
			return []estimate.Use{{Term: termPass, N: 1, What: "monitor: count, pass"}}, nil, nil
		},
		Cases: func(holdout bool) []estimate.Case {
			if holdout {
				return []estimate.Case{{Name: "TCP, egress", Cube: &cube.Cube{Name: "mon", Type: "monitor"}, Dir: datapath.Egress,
					Frame: estimate.Frame(estimate.FrameSpec{Proto: "tcp", TCPFlags: "A", Src: "198.18.0.10", Dst: "198.18.1.1", Sport: 1, Dport: 2, Size: 128})}}
			}
			return []estimate.Case{{Name: "UDP, ingress", Cube: &cube.Cube{Name: "mon", Type: "monitor"}, Dir: datapath.Ingress,
				Frame: estimate.Frame(estimate.FrameSpec{Src: "198.18.0.10", Dst: "198.18.1.1", Sport: 1, Dport: 2})}}
		},
	})
}
