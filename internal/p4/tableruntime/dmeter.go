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

// directMeterEntry finds the value of an entry of a table with a direct
// meter: it returns the map, the key (hash) or slot (scan), the value and
// the offset of the meter cell in it.
func (p *Program) directMeterEntry(table string, matches []p4info.Match, priority uint32) (*p4info.TableLayout, *ebpf.Map, any, []byte, int, error) {
	t, err := p.table(table)
	if err != nil {
		return nil, nil, nil, nil, 0, err
	}
	if t.MeterOffset == 0 {
		return nil, nil, nil, nil, 0, fmt.Errorf("table %s has no direct meter", t.Name)
	}
	var args []p4info.Arg
	for _, pr := range t.Actions[0].Params {
		args = append(args, p4info.Arg{Name: pr.Name, Value: "0"})
	}
	e, err := t.EncodeEntry(matches, t.Actions[0].Name, args, priority)
	if err != nil {
		return nil, nil, nil, nil, 0, err
	}
	m, err := p.m(t.Map)
	if err != nil {
		return nil, nil, nil, nil, 0, err
	}
	if !e.Scan {
		v := make([]byte, t.ValueBytes)
		if err := m.Lookup(e.Key, &v); err != nil {
			return nil, nil, nil, nil, 0, fmt.Errorf("table %s: no such entry: %w", t.Name, err)
		}
		return t, m, e.Key, v, t.MeterOffset, nil
	}
	buf := make([]byte, t.EntryBytes)
	for i := uint32(0); i < uint32(t.Size); i++ {
		if err := m.Lookup(i, &buf); err != nil {
			return nil, nil, nil, nil, 0, err
		}
		if pr := binary.NativeEndian.Uint32(buf); pr != 0 && (priority == 0 || pr == priority) && bytes.Equal(buf[8:t.EntryValueOffset], e.MatchKey) {
			return t, m, i, buf, t.EntryValueOffset + t.MeterOffset, nil
		}
	}
	return nil, nil, nil, nil, 0, fmt.Errorf("table %s: no such entry", t.Name)
}

// SetDirectMeter configures the direct meter cell of a table entry (same
// match and, for ternary/range tables, priority: 0 takes the first entry
// with that match); both buckets start full.
// A nil cfg makes it unconfigured (everything GREEN). Adding the entry again
// resets its meter.
func (p *Program) SetDirectMeter(table string, matches []p4info.Match, priority uint32, cfg *MeterConfig) error {
	t, m, key, v, off, err := p.directMeterEntry(table, matches, priority)
	if err != nil {
		return err
	}
	cell, err := encodeMeter(t.DirectMeter, cfg)
	if err != nil {
		return err
	}
	copy(v[off:off+meterValueSize], cell)
	// the kernel leaves the cell's bpf_spin_lock alone
	return m.Update(key, v, ebpf.UpdateExist)
}
