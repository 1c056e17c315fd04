package ddos

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"sort"

	"github.com/cilium/ebpf"
	"github.com/edgenf/edgenf/internal/bpfmap"
)

// The IPv4 table of a blacklist (dd_{src,dst}_t4 and _t4v in ddos.bpf.c):
// open addressing over an array of slots keyed by (prefix length, masked
// address), with the entries in a second array. The fast path probes each
// prefix length in use, longest first, with inlined array accesses only
// (a hash map lookup costs four kernel calls, an LPM trie lookup one and its
// walk; each call and return costs ~10 ns on CPUs with return-stack
// mitigations). A table holds at most tabLens distinct lengths, listed in
// the settings. An entry that finds no free slot within tabProbes of its
// home, or whose length finds no room in the list, goes to the blacklist's
// IPv4 fallback trie (dd_{src,dst}_lpm4) instead.
const (
	tabSlots   = 1 << 21
	tabProbes  = 8
	tabMult    = 0x9E3779B1
	tabLenMult = 0x85EBCA77 // mixes the length into a length's seed
	tabLens    = 16
	tabDeleted = ^uint64(0)
)

// mapper gives the cube's maps (a cube.Handle).
type mapper interface {
	Map(name string) (*ebpf.Map, error)
}

// tabEntry is an entry of the table (struct dd_tab_entry): its counters are
// the folded ones plus the recent ones packed in one word.
type tabEntry struct {
	Expires uint64
	Recent  uint64 // packets << recShift | bytes, since the last fold
	Packets uint64
	Bytes   uint64
}

const recShift = 44

// entry returns the entry as the other maps hold it.
func (v tabEntry) entry() entryVal {
	return entryVal{Expires: v.Expires, Packets: v.Packets + v.Recent>>recShift,
		Bytes: v.Bytes + v.Recent&(1<<recShift-1)}
}

// tabKey is an IPv4 prefix as the table keys it: its tag (length + 1) << 32
// | the masked address as the fast path loads it from the header (the
// network-order bytes read as a little-endian word).
type tabKey uint64

func keyOf(p netip.Prefix) tabKey {
	b := p.Masked().Addr().As4()
	return tabKey(uint64(p.Bits()+1)<<32 | uint64(binary.LittleEndian.Uint32(b[:])))
}

func (k tabKey) bits() int { return int(k>>32) - 1 }

// A slot (see ddos.bpf.c): the masked address in bits 32..63, the tag in
// bits 24..31, 1 + the entry's index in bits 0..23.
func slotOf(k tabKey, idx uint32) uint64 {
	return uint64(uint32(k))<<32 | (uint64(k)>>32)<<24 | uint64(idx+1)
}

func slotKey(v uint64) tabKey { return tabKey((v>>24&0xff)<<32 | v>>32) }

func slotIdx(v uint64) uint32 { return uint32(v&(1<<24-1)) - 1 }

func (k tabKey) addr() [4]byte {
	var b [4]byte
	binary.LittleEndian.PutUint32(b[:], uint32(k))
	return b
}

func (k tabKey) prefix() netip.Prefix { return netip.PrefixFrom(netip.AddrFrom4(k.addr()), k.bits()) }

// lpm4Key is the fallback trie's key (struct dd_lpm4_key).
func (k tabKey) lpm4() lpm4Key { return lpm4Key{Prefixlen: uint32(k.bits()), Addr: k.addr()} }

type lpm4Key struct {
	Prefixlen uint32
	Addr      [4]byte `btf:"a"`
}

// entry4Val is a value of the fallback trie (struct dd_entry4).
type entry4Val struct {
	entryVal
	Len uint32
	Pad uint32
}

func (v entry4Val) entry() entryVal { return v.entryVal }

// The table's lengths in the settings (struct dd_tab_cfg).
type tabLenCfg struct{ Tag, Seed uint32 }

type tabCfg struct {
	N    uint32
	Pad  uint32
	Lens [tabLens]tabLenCfg
}

// table mirrors the two maps of a blacklist; the controller's lock guards
// it.
type table struct {
	slotsMap, valsMap string
	seed              uint32
	slots             []uint64          // nil until the first entry (16 MB)
	where             map[tabKey]uint32 // key → slot
	lens              [33]int           // entries per prefix length
	free              []uint32          // entry indexes given back, below next
	next              uint32            // entry indexes from next up were never used
}

// lenSeed is the seed of the slots' hash for one prefix length (different
// lengths of one address go to different homes).
func (t *table) lenSeed(bits int) uint32 { return t.seed ^ uint32(bits+1)*tabLenMult }

func (t *table) home(k tabKey) uint32 { return ((uint32(k) ^ t.lenSeed(k.bits())) * tabMult) >> 11 }

// loadTable reads a table back from its maps (pinned, they outlive the
// daemon), or starts an empty one. The seed of the slots' hash is kept in
// the table's own maps (entry MaxEntries of the values; the fast path reads
// the per-length seeds in dd_cfg): 0 there means new maps, hence an empty
// table.
func loadTable(h mapper, slotsMap, valsMap string) (*table, error) {
	vm, err := h.Map(valsMap)
	if err != nil {
		return nil, err
	}
	var sv tabEntry
	if err := vm.Lookup(uint32(MaxEntries), &sv); err != nil {
		return nil, fmt.Errorf("%s: %w", valsMap, err)
	}
	t := &table{slotsMap: slotsMap, valsMap: valsMap, seed: uint32(sv.Expires), where: map[tabKey]uint32{}}
	if t.seed == 0 {
		b := make([]byte, 4)
		for t.seed == 0 {
			if _, err := rand.Read(b); err != nil {
				return nil, err
			}
			t.seed = binary.LittleEndian.Uint32(b)
		}
		if err := vm.Put(uint32(MaxEntries), tabEntry{Expires: uint64(t.seed)}); err != nil {
			return nil, fmt.Errorf("%s: %w", valsMap, err)
		}
		return t, nil
	}
	m, err := h.Map(slotsMap)
	if err != nil {
		return nil, err
	}
	t.slots = make([]uint64, tabSlots)
	keys := make([]uint32, 65536)
	vals := make([]uint64, 65536)
	var cursor ebpf.MapBatchCursor
	for {
		n, err := m.BatchLookup(&cursor, keys, vals, nil)
		for i := 0; i < n; i++ {
			if keys[i] < tabSlots {
				t.slots[keys[i]] = vals[i]
			}
		}
		if errors.Is(err, ebpf.ErrKeyNotExist) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", slotsMap, err)
		}
	}
	used := make([]bool, MaxEntries)
	for i, v := range t.slots {
		if v == 0 || v == tabDeleted {
			continue
		}
		idx, k := slotIdx(v), slotKey(v)
		if idx >= MaxEntries || used[idx] || k.bits() < 0 || k.bits() > 32 {
			return nil, fmt.Errorf("%s: slot %d: bad slot %#x", slotsMap, i, v)
		}
		used[idx] = true
		t.where[k] = uint32(i)
		t.lens[k.bits()]++
		t.next = max(t.next, idx+1)
	}
	for i := uint32(0); i < t.next; i++ {
		if !used[i] {
			t.free = append(t.free, i)
		}
	}
	if len(t.where) == 0 {
		t.slots = nil
	}
	return t, nil
}

func (t *table) len() int { return len(t.where) }

func (t *table) has(k tabKey) bool { _, ok := t.where[k]; return ok }

// nlens is the number of distinct lengths the table holds.
func (t *table) nlens() int {
	n := 0
	for _, c := range t.lens {
		if c > 0 {
			n++
		}
	}
	return n
}

// cfg lists the table's lengths, longest first, for the settings.
func (t *table) cfg() tabCfg {
	var c tabCfg
	for b := 32; b >= 0; b-- {
		if t.lens[b] > 0 && c.N < tabLens {
			c.Lens[c.N] = tabLenCfg{Tag: uint32(b + 1), Seed: t.lenSeed(b)}
			c.N++
		}
	}
	return c
}

// index returns the entry index of k, if present.
func (t *table) index(k tabKey) (uint32, bool) {
	s, ok := t.where[k]
	if !ok {
		return 0, false
	}
	return slotIdx(t.slots[s]), true
}

// add inserts keys (none present) with their entries (deadline, and the
// counters of an entry moved from elsewhere), in batches: the entries first,
// then the slots that point to them (the caller then lists new lengths in
// the settings). A new length takes one of the tabLens places in the list
// if one is free. It returns the indexes (into ks) of the keys that found
// no place: no room for their length, no free slot within tabProbes of their
// home, or no free entry.
func (t *table) add(h mapper, ks []tabKey, vs []tabEntry) ([]int, error) {
	var over []int
	var slots, idxs []uint32
	if t.slots == nil && len(ks) > 0 {
		t.slots = make([]uint64, tabSlots)
	}
	nl := t.nlens()
	var svals []uint64
	var evals []tabEntry
	for n, k := range ks {
		placed := false
		b := k.bits()
		if t.lens[b] > 0 || nl < tabLens {
			home := t.home(k)
			for i := uint32(0); i < tabProbes && (len(t.free) > 0 || t.next < MaxEntries); i++ {
				s := (home + i) & (tabSlots - 1)
				if v := t.slots[s]; v != 0 && v != tabDeleted {
					continue
				}
				var idx uint32
				if n := len(t.free); n > 0 {
					idx, t.free = t.free[n-1], t.free[:n-1]
				} else {
					idx, t.next = t.next, t.next+1
				}
				v := slotOf(k, idx)
				t.slots[s] = v
				t.where[k] = s
				if t.lens[b] == 0 {
					nl++
				}
				t.lens[b]++
				slots, svals = append(slots, s), append(svals, v)
				idxs, evals = append(idxs, idx), append(evals, vs[n])
				placed = true
				break
			}
		}
		if !placed {
			over = append(over, n)
		}
	}
	if len(slots) == 0 {
		return over, nil
	}
	vm, err := h.Map(t.valsMap)
	if err != nil {
		return nil, err
	}
	sm, err := h.Map(t.slotsMap)
	if err != nil {
		return nil, err
	}
	if err := bpfmap.Put(vm, idxs, evals); err != nil {
		return nil, fmt.Errorf("%s: %w", t.valsMap, err)
	}
	if err := bpfmap.Put(sm, slots, svals); err != nil {
		return nil, fmt.Errorf("%s: %w", t.slotsMap, err)
	}
	return over, nil
}

// setExpiry changes the deadline of a present entry, keeping its counters.
func (t *table) setExpiry(h mapper, k tabKey, expires uint64) error {
	idx, _ := t.index(k)
	vals, err := h.Map(t.valsMap)
	if err != nil {
		return err
	}
	var v tabEntry
	if err := vals.Lookup(idx, &v); err != nil {
		return fmt.Errorf("%s: %w", t.valsMap, err)
	}
	if v.Expires == expires {
		return nil
	}
	v.Expires = expires
	if err := vals.Put(idx, v); err != nil {
		return fmt.Errorf("%s: %w", t.valsMap, err)
	}
	return nil
}

// remove deletes k; false when absent. The slot is marked deleted (probe
// sequences go on past it); its entry index is reused by a later insert (a
// packet that read the slot just before the delete may still count on the
// entry: the same kind of race as keeping counters across a rewrite). The
// caller drops a length that became empty from the settings after.
func (t *table) remove(h mapper, k tabKey) (bool, error) {
	s, ok := t.where[k]
	if !ok {
		return false, nil
	}
	slots, err := h.Map(t.slotsMap)
	if err != nil {
		return false, err
	}
	if err := slots.Put(s, tabDeleted); err != nil {
		return false, fmt.Errorf("%s: %w", t.slotsMap, err)
	}
	t.free = append(t.free, slotIdx(t.slots[s]))
	t.slots[s] = tabDeleted
	t.lens[k.bits()]--
	delete(t.where, k)
	return true, nil
}

// entry reads the entry of a present key.
func (t *table) entry(h mapper, k tabKey, v *entryVal) error {
	idx, ok := t.index(k)
	if !ok {
		return ebpf.ErrKeyNotExist
	}
	vals, err := h.Map(t.valsMap)
	if err != nil {
		return err
	}
	var te tabEntry
	if err := vals.Lookup(idx, &te); err != nil {
		return err
	}
	*v = te.entry()
	return nil
}

// byLength orders keys to add so that the most common lengths come first
// (they take the places in the list of lengths first), longest first among
// equals.
func byLength(ks []tabKey, vs []tabEntry) {
	var count [33]int
	for _, k := range ks {
		count[k.bits()]++
	}
	sort.Sort(keysByLength{ks, vs, &count})
}

type keysByLength struct {
	ks    []tabKey
	vs    []tabEntry
	count *[33]int
}

func (s keysByLength) Len() int { return len(s.ks) }
func (s keysByLength) Less(i, j int) bool {
	bi, bj := s.ks[i].bits(), s.ks[j].bits()
	if s.count[bi] != s.count[bj] {
		return s.count[bi] > s.count[bj]
	}
	if bi != bj {
		return bi > bj
	}
	return s.ks[i] < s.ks[j]
}
func (s keysByLength) Swap(i, j int) {
	s.ks[i], s.ks[j] = s.ks[j], s.ks[i]
	s.vs[i], s.vs[j] = s.vs[j], s.vs[i]
}
