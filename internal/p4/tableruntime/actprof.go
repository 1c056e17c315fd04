package tableruntime

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strings"

	"github.com/cilium/ebpf"

	"github.com/edgenf/edgenf/internal/bpfmap"
	"github.com/edgenf/edgenf/internal/p4/p4info"
)

// Action profiles and selectors: members and groups in the profile's slot
// arrays, and the indirect tables' references to their slots
// (p4info.ProfileLayout). The profile's index map (id -> slot) is the
// allocation state, kept beside the maps so that any Program over them
// (the daemon's after a restart, say) sees the same slots.
//
// Slots: a new member or group takes slot id % size when it is free (the
// usual dense ids take one lookup, and an id deleted and written again
// returns to its slot), else the first free one after it. A deleted
// member's or group's slot is zeroed before it is freed, and every
// reference carries the id as well as the slot, so a reference left
// pointing to a reused slot misses instead of running another member. The
// callers keep references consistent (a member before the groups and
// entries naming it; deletions the other way round).

// index keys: the kind in the high half, the id in the low.
const (
	kindMember = 0
	kindGroup  = 1
)

func indexKey(kind int, id uint32) uint64 { return uint64(kind)<<32 | uint64(id) }

type profileMaps struct {
	ap                     *p4info.ProfileLayout
	members, groups, index *ebpf.Map
}

func (p *Program) profile(name string) (*profileMaps, error) {
	ap := p.Model.Profile(name)
	if ap == nil {
		return nil, fmt.Errorf("no action profile %q (profiles: %s)", name, p.Model.ProfileNames())
	}
	pm := &profileMaps{ap: ap}
	var err error
	if pm.members, err = p.m(ap.MemberMap); err != nil {
		return nil, err
	}
	if pm.groups, err = p.m(ap.GroupMap); err != nil {
		return nil, err
	}
	if pm.index, err = p.m(ap.IndexMap); err != nil {
		return nil, err
	}
	return pm, nil
}

func kindName(kind int) string { return [...]string{"member", "group"}[kind] }

// slot is the slot of member or group id (ok false: none).
func (pm *profileMaps) slot(kind int, id uint32) (uint32, bool, error) {
	var s uint32
	err := pm.index.Lookup(indexKey(kind, id), &s)
	if errors.Is(err, ebpf.ErrKeyNotExist) {
		return 0, false, nil
	}
	return s, err == nil, err
}

// mustSlot is slot for a member or group that must exist.
func (pm *profileMaps) mustSlot(kind int, id uint32) (uint32, error) {
	s, ok, err := pm.slot(kind, id)
	if err == nil && !ok {
		err = fmt.Errorf("action profile %s has no %s %d", pm.ap.Name, kindName(kind), id)
	}
	return s, err
}

func (pm *profileMaps) arrayOf(kind int) (*ebpf.Map, int) {
	if kind == kindGroup {
		return pm.groups, pm.ap.GroupBytes()
	}
	return pm.members, pm.ap.MemberBytes
}

// free reports whether a slot's value is unused.
func (pm *profileMaps) free(kind int, v []byte) bool {
	if kind == kindGroup {
		_, live, _ := pm.ap.GroupOf(v)
		return !live
	}
	_, action := p4info.MemberOf(v)
	return action == 0
}

// allocate finds a free slot for a new member or group id.
func (pm *profileMaps) allocate(kind int, id uint32) (uint32, error) {
	_, vb := pm.arrayOf(kind)
	size := uint32(pm.ap.Size)
	home := id % size
	v := make([]byte, vb)
	if err := pm.read(kind, home, &v); err != nil {
		return 0, err
	}
	if pm.free(kind, v) {
		return home, nil
	}
	used := make([]bool, size)
	n := 0
	err := bpfmap.Each(pm.index, func(k uint64, s uint32) bool {
		if int(k>>32) == kind && s < size {
			used[s] = true
			n++
		}
		return true
	})
	if err != nil {
		return 0, err
	}
	for i := range size {
		if s := (home + i) % size; !used[s] {
			return s, nil
		}
	}
	return 0, fmt.Errorf("action profile %s is full: it holds %d %ss", pm.ap.Name, n, kindName(kind))
}

// write stores value v of member or group id in its slot (halves.go),
// allocating one for a new id.
func (pm *profileMaps) write(kind int, id uint32, v []byte) error {
	s, ok, err := pm.slot(kind, id)
	if err != nil {
		return err
	}
	if !ok {
		if s, err = pm.allocate(kind, id); err != nil {
			return err
		}
	}
	if err := pm.store(kind, s, v); err != nil {
		return fmt.Errorf("action profile %s, %s %d: %w", pm.ap.Name, kindName(kind), id, err)
	}
	if !ok {
		if err := pm.index.Update(indexKey(kind, id), s, ebpf.UpdateNoExist); err != nil {
			pm.store(kind, s, make([]byte, len(v)))
			return fmt.Errorf("action profile %s, %s %d: %w", pm.ap.Name, kindName(kind), id, err)
		}
	}
	return nil
}

// remove zeroes the slot of member or group id, then frees it.
func (pm *profileMaps) remove(kind int, id uint32) error {
	s, ok, err := pm.slot(kind, id)
	if err != nil || !ok {
		return err
	}
	_, vb := pm.arrayOf(kind)
	if err := pm.store(kind, s, make([]byte, vb)); err != nil {
		return err
	}
	if err := pm.index.Delete(indexKey(kind, id)); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
		return err
	}
	return nil
}

// each calls fn with every member or group id and its slot's value.
func (pm *profileMaps) each(kind int, fn func(id uint32, v []byte)) error {
	type slotOf struct{ id, slot uint32 }
	var all []slotOf
	err := bpfmap.Each(pm.index, func(k uint64, s uint32) bool {
		if int(k>>32) == kind {
			all = append(all, slotOf{uint32(k), s})
		}
		return true
	})
	if err != nil {
		return err
	}
	_, vb := pm.arrayOf(kind)
	v := make([]byte, vb)
	for _, x := range all {
		if err := pm.read(kind, x.slot, &v); err != nil {
			return err
		}
		fn(x.id, v)
	}
	return nil
}

// SetMember creates or modifies a member of an action profile. A packet
// sees the member before the change or after it, whole (halves.go);
// entries and groups naming it keep pointing to it.
func (p *Program) SetMember(profile string, id uint32, action string, args []p4info.Arg) error {
	pm, err := p.profile(profile)
	if err != nil {
		return err
	}
	v, err := pm.ap.EncodeMember(id, action, args)
	if err != nil {
		return err
	}
	return pm.write(kindMember, id, v)
}

// DeleteMember removes a member; a group still listing it skips it (its
// flows miss).
func (p *Program) DeleteMember(profile string, id uint32) error {
	pm, err := p.profile(profile)
	if err != nil {
		return err
	}
	return pm.remove(kindMember, id)
}

// SetGroup creates a group or replaces its member list; the members must
// exist.
func (p *Program) SetGroup(profile string, id uint32, members []uint32) error {
	pm, err := p.profile(profile)
	if err != nil {
		return err
	}
	if err := pm.ap.CheckGroup(members); err != nil {
		return err
	}
	slots := make([]uint32, len(members))
	for i, m := range members {
		if slots[i], err = pm.mustSlot(kindMember, m); err != nil {
			return fmt.Errorf("group %d: %w", id, err)
		}
	}
	v, err := pm.ap.EncodeGroup(id, members, slots)
	if err != nil {
		return err
	}
	return pm.write(kindGroup, id, v)
}

// DeleteGroup removes a group.
func (p *Program) DeleteGroup(profile string, id uint32) error {
	pm, err := p.profile(profile)
	if err != nil {
		return err
	}
	return pm.remove(kindGroup, id)
}

// Members reads a profile's members: id -> action id.
func (p *Program) Members(profile string) (map[uint32]uint32, error) {
	pm, err := p.profile(profile)
	if err != nil {
		return nil, err
	}
	out := map[uint32]uint32{}
	err = pm.each(kindMember, func(id uint32, v []byte) {
		out[id] = binary.NativeEndian.Uint32(v)
	})
	return out, err
}

// Groups reads a profile's groups: id -> member ids.
func (p *Program) Groups(profile string) (map[uint32][]uint32, error) {
	pm, err := p.profile(profile)
	if err != nil {
		return nil, err
	}
	out := map[uint32][]uint32{}
	err = pm.each(kindGroup, func(id uint32, v []byte) {
		_, _, out[id] = pm.ap.GroupOf(v)
	})
	return out, err
}

// refSlot is the slot of ref, which must exist, for table t.
func (p *Program) refSlot(t *p4info.TableLayout, ref p4info.Ref) (uint32, error) {
	if t.Profile == "" {
		_, err := t.EncodeRef(ref, 0)
		return 0, err
	}
	pm, err := p.profile(t.Profile)
	if err != nil {
		return 0, err
	}
	kind := kindMember
	if ref.Group {
		kind = kindGroup
	}
	return pm.mustSlot(kind, ref.ID)
}

// AddRefEntry inserts or replaces an entry of an indirect table pointing to
// a member or a group.
func (p *Program) AddRefEntry(table string, matches []p4info.Match, ref p4info.Ref, priority uint32) error {
	t, err := p.table(table)
	if err != nil {
		return err
	}
	slot, err := p.refSlot(t, ref)
	if err != nil {
		return err
	}
	if err := p.memberFits(t, ref, slot); err != nil {
		return err
	}
	e, err := t.EncodeRefEntry(matches, ref, slot, priority)
	if err != nil {
		return err
	}
	return p.writeEntry(t, e, priority)
}

// memberFits refuses a reference to a member whose action table t does not
// list (a profile shared by tables with different action lists). A group
// is not checked: the data path takes such a member of it as a miss.
func (p *Program) memberFits(t *p4info.TableLayout, ref p4info.Ref, slot uint32) error {
	if ref.Group || t.Profile == "" {
		return nil
	}
	pm, err := p.profile(t.Profile)
	if err != nil || len(pm.ap.Actions) == len(t.Actions) {
		return err
	}
	v := make([]byte, pm.ap.MemberBytes)
	if err := pm.read(kindMember, slot, &v); err != nil {
		return err
	}
	_, id := p4info.MemberOf(v)
	var names []string
	for _, a := range t.Actions {
		if a.ID == id {
			return nil
		}
		names = append(names, a.Name)
	}
	return fmt.Errorf("table %s: member %d of %s runs an action the table does not list (its actions: %s)", t.Name, ref.ID, pm.ap.Name, strings.Join(names, ", "))
}

// SetDefaultRef makes a member or group the default action of an indirect
// table.
func (p *Program) SetDefaultRef(table string, ref p4info.Ref) error {
	t, err := p.table(table)
	if err != nil {
		return err
	}
	if t.ConstDefault {
		return fmt.Errorf("table %s has a const default action", t.Name)
	}
	slot, err := p.refSlot(t, ref)
	if err != nil {
		return err
	}
	if err := p.memberFits(t, ref, slot); err != nil {
		return err
	}
	v, err := t.EncodeRef(ref, slot)
	if err != nil {
		return err
	}
	m, err := p.m(t.DefaultMap)
	if err != nil {
		return err
	}
	return m.Update(uint32(0), v, ebpf.UpdateAny)
}
