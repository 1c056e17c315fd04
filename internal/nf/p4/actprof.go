package p4

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/p4/p4info"
	"github.com/edgenf/edgenf/internal/p4/tableruntime"
)

// Action profiles and selectors of a p4 cube: the members and groups BMv2's
// act_prof_create_member / act_prof_create_group build and P4Runtime's
// ActionProfileMember / ActionProfileGroup write. They are tables of the
// cube (desired state, persisted, restored by Sync before the entries that
// name them); an entry of a table the program implements with a profile
// names a member or a group instead of an action.

// Member is an action of a profile with its data, which entries and groups
// of the profile's tables point to.
type Member struct {
	Profile string            `json:"profile" doc:"an action profile or selector of the program (404 otherwise)"`
	Member  uint32            `json:"member"`
	Action  string            `json:"action" doc:"an action of the profile's tables (404 otherwise)"`
	Params  map[string]string `json:"params,omitempty" format:"p4-value" doc:"parameter (of the action, 404 otherwise) = value"`
}

func (m *Member) Args() []p4info.Arg { return (&Entry{Params: m.Params}).Args() }

// Validate checks the member against the cube's program.
func (m *Member) Validate(c *cube.Cube) error {
	if err := checkForms("params", m.Params, p4info.ValueSyntax); err != nil {
		return err
	}
	ap, err := profileOf(c, m.Profile)
	if err != nil {
		return err
	}
	a := ap.Action(m.Action)
	if a == nil {
		_, err := ap.EncodeMember(m.Member, m.Action, nil)
		return cube.NotFound("action", "%v", err)
	}
	for _, k := range sortedKeys(m.Params) {
		if !slices.ContainsFunc(a.Params, func(p *p4info.ParamLayout) bool { return p.Name == k }) {
			return cube.NotFound("params."+k, "action %s has no parameter %q", a.Name, k)
		}
	}
	if _, err := ap.EncodeMember(m.Member, m.Action, m.Args()); err != nil {
		return cube.Unprocessable("params", "%v", err)
	}
	m.Profile, m.Action = ap.Name, a.Name
	return nil
}

// Group is a set of members of a selector (or of a profile: then its
// first member runs); a flow's hash picks one.
type Group struct {
	Profile string   `json:"profile" doc:"an action profile or selector of the program (404 otherwise)"`
	Group   uint32   `json:"group"`
	Members []uint32 `json:"members" doc:"member ids of the profile, each once, at most the profile's max group size (409 otherwise)"`
}

// Validate checks the group: its members exist, fit and are listed once.
func (g *Group) Validate(c *cube.Cube) error {
	ap, err := profileOf(c, g.Profile)
	if err != nil {
		return err
	}
	g.Profile = ap.Name
	if g.Members == nil {
		g.Members = []uint32{}
	}
	if err := ap.CheckGroup(g.Members); err != nil {
		if strings.Contains(err.Error(), "at most") {
			return cube.Full("members", "group %d: %v", g.Group, err)
		}
		return cube.Unprocessable("members", "group %d: %v", g.Group, err)
	}
	for _, m := range g.Members {
		if _, ok := c.Tables[membersTable.Name][refKey(ap.Name, m)]; !ok {
			return cube.NotFound("members", "group %d: action profile %s has no member %d", g.Group, ap.Name, m)
		}
	}
	return nil
}

func refKey(profile string, id uint32) string {
	return profile + " " + strconv.FormatUint(uint64(id), 10)
}

var membersTable = cube.Table{
	Name: "ap_members",
	Doc:  "Members of the program's action profiles and selectors: an action with its data (key: profile and member id).",
	Item: &Member{},
	Key:  func(v any) string { m := v.(*Member); return refKey(m.Profile, m.Member) },
}

var groupsTable = cube.Table{
	Name: "ap_groups",
	Doc:  "Groups of the program's action selectors: member lists a flow hash picks from (key: profile and group id).",
	Item: &Group{},
	Key:  func(v any) string { g := v.(*Group); return refKey(g.Profile, g.Group) },
}

// profileOf finds a profile of the cube's program.
func profileOf(c *cube.Cube, name string) (*p4info.ProfileLayout, error) {
	prog, err := programOf(c)
	if err != nil {
		return nil, err
	}
	ap := prog.Info.Edgenf.Profile(name)
	if ap == nil {
		return nil, cube.NotFound("profile", "the program has no action profile %q (profiles: %s)", name, prog.Info.Edgenf.ProfileNames())
	}
	return ap, nil
}

// ref is the member or group an entry or default names (ok false: none).
func ref(member, group *uint32) (p4info.Ref, bool) {
	switch {
	case member != nil:
		return p4info.Ref{ID: *member}, true
	case group != nil:
		return p4info.Ref{Group: true, ID: *group}, true
	}
	return p4info.Ref{}, false
}

// validateRef checks the reference of an entry or default of table t: the
// table is indirect, it names exactly one member or group that exists and
// no action.
func validateRef(c *cube.Cube, t *p4info.TableLayout, member, group *uint32, action string, params map[string]string) error {
	r, ok := ref(member, group)
	if t.Profile == "" {
		if ok {
			return cube.Unprocessable("member", "table %s is not implemented by an action profile: name an action, not a member or group", t.Name)
		}
		return nil
	}
	if member != nil && group != nil {
		return cube.Unprocessable("group", "give a member or a group, not both")
	}
	if !ok {
		return cube.Unprocessable("member", "table %s is implemented by action profile %s: give a member or a group of it instead of an action", t.Name, t.Profile)
	}
	if action != "" || len(params) > 0 {
		return cube.Unprocessable("action", "table %s is implemented by action profile %s: the member holds the action; give no action or params", t.Name, t.Profile)
	}
	tb := membersTable.Name
	if r.Group {
		tb = groupsTable.Name
	}
	if _, exists := c.Tables[tb][refKey(t.Profile, r.ID)]; !exists {
		return cube.NotFound(map[bool]string{false: "member", true: "group"}[r.Group], "action profile %s has no %s", t.Profile, r)
	}
	return nil
}

// usedBy names what in c refers to the member or group r of profile
// (an entry, a default, a group), "" when nothing does.
func usedBy(c *cube.Cube, profile string, r p4info.Ref) string {
	if !r.Group {
		for k, raw := range c.Tables[groupsTable.Name] {
			var g Group
			if json.Unmarshal(raw, &g) == nil && g.Profile == profile && slices.Contains(g.Members, r.ID) {
				return "group " + strings.TrimPrefix(k, profile+" ")
			}
		}
	}
	prog, err := programOf(c)
	if err != nil {
		return ""
	}
	names := func(m, g *uint32) bool {
		x, ok := ref(m, g)
		return ok && x == r
	}
	for k, raw := range c.Tables[entriesTable.Name] {
		var e Entry
		if json.Unmarshal(raw, &e) == nil && names(e.Member, e.Group) {
			if t := prog.Info.Edgenf.Table(e.Table); t != nil && t.Profile == profile {
				return "entry " + k
			}
		}
	}
	for k, raw := range c.Tables[defaultsTable.Name] {
		var d Default
		if json.Unmarshal(raw, &d) == nil && names(d.Member, d.Group) {
			if t := prog.Info.Edgenf.Table(d.Table); t != nil && t.Profile == profile {
				return "the default action of " + k
			}
		}
	}
	return ""
}

// syncProfiles writes every member, then every group, of the cube.
func syncProfiles(prog *tableruntime.Program, c *cube.Cube) error {
	members, err := membersTable.Entries(c)
	if err != nil {
		return err
	}
	for _, v := range members {
		m := v.(*Member)
		if err := prog.SetMember(m.Profile, m.Member, m.Action, m.Args()); err != nil {
			return err
		}
	}
	groups, err := groupsTable.Entries(c)
	if err != nil {
		return err
	}
	for _, v := range groups {
		g := v.(*Group)
		if err := prog.SetGroup(g.Profile, g.Group, g.Members); err != nil {
			return err
		}
	}
	return nil
}

// pruneProfiles removes from the maps the members and groups the cube no
// longer has (after the entries naming them were rewritten).
func pruneProfiles(prog *tableruntime.Program, c *cube.Cube) error {
	for _, ap := range prog.Model.Profiles {
		gs, err := prog.Groups(ap.Name)
		if err != nil {
			return err
		}
		for id := range gs {
			if _, ok := c.Tables[groupsTable.Name][refKey(ap.Name, id)]; !ok {
				if err := prog.DeleteGroup(ap.Name, id); err != nil {
					return err
				}
			}
		}
		ms, err := prog.Members(ap.Name)
		if err != nil {
			return err
		}
		for id := range ms {
			if _, ok := c.Tables[membersTable.Name][refKey(ap.Name, id)]; !ok {
				if err := prog.DeleteMember(ap.Name, id); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// putProfile and deleteProfile apply one member or group change; a member
// or group something still names is not deleted (409).
func putProfile(prog *tableruntime.Program, item any) (bool, error) {
	switch v := item.(type) {
	case *Member:
		return true, prog.SetMember(v.Profile, v.Member, v.Action, v.Args())
	case *Group:
		return true, prog.SetGroup(v.Profile, v.Group, v.Members)
	}
	return false, nil
}

func deleteProfile(prog *tableruntime.Program, c *cube.Cube, item any) (bool, error) {
	switch v := item.(type) {
	case *Member:
		if by := usedBy(c, v.Profile, p4info.Ref{ID: v.Member}); by != "" {
			return true, cube.Conflict("member", "member %d of %s is in use by %s: delete that first", v.Member, v.Profile, by)
		}
		return true, prog.DeleteMember(v.Profile, v.Member)
	case *Group:
		if by := usedBy(c, v.Profile, p4info.Ref{Group: true, ID: v.Group}); by != "" {
			return true, cube.Conflict("group", "group %d of %s is in use by %s: delete that first", v.Group, v.Profile, by)
		}
		return true, prog.DeleteGroup(v.Profile, v.Group)
	}
	return false, nil
}

// putRef writes an entry or default naming a member or group.
func putRef(prog *tableruntime.Program, e *Entry) (bool, error) {
	r, ok := ref(e.Member, e.Group)
	if !ok {
		return false, nil
	}
	if err := prog.AddRefEntry(e.Table, e.Matches(), r, e.Priority); err != nil {
		return true, fmt.Errorf("entry %s: %w", e.Key(), err)
	}
	return true, nil
}

func setDefault(prog *tableruntime.Program, d *Default) error {
	if r, ok := ref(d.Member, d.Group); ok {
		return prog.SetDefaultRef(d.Table, r)
	}
	return prog.SetDefault(d.Table, d.Action, (&Entry{Params: d.Params}).Args())
}
