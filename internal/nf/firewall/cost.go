package firewall

import (
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/datapath"
	"github.com/edgenf/edgenf/internal/estimate"
)

// The firewall's cost model. A packet of a tracked connection finds its
// connection and, its verdict cached, skips the classifier: that cost does
// not grow with the rules. A connection's first packet, and a packet that
// is not tracked (invalid, ICMP errors, later fragments), runs the
// bit-vector classifier, whose cost grows with the 64-rule words it ANDs.
const (
	termTracked  = "firewall.tracked"
	termClassify = "firewall.classify"
	termWord     = "firewall.classify.word"
)

func init() {
	estimate.Register(&estimate.Model{Type: "firewall",
		Terms: []estimate.Term{
			{Name: termTracked, Doc: "a packet of a tracked connection, its verdict cached"},
			{Name: termClassify, Doc: "a packet the classifier judges (first of a connection, or untracked)"},
			{Name: termWord, Doc: "per 64 rules of the chain the classifier runs"},
		},
		Uses:  costUses,
		Cases: costCases,
	})
}

func ruleWords(rules int) float64 { return float64((rules + 63) / 64) }

func costUses(p *estimate.Profile, c *cube.Cube, _ string) ([]estimate.Use, []string, error) {
	n := max(len(c.Tables["ingress"]), len(c.Tables["egress"]))
	uses := []estimate.Use{{Term: termTracked, N: 1, What: "firewall: tracked connection, cached verdict"}}
	note := fmt.Sprintf("a connection's first packet (and untracked packets) runs the classifier over %d rules instead", n)
	if p != nil {
		first := p.Price([]estimate.Use{{Term: termClassify, N: 1}, {Term: termWord, N: ruleWords(n)}})
		note += fmt.Sprintf(": %.1f ns", first.Total)
	}
	return uses, []string{note}, nil
}

// costCases: a tracked UDP flow with 10 and 1,000 rules; untracked TCP
// segments (an ACK of no connection: invalid) judged by chains of 10,
// 1,000 and 10,000 rules, none matching.
func costCases(holdout bool) []estimate.Case {
	mk := func(name string, rules int, frame []byte, untracked bool) estimate.Case {
		c := &cube.Cube{Name: "fw", Type: "firewall", Tables: map[string]map[string]json.RawMessage{"ingress": {}}}
		for i := 0; i < rules; i++ {
			r := Rule{ID: i + 1, Proto: "tcp", Dport: strconv.Itoa(10000 + i%50000), Action: "drop"}
			c.Tables["ingress"][strconv.Itoa(r.ID)] = estimate.Row(r)
		}
		cs := estimate.Case{Name: name, Cube: c, Dir: datapath.Ingress, Frame: frame}
		if untracked {
			cs.Uses = []estimate.Use{{Term: termClassify, N: 1}, {Term: termWord, N: ruleWords(rules)}}
		}
		return cs
	}
	udp := estimate.Frame(estimate.FrameSpec{Src: "198.18.0.10", Dst: "198.18.1.1", Sport: 1234, Dport: 53})
	ack := estimate.Frame(estimate.FrameSpec{Proto: "tcp", TCPFlags: "A", Src: "198.18.0.10", Dst: "198.18.1.1", Sport: 40000, Dport: 80})
	if holdout {
		syn := estimate.Frame(estimate.FrameSpec{Proto: "tcp", TCPFlags: "SA", Src: "198.18.0.10", Dst: "198.18.1.1", Sport: 40000, Dport: 80})
		return []estimate.Case{
			mk("tracked UDP flow, 100 rules", 100, udp, false),
			mk("tracked UDP flow, 5,000 rules", 5000, udp, false),
			mk("untracked TCP, 300 rules", 300, syn, true),
		}
	}
	return []estimate.Case{
		mk("tracked UDP flow, 10 rules", 10, udp, false),
		mk("tracked UDP flow, 1,000 rules", 1000, udp, false),
		mk("untracked TCP, 10 rules", 10, ack, true),
		mk("untracked TCP, 1,000 rules", 1000, ack, true),
		mk("untracked TCP, 10,000 rules", 10000, ack, true),
	}
}
