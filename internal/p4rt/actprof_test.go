package p4rt

import (
	"encoding/json"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/edgenf/edgenf/internal/nftest"
	"github.com/edgenf/edgenf/internal/tenant"
)

// TestP4RuntimeActionSelector: examples/p4/ecmp.p4 driven over P4Runtime:
// members, groups, entries naming them and one-shot action sets are
// written, forward frames and read back as written; bad writes get precise
// status codes and change nothing.
func TestP4RuntimeActionSelector(t *testing.T) {
	r := newRig(t)
	r.stream(1).next("arbitration", isArb)
	if err := r.setPipeline(1, ActionVerifyAndCommit, program(t, "ecmp.p4"), nil, 0); err != nil {
		t.Fatal(err)
	}
	r.addPorts()
	info := r.info()
	if len(info.ActionProfiles) != 1 || !info.ActionProfiles[0].WithSelector {
		t.Fatalf("P4Info action profiles: %+v", info.ActionProfiles)
	}
	apID := info.ActionProfiles[0].Preamble.ID
	tl := tableID(t, info, "FwdIngress.routes")
	fwd := actionID(t, tl, "FwdIngress.forward")
	action := func(port byte) *Action {
		return &Action{ActionID: fwd.ID, Params: []*Param{{ParamID: fwd.Params[0].ID, Value: []byte{0xf1}},
			{ParamID: fwd.Params[1].ID, Value: []byte{0xa1}}, {ParamID: fwd.Params[2].ID, Value: []byte{port}}}}
	}
	member := func(id uint32, port byte) *Entity {
		return &Entity{APMember: &ActionProfileMember{ProfileID: apID, MemberID: id, Action: action(port)}}
	}
	group := func(id uint32, members ...uint32) *Entity {
		g := &ActionProfileGroup{ProfileID: apID, GroupID: id}
		for _, m := range members {
			g.Members = append(g.Members, &GroupMember{MemberID: m, Weight: 1})
		}
		return &Entity{APGroup: g}
	}
	route := func(prefix byte, ta *TableAction) *Entity {
		return &Entity{TableEntry: &TableEntry{TableID: tl.ID, Action: ta,
			Match: []*FieldMatch{{FieldID: tl.Keys[0].ID, Kind: "lpm", Value: []byte{198, prefix, 0, 0}, PrefixLen: 16}}}}
	}
	gid, mid := uint32(10), uint32(2)
	r.mustWrite(1, insert(member(1, 2)), insert(member(2, 2)), insert(group(10, 1, 2)),
		insert(route(19, &TableAction{GroupID: &gid})), insert(route(20, &TableAction{MemberID: &mid})))
	send := func(dst string, n int) {
		for range n {
			if err := r.eng.Inject(tenant.Admin, "sw", "p1", nftest.UDP4("198.18.0.1", dst, 1, 2, []byte("ecmp")), false); err != nil {
				t.Fatal(err)
			}
		}
	}
	send("198.19.0.1", 3)
	send("198.20.0.1", 2)
	if !r.waitTx(2, 5) {
		t.Fatalf("%d frames out of port 2, want 5", r.txPackets(2))
	}
	if ms := r.mustRead(&Entity{APMember: &ActionProfileMember{ProfileID: apID}}); len(ms) != 2 || ms[1].APMember.Action.Params[2].Value[0] != 2 {
		t.Fatalf("members read back: %+v", ms)
	}
	if gs := r.mustRead(&Entity{APGroup: &ActionProfileGroup{}}); len(gs) != 1 || len(gs[0].APGroup.Members) != 2 {
		t.Fatalf("groups read back: %+v", gs)
	}
	es := r.mustRead(&Entity{TableEntry: &TableEntry{TableID: tl.ID}})
	if len(es) != 2 {
		t.Fatalf("entries read back: %+v", es)
	}
	for _, e := range es {
		ta := e.TableEntry.Action
		if (ta.GroupID == nil || *ta.GroupID != 10) && (ta.MemberID == nil || *ta.MemberID != 2) {
			t.Fatalf("entry read back with action %+v", ta)
		}
	}

	// bad writes: precise codes, nothing changes
	heavy := group(11, 1)
	heavy.APGroup.Members[0].Weight = 3
	big := group(12, 1)
	big.APGroup.MaxSize = 5000
	hidden := uint32(OneShotBase + 1)
	for _, c := range []struct {
		what string
		u    *Update
		code codes.Code
	}{
		{"member weight 3", insert(heavy), codes.Unimplemented},
		{"max_size over the profile's", insert(big), codes.ResourceExhausted},
		{"a group of an unknown member", insert(group(13, 99)), codes.NotFound},
		{"a second member 1", insert(member(1, 1)), codes.AlreadyExists},
		{"deleting a member a group holds", del(member(1, 0)), codes.FailedPrecondition},
		{"deleting a group an entry names", del(group(10)), codes.FailedPrecondition},
		{"an id of edgenf's", insert(member(hidden, 1)), codes.InvalidArgument},
		{"a direct action in an indirect table", insert(route(21, &TableAction{Action: action(1)})), codes.InvalidArgument},
		{"an unknown group", insert(route(21, &TableAction{GroupID: &hidden})), codes.InvalidArgument},
		{"an unknown profile", insert(&Entity{APMember: &ActionProfileMember{ProfileID: 7, MemberID: 1, Action: action(1)}}), codes.InvalidArgument},
	} {
		wantCode(t, c.what, r.write(1, c.u), c.code)
	}
	if n := len(r.eng.Entries(tenant.Admin, "sw", "ap_members")); n != 2 {
		t.Fatalf("%d members after refused writes, want 2", n)
	}
	if n := len(r.mustRead(&Entity{TableEntry: &TableEntry{TableID: tl.ID}})); n != 2 {
		t.Fatalf("%d entries after refused writes, want 2", n)
	}

	// a one-shot action set: hidden members and group, read back as the set
	set := &ActionSet{Actions: []*ProfileAction{{Action: action(2), Weight: 1}, {Action: action(2), Weight: 1}}}
	r.mustWrite(1, insert(route(21, &TableAction{ActionSet: set})))
	send("198.21.0.1", 4)
	if !r.waitTx(2, 9) {
		t.Fatalf("%d frames out of port 2, want 9", r.txPackets(2))
	}
	got := r.mustRead(route(21, nil))
	if len(got) != 1 || got[0].TableEntry.Action.ActionSet == nil || len(got[0].TableEntry.Action.ActionSet.Actions) != 2 {
		t.Fatalf("one-shot entry read back: %+v", got)
	}
	if ms := r.mustRead(&Entity{APMember: &ActionProfileMember{}}); len(ms) != 2 {
		t.Fatalf("%d members read: the hidden ones of the action set are not the client's", len(ms))
	}
	if n := len(r.eng.Entries(tenant.Admin, "sw", "ap_members")); n != 4 {
		t.Fatalf("%d stored members with the action set's, want 4", n)
	}
	// replaced by a member, then deleted: the hidden members and group go
	r.mustWrite(1, modify(route(21, &TableAction{MemberID: &mid})))
	r.mustWrite(1, del(route(21, nil)))
	var left []string
	for _, raw := range r.eng.Entries(tenant.Admin, "sw", "ap_groups") {
		var g struct{ Group uint32 }
		json.Unmarshal(raw, &g)
		if g.Group >= OneShotBase {
			left = append(left, string(raw))
		}
	}
	if n := len(r.eng.Entries(tenant.Admin, "sw", "ap_members")); n != 2 || len(left) != 0 {
		t.Fatalf("after the one-shot entry went: %d members, hidden groups %v", n, left)
	}
	// the default action may name a group
	def := &Entity{TableEntry: &TableEntry{TableID: tl.ID, IsDefaultAction: true, Action: &TableAction{GroupID: &gid}}}
	r.mustWrite(1, modify(def))
	if d := r.mustRead(&Entity{TableEntry: &TableEntry{TableID: tl.ID, IsDefaultAction: true}}); len(d) != 1 || d[0].TableEntry.Action.GroupID == nil {
		t.Fatalf("default read back: %+v", d)
	}
}
