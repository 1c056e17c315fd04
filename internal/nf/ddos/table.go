package ddos

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"

	"github.com/cilium/ebpf"
)

// The table of exact IPv4 sources (dd_src_tab, dd_src_tabv in ddos.bpf.c):
// open addressing over an array of slots, with the entries in a second
// array. The fast path looks it up with inlined array accesses only (a hash
// map lookup costs four kernel calls). An address that finds no free slot
// within tabProbes of its home goes to dd_src_exact instead, as IPv6 ones.
const (
	tabSlots   = 1 << 21
	tabProbes  = 8
	tabMult    = 0x9E3779B1
	tabDeleted = ^uint64(0)
	mapTab     = "dd_src_tab"
	mapTabVals = "dd_src_tabv"
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

// table mirrors the two maps; the controller's lock guards it.
type table struct {
	seed  uint32
	slots []uint64          // nil until the first address (16 MB)
	where map[uint32]uint32 // address (as the fast path loads it) → slot
	free  []uint32          // entry indexes given back, below next
	next  uint32            // entry indexes from next up were never used
}

// tabAddr is an IPv4 address as the fast path loads it from the header: the
// network-order bytes read as a little-endian word.
func tabAddr(a netip.Addr) uint32 {
	b := a.As4()
	return binary.LittleEndian.Uint32(b[:])
}

// tabKey16 is the dd_src_exact key of a table address.
func tabKey16(a uint32) addrKey {
	var b [4]byte
	binary.LittleEndian.PutUint32(b[:], a)
	return key16(netip.AddrFrom4(b))
}

func (t *table) home(a uint32) uint32 { return ((a ^ t.seed) * tabMult) >> 11 }

// loadTable reads the table back from the maps (pinned, they outlive the
// daemon), or starts an empty one. The seed of the slots' hash is kept in
// the table's own maps (entry MaxEntries of dd_src_tabv; the fast path reads
// the copy in dd_cfg): 0 there means new maps, hence an empty table.
func loadTable(h mapper) (*table, error) {
	vm, err := h.Map(mapTabVals)
	if err != nil {
		return nil, err
	}
	var sv tabEntry
	if err := vm.Lookup(uint32(MaxEntries), &sv); err != nil {
		return nil, fmt.Errorf("%s: %w", mapTabVals, err)
	}
	t := &table{seed: uint32(sv.Expires), where: map[uint32]uint32{}}
	if t.seed == 0 {
		b := make([]byte, 4)
		for t.seed == 0 {
			if _, err := rand.Read(b); err != nil {
				return nil, err
			}
			t.seed = binary.LittleEndian.Uint32(b)
		}
		if err := vm.Put(uint32(MaxEntries), tabEntry{Expires: uint64(t.seed)}); err != nil {
			return nil, fmt.Errorf("%s: %w", mapTabVals, err)
		}
		return t, nil
	}
	m, err := h.Map(mapTab)
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
			return nil, fmt.Errorf("%s: %w", mapTab, err)
		}
	}
	used := make([]bool, MaxEntries)
	for i, v := range t.slots {
		if v == 0 || v == tabDeleted {
			continue
		}
		idx := uint32(v>>32) - 1
		if idx >= MaxEntries || used[idx] {
			return nil, fmt.Errorf("%s: slot %d: bad entry index %d", mapTab, i, idx)
		}
		used[idx] = true
		t.where[uint32(v)] = uint32(i)
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

func (t *table) has(a uint32) bool { _, ok := t.where[a]; return ok }

// index returns the entry index of a, if present.
func (t *table) index(a uint32) (uint32, bool) {
	s, ok := t.where[a]
	if !ok {
		return 0, false
	}
	return uint32(t.slots[s]>>32) - 1, true
}

// add inserts addresses (none present) with their deadlines, in batches:
// the entries first, then the slots that point to them. It returns the
// indexes (into as) of the addresses that found no free slot within
// tabProbes of their home, or no free entry.
func (t *table) add(h mapper, as []uint32, exps []uint64) ([]int, error) {
	var over []int
	var slots, idxs []uint32
	if t.slots == nil && len(as) > 0 {
		t.slots = make([]uint64, tabSlots)
	}
	var svals []uint64
	var evals []tabEntry
	for n, a := range as {
		placed := false
		home := t.home(a)
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
			v := uint64(a) | uint64(idx+1)<<32
			t.slots[s] = v
			t.where[a] = s
			slots, svals = append(slots, s), append(svals, v)
			idxs, evals = append(idxs, idx), append(evals, tabEntry{Expires: exps[n]})
			placed = true
			break
		}
		if !placed {
			over = append(over, n)
		}
	}
	if len(slots) == 0 {
		return over, nil
	}
	vm, err := h.Map(mapTabVals)
	if err != nil {
		return nil, err
	}
	sm, err := h.Map(mapTab)
	if err != nil {
		return nil, err
	}
	if err := putBatch(vm, idxs, evals); err != nil {
		return nil, fmt.Errorf("%s: %w", mapTabVals, err)
	}
	if err := putBatch(sm, slots, svals); err != nil {
		return nil, fmt.Errorf("%s: %w", mapTab, err)
	}
	return over, nil
}

// setExpiry changes the deadline of a present entry, keeping its counters.
func (t *table) setExpiry(h mapper, a uint32, expires uint64) error {
	idx, _ := t.index(a)
	vals, err := h.Map(mapTabVals)
	if err != nil {
		return err
	}
	var v tabEntry
	if err := vals.Lookup(idx, &v); err != nil {
		return fmt.Errorf("%s: %w", mapTabVals, err)
	}
	if v.Expires == expires {
		return nil
	}
	v.Expires = expires
	if err := vals.Put(idx, v); err != nil {
		return fmt.Errorf("%s: %w", mapTabVals, err)
	}
	return nil
}

// remove deletes a; false when absent. The slot is marked deleted (probe
// sequences go on past it); its entry index is reused by a later insert (a
// packet that read the slot just before the delete may still count on the
// entry: the same kind of race as keeping counters across a rewrite).
func (t *table) remove(h mapper, a uint32) (bool, error) {
	s, ok := t.where[a]
	if !ok {
		return false, nil
	}
	slots, err := h.Map(mapTab)
	if err != nil {
		return false, err
	}
	if err := slots.Put(s, tabDeleted); err != nil {
		return false, fmt.Errorf("%s: %w", mapTab, err)
	}
	t.free = append(t.free, uint32(t.slots[s]>>32)-1)
	t.slots[s] = tabDeleted
	delete(t.where, a)
	return true, nil
}

// entry reads the entry of a present address.
func (t *table) entry(h mapper, a uint32, v *entryVal) error {
	idx, ok := t.index(a)
	if !ok {
		return ebpf.ErrKeyNotExist
	}
	vals, err := h.Map(mapTabVals)
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

// inTable tells whether an entry of table tb is one the table may hold.
func inTable(tb string, p netip.Prefix) bool {
	return tb == "blacklist_src" && p.Addr().Is4() && isExact(p)
}
