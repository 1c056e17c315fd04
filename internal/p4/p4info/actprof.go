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

// ProfileLayout is an action profile's maps (ir.ActionProfile): members
// (HASH u32 id -> MemberBytes: action id, reserved, parameters at
// MemberParamOffset) and groups (HASH u32 id -> u32 n, u32 reserved, u32
// member ids[MaxGroupSize]).
type ProfileLayout struct {
	Name              string          `json:"name"`
	ID                uint32          `json:"id"`
	Selector          bool            `json:"selector,omitempty"`
	Algo              string          `json:"algo,omitempty"`
	MemberMap         string          `json:"memberMap"`
	GroupMap          string          `json:"groupMap"`
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
		pl := &ProfileLayout{Name: ap.Name, ID: ap.ID, Selector: ap.Selector, Algo: ap.Algo, MemberMap: ap.MemberMap, GroupMap: ap.GroupMap,
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

// EncodeMember encodes a member: an action of the profile's tables with its
// arguments.
func (p *ProfileLayout) EncodeMember(action string, args []Arg) ([]byte, error) {
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
	return t.EncodeValue(action, args)
}

// EncodeGroup encodes a group's member list (ids of existing members, each
// once, at most MaxGroupSize).
func (p *ProfileLayout) EncodeGroup(members []uint32) ([]byte, error) {
	if len(members) > p.MaxGroupSize {
		return nil, fmt.Errorf("action profile %s: a group holds at most %d members (max_group_size), got %d", p.Name, p.MaxGroupSize, len(members))
	}
	seen := map[uint32]bool{}
	v := make([]byte, 8+4*p.MaxGroupSize)
	binary.NativeEndian.PutUint32(v, uint32(len(members)))
	for i, m := range members {
		if seen[m] {
			return nil, fmt.Errorf("action profile %s: member %d is listed twice in the group", p.Name, m)
		}
		seen[m] = true
		binary.NativeEndian.PutUint32(v[8+4*i:], m)
	}
	return v, nil
}

// EncodeRef encodes an indirect table's value pointing to ref.
func (t *TableLayout) EncodeRef(ref Ref) ([]byte, error) {
	if t.Profile == "" {
		return nil, fmt.Errorf("table %s is not implemented by an action profile: its entries name an action, not a %s", t.Name, map[bool]string{false: "member", true: "group"}[ref.Group])
	}
	v := make([]byte, t.ValueBytes)
	tag := uint32(ir.RefMember)
	if ref.Group {
		tag = ir.RefGroup
	}
	binary.NativeEndian.PutUint32(v, tag)
	binary.NativeEndian.PutUint32(v[4:], ref.ID)
	return v, nil
}

// EncodeRefEntry encodes an entry of an indirect table pointing to ref.
func (t *TableLayout) EncodeRefEntry(matches []Match, ref Ref, priority uint32) (*Entry, error) {
	if t.Kind == "keyless" {
		return nil, fmt.Errorf("table %s has no match key; set its default action instead", t.Name)
	}
	val, err := t.EncodeRef(ref)
	if err != nil {
		return nil, err
	}
	return t.encodeMatch(matches, val, priority)
}

// RefOf decodes the reference an indirect table's value holds (ok false:
// none, e.g. the compiled default).
func RefOf(value []byte) (Ref, bool) {
	if len(value) < 8 {
		return Ref{}, false
	}
	switch binary.NativeEndian.Uint32(value) {
	case ir.RefMember:
		return Ref{ID: binary.NativeEndian.Uint32(value[4:])}, true
	case ir.RefGroup:
		return Ref{Group: true, ID: binary.NativeEndian.Uint32(value[4:])}, true
	}
	return Ref{}, false
}
