package upf

import (
	"errors"
	"time"

	"github.com/cilium/ebpf"
	"github.com/edgenf/edgenf/internal/pfcp"
	"github.com/edgenf/edgenf/internal/pfcp/agent"
)

// Usage accounting of URRs. The fast path counts each packet once, in its
// CPU's counter block of the rule it matched (upf_rule_count: counters.go),
// and counts thresholds and quotas down (upf_urrs). A URR's counter is the sum of the
// blocks of the rules that name it, live or draining (urrTotal); a
// measurement is that counter since the last report, whose value (Base),
// sequence number and time are kept per URR in upf_urr_rep (pinned: they
// survive the daemon). When a retired rule's block is freed, its counts
// are taken out of Base instead (drain.go): the difference stays exact.

// kRep is upf_urr_rep's value: 136 octets, as upf.bpf.c declares it.
type kRep struct {
	Owner
	Base       kCount
	SEQN       uint32
	Flags      uint32 // urrTh*, urrQ*, repVolume, repDuration, repQuotaHit
	Start      int64  // the measurement's start, Unix ns
	QuotaStart int64  // when the time quota started
	Th         [3]int64
	Q          [3]int64
	Period     uint32
	TimeTh     uint32
	TimeQuota  uint32
	// FoldGen: the last generation of retired rules whose counters were
	// folded into Base (drain.go); a restart does not fold them again.
	FoldGen uint32
}

const (
	repVolume   = 0x100
	repDuration = 0x200
	repQuotaHit = 0x400 // the quota's exhaustion was reported
)

func (r *kRep) conf() urrConf {
	return urrConf{flags: r.Flags & 0xff, th: r.Th, q: r.Q, period: r.Period, timeTh: r.TimeTh, timeQuota: r.TimeQuota,
		volume: r.Flags&repVolume != 0, duration: r.Flags&repDuration != 0}
}

func (r *kRep) setConf(c urrConf) {
	r.Flags = r.Flags&repQuotaHit | c.flags
	if c.volume {
		r.Flags |= repVolume
	}
	if c.duration {
		r.Flags |= repDuration
	}
	r.Th, r.Q, r.Period, r.TimeTh, r.TimeQuota = c.th, c.q, c.period, c.timeTh, c.timeQuota
}

// usage keeps the accounting state in memory too (the map is its
// persistent copy).
type usage struct {
	reps map[uint32]*kRep // by URR index
	// total is the cube's traffic record (counters.go: traffic), kept in
	// upf_urr_rep under index 0, which no URR has.
	total *kRep
	now   func() time.Time
}

func newUsage() *usage { return &usage{reps: map[uint32]*kRep{}, total: &kRep{}, now: time.Now} }

// adopt reads the accounting of an earlier daemon.
func (u *usage) adopt(ctl *controller) error {
	var k uint32
	var v kRep
	it := ctl.maps.urrRep.Iterate()
	for it.Next(&k, &v) {
		r := v
		if k == totalRep {
			u.total = &r
			continue
		}
		u.reps[k] = &r
	}
	return it.Err()
}

func (u *usage) adoptedConf(idx uint32) urrConf {
	if r := u.reps[idx]; r != nil {
		return r.conf()
	}
	return urrConf{}
}

// arm writes a URR's configuration: the kernel's thresholds and quotas, and
// the accounting. A new URR starts measuring now; a changed one keeps its
// measurement and gets its thresholds less what was used since.
func (u *usage) arm(ctl *controller, seid uint64, id, idx uint32, c urrConf, fresh bool) error {
	now := u.now()
	r := u.reps[idx]
	if fresh || r == nil {
		cur := ctl.urrTotal(idx)
		r = &kRep{Owner: Owner{SEID: seid, ID: id}, Base: cur, Start: now.UnixNano(), QuotaStart: now.UnixNano()}
	}
	old := r.conf()
	var used [3]int64
	if !fresh {
		used = u.used(ctl, idx, r)
	}
	k := kURR{Flags: c.flags, Owner: Owner{SEID: seid, ID: id}}
	for i := range 3 {
		k.Th[i] = max(1, c.th[i]-used[i])
		k.Q[i] = c.q[i]
	}
	if !fresh && old.q == c.q {
		// The quota is unchanged: keep what the fast path left of it.
		var cur kURR
		if err := ctl.maps.urrs.Lookup(idx, &cur); err == nil {
			k.Q = cur.Q
		}
	} else {
		r.Flags &^= repQuotaHit
	}
	if fresh || old.timeQuota != c.timeQuota {
		r.QuotaStart = now.UnixNano()
	}
	r.setConf(c)
	if err := ctl.maps.urrs.Put(idx, &k); err != nil {
		return err
	}
	if err := ctl.maps.urrRep.Put(idx, r); err != nil {
		return err
	}
	u.reps[idx] = r
	return nil
}

// used is the URR's usage in octets since its last report: total, uplink,
// downlink.
func (u *usage) used(ctl *controller, idx uint32, r *kRep) [3]int64 {
	cur := ctl.urrTotal(idx)
	ul := int64(cur.Bytes[0] - r.Base.Bytes[0])
	dl := int64(cur.Bytes[1] - r.Base.Bytes[1])
	return [3]int64{ul + dl, ul, dl}
}

// rebase restarts every measurement from the counters as they are now
// (counters.go: after an upgrade reset the counter blocks), and the cube's
// traffic counters from what the blocks hold: a base taken from the old
// blocks would make them wrap. It returns how many URRs' measurements it
// restarted.
func (u *usage) rebase(ctl *controller) int {
	for idx, r := range u.reps {
		r.Base = ctl.urrTotal(idx)
		_ = ctl.maps.urrRep.Put(idx, r)
	}
	u.total.Base = kCount{}
	_ = ctl.maps.urrRep.Put(totalRep, u.total)
	return len(u.reps)
}

func (u *usage) forget(ctl *controller, idx uint32) {
	delete(u.reps, idx)
	if err := ctl.maps.urrRep.Delete(idx); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
		return
	}
}

// report closes a URR's measurement: the usage since the last report, then
// a new measurement from now with its thresholds re-armed.
func (u *usage) report(ctl *controller, idx uint32, trigger uint32) (agent.Usage, bool) {
	r := u.reps[idx]
	if r == nil {
		return agent.Usage{}, false
	}
	now := u.now()
	cur := ctl.urrTotal(idx)
	out := agent.Usage{URR: r.ID, SEQN: r.SEQN, Trigger: trigger, Start: time.Unix(0, r.Start), End: now}
	if r.Flags&repVolume != 0 {
		out.Volume = &agent.Volume{
			ULBytes: cur.Bytes[0] - r.Base.Bytes[0], DLBytes: cur.Bytes[1] - r.Base.Bytes[1],
			ULPkts: cur.Pkts[0] - r.Base.Pkts[0], DLPkts: cur.Pkts[1] - r.Base.Pkts[1],
		}
	}
	if r.Flags&repDuration != 0 {
		d := uint32(now.Sub(out.Start).Round(time.Second) / time.Second)
		out.Duration = &d
	}
	r.Base, r.SEQN, r.Start = cur, r.SEQN+1, now.UnixNano()
	if trigger&(pfcp.TriggerVOLQU|pfcp.TriggerTIMQU) != 0 {
		r.Flags |= repQuotaHit
	}
	_ = ctl.maps.urrRep.Put(idx, r)
	// The thresholds count from the new measurement's start; the quotas
	// go on.
	var k kURR
	if err := ctl.maps.urrs.Lookup(idx, &k); err == nil {
		c := r.conf()
		k.Th = [3]int64{max(1, c.th[0]), max(1, c.th[1]), max(1, c.th[2])}
		if trigger&pfcp.TriggerTIMQU != 0 {
			k.Q = [3]int64{}
			k.Flags |= urrQTotal
		}
		_ = ctl.maps.urrs.Put(idx, k)
	}
	return out, true
}

// Usage implements agent.Datapath: reports for the URRs of a session.
func (ctl *controller) Usage(seid uint64, ids []uint32, trigger uint32) []agent.Usage {
	ctl.mu.Lock()
	defer ctl.mu.Unlock()
	st := ctl.sessions[seid]
	if st == nil {
		return nil
	}
	var out []agent.Usage
	for id, u := range st.urrs {
		if ids != nil && !containsID(ids, id) {
			continue
		}
		if r, ok := ctl.usage.report(ctl, u.idx, trigger); ok {
			out = append(out, r)
		}
	}
	sortUsage(out)
	return out
}

func containsID(ids []uint32, id uint32) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}

func sortUsage(u []agent.Usage) {
	for i := 1; i < len(u); i++ {
		for j := i; j > 0 && u[j].URR < u[j-1].URR; j-- {
			u[j], u[j-1] = u[j-1], u[j]
		}
	}
}

// urrEvent handles the fast path's word that a threshold or quota of URR
// idx was reached: the URR reports (once per quota).
func (ctl *controller) urrEvent(idx uint32) {
	r := ctl.usage.reps[idx]
	ref, ok := ctl.urrOf[idx]
	if r == nil || !ok {
		return
	}
	var k kURR
	if err := ctl.maps.urrs.Lookup(idx, &k); err != nil {
		return
	}
	var trigger uint32
	for i, bit := range []uint32{urrThTotal, urrThUL, urrThDL} {
		if k.Flags&bit != 0 && k.Th[i] <= 0 {
			trigger |= pfcp.TriggerVOLTH
		}
	}
	if r.Flags&repQuotaHit == 0 {
		for i, bit := range []uint32{urrQTotal, urrQUL, urrQDL} {
			if k.Flags&bit != 0 && k.Q[i] <= 0 {
				trigger |= pfcp.TriggerVOLQU
			}
		}
	}
	if trigger == 0 {
		return
	}
	if u, ok := ctl.usage.report(ctl, idx, trigger); ok {
		ctl.emit(agent.Event{Kind: agent.EventUsage, SEID: ref.seid, Usage: []agent.Usage{u}})
	}
}

// tickUsage reports the URRs whose period, time threshold or time quota
// has come.
func (ctl *controller) tickUsage(now time.Time) {
	for idx, r := range ctl.usage.reps {
		if r.Period == 0 && r.TimeTh == 0 && r.TimeQuota == 0 {
			continue
		}
		var trigger uint32
		since := now.Sub(time.Unix(0, r.Start))
		if r.Period > 0 && since >= time.Duration(r.Period)*time.Second {
			trigger |= pfcp.TriggerPERIO
		}
		if r.TimeTh > 0 && since >= time.Duration(r.TimeTh)*time.Second {
			trigger |= pfcp.TriggerTIMTH
		}
		if r.TimeQuota > 0 && r.Flags&repQuotaHit == 0 && now.Sub(time.Unix(0, r.QuotaStart)) >= time.Duration(r.TimeQuota)*time.Second {
			trigger |= pfcp.TriggerTIMQU
		}
		if trigger == 0 {
			continue
		}
		ref, ok := ctl.urrOf[idx]
		if !ok {
			continue
		}
		if u, ok := ctl.usage.report(ctl, idx, trigger); ok {
			ctl.emit(agent.Event{Kind: agent.EventUsage, SEID: ref.seid, Usage: []agent.Usage{u}})
		}
	}
}
