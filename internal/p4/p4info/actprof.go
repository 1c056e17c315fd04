package p4info

import (
	"encoding/binary"
	"fmt"
	"strings"

	"github.com/edgenf/edgenf/internal/p4/ir"
)

// ActionProfile mirrors p4.config.v1.ActionProfile.
type ActionProfile struct {
	Preamble     Preamble      `json:"preamble"`
	TableIDs     []uint32      `json:"tableIds"`
	WithSelector bool          `json:"withSelector,omitempty"`
	Size         string        `json:"size"`
	MaxGroupSize int           `json:"maxGroupSize,omitempty"`
	SumOfMembers *SumOfMembers `json:"sumOfMembers,omitempty"`
}

// SumOfMembers is p4.config.v1.ActionProfile.SumOfMembers: a group's size
// counts its members; edgenf's members have no weight (max 1).
type SumOfMembers struct {
	MaxMemberWeight int `json:"maxMemberWeight,omitempty"`
}

// ProfileLayout is an action profile's maps (ir.ActionProfile): member
// slots (ARRAY -> u64 live word, then two halves of MemberBytes: action
// id, member id, parameters at MemberParamOffset), group slots (ARRAY ->
// u64 live word, then two halves of GroupBytes: u32 n, u32 group id, u32
// in use, u32 ir.FastModMul(n), (u32 member slot, u32 member id)
// [MaxGroupSize]) and the control plane's index ((u32 kind, u32 id) ->
// u32 slot).
type ProfileLayout struct {
	Name              string          `json:"name"`
	ID                uint32          `json:"id"`
	Selector          bool            `json:"selector,omitempty"`
	Algo              string          `json:"algo,omitempty"`
	MemberMap         string          `json:"memberMap"`
	GroupMap          string          `json:"groupMap"`
	IndexMap          string          `json:"indexMap"`
	Size              int             `json:"size"`
	MaxGroupSize      int             `json:"maxGroupSize"`
	MemberBytes       int             `json:"memberBytes"`
	MemberParamOffset int             `json:"memberParamOffset"`
	Tables            []string        `json:"tables"`
	Actions           []*ActionLayout `json:"actions"`
}

// Ref is what an indirect table's entry or default action points to: a
// member or a group of its profile.
type Ref struct {
	Group bool
	ID    uint32
}

func (r Ref) String() string {
	if r.Group {
		return fmt.Sprintf("group %d", r.ID)
	}
	return fmt.Sprintf("member %d", r.ID)
}

func addProfiles(m *P4Info, p *ir.Program) {
	for _, ap := range p.ActionProfiles {
		pa := &ActionProfile{Preamble: Preamble{ID: ap.ID, Name: ap.Name, Alias: alias(ap.Name)}, WithSelector: ap.Selector, Size: itoa(ap.Size)}
		pl := &ProfileLayout{Name: ap.Name, ID: ap.ID, Selector: ap.Selector, Algo: ap.Algo, MemberMap: ap.MemberMap, GroupMap: ap.GroupMap, IndexMap: ap.IndexMap,
			Size: ap.Size, MaxGroupSize: ap.MaxGroupSize, MemberBytes: ap.MemberBytes, MemberParamOffset: ir.MemberParamOff}
		if ap.Selector {
			pa.MaxGroupSize = ap.MaxGroupSize
			pa.SumOfMembers = &SumOfMembers{MaxMemberWeight: 1}
		}
		for _, t := range ap.Tables {
			pa.TableIDs = append(pa.TableIDs, t.ID)
			pl.Tables = append(pl.Tables, t.Name)
		}
		// the actions of every table the profile implements, each once
		seen := map[string]bool{}
		for _, t := range ap.Tables {
			for _, tl := range m.Edgenf.Tables {
				if tl.Name != t.Name {
					continue
				}
				for _, a := range tl.Actions {
					if !seen[a.Name] {
						seen[a.Name] = true
						pl.Actions = append(pl.Actions, a)
					}
				}
			}
		}
		for i, t := range m.Tables {
			for _, it := range ap.Tables {
				if t.Preamble.ID == it.ID {
					t.ImplementationID = ap.ID
					m.Edgenf.Tables[i].Profile = ap.Name
				}
			}
		}
		m.ActionProfiles = append(m.ActionProfiles, pa)
		m.Edgenf.Profiles = append(m.Edgenf.Profiles, pl)
	}
}

// Profile returns an action profile by full name, alias or id.
func (r *Runtime) Profile(name string) *ProfileLayout {
	for _, p := range r.Profiles {
		if p.Name == name {
			return p
		}
	}
	for _, p := range r.Profiles {
		if alias(p.Name) == name || strings.HasSuffix(p.Name, "."+name) {
			return p
		}
	}
	return nil
}

// ProfileByID returns an action profile by P4Runtime id.
func (r *Runtime) ProfileByID(id uint32) *ProfileLayout {
	for _, p := range r.Profiles {
		if p.ID == id {
			return p
		}
	}
	return nil
}

// ProfileNames lists the profiles' names, for messages.
func (r *Runtime) ProfileNames() string {
	var n []string
	for _, p := range r.Profiles {
		n = append(n, p.Name)
	}
	if len(n) == 0 {
		return "none"
	}
	return strings.Join(n, ", ")
}

// Action returns one of the profile's actions by full name or alias.
func (p *ProfileLayout) Action(name string) *ActionLayout { return p.asTable().Action(name) }

// asTable is the member value's layout in the shape of a direct table's.
func (p *ProfileLayout) asTable() *TableLayout {
	return &TableLayout{Name: p.Name, Actions: p.Actions, ParamOffset: p.MemberParamOffset, ValueBytes: p.MemberBytes}
}

// EncodeMember encodes member id: an action of the profile's tables with
// its arguments.
func (p *ProfileLayout) EncodeMember(id uint32, action string, args []Arg) ([]byte, error) {
	t := p.asTable()
	a := t.Action(action)
	if a == nil {
		var names []string
		for _, a := range p.Actions {
			names = append(names, a.Name)
		}
		return nil, fmt.Errorf("action profile %s has no action %q (actions: %s)", p.Name, action, strings.Join(names, ", "))
	}
	if a.DefaultOnly {
		return nil, fmt.Errorf("action %s is default-only: a member's action is one entries may use", a.Name)
	}
	v, err := t.EncodeValue(action, args)
	if err != nil {
		return nil, err
	}
	binary.NativeEndian.PutUint32(v[4:], id)
	return v, nil
}

// MemberOf decodes a member slot's value: its id and action id (0: a
// free slot).
func MemberOf(v []byte) (id, action uint32) {
	return binary.NativeEndian.Uint32(v[4:]), binary.NativeEndian.Uint32(v)
}

// CheckGroup checks a group's member list: each member once, at most
// MaxGroupSize.
func (p *ProfileLayout) CheckGroup(members []uint32) error {
	if len(members) > p.MaxGroupSize {
		return fmt.Errorf("action profile %s: a group holds at most %d members (max_group_size), got %d", p.Name, p.MaxGroupSize, len(members))
	}
	seen := map[uint32]bool{}
	for _, m := range members {
		if seen[m] {
			return fmt.Errorf("action profile %s: member %d is listed twice in the group", p.Name, m)
		}
		seen[m] = true
	}
	return nil
}

// GroupBytes is the size of a group slot's value.
func (p *ProfileLayout) GroupBytes() int {
	return ir.GroupHeaderBytes + ir.GroupPairBytes*p.MaxGroupSize
}

// EncodeGroup encodes group id's slot value: its members (CheckGroup) at
// their slots.
func (p *ProfileLayout) EncodeGroup(id uint32, members, slots []uint32) ([]byte, error) {
	if err := p.CheckGroup(members); err != nil {
		return nil, err
	}
	v := make([]byte, p.GroupBytes())
	binary.NativeEndian.PutUint32(v, uint32(len(members)))
	binary.NativeEndian.PutUint32(v[4:], id)
	binary.NativeEndian.PutUint32(v[8:], 1)
	binary.NativeEndian.PutUint32(v[12:], ir.FastModMul(uint32(len(members))))
	for i, m := range members {
		o := ir.GroupHeaderBytes + ir.GroupPairBytes*i
		binary.NativeEndian.PutUint32(v[o:], slots[i])
		binary.NativeEndian.PutUint32(v[o+4:], m)
	}
	return v, nil
}

// GroupOf decodes a group slot's value: its id, whether the slot is in
// use, and its members' ids.
func (p *ProfileLayout) GroupOf(v []byte) (id uint32, live bool, members []uint32) {
	n := min(int(binary.NativeEndian.Uint32(v)), p.MaxGroupSize)
	members = make([]uint32, n)
	for i := range members {
		members[i] = binary.NativeEndian.Uint32(v[ir.GroupHeaderBytes+ir.GroupPairBytes*i+4:])
	}
	return binary.NativeEndian.Uint32(v[4:]), binary.NativeEndian.Uint32(v[8:]) != 0, members
}

// EncodeRef encodes an indirect table's value pointing to ref, which the
// control plane placed at slot.
func (t *TableLayout) EncodeRef(ref Ref, slot uint32) ([]byte, error) {
	if t.Profile == "" {
		return nil, fmt.Errorf("table %s is not implemented by an action profile: its entries name an action, not a %s", t.Name, map[bool]string{false: "member", true: "group"}[ref.Group])
	}
	if slot >= 1<<ir.RefSlotBits {
		return nil, fmt.Errorf("table %s: slot %d out of range", t.Name, slot)
	}
	v := make([]byte, t.ValueBytes)
	kind := uint32(ir.RefMember)
	if ref.Group {
		kind = ir.RefGroup
	}
	binary.NativeEndian.PutUint32(v, kind<<ir.RefSlotBits|slot)
	binary.NativeEndian.PutUint32(v[4:], ref.ID)
	return v, nil
}

// EncodeRefEntry encodes an entry of an indirect table pointing to ref.
func (t *TableLayout) EncodeRefEntry(matches []Match, ref Ref, slot, priority uint32) (*Entry, error) {
	if t.Kind == "keyless" {
		return nil, fmt.Errorf("table %s has no match key; set its default action instead", t.Name)
	}
	val, err := t.EncodeRef(ref, slot)
	if err != nil {
		return nil, err
	}
	return t.encodeMatch(matches, val, priority)
}
