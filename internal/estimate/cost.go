// Package estimate is edgenf's per-packet cost model: a profile of costs
// measured on a machine (calibrate makes one; a default made on the
// reference machine ships in the binary), the pricing of what a packet
// uses (a P4 path's constructs, a built-in NF's work, the framework's hops),
// the cost models every NF type declares, and the estimate of whole chains
// with the admission check built on it.
//
// A cost is in the profile's unit (ns per packet on the profile's machine
// and hook): what BPF_PROG_TEST_RUN reports for the eBPF processing of one
// packet, entry to verdict. The driver and the delivery of a redirected
// frame are not part of it; the implied packets per second per core are an
// upper bound for that reason.
package estimate

import (
	"fmt"
	"math"
	"sort"
)

// Use is one construct a packet uses: N times the cost of Term. What says
// which construct it is ("table MyIngress.ipv4_lpm (lpm, 32-bit key)").
type Use struct {
	Term string  `json:"term"`
	N    float64 `json:"n"`
	What string  `json:"what,omitempty"`
}

// Item is one priced line of a breakdown.
type Item struct {
	What string  `json:"what"`
	Term string  `json:"term"`
	N    float64 `json:"n"`
	NS   float64 `json:"ns"`
}

// Breakdown is a priced list of uses.
type Breakdown struct {
	Items []Item  `json:"items"`
	Total float64 `json:"ns"`
	// Missing lists terms the profile has no cost for (priced 0).
	Missing []string `json:"missing,omitempty"`
}

// Price prices uses with p.
func (p *Profile) Price(uses []Use) Breakdown {
	var b Breakdown
	missing := map[string]bool{}
	for _, u := range uses {
		c, ok := p.Costs[u.Term]
		if !ok {
			missing[u.Term] = true
		}
		what := u.What
		if what == "" {
			what = u.Term
		}
		ns := c * u.N
		b.Items = append(b.Items, Item{What: what, Term: u.Term, N: u.N, NS: ns})
		b.Total += ns
	}
	for t := range missing {
		b.Missing = append(b.Missing, t)
	}
	sort.Strings(b.Missing)
	return b
}

// Dominant merges the items by what they price and returns the n largest
// (by absolute cost), largest first.
func (b Breakdown) Dominant(n int) []Item {
	idx := map[string]int{}
	var m []Item
	for _, it := range b.Items {
		if i, ok := idx[it.What]; ok {
			m[i].NS += it.NS
			m[i].N += it.N
			continue
		}
		idx[it.What] = len(m)
		m = append(m, it)
	}
	sort.SliceStable(m, func(i, j int) bool { return math.Abs(m[i].NS) > math.Abs(m[j].NS) })
	if n > 0 && len(m) > n {
		m = m[:n]
	}
	return m
}

// PPS is the packets per second one core sustains at ns per packet.
func PPS(ns float64) float64 {
	if ns <= 0 {
		return 0
	}
	return 1e9 / ns
}

// FormatPPS renders packets per second as "12.3 Mpps".
func FormatPPS(pps float64) string {
	switch {
	case pps >= 1e6:
		return fmt.Sprintf("%.1f Mpps", pps/1e6)
	case pps >= 1e3:
		return fmt.Sprintf("%.1f kpps", pps/1e3)
	}
	return fmt.Sprintf("%.0f pps", pps)
}
