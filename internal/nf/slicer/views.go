package slicer

// The slicer's status view: each slice's counters and egress classes.

import (
	"fmt"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/datapath"
)

// SliceStatus is a slice as the datapath and the kernel's qdiscs see it.
type SliceStatus struct {
	Name     string `json:"name"`
	ID       int    `json:"id"`
	Tenant   string `json:"tenant,omitempty"`
	Port     string `json:"port"`            // the slicer port into its chain, or
	Chain    string `json:"chain,omitempty"` // its chain's entry, cube:port
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
	// by skb->priority), "edt" (departure times under sch_fq) or "none" (no
	// egress interfaces, or hook xdp); ShapingWhy says how it was chosen
	// (the settings, or what probing the kernel found).
	Shaping    string `json:"shaping"`
	ShapingWhy string `json:"shaping_why,omitempty"`
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
	switch {
	case c.Hook != datapath.TC:
		st.ShapingWhy = "hook xdp: redirected frames meet no qdisc"
	case len(cfg.Egress) == 0:
		st.ShapingWhy = "no egress interfaces in the settings"
	default:
		if st.Shaping, st.ShapingWhy, err = cfg.mechanism(needsClasses(list)); err != nil {
			st.Shaping, st.ShapingWhy = "none", err.Error()
		}
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
		ss := SliceStatus{Name: s.Name, ID: s.ID, Tenant: s.Tenant, Port: s.Port, Chain: s.Chain, Priority: s.priority()}
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
