package p4rt

// Write: table entries, default actions, registers, meters, multicast
// groups, clone sessions and digest configuration, through the engine's
// transactional entry path (validated, written to the kernel, persisted)
// and the p4 cube's actions. Read is in read.go.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"syscall"
	"time"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/engine"
	p4nf "github.com/edgenf/edgenf/internal/nf/p4"
	"github.com/edgenf/edgenf/internal/p4/p4info"
	"github.com/edgenf/edgenf/internal/p4/tableruntime"
	"google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc/codes"
	gstatus "google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/anypb"
)

// errorTypeURL is the type of the p4.v1.Error details of a failed Write.
const errorTypeURL = "type.googleapis.com/p4.v1.Error"

// Edgenf's tables of a p4 cube.
const (
	tblEntries  = "entries"
	tblDefaults = "defaults"
	tblClones   = "clone_sessions"
	tblGroups   = "mcast_groups"
)

// Write applies a batch of updates. Each update is applied on its own
// (CONTINUE_ON_ERROR); a failed one changes nothing. Errors: a batch of
// one update fails with that update's code; a longer batch fails with
// UNKNOWN and one p4.v1.Error per update (OK for those that were applied)
// in the status details, as the spec asks.
func (s *Server) Write(ctx context.Context, req *WriteRequest) (*WriteResponse, error) {
	d, who, err := s.access(ctx, req.DeviceID)
	if err != nil {
		return nil, err
	}
	pl, err := s.pipeline(d, who)
	if err != nil {
		return nil, err
	}
	if err := pl.dev.checkPrimary(req.Role, req.ElectionID); err != nil {
		return nil, err
	}
	switch req.Atomicity {
	case AtomicityContinueOnError:
	case AtomicityRollbackOnError, AtomicityDataplaneAtomic:
		if len(req.Updates) > 1 {
			return nil, errf(codes.Unimplemented, "atomicity %d: only CONTINUE_ON_ERROR is supported for batches of more than one update", req.Atomicity)
		}
	default:
		return nil, errf(codes.InvalidArgument, "unknown atomicity %d", req.Atomicity)
	}
	pl.dev.writeMu.Lock()
	defer pl.dev.writeMu.Unlock()
	rt, err := p4nf.RuntimeState(pl.cube)
	if err != nil {
		return nil, errf(codes.Internal, "cube %s: %v", pl.dev.cube, err)
	}
	w := &writer{ctx: ctx, s: s, pl: pl, index: pl.dev.entryIndexes(s.eng.Revision()), rt: &rt}
	errs := make([]error, len(req.Updates))
	failed := 0
	for i, u := range req.Updates {
		if errs[i] = w.apply(u); errs[i] != nil {
			failed++
		}
	}
	if failed == 0 {
		return &WriteResponse{}, nil
	}
	return nil, batchError(errs, failed)
}

// batchError builds the status of a failed batch with p4.v1.Error details.
func batchError(errs []error, failed int) error {
	st := &status.Status{Code: int32(codes.Unknown), Message: fmt.Sprintf("%d of %d updates failed", failed, len(errs))}
	var first *gstatus.Status
	for _, err := range errs {
		pe := &P4Error{CanonicalCode: int32(codes.OK)}
		if err != nil {
			es, _ := gstatus.FromError(err)
			pe = &P4Error{CanonicalCode: int32(es.Code()), Message: es.Message(), Space: "edgenf"}
			if first == nil {
				first = es
			}
		}
		st.Details = append(st.Details, &anypb.Any{TypeUrl: errorTypeURL, Value: marshal(pe)})
	}
	if len(errs) == 1 {
		st.Code, st.Message = int32(first.Code()), first.Message()
	} else {
		st.Message += ": first: " + first.Message()
	}
	return gstatus.ErrorProto(st)
}

type writer struct {
	ctx context.Context
	s   *Server
	pl  *pipeline
	// index: table name → matchID → key of the stored entry (the
	// device's, kept across writes)
	index map[string]map[string]string
	// rt: the cube's P4Runtime state as the batch changes it
	rt *p4nf.P4RuntimeState
}

// entryIndexes returns the device's indexes of stored entries, emptied if
// the configuration changed since they were built (rev: the engine's
// revision now). Called with writeMu held.
func (d *device) entryIndexes(rev uint64) map[string]map[string]string {
	if d.index == nil || d.indexRev != rev {
		d.index, d.indexRev = map[string]map[string]string{}, rev
	}
	return d.index
}

func (w *writer) apply(u *Update) error {
	if u.Entity == nil {
		return errf(codes.InvalidArgument, "update without an entity")
	}
	if u.Type < UpdateInsert || u.Type > UpdateDelete {
		return errf(codes.InvalidArgument, "update type %d: want INSERT, MODIFY or DELETE", u.Type)
	}
	e := u.Entity
	switch {
	case e.TableEntry != nil:
		return w.table(u.Type, e.TableEntry)
	case e.RegisterEntry != nil:
		return w.register(u.Type, e.RegisterEntry)
	case e.MeterEntry != nil:
		return w.meter(u.Type, e.MeterEntry)
	case e.CounterEntry != nil:
		return w.counter(u.Type, e.CounterEntry)
	case e.DirectCounterEntry != nil:
		return w.directCounter(u.Type, e.DirectCounterEntry)
	case e.DirectMeterEntry != nil:
		return w.directMeter(u.Type, e.DirectMeterEntry)
	case e.PREEntry != nil:
		return w.pre(u.Type, e.PREEntry)
	case e.DigestEntry != nil:
		return w.digest(u.Type, e.DigestEntry)
	case e.APMember != nil:
		return w.apMember(u.Type, e.APMember) // actprof.go
	case e.APGroup != nil:
		return w.apGroup(u.Type, e.APGroup)
	case e.Other != 0:
		return errf(codes.Unimplemented, "%s is not supported by edgenf", entityNames[e.Other])
	}
	return errf(codes.InvalidArgument, "empty entity")
}

// engineErr maps the error of an engine write; a full table or map is
// RESOURCE_EXHAUSTED.
func engineErr(err error) error {
	if errors.Is(err, syscall.E2BIG) || errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.ENOMEM) ||
		errors.Is(err, cube.ErrFull) || errors.Is(err, tableruntime.ErrTableFull) {
		return errf(codes.ResourceExhausted, "%v", err)
	}
	return fromEngine(err)
}

func (w *writer) change(table string, fn func(tx *engine.EntryTx) error) error {
	d := w.pl.dev
	if err := w.s.eng.ChangeEntries(w.pl.who, d.cube, table, fn); err != nil {
		return engineErr(err)
	}
	// Our change is one revision: the indexes stay current, as the writer
	// updates them; anything more was someone else's and voids them.
	if rev := w.s.eng.Revision(); rev == d.indexRev+1 {
		d.indexRev = rev
	} else {
		clear(w.index)
		d.indexRev = rev
	}
	return nil
}

// entryIndex maps the match of each stored entry of a table to its key.
func (w *writer) entryIndex(t *p4info.TableLayout) map[string]string {
	if idx, ok := w.index[t.Name]; ok {
		return idx
	}
	idx := map[string]string{}
	for _, raw := range w.s.eng.Entries(w.pl.who, w.pl.dev.cube, tblEntries) {
		var e p4nf.Entry
		if json.Unmarshal(raw, &e) != nil || e.Table != t.Name {
			continue
		}
		id, err := matchID(t, e.Match, e.Priority)
		if err != nil {
			continue
		}
		idx[id] = e.Key()
	}
	w.index[t.Name] = idx
	return idx
}

func (w *writer) table(typ int32, te *TableEntry) error {
	t := tableByID(w.pl.info, te.TableID)
	if t == nil {
		return errf(codes.InvalidArgument, "unknown table id %d (0x%08x)", te.TableID, te.TableID)
	}
	if te.Unsupported != "" {
		return errf(codes.Unimplemented, "table %s: %s is not supported", t.Name, te.Unsupported)
	}
	if err := checkDirect(t, te); err != nil {
		return err
	}
	if te.IsDefaultAction {
		return w.defaultAction(typ, t, te)
	}
	switch t.Kind {
	case "const":
		return errf(codes.PermissionDenied, "table %s has const entries: it cannot be changed at runtime", t.Name)
	case "keyless":
		return errf(codes.InvalidArgument, "table %s has no key: only its default action can be set (is_default_action)", t.Name)
	}
	match, err := toMatch(t, te.Match, te.Priority)
	if err != nil {
		return err
	}
	e := &p4nf.Entry{Table: t.Name, Match: match, Priority: uint32(te.Priority), Metadata: te.Metadata}
	if te.IdleTimeoutNs < 0 {
		return errf(codes.InvalidArgument, "table %s: negative idle_timeout_ns", t.Name)
	}
	if te.IdleTimeoutNs > 0 {
		if t.IdleOffset == 0 {
			return errf(codes.InvalidArgument, "table %s: idle_timeout_ns set on a table without support_timeout", t.Name)
		}
		e.IdleTimeout = time.Duration(te.IdleTimeoutNs).String()
	}
	id, err := matchID(t, match, e.Priority)
	if err != nil {
		return errf(codes.InvalidArgument, "table %s: %v", t.Name, err)
	}
	idx := w.entryIndex(t)
	stored, exists := idx[id]
	if (typ == UpdateInsert && exists) || (typ != UpdateInsert && !exists) {
		return w.table1(typ, t, te, e, match, idx, id, stored, exists)
	}
	var old json.RawMessage
	if exists {
		old, _ = w.s.eng.Entry(w.pl.who, w.pl.dev.cube, tblEntries, stored)
	}
	if typ != UpdateDelete {
		if ok, err := w.indirect(t, te.Action, &e.Member, &e.Group); ok { // actprof.go
			if err != nil {
				return err
			}
		} else {
			if te.Action == nil || te.Action.Action == nil {
				return errf(codes.InvalidArgument, "table %s: the entry needs an action", t.Name)
			}
			al, params, err := toAction(t, te.Action.Action, false)
			if err != nil {
				return err
			}
			e.Action, e.Params = al.Name, params
		}
	}
	err = w.table1(typ, t, te, e, match, idx, id, stored, exists)
	if err != nil && typ != UpdateDelete { // the one-shot members and group made for it
		w.releaseOneShot(t, mustJSON(e))
	} else if err == nil && typ != UpdateInsert {
		w.releaseOneShot(t, old)
	}
	return err
}

func mustJSON(v any) json.RawMessage { b, _ := json.Marshal(v); return b }

// table1 applies one checked table entry update.
func (w *writer) table1(typ int32, t *p4info.TableLayout, te *TableEntry, e *p4nf.Entry, match map[string]string, idx map[string]string, id, stored string, exists bool) error {
	key := e.Key()
	raw, _ := json.Marshal(e)
	switch typ {
	case UpdateInsert:
		if exists {
			return errf(codes.AlreadyExists, "table %s already has an entry with this match and priority (%s)", t.Name, stored)
		}
		// the engine's Insert: never a replacement, whatever the index says
		if err := w.change(tblEntries, func(tx *engine.EntryTx) error { _, err := tx.Insert(raw); return err }); err != nil {
			return err
		}
		idx[id] = key
		return w.entryDirect(t, te, match)
	case UpdateModify:
		if !exists {
			return errf(codes.NotFound, "table %s has no entry with this match and priority", t.Name)
		}
		if err := w.change(tblEntries, func(tx *engine.EntryTx) error {
			if stored != key {
				if err := tx.Delete(stored); err != nil {
					return err
				}
			}
			_, err := tx.Put(raw)
			return err
		}); err != nil {
			return err
		}
		idx[id] = key
		return w.entryDirect(t, te, match)
	case UpdateDelete:
		if !exists {
			return errf(codes.NotFound, "table %s has no entry with this match and priority", t.Name)
		}
		if err := w.change(tblEntries, func(tx *engine.EntryTx) error { return tx.Delete(stored) }); err != nil {
			return err
		}
		delete(idx, id)
	}
	return nil
}

func (w *writer) defaultAction(typ int32, t *p4info.TableLayout, te *TableEntry) error {
	if typ != UpdateModify {
		return errf(codes.InvalidArgument, "table %s: the default entry can only be modified (MODIFY)", t.Name)
	}
	if len(te.Match) > 0 || te.Priority != 0 {
		return errf(codes.InvalidArgument, "table %s: a default entry has no match and no priority", t.Name)
	}
	if t.ConstDefault {
		return errf(codes.PermissionDenied, "table %s has a const default_action", t.Name)
	}
	if te.Action != nil && te.Action.Action == nil && (te.Action.MemberID != nil || te.Action.GroupID != nil) {
		d := &p4nf.Default{Table: t.Name, Member: te.Action.MemberID, Group: te.Action.GroupID} // actprof.go
		raw, _ := json.Marshal(d)
		return w.change(tblDefaults, func(tx *engine.EntryTx) error { _, err := tx.Put(raw); return err })
	}
	if te.Action != nil && te.Action.ActionSet != nil {
		return errf(codes.Unimplemented, "table %s: a one-shot action set as the default action is not supported; name a member or a group", t.Name)
	}
	if te.Action == nil || te.Action.Action == nil {
		// no action: back to the program's default
		return w.change(tblDefaults, func(tx *engine.EntryTx) error {
			if _, ok := tx.Get(t.Name); ok {
				return tx.Delete(t.Name)
			}
			return nil
		})
	}
	al, params, err := toAction(t, te.Action.Action, true)
	if err != nil {
		return err
	}
	raw, _ := json.Marshal(&p4nf.Default{Table: t.Name, Action: al.Name, Params: params})
	return w.change(tblDefaults, func(tx *engine.EntryTx) error { _, err := tx.Put(raw); return err })
}

// cells checks an index against a size: nil is every cell.
func cells(what string, idx *Index, size int) (*uint32, error) {
	if idx == nil {
		return nil, nil
	}
	if idx.Index < 0 || idx.Index >= int64(size) {
		return nil, errf(codes.InvalidArgument, "%s has %d cells (0..%d): index %d is out of range", what, size, size-1, idx.Index)
	}
	i := uint32(idx.Index)
	return &i, nil
}

func registerByID(info *p4info.P4Info, id uint32) *p4info.RegisterLayout {
	for _, r := range info.Edgenf.Registers {
		if r.ID == id {
			return r
		}
	}
	return nil
}

func meterByID(info *p4info.P4Info, id uint32) *p4info.MeterLayout {
	for _, m := range info.Edgenf.Meters {
		if m.ID == id {
			return m
		}
	}
	return nil
}

// call runs fn on the device's cube (engine.Call).
func (w *writer) call(fn func(h cube.Handle, c *cube.Cube) error) error {
	return engineErr(w.s.eng.Call(w.pl.who, w.pl.dev.cube, fn))
}

func (w *writer) register(typ int32, re *RegisterEntry) error {
	r := registerByID(w.pl.info, re.RegisterID)
	if r == nil {
		return errf(codes.InvalidArgument, "unknown register id %d (0x%08x)", re.RegisterID, re.RegisterID)
	}
	if typ != UpdateModify {
		return errf(codes.InvalidArgument, "register %s: register cells can only be modified (MODIFY)", r.Name)
	}
	idx, err := cells("register "+r.Name, re.Index, r.Size)
	if err != nil {
		return err
	}
	if re.Data == nil {
		return errf(codes.InvalidArgument, "register %s: data is required", r.Name)
	}
	var value uint64
	switch {
	case r.Bool && re.Data.Kind == "bool":
		if re.Data.Bool {
			value = 1
		}
	case !r.Bool && re.Data.Kind == "bitstring":
		v, err := fits("register "+r.Name, r.Width, re.Data.Bitstring)
		if err != nil {
			return err
		}
		value = v.Uint64()
	default:
		want := "a bitstring"
		if r.Bool {
			want = "a bool"
		}
		return errf(codes.InvalidArgument, "register %s holds %s, got P4Data %s", r.Name, want, re.Data.Kind)
	}
	return w.call(func(h cube.Handle, c *cube.Cube) error {
		return p4nf.WriteRegister(h, c, p4nf.RegisterCells{Register: r.Name, Index: idx}, value)
	})
}

func (w *writer) meter(typ int32, me *MeterEntry) error {
	m := meterByID(w.pl.info, me.MeterID)
	if m == nil {
		return errf(codes.InvalidArgument, "unknown meter id %d (0x%08x)", me.MeterID, me.MeterID)
	}
	if typ != UpdateModify {
		return errf(codes.InvalidArgument, "meter %s: meter cells can only be modified (MODIFY)", m.Name)
	}
	idx, err := cells("meter "+m.Name, me.Index, m.Size)
	if err != nil {
		return err
	}
	args := p4nf.MeterSetArgs{Meter: m.Name, Index: idx, Reset: me.Config == nil}
	if c := me.Config; c != nil {
		if c.CIR < 0 || c.CBurst < 0 || c.PIR < 0 || c.PBurst < 0 {
			return errf(codes.InvalidArgument, "meter %s: negative rate or burst", m.Name)
		}
		if c.PIR < c.CIR {
			return errf(codes.InvalidArgument, "meter %s: pir %d is below cir %d", m.Name, c.PIR, c.CIR)
		}
		args.CIR, args.CBurst, args.PIR, args.PBurst = uint64(c.CIR), uint64(c.CBurst), uint64(c.PIR), uint64(c.PBurst)
	}
	return w.call(func(h cube.Handle, c *cube.Cube) error {
		_, err := p4nf.SetMeter(h, c, args)
		return err
	})
}

func (w *writer) digest(typ int32, de *DigestEntry) error {
	var dl *p4info.DigestLayout
	if sp := w.pl.info.Edgenf.SlowPath; sp != nil {
		for _, x := range sp.Digests {
			if x.ID == de.DigestID {
				dl = x
			}
		}
	}
	if dl == nil {
		return errf(codes.InvalidArgument, "unknown digest id %d (0x%08x)", de.DigestID, de.DigestID)
	}
	d := w.pl.dev
	d.mu.Lock()
	defer d.mu.Unlock()
	_, exists := d.digests[dl.ID]
	switch typ {
	case UpdateInsert:
		if exists {
			return errf(codes.AlreadyExists, "digest %s is already configured", dl.Name)
		}
	case UpdateModify, UpdateDelete:
		if !exists {
			return errf(codes.NotFound, "digest %s is not configured", dl.Name)
		}
	}
	next := maps.Clone(d.digests)
	if typ == UpdateDelete {
		delete(next, dl.ID)
	} else {
		cfg := de.Config
		if cfg == nil {
			cfg = &DigestConfig{}
		}
		next[dl.ID] = cfg
	}
	if err := w.s.saveDigests(w.ctx, w.pl.who, d.cube, next); err != nil {
		return err
	}
	d.digests = next
	return nil
}
