package slicer

// The slicer's maps mirrored in Go: what Sync wants them to hold and what
// it last wrote, so that a change writes only the entries that differ, in
// an order that never sends a frame into a slice that does not claim it.

import (
	"errors"
	"fmt"

	"github.com/cilium/ebpf"
	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/datapath"
)

// bpfMap is what the controller does to one of the cube's maps (an
// *ebpf.Map).
type bpfMap interface {
	Put(key, value any) error
	Lookup(key, valueOut any) error
	Delete(key any) error
	Iterate() *ebpf.MapIterator
	BatchLookup(cursor *ebpf.MapBatchCursor, keysOut, valuesOut any, opts *ebpf.BatchOptions) (int, error)
}

// openMap gives the controller the cube's map name (tests count the
// writes through it).
var openMap = func(h cube.Handle, name string) (bpfMap, error) {
	m, err := h.Map(name)
	if err != nil {
		return nil, err
	}
	return m, nil
}

// arrayMirror is an array map: the values wanted, those written, and the
// indexes changed since the last write.
type arrayMirror[V comparable] struct {
	m          bpfMap
	want, have []V
	dirty      map[int]bool
}

func newArray[V comparable](m bpfMap, n int) *arrayMirror[V] {
	return &arrayMirror[V]{m: m, want: make([]V, n), have: make([]V, n), dirty: map[int]bool{}}
}

func (a *arrayMirror[V]) set(i int, v V) {
	a.want[i] = v
	a.dirty[i] = true
}

// read fills have with what the map holds.
func (a *arrayMirror[V]) read() error {
	keys := make([]uint32, len(a.have))
	var cursor ebpf.MapBatchCursor
	n, err := a.m.BatchLookup(&cursor, keys, a.have, nil)
	if err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
		return err
	}
	if n != len(a.have) {
		return fmt.Errorf("read %d of %d entries", n, len(a.have))
	}
	return nil
}

// drop zeroes the changed entries at indexes lo..hi-1 that go or will
// point elsewhere.
func (a *arrayMirror[V]) drop(lo, hi int) error {
	var zero V
	for i := range a.dirty {
		if i < lo || i >= hi || a.have[i] == zero || a.want[i] == a.have[i] {
			continue
		}
		if err := a.m.Put(uint32(i), zero); err != nil {
			return err
		}
		a.have[i] = zero
	}
	return nil
}

// write writes the changed entries at indexes lo..hi-1.
func (a *arrayMirror[V]) write(lo, hi int) error {
	for i := range a.dirty {
		if i < lo || i >= hi || a.want[i] == a.have[i] {
			continue
		}
		if err := a.m.Put(uint32(i), a.want[i]); err != nil {
			return err
		}
		a.have[i] = a.want[i]
	}
	return nil
}

// settle forgets the changed indexes: every one is written.
func (a *arrayMirror[V]) settle() { clear(a.dirty) }

// all marks every index changed (a rebuild).
func (a *arrayMirror[V]) all() {
	for i := range a.want {
		a.dirty[i] = true
	}
}

// hashMirror is a hash or LPM map: the entries wanted, those written, and
// the keys changed since the last write.
type hashMirror[K comparable] struct {
	m          bpfMap
	want, have map[K]uint32
	dirty      map[K]bool
}

func newHash[K comparable](m bpfMap) *hashMirror[K] {
	return &hashMirror[K]{m: m, want: map[K]uint32{}, have: map[K]uint32{}, dirty: map[K]bool{}}
}

func (h *hashMirror[K]) set(k K, id uint32) {
	h.want[k] = id
	h.dirty[k] = true
}

func (h *hashMirror[K]) del(k K) {
	delete(h.want, k)
	h.dirty[k] = true
}

func (h *hashMirror[K]) read() error {
	var k K
	var v uint32
	it := h.m.Iterate()
	for it.Next(&k, &v) {
		h.have[k] = v
	}
	return it.Err()
}

// drop deletes the changed entries that go or will point elsewhere.
func (h *hashMirror[K]) drop() error {
	for k := range h.dirty {
		have, ok := h.have[k]
		if want, still := h.want[k]; !ok || (still && want == have) {
			continue
		}
		if err := h.m.Delete(k); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
			return err
		}
		delete(h.have, k)
	}
	return nil
}

// add writes the changed entries wanted and not written, and forgets the
// changed keys.
func (h *hashMirror[K]) add() error {
	for k := range h.dirty {
		want, ok := h.want[k]
		if have, was := h.have[k]; !ok || (was && have == want) {
			continue
		}
		if err := h.m.Put(k, want); err != nil {
			return err
		}
		h.have[k] = want
	}
	clear(h.dirty)
	return nil
}

// all marks every key wanted or written changed (a rebuild).
func (h *hashMirror[K]) all() {
	for k := range h.want {
		h.dirty[k] = true
	}
	for k := range h.have {
		h.dirty[k] = true
	}
}

// reset forgets what is wanted, every entry written becoming changed.
func (h *hashMirror[K]) reset() {
	clear(h.want)
	h.all()
}

// maps are the slicer's maps as the controller writes them.
type maps struct {
	config  bpfMap
	conf    cfgVal // sl_config as written
	slices  *arrayMirror[sliceVal]
	ports   *arrayMirror[uint32]
	vlan    *arrayMirror[uint32]
	dscp    *arrayMirror[uint32]
	l4      *hashMirror[l4Key]
	lpm     [pfxFields]*hashMirror[lpmKey] // sl_src, sl_dst, sl_ue
	teid    *hashMirror[teidKey]
	pfx4    *hashMirror[pfx4Key]
	pfx6    *hashMirror[pfx6Key]
	arrays  []interface{ all() }
	readers []interface{ read() error }
}

// openMaps opens the cube's maps and reads what they hold: a new
// controller (a new cube, or a restarted daemon adopting the pinned maps)
// knows nothing of what was written before it.
func openMaps(h cube.Handle) (*maps, error) {
	var ms maps
	open := map[string]bpfMap{}
	for _, n := range []string{"sl_config", "sl_slices", "sl_ports", "sl_vlan", "sl_dscp", "sl_l4", "sl_src", "sl_dst", "sl_ue", "sl_teid", "sl_pfx4", "sl_pfx6"} {
		m, err := openMap(h, n)
		if err != nil {
			return nil, err
		}
		open[n] = m
	}
	ms.config = open["sl_config"]
	ms.slices = newArray[sliceVal](open["sl_slices"], slMax)
	ms.ports = newArray[uint32](open["sl_ports"], 2*datapath.MaxPorts)
	ms.vlan = newArray[uint32](open["sl_vlan"], 4096)
	ms.dscp = newArray[uint32](open["sl_dscp"], 64)
	ms.l4 = newHash[l4Key](open["sl_l4"])
	for f, n := range [pfxFields]string{pfxSrc: "sl_src", pfxDst: "sl_dst", pfxUE: "sl_ue"} {
		ms.lpm[f] = newHash[lpmKey](open[n])
	}
	ms.teid = newHash[teidKey](open["sl_teid"])
	ms.pfx4 = newHash[pfx4Key](open["sl_pfx4"])
	ms.pfx6 = newHash[pfx6Key](open["sl_pfx6"])
	ms.arrays = []interface{ all() }{ms.slices, ms.ports, ms.vlan, ms.dscp}
	ms.readers = []interface{ read() error }{ms.slices, ms.ports, ms.vlan, ms.dscp, ms.l4, ms.lpm[0], ms.lpm[1], ms.lpm[2], ms.teid, ms.pfx4, ms.pfx6}
	for _, r := range ms.readers {
		if err := r.read(); err != nil {
			return nil, err
		}
	}
	if err := ms.config.Lookup(uint32(0), &ms.conf); err != nil {
		return nil, fmt.Errorf("sl_config: %w", err)
	}
	return &ms, nil
}

// clearWant forgets every entry wanted: a rebuild from the cube.
func (ms *maps) clearWant() {
	clear(ms.slices.want)
	clear(ms.ports.want)
	clear(ms.vlan.want)
	clear(ms.dscp.want)
	for _, h := range []interface{ reset() }{ms.l4, ms.lpm[0], ms.lpm[1], ms.lpm[2], ms.teid, ms.pfx4, ms.pfx6} {
		h.reset()
	}
	for _, a := range ms.arrays {
		a.all()
	}
}

// write writes what changed, in an order that keeps every frame in a
// slice that claims it in the old or the new contents, whatever write a
// crash stops at (a restart then reads the maps and writes the rest):
//
//  1. rule entries that go or will point at another slice are deleted, and
//     sl_config stops naming slices that change (its default slice and the
//     IPv4 prefixes it lists inline: those fields fall back to the trie);
//  2. the slices themselves (sl_slices, and the slice of each slicer port
//     into a chain): a slice id that changes hands has no rule left
//     pointing at it;
//  3. the new rule entries;
//  4. sl_config: kinds, default slice, prefix lengths and inline prefixes
//     (last: a length is looked up only once its prefixes are in).
func (ms *maps) write(conf cfgVal) error {
	rules := []interface{ drop() error }{ms.l4, ms.lpm[0], ms.lpm[1], ms.lpm[2], ms.teid, ms.pfx4, ms.pfx6}
	for _, h := range rules {
		if err := h.drop(); err != nil {
			return err
		}
	}
	for _, a := range []*arrayMirror[uint32]{ms.vlan, ms.dscp} {
		if err := a.drop(0, len(a.want)); err != nil {
			return err
		}
	}
	if err := ms.ports.drop(0, datapath.MaxPorts); err != nil {
		return err
	}
	if interim := ms.conf.without(conf); interim != ms.conf {
		if err := ms.putConfig(interim); err != nil {
			return err
		}
	}
	ms.leaseGens()
	if err := ms.slices.write(0, len(ms.slices.want)); err != nil {
		return err
	}
	ms.slices.settle()
	if err := ms.ports.write(datapath.MaxPorts, 2*datapath.MaxPorts); err != nil {
		return err
	}
	for _, a := range []*arrayMirror[uint32]{ms.ports, ms.vlan, ms.dscp} {
		if err := a.write(0, len(a.want)); err != nil {
			return err
		}
		a.settle()
	}
	for _, h := range []interface{ add() error }{ms.l4, ms.lpm[0], ms.lpm[1], ms.lpm[2], ms.teid, ms.pfx4, ms.pfx6} {
		if err := h.add(); err != nil {
			return err
		}
	}
	if conf != ms.conf {
		return ms.putConfig(conf)
	}
	return nil
}

func (ms *maps) putConfig(c cfgVal) error {
	if err := ms.config.Put(uint32(0), c); err != nil {
		return fmt.Errorf("sl_config: %w", err)
	}
	ms.conf = c
	return nil
}

// without is sl_config c while it changes to next: what names a slice
// (the default slice, the inline IPv4 prefixes) only where c and next
// agree; a field whose inline prefixes differ is looked up in its trie.
func (c cfgVal) without(next cfgVal) cfgVal {
	out := c
	if c.DefaultSlice != next.DefaultSlice {
		out.DefaultSlice = 0
	}
	for f := range c.Inline4 {
		if c.NLens[f][0] == lensInline && (next.NLens[f][0] != lensInline || c.Inline4[f] != next.Inline4[f]) {
			out.NLens[f][0] = lensTrie
			out.Inline4[f] = [maxInline]inline4{}
		}
	}
	return out
}

// leaseGens carries each changed slice id's lease generation over from
// sl_slices, and moves it on for every id whose policers changed (or that
// another slice took over): the per-CPU credit leased under the old limits
// is then void (slicer.bpf.c: sl_police). A restarted daemon reads the
// generations from the pinned map, so only a change moves them on.
func (ms *maps) leaseGens() {
	for id := range ms.slices.dirty {
		o, n := ms.slices.have[id], &ms.slices.want[id]
		n.LeaseGen = o.LeaseGen
		if o.ByteCost != n.ByteCost || o.ByteTau != n.ByteTau || o.ByteLease != n.ByteLease ||
			o.PktCost != n.PktCost || o.PktTau != n.PktTau || o.PktLease != n.PktLease || o.Port != n.Port || o.Flags != n.Flags {
			n.LeaseGen++
		}
	}
}
