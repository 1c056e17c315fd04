package estimate

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"sync"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/datapath"
)

// Framework terms: what a chain of cubes adds to the cubes' own costs.
// A cube's cost (its model) is its cost alone on a hop from an interface
// to an interface: entered directly, sent out with a redirect. In a chain,
// each cube after the first pays less than that: it is entered by a tail
// call, and only the last one redirects. That tail call is a direct jump
// (a constant index into the sender's enf_peers) when a standard cube
// sends straight to another (datapath/direct.go), and an indirect one
// through the patch panel otherwise: into and out of a transparent stack,
// from a port past the direct ones, from a program that hops only
// through the panel (compiled P4).
const (
	// TermHop is what a standard cube's standalone cost includes that a
	// cube following another in a chain does not pay (the entry, the
	// test run's own overhead, the redirect), less the direct jump into
	// it.
	TermHop = "fw.hop"
	// TermPanelHop is what entering a standard cube through the panel
	// costs beyond the direct jump (the retpolined indirect tail call).
	TermPanelHop = "fw.panel_hop"
	// TermTransparentHop is the same for a transparent cube in a stack.
	TermTransparentHop = "fw.transparent"
	// TermEntry is a hop from an interface straight to an interface
	// through the stub, no cube on it (a reference).
	TermEntry = "fw.entry"
	// TermStub is the extra cost of entering the first cube through the
	// stub and a tail call instead of its direct entry (a reference).
	TermStub = "fw.stub"
	// TermChainHop is what each smallest cube (portfwd) adds to a chain:
	// a tail call and its own work (a reference).
	TermChainHop = "fw.chain_hop"
	// TermRedirect is a redirect to an interface against a drop at the
	// end of a hop (a reference).
	TermRedirect = "fw.redirect"
)

// Term is a cost term with what it prices.
type Term struct {
	Name string
	Doc  string
}

// FrameworkTerms are the framework's terms.
var FrameworkTerms = []Term{
	{TermHop, "saved by each standard cube that follows another in a chain (entry, redirect), less the direct jump into it"},
	{TermPanelHop, "added when a standard cube is entered through the patch panel instead of by a direct jump (after a transparent stack, from a port past the first 16, from a P4 cube)"},
	{TermTransparentHop, "saved by each transparent cube that is not the first program on the path"},
	{TermEntry, "reference: an interface-to-interface hop through the stub, no cube"},
	{TermStub, "reference: entering the first cube through the stub and a tail call instead of its direct entry"},
	{TermChainHop, "reference: what each portfwd cube adds to a chain (tail call + the smallest cube's work)"},
	{TermRedirect, "reference: redirect to an interface, against a drop"},
}

// Model is an NF type's per-packet cost model: the terms it prices and
// what a packet crossing one cube uses of them, given the cube's settings
// and entries (the typical packet: forwarded, state established).
type Model struct {
	Type  string
	Terms []Term
	// Uses is what the typical packet through c uses, with notes on what
	// was assumed. p is the profile the uses will be priced with (models
	// that choose among paths by cost use it; it may be nil). in is the
	// port the packet enters a standard cube on, or the direction a
	// transparent cube sees it in ("ingress", "egress"); "" when unknown.
	Uses func(p *Profile, c *cube.Cube, in string) ([]Use, []string, error)
	// Via, when set, is what a packet entering a standard cube by in and
	// leaving by out uses, for types whose cost depends on the way out (a
	// slicer's frame of one slice); chains are priced with it, and Uses
	// stays the dearest way.
	Via func(p *Profile, c *cube.Cube, in, out string) ([]Use, []string, error)
	// Cases are the configurations `edgenf estimate calibrate` measures to
	// fit Terms, or with holdout others, never used to fit: the accuracy
	// report of `make bench` compares the model's estimate of each with
	// its measured cost (nil: calibrated otherwise, as the p4 type is).
	Cases func(holdout bool) []Case
	// PanelHops is set for types whose programs send to other cubes
	// through the patch panel only, never by a direct jump (compiled P4
	// programs: EDGENF_PANEL_HOPS).
	PanelHops bool
}

// Case is one calibration measurement of an NF: a cube and a frame.
type Case struct {
	Name string
	Cube *cube.Cube // Hook is set by the calibration
	// InPort is the port the frame enters a standard cube on; transparent
	// cubes see it in direction Dir on a hop to an interface.
	InPort string
	Dir    datapath.Direction
	Frame  []byte
	// Warm frames run once before the measurement (learning, connection
	// state), entering on WarmPort ("": InPort; for a transparent cube,
	// the direction "ingress" or "egress", "": Dir); the measured frame
	// itself runs once first anyway.
	Warm     [][]byte
	WarmPort string
	// Uses, when set, is what the measured packet uses, for a case that
	// measures another path than the model's typical one (nil: the
	// model's Uses of Cube).
	Uses []Use
	// Setup, when set, runs after the cube is loaded and synced: state
	// the slow path would learn (neighbours, say).
	Setup func(h cube.Handle) error
	// Steady, when set, holds what the case's own frames change the same
	// for every measured run, for a cube whose cost depends on it (a
	// capture's ring, which its frames fill: the cost of a frame differs
	// with the ring's room). It runs once after the warm frames, with run
	// sending the case's frame n times, and returns what runs before each
	// measured run (outside the timing; nil: nothing) and what ends it.
	Steady func(h cube.Handle, run func(n int) error) (before func() error, stop func(), err error)
	// Repeat, when set, is how many times each measured run sends the
	// frame (the measurement's default otherwise): few enough that what
	// Steady holds stays so through a run.
	Repeat int
	// ChangesSkb says the frame leaves with skb state changed that
	// restoring its bytes does not put back: a VLAN tag pushed (it goes
	// into the skb, not the frame), its protocol changed
	// (bpf_skb_change_proto, which then refuses the restored frame; a tag
	// popped from the frame, after which the skb is IPv4 and the restored
	// tag is not popped again), its header offsets moved or its
	// encapsulation mark set (bpf_skb_adjust_room's decapsulation and
	// encapsulation: the next takes the wrong bytes off, or is refused). The
	// measurement's entry takes a tag off, a helper call that is not the
	// cube's (10-16 ns under load), and cannot set the protocol back: at
	// TC such a case is measured a run per call, each on a new skb, as
	// traffic comes.
	ChangesSkb bool
}

var (
	modelsMu sync.RWMutex
	models   = map[string]*Model{}
)

// Register adds an NF type's model; NF packages call it from init, beside
// the type itself.
func Register(m *Model) {
	modelsMu.Lock()
	defer modelsMu.Unlock()
	if _, dup := models[m.Type]; dup || m.Type == "" || m.Uses == nil {
		panic("estimate: bad or duplicate model " + m.Type)
	}
	models[m.Type] = m
}

// ModelOf returns the model of an NF type.
func ModelOf(typ string) (*Model, bool) {
	modelsMu.RLock()
	defer modelsMu.RUnlock()
	m, ok := models[typ]
	return m, ok
}

// Models lists the registered models by type name.
func Models() []*Model {
	modelsMu.RLock()
	defer modelsMu.RUnlock()
	out := make([]*Model, 0, len(models))
	for _, m := range models {
		out = append(out, m)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Type < out[j].Type })
	return out
}

// RequiredTerms are the terms every profile must price: the framework's,
// but for those added since profiles of this format were first made
// (lateFrameworkTerms). Those, and models' terms a profile lacks (one made
// before a model existed), are taken from the built-in profile
// (WithDefaults).
func RequiredTerms() []string {
	var out []string
	for _, t := range FrameworkTerms {
		if !lateFrameworkTerms[t.Name] {
			out = append(out, t.Name)
		}
	}
	return out
}

// lateFrameworkTerms are the framework terms a valid profile may lack.
var lateFrameworkTerms = map[string]bool{TermPanelHop: true}

// WithDefaults fills the terms of registered models that p lacks from
// the built-in profile of its hook, and says which.
func (p *Profile) WithDefaults() (*Profile, []string) {
	var lacking []string
	terms := FrameworkTerms
	for _, m := range Models() {
		terms = append(terms[:len(terms):len(terms)], m.Terms...)
	}
	for _, t := range terms {
		if _, ok := p.Costs[t.Name]; !ok {
			lacking = append(lacking, t.Name)
		}
	}
	if len(lacking) == 0 || p.Source == "built-in" {
		return p, nil
	}
	b, err := Builtin(p.Hook)
	if err != nil {
		return p, nil
	}
	n := *p
	n.Costs = make(map[string]float64, len(p.Costs)+len(lacking))
	for k, v := range p.Costs {
		n.Costs[k] = v
	}
	var taken []string
	for _, t := range lacking {
		if v, ok := b.Costs[t]; ok {
			n.Costs[t] = v
			taken = append(taken, t)
		}
	}
	if len(taken) == 0 {
		return p, nil
	}
	return &n, []string{fmt.Sprintf("profile %s has no cost for %d terms newer than it; they are taken from the built-in profile: %v", p.Source, len(taken), taken)}
}

// CubeCost is one cube's cost alone (its model's typical packet).
type CubeCost struct {
	Cube  string    `json:"cube"`
	Type  string    `json:"type"`
	Cost  Breakdown `json:"cost"`
	Notes []string  `json:"notes,omitempty"`
	// Unknown is set when the type has no model: the cost is 0 and the
	// chain's total a lower bound.
	Unknown bool `json:"unknown,omitempty"`
}

// CubeEstimate prices one cube with its type's model, for a packet
// entering it on in (a port, or a transparent cube's direction; "" when
// unknown).
func (p *Profile) CubeEstimate(c *cube.Cube, in string) (CubeCost, error) {
	cc := CubeCost{Cube: c.Name, Type: c.Type}
	m, ok := ModelOf(c.Type)
	if !ok {
		cc.Unknown = true
		cc.Notes = []string{fmt.Sprintf("NF type %s has no cost model: counted as 0 ns", c.Type)}
		return cc, nil
	}
	uses, notes, err := m.Uses(p, c, in)
	return p.price(cc, uses, notes, err)
}

// CubeEstimateVia prices one cube for a packet entering it by in and
// leaving by out (its type's Via; Uses without one).
func (p *Profile) CubeEstimateVia(c *cube.Cube, in, out string) (CubeCost, error) {
	m, ok := ModelOf(c.Type)
	if !ok || m.Via == nil {
		return p.CubeEstimate(c, in)
	}
	uses, notes, err := m.Via(p, c, in, out)
	return p.price(CubeCost{Cube: c.Name, Type: c.Type}, uses, notes, err)
}

func (p *Profile) price(cc CubeCost, uses []Use, notes []string, err error) (CubeCost, error) {
	if err != nil {
		return cc, fmt.Errorf("cube %s: %w", cc.Cube, err)
	}
	cc.Cost = p.Price(uses)
	cc.Notes = notes
	return cc, nil
}

// Log2 is the count of a term priced per log2(n+1): how deep a lookup in
// n entries goes.
func Log2(n int) float64 { return math.Log2(float64(n) + 1) }

// Row marshals a table entry of a calibration case's cube.
func Row(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}
