package p4info

import (
	"encoding/binary"
	"fmt"
	"math/big"
	"net"
	"strconv"
	"strings"
)

// Match is one key field of an entry, as text.
//
// Values: decimal, 0x hex, 0b binary, 0o octal, a MAC (aa:bb:cc:dd:ee:ff),
// an IPv4 or IPv6 address. Per match kind:
//
//	exact     v
//	lpm       v/len (198.18.0.0/24); v alone means the full width
//	ternary   v&&&mask (0x0a00&&&0xff00), *, or hex with * nibbles (0x0a**)
//	range     lo->hi or lo..hi, v alone, or *
//	optional  v or *
type Match struct {
	Field string
	Value string
}

// Arg is one action parameter, as text.
type Arg struct {
	Name  string
	Value string
}

// Entry is an encoded table entry.
type Entry struct {
	// Key is the map key (hash and lpm tables); nil for scan tables.
	Key []byte
	// Value is the map value (hash and lpm tables) or the whole array
	// element (scan tables: priority, value/mask, ranges and value).
	Value []byte
	// Scan is true for scan (ternary/range) tables: the control plane puts
	// Value into a free slot of the table's ARRAY map.
	Scan bool
	// MatchKey is the encoded match part (value/mask/ranges) of a scan
	// entry, to find an existing entry with the same key.
	MatchKey []byte
}

// ParseValue parses a value of the given width in bits.
func ParseValue(s string, width int) (*big.Int, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, fmt.Errorf("empty value")
	}
	var v *big.Int
	switch {
	case strings.Count(s, ":") == 5 && len(s) == 17 && !strings.Contains(s, "::"):
		hw, err := net.ParseMAC(s)
		if err != nil {
			return nil, fmt.Errorf("bad MAC address %q", s)
		}
		v = new(big.Int).SetBytes(hw)
	case strings.Contains(s, ":"):
		ip := net.ParseIP(s)
		if ip == nil || ip.To16() == nil {
			return nil, fmt.Errorf("bad IPv6 address %q", s)
		}
		v = new(big.Int).SetBytes(ip.To16())
	case strings.Count(s, ".") == 3:
		ip := net.ParseIP(s).To4()
		if ip == nil {
			return nil, fmt.Errorf("bad IPv4 address %q", s)
		}
		v = new(big.Int).SetBytes(ip)
	default:
		t := strings.ReplaceAll(s, "_", "")
		neg := strings.HasPrefix(t, "-")
		t = strings.TrimPrefix(t, "-")
		base := 10
		if len(t) > 2 && t[0] == '0' {
			switch t[1] {
			case 'x', 'X':
				base, t = 16, t[2:]
			case 'b', 'B':
				base, t = 2, t[2:]
			case 'o', 'O':
				base, t = 8, t[2:]
			case 'd', 'D':
				base, t = 10, t[2:]
			}
		}
		var ok bool
		v, ok = new(big.Int).SetString(t, base)
		if !ok {
			return nil, fmt.Errorf("bad number %q", s)
		}
		if neg {
			v.Neg(v)
			v.Mod(v, new(big.Int).Lsh(big.NewInt(1), uint(width)))
		}
	}
	if v.BitLen() > width {
		return nil, fmt.Errorf("value %s does not fit in %d bits", s, width)
	}
	return v, nil
}

// ValueSyntax reports whether s is a value of some P4 field: a number, a
// MAC or an IP address (ParseValue then checks it fits a field's width).
func ValueSyntax(s string) error {
	_, err := ParseValue(s, max(128, 4*len(s)+8))
	return err
}

// MatchSyntax reports whether s is a match of some key field, of any
// match kind and width (parseMatch then checks it against a field).
func MatchSyntax(s string) error {
	s = strings.TrimSpace(s)
	switch {
	case s == "*" || s == "_":
		return nil
	case strings.Contains(s, "&&&"):
		v, m, _ := strings.Cut(s, "&&&")
		if err := ValueSyntax(v); err != nil {
			return err
		}
		return ValueSyntax(m)
	case strings.HasPrefix(s, "0x") && strings.Contains(s, "*"):
		if strings.Trim(s[2:], "0123456789abcdefABCDEF*") != "" {
			return fmt.Errorf("bad ternary value %q", s)
		}
		return nil
	case strings.Contains(s, "->") || strings.Contains(s, ".."):
		sep := "->"
		if strings.Contains(s, "..") {
			sep = ".."
		}
		lo, hi, _ := strings.Cut(s, sep)
		if err := ValueSyntax(lo); err != nil {
			return err
		}
		return ValueSyntax(hi)
	case strings.Contains(s, "/"):
		i := strings.LastIndexByte(s, '/')
		if n, err := strconv.Atoi(s[i+1:]); err != nil || n < 0 {
			return fmt.Errorf("bad prefix length in %q", s)
		}
		return ValueSyntax(s[:i])
	}
	return ValueSyntax(s)
}

func ones(width int) *big.Int {
	return new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), uint(width)), big.NewInt(1))
}

func putBE(dst []byte, v *big.Int) {
	for i := range dst {
		dst[i] = 0
	}
	b := v.Bytes()
	if len(b) > len(dst) {
		b = b[len(b)-len(dst):]
	}
	copy(dst[len(dst)-len(b):], b)
}

// parseMatch returns value and mask (ternary/lpm/exact/optional) or lo/hi (range), and the prefix length for lpm.
func parseMatch(k *KeyLayout, s string) (a, b *big.Int, plen int, err error) {
	s = strings.TrimSpace(s)
	w := k.Width
	switch k.MatchKind {
	case "exact":
		v, err := ParseValue(s, w)
		return v, ones(w), w, err
	case "lpm":
		plen = w
		if i := strings.LastIndexByte(s, '/'); i >= 0 {
			n, err := strconv.Atoi(s[i+1:])
			if err != nil || n < 0 || n > w {
				return nil, nil, 0, fmt.Errorf("bad prefix length in %q", s)
			}
			plen, s = n, s[:i]
		}
		v, err := ParseValue(s, w)
		if err != nil {
			return nil, nil, 0, err
		}
		m := new(big.Int).Lsh(ones(plen), uint(w-plen))
		return new(big.Int).And(v, m), m, plen, nil
	case "ternary", "optional":
		if s == "*" || s == "_" {
			return new(big.Int), new(big.Int), 0, nil
		}
		if i := strings.Index(s, "&&&"); i >= 0 {
			v, err := ParseValue(s[:i], w)
			if err != nil {
				return nil, nil, 0, err
			}
			m, err := ParseValue(s[i+3:], w)
			if err != nil {
				return nil, nil, 0, err
			}
			return new(big.Int).And(v, m), m, 0, nil
		}
		if strings.HasPrefix(s, "0x") && strings.Contains(s, "*") {
			hv := strings.NewReplacer("*", "0").Replace(s[2:])
			var hm strings.Builder
			for _, c := range s[2:] {
				if c == '*' {
					hm.WriteByte('0')
				} else {
					hm.WriteByte('f')
				}
			}
			v, _ := new(big.Int).SetString(hv, 16)
			m, _ := new(big.Int).SetString(hm.String(), 16)
			if v == nil || m == nil {
				return nil, nil, 0, fmt.Errorf("bad ternary value %q", s)
			}
			m.And(m, ones(w))
			return new(big.Int).And(v, m), m, 0, nil
		}
		v, err := ParseValue(s, w)
		return v, ones(w), 0, err
	case "range":
		if s == "*" || s == "_" {
			return new(big.Int), ones(w), 0, nil
		}
		sep := ""
		for _, x := range []string{"->", ".."} {
			if strings.Contains(s, x) {
				sep = x
			}
		}
		if sep == "" {
			v, err := ParseValue(s, w)
			return v, v, 0, err
		}
		parts := strings.SplitN(s, sep, 2)
		lo, err := ParseValue(parts[0], w)
		if err != nil {
			return nil, nil, 0, err
		}
		hi, err := ParseValue(parts[1], w)
		if err != nil {
			return nil, nil, 0, err
		}
		if lo.Cmp(hi) > 0 {
			return nil, nil, 0, fmt.Errorf("empty range %q", s)
		}
		return lo, hi, 0, nil
	}
	return nil, nil, 0, fmt.Errorf("match kind %s is not supported", k.MatchKind)
}

// EncodeValue encodes an action with its arguments as a table value.
func (t *TableLayout) EncodeValue(action string, args []Arg) ([]byte, error) {
	if t.Profile != "" {
		return nil, fmt.Errorf("table %s is implemented by action profile %s: its entries and default action name a member or a group of the profile, not an action", t.Name, t.Profile)
	}
	a := t.Action(action)
	if a == nil {
		return nil, fmt.Errorf("table %s has no action %q", t.Name, action)
	}
	val := make([]byte, t.ValueBytes)
	binary.NativeEndian.PutUint32(val[0:4], a.ID)
	used := map[string]bool{}
	for i, p := range a.Params {
		var arg *Arg
		for j := range args {
			if args[j].Name == p.Name {
				arg = &args[j]
			}
		}
		if arg == nil && i < len(args) && args[i].Name == "" {
			arg = &args[i]
		}
		if arg == nil {
			return nil, fmt.Errorf("action %s: missing parameter %s", a.Name, p.Name)
		}
		used[arg.Name] = true
		v, err := ParseValue(arg.Value, p.Width)
		if err != nil {
			return nil, fmt.Errorf("action %s parameter %s: %v", a.Name, p.Name, err)
		}
		putBE(val[t.ParamOffset+p.Offset:t.ParamOffset+p.Offset+p.Size], v)
	}
	for _, x := range args {
		if x.Name != "" && !used[x.Name] {
			return nil, fmt.Errorf("action %s has no parameter %q", a.Name, x.Name)
		}
	}
	if len(args) > len(a.Params) {
		return nil, fmt.Errorf("action %s takes %d parameters, got %d", a.Name, len(a.Params), len(args))
	}
	return val, nil
}

// EncodeEntry encodes an entry of the table. priority matters for scan
// tables only (higher wins, >= 1).
func (t *TableLayout) EncodeEntry(matches []Match, action string, args []Arg, priority uint32) (*Entry, error) {
	if t.Kind == "const" {
		return nil, fmt.Errorf("table %s has const entries", t.Name)
	}
	if t.Kind == "keyless" {
		return nil, fmt.Errorf("table %s has no key; set its default action instead", t.Name)
	}
	val, err := t.EncodeValue(action, args)
	if err != nil {
		return nil, err
	}
	if a := t.Action(action); a.DefaultOnly {
		return nil, fmt.Errorf("action %s is default-only in table %s", a.Name, t.Name)
	}
	return t.encodeMatch(matches, val, priority)
}

// EncodeMatch encodes an entry's match alone (the value is zeros): the
// key to find or delete an entry by.
func (t *TableLayout) EncodeMatch(matches []Match, priority uint32) (*Entry, error) {
	if t.Kind == "const" || t.Kind == "keyless" {
		return nil, fmt.Errorf("table %s has no entries the control plane writes", t.Name)
	}
	return t.encodeMatch(matches, make([]byte, t.ValueBytes), priority)
}

// encodeMatch encodes an entry's match for the value val.
func (t *TableLayout) encodeMatch(matches []Match, val []byte, priority uint32) (*Entry, error) {
	byField := map[*KeyLayout]string{}
	for _, m := range matches {
		k := t.Key(m.Field)
		if k == nil {
			return nil, fmt.Errorf("table %s has no key field %q", t.Name, m.Field)
		}
		if _, dup := byField[k]; dup {
			return nil, fmt.Errorf("key field %s given twice", k.Name)
		}
		byField[k] = m.Value
	}
	kd := make([]byte, t.KeyBytes)
	km := make([]byte, t.KeyBytes)
	var rng []byte
	if t.Kind == "scan" {
		rng = make([]byte, t.EntryValueOffset-t.EntryRangeOffset)
	}
	plen := 0
	for _, k := range t.Keys {
		s, ok := byField[k]
		if !ok {
			if k.MatchKind == "exact" || t.Kind != "scan" {
				return nil, fmt.Errorf("missing key field %s", k.Name)
			}
			s = "*"
			if k.MatchKind == "lpm" {
				s = "0/0"
			}
		}
		a, b, pl, err := parseMatch(k, s)
		if err != nil {
			return nil, fmt.Errorf("key field %s: %v", k.Name, err)
		}
		if k.MatchKind == "range" {
			putBE(rng[k.RangeOffset:k.RangeOffset+k.Size], a)
			putBE(rng[k.RangeOffset+k.Size:k.RangeOffset+2*k.Size], b)
			continue
		}
		putBE(kd[k.Offset:k.Offset+k.Size], a)
		putBE(km[k.Offset:k.Offset+k.Size], b)
		if k.MatchKind == "lpm" {
			plen += pl
		} else {
			plen += k.Size * 8
		}
	}
	switch t.Kind {
	case "hash":
		return &Entry{Key: kd, Value: val}, nil
	case "lpm":
		key := make([]byte, 4+len(kd))
		binary.NativeEndian.PutUint32(key, uint32(plen))
		copy(key[4:], kd)
		return &Entry{Key: key, Value: val}, nil
	case "scan":
		if priority == 0 {
			return nil, fmt.Errorf("table %s needs a priority >= 1 for each entry", t.Name)
		}
		e := make([]byte, t.EntryBytes)
		binary.NativeEndian.PutUint32(e, priority)
		copy(e[8:], kd)
		copy(e[8+t.KeyBytes:], km)
		copy(e[t.EntryRangeOffset:], rng)
		copy(e[t.EntryValueOffset:], val)
		return &Entry{Value: e, Scan: true, MatchKey: append([]byte(nil), e[8:t.EntryValueOffset]...)}, nil
	}
	return nil, fmt.Errorf("table %s: unknown kind %s", t.Name, t.Kind)
}

// Priority returns the priority of an encoded scan entry (0 = empty slot).
func (t *TableLayout) Priority(entry []byte) uint32 {
	if len(entry) < 4 {
		return 0
	}
	return binary.NativeEndian.Uint32(entry)
}
