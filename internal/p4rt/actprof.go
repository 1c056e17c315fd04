package p4rt

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/edgenf/edgenf/internal/engine"
	p4nf "github.com/edgenf/edgenf/internal/nf/p4"
	"github.com/edgenf/edgenf/internal/p4/p4info"
)

// Action profiles over P4Runtime: ActionProfileMember and
// ActionProfileGroup entities are the cube's ap_members and ap_groups
// tables; a table entry's action may name a member or a group, or be a
// one-shot action set, which edgenf expands into a hidden group of hidden
// members (ids from OneShotBase up, which clients cannot use) and shows
// back as the action set it was written as.

// ActionProfileMember is p4.v1.ActionProfileMember.
type ActionProfileMember struct {
	ProfileID uint32  `pb:"1"`
	MemberID  uint32  `pb:"2"`
	Action    *Action `pb:"3"`
}

func (m *ActionProfileMember) appendTo(e *enc)          { appendTagged(e, m) }
func (m *ActionProfileMember) unmarshal(b []byte) error { return unmarshalTagged(b, m) }

// ActionProfileGroup is p4.v1.ActionProfileGroup.
type ActionProfileGroup struct {
	ProfileID uint32         `pb:"1"`
	GroupID   uint32         `pb:"2"`
	Members   []*GroupMember `pb:"3"`
	MaxSize   int32          `pb:"4"`
}

func (m *ActionProfileGroup) appendTo(e *enc)          { appendTagged(e, m) }
func (m *ActionProfileGroup) unmarshal(b []byte) error { return unmarshalTagged(b, m) }

// GroupMember is p4.v1.ActionProfileGroup.Member.
type GroupMember struct {
	MemberID  uint32 `pb:"1"`
	Weight    int32  `pb:"2"`
	Watch     int32  `pb:"3"`
	WatchPort []byte `pb:"4"`
}

func (m *GroupMember) appendTo(e *enc)          { appendTagged(e, m) }
func (m *GroupMember) unmarshal(b []byte) error { return unmarshalTagged(b, m) }

// ActionSet is p4.v1.ActionProfileActionSet.
type ActionSet struct {
	Actions []*ProfileAction `pb:"1"`
}

func (m *ActionSet) appendTo(e *enc)          { appendTagged(e, m) }
func (m *ActionSet) unmarshal(b []byte) error { return unmarshalTagged(b, m) }

// ProfileAction is p4.v1.ActionProfileAction.
type ProfileAction struct {
	Action    *Action `pb:"1"`
	Weight    int32   `pb:"2"`
	Watch     int32   `pb:"3"`
	WatchPort []byte  `pb:"4"`
}

func (m *ProfileAction) appendTo(e *enc)          { appendTagged(e, m) }
func (m *ProfileAction) unmarshal(b []byte) error { return unmarshalTagged(b, m) }

// OneShotBase is the first id of the hidden members and groups of one-shot
// action sets; clients' ids are below it.
const OneShotBase = 1 << 31

const (
	tblAPMembers = "ap_members"
	tblAPGroups  = "ap_groups"
)

func apKey(profile string, id uint32) string {
	return profile + " " + strconv.FormatUint(uint64(id), 10)
}

// profileFor resolves a profile id, and the table whose actions its
// members use.
func (w *writer) profileFor(id uint32) (*p4info.ProfileLayout, *p4info.TableLayout, error) {
	ap := w.pl.info.Edgenf.ProfileByID(id)
	if ap == nil {
		return nil, nil, errf(codes.InvalidArgument, "unknown action profile id %d (0x%08x)", id, id)
	}
	t := w.pl.info.Edgenf.Table(ap.Tables[0])
	if t == nil {
		return nil, nil, errf(codes.Internal, "action profile %s: no table %s", ap.Name, ap.Tables[0])
	}
	return ap, t, nil
}

// inUse turns the engine's refusal to delete a member or group something
// names into FAILED_PRECONDITION.
func inUse(err error) error {
	if st, ok := status.FromError(err); err != nil && ok && st.Code() == codes.AlreadyExists && strings.Contains(st.Message(), "in use by") {
		return errf(codes.FailedPrecondition, "%s", st.Message())
	}
	return err
}

func (w *writer) apMember(typ int32, m *ActionProfileMember) error {
	ap, t, err := w.profileFor(m.ProfileID)
	if err != nil {
		return err
	}
	if m.MemberID >= OneShotBase {
		return errf(codes.InvalidArgument, "member id %d: ids from %d up are edgenf's (one-shot action sets)", m.MemberID, uint32(OneShotBase))
	}
	return w.putMember(typ, ap, t, m.MemberID, m.Action)
}

func (w *writer) putMember(typ int32, ap *p4info.ProfileLayout, t *p4info.TableLayout, id uint32, a *Action) error {
	key := apKey(ap.Name, id)
	_, exists := w.s.eng.Entry(w.pl.who, w.pl.dev.cube, tblAPMembers, key)
	switch {
	case typ == UpdateInsert && exists:
		return errf(codes.AlreadyExists, "action profile %s already has member %d", ap.Name, id)
	case typ != UpdateInsert && !exists:
		return errf(codes.NotFound, "action profile %s has no member %d", ap.Name, id)
	case typ == UpdateDelete:
		return inUse(w.change(tblAPMembers, func(tx *engine.EntryTx) error { return tx.Delete(key) }))
	}
	if a == nil {
		return errf(codes.InvalidArgument, "action profile %s, member %d: no action", ap.Name, id)
	}
	al, params, err := toAction(t, a, false)
	if err != nil {
		return err
	}
	raw, _ := json.Marshal(&p4nf.Member{Profile: ap.Name, Member: id, Action: al.Name, Params: params})
	return w.change(tblAPMembers, func(tx *engine.EntryTx) error { _, err := tx.Put(raw); return err })
}

func (w *writer) apGroup(typ int32, g *ActionProfileGroup) error {
	ap, _, err := w.profileFor(g.ProfileID)
	if err != nil {
		return err
	}
	if g.GroupID >= OneShotBase {
		return errf(codes.InvalidArgument, "group id %d: ids from %d up are edgenf's (one-shot action sets)", g.GroupID, uint32(OneShotBase))
	}
	if !ap.Selector {
		return errf(codes.InvalidArgument, "action profile %s has no selector: it has members, not groups", ap.Name)
	}
	if g.MaxSize < 0 || int(g.MaxSize) > ap.MaxGroupSize {
		return errf(codes.ResourceExhausted, "action profile %s: max_size %d, the profile's groups hold at most %d members", ap.Name, g.MaxSize, ap.MaxGroupSize)
	}
	key := apKey(ap.Name, g.GroupID)
	_, exists := w.s.eng.Entry(w.pl.who, w.pl.dev.cube, tblAPGroups, key)
	switch {
	case typ == UpdateInsert && exists:
		return errf(codes.AlreadyExists, "action profile %s already has group %d", ap.Name, g.GroupID)
	case typ != UpdateInsert && !exists:
		return errf(codes.NotFound, "action profile %s has no group %d", ap.Name, g.GroupID)
	case typ == UpdateDelete:
		return inUse(w.change(tblAPGroups, func(tx *engine.EntryTx) error { return tx.Delete(key) }))
	}
	ids := []uint32{}
	for _, m := range g.Members {
		if m.Weight > 1 {
			return errf(codes.Unimplemented, "action profile %s, group %d, member %d: weight %d; edgenf's members have weight 1 (max_member_weight)", ap.Name, g.GroupID, m.MemberID, m.Weight)
		}
		if m.Watch != 0 || len(m.WatchPort) > 0 {
			return errf(codes.Unimplemented, "action profile %s, group %d, member %d: watch ports are not supported", ap.Name, g.GroupID, m.MemberID)
		}
		ids = append(ids, m.MemberID)
	}
	if g.MaxSize > 0 && len(ids) > int(g.MaxSize) {
		return errf(codes.ResourceExhausted, "action profile %s, group %d: %d members, max_size %d", ap.Name, g.GroupID, len(ids), g.MaxSize)
	}
	raw, _ := json.Marshal(&p4nf.Group{Profile: ap.Name, Group: g.GroupID, Members: ids})
	return w.change(tblAPGroups, func(tx *engine.EntryTx) error { _, err := tx.Put(raw); return err })
}

// indirect fills e's reference from a table entry's action: a member, a
// group or a one-shot action set (expanded into hidden members and group;
// releaseOneShot removes them). ok is false for a direct action.
func (w *writer) indirect(t *p4info.TableLayout, ta *TableAction, member, group **uint32) (ok bool, err error) {
	if ta == nil || ta.Action != nil {
		if t.Profile != "" {
			return true, errf(codes.InvalidArgument, "table %s is implemented by action profile %s: give a member, a group or an action set", t.Name, t.Profile)
		}
		return false, nil
	}
	if t.Profile == "" {
		return true, errf(codes.InvalidArgument, "table %s has no action profile: give a direct action", t.Name)
	}
	switch {
	case ta.MemberID != nil:
		*member = ta.MemberID
	case ta.GroupID != nil:
		*group = ta.GroupID
	case ta.ActionSet != nil:
		return true, w.oneShot(t, ta.ActionSet, member, group)
	default:
		return true, errf(codes.InvalidArgument, "table %s: the entry needs an action", t.Name)
	}
	for _, id := range []*uint32{ta.MemberID, ta.GroupID} {
		if id != nil && *id >= OneShotBase {
			return true, errf(codes.InvalidArgument, "id %d: ids from %d up are edgenf's (one-shot action sets)", *id, uint32(OneShotBase))
		}
	}
	return true, nil
}

// oneShot writes the hidden members (and, for a selector, group) of an
// action set.
func (w *writer) oneShot(t *p4info.TableLayout, set *ActionSet, member, group **uint32) error {
	ap := w.pl.info.Edgenf.Profile(t.Profile)
	if len(set.Actions) == 0 {
		return errf(codes.InvalidArgument, "table %s: an empty action set", t.Name)
	}
	if !ap.Selector && len(set.Actions) > 1 {
		return errf(codes.InvalidArgument, "table %s: action profile %s has no selector: a one-shot action set holds one action", t.Name, ap.Name)
	}
	if len(set.Actions) > ap.MaxGroupSize {
		return errf(codes.ResourceExhausted, "table %s: %d actions, the groups of %s hold at most %d", t.Name, len(set.Actions), ap.Name, ap.MaxGroupSize)
	}
	ids := w.freeHidden(ap.Name, len(set.Actions)+1)
	var members []uint32
	for i, pa := range set.Actions {
		if pa.Weight > 1 || pa.Watch != 0 || len(pa.WatchPort) > 0 {
			w.dropHidden(ap.Name, members, nil)
			return errf(codes.Unimplemented, "table %s: action set weights above 1 and watch ports are not supported", t.Name)
		}
		if err := w.putMember(UpdateInsert, ap, t, ids[i], pa.Action); err != nil {
			w.dropHidden(ap.Name, members, nil)
			return err
		}
		members = append(members, ids[i])
	}
	if !ap.Selector {
		*member = &members[0]
		return nil
	}
	gid := ids[len(ids)-1]
	raw, _ := json.Marshal(&p4nf.Group{Profile: ap.Name, Group: gid, Members: members})
	if err := w.change(tblAPGroups, func(tx *engine.EntryTx) error { _, err := tx.Insert(raw); return err }); err != nil {
		w.dropHidden(ap.Name, members, nil)
		return err
	}
	*group = &gid
	return nil
}

// freeHidden picks n unused hidden ids of a profile.
func (w *writer) freeHidden(profile string, n int) []uint32 {
	used := map[string]bool{}
	for _, tb := range []string{tblAPMembers, tblAPGroups} {
		for _, raw := range w.s.eng.Entries(w.pl.who, w.pl.dev.cube, tb) {
			var r struct {
				Profile string `json:"profile"`
				Member  uint32 `json:"member"`
				Group   uint32 `json:"group"`
			}
			if json.Unmarshal(raw, &r) == nil && r.Profile == profile {
				used[strconv.FormatUint(uint64(r.Member|r.Group), 10)] = true
			}
		}
	}
	var out []uint32
	for id := uint32(OneShotBase); len(out) < n && id != 0; id++ {
		if !used[strconv.FormatUint(uint64(id), 10)] {
			out = append(out, id)
		}
	}
	return out
}

// dropHidden deletes hidden members and a hidden group (best effort: what
// is left is unreachable and removed with the next one-shot cleanup).
func (w *writer) dropHidden(profile string, members []uint32, group *uint32) {
	if group != nil && *group >= OneShotBase {
		w.change(tblAPGroups, func(tx *engine.EntryTx) error { return tx.Delete(apKey(profile, *group)) })
	}
	for _, m := range members {
		if m >= OneShotBase {
			w.change(tblAPMembers, func(tx *engine.EntryTx) error { return tx.Delete(apKey(profile, m)) })
		}
	}
}

// releaseOneShot removes the hidden members and group an entry that was
// replaced or deleted pointed to.
func (w *writer) releaseOneShot(t *p4info.TableLayout, old json.RawMessage) {
	var e p4nf.Entry
	if t.Profile == "" || old == nil || json.Unmarshal(old, &e) != nil {
		return
	}
	switch {
	case e.Member != nil && *e.Member >= OneShotBase:
		w.dropHidden(t.Profile, []uint32{*e.Member}, nil)
	case e.Group != nil && *e.Group >= OneShotBase:
		var g p4nf.Group
		if raw, ok := w.s.eng.Entry(w.pl.who, w.pl.dev.cube, tblAPGroups, apKey(t.Profile, *e.Group)); ok && json.Unmarshal(raw, &g) == nil {
			w.dropHidden(t.Profile, g.Members, e.Group)
		}
	}
}

// --- reads ---

func (r *reader) apMembers(q *ActionProfileMember) error {
	for _, raw := range r.s.eng.Entries(r.pl.who, r.pl.dev.cube, tblAPMembers) {
		var m p4nf.Member
		if json.Unmarshal(raw, &m) != nil || m.Member >= OneShotBase {
			continue
		}
		ap := r.pl.info.Edgenf.Profile(m.Profile)
		if ap == nil || (q.ProfileID != 0 && q.ProfileID != ap.ID) || (q.MemberID != 0 && q.MemberID != m.Member) {
			continue
		}
		a, err := r.memberAction(ap, &m)
		if err != nil {
			return err
		}
		if err := r.add(&Entity{APMember: &ActionProfileMember{ProfileID: ap.ID, MemberID: m.Member, Action: a}}); err != nil {
			return err
		}
	}
	return nil
}

// memberAction is a stored member's action in P4Runtime form.
func (r *reader) memberAction(ap *p4info.ProfileLayout, m *p4nf.Member) (*Action, error) {
	t := r.pl.info.Edgenf.Table(ap.Tables[0])
	d := &p4nf.Default{Table: t.Name, Action: m.Action, Params: m.Params}
	te, err := defaultEntry(directLayout(t), d)
	if err != nil {
		return nil, errf(codes.Internal, "member %d of %s: %v", m.Member, ap.Name, err)
	}
	return te.Action.Action, nil
}

// directLayout is t without its profile: to encode an action's data.
func directLayout(t *p4info.TableLayout) *p4info.TableLayout {
	c := *t
	c.Profile = ""
	for _, a := range t.Actions {
		for _, p := range a.Params {
			c.ValueBytes = max(c.ValueBytes, c.ParamOffset+p.Offset+p.Size)
		}
	}
	return &c
}

func (r *reader) apGroups(q *ActionProfileGroup) error {
	for _, raw := range r.s.eng.Entries(r.pl.who, r.pl.dev.cube, tblAPGroups) {
		var g p4nf.Group
		if json.Unmarshal(raw, &g) != nil || g.Group >= OneShotBase {
			continue
		}
		ap := r.pl.info.Edgenf.Profile(g.Profile)
		if ap == nil || (q.ProfileID != 0 && q.ProfileID != ap.ID) || (q.GroupID != 0 && q.GroupID != g.Group) {
			continue
		}
		out := &ActionProfileGroup{ProfileID: ap.ID, GroupID: g.Group, MaxSize: int32(ap.MaxGroupSize)}
		for _, m := range g.Members {
			out.Members = append(out.Members, &GroupMember{MemberID: m, Weight: 1})
		}
		if err := r.add(&Entity{APGroup: out}); err != nil {
			return err
		}
	}
	return nil
}

// refAction is the action of a stored entry or default naming a member or
// group in P4Runtime form: the id, or the action set it was written as.
func (r *reader) refAction(t *p4info.TableLayout, member, group *uint32) (*TableAction, error) {
	switch {
	case member != nil && *member < OneShotBase:
		return &TableAction{MemberID: member}, nil
	case group != nil && *group < OneShotBase:
		return &TableAction{GroupID: group}, nil
	}
	var ids []uint32
	if member != nil {
		ids = []uint32{*member}
	} else {
		var g p4nf.Group
		raw, ok := r.s.eng.Entry(r.pl.who, r.pl.dev.cube, tblAPGroups, apKey(t.Profile, *group))
		if !ok || json.Unmarshal(raw, &g) != nil {
			return nil, errf(codes.Internal, "table %s: one-shot group %d is missing", t.Name, *group)
		}
		ids = g.Members
	}
	ap := r.pl.info.Edgenf.Profile(t.Profile)
	set := &ActionSet{}
	for _, id := range slices.Clone(ids) {
		var m p4nf.Member
		raw, ok := r.s.eng.Entry(r.pl.who, r.pl.dev.cube, tblAPMembers, apKey(t.Profile, id))
		if !ok || json.Unmarshal(raw, &m) != nil {
			return nil, errf(codes.Internal, "table %s: one-shot member %d is missing", t.Name, id)
		}
		a, err := r.memberAction(ap, &m)
		if err != nil {
			return nil, err
		}
		set.Actions = append(set.Actions, &ProfileAction{Action: a, Weight: 1})
	}
	return &TableAction{ActionSet: set}, nil
}
