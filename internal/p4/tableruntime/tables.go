// Package tableruntime is the control-plane side of a loaded P4 program: it writes
// table entries and default actions into the program's BPF maps and reads
// its counters, using the layouts of the compiled model (p4info.Runtime).
package tableruntime

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/cilium/ebpf"

	"github.com/edgenf/edgenf/internal/p4/p4info"
)

// Program is a loaded P4 program's maps.
type Program struct {
	Model *p4info.Runtime
	Maps  map[string]*ebpf.Map // by map name (ELF symbol), e.g. a Collection's Maps
}

// New wraps the maps of a loaded program.
func New(info *p4info.P4Info, maps map[string]*ebpf.Map) (*Program, error) {
	if info == nil || info.Edgenf == nil {
		return nil, fmt.Errorf("model without edgenf layouts")
	}
	return &Program{Model: info.Edgenf, Maps: maps}, nil
}

func (p *Program) table(name string) (*p4info.TableLayout, error) {
	t := p.Model.Table(name)
	if t == nil {
		return nil, fmt.Errorf("no table %q", name)
	}
	return t, nil
}

func (p *Program) m(name string) (*ebpf.Map, error) {
	m := p.Maps[name]
	if m == nil {
		return nil, fmt.Errorf("map %s is not loaded", name)
	}
	return m, nil
}

// AddEntry inserts or replaces an entry. priority is used by ternary/range
// tables (higher wins, >= 1).
func (p *Program) AddEntry(table string, matches []p4info.Match, action string, args []p4info.Arg, priority uint32) error {
	t, err := p.table(table)
	if err != nil {
		return err
	}
	e, err := t.EncodeEntry(matches, action, args, priority)
	if err != nil {
		return err
	}
	return p.writeEntry(t, e, priority)
}

// writeEntry writes an encoded entry: in place of one with the same match.
func (p *Program) writeEntry(t *p4info.TableLayout, e *p4info.Entry, priority uint32) error {
	stampIdle(t, e) // idle.go
	m, err := p.m(t.Map)
	if err != nil {
		return err
	}
	if !e.Scan {
		return m.Update(e.Key, e.Value, ebpf.UpdateAny)
	}
	slot, err := p.findSlot(t, m, e.MatchKey, priority)
	if err != nil {
		return err
	}
	if err := m.Update(slot, e.Value, ebpf.UpdateAny); err != nil {
		return err
	}
	return p.growScan(t, slot+1)
}

// growScan makes the data path scan at least n slots.
func (p *Program) growScan(t *p4info.TableLayout, n uint32) error {
	cm, err := p.m(t.CountMap)
	if err != nil {
		return err
	}
	var cur uint32
	if err := cm.Lookup(uint32(0), &cur); err != nil {
		return err
	}
	if n <= cur {
		return nil
	}
	return cm.Update(uint32(0), n, ebpf.UpdateAny)
}

// findSlot returns the slot holding the same match and priority, or a free one.
func (p *Program) findSlot(t *p4info.TableLayout, m *ebpf.Map, match []byte, prio uint32) (uint32, error) {
	free := int64(-1)
	buf := make([]byte, t.EntryBytes)
	for i := uint32(0); i < uint32(t.Size); i++ {
		if err := m.Lookup(i, &buf); err != nil {
			return 0, err
		}
		pr := binary.NativeEndian.Uint32(buf)
		if pr == 0 {
			if free < 0 {
				free = int64(i)
			}
			continue
		}
		if pr == prio && bytes.Equal(buf[8:t.EntryValueOffset], match) {
			return i, nil
		}
	}
	if free < 0 {
		return 0, fullError{t.Name, t.Size}
	}
	return uint32(free), nil
}

// ErrTableFull is the error of an insertion into a table with no free slot
// (errors.Is).
var ErrTableFull = errors.New("table is full")

type fullError struct {
	table string
	size  int
}

func (e fullError) Error() string {
	return fmt.Sprintf("table %s is full (%d entries)", e.table, e.size)
}

func (e fullError) Is(target error) bool { return target == ErrTableFull }

// DeleteEntry removes an entry (same match and, for scan tables, priority).
func (p *Program) DeleteEntry(table string, matches []p4info.Match, priority uint32) error {
	t, err := p.table(table)
	if err != nil {
		return err
	}
	m, key, _, err := p.locate(t, matches, priority)
	if err != nil {
		return err
	}
	if t.Kind != "scan" {
		return m.Delete(key)
	}
	return m.Update(key, make([]byte, t.EntryBytes), ebpf.UpdateAny)
}

// locate finds an entry: its map, its key there (the encoded key, or the
// slot of a scan table) and the value stored (scan: the whole slot).
func (p *Program) locate(t *p4info.TableLayout, matches []p4info.Match, priority uint32) (*ebpf.Map, any, []byte, error) {
	e, err := t.EncodeMatch(matches, priority)
	if err != nil {
		return nil, nil, nil, err
	}
	m, err := p.m(t.Map)
	if err != nil {
		return nil, nil, nil, err
	}
	if !e.Scan {
		val := make([]byte, m.ValueSize())
		if err := m.Lookup(e.Key, &val); err != nil {
			return nil, nil, nil, fmt.Errorf("no such entry")
		}
		return m, e.Key, val, nil
	}
	buf := make([]byte, t.EntryBytes)
	for i := uint32(0); i < uint32(t.Size); i++ {
		if err := m.Lookup(i, &buf); err != nil {
			return nil, nil, nil, err
		}
		if binary.NativeEndian.Uint32(buf) == priority && bytes.Equal(buf[8:t.EntryValueOffset], e.MatchKey) {
			return m, i, buf, nil
		}
	}
	return nil, nil, nil, fmt.Errorf("no such entry")
}

// SetDefault changes a table's default action.
func (p *Program) SetDefault(table, action string, args []p4info.Arg) error {
	t, err := p.table(table)
	if err != nil {
		return err
	}
	if t.ConstDefault {
		return fmt.Errorf("table %s has a const default action", t.Name)
	}
	if a := t.Action(action); a != nil && a.TableOnly {
		return fmt.Errorf("action %s cannot be a default action of %s", a.Name, t.Name)
	}
	v, err := t.EncodeValue(action, args)
	if err != nil {
		return err
	}
	m, err := p.m(t.DefaultMap)
	if err != nil {
		return err
	}
	return m.Update(uint32(0), v, ebpf.UpdateAny)
}

type ctr struct{ Packets, Bytes uint64 }

// ReadCounter returns an indirect counter cell, summed over CPUs.
func (p *Program) ReadCounter(name string, index uint32) (packets, bytes uint64, err error) {
	c := p.Model.Counter(name)
	if c == nil || c.Direct {
		return 0, 0, fmt.Errorf("no counter %q", name)
	}
	m, err := p.m(c.Map)
	if err != nil {
		return 0, 0, err
	}
	var vals []ctr
	if err := m.Lookup(index, &vals); err != nil {
		return 0, 0, err
	}
	for _, v := range vals {
		packets += v.Packets
		bytes += v.Bytes
	}
	return packets, bytes, nil
}

// WriteCounter sets the cells lo..hi (inclusive) of an indirect counter
// to packets and bytes (0, 0: a reset). The cells are per CPU: the first
// CPU's holds the value, the others are zeroed.
func (p *Program) WriteCounter(name string, lo, hi uint32, packets, bytes uint64) error {
	c := p.Model.Counter(name)
	if c == nil || c.Direct {
		return fmt.Errorf("no counter %q", name)
	}
	if lo > hi || hi >= uint32(c.Size) {
		return fmt.Errorf("counter %s: index range %d..%d out of range (size %d)", c.Name, lo, hi, c.Size)
	}
	m, err := p.m(c.Map)
	if err != nil {
		return err
	}
	cpus, err := ebpf.PossibleCPU()
	if err != nil {
		return err
	}
	vals := make([]ctr, cpus)
	vals[0] = ctr{Packets: packets, Bytes: bytes}
	for i := lo; i <= hi; i++ {
		if err := m.Update(i, vals, ebpf.UpdateExist); err != nil {
			return fmt.Errorf("counter %s[%d]: %w", c.Name, i, err)
		}
	}
	return nil
}

// ValueSetMember is one member of a value set, as text ("0x88b5", mask "" = all ones).
type ValueSetMember struct {
	Value string
	Mask  string
}

type vsMember struct {
	Value, Mask uint64
	Valid, Pad  uint32
}

// SetValueSet replaces the members of a parser value_set.
func (p *Program) SetValueSet(name string, members []ValueSetMember) error {
	v := p.Model.ValueSet(name)
	if v == nil {
		return fmt.Errorf("no value_set %q", name)
	}
	if len(members) > v.Size {
		return fmt.Errorf("value_set %s holds %d members, got %d", v.Name, v.Size, len(members))
	}
	m, err := p.m(v.Map)
	if err != nil {
		return err
	}
	for i := 0; i < v.Size; i++ {
		var e vsMember
		if i < len(members) {
			val, err := p4info.ParseValue(members[i].Value, v.Width)
			if err != nil {
				return err
			}
			mask := ^uint64(0) >> (64 - uint(v.Width))
			if members[i].Mask != "" {
				mv, err := p4info.ParseValue(members[i].Mask, v.Width)
				if err != nil {
					return err
				}
				mask = mv.Uint64()
			}
			e = vsMember{Value: val.Uint64() & mask, Mask: mask, Valid: 1}
		}
		if err := m.Update(uint32(i), e, ebpf.UpdateAny); err != nil {
			return err
		}
	}
	return nil
}

// ResetDefault restores a table's compiled default action (the one in the
// P4 source), undoing SetDefault.
func (p *Program) ResetDefault(table string) error {
	t, err := p.table(table)
	if err != nil {
		return err
	}
	m, err := p.m(t.DefaultMap)
	if err != nil {
		return err
	}
	return m.Update(uint32(0), make([]byte, t.ValueBytes), ebpf.UpdateAny)
}

// Entries reads a table's entries back from the kernel (P4Runtime form).
func (p *Program) Entries(table string) ([]*p4info.Decoded, error) {
	t, err := p.table(table)
	if err != nil {
		return nil, err
	}
	if t.Map == "" {
		return nil, nil
	}
	m, err := p.m(t.Map)
	if err != nil {
		return nil, err
	}
	var out []*p4info.Decoded
	if t.Kind == "scan" {
		buf := make([]byte, t.EntryBytes)
		for i := uint32(0); i < uint32(t.Size); i++ {
			if err := m.Lookup(i, &buf); err != nil {
				return nil, err
			}
			if binary.NativeEndian.Uint32(buf) == 0 {
				continue
			}
			d, err := t.DecodeEntry(nil, buf)
			if err != nil {
				return nil, err
			}
			out = append(out, d)
		}
		return out, nil
	}
	key := make([]byte, m.KeySize())
	val := make([]byte, m.ValueSize())
	it := m.Iterate()
	for it.Next(&key, &val) {
		d, err := t.DecodeEntry(key, val)
		if err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, it.Err()
}

func (p *Program) register(name string, lo, hi uint32) (*p4info.RegisterLayout, *ebpf.Map, error) {
	r := p.Model.Register(name)
	if r == nil {
		return nil, nil, fmt.Errorf("no register %q", name)
	}
	if lo > hi || hi >= uint32(r.Size) {
		return nil, nil, fmt.Errorf("register %s: index range %d..%d out of range (size %d)", r.Name, lo, hi, r.Size)
	}
	m, err := p.m(r.Map)
	if err != nil {
		return nil, nil, err
	}
	return r, m, nil
}

// ReadRegister returns the cells lo..hi (inclusive) of a register. Signed
// registers (int<N>) come back in two's complement, N bits wide.
func (p *Program) ReadRegister(name string, lo, hi uint32) ([]uint64, error) {
	r, m, err := p.register(name, lo, hi)
	if err != nil {
		return nil, err
	}
	out := make([]uint64, 0, hi-lo+1)
	for i := lo; ; i++ {
		var v uint64
		if err := m.Lookup(i, &v); err != nil {
			return nil, err
		}
		out = append(out, v^r.Init) // a cell holds its value XOR the initial value
		if i == hi {
			break
		}
	}
	return out, nil
}

// WriteRegister sets the cells lo..hi (inclusive) of a register to value,
// which must fit the register's width (two's complement for int<N>).
func (p *Program) WriteRegister(name string, lo, hi uint32, value uint64) error {
	r, m, err := p.register(name, lo, hi)
	if err != nil {
		return err
	}
	if r.Width < 64 && value>>uint(r.Width) != 0 {
		return fmt.Errorf("register %s: value %d does not fit in %d bits", r.Name, value, r.Width)
	}
	for i := lo; ; i++ {
		if err := m.Update(i, value^r.Init, ebpf.UpdateExist); err != nil {
			return err
		}
		if i == hi {
			break
		}
	}
	return nil
}

// ResetRegister sets the cells lo..hi (inclusive) of a register back to
// the register's initial value: PSA's Register(size, initial_value), 0
// for a register without one (v1model's, PSA's Register(size)), as BMv2's
// register_reset does.
func (p *Program) ResetRegister(name string, lo, hi uint32) error {
	r, _, err := p.register(name, lo, hi)
	if err != nil {
		return err
	}
	return p.WriteRegister(name, lo, hi, r.Init)
}

// MeterConfig is a meter cell's RFC 2698 configuration: rates in units
// (packets or bytes, the meter's type) per second, bursts in units.
type MeterConfig struct {
	CIR    uint64 `json:"cir"`
	CBurst uint64 `json:"cburst"`
	PIR    uint64 `json:"pir"`
	PBurst uint64 `json:"pburst"`
}

// MaxMeterBurst bounds burst sizes (tokens are kept in units x 1e9 in a u64).
const MaxMeterBurst = 10_000_000_000

const meterValueSize = 64

func (p *Program) meter(name string, lo, hi uint32) (*p4info.MeterLayout, *ebpf.Map, error) {
	me := p.Model.Meter(name)
	if me == nil {
		return nil, nil, fmt.Errorf("no meter %q", name)
	}
	if lo > hi || hi >= uint32(me.Size) {
		return nil, nil, fmt.Errorf("meter %s: index range %d..%d out of range (size %d)", me.Name, lo, hi, me.Size)
	}
	m, err := p.m(me.Map)
	if err != nil {
		return nil, nil, err
	}
	return me, m, nil
}

// SetMeter configures the cells lo..hi (inclusive) of a meter; both buckets
// start full. A nil cfg resets the cells to unconfigured (everything GREEN).
func (p *Program) SetMeter(name string, lo, hi uint32, cfg *MeterConfig) error {
	me, m, err := p.meter(name, lo, hi)
	if err != nil {
		return err
	}
	v, err := encodeMeter(me.Name, cfg)
	if err != nil {
		return err
	}
	for i := lo; ; i++ {
		if err := m.Update(i, v, ebpf.UpdateLock); err != nil {
			return err
		}
		if i == hi {
			break
		}
	}
	return nil
}

// ReadMeter returns a meter cell's configuration (nil: unconfigured).
func (p *Program) ReadMeter(name string, index uint32) (*MeterConfig, error) {
	_, m, err := p.meter(name, index, index)
	if err != nil {
		return nil, err
	}
	v := make([]byte, meterValueSize)
	if err := m.LookupWithFlags(index, &v, ebpf.LookupLock); err != nil {
		return nil, err
	}
	return decodeMeter(v), nil
}
