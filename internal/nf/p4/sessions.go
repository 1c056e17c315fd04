package p4

import (
	"errors"
	"fmt"
	"strings"

	"github.com/cilium/ebpf"
	"github.com/edgenf/edgenf/internal/cube"
	p4c "github.com/edgenf/edgenf/internal/p4"
	"github.com/edgenf/edgenf/internal/p4/tableruntime"
)

// Packet replication of a p4 cube: clone (mirroring) sessions and multicast
// groups, the configuration BMv2's mirroring_add/mirroring_add_mc and
// mc_mgrp_create/mc_node_create/mc_node_associate build. They are tables of
// the cube (desired state, persisted, restored by Sync) written into the
// program's p4_clone_sessions and p4_mc_groups maps.

// CloneSession sends the copies of clone(type, Session) out of Port, or to
// every replica of multicast group McastGroup; Truncate > 0 cuts them to
// that many bytes.
type CloneSession struct {
	Session    uint32  `json:"session" minimum:"1" maximum:"32767"`
	Port       *uint16 `json:"port,omitempty"`
	McastGroup uint16  `json:"mcast_group,omitempty"`
	Truncate   uint32  `json:"truncate,omitempty"`
}

func (s *CloneSession) rt() tableruntime.CloneSession {
	out := tableruntime.CloneSession{McastGroup: s.McastGroup, Truncate: s.Truncate}
	if s.Port != nil {
		out.Port = *s.Port
	}
	return out
}

// Validate checks the session against the limits and the cube's program.
func (s *CloneSession) Validate(c *cube.Cube) error {
	if (s.Port == nil) == (s.McastGroup == 0) {
		return cube.Errorf("port", "clone session %d: give either a port or a mcast_group", s.Session)
	}
	if err := tableruntime.CheckCloneSession(s.Session, s.rt()); err != nil {
		return cube.Errorf(replField(err, "session"), "%v", err)
	}
	return replicating(c)
}

// replField is the field of a CloneSession or McastGroup that err (from
// tableruntime's checks) is about; idField is the one of the id.
func replField(err error, idField string) string {
	var re *tableruntime.ReplicationError
	if !errors.As(err, &re) {
		return ""
	}
	if re.Part == "id" {
		return idField
	}
	return re.Part
}

// McastGroup is a multicast group: the packets with
// standard_metadata.mcast_grp == Group are copied once per replica, each
// copy running egress with the replica's egress_port and egress_rid.
type McastGroup struct {
	Group    uint32                 `json:"group" minimum:"1" maximum:"65535"`
	Replicas []tableruntime.Replica `json:"replicas" maxItems:"32" doc:"(port, rid) copies, each once (422 otherwise)"`
}

// Validate checks the group against the limits and the cube's program.
func (g *McastGroup) Validate(c *cube.Cube) error {
	if err := tableruntime.CheckMcastGroup(g.Group, g.Replicas); err != nil {
		if f := replField(err, "group"); f == "replicas" && strings.Contains(err.Error(), "listed twice") {
			return cube.Unprocessable(f, "%v", err)
		} else {
			return cube.Errorf(f, "%v", err)
		}
	}
	if err := replicating(c); err != nil {
		return err
	}
	if g.Replicas == nil {
		g.Replicas = []tableruntime.Replica{}
	}
	return nil
}

// replicating refuses replication state for programs that cannot use it.
func replicating(c *cube.Cube) error {
	r, err := programOf(c)
	if err != nil {
		return err
	}
	if !Replicates(r) {
		return cube.NotFound("program", "the program uses neither clone nor multicast (standard_metadata.mcast_grp, PSA's ostd.multicast_group): it has no clone sessions or multicast groups")
	}
	return nil
}

// Replicates reports whether a compiled program has clone sessions and
// multicast groups.
func Replicates(r *p4c.Result) bool { return r.Program.Replicates }

var cloneSessionsTable = cube.Table{
	Name: "clone_sessions",
	Doc:  "Clone (mirroring) sessions: where clone(type, session) (v1model) or ostd.clone with clone_session_id (PSA) copies go (key: session).",
	Item: &CloneSession{},
	Key:  func(v any) string { return fmt.Sprint(v.(*CloneSession).Session) },
}

var mcGroupsTable = cube.Table{
	Name: "mcast_groups",
	Doc:  "Multicast groups: the (port, rid) replicas of standard_metadata.mcast_grp (v1model) or ostd.multicast_group (PSA; rid is egress instance) (key: group).",
	Item: &McastGroup{},
	Key:  func(v any) string { return fmt.Sprint(v.(*McastGroup).Group) },
}

// replMaps adds the replication maps of a replicating program.
func replMaps(h cube.Handle, r *p4c.Result, maps map[string]*ebpf.Map) error {
	if !Replicates(r) {
		return nil
	}
	for _, name := range []string{tableruntime.McGroupsMap, tableruntime.CloneSessionsMap} {
		m, err := h.Map(name)
		if err != nil {
			return err
		}
		maps[name] = m
	}
	return nil
}

// syncReplication writes every session and group of the cube, and removes
// from the maps those the cube no longer has.
func syncReplication(prog *tableruntime.Program, c *cube.Cube) error {
	if !prog.Replicates() {
		return nil
	}
	sessions, err := cloneSessionsTable.Entries(c)
	if err != nil {
		return err
	}
	want := map[uint32]bool{}
	for _, v := range sessions {
		s := v.(*CloneSession)
		want[s.Session] = true
		if err := prog.SetCloneSession(s.Session, s.rt()); err != nil {
			return err
		}
	}
	have, err := prog.CloneSessions()
	if err != nil {
		return err
	}
	for id := range have {
		if !want[id] {
			if err := prog.DeleteCloneSession(id); err != nil {
				return err
			}
		}
	}
	groups, err := mcGroupsTable.Entries(c)
	if err != nil {
		return err
	}
	want = map[uint32]bool{}
	for _, v := range groups {
		g := v.(*McastGroup)
		want[g.Group] = true
		if err := prog.SetMcastGroup(g.Group, g.Replicas); err != nil {
			return err
		}
	}
	hg, err := prog.McastGroups()
	if err != nil {
		return err
	}
	for id := range hg {
		if !want[id] {
			if err := prog.DeleteMcastGroup(id); err != nil {
				return err
			}
		}
	}
	return nil
}

// putRepl and deleteRepl apply one session or group change.
func putRepl(prog *tableruntime.Program, item any) (bool, error) {
	switch v := item.(type) {
	case *CloneSession:
		return true, prog.SetCloneSession(v.Session, v.rt())
	case *McastGroup:
		return true, prog.SetMcastGroup(v.Group, v.Replicas)
	}
	return false, nil
}

func deleteRepl(prog *tableruntime.Program, item any) (bool, error) {
	switch v := item.(type) {
	case *CloneSession:
		return true, prog.DeleteCloneSession(v.Session)
	case *McastGroup:
		return true, prog.DeleteMcastGroup(v.Group)
	}
	return false, nil
}
