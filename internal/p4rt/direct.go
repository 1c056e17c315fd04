package p4rt

// Direct counters and meters (DirectCounterEntry, DirectMeterEntry, and a
// TableEntry's counter_data and meter_config), and counter writes. They
// live in the kernel maps, in each entry's value: read and written through
// the cube's table runtime.

import (
	"sort"

	"github.com/edgenf/edgenf/internal/cube"
	p4nf "github.com/edgenf/edgenf/internal/nf/p4"
	"github.com/edgenf/edgenf/internal/p4/p4info"
	"github.com/edgenf/edgenf/internal/p4/tableruntime"
	"google.golang.org/grpc/codes"
)

// runtimeCall runs fn with the cube's table runtime.
func runtimeCall(call func(fn func(h cube.Handle, c *cube.Cube) error) error, fn func(rt *tableruntime.Program) error) error {
	return call(func(h cube.Handle, c *cube.Cube) error {
		rt, err := p4nf.TableRuntime(h, c)
		if err != nil {
			return err
		}
		return fn(rt)
	})
}

// matches is a stored entry's match in the table runtime's form.
func matches(m map[string]string) []p4info.Match {
	out := make([]p4info.Match, 0, len(m))
	for k, v := range m {
		out = append(out, p4info.Match{Field: k, Value: v})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Field < out[j].Field })
	return out
}

func counterData(packets, bytes uint64) *CounterData {
	return &CounterData{PacketCount: int64(packets), ByteCount: int64(bytes)}
}

func meterConfig(c *tableruntime.MeterConfig) *MeterConfig {
	if c == nil {
		return nil
	}
	return &MeterConfig{CIR: int64(c.CIR), CBurst: int64(c.CBurst), PIR: int64(c.PIR), PBurst: int64(c.PBurst)}
}

// runtimeMeter checks a P4Runtime meter configuration (nil: unconfigured).
func runtimeMeter(what string, c *MeterConfig) (*tableruntime.MeterConfig, error) {
	if c == nil {
		return nil, nil
	}
	if c.CIR < 0 || c.CBurst < 0 || c.PIR < 0 || c.PBurst < 0 {
		return nil, errf(codes.InvalidArgument, "%s: negative rate or burst", what)
	}
	if c.PIR < c.CIR {
		return nil, errf(codes.InvalidArgument, "%s: pir %d is below cir %d", what, c.PIR, c.CIR)
	}
	return &tableruntime.MeterConfig{CIR: uint64(c.CIR), CBurst: uint64(c.CBurst), PIR: uint64(c.PIR), PBurst: uint64(c.PBurst)}, nil
}

func runtimeCounter(what string, d *CounterData) (uint64, uint64, error) {
	if d == nil {
		return 0, 0, nil
	}
	if d.PacketCount < 0 || d.ByteCount < 0 {
		return 0, 0, errf(codes.InvalidArgument, "%s: negative count", what)
	}
	return uint64(d.PacketCount), uint64(d.ByteCount), nil
}

// withDirect adds the direct counter and meter of stored entries to their
// P4Runtime form, as a read asked (q's counter_data, meter_config), in one
// call into the cube.
func (r *reader) withDirect(q *TableEntry, found []p4nf.Entry, out []*TableEntry, byName map[string]*p4info.TableLayout) error {
	if q.CounterData == nil && q.MeterConfig == nil {
		return nil
	}
	return runtimeCall(r.call, func(rt *tableruntime.Program) error {
		for i := range found {
			e, t := &found[i], byName[found[i].Table]
			ms := matches(e.Match)
			if q.CounterData != nil && t.CounterOffset >= 0 {
				p, b, err := rt.DirectCounter(t.Name, ms, e.Priority)
				if err != nil {
					return errf(codes.Internal, "entry %s: %v", e.Key(), err)
				}
				out[i].CounterData = counterData(p, b)
			}
			if q.MeterConfig != nil && t.MeterOffset != 0 {
				c, err := rt.DirectMeter(t.Name, ms, e.Priority)
				if err != nil {
					return errf(codes.Internal, "entry %s: %v", e.Key(), err)
				}
				out[i].MeterConfig = meterConfig(c)
			}
		}
		return nil
	})
}

// direct reads the direct counters (meter false) or meters of the entries
// a DirectCounterEntry or DirectMeterEntry names: its table entry's table
// (0: every table with one) and, if given, match.
func (r *reader) direct(q *TableEntry, meter bool) error {
	if q == nil {
		q = &TableEntry{}
	}
	what := map[bool]string{false: "direct counter", true: "direct meter"}[meter]
	has := func(t *p4info.TableLayout) bool {
		return (!meter && t.CounterOffset >= 0) || (meter && t.MeterOffset != 0)
	}
	if q.TableID != 0 {
		if t := tableByID(r.pl.info, q.TableID); t != nil && !has(t) {
			return errf(codes.InvalidArgument, "table %s has no %s", t.Name, what)
		}
	}
	found, tables, err := r.entries(q)
	if err != nil {
		return err
	}
	byName := tablesByName(tables)
	return runtimeCall(r.call, func(rt *tableruntime.Program) error {
		for i := range found {
			e := &found[i]
			t := byName[e.Table]
			if !has(t) {
				continue
			}
			te, err := fromEntry(t, e)
			if err != nil {
				return errf(codes.Internal, "entry %s: %v", e.Key(), err)
			}
			te.Action = nil // the entry is named by its key
			ms := matches(e.Match)
			if meter {
				c, err := rt.DirectMeter(t.Name, ms, e.Priority)
				if err != nil {
					return errf(codes.Internal, "entry %s: %v", e.Key(), err)
				}
				err = r.add(&Entity{DirectMeterEntry: &DirectEntry{TableEntry: te, Meter: meterConfig(c)}})
				if err != nil {
					return err
				}
				continue
			}
			p, b, err := rt.DirectCounter(t.Name, ms, e.Priority)
			if err != nil {
				return errf(codes.Internal, "entry %s: %v", e.Key(), err)
			}
			if err := r.add(&Entity{DirectCounterEntry: &DirectEntry{TableEntry: te, Counter: counterData(p, b)}}); err != nil {
				return err
			}
		}
		return nil
	})
}

// storedEntry resolves the table entry a direct resource write names: it
// must exist.
func (w *writer) storedEntry(te *TableEntry, what string, has func(t *p4info.TableLayout) bool) (*p4info.TableLayout, []p4info.Match, uint32, error) {
	if te == nil {
		return nil, nil, 0, errf(codes.InvalidArgument, "%s entry without its table_entry", what)
	}
	t := tableByID(w.pl.info, te.TableID)
	if t == nil {
		return nil, nil, 0, errf(codes.InvalidArgument, "unknown table id %d (0x%08x)", te.TableID, te.TableID)
	}
	if !has(t) {
		return nil, nil, 0, errf(codes.InvalidArgument, "table %s has no %s", t.Name, what)
	}
	match, err := toMatch(t, te.Match, te.Priority)
	if err != nil {
		return nil, nil, 0, err
	}
	id, err := matchID(t, match, uint32(te.Priority))
	if err != nil {
		return nil, nil, 0, errf(codes.InvalidArgument, "table %s: %v", t.Name, err)
	}
	if _, ok := w.entryIndex(t)[id]; !ok {
		return nil, nil, 0, errf(codes.NotFound, "table %s has no entry with this match and priority", t.Name)
	}
	return t, matches(match), uint32(te.Priority), nil
}

func (w *writer) directCounter(typ int32, dc *DirectEntry) error {
	t, ms, prio, err := w.storedEntry(dc.TableEntry, "direct counter", func(t *p4info.TableLayout) bool { return t.CounterOffset >= 0 })
	if err != nil {
		return err
	}
	if typ != UpdateModify {
		return errf(codes.InvalidArgument, "the direct counter of %s: direct counters can only be modified (MODIFY); they come and go with their entries", t.Name)
	}
	p, b, err := runtimeCounter("the direct counter of "+t.Name, dc.Counter)
	if err != nil {
		return err
	}
	return runtimeCall(w.call, func(rt *tableruntime.Program) error { return rt.SetDirectCounter(t.Name, ms, prio, p, b) })
}

func (w *writer) directMeter(typ int32, dm *DirectEntry) error {
	t, ms, prio, err := w.storedEntry(dm.TableEntry, "direct meter", func(t *p4info.TableLayout) bool { return t.MeterOffset != 0 })
	if err != nil {
		return err
	}
	if typ != UpdateModify {
		return errf(codes.InvalidArgument, "the direct meter of %s: direct meters can only be modified (MODIFY); they come and go with their entries", t.Name)
	}
	cfg, err := runtimeMeter("the direct meter of "+t.Name, dm.Meter)
	if err != nil {
		return err
	}
	return runtimeCall(w.call, func(rt *tableruntime.Program) error { return rt.SetDirectMeter(t.Name, ms, prio, cfg) })
}

// entryDirect sets the direct counter and meter an INSERT or MODIFY of a
// table entry carries (counter_data, meter_config).
func (w *writer) entryDirect(t *p4info.TableLayout, te *TableEntry, match map[string]string) error {
	if te.CounterData == nil && te.MeterConfig == nil {
		return nil
	}
	p, b, err := runtimeCounter("table "+t.Name+": counter_data", te.CounterData)
	if err != nil {
		return err
	}
	cfg, err := runtimeMeter("table "+t.Name+": meter_config", te.MeterConfig)
	if err != nil {
		return err
	}
	ms := matches(match)
	return runtimeCall(w.call, func(rt *tableruntime.Program) error {
		if te.CounterData != nil {
			if err := rt.SetDirectCounter(t.Name, ms, uint32(te.Priority), p, b); err != nil {
				return err
			}
		}
		if te.MeterConfig != nil {
			return rt.SetDirectMeter(t.Name, ms, uint32(te.Priority), cfg)
		}
		return nil
	})
}

// checkDirect refuses, before anything is written, counter_data or
// meter_config on a table without a direct counter or meter, and values
// out of range.
func checkDirect(t *p4info.TableLayout, te *TableEntry) error {
	if te.CounterData != nil && t.CounterOffset < 0 {
		return errf(codes.InvalidArgument, "table %s has no direct counter: counter_data cannot be set", t.Name)
	}
	if te.MeterConfig != nil && t.MeterOffset == 0 {
		return errf(codes.InvalidArgument, "table %s has no direct meter: meter_config cannot be set", t.Name)
	}
	if _, _, err := runtimeCounter("table "+t.Name+": counter_data", te.CounterData); err != nil {
		return err
	}
	_, err := runtimeMeter("table "+t.Name+": meter_config", te.MeterConfig)
	return err
}

// counter writes cells of an indirect counter (MODIFY; CounterData nil
// or zero: a reset); without an index, every cell.
func (w *writer) counter(typ int32, ce *CounterEntry) error {
	var c *p4info.CounterLayout
	for _, x := range w.pl.info.Edgenf.Counters {
		if !x.Direct && x.ID == ce.CounterID {
			c = x
		}
	}
	if c == nil {
		return errf(codes.InvalidArgument, "unknown counter id %d (0x%08x)", ce.CounterID, ce.CounterID)
	}
	if typ != UpdateModify {
		return errf(codes.InvalidArgument, "counter %s: counter cells can only be modified (MODIFY)", c.Name)
	}
	idx, err := cells("counter "+c.Name, ce.Index, c.Size)
	if err != nil {
		return err
	}
	p, b, err := runtimeCounter("counter "+c.Name, ce.Data)
	if err != nil {
		return err
	}
	lo, hi := uint32(0), uint32(c.Size-1)
	if idx != nil {
		lo, hi = *idx, *idx
	}
	return runtimeCall(w.call, func(rt *tableruntime.Program) error { return rt.WriteCounter(c.Name, lo, hi, p, b) })
}
