package p4rt

// Writes of the packet replication engine: multicast groups and clone
// sessions (the cube's mcast_groups and clone_sessions tables).

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/big"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/engine"
	p4nf "github.com/edgenf/edgenf/internal/nf/p4"
	"github.com/edgenf/edgenf/internal/p4/tableruntime"
	"google.golang.org/grpc/codes"
	gstatus "google.golang.org/grpc/status"
)

// port16 reads a replica's port.
func port16(r *Replica) (uint16, error) {
	v := big.NewInt(int64(r.EgressPort))
	if r.Port != nil {
		if len(r.Port) == 0 {
			return 0, errf(codes.InvalidArgument, "replica with an empty port")
		}
		v = new(big.Int).SetBytes(r.Port)
	}
	if v.BitLen() > 16 {
		return 0, errf(codes.InvalidArgument, "replica port 0x%x is out of range (cube ports 0..63, CPU port %d)", v, tableruntime.CPUPort)
	}
	if r.Instance > 0xffff {
		return 0, errf(codes.InvalidArgument, "replica instance %d does not fit in 16 bits", r.Instance)
	}
	return uint16(v.Uint64()), nil
}

func (w *writer) pre(typ int32, p *PREEntry) error {
	var table, key string
	var raw []byte
	switch {
	case p.MulticastGroup != nil:
		g := p.MulticastGroup
		mg := p4nf.McastGroup{Group: g.GroupID, Replicas: []tableruntime.Replica{}}
		for _, r := range g.Replicas {
			port, err := port16(r)
			if err != nil {
				return errf(codes.InvalidArgument, "multicast group %d: %s", g.GroupID, gstatus.Convert(err).Message())
			}
			mg.Replicas = append(mg.Replicas, tableruntime.Replica{Port: port, Rid: uint16(r.Instance)})
		}
		table, key = tblGroups, fmt.Sprint(g.GroupID)
		raw, _ = json.Marshal(mg)
		if g.GroupID == 0 {
			return errf(codes.InvalidArgument, "multicast group id 0 is not a group")
		}
	case p.CloneSession != nil:
		c := p.CloneSession
		table, key = tblClones, fmt.Sprint(c.SessionID)
		if c.SessionID == 0 {
			return errf(codes.InvalidArgument, "clone session id 0 is not a session")
		}
		cs := p4nf.CloneSession{Session: c.SessionID}
		if typ != UpdateDelete {
			if c.ClassOfService != 0 {
				return errf(codes.Unimplemented, "clone session %d: class_of_service is not supported", c.SessionID)
			}
			if c.PacketLengthBytes < 0 {
				return errf(codes.InvalidArgument, "clone session %d: negative packet_length_bytes", c.SessionID)
			}
			switch len(c.Replicas) {
			case 0:
				return errf(codes.InvalidArgument, "clone session %d needs one replica (the port copies leave by)", c.SessionID)
			case 1:
			default:
				return errf(codes.Unimplemented, "clone session %d: edgenf clone sessions have one replica; to copy to several ports, clone to a multicast group", c.SessionID)
			}
			port, err := port16(c.Replicas[0])
			if err != nil {
				return errf(codes.InvalidArgument, "clone session %d: %s", c.SessionID, gstatus.Convert(err).Message())
			}
			cs.Port, cs.Truncate = &port, uint32(c.PacketLengthBytes)
		}
		raw, _ = json.Marshal(cs)
	default:
		return errf(codes.InvalidArgument, "empty packet_replication_engine_entry")
	}
	what := map[string]string{tblGroups: "multicast group", tblClones: "clone session"}[table]
	err := w.change(table, func(tx *engine.EntryTx) error {
		if _, exists := tx.Get(key); !exists && typ != UpdateInsert {
			return errf(codes.NotFound, "%s %s does not exist", what, key)
		}
		switch typ {
		case UpdateInsert:
			if _, err := tx.Insert(raw); errors.Is(err, cube.ErrConflict) {
				return errf(codes.AlreadyExists, "%s %s already exists", what, key)
			} else if err != nil {
				return err
			}
			return nil
		case UpdateDelete:
			return tx.Delete(key)
		}
		_, err := tx.Put(raw)
		return err
	})
	if err != nil {
		return err
	}
	// the replicas are read back in the form they were written in
	switch {
	case p.MulticastGroup != nil:
		g := p.MulticastGroup
		return w.replicaForm(&w.rt.EgressPortGroups, g.GroupID, typ != UpdateDelete && egressPortForm(g.Replicas))
	default:
		c := p.CloneSession
		return w.replicaForm(&w.rt.EgressPortSessions, c.SessionID, typ != UpdateDelete && egressPortForm(c.Replicas))
	}
}

// replicaForm records whether group or session id's replicas were written
// with egress_port, in the cube's P4Runtime state, when that changes.
func (w *writer) replicaForm(ids *[]uint32, id uint32, egressPort bool) error {
	next, changed := withID(*ids, id, egressPort)
	if !changed {
		return nil
	}
	*ids = next
	st := w.rt
	return w.s.updateRuntime(w.ctx, w.pl.who, w.pl.dev.cube, func(s *p4nf.P4RuntimeState) {
		s.EgressPortGroups, s.EgressPortSessions = st.EgressPortGroups, st.EgressPortSessions
	})
}
