package tableruntime

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/cilium/ebpf"
)

// Packet replication state of v1model programs (backend/replicate.go):
// multicast groups and clone (mirroring) sessions, as BMv2's
// mc_mgrp_create/mc_node_create/mc_node_associate and
// mirroring_add/mirroring_add_mc configure them.

// Limits of the generated maps (backend/replicate.go).
const (
	MaxReplicas      = 32
	MaxMcastGroups   = 4096
	MaxCloneSessions = 1024
	// MaxSessionID is BMv2's largest mirroring session id; 0 means "no
	// clone" in v1model (clone(type, 0) makes no copy).
	MaxSessionID = 32767
	// MaxPort: replicas and sessions name cube ports 0..63 or the CPU
	// port 510.
	MaxPort = 63
	CPUPort = 510
)

// The maps of the replication state (bpf/include/edgenf/p4/replicate.h).
const (
	McGroupsMap      = "p4_mc_groups"
	CloneSessionsMap = "p4_clone_sessions"
)

// Replica is one copy of a multicast group: its egress_port and egress_rid.
type Replica struct {
	Port uint16 `json:"port"`
	Rid  uint16 `json:"rid"`
}

// CloneSession is where a clone session sends its copies: a port, or the
// replicas of a multicast group (McastGroup != 0); Truncate > 0 cuts the
// copies to that many bytes.
type CloneSession struct {
	Port       uint16 `json:"port"`
	McastGroup uint16 `json:"mcast_group,omitempty"`
	Truncate   uint32 `json:"truncate,omitempty"`
}

// Replicates reports whether the loaded program has replication maps.
func (p *Program) Replicates() bool {
	return p.Maps[McGroupsMap] != nil && p.Maps[CloneSessionsMap] != nil
}

func (p *Program) replMap(name string) (*ebpf.Map, error) {
	m := p.Maps[name]
	if m == nil {
		return nil, fmt.Errorf("the program uses neither clone nor multicast (no %s map)", name)
	}
	return m, nil
}

// ValidPort reports whether port can receive copies.
func ValidPort(port uint32) bool { return port <= MaxPort || port == CPUPort }

// ReplicationError is an invalid multicast group or clone session. Part
// names what is wrong: "id", "replicas", "port" or "truncate".
type ReplicationError struct {
	Part string
	Msg  string
}

func (e *ReplicationError) Error() string { return e.Msg }

func replErr(part, format string, args ...any) error {
	return &ReplicationError{Part: part, Msg: fmt.Sprintf(format, args...)}
}

// CheckMcastGroup validates a group before it is written
// (*ReplicationError).
func CheckMcastGroup(id uint32, reps []Replica) error {
	if id == 0 || id > 0xffff {
		return replErr("id", "multicast group %d: ids are 1..65535 (0 means no multicast)", id)
	}
	if len(reps) > MaxReplicas {
		return replErr("replicas", "multicast group %d: %d replicas, at most %d", id, len(reps), MaxReplicas)
	}
	seen := map[Replica]bool{}
	for _, r := range reps {
		if !ValidPort(uint32(r.Port)) {
			return replErr("replicas", "multicast group %d: port %d: ports are 0..%d or %d (CPU)", id, r.Port, MaxPort, CPUPort)
		}
		if seen[r] {
			return replErr("replicas", "multicast group %d: replica (port %d, rid %d) listed twice", id, r.Port, r.Rid)
		}
		seen[r] = true
	}
	return nil
}

// CheckCloneSession validates a session before it is written
// (*ReplicationError).
func CheckCloneSession(id uint32, s CloneSession) error {
	if id == 0 || id > MaxSessionID {
		return replErr("id", "clone session %d: ids are 1..%d (0 means no clone)", id, MaxSessionID)
	}
	if s.McastGroup == 0 && !ValidPort(uint32(s.Port)) {
		return replErr("port", "clone session %d: port %d: ports are 0..%d or %d (CPU)", id, s.Port, MaxPort, CPUPort)
	}
	if s.McastGroup != 0 && s.Port != 0 {
		return replErr("port", "clone session %d: give a port or a multicast group, not both", id)
	}
	if s.Truncate != 0 && s.Truncate < 14 {
		return replErr("truncate", "clone session %d: truncate %d is shorter than an Ethernet header (0: whole packet)", id, s.Truncate)
	}
	return nil
}

func encodeGroup(reps []Replica) []byte {
	b := make([]byte, 8+4*MaxReplicas)
	binary.NativeEndian.PutUint32(b[0:], uint32(len(reps)))
	for i, r := range reps {
		binary.NativeEndian.PutUint16(b[8+4*i:], r.Port)
		binary.NativeEndian.PutUint16(b[10+4*i:], r.Rid)
	}
	return b
}

func decodeGroup(b []byte) []Replica {
	n := int(binary.NativeEndian.Uint32(b[0:]))
	out := []Replica{}
	for i := 0; i < n && i < MaxReplicas; i++ {
		out = append(out, Replica{Port: binary.NativeEndian.Uint16(b[8+4*i:]), Rid: binary.NativeEndian.Uint16(b[10+4*i:])})
	}
	return out
}

// SetMcastGroup creates or replaces multicast group id with these replicas
// (an empty list is a group that makes no copy).
func (p *Program) SetMcastGroup(id uint32, reps []Replica) error {
	if err := CheckMcastGroup(id, reps); err != nil {
		return err
	}
	m, err := p.replMap(McGroupsMap)
	if err != nil {
		return err
	}
	return m.Update(id, encodeGroup(reps), ebpf.UpdateAny)
}

// DeleteMcastGroup removes a group (packets sent to it make no copy).
func (p *Program) DeleteMcastGroup(id uint32) error {
	m, err := p.replMap(McGroupsMap)
	if err != nil {
		return err
	}
	if err := m.Delete(id); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
		return err
	}
	return nil
}

// McastGroups reads every group back.
func (p *Program) McastGroups() (map[uint32][]Replica, error) {
	m, err := p.replMap(McGroupsMap)
	if err != nil {
		return nil, err
	}
	out := map[uint32][]Replica{}
	var k uint32
	var v []byte
	it := m.Iterate()
	for it.Next(&k, &v) {
		out[k] = decodeGroup(v)
	}
	return out, it.Err()
}

func encodeSession(s CloneSession) []byte {
	b := make([]byte, 16)
	binary.NativeEndian.PutUint32(b[0:], uint32(s.Port))
	binary.NativeEndian.PutUint32(b[4:], uint32(s.McastGroup))
	binary.NativeEndian.PutUint32(b[8:], s.Truncate)
	if s.McastGroup != 0 {
		binary.NativeEndian.PutUint32(b[12:], 1)
	}
	return b
}

// SetCloneSession creates or replaces clone session id.
func (p *Program) SetCloneSession(id uint32, s CloneSession) error {
	if err := CheckCloneSession(id, s); err != nil {
		return err
	}
	m, err := p.replMap(CloneSessionsMap)
	if err != nil {
		return err
	}
	return m.Update(id, encodeSession(s), ebpf.UpdateAny)
}

// DeleteCloneSession removes a session (clones to it make no copy).
func (p *Program) DeleteCloneSession(id uint32) error {
	m, err := p.replMap(CloneSessionsMap)
	if err != nil {
		return err
	}
	if err := m.Delete(id); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
		return err
	}
	return nil
}

// CloneSessions reads every session back.
func (p *Program) CloneSessions() (map[uint32]CloneSession, error) {
	m, err := p.replMap(CloneSessionsMap)
	if err != nil {
		return nil, err
	}
	out := map[uint32]CloneSession{}
	var k uint32
	var v []byte
	it := m.Iterate()
	for it.Next(&k, &v) {
		s := CloneSession{Port: uint16(binary.NativeEndian.Uint32(v[0:])), Truncate: binary.NativeEndian.Uint32(v[8:])}
		if binary.NativeEndian.Uint32(v[12:])&1 != 0 {
			s.McastGroup, s.Port = uint16(binary.NativeEndian.Uint32(v[4:])), 0
		}
		out[k] = s
	}
	return out, it.Err()
}
