package slicer

// The slicer as Sync last wrote it: its slices (the table's entries as
// text, decoded and parsed), what they add up to, and how a change of some
// of them moves their entries in the maps' mirrors (mirror.go).

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/datapath"
)

// synced is the slicer as Sync last wrote it: its slices, what they add
// up to, and the maps' contents. A change of some slices writes only
// their entries: adding the 1,000th slice costs that slice's rows, not
// 1,000 slices' (issue 15).
type synced struct {
	maps *maps
	// env is what every slice's entries depend on (hook, ports,
	// settings) as they were computed; when it changes, every slice is.
	env  string
	mech string
	rows map[string]*row // by name
	// kinds counts the rules of each kind; classes the slices with a
	// guaranteed minimum or a priority (mechanism); slicePorts the slices
	// leading into each slicer port.
	kinds      [kindPort + 1]int
	classes    int
	slicePorts map[string]int
	pfx        prefixRules
	// version is the cube as the rows are its.
	version cube.Version
}

// row is one entry of the slices table: its text, and the slice and
// rules it wrote (s nil: it does not decode, and wrote nothing).
type row struct {
	name  string
	raw   json.RawMessage
	s     *Slice
	rules []parsed
}

// envOf is what every slice's entries depend on besides the slice.
func envOf(c *cube.Cube) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\x00%s", c.Hook, c.Config)
	for _, p := range c.Ports {
		fmt.Fprintf(&b, "\x00%s=%d", p.Name, p.Index)
	}
	return b.String()
}

// changes are the rows of c's slices table that differ from the last
// Sync's: those gone or replaced, and those new or replacing them; with
// rebuild, every row comes. Where c knows which slices were set since the
// last Sync's version, only they are read.
func (st *synced) changes(c *cube.Cube, rebuild bool) (gone, come []*row) {
	table := c.Tables["slices"]
	step := func(name string) {
		raw, ok := table[name]
		r := st.rows[name]
		if ok && r != nil && sameText(r.raw, raw) {
			return
		}
		if r != nil {
			gone = append(gone, r)
		}
		if ok {
			come = append(come, &row{name: name, raw: raw})
		}
	}
	if names, ok := slicesSince(c, st.version); ok && !rebuild {
		for _, name := range names {
			step(name)
		}
		return gone, come
	}
	for name, raw := range table {
		r := st.rows[name]
		if !rebuild && r != nil && sameText(r.raw, raw) {
			continue
		}
		if r != nil && !rebuild {
			gone = append(gone, r)
		}
		come = append(come, &row{name: name, raw: raw})
	}
	if !rebuild {
		for name, r := range st.rows {
			if _, ok := table[name]; !ok {
				gone = append(gone, r)
			}
		}
	}
	return gone, come
}

// slicesSince lists the slices of c whose entries may differ from those
// of the cube v names (cube.Cube.RowsSince); ok false: any may.
func slicesSince(c *cube.Cube, v cube.Version) (names []string, ok bool) {
	rows, ok := c.RowsSince(v)
	if !ok {
		return nil, false
	}
	for _, r := range rows {
		if r.Table == "slices" {
			names = append(names, r.Key)
		}
	}
	return names, true
}

// sameText reports whether two entries are the same text: the same bytes
// shared (an unchanged entry of a copied cube), else compared.
func sameText(a, b json.RawMessage) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0] || bytes.Equal(a, b))
}

// parse decodes the rows that come and parses their rules, as the slicer
// is once gone are gone and come have come; an error changes nothing.
func (st *synced) parse(c *cube.Cube, gone, come []*row, rebuild bool) error {
	base := st.slicePorts
	if rebuild {
		base = nil
	}
	delta := map[string]int{}
	for _, r := range gone {
		if r.s != nil && r.s.Port != "" {
			delta[r.s.Port]--
		}
	}
	for _, r := range come {
		r.s = &Slice{}
		if json.Unmarshal(r.raw, r.s) != nil {
			r.s = nil // left to its own validation, as others does
			continue
		}
		if r.s.ID < 1 || r.s.ID > MaxSliceID {
			return cube.Errorf("id", "slice %s: id %d out of range 1..%d", r.name, r.s.ID, MaxSliceID)
		}
		if r.s.Port != "" {
			delta[r.s.Port]++
		}
	}
	slicePorts := map[string]bool{}
	for _, r := range come {
		for _, rule := range r.s.rulesOrNone() {
			if p := rule.InPort; p != "" {
				slicePorts[p] = base[p]+delta[p] > 0
			}
		}
	}
	for _, r := range come {
		if r.s == nil {
			continue
		}
		r.rules = make([]parsed, 0, len(r.s.Rules))
		for i := range r.s.Rules {
			p, err := r.s.Rules[i].parse(c, slicePorts)
			if err != nil {
				return err
			}
			r.rules = append(r.rules, p)
		}
	}
	return nil
}

// rulesOrNone are the rules of s, none for a row that does not decode.
func (s *Slice) rulesOrNone() []Rule {
	if s == nil {
		return nil
	}
	return s.Rules
}

// reset forgets every slice: a rebuild.
func (st *synced) reset() {
	st.rows, st.kinds, st.classes, st.slicePorts, st.pfx = map[string]*row{}, [kindPort + 1]int{}, 0, map[string]int{}, prefixRules{}
	st.maps.clearWant()
}

// all are every row (every slice's entries rewritten).
func (st *synced) all() []*row {
	out := make([]*row, 0, len(st.rows))
	for _, r := range st.rows {
		out = append(out, r)
	}
	return out
}

// slices are the slices, by id.
func (st *synced) slices() []*Slice {
	var out []*Slice
	for _, r := range st.rows {
		if r.s != nil {
			out = append(out, r.s)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// remove takes a row's entries out.
func (st *synced) remove(r *row) {
	delete(st.rows, r.name)
	if r.s == nil {
		return
	}
	ms := st.maps
	if v := ms.slices.want[r.s.ID]; v.Flags&flagValid != 0 && v.Flags&flagChain == 0 {
		ms.ports.set(datapath.MaxPorts+int(v.Port), 0)
	}
	ms.slices.set(r.s.ID, sliceVal{})
	for _, p := range r.rules {
		st.rule(p, 0)
		st.kinds[p.kind]--
	}
	if r.s.MinBps > 0 || r.s.Priority != nil {
		st.classes--
	}
	if r.s.Port != "" {
		if st.slicePorts[r.s.Port]--; st.slicePorts[r.s.Port] <= 0 {
			delete(st.slicePorts, r.s.Port)
		}
	}
}

// add puts a row's rules in (place puts its slice).
func (st *synced) add(r *row) {
	st.rows[r.name] = r
	if r.s == nil {
		return
	}
	for _, p := range r.rules {
		st.rule(p, uint32(r.s.ID))
		st.kinds[p.kind]++
	}
	if r.s.MinBps > 0 || r.s.Priority != nil {
		st.classes++
	}
	if r.s.Port != "" {
		st.slicePorts[r.s.Port]++
	}
}

// rule points a rule's entries at slice id (0: takes them out).
func (st *synced) rule(p parsed, id uint32) {
	ms := st.maps
	switch p.kind {
	case kindPort:
		ms.ports.set(p.port, id)
	case kindVLAN:
		ms.vlan.set(int(p.num), id)
	case kindDSCP:
		ms.dscp.set(int(p.num), id)
	case kindL4:
		k := l4Key{Proto: p.proto}
		k.Port[0], k.Port[1] = byte(p.dport>>8), byte(p.dport)
		setOrDel(ms.l4, k, id)
	case kindSrc, kindDst, kindUE:
		setOrDel(ms.lpm[pfxField[p.kind]], prefixKey(p.prefix), id)
		if k4, k6, v4 := pfxKeys(p.kind, p.prefix); v4 {
			setOrDel(ms.pfx4, k4, id)
		} else {
			setOrDel(ms.pfx6, k6, id)
		}
		if id == 0 {
			st.pfx.remove(p.kind, p.prefix)
		} else {
			st.pfx.add(p.kind, p.prefix, id)
		}
	case kindTEID:
		for _, b := range teidBlocks(p.lo, p.hi) {
			k := teidKey{Prefixlen: uint32(b.Len)}
			k.TEID = [4]byte{byte(b.Base >> 24), byte(b.Base >> 16), byte(b.Base >> 8), byte(b.Base)}
			setOrDel(ms.teid, k, id)
		}
	}
}

func setOrDel[K comparable](h *hashMirror[K], k K, id uint32) {
	if id == 0 {
		h.del(k)
	} else {
		h.set(k, id)
	}
}

// place puts a row's slice in: its sl_slices entry and, for a slice led
// into through a slicer port, that port's slice.
func (st *synced) place(c *cube.Cube, cfg *Settings, mech string, r *row) {
	s := r.s
	if s == nil {
		return
	}
	v := sliceVal{Flags: flagValid}
	if s.Chain != "" {
		v.Flags |= flagChain // its hop: enf_chain_hops, the engine's
	} else if p := c.Port(s.Port); p != nil {
		v.Port = uint32(p.Index)
	}
	if uplink := c.Port(cfg.Uplink); uplink != nil {
		v.Entry = uint32(uplink.Index)
	}
	if e := c.Port(s.Entry); s.Entry != "" && e != nil {
		v.Entry = uint32(e.Index)
	}
	if mech == ShapingHTB && len(cfg.Egress) > 0 {
		v.Classid = ClassSlice(s.ID)
	}
	v.ByteCost, v.ByteTau, v.ByteLease, v.PktCost, v.PktTau, v.PktLease = s.policer()
	if mech == ShapingEDT && s.RateBps > 0 {
		// the rate is kept by pacing at egress, not by dropping at
		// ingress
		v.EDTCost, v.EDTHorizon = v.ByteCost, edtHorizon
		v.ByteCost, v.ByteTau, v.ByteLease = 0, 0, 0
	}
	for _, p := range r.rules {
		if p.kind == kindVLAN {
			v.VLAN = p.num
			break
		}
	}
	st.maps.slices.set(s.ID, v)
	if s.Chain == "" {
		st.maps.ports.set(datapath.MaxPorts+int(v.Port), uint32(s.ID))
	}
}

// config is sl_config for the slices as they now are.
func (st *synced) config(c *cube.Cube, cfg *Settings) cfgVal {
	var conf cfgVal
	for k, n := range st.kinds {
		if n > 0 {
			conf.Kinds |= 1 << k
		}
	}
	if r := st.rows[cfg.Default]; cfg.Default != "" && r != nil && r.s != nil {
		conf.DefaultSlice = uint32(r.s.ID)
	}
	slicePorts := map[string]bool{}
	for p := range st.slicePorts {
		slicePorts[p] = true
	}
	conf.EntryPorts = entryPorts(c, slicePorts)
	conf.NLens, conf.Lens, conf.Inline4 = st.pfx.lengths()
	return conf
}

// entryPorts is the bit per port of c that leads into no slice (sl_cfg's
// entry_ports): frames in on those are classified straight away.
func entryPorts(c *cube.Cube, slicePorts map[string]bool) uint64 {
	var bits uint64
	for _, p := range c.Ports {
		if !slicePorts[p.Name] && p.Index >= 0 && p.Index < 64 {
			bits |= 1 << p.Index
		}
	}
	return bits
}
