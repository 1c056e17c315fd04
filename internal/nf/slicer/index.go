package slicer

// The index a slicer's slices are checked against: who holds each id,
// port, chain entry, match and TEID range, and the sum of the guaranteed
// minimums, kept in step with the cube's table entry by entry. Checking a
// slice against the others asks it instead of walking every slice (issue
// 15: creating the 1,000th slice cost a walk of 999).

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/edgenf/edgenf/internal/cube"
)

// indexed is one slice of the index: its entry's text, the slice, and the
// matches and TEID ranges its rules claim (those that parse).
type indexed struct {
	name   string
	raw    json.RawMessage
	s      *Slice
	claims []string
	teids  []span
}

// span is a TEID range of a slice's rule (rule: its position in the
// slice's rules).
type span struct {
	lo, hi uint32
	rule   int
	x      *indexed
}

// sliceIndex indexes the slices of one slicer (those whose entries decode).
type sliceIndex struct {
	ports   string // the cube's ports the rules were parsed against
	rows    map[string]*indexed
	ids     map[int][]*indexed
	byPort  map[string][]*indexed
	byChain map[string][]*indexed
	claims  map[string][]*indexed
	// teids are the TEID ranges by first TEID, with the highest last TEID
	// up to each (maxHi), so overlaps are found by a binary search.
	teids   []span
	maxHi   []uint32
	minSum  uint64 // the guaranteed minimums (wrapping, as admission adds)
	classes int    // slices with a guaranteed minimum or a priority
	// chains are the slices that name their chain entry, by id.
	chains []cube.SliceChain
	// version is the cube the index last followed.
	version cube.Version
}

// indexes are the slicers' indexes by cube name, each brought in step
// with the cube it is asked about (a cube of that name in another engine,
// or a change's working copy, costs the entries that differ).
var indexes = struct {
	sync.Mutex
	m map[string]*sliceIndex
}{m: map[string]*sliceIndex{}}

// indexesMax bounds the indexes kept (cubes deleted leave theirs).
const indexesMax = 256

// withIndex runs fn with the index of c's slices, under the index lock.
// A partial copy of a slicer (the engine asks about a change's rows alone,
// cube.WithRows) gets an index of its own rows: the slicer's follows the
// cube as it is, and following such a copy would turn it over to those
// rows and back to the whole table on the next question, each time.
func withIndex[T any](c *cube.Cube, fn func(x *sliceIndex) T) T {
	ports := portsKey(c)
	if c.Partial() {
		x := newIndex(ports)
		x.follow(c)
		return fn(x)
	}
	indexes.Lock()
	defer indexes.Unlock()
	x := indexes.m[c.Name]
	if x == nil || x.ports != ports {
		if len(indexes.m) >= indexesMax {
			clear(indexes.m)
		}
		x = newIndex(ports)
		indexes.m[c.Name] = x
	}
	x.follow(c)
	return fn(x)
}

func newIndex(ports string) *sliceIndex {
	return &sliceIndex{ports: ports, rows: map[string]*indexed{}, ids: map[int][]*indexed{}, byPort: map[string][]*indexed{},
		byChain: map[string][]*indexed{}, claims: map[string][]*indexed{}}
}

// portsKey names c's ports and their indexes: the rules' in_port matches
// are parsed against them.
func portsKey(c *cube.Cube) string {
	var b strings.Builder
	for _, p := range c.Ports {
		fmt.Fprintf(&b, "%s=%d,", p.Name, p.Index)
	}
	return b.String()
}

// follow brings the index in step with c's slices table: the slices set
// since the version it last followed, where c knows them, else every one.
func (x *sliceIndex) follow(c *cube.Cube) {
	table := c.Tables["slices"]
	changed := false
	if names, ok := slicesSince(c, x.version); ok {
		for _, name := range names {
			raw, in := table[name]
			if r := x.rows[name]; in && r != nil && sameText(r.raw, raw) {
				continue
			}
			x.remove(name)
			if in {
				x.add(c, name, raw)
			}
			changed = true
		}
	} else {
		for name, raw := range table {
			if r := x.rows[name]; r != nil && sameText(r.raw, raw) {
				continue
			}
			x.remove(name)
			x.add(c, name, raw)
			changed = true
		}
		if len(x.rows) > len(table) || changed {
			for name := range x.rows {
				if _, ok := table[name]; !ok {
					x.remove(name)
					changed = true
				}
			}
		}
	}
	if changed {
		x.spans()
	}
	x.version = c.Version()
}

func (x *sliceIndex) add(c *cube.Cube, name string, raw json.RawMessage) {
	s := decoded.get(raw)
	if s == nil {
		return // left to its own validation, as others does
	}
	r := &indexed{name: name, raw: raw, s: s}
	for i := range s.Rules {
		p, err := s.Rules[i].parse(c, nil)
		if err != nil {
			continue
		}
		if p.kind == kindTEID {
			r.teids = append(r.teids, span{p.lo, p.hi, i, r})
		} else {
			r.claims = append(r.claims, p.key())
			x.claims[p.key()] = append(x.claims[p.key()], r)
		}
	}
	x.rows[name] = r
	x.ids[s.ID] = append(x.ids[s.ID], r)
	if s.Port != "" {
		x.byPort[s.Port] = append(x.byPort[s.Port], r)
	}
	if s.Chain != "" {
		x.byChain[s.Chain] = append(x.byChain[s.Chain], r)
		sc := cube.SliceChain{Slice: s.Name, ID: s.ID, Tenant: s.Tenant, Entry: s.Chain}
		i := sort.Search(len(x.chains), func(i int) bool { return x.chains[i].ID > s.ID })
		x.chains = slices.Insert(x.chains, i, sc)
	}
	x.minSum += s.MinBps
	if s.MinBps > 0 || s.Priority != nil {
		x.classes++
	}
	x.teids = append(x.teids, r.teids...)
}

func (x *sliceIndex) remove(name string) {
	r := x.rows[name]
	if r == nil {
		return
	}
	s := r.s
	delete(x.rows, name)
	drop(x.ids, s.ID, r)
	if s.Port != "" {
		drop(x.byPort, s.Port, r)
	}
	if s.Chain != "" {
		drop(x.byChain, s.Chain, r)
		x.chains = slices.DeleteFunc(x.chains, func(sc cube.SliceChain) bool { return sc.Slice == name })
	}
	for _, k := range r.claims {
		drop(x.claims, k, r)
	}
	x.minSum -= s.MinBps
	if s.MinBps > 0 || s.Priority != nil {
		x.classes--
	}
	if len(r.teids) > 0 {
		x.teids = slices.DeleteFunc(x.teids, func(t span) bool { return t.x == r })
	}
}

// drop takes r out of m[k].
func drop[K comparable](m map[K][]*indexed, k K, r *indexed) {
	list := slices.DeleteFunc(m[k], func(o *indexed) bool { return o == r })
	if len(list) == 0 {
		delete(m, k)
	} else {
		m[k] = list
	}
}

// spans sorts the TEID ranges and their running highest ends.
func (x *sliceIndex) spans() {
	sort.Slice(x.teids, func(i, j int) bool { return x.teids[i].lo < x.teids[j].lo })
	x.maxHi = x.maxHi[:0]
	var hi uint32
	for i, t := range x.teids {
		if i == 0 || t.hi > hi {
			hi = t.hi
		}
		x.maxHi = append(x.maxHi, hi)
	}
}

// except is list without the slice named skip.
func except(list []*indexed, skip string) []*indexed {
	var out []*indexed
	for _, r := range list {
		if r.name != skip {
			out = append(out, r)
		}
	}
	return out
}

// overlap is the TEID range of another slice than skip that overlaps
// lo..hi, first by slice id and rule (as the walk over the slices found
// it).
func (x *sliceIndex) overlap(lo, hi uint32, skip string) (span, bool) {
	var best span
	found := false
	// ranges that start at or before hi, back while one may reach lo
	for i := sort.Search(len(x.teids), func(i int) bool { return x.teids[i].lo > hi }) - 1; i >= 0 && x.maxHi[i] >= lo; i-- {
		t := x.teids[i]
		if t.hi < lo || t.x.name == skip {
			continue
		}
		if !found || t.x.s.ID < best.x.s.ID || (t.x.s.ID == best.x.s.ID && t.rule < best.rule) {
			best, found = t, true
		}
	}
	return best, found
}

// claimant is the other slice than skip claiming key (the last by id, as
// the walk's map of claims kept it).
func (x *sliceIndex) claimant(key, skip string) (*indexed, bool) {
	var best *indexed
	for _, r := range x.claims[key] {
		if r.name != skip && (best == nil || r.s.ID > best.s.ID) {
			best = r
		}
	}
	return best, best != nil
}

// isSlicePort reports whether port leads into a slice's chain: s's, or
// another slice's.
func (x *sliceIndex) isSlicePort(port string, s *Slice) bool {
	return port == s.Port || len(except(x.byPort[port], s.Name)) > 0
}

// crossCheck checks s against the cube's other slices: ids and ports used
// once, no two slices claiming the same traffic, admission control.
func (s *Slice) crossCheck(c *cube.Cube) error {
	set := &Settings{}
	if cube.DecodeInto("config", c.Config, set) != nil {
		return nil // the settings' own validation reports it
	}
	return withIndex(c, func(x *sliceIndex) error { return x.check(c, set, s) })
}

func (x *sliceIndex) check(c *cube.Cube, set *Settings, s *Slice) error {
	// the first other slice by id that has s's id, port or chain entry
	cands := except(x.ids[s.ID], s.Name)
	if s.Port != "" {
		cands = append(cands, except(x.byPort[s.Port], s.Name)...)
	}
	if s.Chain != "" {
		cands = append(cands, except(x.byChain[s.Chain], s.Name)...)
	}
	sort.SliceStable(cands, func(i, j int) bool { return cands[i].s.ID < cands[j].s.ID })
	for _, r := range cands {
		o := r.s
		if o.ID == s.ID {
			return cube.Conflict("id", "slice id %d is also slice %s's", s.ID, o.Name)
		}
		if s.Port != "" && o.Port == s.Port {
			return cube.Conflict("port", "port %s already leads into slice %s's chain: a port serves one slice", s.Port, o.Name)
		}
		if s.Chain != "" && o.Chain == s.Chain {
			return cube.Conflict("chain", "%s is already slice %s's chain entry: an entry serves one slice", s.Chain, o.Name)
		}
	}
	if s.Port != "" && s.Port == set.Uplink {
		return cube.Conflict("port", "port %s is the uplink, an entry port: a slice's port leads into its chain", s.Port)
	}
	if s.Entry != "" && x.isSlicePort(s.Entry, s) {
		return cube.Conflict("entry", "port %s leads into a slice's chain; the entry is an entry port", s.Entry)
	}
	slicePorts := map[string]bool{}
	for _, r := range s.Rules {
		if r.InPort != "" {
			slicePorts[r.InPort] = x.isSlicePort(r.InPort, s)
		}
	}
	for i, r := range s.Rules {
		field := fmt.Sprintf("rules[%d]", i)
		p, err := r.parse(c, slicePorts)
		if err != nil {
			return cube.Within(field, err)
		}
		if p.kind == kindTEID {
			if t, ok := x.overlap(p.lo, p.hi, s.Name); ok {
				return cube.Conflict(field+".teid", "TEIDs %d-%d overlap %d-%d of slice %s", p.lo, p.hi, t.lo, t.hi, t.x.name)
			}
			continue
		}
		if other, dup := x.claimant(p.key(), s.Name); dup {
			return cube.Conflict(field, "%s is already slice %s's: each match belongs to one slice", p.key(), other.name)
		}
	}
	if s.MinBps > 0 {
		sum := x.minSum + s.MinBps
		if own := x.rows[s.Name]; own != nil {
			sum -= own.s.MinBps
		}
		if refused(set, sum) {
			// the message lists every minimum: walk
			if _, err := admission(set, append(others(c, s.Name), s)); err != nil {
				return cube.Within("min_bps", err)
			}
		}
	}
	if s.MinBps > 0 && c.Hook != "tc" {
		return cube.Unprocessable("min_bps", "a guaranteed minimum needs hook tc: frames XDP redirects never meet a qdisc")
	}
	return nil
}

// refused reports whether admission refuses guaranteed minimums summing
// to sum.
func refused(set *Settings, sum uint64) bool {
	if sum > 0 && len(set.Egress) == 0 {
		return true
	}
	for _, e := range set.Egress {
		if sum > e.RateBps {
			return true
		}
	}
	return false
}

// sliceChains are the slices that name their chain entry, by id.
func (x *sliceIndex) sliceChains() []cube.SliceChain {
	if len(x.chains) == 0 {
		return nil
	}
	return slices.Clone(x.chains)
}
