package upf

import (
	"errors"
	"fmt"

	"github.com/cilium/ebpf"
	"github.com/edgenf/edgenf/internal/bpfmap"
)

// Adoption: after a restart, the controller reads back what an earlier
// daemon left in the kernel, so that the first Sync keeps it in place.

// adopt reads back the entries an earlier daemon left in the kernel, by
// owner, so that the first Sync keeps them (and their counters) where they
// are instead of writing everything anew.
func (ctl *controller) adopt() error {
	ctl.recovered = map[uint64]*sessState{}
	st := func(seid uint64) *sessState {
		s := ctl.recovered[seid]
		if s == nil {
			s = newSessState()
			ctl.recovered[seid] = s
		}
		return s
	}
	m := &ctl.maps
	used := map[uint32]bool{}
	ruleSEID := map[uint32]uint64{}
	maxGen := uint32(0)
	if err := bpfmap.Each(m.rules, func(i uint32, v kRule) bool {
		switch {
		case v.SEID == 0:
		case v.Retired != 0:
			// draining when the earlier daemon stopped: folded below
			ctl.addDraining(i, &drainRule{v: v, pdr: ruleKeyOf(v.ID).PDR})
			used[i] = true
			maxGen = max(maxGen, v.Retired)
		default:
			st(v.SEID).rules[ruleKeyOf(v.ID)] = slot[kRule]{i, v}
			ctl.drain.countRule(i, &v)
			used[i] = true
			ruleSEID[i] = v.SEID
		}
		return true
	}); err != nil {
		return err
	}
	ctl.rules.adopt(used)
	used = map[uint32]bool{}
	if err := bpfmap.Each(m.sdfs, func(i uint32, v kSDF) bool {
		if v.SEID != 0 {
			st(v.SEID).sdfs[ruleKeyOf(v.ID)] = slot[kSDF]{i, v}
			used[i] = true
		}
		return true
	}); err != nil {
		return err
	}
	ctl.sdfs.adopt(used)
	used = map[uint32]bool{}
	if err := bpfmap.Each(m.fars, func(i uint32, v kFAR) bool {
		if v.SEID != 0 {
			st(v.SEID).fars[v.ID] = slot[kFAR]{i, v}
			used[i] = true
		}
		return true
	}); err != nil {
		return err
	}
	ctl.fars.adopt(used)
	used = map[uint32]bool{}
	if err := bpfmap.Each(m.qers, func(i uint32, v kQER) bool {
		if v.SEID != 0 {
			v.TAT = [2]uint64{}
			st(v.SEID).qers[v.ID] = slot[kQER]{i, v}
			used[i] = true
		}
		return true
	}); err != nil {
		return err
	}
	ctl.qers.adopt(used)
	used = map[uint32]bool{}
	if err := bpfmap.Each(m.urrs, func(i uint32, v kURR) bool {
		if v.SEID != 0 {
			st(v.SEID).urrs[v.ID] = slot[urrConf]{i, urrConf{}}
			used[i] = true
		}
		return true
	}); err != nil {
		return err
	}
	ctl.urrs.adopt(used)
	if err := ctl.usage.adopt(ctl); err != nil {
		return err
	}
	// Generations go on from the earlier daemon's; its draining rules
	// are folded now (their URRs' FoldGen says which are done already).
	for _, r := range ctl.usage.reps {
		maxGen = max(maxGen, r.FoldGen)
	}
	maxGen = max(maxGen, ctl.usage.total.FoldGen)
	ctl.drain.gen, ctl.drain.graced = maxGen+1, 0
	if len(ctl.drain.rules) > 0 {
		if err := ctl.drainNow(); err != nil {
			return err
		}
	}
	// Counter blocks without the mark are new: the URRs' accounting, kept,
	// counted from blocks an upgrade reset.
	if !hasCountMark(m.ruleCount) {
		ctl.slow.UsageReset += uint64(ctl.usage.rebase(ctl))
		if err := m.ruleCount.Put(uint32(0), countMark); err != nil {
			return fmt.Errorf("%s: %w", mapRuleCount, err)
		}
	}
	// Lists: whose rules they hold tells whose they are.
	var stale []uint32
	for _, lm := range []struct {
		m    *ebpf.Map
		kind uint8
	}{{m.teid, keyTEID}, {m.ue4, keyUE4}, {m.ue6, keyUE6}} {
		var err error
		if lm.kind == keyUE6 {
			err = bpfmap.Each(lm.m, func(k uint64, v kHList) bool { ctl.adoptList(listKey{keyUE6, k}, v, ruleSEID); return true })
		} else {
			err = bpfmap.Each(lm.m, func(k uint32, v kHList) bool {
				lk := listKey{lm.kind, uint64(k)}
				if _, ok := ctl.chosenSlot(lk); ok {
					// a chosen TEID's list is in upf_teid only while its
					// slot changes (a change a crash interrupted): the
					// slot's is adopted, the session's written again
					stale = append(stale, k)
					return true
				}
				ctl.adoptList(lk, v, ruleSEID)
				return true
			})
		}
		if err != nil {
			return err
		}
	}
	for _, k := range stale {
		if err := m.teid.Delete(k); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
			return fmt.Errorf("upf_teid: %w", err)
		}
	}
	var moreErr error
	if err := bpfmap.Each(m.teidSlots, func(sl uint32, v kTEIDSlot) bool {
		if v.TEID == 0 {
			return true
		}
		var l kHList
		if l, moreErr = slotList(m.teidMore, sl, v.List); moreErr != nil {
			return false
		}
		ctl.adoptList(listKey{keyTEID, uint64(v.TEID)}, l, ruleSEID)
		return true
	}); err != nil || moreErr != nil {
		return fmt.Errorf("upf_teid_slots: %w", errors.Join(err, moreErr))
	}
	if err := ctl.adoptPooled(ruleSEID); err != nil {
		return err
	}
	// A recovered QER or FAR compares equal to what the session compiles
	// to only without the fast path's state; URRs are re-armed by usage.
	for _, s := range ctl.recovered {
		for id, u := range s.urrs {
			s.urrs[id] = slot[urrConf]{u.idx, ctl.usage.adoptedConf(u.idx)}
		}
	}
	return nil
}

func (ctl *controller) adoptList(k listKey, v kHList, ruleSEID map[uint32]uint64) *sessState {
	rules := v.rules()
	seid := ruleSEID[v.List.Rule]
	if rules == nil || seid == 0 {
		ctl.orphanLists = append(ctl.orphanLists, k)
		return nil
	}
	s := ctl.recovered[seid]
	s.lists[k] = rules
	return s
}

// slotList is the whole list whose head v is in slot i of a slot array, its
// rules after the first read from more (the array's side array) when it
// has any.
func slotList(more *ebpf.Map, i uint32, v kList) (kHList, error) {
	l := kHList{List: v}
	if v.Head.N > 1 {
		if err := more.Lookup(i, &l.More); err != nil {
			return l, fmt.Errorf("slot %d: its rules after the first: %w", i, err)
		}
	}
	return l, nil
}

// adoptPooled reads back the pool table and the lists in its slots. The
// slot of a list whose rules are gone is emptied at once (its index is not
// kept, so it may be handed out again).
func (ctl *controller) adoptPooled(ruleSEID map[uint32]uint64) error {
	m := &ctl.maps
	if err := m.pools.Lookup(uint32(0), &ctl.pools); err != nil {
		return fmt.Errorf("upf_pools: %w", err)
	}
	used := map[uint32]bool{}
	var orphans []uint32
	err := bpfmap.Each(m.ueSlots, func(i uint32, li uint32) bool {
		if li == 0 {
			return true
		}
		var v kUEList
		kind, ok := ctl.pools.kindOf(i)
		if !ok || li >= m.ueLists.MaxEntries() || used[li] || m.ueLists.Lookup(li, &v) != nil {
			orphans = append(orphans, i)
			return true
		}
		k := listKey{kind, v.UE}
		if at, ok := ctl.pools.slot(k); !ok || at != i {
			orphans = append(orphans, i)
			return true
		}
		l, err := slotList(m.ueMore, li, v.List)
		if err != nil {
			orphans = append(orphans, i)
			return true
		}
		s := ctl.adoptList(k, l, ruleSEID)
		if s == nil {
			orphans = append(orphans, i)
			return true
		}
		s.pooled[k] = li
		used[li] = true
		return true
	})
	if err != nil {
		return fmt.Errorf("upf_ue_slots: %w", err)
	}
	for _, i := range orphans {
		if err := m.ueSlots.Put(i, uint32(0)); err != nil {
			return fmt.Errorf("upf_ue_slots: %w", err)
		}
	}
	ctl.ueLists.adopt(used)
	return nil
}

// dropUnadopted removes what an earlier daemon left for sessions that no
// longer exist (deleted while no daemon ran, or a lost journal record).
func (ctl *controller) dropUnadopted() error {
	for seid, s := range ctl.recovered {
		ctl.sessions[seid] = s
		if err := ctl.remove(seid); err != nil {
			return err
		}
	}
	ctl.recovered = nil
	// A list whose rules were gone (an upgrade reset the rules map, and
	// kept the lists') may since have been written again by its session.
	owned := map[listKey]bool{}
	for _, s := range ctl.sessions {
		for k := range s.lists {
			owned[k] = true
		}
	}
	for _, k := range ctl.orphanLists {
		if !owned[k] {
			_ = ctl.dropList(k, false) // a pooled orphan's slot was emptied by adoptPooled
		}
	}
	ctl.orphanLists = nil
	return nil
}
