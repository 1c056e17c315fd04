package upf

import (
	"strings"
	"testing"

	"github.com/cilium/ebpf"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/datapath"
)

// TestCounterBlocksOneRowPerCPU: the counter array is sized at load to a
// row per possible CPU, a packet lands in its CPU's row only (the rule's
// blocks of the other rows stay zero), a block is the rule's direction's
// counters only (16 octets), and the rule's count is the sum, in its
// direction.
func TestCounterBlocksOneRowPerCPU(t *testing.T) {
	for _, hook := range []datapath.Hook{datapath.XDP, datapath.TC} {
		t.Run(string(hook), func(t *testing.T) {
			cpus, err := ebpf.PossibleCPU()
			if err != nil {
				t.Fatal(err)
			}
			r := newRig(t, hook, basicSession(1, 0x100, "198.19.0.5", "", 0x9000))
			m := r.ctl.maps.ruleCount
			if got, want := m.MaxEntries(), uint32(cpus)*defaultRuleRow; got != want {
				t.Fatalf("%s holds %d blocks, want %d (%d CPUs × %d rules)", mapRuleCount, got, want, cpus, defaultRuleRow)
			}
			r.downlink(3)
			idx := r.ctl.sessions[1].rules[ruleKey{PDR: 2}].idx
			per := blocks(t, m, idx)
			if countSize != 16 {
				t.Fatalf("a counter block is %d octets, want 16 (one direction)", countSize)
			}
			rows := 0
			var sum kBlock
			for _, c := range per {
				if c != (kBlock{}) {
					rows++
				}
				sum.Bytes += c.Bytes
				sum.Pkts += c.Pkts
			}
			// test runs on one thread may still move between CPUs
			if rows == 0 || rows > 3 {
				t.Fatalf("the rule's blocks of %d rows counted: %+v", rows, per)
			}
			if want := (kBlock{Bytes: 3000, Pkts: 3}); sum != want {
				t.Fatalf("rule counted %+v over its rows, want %+v", sum, want)
			}
			want := kCount{Bytes: [2]uint64{0, 3000}, Pkts: [2]uint64{0, 3}}
			if got, err := readCount(m, idx, r.ctl.sessions[1].rules[ruleKey{PDR: 2}].v.Flags); err != nil || got != want {
				t.Fatalf("readCount = %+v, %v; want %+v", got, err, want)
			}
			// the uplink rule's blocks are untouched by downlink packets
			ul := r.ctl.sessions[1].rules[ruleKey{PDR: 1}]
			if got, _ := readCount(m, ul.idx, ul.v.Flags); got != (kCount{}) {
				t.Fatalf("uplink rule counted %+v", got)
			}
		})
	}
}

// TestSizeMapsOnce: an object is sized once; sizing it again (the rows
// multiplied twice) is refused, as is an object without the counter array.
func TestSizeMapsOnce(t *testing.T) {
	obj, err := Type.Object(datapath.XDP)
	if err != nil {
		t.Fatal(err)
	}
	c := &cube.Cube{Name: "u", Type: "upf"}
	spec, err := Type.SpecOf(c, obj)
	if err != nil {
		t.Fatal(err)
	}
	if err := sizeMaps(c, spec); err == nil || !strings.Contains(err.Error(), "sized already") {
		t.Fatalf("sizing twice: %v", err)
	}
	delete(spec.Maps, mapRuleCount)
	if err := sizeMaps(c, spec); err == nil || !strings.Contains(err.Error(), "no "+mapRuleCount) {
		t.Fatalf("no counter array: %v", err)
	}
}

// TestUsageRestartsAfterCounterReset: an upgrade that changes the counter
// array's layout resets it (internal/datapath/upgrade.go) and keeps the
// URRs' accounting (upf_urr_rep), whose base is not zero after a report.
// The restarted controller restarts those measurements from the empty
// blocks instead of reporting the wrapped difference, says so in its
// counters, and counts on exactly.
func TestUsageRestartsAfterCounterReset(t *testing.T) {
	r, _ := drainRig(t)
	wantUsed(t, r.used(1, 1), 2, 3)
	// a report: the measurement's base is now the counters' 2+3 packets
	r.ctl.mu.Lock()
	rep, ok := r.ctl.usage.report(r.ctl, r.ctl.sessions[1].urrs[1].idx, 0)
	r.ctl.mu.Unlock()
	if !ok || rep.Volume == nil || rep.Volume.DLPkts != 3 {
		t.Fatalf("report %+v, %v", rep, ok)
	}
	r.downlink(1)
	wantUsed(t, r.used(1, 1), 0, 1)
	r.resetBlocks()
	r.restart()
	wantUsed(t, r.used(1, 1), 0, 0)
	var reset uint64
	for _, c := range r.ctl.counters() {
		if c.Name == "urr_usage_reset" {
			reset = c.Value
		}
	}
	if reset != 1 {
		t.Fatalf("urr_usage_reset = %d, want 1", reset)
	}
	r.downlink(2)
	wantUsed(t, r.used(1, 1), 0, 2)
	// a plain restart restarts nothing
	r.restart()
	wantUsed(t, r.used(1, 1), 0, 2)
	for _, c := range r.ctl.counters() {
		if c.Name == "urr_usage_reset" && c.Value != 0 {
			t.Fatalf("a plain restart: urr_usage_reset = %d", c.Value)
		}
	}
}
