package p4info

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math/big"
	"strconv"
)

// FieldMatch is one key field in P4Runtime form: values are big-endian byte
// strings (leading zero bytes optional). Set the members of the field's
// match kind: Value (exact, optional), Value+PrefixLen (lpm), Value+Mask
// (ternary), Low+High (range). A ternary/range/optional field left out of
// an entry is a wildcard.
type FieldMatch struct {
	FieldID   uint32
	Value     []byte
	Mask      []byte
	PrefixLen int
	Low, High []byte
}

// ActionData is an action with its parameters in P4Runtime form.
type ActionData struct {
	ActionID uint32
	Params   map[uint32][]byte // by parameter id
}

func hexOf(b []byte) string {
	if len(b) == 0 {
		return "0"
	}
	return "0x" + hex.EncodeToString(b)
}

func (t *TableLayout) keyByID(id uint32) *KeyLayout {
	for _, k := range t.Keys {
		if k.ID == id {
			return k
		}
	}
	return nil
}

func (t *TableLayout) actionByID(id uint32) *ActionLayout {
	for _, a := range t.Actions {
		if a.ID == id {
			return a
		}
	}
	return nil
}

func (t *TableLayout) textAction(a ActionData) (string, []Arg, error) {
	al := t.actionByID(a.ActionID)
	if al == nil {
		return "", nil, fmt.Errorf("table %s has no action with id %d", t.Name, a.ActionID)
	}
	var args []Arg
	for _, p := range al.Params {
		v, ok := a.Params[p.ID]
		if !ok {
			return "", nil, fmt.Errorf("action %s: missing parameter %s (id %d)", al.Name, p.Name, p.ID)
		}
		args = append(args, Arg{Name: p.Name, Value: hexOf(v)})
	}
	if len(a.Params) != len(al.Params) {
		return "", nil, fmt.Errorf("action %s takes %d parameters, got %d", al.Name, len(al.Params), len(a.Params))
	}
	return al.Name, args, nil
}

// EncodeBinary encodes an entry given in P4Runtime form (field and action
// ids, byte-string values).
func (t *TableLayout) EncodeBinary(matches []FieldMatch, action ActionData, priority uint32) (*Entry, error) {
	var ms []Match
	for _, m := range matches {
		k := t.keyByID(m.FieldID)
		if k == nil {
			return nil, fmt.Errorf("table %s has no match field with id %d", t.Name, m.FieldID)
		}
		var s string
		switch k.MatchKind {
		case "exact", "optional":
			s = hexOf(m.Value)
		case "lpm":
			s = hexOf(m.Value) + "/" + strconv.Itoa(m.PrefixLen)
		case "ternary":
			s = hexOf(m.Value) + "&&&" + hexOf(m.Mask)
		case "range":
			s = hexOf(m.Low) + "->" + hexOf(m.High)
		default:
			return nil, fmt.Errorf("match kind %s is not supported", k.MatchKind)
		}
		ms = append(ms, Match{Field: k.Name, Value: s})
	}
	name, args, err := t.textAction(action)
	if err != nil {
		return nil, err
	}
	return t.EncodeEntry(ms, name, args, priority)
}

// Decoded is an entry read back from the maps.
type Decoded struct {
	Matches  []FieldMatch // every key field, in map order
	Action   ActionData
	Priority uint32 // scan tables
	Packets  uint64 // direct counter, if any
	Bytes    uint64
}

func minimal(b []byte) []byte {
	i := 0
	for i < len(b)-1 && b[i] == 0 {
		i++
	}
	return append([]byte(nil), b[i:]...)
}

// DecodeEntry decodes a map key and value (hash and lpm tables) or a scan
// table slot (key nil, value the slot); it is the inverse of EncodeEntry.
func (t *TableLayout) DecodeEntry(key, value []byte) (*Decoded, error) {
	d := &Decoded{}
	var kd, km, rng, val []byte
	plen := -1
	switch t.Kind {
	case "hash":
		if len(key) != t.KeyBytes {
			return nil, fmt.Errorf("key of %d bytes, want %d", len(key), t.KeyBytes)
		}
		kd, val = key, value
	case "lpm":
		if len(key) != 4+t.KeyBytes {
			return nil, fmt.Errorf("key of %d bytes, want %d", len(key), 4+t.KeyBytes)
		}
		plen = int(binary.NativeEndian.Uint32(key))
		kd, val = key[4:], value
	case "scan":
		if len(value) != t.EntryBytes {
			return nil, fmt.Errorf("slot of %d bytes, want %d", len(value), t.EntryBytes)
		}
		d.Priority = binary.NativeEndian.Uint32(value)
		kd = value[8 : 8+t.KeyBytes]
		km = value[8+t.KeyBytes : 8+2*t.KeyBytes]
		rng = value[t.EntryRangeOffset:t.EntryValueOffset]
		val = value[t.EntryValueOffset:]
	default:
		return nil, fmt.Errorf("table %s (%s) has no entries in maps", t.Name, t.Kind)
	}
	if len(val) < t.ValueBytes {
		return nil, fmt.Errorf("value of %d bytes, want %d", len(val), t.ValueBytes)
	}
	used := 0
	for _, k := range t.Keys {
		fm := FieldMatch{FieldID: k.ID}
		v := kd[k.Offset : k.Offset+k.Size]
		switch k.MatchKind {
		case "range":
			fm.Low = minimal(rng[k.RangeOffset : k.RangeOffset+k.Size])
			fm.High = minimal(rng[k.RangeOffset+k.Size : k.RangeOffset+2*k.Size])
		case "lpm":
			fm.Value = minimal(v)
			if plen >= 0 {
				fm.PrefixLen = plen - used
			} else {
				// scan table: the prefix is the mask's run of leading ones
				m := new(big.Int).SetBytes(km[k.Offset : k.Offset+k.Size])
				if m.Sign() == 0 {
					fm.PrefixLen = 0
				} else {
					fm.PrefixLen = k.Width - int(m.TrailingZeroBits())
				}
			}
		case "ternary":
			fm.Value = minimal(v)
			fm.Mask = minimal(km[k.Offset : k.Offset+k.Size])
		default:
			fm.Value = minimal(v)
		}
		used += k.Size * 8
		d.Matches = append(d.Matches, fm)
	}
	d.Action.ActionID = binary.NativeEndian.Uint32(val)
	if t.CounterOffset >= 0 {
		d.Packets = binary.NativeEndian.Uint64(val[t.CounterOffset:])
		d.Bytes = binary.NativeEndian.Uint64(val[t.CounterOffset+8:])
	}
	if a := t.actionByID(d.Action.ActionID); a != nil {
		d.Action.Params = map[uint32][]byte{}
		for _, p := range a.Params {
			d.Action.Params[p.ID] = minimal(val[t.ParamOffset+p.Offset : t.ParamOffset+p.Offset+p.Size])
		}
	}
	return d, nil
}
