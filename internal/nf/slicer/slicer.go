// Package slicer is the slicer NF: the classifier at a tenant entry point
// that steers each frame into its slice's chain, polices the slice's rate
// and marks the frame (md->tenant, and at TC skb->priority = the slice's
// HTB class), and the owner of the egress qdiscs that keep the slices'
// guaranteed minimums and priorities. docs/nf/slicer.md is its reference.
package slicer

import (
	"embed"
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

// objects are the fast path built for each hook (make bpf).
//
//go:embed bpf/*.o
var objects embed.FS

const slMax = MaxSliceID + 1 // SL_MAX

// Mirrors of slicer.bpf.c's structures.
type (
	sliceVal struct {
		Flags    uint32
		Port     uint32
		Entry    uint32
		Classid  uint32
		VLAN     uint32
		_        uint32
		ByteCost uint64
		ByteTau  uint64
		PktCost  uint64
		PktTau   uint64
		EDTCost  uint64
		EDTHoriz uint64
	}
	cfgVal struct {
		Kinds   uint32
		Default uint32
	}
	counters struct {
		InPackets, InBytes         uint64
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

// policer parameters of a slice (GCRA, slicer.bpf.c: sl_gcra)
func (s *Slice) policer() (byteCost, byteTau, pktCost, pktTau uint64) {
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
	}
	if s.RatePps > 0 {
		pktCost = max(uint64(1e9)/s.RatePps, 1)
		burst := s.BurstPackets
		if burst == 0 {
			burst = max(s.RatePps/100, 2)
		}
		pktTau = burst * pktCost
	}
	return
}

type controller struct {
	mu     sync.Mutex
	egress []string // interfaces whose qdisc is ours now
}

var slicesTable = cube.Table{
	Name: "slices",
	Doc:  "Slices: owner, classification rules, chain entry port, rate limit, guaranteed minimum, priority, latency target.",
	Item: &Slice{},
	Key:  func(v any) string { return v.(*Slice).Name },
	Max:  MaxSlices,
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
	for _, n := range []string{"sl_config", "sl_slices", "sl_ports", "sl_vlan", "sl_dscp", "sl_l4", "sl_src", "sl_dst", "sl_ue", "sl_teid"} {
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
	teid := map[teidKey]uint32{}
	var kinds uint32
	var def uint32
	uplink := c.Port(cfg.Uplink)
	for _, s := range list {
		id := uint32(s.ID)
		if s.Name == cfg.Default {
			def = id
		}
		v := sliceVal{Flags: 1, Port: uint32(c.Port(s.Port).Index)}
		if uplink != nil {
			v.Entry = uint32(uplink.Index)
		}
		if s.Entry != "" {
			v.Entry = uint32(c.Port(s.Entry).Index)
		}
		if len(cfg.Egress) > 0 && c.Hook == datapath.TC && cfg.mechanism() == ShapingHTB {
			v.Classid = ClassSlice(s.ID)
		}
		v.ByteCost, v.ByteTau, v.PktCost, v.PktTau = s.policer()
		if cfg.Shaping == ShapingEDT && s.RateBps > 0 && c.Hook == datapath.TC {
			// the rate is kept by pacing at egress, not by dropping at
			// ingress
			v.EDTCost, v.EDTHoriz = v.ByteCost, edtHorizon
			v.ByteCost, v.ByteTau = 0, 0
		}
		slices[id] = v
		ports[datapath.MaxPorts+v.Port] = id
		slicePorts := map[string]bool{}
		for _, o := range list {
			slicePorts[o.Port] = true
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
			case kindTEID:
				for _, b := range teidBlocks(p.lo, p.hi) {
					k := teidKey{Prefixlen: uint32(b.Len)}
					k.TEID = [4]byte{byte(b.Base >> 24), byte(b.Base >> 16), byte(b.Base >> 8), byte(b.Base)}
					teid[k] = id
				}
			}
		}
	}
	for name, vals := range map[string]any{"sl_slices": slices, "sl_ports": ports, "sl_vlan": vlan, "sl_dscp": dscp} {
		if err := putArray(maps[name], vals); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
	if err := syncHash(maps["sl_l4"], l4); err != nil {
		return fmt.Errorf("sl_l4: %w", err)
	}
	for name, want := range lpm {
		if err := syncHash(maps[name], want); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
	if err := syncHash(maps["sl_teid"], teid); err != nil {
		return fmt.Errorf("sl_teid: %w", err)
	}
	if err := maps["sl_config"].Put(uint32(0), cfgVal{Kinds: kinds, Default: def}); err != nil {
		return fmt.Errorf("sl_config: %w", err)
	}
	return ctl.syncEgress(cfg, list)
}

func (ctl *controller) syncEgress(cfg *Settings, list []*Slice) error {
	keep := map[string]bool{}
	for _, e := range cfg.Egress {
		ensure := ensureHTB
		if cfg.mechanism() == ShapingEDT {
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

// syncHash makes a hash or LPM map hold exactly want.
func syncHash[K comparable](m *ebpf.Map, want map[K]uint32) error {
	var k K
	var v uint32
	var stale []K
	it := m.Iterate()
	for it.Next(&k, &v) {
		if w, ok := want[k]; !ok || w != v {
			if !ok {
				stale = append(stale, k)
			}
		}
	}
	if err := it.Err(); err != nil {
		return err
	}
	for _, k := range stale {
		if err := m.Delete(k); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
			return err
		}
	}
	for k, v := range want {
		if err := m.Put(k, v); err != nil {
			return err
		}
	}
	return nil
}

// SliceStatus is a slice as the datapath and the kernel's qdiscs see it.
type SliceStatus struct {
	Name     string `json:"name"`
	ID       int    `json:"id"`
	Tenant   string `json:"tenant,omitempty"`
	Port     string `json:"port"`
	Priority int    `json:"priority"`
	// Class is the skb->priority the slice's frames carry ("" at XDP or
	// without egress interfaces).
	Class         string `json:"class,omitempty"`
	InPackets     uint64 `json:"in_packets"`
	InBytes       uint64 `json:"in_bytes"`
	ReturnPackets uint64 `json:"return_packets"`
	ReturnBytes   uint64 `json:"return_bytes"`
	PolicePackets uint64 `json:"police_drop_packets"`
	PoliceBytes   uint64 `json:"police_drop_bytes"`
	// EDTPackets: dropped because they would have left later than the
	// EDT horizon (shaping edt).
	EDTPackets uint64       `json:"edt_drop_packets,omitempty"`
	Egress     []ClassStats `json:"egress,omitempty"`
}

// Status is the slicer's view: how it enforces, and every slice.
type Status struct {
	// Shaping is the egress mechanism: "htb" (one class per slice, picked
	// by skb->priority) or "none" (no egress interfaces, or hook xdp).
	Shaping string `json:"shaping"`
	// PolicyDrops counts frames that matched no slice, with no default.
	PolicyDropPackets uint64 `json:"policy_drop_packets"`
	PolicyDropBytes   uint64 `json:"policy_drop_bytes"`
	// ParseDrops counts frames too malformed to classify.
	ParseDropPackets uint64        `json:"parse_drop_packets"`
	Slices           []SliceStatus `json:"slices"`
	BestEffort       []ClassStats  `json:"best_effort,omitempty"`
}

func status(h cube.Handle, c *cube.Cube) (*Status, error) {
	cfg, list, err := loadAll(c)
	if err != nil {
		return nil, err
	}
	st := &Status{Shaping: "none", Slices: []SliceStatus{}}
	if len(cfg.Egress) > 0 && c.Hook == datapath.TC {
		st.Shaping = cfg.mechanism()
	}
	cm, err := h.Map("sl_counters")
	if err != nil {
		return nil, err
	}
	pm, err := h.Map("sl_policy")
	if err != nil {
		return nil, err
	}
	var pol []policyVal
	if err := pm.Lookup(uint32(0), &pol); err == nil {
		for _, p := range pol {
			st.PolicyDropPackets += p.Packets
			st.PolicyDropBytes += p.Bytes
		}
	}
	if err := pm.Lookup(uint32(1), &pol); err == nil {
		for _, p := range pol {
			st.ParseDropPackets += p.Packets
		}
	}
	classes := map[string]map[uint16]ClassStats{}
	if st.Shaping == "htb" {
		for _, e := range cfg.Egress {
			if cs, err := classStats(e.Interface); err == nil {
				classes[e.Interface] = cs
				if d, ok := cs[classDefault]; ok {
					st.BestEffort = append(st.BestEffort, d)
				}
			}
		}
	}
	for _, s := range list {
		ss := SliceStatus{Name: s.Name, ID: s.ID, Tenant: s.Tenant, Port: s.Port, Priority: s.priority()}
		var per []counters
		if err := cm.Lookup(uint32(s.ID), &per); err == nil {
			for _, p := range per {
				ss.InPackets += p.InPackets
				ss.InBytes += p.InBytes
				ss.ReturnPackets += p.RetPackets
				ss.ReturnBytes += p.RetBytes
				ss.PolicePackets += p.PolicePackets
				ss.PoliceBytes += p.PoliceBytes
				ss.EDTPackets += p.EDTPackets
			}
		}
		if st.Shaping == "htb" {
			ss.Class = fmt.Sprintf("%x:%x", QdiscMajor, classSlice0+s.ID)
			for _, e := range cfg.Egress {
				if cs, ok := classes[e.Interface][uint16(classSlice0+s.ID)]; ok {
					ss.Egress = append(ss.Egress, cs)
				}
			}
		}
		st.Slices = append(st.Slices, ss)
	}
	return st, nil
}

// Metrics exports each slice's counters (edgenf_slicer_*{slice,tenant}).
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

// Type is the slicer NF type.
var Type = &cube.Type{
	Name:        "slicer",
	Description: "Network slicing at an entry point: classify into per-tenant slices, police their rate, and shape their egress with guaranteed minimums and priorities (HTB).",
	Hooks:       []datapath.Hook{datapath.TC, datapath.XDP},
	Object:      cube.HookObjects(objects, "bpf/slicer"),
	Config:      &Settings{},
	Tables:      []cube.Table{slicesTable},
	Slices: func(c *cube.Cube) map[string]string {
		out := map[string]string{}
		for _, s := range others(c, "") {
			out[s.Port] = s.Name
		}
		return out
	},
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
