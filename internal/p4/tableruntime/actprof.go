package tableruntime

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strings"

	"github.com/cilium/ebpf"

	"github.com/edgenf/edgenf/internal/p4/p4info"
)

// Action profiles and selectors: members and groups in the profile's maps,
// and the indirect tables' references to them (p4info.ProfileLayout). The
// callers keep the references consistent (a member before the groups and
// entries naming it; deletions the other way round): the data path runs no
// action for a dangling reference.

func (p *Program) profile(name string) (*p4info.ProfileLayout, error) {
	ap := p.Model.Profile(name)
	if ap == nil {
		return nil, fmt.Errorf("no action profile %q (profiles: %s)", name, p.Model.ProfileNames())
	}
	return ap, nil
}

// SetMember creates or modifies a member of an action profile.
func (p *Program) SetMember(profile string, id uint32, action string, args []p4info.Arg) error {
	ap, err := p.profile(profile)
	if err != nil {
		return err
	}
	v, err := ap.EncodeMember(action, args)
	if err != nil {
		return err
	}
	m, err := p.m(ap.MemberMap)
	if err != nil {
		return err
	}
	if err := m.Update(id, v, ebpf.UpdateAny); err != nil {
		return fmt.Errorf("action profile %s, member %d: %w (the profile holds %d members)", ap.Name, id, err, ap.Size)
	}
	return nil
}

// DeleteMember removes a member.
func (p *Program) DeleteMember(profile string, id uint32) error {
	return p.deleteFrom(profile, id, false)
}

// SetGroup creates a group or replaces its member list.
func (p *Program) SetGroup(profile string, id uint32, members []uint32) error {
	ap, err := p.profile(profile)
	if err != nil {
		return err
	}
	v, err := ap.EncodeGroup(members)
	if err != nil {
		return err
	}
	m, err := p.m(ap.GroupMap)
	if err != nil {
		return err
	}
	if err := m.Update(id, v, ebpf.UpdateAny); err != nil {
		return fmt.Errorf("action profile %s, group %d: %w (the profile holds %d groups)", ap.Name, id, err, ap.Size)
	}
	return nil
}

// DeleteGroup removes a group.
func (p *Program) DeleteGroup(profile string, id uint32) error {
	return p.deleteFrom(profile, id, true)
}

func (p *Program) deleteFrom(profile string, id uint32, group bool) error {
	ap, err := p.profile(profile)
	if err != nil {
		return err
	}
	name := ap.MemberMap
	if group {
		name = ap.GroupMap
	}
	m, err := p.m(name)
	if err != nil {
		return err
	}
	if err := m.Delete(id); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
		return err
	}
	return nil
}

// Members reads a profile's members: id -> action id.
func (p *Program) Members(profile string) (map[uint32]uint32, error) {
	ap, err := p.profile(profile)
	if err != nil {
		return nil, err
	}
	m, err := p.m(ap.MemberMap)
	if err != nil {
		return nil, err
	}
	out := map[uint32]uint32{}
	var k uint32
	v := make([]byte, ap.MemberBytes)
	it := m.Iterate()
	for it.Next(&k, &v) {
		out[k] = binary.NativeEndian.Uint32(v)
	}
	return out, it.Err()
}

// Groups reads a profile's groups: id -> member ids.
func (p *Program) Groups(profile string) (map[uint32][]uint32, error) {
	ap, err := p.profile(profile)
	if err != nil {
		return nil, err
	}
	m, err := p.m(ap.GroupMap)
	if err != nil {
		return nil, err
	}
	out := map[uint32][]uint32{}
	var k uint32
	v := make([]byte, 8+4*ap.MaxGroupSize)
	it := m.Iterate()
	for it.Next(&k, &v) {
		n := min(int(binary.NativeEndian.Uint32(v)), ap.MaxGroupSize)
		ids := make([]uint32, n)
		for i := range ids {
			ids[i] = binary.NativeEndian.Uint32(v[8+4*i:])
		}
		out[k] = ids
	}
	return out, it.Err()
}

// AddRefEntry inserts or replaces an entry of an indirect table pointing to
// a member or a group.
func (p *Program) AddRefEntry(table string, matches []p4info.Match, ref p4info.Ref, priority uint32) error {
	t, err := p.table(table)
	if err != nil {
		return err
	}
	if err := p.memberFits(t, ref); err != nil {
		return err
	}
	e, err := t.EncodeRefEntry(matches, ref, priority)
	if err != nil {
		return err
	}
	return p.writeEntry(t, e, priority)
}

// memberFits refuses a reference to a member whose action table t does not
// list (a profile shared by tables with different action lists). A group
// is not checked: the data path takes such a member of it as a miss.
func (p *Program) memberFits(t *p4info.TableLayout, ref p4info.Ref) error {
	if ref.Group || t.Profile == "" {
		return nil
	}
	ap, err := p.profile(t.Profile)
	if err != nil || len(ap.Actions) == len(t.Actions) {
		return err
	}
	m, err := p.m(ap.MemberMap)
	if err != nil {
		return err
	}
	v := make([]byte, ap.MemberBytes)
	if err := m.Lookup(ref.ID, &v); err != nil {
		return nil // a dangling reference: the data path's miss, as for a direct table
	}
	id := binary.NativeEndian.Uint32(v)
	var names []string
	for _, a := range t.Actions {
		if a.ID == id {
			return nil
		}
		names = append(names, a.Name)
	}
	return fmt.Errorf("table %s: member %d of %s runs an action the table does not list (its actions: %s)", t.Name, ref.ID, ap.Name, strings.Join(names, ", "))
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
	if err := p.memberFits(t, ref); err != nil {
		return err
	}
	v, err := t.EncodeRef(ref)
	if err != nil {
		return err
	}
	m, err := p.m(t.DefaultMap)
	if err != nil {
		return err
	}
	return m.Update(uint32(0), v, ebpf.UpdateAny)
}
