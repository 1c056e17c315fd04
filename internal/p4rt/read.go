package p4rt

// Read: table entries (with their direct counters, meters and idle times),
// counters, registers, meters, multicast groups, clone sessions and digest
// configurations, from the engine's state and the p4 cube's views.

import (
	"context"
	"encoding/json"
	"fmt"
	"math/big"
	"slices"

	"github.com/edgenf/edgenf/internal/cube"
	p4nf "github.com/edgenf/edgenf/internal/nf/p4"

	"github.com/edgenf/edgenf/internal/p4/p4info"
	"google.golang.org/grpc/codes"
)

// readBatch is the number of entities per ReadResponse.
const readBatch = 512

// Read streams the entities asked for.
func (s *Server) Read(ctx context.Context, req *ReadRequest, send func(*ReadResponse) error) error {
	d, who, err := s.access(ctx, req.DeviceID)
	if err != nil {
		return err
	}
	pl, err := s.pipeline(d, who)
	if err != nil {
		return err
	}
	if req.Role != "" {
		return errf(codes.Unimplemented, "roles are not supported (role %q)", req.Role)
	}
	r := &reader{s: s, pl: pl, send: send}
	for _, e := range req.Entities {
		if err := r.entity(e); err != nil {
			return err
		}
	}
	return r.flush()
}

type reader struct {
	s    *Server
	pl   *pipeline
	send func(*ReadResponse) error
	out  []*Entity
}

func (r *reader) add(e *Entity) error {
	r.out = append(r.out, e)
	if len(r.out) >= readBatch {
		return r.flush()
	}
	return nil
}

func (r *reader) flush() error {
	if len(r.out) == 0 {
		return nil
	}
	err := r.send(&ReadResponse{Entities: r.out})
	r.out = nil
	return err
}

func (r *reader) entity(e *Entity) error {
	switch {
	case e.TableEntry != nil:
		return r.tables(e.TableEntry)
	case e.RegisterEntry != nil:
		return r.registers(e.RegisterEntry)
	case e.CounterEntry != nil:
		return r.counters(e.CounterEntry)
	case e.MeterEntry != nil:
		return r.meters(e.MeterEntry)
	case e.DirectCounterEntry != nil:
		return r.direct(e.DirectCounterEntry.TableEntry, false)
	case e.DirectMeterEntry != nil:
		return r.direct(e.DirectMeterEntry.TableEntry, true)
	case e.PREEntry != nil:
		return r.pre(e.PREEntry)
	case e.DigestEntry != nil:
		return r.digests(e.DigestEntry)
	case e.APMember != nil:
		return r.apMembers(e.APMember) // actprof.go
	case e.APGroup != nil:
		return r.apGroups(e.APGroup)
	case e.Other != 0:
		return errf(codes.Unimplemented, "reading %s is not supported by edgenf", entityNames[e.Other])
	}
	return errf(codes.InvalidArgument, "empty entity in the read request")
}

func (r *reader) tables(q *TableEntry) error {
	if q.IsDefaultAction {
		tables, err := r.tablesOf(q)
		if err != nil {
			return err
		}
		defaults := map[string]*p4nf.Default{}
		for _, raw := range r.s.eng.Entries(r.pl.who, r.pl.dev.cube, tblDefaults) {
			var d p4nf.Default
			if json.Unmarshal(raw, &d) == nil {
				defaults[d.Table] = &d
			}
		}
		for _, t := range tables {
			d := defaults[t.Name]
			var te *TableEntry
			var err error
			if d != nil && (d.Member != nil || d.Group != nil) { // actprof.go
				te = &TableEntry{TableID: t.ID, IsDefaultAction: true}
				te.Action, err = r.refAction(t, d.Member, d.Group)
			} else {
				te, err = defaultEntry(directLayout(t), d)
			}
			if err != nil {
				return errf(codes.Internal, "default entry of %s: %v", t.Name, err)
			}
			if err := r.add(&Entity{TableEntry: te}); err != nil {
				return err
			}
		}
		return nil
	}
	found, tables, err := r.entries(q)
	if err != nil {
		return err
	}
	byName := tablesByName(tables)
	var since map[string]int64
	if q.TimeSinceLastHit != nil {
		if since, err = r.sinceHit(found, byName); err != nil {
			return err
		}
	}
	out := make([]*TableEntry, len(found))
	for i := range found {
		e := &found[i]
		te, err := fromEntry(byName[e.Table], e)
		if err != nil {
			return errf(codes.Internal, "entry %s: %v", e.Key(), err)
		}
		te.Metadata = e.Metadata
		if e.Member != nil || e.Group != nil { // actprof.go
			if te.Action, err = r.refAction(byName[e.Table], e.Member, e.Group); err != nil {
				return err
			}
		}
		if ns, ok := since[e.Key()]; ok {
			te.TimeSinceLastHit = &ns
		}
		out[i] = te
	}
	if err := r.withDirect(q, found, out, byName); err != nil {
		return err
	}
	for _, te := range out {
		if err := r.add(&Entity{TableEntry: te}); err != nil {
			return err
		}
	}
	return nil
}

// tablesOf resolves the table a query names (0: every table).
func (r *reader) tablesOf(q *TableEntry) ([]*p4info.TableLayout, error) {
	if q.TableID == 0 {
		return r.pl.info.Edgenf.Tables, nil
	}
	t := tableByID(r.pl.info, q.TableID)
	if t == nil {
		return nil, errf(codes.InvalidArgument, "unknown table id %d (0x%08x)", q.TableID, q.TableID)
	}
	return []*p4info.TableLayout{t}, nil
}

func tablesByName(tables []*p4info.TableLayout) map[string]*p4info.TableLayout {
	m := make(map[string]*p4info.TableLayout, len(tables))
	for _, t := range tables {
		m[t.Name] = t
	}
	return m
}

// entries returns the stored entries a query names: its table (0: every
// table) and, if given, its match and priority; and the tables queried.
func (r *reader) entries(q *TableEntry) ([]p4nf.Entry, []*p4info.TableLayout, error) {
	tables, err := r.tablesOf(q)
	if err != nil {
		return nil, nil, err
	}
	var want string // one entry: its match id
	if len(q.Match) > 0 {
		if len(tables) != 1 {
			return nil, nil, errf(codes.InvalidArgument, "a read with a match needs a table id")
		}
		match, err := toMatch(tables[0], q.Match, q.Priority)
		if err != nil {
			return nil, nil, err
		}
		if want, err = matchID(tables[0], match, uint32(q.Priority)); err != nil {
			return nil, nil, errf(codes.InvalidArgument, "%v", err)
		}
	}
	byName := tablesByName(tables)
	var found []p4nf.Entry
	for _, raw := range r.s.eng.Entries(r.pl.who, r.pl.dev.cube, tblEntries) {
		var e p4nf.Entry
		if json.Unmarshal(raw, &e) != nil {
			continue
		}
		t := byName[e.Table]
		if t == nil {
			continue
		}
		if want != "" {
			if id, err := matchID(t, e.Match, e.Priority); err != nil || id != want {
				continue
			}
		}
		found = append(found, e)
	}
	return found, tables, nil
}

// sinceHit reads, in one call, how long ago the entries of tables with
// support_timeout were last hit (by entry key).
func (r *reader) sinceHit(entries []p4nf.Entry, tables map[string]*p4info.TableLayout) (map[string]int64, error) {
	var ask []p4nf.Entry
	for _, e := range entries {
		if tables[e.Table].IdleOffset != 0 {
			ask = append(ask, e)
		}
	}
	if len(ask) == 0 {
		return nil, nil
	}
	var hits []p4nf.SinceHit
	err := r.call(func(h cube.Handle, c *cube.Cube) (err error) {
		hits, err = p4nf.SinceHits(h, c, ask)
		return err
	})
	if err != nil {
		return nil, err
	}
	out := map[string]int64{}
	for _, h := range hits {
		out[h.Entry] = h.IdleNs
	}
	return out, nil
}

// call runs fn on the device's cube (engine.Call).
func (r *reader) call(fn func(h cube.Handle, c *cube.Cube) error) error {
	return fromEngine(r.s.eng.Call(r.pl.who, r.pl.dev.cube, fn))
}

func (r *reader) registers(q *RegisterEntry) error {
	regs := r.pl.info.Edgenf.Registers
	if q.RegisterID != 0 {
		g := registerByID(r.pl.info, q.RegisterID)
		if g == nil {
			return errf(codes.InvalidArgument, "unknown register id %d (0x%08x)", q.RegisterID, q.RegisterID)
		}
		regs = []*p4info.RegisterLayout{g}
	} else if q.Index != nil {
		return errf(codes.InvalidArgument, "a register read with an index needs a register id")
	}
	for _, g := range regs {
		idx, err := cells("register "+g.Name, q.Index, g.Size)
		if err != nil {
			return err
		}
		var vals []p4nf.RegisterValue
		err = r.call(func(h cube.Handle, c *cube.Cube) (err error) {
			vals, err = p4nf.ReadRegister(h, c, p4nf.RegisterCells{Register: g.Name, Index: idx})
			return err
		})
		if err != nil {
			return err
		}
		for _, c := range vals {
			data := &P4Data{Kind: "bitstring", Bitstring: minimalBytes(new(big.Int).SetUint64(c.Value))}
			if g.Bool {
				data = &P4Data{Kind: "bool", Bool: c.Value != 0}
			}
			if err := r.add(&Entity{RegisterEntry: &RegisterEntry{RegisterID: g.ID, Index: &Index{Index: int64(c.Index)}, Data: data}}); err != nil {
				return err
			}
		}
	}
	return nil
}

func (r *reader) counters(q *CounterEntry) error {
	var ctrs []*p4info.CounterLayout
	for _, c := range r.pl.info.Edgenf.Counters {
		if !c.Direct && (q.CounterID == 0 || c.ID == q.CounterID) {
			ctrs = append(ctrs, c)
		}
	}
	if q.CounterID != 0 && len(ctrs) == 0 {
		return errf(codes.InvalidArgument, "unknown counter id %d (0x%08x)", q.CounterID, q.CounterID)
	}
	if q.CounterID == 0 && q.Index != nil {
		return errf(codes.InvalidArgument, "a counter read with an index needs a counter id")
	}
	v, err := r.s.eng.View(r.pl.who, r.pl.dev.cube, "counters")
	if err != nil {
		return fromEngine(err)
	}
	vals, _ := v.([]p4nf.CounterValue)
	got := map[string]p4nf.CounterValue{}
	for _, c := range vals {
		got[fmt.Sprintf("%s/%d", c.Counter, c.Index)] = c
	}
	for _, c := range ctrs {
		idx, err := cells("counter "+c.Name, q.Index, c.Size)
		if err != nil {
			return err
		}
		lo, hi := 0, c.Size-1
		if idx != nil {
			lo, hi = int(*idx), int(*idx)
		}
		for i := lo; i <= hi; i++ {
			cv := got[fmt.Sprintf("%s/%d", c.Name, i)]
			data := &CounterData{ByteCount: int64(cv.Bytes), PacketCount: int64(cv.Packets)}
			if err := r.add(&Entity{CounterEntry: &CounterEntry{CounterID: c.ID, Index: &Index{Index: int64(i)}, Data: data}}); err != nil {
				return err
			}
		}
	}
	return nil
}

func (r *reader) meters(q *MeterEntry) error {
	var ms []*p4info.MeterLayout
	for _, m := range r.pl.info.Edgenf.Meters {
		if q.MeterID == 0 || m.ID == q.MeterID {
			ms = append(ms, m)
		}
	}
	if q.MeterID != 0 && len(ms) == 0 {
		return errf(codes.InvalidArgument, "unknown meter id %d (0x%08x)", q.MeterID, q.MeterID)
	}
	var vals []p4nf.MeterValue
	err := r.call(func(h cube.Handle, c *cube.Cube) (err error) {
		vals, err = p4nf.Meters(h, c)
		return err
	})
	if err != nil {
		return err
	}
	got := map[string]p4nf.MeterValue{}
	for _, m := range vals {
		got[fmt.Sprintf("%s/%d", m.Meter, m.Index)] = m
	}
	for _, m := range ms {
		idx, err := cells("meter "+m.Name, q.Index, m.Size)
		if err != nil {
			return err
		}
		lo, hi := 0, m.Size-1
		if idx != nil {
			lo, hi = int(*idx), int(*idx)
		}
		for i := lo; i <= hi; i++ {
			out := &MeterEntry{MeterID: m.ID, Index: &Index{Index: int64(i)}}
			if mv, ok := got[fmt.Sprintf("%s/%d", m.Name, i)]; ok {
				out.Config = &MeterConfig{CIR: int64(mv.CIR), CBurst: int64(mv.CBurst), PIR: int64(mv.PIR), PBurst: int64(mv.PBurst)}
			}
			if err := r.add(&Entity{MeterEntry: out}); err != nil {
				return err
			}
		}
	}
	return nil
}

// replicaOut is a replica in the form its client wrote it: the port as
// bytes (Replica.port) or, for clients of the deprecated field, as
// egress_port.
func replicaOut(port, rid uint16, egressPort bool) *Replica {
	if egressPort {
		return &Replica{EgressPort: uint32(port), Instance: uint32(rid)}
	}
	return &Replica{Port: minimalBytes(big.NewInt(int64(port))), Instance: uint32(rid)}
}

func (r *reader) pre(q *PREEntry) error {
	cubeName := r.pl.dev.cube
	st, err := p4nf.RuntimeState(r.pl.cube)
	if err != nil {
		return errf(codes.Internal, "cube %s: %v", cubeName, err)
	}
	switch {
	case q.MulticastGroup != nil:
		for _, raw := range r.s.eng.Entries(r.pl.who, cubeName, tblGroups) {
			var g p4nf.McastGroup
			if json.Unmarshal(raw, &g) != nil || (q.MulticastGroup.GroupID != 0 && g.Group != q.MulticastGroup.GroupID) {
				continue
			}
			out := &MulticastGroupEntry{GroupID: g.Group}
			for _, rep := range g.Replicas {
				out.Replicas = append(out.Replicas, replicaOut(rep.Port, rep.Rid, slices.Contains(st.EgressPortGroups, g.Group)))
			}
			if err := r.add(&Entity{PREEntry: &PREEntry{MulticastGroup: out}}); err != nil {
				return err
			}
		}
	case q.CloneSession != nil:
		for _, raw := range r.s.eng.Entries(r.pl.who, cubeName, tblClones) {
			var c p4nf.CloneSession
			if json.Unmarshal(raw, &c) != nil || (q.CloneSession.SessionID != 0 && c.Session != q.CloneSession.SessionID) {
				continue
			}
			out := &CloneSessionEntry{SessionID: c.Session, PacketLengthBytes: int32(c.Truncate)}
			if c.Port != nil {
				out.Replicas = []*Replica{replicaOut(*c.Port, 0, slices.Contains(st.EgressPortSessions, c.Session))}
			}
			// a session to a multicast group (configured through the
			// REST API) has no P4Runtime form: it is listed without replicas
			if err := r.add(&Entity{PREEntry: &PREEntry{CloneSession: out}}); err != nil {
				return err
			}
		}
	default:
		return errf(codes.InvalidArgument, "empty packet_replication_engine_entry in the read request")
	}
	return nil
}

func (r *reader) digests(q *DigestEntry) error {
	d := r.pl.dev
	d.mu.Lock()
	var out []*Entity
	for id, cfg := range d.digests {
		if q.DigestID == 0 || q.DigestID == id {
			c := *cfg
			out = append(out, &Entity{DigestEntry: &DigestEntry{DigestID: id, Config: &c}})
		}
	}
	d.mu.Unlock()
	for _, e := range out {
		if err := r.add(e); err != nil {
			return err
		}
	}
	return nil
}
