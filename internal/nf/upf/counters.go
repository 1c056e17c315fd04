package upf

import (
	"encoding/binary"
	"fmt"
	"unsafe"

	"github.com/cilium/ebpf"
)

// The rules' counter blocks (upf_rule_count): one plain array with a row of
// a block per rule for each possible CPU, block (cpu, rule) at
// cpu*rules+rule (rules: upf_rules' size, sizes.go).
// The fast path writes its CPU's block of the rule a packet matched: one
// cache line and one page, where a per-CPU array costs a pointer read and
// then the block, on two pages (at 100,000 sessions, a cache and a TLB miss
// less per packet; docs/nf/upf.md "Lookup structures"). A rule's count is
// the sum of its blocks over the rows. A rule is one direction, so a block
// is one pair of counters (kBlock), which goes into that direction's half
// of a kCount.

const mapRuleCount = "upf_rule_count"

// countMark is what the daemon writes in block 0 of the first row (rule
// index 0 is "none": no packet counts there) once it has adopted the
// array. An array without it is new: if the URRs' accounting (upf_urr_rep)
// was kept, an upgrade reset the blocks it was counted from (their layout
// changed), and the measurements restart from the empty blocks
// (usage.rebase) instead of reporting a wrapped difference.
var countMark = kBlock{Bytes: 0x7570665f636f756e, Pkts: 2} // "upf_coun", version 2 (16-octet blocks)

func hasCountMark(m *ebpf.Map) bool {
	var c kBlock
	return m.Lookup(uint32(0), &c) == nil && c == countMark
}

// countRow is how many blocks a row of m holds: the rules of the cube (the
// pinned map says: it was sized when it was created, for the machine's
// possible CPUs).
func countRow(m *ebpf.Map) uint32 {
	return m.MaxEntries() / countRows()
}

// countRows is how many CPU rows the counter array has.
func countRows() uint32 {
	cpus, err := ebpf.PossibleCPU()
	if err != nil || cpus < 1 {
		return 1
	}
	return uint32(cpus)
}

// readCount sums the blocks over the rows of rule idx, whose flags are
// flags (its direction: ruleUL), read through the array's memory mapping:
// one system call per CPU and rule would make a sessions view of 100,000
// sessions on a large machine take minutes. A block's counters are 8-octet
// aligned words, which the fast path writes whole.
func readCount(m *ebpf.Map, idx uint32, flags uint8) (kCount, error) {
	var c kCount
	row := countRow(m)
	if idx >= row {
		return c, fmt.Errorf("rule index %d out of range", idx)
	}
	mm, err := m.Memory()
	if err != nil {
		return c, fmt.Errorf("%s: %w", mapRuleCount, err)
	}
	dir := dirOf(flags)
	var b [countSize]byte
	for r := range countRows() {
		if _, err := mm.ReadAt(b[:], int64(r*row+idx)*int64(countSize)); err != nil {
			return kCount{}, err
		}
		c.Bytes[dir] += binary.NativeEndian.Uint64(b[0:])
		c.Pkts[dir] += binary.NativeEndian.Uint64(b[8:])
	}
	return c, nil
}

// dirOf is the half of a kCount that a rule with flags counts in: 0
// uplink, 1 downlink.
func dirOf(flags uint8) int {
	if flags&ruleUL != 0 {
		return 0
	}
	return 1
}

// countSize is the octets of a block (struct upf_count: TestLayouts).
const countSize = int(unsafe.Sizeof(kBlock{}))

// zeroCount clears rule idx's blocks, for the rule's next owner.
func zeroCount(m *ebpf.Map, idx uint32) {
	mm, err := m.Memory()
	row := countRow(m)
	if idx >= row || err != nil {
		return
	}
	var z [countSize]byte
	for r := range countRows() {
		_, _ = mm.WriteAt(z[:], int64(r*row+idx)*int64(countSize))
	}
}

// The packets and octets forwarded, by direction (the counters ul_packets,
// ul_bytes, dl_packets and dl_bytes), have no counters of their own in the
// fast path: the block of the packet's rule counts it already (a write and
// a cache line less per packet). They are the sum of every rule's blocks,
// live or draining, less the Base of the cube's traffic record: a kRep in
// upf_urr_rep under index totalRep, kept like a URR that every rule names.
// A rule freed after its drain has its counts taken out of that Base in the
// same fold, and update, as its URRs' (drain.go: FoldGen, so a daemon
// killed half-way through a fold counts no rule twice); a reset of the
// counters moves the Base to the blocks' sums. What upf_stats holds at
// these counters' indexes is added: an earlier version's fast path counted
// there, and an upgrade keeps them while it resets the blocks, so the
// counts carry over.
const totalRep uint32 = 0

// traffic is the cube's packets and octets forwarded, by direction, less
// those counted before the last reset (upf_stats' part not included).
func (ctl *controller) traffic() kCount {
	var c kCount
	add := func(idx uint32, flags uint8) {
		if x, err := readCount(ctl.maps.ruleCount, idx, flags); err == nil {
			addCount(&c, x)
		}
	}
	for _, sessions := range []map[uint64]*sessState{ctl.sessions, ctl.recovered} {
		for _, s := range sessions {
			for _, r := range s.rules {
				add(r.idx, r.v.Flags)
			}
		}
	}
	for idx, dr := range ctl.drain.rules {
		add(idx, dr.v.Flags)
	}
	subCount(&c, ctl.usage.total.Base)
	return c
}

// resetTraffic makes traffic zero from now on.
func (ctl *controller) resetTraffic() error {
	t := ctl.usage.total
	addCount(&t.Base, ctl.traffic())
	return ctl.maps.urrRep.Put(totalRep, t)
}

func subCount(a *kCount, b kCount) {
	for i := range 2 {
		a.Bytes[i] -= b.Bytes[i]
		a.Pkts[i] -= b.Pkts[i]
	}
}

func addCount(a *kCount, b kCount) {
	for i := range 2 {
		a.Bytes[i] += b.Bytes[i]
		a.Pkts[i] += b.Pkts[i]
	}
}
