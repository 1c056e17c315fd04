package upf

import (
	"fmt"
	"sync"

	"github.com/cilium/ebpf"
)

// Draining retired rules. The fast path counts a packet once, in its rule's
// per-CPU counter block; a URR's usage is the sum of the blocks of the
// rules that name it. A rule that a change replaces or removes leaves its
// lists at once, but a packet that found it just before may still be
// counting into its block. So the rule drains: its entry and block stay
// (and keep counting for its URRs) until a grace period has passed, after
// which no program can hold it; then its counts are folded into its URRs'
// accounting (taken out of their report Base) and its index is freed.
//
// Crash safety: a retired rule's kernel entry carries the generation it was
// retired in (Owner.Retired), and each URR's accounting the last generation
// folded into it (kRep.FoldGen), written in one map update with the Base.
// A daemon killed half-way through a fold finds, after its restart, which
// rules are still to be folded into which URRs: none is counted twice or
// lost. A removed URR's index is also held back until the rules that named
// it are folded, so that no new URR gets their counts.

// drainRule is a retired rule waiting for its fold.
type drainRule struct {
	v   kRule // as in the kernel, Retired set
	pdr uint16
	// view: the rule's counts go on in its session's per-PDR view
	// (cleared when the session goes).
	view bool
}

type drainState struct {
	rules  map[uint32]*drainRule      // by rule index
	bySEID map[uint64]map[uint32]bool // rule indexes by session
	urrs   map[uint32]uint32          // removed URR index → generation
	// urrRules: the rules, live or draining, that count for each URR,
	// with their flags (a rule's direction says which half of the URR's
	// count its block is).
	urrRules map[uint32]map[uint32]uint8
	// gen is the generation retirements get now; every generation up to
	// graced has had a grace period since it was sealed.
	gen, graced uint32
	running     bool // a grace period is being waited for
	wg          sync.WaitGroup
}

func newDrainState() drainState {
	return drainState{rules: map[uint32]*drainRule{}, bySEID: map[uint64]map[uint32]bool{}, urrs: map[uint32]uint32{},
		urrRules: map[uint32]map[uint32]uint8{}, gen: 1}
}

// countRule records that rule idx (value v) counts for the URRs it names.
func (d *drainState) countRule(idx uint32, v *kRule) {
	for _, u := range v.URR {
		if u == 0 {
			continue
		}
		s := d.urrRules[u]
		if s == nil {
			s = map[uint32]uint8{}
			d.urrRules[u] = s
		}
		s[idx] = v.Flags
	}
}

// retireRule starts rule r of session seid draining: its kernel entry is
// marked retired (the fast path does not read the owner), its index stays
// taken.
func (ctl *controller) retireRule(seid uint64, k ruleKey, r slot[kRule]) {
	v := r.v
	v.Retired = ctl.drain.gen
	_ = ctl.maps.rules.Put(r.idx, &v)
	ctl.addDraining(r.idx, &drainRule{v: v, pdr: k.PDR, view: true})
	delete(ctl.ruleOf, r.idx)
}

func (ctl *controller) addDraining(idx uint32, dr *drainRule) {
	d := &ctl.drain
	d.rules[idx] = dr
	s := d.bySEID[dr.v.SEID]
	if s == nil {
		s = map[uint32]bool{}
		d.bySEID[dr.v.SEID] = s
	}
	s[idx] = true
	d.countRule(idx, &dr.v)
}

// retireURR holds a removed URR's index back until the rules that named
// it are folded.
func (ctl *controller) retireURR(idx uint32) { ctl.drain.urrs[idx] = ctl.drain.gen }

// sessionGone: the draining rules of session seid no longer count in its
// per-PDR view (a new session may get the SEID).
func (ctl *controller) sessionGone(seid uint64) {
	for idx := range ctl.drain.bySEID[seid] {
		ctl.drain.rules[idx].view = false
	}
}

// urrTotal is URR idx's counter: the sum of the counter blocks of the rules
// that name it, live or draining.
func (ctl *controller) urrTotal(idx uint32) kCount {
	var c kCount
	for r, flags := range ctl.drain.urrRules[idx] {
		if x, err := readCount(ctl.maps.ruleCount, r, flags); err == nil {
			addCount(&c, x)
		}
	}
	return c
}

// drainingCount adds the counters of session seid's draining rules of PDR
// pdr to c.
func (ctl *controller) drainingCount(seid uint64, pdr uint16, c *kCount) {
	for idx := range ctl.drain.bySEID[seid] {
		if dr := ctl.drain.rules[idx]; dr.view && dr.pdr == pdr {
			if x, err := readCount(ctl.maps.ruleCount, idx, dr.v.Flags); err == nil {
				addCount(c, x)
			}
		}
	}
}

// ungraced: something retired has not had its grace period yet.
func (d *drainState) ungraced() bool {
	for _, dr := range d.rules {
		if dr.v.Retired > d.graced {
			return true
		}
	}
	for _, g := range d.urrs {
		if g > d.graced {
			return true
		}
	}
	return false
}

// tickDrain (ctl.mu held, every tick): folds what has had its grace
// period, and starts one for what has not. The wait runs off the lock.
func (ctl *controller) tickDrain() {
	d := &ctl.drain
	ctl.fold()
	if d.running || !d.ungraced() {
		return
	}
	sealed := d.gen
	d.gen++
	d.running = true
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		err := gracePeriod()
		ctl.mu.Lock()
		defer ctl.mu.Unlock()
		d.running = false
		if err == nil {
			d.graced = max(d.graced, sealed)
		} else if ctl.handle != nil {
			ctl.handle.Logf("upf: waiting for a grace period: %v", err)
		}
	}()
}

// drainNow (ctl.mu held) waits for a grace period and folds everything
// retired so far.
func (ctl *controller) drainNow() error {
	d := &ctl.drain
	sealed := d.gen
	d.gen++
	if err := gracePeriod(); err != nil {
		return err
	}
	d.graced = max(d.graced, sealed)
	ctl.fold()
	return nil
}

// fold (ctl.mu held) moves the counters of the draining rules whose grace
// period has passed into their URRs' accounting and the per-PDR views, then
// frees their indexes and those of the URRs removed by then.
func (ctl *controller) fold() {
	d := &ctl.drain
	m := &ctl.maps
	upto := d.graced
	acc := map[uint32]kCount{}
	total := ctl.usage.total
	var totalAcc kCount
	var done []uint32
	for idx, dr := range d.rules {
		if dr.v.Retired > upto {
			continue
		}
		c, err := readCount(m.ruleCount, idx, dr.v.Flags)
		if err != nil {
			continue // tried again at the next tick
		}
		if total.FoldGen < dr.v.Retired {
			addCount(&totalAcc, c)
		}
		for _, u := range dr.v.URR {
			if r := ctl.usage.reps[u]; u != 0 && r != nil && r.FoldGen < dr.v.Retired {
				a := acc[u]
				addCount(&a, c)
				acc[u] = a
			}
		}
		if dr.view {
			key := ref{dr.v.SEID, uint32(dr.pdr)}
			a := ctl.retired[key]
			addCount(&a, c)
			ctl.retired[key] = a
		}
		done = append(done, idx)
	}
	// One update per URR: the Base and the generation go together.
	for u, c := range acc {
		r := ctl.usage.reps[u]
		subCount(&r.Base, c)
		r.FoldGen = upto
		_ = m.urrRep.Put(u, r)
	}
	if len(done) > 0 {
		subCount(&total.Base, totalAcc)
		total.FoldGen = max(total.FoldGen, upto)
		_ = m.urrRep.Put(totalRep, total)
	}
	for _, idx := range done {
		dr := d.rules[idx]
		// the block first: an entry still marked retired after a crash
		// is folded again, with nothing left to add
		zeroCount(m.ruleCount, idx)
		zero(m.rules, idx, kRule{})
		for _, u := range dr.v.URR {
			delete(d.urrRules[u], idx)
		}
		delete(d.bySEID[dr.v.SEID], idx)
		if len(d.bySEID[dr.v.SEID]) == 0 {
			delete(d.bySEID, dr.v.SEID)
		}
		delete(d.rules, idx)
		ctl.rules.put(idx)
	}
	for u, g := range d.urrs {
		if g <= upto {
			delete(d.urrRules, u)
			delete(d.urrs, u)
			ctl.urrs.put(u)
		}
	}
}

// gracePeriod returns once every BPF program that was running when it was
// called has finished: updating a map-in-map makes the kernel wait for an
// RCU grace period (synchronize_rcu in the BPF_MAP_UPDATE_ELEM syscall, so
// that user space knows no program still sees the old inner map), and XDP
// and TC programs run inside RCU read-side sections.
func gracePeriod() error {
	inner := &ebpf.MapSpec{Type: ebpf.Array, KeySize: 4, ValueSize: 4, MaxEntries: 1}
	in, err := ebpf.NewMap(inner)
	if err != nil {
		return fmt.Errorf("grace period: %w", err)
	}
	defer in.Close()
	out, err := ebpf.NewMap(&ebpf.MapSpec{Type: ebpf.ArrayOfMaps, KeySize: 4, ValueSize: 4, MaxEntries: 1, InnerMap: inner})
	if err != nil {
		return fmt.Errorf("grace period: %w", err)
	}
	defer out.Close()
	if err := out.Put(uint32(0), in); err != nil {
		return fmt.Errorf("grace period: %w", err)
	}
	return nil
}
