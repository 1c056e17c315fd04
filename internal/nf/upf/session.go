package upf

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"

	"github.com/cilium/ebpf"
	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/nf/upf/model"
)

// A session in the kernel: its rules written, indexed, retired and
// removed, with their counters.

// apply brings the kernel in line with session s: new and changed values
// get fresh indexes (a packet sees either the old rule set of a list or the
// new one, never a mix), unchanged ones stay where they are (with their
// counters), and the lists switch last.
func (ctl *controller) apply(c *cube.Cube, s *model.Session) error {
	img, err := compileSession(s, c, ctl.cfg)
	if err != nil {
		return err
	}
	old := ctl.sessions[s.SEID]
	if old == nil {
		old = ctl.recovered[s.SEID]
		delete(ctl.recovered, s.SEID)
	}
	if old == nil {
		old = newSessState()
	}
	for _, r := range img.rules {
		for _, k := range r.lists {
			if o, ok := ctl.keyOwner[k]; ok && o != s.SEID {
				return cube.Conflict("pdrs", "%s is already used by session %d", k, o)
			}
			if sl, ok := ctl.chosenSlot(k); ok {
				if t, used := ctl.slotTEID[sl]; used && t != k.teid() {
					return cube.Conflict("pdrs", "%s takes the slot of TEID %s (session %d): chosen TEIDs differ in their low 17 bits",
						k, hex32(t), ctl.keyOwner[listKey{keyTEID, uint64(teidKey(t))}])
				}
			}
		}
	}
	if s.CPAddress != "" {
		if o, ok := ctl.byCP[cpKey{s.CPAddress, s.CPSEID}]; ok && o != s.SEID {
			return cube.Conflict("cp_seid", "the SMF's SEID %#x at %s is already session %d", s.CPSEID, s.CPAddress, o)
		}
	}
	n := newSessState()
	n.sess = s
	var fresh []func() // releases the indexes allocated here if the change fails
	undo := func() {
		for _, f := range slices.Backward(fresh) {
			f()
		}
	}
	alloc := func(a *indexes, what string) (uint32, error) {
		i, ok := a.get()
		if !ok {
			return 0, cube.Errorf("tables.sessions", "no room for another %s in the cube's kernel tables", what)
		}
		fresh = append(fresh, func() { a.put(i) })
		return i, nil
	}
	// QERs and URRs keep their index (token bucket, counters) while their
	// ID lives.
	for id, v := range img.qers {
		if o, ok := old.qers[id]; ok {
			n.qers[id] = slot[kQER]{o.idx, v}
			continue
		}
		i, err := alloc(ctl.qers, "QER")
		if err != nil {
			undo()
			return err
		}
		n.qers[id] = slot[kQER]{i, v}
	}
	for id, v := range img.urrs {
		if o, ok := old.urrs[id]; ok {
			n.urrs[id] = slot[urrConf]{o.idx, v}
			continue
		}
		i, err := alloc(ctl.urrs, "URR")
		if err != nil {
			undo()
			return err
		}
		n.urrs[id] = slot[urrConf]{i, v}
	}
	for id, v := range img.fars {
		if o, ok := old.fars[id]; ok && !old.dirty && sameFAR(o.v, v) {
			n.fars[id] = o
			continue
		}
		i, err := alloc(ctl.fars, "FAR")
		if err != nil {
			undo()
			return err
		}
		n.fars[id] = slot[kFAR]{i, v}
	}
	for _, r := range img.rules {
		k := r.rule
		k.FAR = n.fars[r.far].idx
		k.kFwd = n.fars[r.far].v.kFwd
		// A QER that neither gates nor polices is not read by the fast
		// path: its QFI is the rule's mark. Should it start to (or its QFI
		// change), the rule changes, so it gets a new slot.
		for i, q := range r.qers {
			qv := n.qers[q].v
			if k.Mark == 0 {
				k.Mark = qv.QFI
			}
			if qv.Gate != 0 {
				k.QER[i] = n.qers[q].idx
			}
		}
		for i, u := range r.urrs {
			k.URR[i] = n.urrs[u].idx
			if n.urrs[u].v.flags != 0 {
				k.Flags |= ruleURRCountdown << i
			}
		}
		if r.sdf != nil {
			if o, ok := old.sdfs[r.key]; ok && !old.dirty && o.v == *r.sdf {
				n.sdfs[r.key] = o
			} else {
				i, err := alloc(ctl.sdfs, "SDF filter")
				if err != nil {
					undo()
					return err
				}
				n.sdfs[r.key] = slot[kSDF]{i, *r.sdf}
			}
			k.SDF = n.sdfs[r.key].idx
		}
		if o, ok := old.rules[r.key]; ok && !old.dirty && o.v == k {
			n.rules[r.key] = o
		} else {
			i, err := alloc(ctl.rules, "rule")
			if err != nil {
				undo()
				return err
			}
			n.rules[r.key] = slot[kRule]{i, k}
		}
		for _, lk := range r.lists {
			n.lists[lk] = append(n.lists[lk], n.rules[r.key].idx)
		}
	}
	for lk, l := range n.lists {
		if len(l) > listMax {
			undo()
			return cube.Errorf("pdrs", "%d rules match %s, at most %d", len(l), lk, listMax)
		}
		if _, ok := ctl.pools.slot(lk); !ok {
			continue
		}
		// A list that changed gets a new index; its slot switches to it.
		if i, ok := old.pooled[lk]; ok && !old.dirty && slices.Equal(old.lists[lk], l) {
			n.pooled[lk] = i
			continue
		}
		i, err := alloc(ctl.ueLists, "UE address list")
		if err != nil {
			undo()
			return err
		}
		n.pooled[lk] = i
	}
	if err := ctl.write(s.SEID, old, n); err != nil {
		n.dirty = true
		old.dirty = true
		undo()
		return err
	}
	ctl.retire(s.SEID, old, n)
	ctl.index(s.SEID, old, n)
	ctl.sessions[s.SEID] = n
	// Ask for new tunnel peers before releasing buffered packets to them.
	ctl.neigh.sessionChanged(ctl, n)
	ctl.buffers.sessionChanged(ctl, s.SEID, old, n)
	return nil
}

func sameFAR(a, b kFAR) bool {
	a.Notified, b.Notified = 0, 0
	return a == b
}

// write puts n's new values into the kernel, lists last, and deletes the
// lists old had that n has not.
func (ctl *controller) write(seid uint64, old, n *sessState) error {
	m := &ctl.maps
	for id, q := range n.qers {
		if o, ok := old.qers[id]; ok && !old.dirty && o.v == q.v {
			continue
		}
		if err := m.qers.Put(q.idx, &q.v); err != nil {
			return fmt.Errorf("upf_qers: %w", err)
		}
	}
	for id, u := range n.urrs {
		o, ok := old.urrs[id]
		if ok && !old.dirty && o.v == u.v {
			continue
		}
		if err := ctl.usage.arm(ctl, seid, id, u.idx, u.v, !ok); err != nil {
			return err
		}
	}
	for id, f := range n.fars {
		if o, ok := old.fars[id]; ok && o.idx == f.idx {
			continue
		}
		if err := m.fars.Put(f.idx, &f.v); err != nil {
			return fmt.Errorf("upf_fars: %w", err)
		}
	}
	for k, sd := range n.sdfs {
		if o, ok := old.sdfs[k]; ok && o.idx == sd.idx {
			continue
		}
		if err := m.sdfs.Put(sd.idx, &sd.v); err != nil {
			return fmt.Errorf("upf_sdfs: %w", err)
		}
	}
	for k, r := range n.rules {
		if o, ok := old.rules[k]; ok && o.idx == r.idx {
			continue
		}
		if err := m.rules.Put(r.idx, &r.v); err != nil {
			return fmt.Errorf("upf_rules: %w", err)
		}
	}
	line := make(map[uint32]kLine, len(n.rules))
	for _, r := range n.rules {
		line[r.idx] = r.v.kLine
	}
	for lk, l := range n.lists {
		i, pooled := n.pooled[lk]
		if o, ok := old.lists[lk]; ok && !old.dirty && slices.Equal(o, l) && old.pooled[lk] == i {
			continue
		}
		v := newList(line[l[0]], l)
		if err := ctl.putList(lk, i, pooled, &v); err != nil {
			return err
		}
	}
	// Lists gone, or moved from a hash map into their slot.
	for lk := range old.lists {
		_, was := old.pooled[lk]
		if _, still := n.lists[lk]; still {
			if _, is := n.pooled[lk]; is == was {
				continue
			}
		}
		if err := ctl.dropList(lk, was); err != nil {
			return err
		}
	}
	return nil
}

// chosenSlot is the upf_teid_slots slot of a TEID list key of the chosen
// range.
func (ctl *controller) chosenSlot(k listKey) (uint32, bool) {
	if k.Kind != keyTEID || ctl.cfg == nil {
		return 0, false
	}
	return ctl.cfg.TEIDSlot(k.teid())
}

// putList writes a list: a pooled UE address's into upf_ue_more and
// upf_ue_lists at index i and then its slot, a chosen TEID's into its slot
// (putChosen), any other into its hash map.
func (ctl *controller) putList(k listKey, i uint32, pooled bool, v *kHList) error {
	if sl, ok := ctl.chosenSlot(k); ok {
		if err := ctl.putChosen(k, sl, v); err != nil {
			return fmt.Errorf("%s: chosen TEID slot %d: %w", k, sl, err)
		}
		return nil
	}
	if !pooled {
		if err := ctl.listMap(k).Put(listMapKey(k), v); err != nil {
			return fmt.Errorf("%s: %w", k, err)
		}
		return nil
	}
	s, _ := ctl.pools.slot(k)
	if err := putMore(ctl.maps.ueMore, i, v); err != nil {
		return fmt.Errorf("%s: upf_ue_more: %w", k, err)
	}
	if err := ctl.maps.ueLists.Put(i, &kUEList{UE: k.K, List: v.List}); err != nil {
		return fmt.Errorf("%s: upf_ue_lists: %w", k, err)
	}
	if err := ctl.maps.ueSlots.Put(s, i); err != nil {
		return fmt.Errorf("%s: upf_ue_slots: %w", k, err)
	}
	return nil
}

// putChosen writes a chosen TEID's list into its slot, which a packet
// reads in place: the slot's TEID only changes while its list stays the
// same. A live slot changes through the hash, which replaces whole entries:
// the new list into upf_teid, the slot's TEID to 0 (packets go to
// upf_teid), the new list into the slot (its rules after the first into
// upf_teid_more first), the slot's TEID back, the hash entry out.
func (ctl *controller) putChosen(k listKey, sl uint32, v *kHList) error {
	m := &ctl.maps
	var cur kTEIDSlot
	if err := m.teidSlots.Lookup(sl, &cur); err != nil {
		return err
	}
	live := cur.TEID == uint32(k.K)
	if live {
		if err := m.teid.Put(uint32(k.K), v); err != nil {
			return err
		}
	}
	if cur.TEID != 0 {
		cur.TEID = 0
		if err := m.teidSlots.Put(sl, &cur); err != nil {
			return err
		}
	}
	if err := putMore(m.teidMore, sl, v); err != nil {
		return err
	}
	if err := m.teidSlots.Put(sl, &kTEIDSlot{List: v.List}); err != nil {
		return err
	}
	if err := m.teidSlots.Put(sl, &kTEIDSlot{TEID: uint32(k.K), List: v.List}); err != nil {
		return err
	}
	if live {
		if err := m.teid.Delete(uint32(k.K)); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
			return err
		}
	}
	return nil
}

// putMore writes the rules after the first of list v into slot i of a slot
// array's side array, before the list's head (a list of one rule leaves the
// side array alone: the fast path does not read it).
func putMore(more *ebpf.Map, i uint32, v *kHList) error {
	if v.List.Head.N < 2 {
		return nil
	}
	return more.Put(i, &v.More)
}

// dropList takes a list out of the fast path. A chosen TEID's slot gets
// TEID 0 and a pooled UE address's slot list index 0; the list stays where
// it is (a packet that read the slot before reads the list whole, and
// upf_ue_lists keeps it until its index is handed out again).
func (ctl *controller) dropList(k listKey, pooled bool) error {
	if sl, ok := ctl.chosenSlot(k); ok {
		var cur kTEIDSlot
		if err := ctl.maps.teidSlots.Lookup(sl, &cur); err != nil {
			return fmt.Errorf("%s: upf_teid_slots: %w", k, err)
		}
		if cur.TEID != uint32(k.K) {
			return nil
		}
		cur.TEID = 0
		if err := ctl.maps.teidSlots.Put(sl, &cur); err != nil {
			return fmt.Errorf("%s: upf_teid_slots: %w", k, err)
		}
		return nil
	}
	if pooled {
		s, _ := ctl.pools.slot(k)
		if err := ctl.maps.ueSlots.Put(s, uint32(0)); err != nil {
			return fmt.Errorf("%s: upf_ue_slots: %w", k, err)
		}
		return nil
	}
	if err := ctl.listMap(k).Delete(listMapKey(k)); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
		return fmt.Errorf("%s: %w", k, err)
	}
	return nil
}

// listMap is the hash map of a list in neither a chosen TEID's nor a pool's
// slot.
func (ctl *controller) listMap(k listKey) *ebpf.Map {
	switch k.Kind {
	case keyTEID:
		return ctl.maps.teid
	case keyUE4:
		return ctl.maps.ue4
	}
	return ctl.maps.ue6
}

func listMapKey(k listKey) any {
	if k.Kind == keyUE6 {
		return k.K
	}
	return uint32(k.K)
}

// retire frees what old had that n no longer uses: its entries are zeroed
// (so that no restart adopts them); rules drain first, keeping their
// counters until no packet in flight can count into them (drain.go).
func (ctl *controller) retire(seid uint64, old, n *sessState) {
	m := &ctl.maps
	for k, r := range old.rules {
		if nr, ok := n.rules[k]; ok && nr.idx == r.idx {
			continue
		}
		ctl.retireRule(seid, k, r)
	}
	for k, sd := range old.sdfs {
		if ns, ok := n.sdfs[k]; ok && ns.idx == sd.idx {
			continue
		}
		zero(m.sdfs, sd.idx, kSDF{})
		ctl.sdfs.put(sd.idx)
	}
	for id, f := range old.fars {
		if nf, ok := n.fars[id]; ok && nf.idx == f.idx {
			continue
		}
		zero(m.fars, f.idx, kFAR{})
		ctl.fars.put(f.idx)
	}
	for id, q := range old.qers {
		if _, ok := n.qers[id]; ok {
			continue
		}
		zero(m.qers, q.idx, kQER{})
		ctl.qers.put(q.idx)
	}
	for lk, i := range old.pooled {
		if ni, ok := n.pooled[lk]; ok && ni == i {
			continue
		}
		ctl.ueLists.put(i)
	}
	for id, u := range old.urrs {
		if _, ok := n.urrs[id]; ok {
			continue
		}
		ctl.usage.forget(ctl, u.idx)
		zero(m.urrs, u.idx, kURR{})
		delete(ctl.urrOf, u.idx)
		ctl.retireURR(u.idx)
	}
}

// index updates the controller's lookups for session n (was old).
func (ctl *controller) index(seid uint64, old, n *sessState) {
	for lk := range old.lists {
		if ctl.keyOwner[lk] == seid {
			delete(ctl.keyOwner, lk)
			if sl, ok := ctl.chosenSlot(lk); ok {
				delete(ctl.slotTEID, sl)
			}
		}
	}
	for lk := range n.lists {
		ctl.keyOwner[lk] = seid
		if sl, ok := ctl.chosenSlot(lk); ok {
			ctl.slotTEID[sl] = lk.teid()
		}
	}
	for k, r := range n.rules {
		ctl.ruleOf[r.idx] = ref{seid, k.id()}
		ctl.drain.countRule(r.idx, &r.v)
	}
	for id, u := range n.urrs {
		ctl.urrOf[u.idx] = ref{seid, id}
	}
	if old.sess != nil {
		for _, f := range old.sess.FARs {
			if f.OuterHeader == nil {
				continue
			}
			tk := tunnelKey{netip.MustParseAddr(f.OuterHeader.Address), f.OuterHeader.TEID}
			if ctl.tunnels[tk] == seid {
				delete(ctl.tunnels, tk)
			}
		}
		if old.sess.CPAddress != "" {
			delete(ctl.byCP, cpKey{old.sess.CPAddress, old.sess.CPSEID})
		}
	}
	if n.sess != nil {
		for _, f := range n.sess.FARs {
			if f.OuterHeader != nil {
				ctl.tunnels[tunnelKey{netip.MustParseAddr(f.OuterHeader.Address), f.OuterHeader.TEID}] = seid
			}
		}
		if n.sess.CPAddress != "" {
			ctl.byCP[cpKey{n.sess.CPAddress, n.sess.CPSEID}] = seid
		}
	}
}

// remove takes a session out of the kernel: lists first, then what they
// pointed at.
func (ctl *controller) remove(seid uint64) error {
	old := ctl.sessions[seid]
	if old == nil {
		return nil
	}
	n := newSessState()
	for lk := range old.lists {
		_, pooled := old.pooled[lk]
		if err := ctl.dropList(lk, pooled); err != nil {
			return err
		}
	}
	ctl.retire(seid, old, n)
	ctl.index(seid, old, n)
	for k := range ctl.retired {
		if k.seid == seid {
			delete(ctl.retired, k)
		}
	}
	ctl.sessionGone(seid)
	delete(ctl.sessions, seid)
	ctl.buffers.drop(seid)
	return nil
}

func zero[T any](m *ebpf.Map, idx uint32, v T) {
	_ = m.Put(idx, v)
}
