package upf

import (
	"encoding/binary"
	"fmt"
	"unsafe"

	"github.com/cilium/ebpf"
)

// The rules' counter blocks (upf_rule_count): one plain array with a row of
// maxRules blocks per possible CPU, block (cpu, rule) at cpu*maxRules+rule.
// The fast path writes its CPU's block of the rule a packet matched: one
// cache line and one page, where a per-CPU array costs a pointer read and
// then the block, on two pages (at 100,000 sessions, a cache and a TLB miss
// less per packet; docs/nf/upf.md "Lookup structures"). A rule's count is
// the sum of its blocks over the rows.

const mapRuleCount = "upf_rule_count"

// countMark is what the daemon writes in block 0 of the first row (rule
// index 0 is "none": no packet counts there) once it has adopted the
// array. An array without it is new: if the URRs' accounting (upf_urr_rep)
// was kept, an upgrade reset the blocks it was counted from (their layout
// changed), and the measurements restart from the empty blocks
// (usage.rebase) instead of reporting a wrapped difference.
var countMark = kCount{Bytes: [2]uint64{0x7570665f636f756e, 1}} // "upf_coun", version 1

func hasCountMark(m *ebpf.Map) bool {
	var c kCount
	return m.Lookup(uint32(0), &c) == nil && c == countMark
}

// sizeMaps gives upf_rule_count its row per possible CPU (cube.Type.SizeMaps).
func sizeMaps(spec *ebpf.CollectionSpec) error {
	ms, ok := spec.Maps[mapRuleCount]
	if !ok {
		return fmt.Errorf("the object has no %s", mapRuleCount)
	}
	if ms.MaxEntries != maxRules {
		return fmt.Errorf("%s holds %d blocks, not one row of %d: sized already", mapRuleCount, ms.MaxEntries, maxRules)
	}
	cpus, err := ebpf.PossibleCPU()
	if err != nil {
		return err
	}
	if cpus < 1 || cpus > 1<<32/maxRules-1 {
		return fmt.Errorf("%d possible CPUs: the counter rows need 1 to %d", cpus, 1<<32/maxRules-1)
	}
	ms.MaxEntries = uint32(cpus) * maxRules
	return nil
}

// countRows is how many CPU rows m has (the pinned map says: it was sized
// when it was created).
func countRows(m *ebpf.Map) uint32 {
	return m.MaxEntries() / maxRules
}

// readCount sums rule idx's blocks over the rows, read through the array's
// memory mapping: one system call per CPU and rule would make a sessions
// view of 100,000 sessions on a large machine take minutes. A block's
// counters are 8-octet aligned words, which the fast path writes whole.
func readCount(m *ebpf.Map, idx uint32) (kCount, error) {
	var c kCount
	if idx >= maxRules {
		return c, fmt.Errorf("rule index %d out of range", idx)
	}
	mm, err := m.Memory()
	if err != nil {
		return c, fmt.Errorf("%s: %w", mapRuleCount, err)
	}
	var b [countSize]byte
	for row := range countRows(m) {
		if _, err := mm.ReadAt(b[:], int64(row*maxRules+idx)*int64(countSize)); err != nil {
			return kCount{}, err
		}
		addCount(&c, kCount{
			Bytes: [2]uint64{binary.NativeEndian.Uint64(b[0:]), binary.NativeEndian.Uint64(b[8:])},
			Pkts:  [2]uint64{binary.NativeEndian.Uint64(b[16:]), binary.NativeEndian.Uint64(b[24:])},
		})
	}
	return c, nil
}

// countSize is the octets of a block (struct upf_count: TestLayouts).
const countSize = int(unsafe.Sizeof(kCount{}))

// zeroCount clears rule idx's blocks, for the rule's next owner.
func zeroCount(m *ebpf.Map, idx uint32) {
	mm, err := m.Memory()
	if idx >= maxRules || err != nil {
		return
	}
	var z [countSize]byte
	for row := range countRows(m) {
		_, _ = mm.WriteAt(z[:], int64(row*maxRules+idx)*int64(countSize))
	}
}

func addCount(a *kCount, b kCount) {
	for i := range 2 {
		a.Bytes[i] += b.Bytes[i]
		a.Pkts[i] += b.Pkts[i]
	}
}
