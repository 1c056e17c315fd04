// Package rt is the control-plane side of a loaded P4 program: it writes
// table entries and default actions into the program's BPF maps and reads
// its counters, using the layouts of the compiled model (p4info.Runtime).
package rt

import (
	"bytes"
	"encoding/binary"
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
		return 0, fmt.Errorf("table %s is full (%d entries)", t.Name, t.Size)
	}
	return uint32(free), nil
}

// DeleteEntry removes an entry (same match and, for scan tables, priority).
func (p *Program) DeleteEntry(table string, matches []p4info.Match, priority uint32) error {
	t, err := p.table(table)
	if err != nil {
		return err
	}
	if len(t.Actions) == 0 {
		return fmt.Errorf("table %s has no actions", t.Name)
	}
	// encode with any action to get the key
	var args []p4info.Arg
	for _, pr := range t.Actions[0].Params {
		args = append(args, p4info.Arg{Name: pr.Name, Value: "0"})
	}
	e, err := t.EncodeEntry(matches, t.Actions[0].Name, args, priority)
	if err != nil {
		return err
	}
	m, err := p.m(t.Map)
	if err != nil {
		return err
	}
	if !e.Scan {
		return m.Delete(e.Key)
	}
	buf := make([]byte, t.EntryBytes)
	for i := uint32(0); i < uint32(t.Size); i++ {
		if err := m.Lookup(i, &buf); err != nil {
			return err
		}
		if binary.NativeEndian.Uint32(buf) == priority && bytes.Equal(buf[8:t.EntryValueOffset], e.MatchKey) {
			return m.Update(i, make([]byte, t.EntryBytes), ebpf.UpdateAny)
		}
	}
	return fmt.Errorf("no such entry")
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

// ReadDirectCounter returns the direct counter of an entry of a hash or lpm table.
func (p *Program) ReadDirectCounter(table string, matches []p4info.Match) (packets, bytes uint64, err error) {
	t, err := p.table(table)
	if err != nil {
		return 0, 0, err
	}
	if t.CounterOffset < 0 {
		return 0, 0, fmt.Errorf("table %s has no direct counter", t.Name)
	}
	var args []p4info.Arg
	for _, pr := range t.Actions[0].Params {
		args = append(args, p4info.Arg{Name: pr.Name, Value: "0"})
	}
	e, err := t.EncodeEntry(matches, t.Actions[0].Name, args, 1)
	if err != nil {
		return 0, 0, err
	}
	if e.Scan {
		return 0, 0, fmt.Errorf("direct counters of ternary tables: read the entry's slot")
	}
	m, err := p.m(t.Map)
	if err != nil {
		return 0, 0, err
	}
	v := make([]byte, t.ValueBytes)
	if err := m.Lookup(e.Key, &v); err != nil {
		return 0, 0, err
	}
	o := t.CounterOffset
	return binary.NativeEndian.Uint64(v[o:]), binary.NativeEndian.Uint64(v[o+8:]), nil
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
