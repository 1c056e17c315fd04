package upf

import (
	"errors"
	"testing"

	"github.com/cilium/ebpf"
)

// The packets and octets forwarded by direction are the sum of the rules'
// counter blocks (counters.go: traffic); the user sees them as before: they
// never go back while rules are replaced, folded, adopted after a crash
// half-way through a fold, or after a restart; a reset zeroes them; an
// upgrade carries over what an earlier version counted in upf_stats.

// wantTraffic checks the counters view and the Prometheus metric.
func (r *rig) wantTraffic(ulPkts, dlPkts uint64) {
	r.t.Helper()
	r.ctl.mu.Lock()
	want := map[string]uint64{"ul_packets": ulPkts, "ul_bytes": ulPkts * 1000, "dl_packets": dlPkts, "dl_bytes": dlPkts * 1000}
	for _, c := range r.ctl.counters() {
		if w, ok := want[c.Name]; ok && c.Value != w {
			r.t.Errorf("%s = %d, want %d", c.Name, c.Value, w)
		}
	}
	r.ctl.mu.Unlock()
	for _, m := range r.ctl.Metrics(r.Handle(), r.Model) {
		if m.Name == "gtpu_packets_total" {
			w := map[string]uint64{"uplink": ulPkts, "downlink": dlPkts}[m.Labels["direction"]]
			if m.Value != float64(w) {
				r.t.Errorf("gtpu_packets_total %v = %v, want %d", m.Labels, m.Value, w)
			}
		}
	}
	if r.t.Failed() {
		r.t.FailNow()
	}
}

func TestTrafficCountersSurviveFoldsAndRestarts(t *testing.T) {
	r, s := drainRig(t)
	r.wantTraffic(2, 3)
	// a replaced rule, with a packet in flight, drains and is folded
	old := r.retargetDownlink(s, 0x9001)
	r.countInFlight(old)
	r.downlink(2)
	r.wantTraffic(2, 6)
	r.drainNow()
	if len(r.ctl.drain.rules) != 0 {
		t.Fatal("the replaced rule was not folded")
	}
	r.wantTraffic(2, 6)
	// killed half-way through a fold: the restart folds the rule again,
	// and not into the traffic counters
	r.killedMidFold(s, 0x9002)
	r.restart()
	r.wantTraffic(2, 7)
	r.downlink(1)
	r.restart()
	r.wantTraffic(2, 8)
}

func TestTrafficCountersReset(t *testing.T) {
	r, s := drainRig(t)
	old := r.retargetDownlink(s, 0x9001)
	r.countInFlight(old) // draining: its counts are in the reset too
	if _, err := resetCounters(r.Handle(), r.Model, nil); err != nil {
		t.Fatal(err)
	}
	r.wantTraffic(0, 0)
	r.downlink(1)
	r.drainNow()
	r.wantTraffic(0, 1)
	r.restart()
	r.wantTraffic(0, 1)
	// the URR's usage is not the counters': unchanged by the reset
	wantUsed(t, r.used(1, 1), 2, 5)
}

// An upgrade from the version whose fast path counted the traffic in
// upf_stats (and whose blocks held both directions: the array is new and
// empty, without the mark; upf_urr_rep has no traffic record): the counts
// carry over.
func TestTrafficCountersCarriedOverFromUpfStats(t *testing.T) {
	r, _ := drainRig(t)
	cpus, err := ebpf.PossibleCPU()
	if err != nil {
		t.Fatal(err)
	}
	r.resetBlocks()
	if err := r.ctl.maps.urrRep.Delete(totalRep); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
		t.Fatal(err)
	}
	// what the old fast path counted: 2 and 3 packets of 1000 octets
	for i, v := range []uint64{2, 2000, 3, 3000} {
		per := make([]uint64, cpus)
		per[cpus-1] = v
		if err := r.ctl.maps.stats.Put(uint32(i), per); err != nil {
			t.Fatal(err)
		}
	}
	r.restart()
	r.wantTraffic(2, 3)
	r.downlink(1)
	r.wantTraffic(2, 4)
}

// An upgrade that resets the blocks after a reset of the counters (the
// traffic record's Base is then the blocks' old sums): the counters restart
// from the new blocks instead of wrapping.
func TestTrafficCountersRestartAfterBlockReset(t *testing.T) {
	r, _ := drainRig(t)
	if _, err := resetCounters(r.Handle(), r.Model, nil); err != nil {
		t.Fatal(err)
	}
	r.downlink(1)
	r.resetBlocks()
	r.restart()
	r.wantTraffic(0, 0)
	r.downlink(1)
	r.wantTraffic(0, 1)
	// the restarted Base is kept: the next restart does not wrap either
	r.restart()
	r.wantTraffic(0, 1)
}

// resetBlocks leaves the counter array as an upgrade that changed its
// layout does: empty, without the mark.
func (r *rig) resetBlocks() {
	r.t.Helper()
	for _, s := range r.ctl.sessions {
		for _, rl := range s.rules {
			zeroCount(r.ctl.maps.ruleCount, rl.idx)
		}
	}
	if err := r.ctl.maps.ruleCount.Put(uint32(0), kBlock{}); err != nil {
		r.t.Fatal(err)
	}
}
