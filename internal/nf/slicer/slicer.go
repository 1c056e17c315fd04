// Package slicer is the slicer NF: the classifier at a tenant entry point
// that steers each frame into its slice's chain, polices the slice's rate
// and marks the frame (md->tenant, and at TC skb->priority = the slice's
// HTB class), and the owner of the egress qdiscs that keep the slices'
// guaranteed minimums and priorities. docs/nf/slicer.md is its reference.
package slicer

import (
	"embed"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/datapath"
	"github.com/edgenf/edgenf/internal/nf/slicer/rate"
	"github.com/edgenf/edgenf/internal/nf/slicer/shaping"
)

// MaxSliceID bounds slice ids (1..MaxSliceID): the size of the datapath's
// slice arrays less the unused id 0.
const MaxSliceID = 1023

// MaxSlices bounds the slices of one slicer: one per slice id. A slice
// that leads into its chain through a port of the slicer (port) takes one
// of its 64 ports; one that names its chain's entry (chain) takes none.
const MaxSlices = MaxSliceID

// MaxPortSlices bounds the slices that lead into their chains through
// ports of the slicer: its ports but the entry.
const MaxPortSlices = datapath.MaxPorts - 1

// Settings are a slicer's settings.
type Settings struct {
	// Uplink is the entry port slices' return traffic leaves by unless a
	// slice names another (its peer: the entry interface). Required once
	// the slicer has slices.
	Uplink string `json:"uplink,omitempty" format:"name" doc:"the entry port slices' return traffic leaves by unless a slice names another; required once the slicer has slices (409 otherwise), and not a slice's port (409)"`
	// Default is the slice unmatched traffic goes to; empty: it is dropped
	// (and counted as a policy drop).
	Default string `json:"default,omitempty" format:"name" doc:"the slice unmatched traffic goes to (one the slicer does not have: 404); absent: it is dropped"`
	// Egress lists the interfaces whose egress qdisc the slicer owns: an
	// HTB tree with one class per slice, so slices' guaranteed minimums,
	// ceilings and priorities hold where their traffic leaves.
	Egress []Egress `json:"egress,omitempty" doc:"the interfaces whose egress the slicer shapes, each once and none another slicer shapes (409 otherwise); shaping needs hook tc (422 otherwise)"`
	// Shaping is the egress mechanism: "htb" (guaranteed minimums,
	// priorities, rate limits as ceilings) or "edt" (Earliest Departure
	// Time pacing of the rate limits under sch_fq, as Cilium's Bandwidth
	// Manager; no minimums or priorities; needs the fq qdisc). Absent:
	// picked by probing the kernel (edt where it has sch_fq and no slice
	// needs classes, else htb).
	Shaping string `json:"shaping,omitempty" enum:"htb|edt" doc:"htb (minimums, priorities, ceilings) or edt (rate limits only: a slice with min_bps or priority: 422); absent: picked by probing the kernel (edt where it has sch_fq and no slice has min_bps or priority, else htb)"`
}

// Egress mechanisms.
const (
	ShapingHTB = shaping.HTB
	ShapingEDT = shaping.EDT
)

// mechanism is the egress mechanism, and why: the settings' choice, else
// what probing the kernel picks (classes: some slice has a guaranteed
// minimum or a priority).
func (s *Settings) mechanism(classes bool) (mech, why string, err error) {
	if s.Shaping != "" {
		return s.Shaping, "set in the settings", nil
	}
	return shaping.Probe().Pick(classes)
}

// needsClasses reports whether a slice of list has a guaranteed minimum or
// a priority.
func needsClasses(list []*Slice) bool {
	for _, sl := range list {
		if sl.MinBps > 0 || sl.Priority != nil {
			return true
		}
	}
	return false
}

// Egress is one interface the slicer shapes at.
type Egress struct {
	Interface string `json:"interface" format:"ifname"`
	// RateBps is the link rate in bits/s the slices share there; their
	// guaranteed minimums must fit in it (admission control).
	RateBps uint64 `json:"rate_bps" minimum:"8000" doc:"the link rate, bits/s, at least 8000; the slices' guaranteed minimums must fit in it (409 otherwise)"`
}

// Interfaces names the egress interfaces: a tenant may name only its own
// (slicers are the administrator's in practice).
func (s *Settings) Interfaces() []string {
	var out []string
	for _, e := range s.Egress {
		out = append(out, e.Interface)
	}
	return out
}

// Shaped names the interfaces whose egress qdisc the slicer owns
// (cube.Shaper): no other cube may shape them.
func (s *Settings) Shaped() []string { return s.Interfaces() }

// Slice is one slice: who owns it, what traffic is its, where that traffic
// goes and what it is promised.
type Slice struct {
	Name string `json:"name" format:"name"`
	// ID is the slice's number: md->tenant in the datapath, its HTB class
	// (ed00:ID+0x100) and its metrics label. 1..1023, unique in the slicer.
	ID     int    `json:"id" minimum:"1" maximum:"1023" doc:"the slice's number, 1..1023, unique in the slicer (409 otherwise)"`
	Tenant string `json:"tenant,omitempty" format:"name"`
	// Port is the slicer port peered with the slice's chain entry; or
	// Chain is that entry itself, a port of one of the tenant's cubes
	// that has no peer: the slicer enters it and it comes back to the
	// slicer without a port between (any number of slices).
	Port  string `json:"port,omitempty" format:"name" doc:"the slicer port peered with the slice's chain entry: one of the slicer's (404 otherwise), another slice's or the uplink: 409; give port or chain (422 otherwise)"`
	Chain string `json:"chain,omitempty" format:"slice-chain" doc:"the slice's chain entry, cube:port, entered with no slicer port between (a slicer serves up to 1023 such slices): a port of a cube of the slice's tenant (409 otherwise) at the slicer's hook (422), with no peer and no other slice's (409); no such cube or port: 404"`
	// Entry is the port its return traffic leaves by (default: the
	// settings' uplink).
	Entry string `json:"entry,omitempty" format:"name"`
	Rules []Rule `json:"rules,omitempty" doc:"what traffic is the slice's: at most one vlan rule (422 otherwise); a match another slice has: 409"`
	// Rate limit at ingress, policed in the kernel: bits/s and packets/s
	// with their bursts (bytes, packets). 0: no limit.
	RateBps      uint64 `json:"rate_bps,omitempty"`
	BurstBytes   uint64 `json:"burst_bytes,omitempty" minimum:"1600" doc:"bytes, at least one full frame (1600); needs rate_bps (422 otherwise)"`
	RatePps      uint64 `json:"rate_pps,omitempty"`
	BurstPackets uint64 `json:"burst_packets,omitempty" doc:"packets; needs rate_pps (422 otherwise)"`
	// MinBps is the guaranteed minimum under contention at every egress
	// interface (its HTB class rate).
	MinBps uint64 `json:"min_bps,omitempty" doc:"the guaranteed minimum, bits/s: at most rate_bps if that is given, and only with hook tc (422 otherwise); shaping htb"`
	// Priority is the class: 0 highest .. 7 lowest (default 4). Under
	// contention, spare capacity goes to the highest class first.
	Priority *int `json:"priority,omitempty" minimum:"0" maximum:"7"`
	// LatencyMs is a queueing-delay target; admission checks that the
	// slice's HTB class can meet it (see docs/nf/slicer.md).
	LatencyMs float64 `json:"latency_ms,omitempty" minimum:"0" doc:"a queueing-delay target, ms: needs min_bps, and a class burst at min_bps that drains within it (422 otherwise)"`
	// BudgetNS is the slice's own per-packet cost budget: a change that
	// would push the estimate of the slice's chain past it is refused
	// (internal/estimate; tighter than the daemon's -core-budget-ns).
	BudgetNS float64 `json:"budget_ns,omitempty" minimum:"0" doc:"the slice's per-packet cost budget, ns: a change that would push the estimate of the slice's chain (slicer, its cubes, back) past it is refused with the numbers (409); absent or 0: only the daemon's -core-budget-ns"`
}

// DefaultPriority is the class of a slice that names none.
const DefaultPriority = 4

func (s *Slice) priority() int {
	if s.Priority == nil {
		return DefaultPriority
	}
	return *s.Priority
}

// Bits formats a rate in bits/s the way tc does.
func Bits(bps uint64) string { return rate.Bits(bps) }

// objects are the fast path built for each hook (make bpf).
//
//go:embed bpf/*.o
var objects embed.FS

var slicesTable = cube.Table{
	Name: "slices",
	Doc:  "Slices: owner, classification rules, chain entry port, rate limit, guaranteed minimum, priority, latency target.",
	Item: &Slice{},
	Key:  func(v any) string { return v.(*Slice).Name },
	Max:  MaxSlices,
}

// portsOf is the set of slicer ports the slices lead into.
func portsOf(list []*Slice) map[string]bool {
	out := map[string]bool{}
	for _, s := range list {
		if s.Port != "" {
			out[s.Port] = true
		}
	}
	return out
}

// chainsOf lists the slices of c that name their chain entry
// (cube.Type.SliceChains), by id.
func chainsOf(c *cube.Cube) []cube.SliceChain {
	return withIndex(c, (*sliceIndex).sliceChains)
}

// Type is the slicer NF type.
var Type = &cube.Type{
	Name:        "slicer",
	Description: "Network slicing at an entry point: classify into per-tenant slices, police their rate, and shape their egress with guaranteed minimums and priorities (HTB).",
	Hooks:       []datapath.Hook{datapath.TC, datapath.XDP},
	Object:      cube.HookObjects(objects, "bpf/slicer"),
	Config:      &Settings{},
	Tables:      []cube.Table{slicesTable},
	Slices:      slicesOf,
	SliceChains: chainsOf,
	Views: []cube.View{{
		Name:   "status",
		Doc:    "The shaping mechanism, policy drops, and each slice's counters (in, return, policer drops) and egress HTB class counters.",
		Item:   &Status{},
		Object: true,
		List: func(h cube.Handle, c *cube.Cube) (any, error) {
			return status(h, c)
		},
	}},
	New: func() cube.Controller { return &controller{} },
}

func init() { cube.Register(Type) }
