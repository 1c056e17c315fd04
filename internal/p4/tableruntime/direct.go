package tableruntime

import (
	"bytes"
	"encoding/binary"
	"fmt"

	"github.com/cilium/ebpf"

	"github.com/edgenf/edgenf/internal/p4/p4info"
)

// encodeMeter returns a struct p4_meter cell (p4info.MeterLayout) for cfg,
// both buckets full; nil cfg: unconfigured.
func encodeMeter(name string, cfg *MeterConfig) ([]byte, error) {
	v := make([]byte, meterValueSize)
	if cfg == nil {
		return v, nil
	}
	if cfg.PIR < cfg.CIR {
		return nil, fmt.Errorf("meter %s: the peak rate (%d) must not be below the committed rate (%d)", name, cfg.PIR, cfg.CIR)
	}
	if cfg.CBurst > MaxMeterBurst || cfg.PBurst > MaxMeterBurst {
		return nil, fmt.Errorf("meter %s: bursts are limited to %d", name, uint64(MaxMeterBurst))
	}
	ne := binary.NativeEndian
	ne.PutUint64(v[0:], cfg.CIR)
	ne.PutUint64(v[8:], cfg.CBurst)
	ne.PutUint64(v[16:], cfg.PIR)
	ne.PutUint64(v[24:], cfg.PBurst)
	ne.PutUint64(v[32:], cfg.CBurst*1_000_000_000)
	ne.PutUint64(v[40:], cfg.PBurst*1_000_000_000)
	ne.PutUint32(v[56:], 1)
	return v, nil
}

// decodeMeter reads a struct p4_meter cell's configuration (nil:
// unconfigured).
func decodeMeter(v []byte) *MeterConfig {
	ne := binary.NativeEndian
	if ne.Uint32(v[56:])&1 == 0 {
		return nil
	}
	return &MeterConfig{CIR: ne.Uint64(v[0:]), CBurst: ne.Uint64(v[8:]), PIR: ne.Uint64(v[16:]), PBurst: ne.Uint64(v[24:])}
}

// directEntry is where an entry of a table lives, for its direct
// resources (counter, meter) that sit in the entry's value.
type directEntry struct {
	t   *p4info.TableLayout
	m   *ebpf.Map
	key any    // the map key (hash, lpm) or slot (scan)
	buf []byte // the value (hash, lpm) or the whole slot (scan)
	off int    // where the entry's value starts in buf
}

// entry finds an entry by match and, for ternary/range tables, priority
// (0: the first entry with that match).
func (p *Program) entry(table string, matches []p4info.Match, priority uint32) (*directEntry, error) {
	t, err := p.table(table)
	if err != nil {
		return nil, err
	}
	if len(t.Actions) == 0 {
		return nil, fmt.Errorf("table %s has no actions", t.Name)
	}
	var args []p4info.Arg // any action encodes the key
	for _, pr := range t.Actions[0].Params {
		args = append(args, p4info.Arg{Name: pr.Name, Value: "0"})
	}
	e, err := t.EncodeEntry(matches, t.Actions[0].Name, args, max(priority, 1))
	if err != nil {
		return nil, err
	}
	m, err := p.m(t.Map)
	if err != nil {
		return nil, err
	}
	if !e.Scan {
		v := make([]byte, t.ValueBytes)
		if err := m.Lookup(e.Key, &v); err != nil {
			return nil, fmt.Errorf("table %s: no such entry: %w", t.Name, err)
		}
		return &directEntry{t: t, m: m, key: e.Key, buf: v}, nil
	}
	buf := make([]byte, t.EntryBytes)
	for i := uint32(0); i < uint32(t.Size); i++ {
		if err := m.Lookup(i, &buf); err != nil {
			return nil, err
		}
		if pr := binary.NativeEndian.Uint32(buf); pr != 0 && (priority == 0 || pr == priority) && bytes.Equal(buf[8:t.EntryValueOffset], e.MatchKey) {
			return &directEntry{t: t, m: m, key: i, buf: buf, off: t.EntryValueOffset}, nil
		}
	}
	return nil, fmt.Errorf("table %s: no such entry", t.Name)
}

// store writes the entry's value back; the kernel leaves a meter cell's
// bpf_spin_lock alone.
func (d *directEntry) store() error { return d.m.Update(d.key, d.buf, ebpf.UpdateExist) }

func (p *Program) meteredEntry(table string, matches []p4info.Match, priority uint32) (*directEntry, error) {
	d, err := p.entry(table, matches, priority)
	if err != nil {
		return nil, err
	}
	if d.t.MeterOffset == 0 {
		return nil, fmt.Errorf("table %s has no direct meter", d.t.Name)
	}
	return d, nil
}

// SetDirectMeter configures the direct meter cell of a table entry (same
// match and, for ternary/range tables, priority: 0 takes the first entry
// with that match); both buckets start full.
// A nil cfg makes it unconfigured (everything GREEN). Adding the entry again
// resets its meter.
func (p *Program) SetDirectMeter(table string, matches []p4info.Match, priority uint32, cfg *MeterConfig) error {
	d, err := p.meteredEntry(table, matches, priority)
	if err != nil {
		return err
	}
	cell, err := encodeMeter(d.t.DirectMeter, cfg)
	if err != nil {
		return err
	}
	o := d.off + d.t.MeterOffset
	copy(d.buf[o:o+meterValueSize], cell)
	return d.store()
}

// DirectMeter returns the configuration of a table entry's direct meter
// (nil: unconfigured).
func (p *Program) DirectMeter(table string, matches []p4info.Match, priority uint32) (*MeterConfig, error) {
	d, err := p.meteredEntry(table, matches, priority)
	if err != nil {
		return nil, err
	}
	o := d.off + d.t.MeterOffset
	return decodeMeter(d.buf[o : o+meterValueSize]), nil
}

func (p *Program) countedEntry(table string, matches []p4info.Match, priority uint32) (*directEntry, error) {
	d, err := p.entry(table, matches, priority)
	if err != nil {
		return nil, err
	}
	if d.t.CounterOffset < 0 {
		return nil, fmt.Errorf("table %s has no direct counter", d.t.Name)
	}
	return d, nil
}

// DirectCounter returns the direct counter of a table entry (priority as
// for SetDirectMeter).
func (p *Program) DirectCounter(table string, matches []p4info.Match, priority uint32) (packets, bytes uint64, err error) {
	d, err := p.countedEntry(table, matches, priority)
	if err != nil {
		return 0, 0, err
	}
	o := d.off + d.t.CounterOffset
	return binary.NativeEndian.Uint64(d.buf[o:]), binary.NativeEndian.Uint64(d.buf[o+8:]), nil
}

// SetDirectCounter sets the direct counter of a table entry (0, 0: a
// reset). Packets the datapath counts while the value is rewritten may be
// lost from the count, as with any controller's counter write.
func (p *Program) SetDirectCounter(table string, matches []p4info.Match, priority uint32, packets, bytes uint64) error {
	d, err := p.countedEntry(table, matches, priority)
	if err != nil {
		return err
	}
	o := d.off + d.t.CounterOffset
	binary.NativeEndian.PutUint64(d.buf[o:], packets)
	binary.NativeEndian.PutUint64(d.buf[o+8:], bytes)
	return d.store()
}
