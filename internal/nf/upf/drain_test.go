package upf

import (
	"testing"

	"github.com/cilium/ebpf"

	"github.com/edgenf/edgenf/internal/datapath"
	"github.com/edgenf/edgenf/internal/nf/upf/model"
)

// Usage counted in per-rule counter blocks stays exact while rules are
// replaced: a retired rule keeps counting for its URRs until its grace
// period is over, its fold moves the counts without changing the URR's
// usage, and a restart folds what a killed daemon left draining, once.

// drainRig is a session whose URR 1 counts both directions, with traffic
// counted in it: 2 uplink and 3 downlink packets of 1000 octets.
func drainRig(t *testing.T) (*rig, *model.Session) {
	t.Helper()
	s := basicSession(1, 0x100, "198.19.0.5", "", 0x9000)
	r := newRig(t, datapath.XDP, s)
	for range 2 {
		if res := r.Run("n3", gtp(false, 0x100, 9, udpPkt("198.19.0.5", "198.51.100.7", 4000, 53, make([]byte, 972)))); res.Port != 1 {
			t.Fatalf("uplink packet not forwarded: %v", r.nonZero())
		}
	}
	r.downlink(3)
	return r, s
}

func (r *rig) downlink(n int) {
	r.t.Helper()
	for range n {
		if res := r.Run("n6", fromDN(udpPkt("198.51.100.7", "198.19.0.5", 53, 4000, make([]byte, 972)))); res.Port != 0 {
			r.t.Fatalf("downlink packet not forwarded: %v", r.nonZero())
		}
	}
}

// used is URR id of session seid's usage since its last report.
func (r *rig) used(seid uint64, id uint32) kCount {
	r.t.Helper()
	r.ctl.mu.Lock()
	defer r.ctl.mu.Unlock()
	idx := r.ctl.sessions[seid].urrs[id].idx
	cur, rep := r.ctl.urrTotal(idx), r.ctl.usage.reps[idx]
	for i := range 2 {
		cur.Bytes[i] -= rep.Base.Bytes[i]
		cur.Pkts[i] -= rep.Base.Pkts[i]
	}
	return cur
}

func wantUsed(t *testing.T, got kCount, ulPkts, dlPkts uint64) {
	t.Helper()
	want := kCount{Bytes: [2]uint64{ulPkts * 1000, dlPkts * 1000}, Pkts: [2]uint64{ulPkts, dlPkts}}
	if got != want {
		t.Fatalf("URR usage %+v, want %+v", got, want)
	}
}

// retargetDownlink changes the gNB's TEID: the downlink FAR, and so the
// downlink rule, get new slots; the old rule drains.
func (r *rig) retargetDownlink(s *model.Session, teid uint32) (oldIdx uint32) {
	r.t.Helper()
	oldIdx = r.ctl.sessions[1].rules[ruleKey{PDR: 2}].idx
	s.FARs[1].OuterHeader.TEID = teid
	if err := r.Update(testCube(datapath.XDP, s)); err != nil {
		r.t.Fatal(err)
	}
	if r.ctl.sessions[1].rules[ruleKey{PDR: 2}].idx == oldIdx {
		r.t.Fatal("the changed rule kept its slot")
	}
	if r.ctl.drain.rules[oldIdx] == nil {
		r.t.Fatal("the replaced rule is not draining")
	}
	return oldIdx
}

// countInFlight adds a packet of 1000 octets to rule idx's downlink
// counters, as a packet that found the rule before it left its list would.
func (r *rig) countInFlight(idx uint32) {
	r.t.Helper()
	per := blocks(r.t, r.ctl.maps.ruleCount, idx)
	per[0].Bytes += 1000
	per[0].Pkts++
	setBlocks(r.t, r.ctl.maps.ruleCount, idx, per)
}

// blocks returns rule idx's counter blocks, a row's each.
func blocks(t testing.TB, m *ebpf.Map, idx uint32) []kBlock {
	t.Helper()
	per := make([]kBlock, countRows())
	for row := range per {
		if err := m.Lookup(uint32(row)*countRow(m)+idx, &per[row]); err != nil {
			t.Fatal(err)
		}
	}
	return per
}

func setBlocks(t testing.TB, m *ebpf.Map, idx uint32, per []kBlock) {
	t.Helper()
	for row := range per {
		if err := m.Put(uint32(row)*countRow(m)+idx, per[row]); err != nil {
			t.Fatal(err)
		}
	}
}

func TestURRUsageExactAcrossRuleReplacement(t *testing.T) {
	r, s := drainRig(t)
	wantUsed(t, r.used(1, 1), 2, 3)
	old := r.retargetDownlink(s, 0x9001)
	// The retired rule still counts: for its URR and its PDR's view.
	r.countInFlight(old)
	r.downlink(2)
	wantUsed(t, r.used(1, 1), 2, 6)
	if c := r.ctl.pdrCount(1, r.ctl.sessions[1], 2); c.Pkts[1] != 6 {
		t.Fatalf("PDR 2 counted %d downlink packets, want 6", c.Pkts[1])
	}
	// The ticks: the first starts a grace period, the next folds.
	r.ctl.Tick(r.Handle(), r.Model, r.ctl.usage.now())
	r.ctl.drain.wg.Wait()
	r.ctl.Tick(r.Handle(), r.Model, r.ctl.usage.now())
	if len(r.ctl.drain.rules) != 0 {
		t.Fatalf("%d rules still draining after a grace period", len(r.ctl.drain.rules))
	}
	var k kRule
	if err := r.ctl.maps.rules.Lookup(old, &k); err != nil || k != (kRule{}) {
		t.Fatalf("folded rule's entry %+v (%v), want it zeroed", k, err)
	}
	wantUsed(t, r.used(1, 1), 2, 6)
	if c := r.ctl.pdrCount(1, r.ctl.sessions[1], 2); c.Pkts[1] != 6 {
		t.Fatalf("PDR 2 counted %d downlink packets after the fold, want 6", c.Pkts[1])
	}
	// The report carries exactly that, and the next measurement starts
	// from zero.
	u := r.ctl.Usage(1, nil, 0)
	if len(u) != 1 || u[0].Volume.ULPkts != 2 || u[0].Volume.DLPkts != 6 || u[0].Volume.DLBytes != 6000 {
		t.Fatalf("usage report %+v", u)
	}
	wantUsed(t, r.used(1, 1), 0, 0)
	r.downlink(1)
	wantUsed(t, r.used(1, 1), 0, 1)
}

func TestRemovedURRIndexHeldUntilItsRulesFold(t *testing.T) {
	r, s := drainRig(t)
	urr := r.ctl.sessions[1].urrs[1].idx
	s.URRs = nil
	for i := range s.PDRs {
		s.PDRs[i].URRs = nil
	}
	if err := r.Update(testCube(datapath.XDP, s)); err != nil {
		t.Fatal(err)
	}
	if _, ok := r.ctl.drain.urrs[urr]; !ok {
		t.Fatal("the removed URR's index was freed while rules naming it drain")
	}
	r.ctl.mu.Lock()
	err := r.ctl.drainNow()
	r.ctl.mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	if len(r.ctl.drain.urrs) != 0 || len(r.ctl.drain.urrRules[urr]) != 0 {
		t.Fatal("the removed URR was not freed by the fold")
	}
}

// restart replaces the rig's controller by a new one that adopts the
// kernel state, as a restarted daemon does.
func (r *rig) restart() {
	r.t.Helper()
	r.ctl.Close()
	r.Ctl = Type.New()
	r.ctl = r.Ctl.(*controller)
	if err := r.Update(r.Model); err != nil {
		r.t.Fatal(err)
	}
}

func TestRestartFoldsDrainingRulesOnce(t *testing.T) {
	r, s := drainRig(t)
	old := r.retargetDownlink(s, 0x9001)
	r.countInFlight(old)
	r.downlink(1)
	// Killed with the old rule draining: the next daemon folds it.
	r.restart()
	if len(r.ctl.drain.rules) != 0 {
		t.Fatal("the adopted draining rule was not folded")
	}
	wantUsed(t, r.used(1, 1), 2, 5)

	old = r.killedMidFold(s, 0x9002)
	r.restart()
	wantUsed(t, r.used(1, 1), 2, 6)
	var entry kRule
	if err := r.ctl.maps.rules.Lookup(old, &entry); err != nil || entry != (kRule{}) {
		t.Fatalf("the half-folded rule's entry %+v (%v), want it zeroed", entry, err)
	}
}

// killedMidFold leaves what a daemon killed half-way through a fold
// leaves: the downlink rule replaced (TEID teid) after one more packet,
// the URRs' Base and FoldGen (and the traffic record) written, the rule's
// entry and counters not yet zeroed. It returns the rule's index.
func (r *rig) killedMidFold(s *model.Session, teid uint32) uint32 {
	r.t.Helper()
	old := r.retargetDownlink(s, teid)
	r.downlink(1)
	var entry kRule
	if err := r.ctl.maps.rules.Lookup(old, &entry); err != nil {
		r.t.Fatal(err)
	}
	per := blocks(r.t, r.ctl.maps.ruleCount, old)
	r.drainNow()
	if err := r.ctl.maps.rules.Put(old, &entry); err != nil {
		r.t.Fatal(err)
	}
	setBlocks(r.t, r.ctl.maps.ruleCount, old, per)
	return old
}

func (r *rig) drainNow() {
	r.t.Helper()
	r.ctl.mu.Lock()
	err := r.ctl.drainNow()
	r.ctl.mu.Unlock()
	if err != nil {
		r.t.Fatal(err)
	}
}

func TestOneCounterBlockServesEveryURROfARule(t *testing.T) {
	s := basicSession(1, 0x100, "198.19.0.5", "", 0x9000)
	s.URRs = append(s.URRs, model.URR{ID: 2, Measure: []string{"volume"}})
	s.PDRs[1].URRs = []uint32{1, 2}
	r := newRig(t, datapath.XDP, s)
	r.downlink(2)
	wantUsed(t, r.used(1, 1), 0, 2)
	wantUsed(t, r.used(1, 2), 0, 2)
	// Reporting one URR leaves the other's measurement alone.
	if u := r.ctl.Usage(1, []uint32{2}, 0); len(u) != 1 || u[0].Volume.DLPkts != 2 {
		t.Fatalf("usage report %+v", u)
	}
	r.downlink(1)
	wantUsed(t, r.used(1, 1), 0, 3)
	wantUsed(t, r.used(1, 2), 0, 1)
}
