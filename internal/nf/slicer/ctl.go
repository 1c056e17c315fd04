package slicer

// The slicer's controller: the mirrors of slicer.bpf.c's structures, Sync
// (maps and the egress HTB trees), metrics.

import (
	"errors"
	"fmt"
	"net/netip"
	"sort"
	"strconv"
	"sync"

	"github.com/cilium/ebpf"
	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/datapath"
)

const slMax = MaxSliceID + 1 // SL_MAX

// sl_slice flags
const (
	flagValid = 1 // SL_F_VALID
	flagChain = 2 // SL_F_CHAIN: entered through enf_chain_hops
)

// Mirrors of slicer.bpf.c's structures.
type (
	sliceVal struct {
		Flags      uint32
		Port       uint32
		Entry      uint32
		Classid    uint32
		VLAN       uint32
		LeaseGen   uint32
		ByteCost   uint64
		ByteTau    uint64
		PktCost    uint64
		PktTau     uint64
		EDTCost    uint64
		EDTHorizon uint64
		ByteLease  uint64
		PktLease   uint64
	}
	cfgVal struct {
		Kinds        uint32
		DefaultSlice uint32
		NLens        [pfxFields][2]uint8
		_            [2]uint8
		EntryPorts   uint64
		Lens         [pfxFields][2][maxLens]uint8
		Inline4      [pfxFields][maxInline]inline4
	}
	inline4 struct {
		Addr, Mask [4]byte
		ID         uint32
	}
	pfx4Key struct {
		Field, Len uint8
		_          uint16
		Addr       [4]byte
	}
	pfx6Key struct {
		Field, Len uint8
		_          uint16
		Addr       [16]byte
	}
	counters struct {
		InPackets, InBytes         uint64
		LeaseBytes, LeasePackets   uint64 // this CPU's credit (sl_police)
		LeaseGen                   uint32
		_                          uint32
		RetPackets, RetBytes       uint64
		PolicePackets, PoliceBytes uint64
		EDTPackets                 uint64
	}
	policyVal struct{ Packets, Bytes uint64 }
	lpmKey    struct {
		Prefixlen uint32
		Family    uint32
		Addr      [16]byte
	}
	teidKey struct {
		Prefixlen uint32
		TEID      [4]byte
	}
	l4Key struct {
		Proto uint8
		_     uint8
		Port  [2]byte // network order
	}
)

// Lease sizes (slicer.bpf.c: sl_police): an eighth of the burst, so the
// credit left on idle CPUs stays a small part of it, up to these bounds,
// and none (frame by frame) when that is less than a full frame or two
// packets.
const (
	maxByteLease = 64 << 10
	maxPktLease  = 64
)

// policer parameters of a slice (GCRA, slicer.bpf.c: sl_gcra, sl_police)
func (s *Slice) policer() (byteCost, byteTau, byteLease, pktCost, pktTau, pktLease uint64) {
	if s.RateBps > 0 {
		byteCost = 8e9 * 256 / s.RateBps // 1/256 ns per byte
		if byteCost == 0 {
			byteCost = 1
		}
		burst := s.BurstBytes
		if burst == 0 {
			burst = max(s.RateBps/8/100, 3028) // 10 ms, at least two frames
		}
		byteTau = burst * byteCost >> 8
		if byteLease = min(burst/8, maxByteLease); byteLease < 1600 {
			byteLease = 0
		}
	}
	if s.RatePps > 0 {
		pktCost = max(uint64(1e9)/s.RatePps, 1)
		burst := s.BurstPackets
		if burst == 0 {
			burst = max(s.RatePps/100, 2)
		}
		pktTau = burst * pktCost
		if pktLease = min(burst/8, maxPktLease); pktLease < 2 {
			pktLease = 0
		}
	}
	return
}

type controller struct {
	mu     sync.Mutex
	egress []string   // interfaces whose qdisc is ours now
	last   []sliceVal // sl_slices as this controller last wrote it
	// written are the hash and LPM maps' contents as this controller last
	// wrote them (nil: unknown, a new controller or a failed write: the
	// map is read whole), so that a change writes only what differs:
	// adding the 1,000th slice costs one rule's entries, not 1,000.
	written map[string]any
}

func loadAll(c *cube.Cube) (*Settings, []*Slice, error) {
	cfg := &Settings{}
	if err := cube.DecodeInto("config", c.Config, cfg); err != nil {
		return nil, nil, err
	}
	return cfg, others(c, ""), nil
}

// Sync writes the slices and rules into the maps and the HTB trees into
// the egress interfaces. The policers' state is the fast path's: kept.
func (ctl *controller) Sync(h cube.Handle, c *cube.Cube) error {
	ctl.mu.Lock()
	defer ctl.mu.Unlock()
	cfg, list, err := loadAll(c)
	if err != nil {
		return err
	}
	maps := map[string]*ebpf.Map{}
	for _, n := range []string{"sl_config", "sl_slices", "sl_ports", "sl_vlan", "sl_dscp", "sl_l4", "sl_src", "sl_dst", "sl_ue", "sl_teid", "sl_pfx4", "sl_pfx6"} {
		if maps[n], err = h.Map(n); err != nil {
			return err
		}
	}
	slices := make([]sliceVal, slMax)
	ports := make([]uint32, 2*datapath.MaxPorts)
	vlan := make([]uint32, 4096)
	dscp := make([]uint32, 64)
	l4 := map[l4Key]uint32{}
	lpm := map[string]map[lpmKey]uint32{"sl_src": {}, "sl_dst": {}, "sl_ue": {}}
	var pfx prefixRules
	teid := map[teidKey]uint32{}
	var kinds uint32
	var def uint32
	// No shaping at hook xdp. At tc, edt named in the settings stamps
	// departure times even with no egress interface listed (an fq the
	// operator set up honours them); htb marks classes only for the trees
	// the slicer owns.
	mech := ""
	if c.Hook == datapath.TC && (len(cfg.Egress) > 0 || cfg.Shaping != "") {
		if mech, _, err = cfg.mechanism(list); err != nil {
			return cube.Within("egress", err)
		}
	}
	uplink := c.Port(cfg.Uplink)
	slicePorts := portsOf(list)
	for _, s := range list {
		id := uint32(s.ID)
		if s.Name == cfg.Default {
			def = id
		}
		v := sliceVal{Flags: flagValid}
		if s.Chain != "" {
			v.Flags |= flagChain // its hop: enf_chain_hops, the engine's
		} else {
			v.Port = uint32(c.Port(s.Port).Index)
		}
		if uplink != nil {
			v.Entry = uint32(uplink.Index)
		}
		if s.Entry != "" {
			v.Entry = uint32(c.Port(s.Entry).Index)
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
		slices[id] = v
		if s.Chain == "" {
			ports[datapath.MaxPorts+v.Port] = id
		}
		for i := range s.Rules {
			p, err := s.Rules[i].parse(c, slicePorts)
			if err != nil {
				return err
			}
			kinds |= 1 << p.kind
			switch p.kind {
			case kindPort:
				ports[p.port] = id
			case kindVLAN:
				vlan[p.num] = id
				if slices[id].VLAN == 0 {
					slices[id].VLAN = p.num
				}
			case kindDSCP:
				dscp[p.num] = id
			case kindL4:
				k := l4Key{Proto: p.proto}
				k.Port[0], k.Port[1] = byte(p.dport>>8), byte(p.dport)
				l4[k] = id
			case kindSrc, kindDst, kindUE:
				m := map[int]string{kindSrc: "sl_src", kindDst: "sl_dst", kindUE: "sl_ue"}[p.kind]
				lpm[m][prefixKey(p.prefix)] = id
				pfx.add(p.kind, p.prefix, id)
			case kindTEID:
				for _, b := range teidBlocks(p.lo, p.hi) {
					k := teidKey{Prefixlen: uint32(b.Len)}
					k.TEID = [4]byte{byte(b.Base >> 24), byte(b.Base >> 16), byte(b.Base >> 8), byte(b.Base)}
					teid[k] = id
				}
			}
		}
	}
	ctl.leaseGens(slices)
	for name, vals := range map[string]any{"sl_slices": slices, "sl_ports": ports, "sl_vlan": vlan, "sl_dscp": dscp} {
		if err := putArray(maps[name], vals); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
	ctl.last = slices
	if ctl.written == nil {
		ctl.written = map[string]any{}
	}
	if err := syncHash(ctl.written, "sl_l4", maps["sl_l4"], l4); err != nil {
		return fmt.Errorf("sl_l4: %w", err)
	}
	for name, want := range lpm {
		if err := syncHash(ctl.written, name, maps[name], want); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
	if err := syncHash(ctl.written, "sl_teid", maps["sl_teid"], teid); err != nil {
		return fmt.Errorf("sl_teid: %w", err)
	}
	if err := syncHash(ctl.written, "sl_pfx4", maps["sl_pfx4"], pfx.v4); err != nil {
		return fmt.Errorf("sl_pfx4: %w", err)
	}
	if err := syncHash(ctl.written, "sl_pfx6", maps["sl_pfx6"], pfx.v6); err != nil {
		return fmt.Errorf("sl_pfx6: %w", err)
	}
	// last: a length is looked up only once its prefixes are in
	conf := cfgVal{Kinds: kinds, DefaultSlice: def, EntryPorts: entryPorts(c, slicePorts)}
	conf.NLens, conf.Lens, conf.Inline4 = pfx.lengths()
	if err := maps["sl_config"].Put(uint32(0), conf); err != nil {
		return fmt.Errorf("sl_config: %w", err)
	}
	return ctl.syncEgress(cfg, list, mech)
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

// leaseGens carries each slice id's lease generation over from the last
// Sync, and moves it on for every id whose policers changed since (or that
// another slice took over): the per-CPU credit leased under the old limits
// is then void (slicer.bpf.c: sl_police). A new controller (a new cube, or
// a restart) starts at generation 0: credit leased before a restart under
// a later generation is dropped once, which only ever admits less.
func (ctl *controller) leaseGens(slices []sliceVal) {
	if ctl.last == nil {
		return
	}
	for id := range slices {
		o, n := ctl.last[id], &slices[id]
		n.LeaseGen = o.LeaseGen
		if o.ByteCost != n.ByteCost || o.ByteTau != n.ByteTau || o.ByteLease != n.ByteLease ||
			o.PktCost != n.PktCost || o.PktTau != n.PktTau || o.PktLease != n.PktLease || o.Port != n.Port || o.Flags != n.Flags {
			n.LeaseGen++
		}
	}
}

func (ctl *controller) syncEgress(cfg *Settings, list []*Slice, mech string) error {
	keep := map[string]bool{}
	for _, e := range cfg.Egress {
		ensure := ensureHTB
		if mech == ShapingEDT {
			ensure = ensureFQ
		}
		if err := ensure(e, list); err != nil {
			return err
		}
		keep[e.Interface] = true
	}
	var errs []error
	for _, ifname := range ctl.egress {
		if !keep[ifname] {
			errs = append(errs, removeHTB(ifname))
		}
	}
	ctl.egress = ctl.egress[:0]
	for ifname := range keep {
		ctl.egress = append(ctl.egress, ifname)
	}
	sort.Strings(ctl.egress)
	return errors.Join(errs...)
}

// Close removes the HTB trees of a deleted slicer.
func (ctl *controller) Close() {
	ctl.mu.Lock()
	defer ctl.mu.Unlock()
	for _, ifname := range ctl.egress {
		removeHTB(ifname)
	}
	ctl.egress = nil
}

func prefixKey(p netip.Prefix) lpmKey {
	k := lpmKey{Prefixlen: 32 + uint32(p.Bits()), Family: 4}
	if p.Addr().Is4() {
		a := p.Addr().As4()
		copy(k.Addr[:], a[:])
	} else {
		k.Family = 6
		a := p.Addr().As16()
		copy(k.Addr[:], a[:])
	}
	return k
}

// putArray writes a whole array map in one batch.
func putArray(m *ebpf.Map, vals any) error {
	n := int(m.MaxEntries())
	keys := make([]uint32, n)
	for i := range keys {
		keys[i] = uint32(i)
	}
	_, err := m.BatchUpdate(keys, vals, nil)
	if errors.Is(err, ebpf.ErrNotSupported) {
		return fmt.Errorf("batch update not supported: %w", err)
	}
	return err
}

// syncHash makes a hash or LPM map hold exactly want. written[name] is
// what was last written to it, if known: then only the difference is
// written; else the map is read whole. On success written[name] is want.
func syncHash[K comparable](written map[string]any, name string, m *ebpf.Map, want map[K]uint32) error {
	last, known := written[name].(map[K]uint32)
	delete(written, name) // unknown until this write succeeds
	if !known {
		last = map[K]uint32{}
		var k K
		var v uint32
		it := m.Iterate()
		for it.Next(&k, &v) {
			last[k] = v
		}
		if err := it.Err(); err != nil {
			return err
		}
	}
	for k := range last {
		if _, ok := want[k]; !ok {
			if err := m.Delete(k); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
				return err
			}
		}
	}
	for k, v := range want {
		if w, ok := last[k]; ok && w == v {
			continue
		}
		if err := m.Put(k, v); err != nil {
			return err
		}
	}
	written[name] = want
	return nil
}

func (ctl *controller) Metrics(h cube.Handle, c *cube.Cube) []cube.Metric {
	st, err := status(h, c)
	if err != nil {
		return nil
	}
	var out []cube.Metric
	for _, s := range st.Slices {
		l := map[string]string{"slice": s.Name, "slice_id": strconv.Itoa(s.ID), "tenant": s.Tenant}
		add := func(name, help string, v uint64, extra ...string) {
			labels := map[string]string{}
			for k, x := range l {
				labels[k] = x
			}
			for i := 0; i+1 < len(extra); i += 2 {
				labels[extra[i]] = extra[i+1]
			}
			out = append(out, cube.Metric{Name: name, Help: help, Labels: labels, Value: float64(v)})
		}
		add("slice_packets_total", "Frames of the slice through the slicer, by direction (in: classified at an entry port; return: back from its chain).", s.InPackets, "direction", "in")
		add("slice_packets_total", "", s.ReturnPackets, "direction", "return")
		add("slice_bytes_total", "Bytes of the slice through the slicer, by direction.", s.InBytes, "direction", "in")
		add("slice_bytes_total", "", s.ReturnBytes, "direction", "return")
		add("slice_drop_packets_total", "Frames of the slice dropped, by reason (policer: over its rate limit at ingress; shaper: its egress class queue overflowed).", s.PolicePackets, "reason", "policer")
		var shaped uint64
		for _, e := range s.Egress {
			shaped += e.Drops
		}
		add("slice_drop_packets_total", "", shaped, "reason", "shaper")
	}
	out = append(out, cube.Metric{Name: "policy_drop_packets_total", Help: "Frames that matched no slice and were dropped (no default slice).", Value: float64(st.PolicyDropPackets)})
	return out
}
