package slicer

import (
	"encoding/json"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/estimate"
)

// The slicer's cost model. A frame entering by an entry port is parsed
// and classified: one lookup per rule kind the slicer uses, in precedence
// order, until one hits. The lookups differ by map: VLAN, DSCP and in-port
// index arrays (the verifier inlines those: a bounds check and a load);
// protocol and port is a hash lookup of the L4 key, two when the port
// misses, and needs the L4 header read; source, destination, UE pool and
// TEID walk a longest-prefix trie. The slice's rate limits are policed
// (mostly spending a per-CPU lease; a clock read and a compare-and-swap
// when one runs out); a VLAN slice's tag comes off. A frame coming back from a slice's chain is looked up by port,
// marked and sent out by the slice's entry, its tag put back.
const (
	termClassify = "slicer.classify"
	termArray    = "slicer.lookup.array"
	termL4       = "slicer.lookup.l4"
	termLPM      = "slicer.lookup.lpm"
	termPolice   = "slicer.police"
	termVLAN     = "slicer.vlan"
	termReturn   = "slicer.return"
)

func init() {
	estimate.Register(&estimate.Model{Type: "slicer",
		Terms: []estimate.Term{
			{Name: termClassify, Doc: "a frame from an entry port parsed, given its slice, counted, marked and sent"},
			{Name: termArray, Doc: "one array lookup of a rule kind (VLAN, DSCP, in-port)"},
			{Name: termL4, Doc: "one hash lookup of the protocol and port kind (two when the port misses), the L4 header read"},
			{Name: termLPM, Doc: "one longest-prefix lookup of a rule kind (source, destination, UE pool, TEID)"},
			{Name: termPolice, Doc: "one rate limit policed (packets/s or bits/s)"},
			{Name: termVLAN, Doc: "a VLAN slice's tag taken off or put back"},
			{Name: termReturn, Doc: "a frame back from a slice's chain, sent out by the slice's entry"},
		},
		Uses:  costUses,
		Via:   costVia,
		Cases: costCases,
	})
}

// lookups are what classifying a frame of slice s costs at most in a
// slicer using kinds: every kind before the one s's frame hits, each
// looked up once (protocol and port twice), and that one.
func lookups(kinds map[int]bool) []estimate.Use {
	var array, l4, lpm float64
	for k := range kinds {
		switch k {
		case kindTEID, kindUE, kindSrc, kindDst:
			lpm++
		case kindL4:
			l4 += 2
		default:
			array++
		}
	}
	var uses []estimate.Use
	if array > 0 {
		uses = append(uses, estimate.Use{Term: termArray, N: array, What: "slicer: array rule lookups"})
	}
	if l4 > 0 {
		uses = append(uses, estimate.Use{Term: termL4, N: l4, What: "slicer: protocol and port lookups"})
	}
	if lpm > 0 {
		uses = append(uses, estimate.Use{Term: termLPM, N: lpm, What: "slicer: prefix rule lookups"})
	}
	return uses
}

// costUses prices a frame entering by in: from a slice's chain, the way
// back; from an entry port (or unknown), the dearest slice's frame.
func costUses(p *estimate.Profile, c *cube.Cube, in string) ([]estimate.Use, []string, error) {
	return costVia(p, c, in, "")
}

// costVia prices a frame entering by in and leaving by out: from a
// slice's chain, the way back; from an entry port into the slice whose
// port is out (any: the dearest), a frame classified by the last rule
// kind the slicer looks up, policed and untagged as that slice's.
func costVia(p *estimate.Profile, c *cube.Cube, in, out string) ([]estimate.Use, []string, error) {
	list := others(c, "")
	for _, s := range list {
		if s.way() == in {
			uses := []estimate.Use{{Term: termReturn, N: 1, What: "slicer: return to the entry"}}
			if s.vlan() != 0 {
				uses = append(uses, estimate.Use{Term: termVLAN, N: 1, What: "slicer: VLAN tag put back"})
			}
			return uses, nil, nil
		}
	}
	kinds := map[int]bool{}
	slicePorts := portsOf(list)
	for _, s := range list {
		for i := range s.Rules {
			if r, err := s.Rules[i].parse(c, slicePorts); err == nil {
				kinds[r.kind] = true
			}
		}
	}
	base := append([]estimate.Use{{Term: termClassify, N: 1, What: "slicer: classify, mark, send"}}, lookups(kinds)...)
	var best []estimate.Use
	bestNS, bestName := -1.0, ""
	for _, s := range list {
		if out != "" && s.way() != out {
			continue
		}
		uses := append([]estimate.Use(nil), base...)
		if n := s.rates(); n > 0 {
			uses = append(uses, estimate.Use{Term: termPolice, N: float64(n), What: "slicer: policing"})
		}
		if s.vlan() != 0 {
			uses = append(uses, estimate.Use{Term: termVLAN, N: 1, What: "slicer: VLAN tag taken off"})
		}
		ns := float64(len(uses))
		if p != nil {
			ns = p.Price(uses).Total
		}
		if ns > bestNS {
			best, bestNS, bestName = uses, ns, s.Name
		}
	}
	if best == nil {
		return base, []string{"no slice leaves by this port: its frames are dropped"}, nil
	}
	note := "a frame of slice " + bestName + ", classified by the last rule kind looked up"
	if out == "" {
		note = "a frame of slice " + bestName + " (the dearest), classified by the last rule kind looked up"
	}
	return best, []string{note}, nil
}

// rates is how many rate limits the slice's frames are policed by at
// ingress.
// way is how frames pass between the slicer and the slice's chain, as the
// estimator names the slicer's hop: the slicer port leading into it, or the
// chain's entry (cube:port) for a slice that names one.
func (s *Slice) way() string {
	if s.Chain != "" {
		return s.Chain
	}
	return s.Port
}

func (s *Slice) rates() int {
	n := 0
	if s.RateBps > 0 {
		n++
	}
	if s.RatePps > 0 {
		n++
	}
	return n
}

// vlan is the VLAN the slice's rules name, 0 if none.
func (s *Slice) vlan() int {
	for _, r := range s.Rules {
		if r.VLAN != nil {
			return *r.VLAN
		}
	}
	return 0
}

// tagged is frame with an 802.1Q tag of vid after its MAC addresses.
func tagged(frame []byte, vid int) []byte {
	out := append([]byte(nil), frame[:12]...)
	out = append(out, 0x81, 0x00, byte(vid>>8), byte(vid))
	return append(out, frame[12:]...)
}

// costCases are the calibration cases, or with holdout others: one
// slicer with an entry port, three slice ports, and slices made of the
// rules each case needs.
func costCases(holdout bool) []estimate.Case {
	vid := func(n int) *int { return &n }
	udp := estimate.Frame(estimate.FrameSpec{Src: "198.18.0.10", Dst: "198.18.1.1", Sport: 1000, Dport: 2152})
	mk := func(name string, in string, frame []byte, slices ...Slice) estimate.Case {
		c := &cube.Cube{Name: "sl", Type: "slicer", Config: json.RawMessage(`{"uplink":"up"}`),
			Ports:  []cube.Port{{Name: "up", Index: 0}, {Name: "a", Index: 1}, {Name: "b", Index: 2}, {Name: "c", Index: 3}},
			Tables: map[string]map[string]json.RawMessage{"slices": {}}}
		for _, s := range slices {
			c.Tables["slices"][s.Name] = estimate.Row(s)
		}
		return estimate.Case{Name: name, Cube: c, InPort: in, Frame: frame}
	}
	// fast enough that a calibration's frames always conform
	const bps, pps = 400_000_000_000, 1_000_000_000
	if holdout {
		return []estimate.Case{
			mk("source and destination prefixes, rate limit in bits/s", "up", udp,
				Slice{Name: "s1", ID: 1, Port: "a", Rules: []Rule{{Src: "198.18.0.0/24"}}, RateBps: bps},
				Slice{Name: "s2", ID: 2, Port: "b", Rules: []Rule{{Dst: "198.18.9.0/24"}}}),
			mk("return from a VLAN slice, its only one", "a", udp,
				Slice{Name: "s1", ID: 1, Port: "a", Rules: []Rule{{VLAN: vid(20)}}}),
			mk("protocol, port and DSCP, both rate limits", "up", udp,
				Slice{Name: "s1", ID: 1, Port: "a", Rules: []Rule{{Proto: "udp", DPort: 9}}},
				Slice{Name: "s2", ID: 2, Port: "b", Rules: []Rule{{DSCP: vid(0)}}, RateBps: bps, RatePps: pps}),
		}
	}
	return []estimate.Case{
		mk("in-port", "up", udp, Slice{Name: "s1", ID: 1, Port: "a", Rules: []Rule{{InPort: "up"}}}),
		mk("destination prefix", "up", udp, Slice{Name: "s1", ID: 1, Port: "a", Rules: []Rule{{Dst: "198.18.1.0/24"}}}),
		mk("source prefix, DSCP and in-port, rate limit in bits/s", "up", udp,
			Slice{Name: "s1", ID: 1, Port: "a", Rules: []Rule{{Src: "198.18.9.0/24"}}},
			Slice{Name: "s2", ID: 2, Port: "b", Rules: []Rule{{DSCP: vid(63)}}},
			Slice{Name: "s3", ID: 3, Port: "c", Rules: []Rule{{InPort: "up"}}, RateBps: bps}),
		mk("VLAN, both rate limits", "up", tagged(udp, 10),
			Slice{Name: "s1", ID: 1, Port: "a", Rules: []Rule{{VLAN: vid(10)}}, RateBps: bps, RatePps: pps}),
		mk("DSCP", "up", udp, Slice{Name: "s1", ID: 1, Port: "a", Rules: []Rule{{DSCP: vid(0)}}}),
		mk("destination and source prefixes, rate limit in packets/s", "up", udp,
			Slice{Name: "s1", ID: 1, Port: "a", Rules: []Rule{{Dst: "198.18.7.0/24"}}},
			Slice{Name: "s2", ID: 2, Port: "b", Rules: []Rule{{Src: "198.18.0.0/16"}}, RatePps: pps}),
		mk("protocol and port missed, destination prefix", "up", udp,
			Slice{Name: "s1", ID: 1, Port: "a", Rules: []Rule{{Proto: "tcp", DPort: 80}}},
			Slice{Name: "s2", ID: 2, Port: "b", Rules: []Rule{{Dst: "198.18.1.0/24"}}}),
		mk("protocol missed, in-port, rate limit in packets/s", "up", udp,
			Slice{Name: "s1", ID: 1, Port: "a", Rules: []Rule{{Proto: "sctp"}}},
			Slice{Name: "s2", ID: 2, Port: "b", Rules: []Rule{{InPort: "up"}}, RatePps: pps}),
		mk("return", "a", udp, Slice{Name: "s1", ID: 1, Port: "a", Rules: []Rule{{InPort: "up"}}}),
		mk("return from a VLAN slice", "b", udp,
			Slice{Name: "s1", ID: 1, Port: "a", Rules: []Rule{{InPort: "up"}}},
			Slice{Name: "s2", ID: 2, Port: "b", Rules: []Rule{{VLAN: vid(30)}}}),
	}
}
