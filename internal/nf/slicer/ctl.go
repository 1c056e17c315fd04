package slicer

// The slicer's controller: the mirrors of slicer.bpf.c's structures, Sync
// (maps and the egress HTB trees), metrics.

import (
	"errors"
	"net/netip"
	"sort"
	"strconv"
	"sync"

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
	egress []string // interfaces whose qdisc is ours now
	// trees are the HTB classes written on each egress interface, by
	// minor (none: not known, and the next Sync writes them all).
	trees map[string]map[uint16]class
	// st is the slicer as the last Sync wrote it into the maps; nil: not
	// known (a new controller, a restarted daemon, a Sync that failed), and
	// the next Sync reads the maps and writes every entry that differs.
	st *synced
}

func loadAll(c *cube.Cube) (*Settings, []*Slice, error) {
	cfg := &Settings{}
	if err := cube.DecodeInto("config", c.Config, cfg); err != nil {
		return nil, nil, err
	}
	return cfg, others(c, ""), nil
}

// Sync writes the slices and rules into the maps and the HTB trees into
// the egress interfaces: the entries of the slices that changed since the
// last Sync, or of every slice when the settings or ports changed. The
// policers' state is the fast path's: kept.
func (ctl *controller) Sync(h cube.Handle, c *cube.Cube) error {
	ctl.mu.Lock()
	defer ctl.mu.Unlock()
	cfg := &Settings{}
	if err := cube.DecodeInto("config", c.Config, cfg); err != nil {
		return err
	}
	st := ctl.st
	ctl.st = nil // known again once this Sync has written everything
	if st == nil {
		ms, err := openMaps(h)
		if err != nil {
			return err
		}
		st = &synced{maps: ms}
	}
	env := envOf(c)
	rebuild := st.rows == nil || env != st.env
	gone, come := st.changes(c, rebuild)
	if err := st.parse(c, gone, come, rebuild); err != nil {
		return err
	}
	if rebuild {
		st.reset()
	}
	for _, r := range gone {
		st.remove(r)
	}
	for _, r := range come {
		st.add(r)
	}
	// No shaping at hook xdp. At tc, edt named in the settings stamps
	// departure times even with no egress interface listed (an fq the
	// operator set up honours them); htb marks classes only for the trees
	// the slicer owns.
	mech := ""
	if c.Hook == datapath.TC && (len(cfg.Egress) > 0 || cfg.Shaping != "") {
		var err error
		if mech, _, err = cfg.mechanism(st.classes > 0); err != nil {
			return cube.Within("egress", err)
		}
	}
	if mech != st.mech {
		come = st.all() // every slice's shaping changes
	}
	for _, r := range come {
		st.place(c, cfg, mech, r)
	}
	if err := st.maps.write(st.config(c, cfg)); err != nil {
		return err
	}
	st.env, st.mech = env, mech
	st.version = c.Version()
	ctl.st = st
	var list []*Slice
	if len(cfg.Egress) > 0 {
		list = st.slices()
	}
	return ctl.syncEgress(cfg, list, mech)
}

func (ctl *controller) syncEgress(cfg *Settings, list []*Slice, mech string) error {
	keep := map[string]bool{}
	if ctl.trees == nil {
		ctl.trees = map[string]map[uint16]class{}
	}
	for _, e := range cfg.Egress {
		last := ctl.trees[e.Interface]
		delete(ctl.trees, e.Interface) // unknown until written
		if mech == ShapingEDT {
			if err := ensureFQ(e); err != nil {
				return err
			}
		} else {
			tree, err := ensureHTB(e, list, last)
			if err != nil {
				return err
			}
			ctl.trees[e.Interface] = tree
		}
		keep[e.Interface] = true
	}
	var errs []error
	for _, ifname := range ctl.egress {
		if !keep[ifname] {
			errs = append(errs, removeHTB(ifname))
			delete(ctl.trees, ifname)
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
	ctl.egress, ctl.trees = nil, nil
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
