package datapath

// Shared interface programs (bpf/include/edgenf/cube.h: EDGENF_IFACE_MAPS).
// Every interface that takes frames into the framework at one hook and
// direction runs the same stub program, or the same direct entry of the
// cube its hop starts with; the program finds the interface's hop by the
// frame's ifindex: enf_if_slot (or enf_if_slot_hi) gives the interface's
// slot, enf_if_hops[slot] its hop and enf_if_stats[slot] its counters. So
// peering an interface writes a slot and links a program that is already
// loaded: the verifier runs once per hook and direction for the stub and
// once per cube and direction for a direct entry, not once per interface.
//
// Only the daemon writes these maps (pinned under its private root). Slot
// 0 is never given out, so an interface with no slot written reads an
// empty hop and its frames go on to Linux. A slot records the ifindex it
// was written for and the programs check it, so an ifindex entry left
// behind (an interface deleted while its slot was freed and given to
// another) delivers nothing; a detach clears both the slot and its ifindex
// entry, and a start frees the slots no interface record claims.

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/cilium/ebpf"
)

const (
	mapIfSlot   = "enf_if_slot"
	mapIfSlotHi = "enf_if_slot_hi"
	mapIfHops   = "enf_if_hops"
	mapIfStats  = "enf_if_stats"
	// maxIfindex and maxIfaces mirror EDGENF_MAX_IFINDEX and
	// EDGENF_MAX_IFACES.
	maxIfindex = 65536
	maxIfaces  = 2048
)

var ifaceMapNames = []string{mapIfSlot, mapIfSlotHi, mapIfHops, mapIfStats}

func isIfaceMap(name string) bool { return slices.Contains(ifaceMapNames, name) }

// ifaceEntry is struct edgenf_iface.
type ifaceEntry struct {
	Hop     Hop
	Ifindex uint32
}

// ifaceSet is what the interfaces of one hook and direction share: the
// stub program, the maps every interface program of them reads, and the
// direct entries loaded over those maps, by the id of the cube program.
type ifaceSet struct {
	d     *Datapath
	hook  Hook
	dir   Direction
	pdir  string
	maps  map[string]*ebpf.Map
	stub  *ebpf.Program
	reset []MapReset // the maps this start made anew (stubupgrade.go)

	mu      sync.Mutex
	used    map[uint32]bool
	entries map[uint32]*ebpf.Program
}

func (d *Datapath) ifaceSetDir(hook Hook, dir Direction) string {
	return filepath.Join(d.root, "ifprogs", fmt.Sprintf("%s_%s", hook, dir))
}

// ifaceSet returns the set of hook and dir, opened (or made) at first use.
func (d *Datapath) ifaceSet(hook Hook, dir Direction) (*ifaceSet, error) {
	d.setsMu.Lock()
	defer d.setsMu.Unlock()
	key := fmt.Sprintf("%s_%s", hook, dir)
	if s := d.sets[key]; s != nil {
		return s, nil
	}
	s, err := d.openIfaceSet(hook, dir)
	if err != nil {
		return nil, err
	}
	d.sets[key] = s
	return s, nil
}

func (d *Datapath) openIfaceSet(hook Hook, dir Direction) (*ifaceSet, error) {
	pdir := d.ifaceSetDir(hook, dir)
	if err := os.MkdirAll(pdir, 0o700); err != nil {
		return nil, err
	}
	spec, err := stubSpec(hook)
	if err != nil {
		return nil, err
	}
	reset, restore, drop, err := renewMaps(pdir, spec)
	if err != nil {
		return nil, fmt.Errorf("%s %s interface maps: %w", hook, dir, err)
	}
	s := &ifaceSet{d: d, hook: hook, dir: dir, pdir: pdir, maps: map[string]*ebpf.Map{}, reset: reset,
		used: map[uint32]bool{}, entries: map[uint32]*ebpf.Program{}}
	want := d.wantRecord(hook, nil)
	if have, ok := readRecord(filepath.Join(pdir, attachedPin)); ok && have.Cube == 0 && len(reset) == 0 &&
		have.Panel == want.Panel && have.Scratch == want.Scratch && have.Object == want.Object && want.Panel != 0 {
		// an earlier start's stub, over the same framework maps: kept, so
		// the interfaces that run it are adopted as they are
		if err := s.openPinned(); err == nil {
			drop()
			return s, s.claimSlots(d)
		}
		s.close()
		s.maps = map[string]*ebpf.Map{}
	}
	coll, err := d.loadCollection(spec, hook, pdir, nil, nil)
	if err != nil {
		restore()
		return nil, fmt.Errorf("load the %s %s stub: %w", hook, dir, err)
	}
	drop()
	defer coll.Close()
	if s.stub, err = coll.Programs[stubProgram].Clone(); err != nil {
		return nil, err
	}
	for _, n := range ifaceMapNames {
		if s.maps[n], err = coll.Maps[n].Clone(); err != nil {
			s.close()
			return nil, err
		}
	}
	os.Remove(filepath.Join(pdir, attachedPin))
	if err := repin(s.stub, filepath.Join(pdir, progPin)); err != nil {
		s.close()
		return nil, err
	}
	want.Prog = progID(s.stub)
	if err := writeRecord(filepath.Join(pdir, attachedPin), want); err != nil {
		s.close()
		return nil, err
	}
	return s, s.claimSlots(d)
}

// openPinned opens the pinned stub and maps of s.
func (s *ifaceSet) openPinned() error {
	p, err := ebpf.LoadPinnedProgram(filepath.Join(s.pdir, progPin), nil)
	if err != nil {
		return err
	}
	s.stub = p
	for _, n := range ifaceMapNames {
		m, err := ebpf.LoadPinnedMap(filepath.Join(s.pdir, n), nil)
		if err != nil {
			return err
		}
		s.maps[n] = m
	}
	return nil
}

// claimSlots marks the slots the interface records of s's hook and
// direction name as used and frees the others: a slot written by an attach
// that a crash cut short before its record (the record is cleared first).
func (s *ifaceSet) claimSlots(d *Datapath) error {
	claimed := map[uint32]bool{}
	suffix := fmt.Sprintf("_%s_%s", s.hook, s.dir)
	ents, _ := os.ReadDir(filepath.Join(d.root, "ifaces"))
	for _, e := range ents {
		if !strings.HasSuffix(e.Name(), suffix) {
			continue
		}
		if r, ok := readAttached(filepath.Join(d.root, "ifaces", e.Name())); ok && r.Slot != 0 {
			claimed[r.Slot] = true
		}
	}
	keys, entries := make([]uint32, maxIfaces), make([]ifaceEntry, maxIfaces)
	var cursor ebpf.MapBatchCursor
	n, err := s.maps[mapIfHops].BatchLookup(&cursor, keys, entries, nil)
	if err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
		return fmt.Errorf("read the interface slots: %w", err)
	}
	var errs []error
	for i := range n {
		switch slot := keys[i]; {
		case slot == 0:
		case claimed[slot]:
			s.used[slot] = true
		case entries[i].Ifindex != 0:
			errs = append(errs, s.free(slot, entries[i].Ifindex))
		}
	}
	return errors.Join(errs...)
}

// take gives out a free slot for ifindex with its counters at zero.
func (s *ifaceSet) take() (uint32, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for slot := uint32(1); slot < maxIfaces; slot++ {
		if s.used[slot] {
			continue
		}
		if err := zeroPerCPUAt(s.maps[mapIfStats], slot); err != nil {
			return 0, err
		}
		s.used[slot] = true
		return slot, nil
	}
	return 0, fmt.Errorf("%s %s: all %d interface slots in use", s.hook, s.dir, maxIfaces-1)
}

// write makes the frames on ifindex take hop through slot: the slot first,
// then the ifindex's entry (a frame sees either no slot or the whole one).
func (s *ifaceSet) write(slot, ifindex uint32, hop Hop) error {
	if err := s.maps[mapIfHops].Put(slot, ifaceEntry{Hop: hop, Ifindex: ifindex}); err != nil {
		return fmt.Errorf("interface hop: %w", err)
	}
	m := s.maps[mapIfSlot]
	if ifindex >= maxIfindex {
		m = s.maps[mapIfSlotHi]
	}
	if err := m.Put(ifindex, slot); err != nil {
		return fmt.Errorf("interface %d's slot: %w", ifindex, err)
	}
	return nil
}

// free clears slot, written for ifindex, and the ifindex's entry if it
// still points there, and gives the slot back.
func (s *ifaceSet) free(slot, ifindex uint32) error {
	var errs []error
	if ifindex != 0 {
		m := s.maps[mapIfSlot]
		if ifindex >= maxIfindex {
			m = s.maps[mapIfSlotHi]
		}
		var at uint32
		if err := m.Lookup(ifindex, &at); err == nil && at == slot {
			if ifindex >= maxIfindex {
				errs = append(errs, m.Delete(ifindex))
			} else {
				errs = append(errs, m.Put(ifindex, uint32(0)))
			}
		}
	}
	errs = append(errs, s.maps[mapIfHops].Put(slot, ifaceEntry{}))
	s.mu.Lock()
	delete(s.used, slot)
	s.mu.Unlock()
	return errors.Join(errs...)
}

// entry returns c's direct entry over s's maps, loading it at first use;
// s keeps it (DropEntries releases it when the cube goes).
func (d *Datapath) entry(s *ifaceSet, c *Program) (*ebpf.Program, error) {
	id := progID(c.prog)
	s.mu.Lock()
	p := s.entries[id]
	s.mu.Unlock()
	if p != nil {
		return p, nil
	}
	// verified outside the lock: other interfaces' attaches go on
	p, err := d.loadEntry(c, s.maps)
	if err != nil {
		return nil, err
	}
	return s.adoptEntry(c, p), nil
}

// adoptEntry keeps prog, loaded for c over s's maps (by this start, or an
// earlier one whose record says so), as c's direct entry, unless c has
// one already; it returns the one kept.
func (s *ifaceSet) adoptEntry(c *Program, prog *ebpf.Program) *ebpf.Program {
	id := progID(c.prog)
	s.mu.Lock()
	defer s.mu.Unlock()
	if p := s.entries[id]; p != nil {
		prog.Close()
		return p
	}
	s.entries[id] = prog
	return prog
}

// dropEntries releases the direct entries of cube program c (unloaded): an
// interface that still runs one keeps it through its link.
func (d *Datapath) dropEntries(c *Program) {
	id := progID(c.prog)
	d.setsMu.Lock()
	defer d.setsMu.Unlock()
	for _, s := range d.sets {
		s.mu.Lock()
		if p := s.entries[id]; p != nil {
			p.Close()
			delete(s.entries, id)
		}
		s.mu.Unlock()
	}
}

// holds says whether slot is given out and written for ifindex.
func (s *ifaceSet) holds(slot, ifindex uint32) bool {
	s.mu.Lock()
	used := s.used[slot]
	s.mu.Unlock()
	var e ifaceEntry
	return used && ifindex != 0 && s.maps[mapIfHops].Lookup(slot, &e) == nil && e.Ifindex == ifindex
}

// isEntry says whether program id is a direct entry over s's maps (one
// loaded by this start or an earlier one): it reads their hops.
func (s *ifaceSet) isEntry(id uint32) bool {
	if id == progID(s.stub) {
		return false
	}
	p, err := ebpf.NewProgramFromID(ebpf.ProgramID(id))
	if err != nil {
		return true // unknown: the careful way
	}
	defer p.Close()
	info, err := p.Info()
	if err != nil {
		return true
	}
	ids, ok := info.MapIDs()
	if !ok {
		return true
	}
	hops := ebpf.MapID(mapID(s.maps[mapIfHops]))
	for _, m := range ids {
		if m == hops {
			return true
		}
	}
	return false
}

// takeReset hands out, once, the maps this start made anew.
func (s *ifaceSet) takeReset() []MapReset {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.reset
	s.reset = nil
	return r
}

// freeSlot gives back the slot the interface record in sdir names.
func (d *Datapath) freeSlot(sdir string, hook Hook, dir Direction) error {
	r, ok := readAttached(sdir)
	if !ok || r.Slot == 0 {
		return nil
	}
	set, err := d.ifaceSet(hook, dir)
	if err != nil {
		return err
	}
	if !set.holds(r.Slot, r.Ifindex) {
		return nil
	}
	return set.free(r.Slot, r.Ifindex)
}

func (s *ifaceSet) close() {
	if s.stub != nil {
		s.stub.Close()
	}
	for _, m := range s.maps {
		m.Close()
	}
	for _, p := range s.entries {
		p.Close()
	}
}

func zeroPerCPUAt(m *ebpf.Map, key uint32) error {
	cpus, err := ebpf.PossibleCPU()
	if err != nil {
		return err
	}
	return m.Update(key, make([]Stats, cpus), ebpf.UpdateAny)
}
