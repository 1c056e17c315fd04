package p4rt

// Table entries between P4Runtime form (ids, byte strings) and edgenf's
// entries (names, text values), which the engine validates, writes to the
// kernel and persists.

import (
	"encoding/hex"
	"fmt"
	"math/big"
	"net"
	"strconv"
	"strings"
	"time"

	p4nf "github.com/edgenf/edgenf/internal/nf/p4"
	"github.com/edgenf/edgenf/internal/p4/ir"
	"github.com/edgenf/edgenf/internal/p4/p4info"
	"google.golang.org/grpc/codes"
)

func tableByID(info *p4info.P4Info, id uint32) *p4info.TableLayout {
	for _, t := range info.Edgenf.Tables {
		if t.ID == id {
			return t
		}
	}
	return nil
}

func keyByID(t *p4info.TableLayout, id uint32) *p4info.KeyLayout {
	for _, k := range t.Keys {
		if k.ID == id {
			return k
		}
	}
	return nil
}

func actionByID(t *p4info.TableLayout, id uint32) *p4info.ActionLayout {
	for _, a := range t.Actions {
		if a.ID == id {
			return a
		}
	}
	return nil
}

// text renders a value of a width in one form per width (a MAC for 48
// bits, decimal up to 64 bits, hex above), as the p4 cube's learned
// entries do, so that an entry has one key however it was written.
func text(width int, b []byte) string { return p4info.FormatField(ir.DataField{Width: width}, b) }

// prefixText renders an lpm value: IPv4 and IPv6 addresses for 32 and 128
// bits.
func prefixText(width int, b []byte, plen int32) string {
	v := new(big.Int).SetBytes(b)
	var s string
	switch width {
	case 32:
		ip := make([]byte, 4)
		v.FillBytes(ip)
		s = net.IP(ip).String()
	case 128:
		ip := make([]byte, 16)
		v.FillBytes(ip)
		s = net.IP(ip).String()
	default:
		s = text(width, b)
	}
	return s + "/" + strconv.Itoa(int(plen))
}

// fits checks a P4Runtime byte string against a width.
func fits(what string, width int, b []byte) (*big.Int, error) {
	if len(b) == 0 {
		return nil, errf(codes.InvalidArgument, "%s: empty value (a byte string of at least one byte is required)", what)
	}
	v := new(big.Int).SetBytes(b)
	if v.BitLen() > width {
		return nil, errf(codes.InvalidArgument, "%s: value 0x%s does not fit in %d bits", what, hex.EncodeToString(b), width)
	}
	return v, nil
}

func ones(width int) *big.Int {
	return new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), uint(width)), big.NewInt(1))
}

// needsPriority reports whether a table's entries carry a priority
// (ternary, range or optional keys).
func needsPriority(t *p4info.TableLayout) bool {
	for _, k := range t.Keys {
		switch k.MatchKind {
		case "ternary", "range", "optional":
			return true
		}
	}
	return false
}

func keyNames(t *p4info.TableLayout) string {
	var out []string
	for _, k := range t.Keys {
		out = append(out, fmt.Sprintf("%s (id %d, %s, %d bits)", k.Name, k.ID, k.MatchKind, k.Width))
	}
	return strings.Join(out, ", ")
}

// toMatch converts a P4Runtime match into edgenf's match (full field
// names) and checks it.
func toMatch(t *p4info.TableLayout, fms []*FieldMatch, priority int32) (map[string]string, error) {
	out := map[string]string{}
	seen := map[uint32]bool{}
	for _, fm := range fms {
		k := keyByID(t, fm.FieldID)
		if k == nil {
			return nil, errf(codes.InvalidArgument, "table %s has no match field with id %d (fields: %s)", t.Name, fm.FieldID, keyNames(t))
		}
		if seen[fm.FieldID] {
			return nil, errf(codes.InvalidArgument, "table %s: match field %s (id %d) given twice", t.Name, k.Name, k.ID)
		}
		seen[fm.FieldID] = true
		if fm.Kind != k.MatchKind {
			got := fm.Kind
			if got == "" {
				got = "no match value"
			}
			return nil, errf(codes.InvalidArgument, "table %s: match field %s (id %d) is %s, got %s", t.Name, k.Name, k.ID, k.MatchKind, got)
		}
		what := fmt.Sprintf("table %s match field %s (id %d)", t.Name, k.Name, k.ID)
		switch k.MatchKind {
		case "exact", "optional":
			if _, err := fits(what, k.Width, fm.Value); err != nil {
				return nil, err
			}
			out[k.Name] = text(k.Width, fm.Value)
		case "lpm":
			v, err := fits(what, k.Width, fm.Value)
			if err != nil {
				return nil, err
			}
			if fm.PrefixLen <= 0 || int(fm.PrefixLen) > k.Width {
				return nil, errf(codes.InvalidArgument, "%s: prefix length %d: want 1..%d (a don't-care lpm field is left out)", what, fm.PrefixLen, k.Width)
			}
			host := new(big.Int).And(v, ones(k.Width-int(fm.PrefixLen)))
			if host.Sign() != 0 {
				return nil, errf(codes.InvalidArgument, "%s: value 0x%x has bits set past the /%d prefix", what, fm.Value, fm.PrefixLen)
			}
			out[k.Name] = prefixText(k.Width, fm.Value, fm.PrefixLen)
		case "ternary":
			v, err := fits(what, k.Width, fm.Value)
			if err != nil {
				return nil, err
			}
			m, err := fits(what+" mask", k.Width, fm.Mask)
			if err != nil {
				return nil, err
			}
			if m.Sign() == 0 {
				return nil, errf(codes.InvalidArgument, "%s: zero mask (a don't-care ternary field is left out)", what)
			}
			if new(big.Int).AndNot(v, m).Sign() != 0 {
				return nil, errf(codes.InvalidArgument, "%s: value 0x%x has bits set outside mask 0x%x", what, fm.Value, fm.Mask)
			}
			out[k.Name] = text(k.Width, fm.Value) + "&&&" + text(k.Width, fm.Mask)
		case "range":
			lo, err := fits(what+" low", k.Width, fm.Low)
			if err != nil {
				return nil, err
			}
			hi, err := fits(what+" high", k.Width, fm.High)
			if err != nil {
				return nil, err
			}
			if lo.Cmp(hi) > 0 {
				return nil, errf(codes.InvalidArgument, "%s: empty range 0x%x..0x%x", what, fm.Low, fm.High)
			}
			out[k.Name] = text(k.Width, fm.Low) + "->" + text(k.Width, fm.High)
		default:
			return nil, errf(codes.Unimplemented, "%s: match kind %s is not supported", what, k.MatchKind)
		}
	}
	for _, k := range t.Keys {
		if seen[k.ID] {
			continue
		}
		switch k.MatchKind {
		case "exact":
			return nil, errf(codes.InvalidArgument, "table %s: exact match field %s (id %d) is missing", t.Name, k.Name, k.ID)
		case "lpm":
			out[k.Name] = "0/0"
		default:
			out[k.Name] = "*"
		}
	}
	if needsPriority(t) && priority <= 0 {
		return nil, errf(codes.InvalidArgument, "table %s has ternary, range or optional fields: entries need a priority > 0, got %d", t.Name, priority)
	}
	if !needsPriority(t) && priority != 0 {
		return nil, errf(codes.InvalidArgument, "table %s has only exact and lpm fields: priority must be 0, got %d", t.Name, priority)
	}
	return out, nil
}

// toAction converts a P4Runtime action for a table (forDefault: as its
// default action).
func toAction(t *p4info.TableLayout, a *Action, forDefault bool) (*p4info.ActionLayout, map[string]string, error) {
	al := actionByID(t, a.ActionID)
	if al == nil {
		var names []string
		for _, x := range t.Actions {
			names = append(names, fmt.Sprintf("%s (id %d)", x.Name, x.ID))
		}
		return nil, nil, errf(codes.InvalidArgument, "table %s has no action with id %d (actions: %s)", t.Name, a.ActionID, strings.Join(names, ", "))
	}
	if al.DefaultOnly && !forDefault {
		return nil, nil, errf(codes.InvalidArgument, "action %s is default-only in table %s", al.Name, t.Name)
	}
	if al.TableOnly && forDefault {
		return nil, nil, errf(codes.InvalidArgument, "action %s cannot be the default action of table %s (table-only)", al.Name, t.Name)
	}
	params := map[string]string{}
	for _, p := range a.Params {
		var pl *p4info.ParamLayout
		for _, x := range al.Params {
			if x.ID == p.ParamID {
				pl = x
			}
		}
		if pl == nil {
			return nil, nil, errf(codes.InvalidArgument, "action %s has no parameter with id %d", al.Name, p.ParamID)
		}
		if _, dup := params[pl.Name]; dup {
			return nil, nil, errf(codes.InvalidArgument, "action %s: parameter %s (id %d) given twice", al.Name, pl.Name, pl.ID)
		}
		if _, err := fits(fmt.Sprintf("action %s parameter %s (id %d)", al.Name, pl.Name, pl.ID), pl.Width, p.Value); err != nil {
			return nil, nil, err
		}
		params[pl.Name] = text(pl.Width, p.Value)
	}
	for _, x := range al.Params {
		if _, ok := params[x.Name]; !ok {
			return nil, nil, errf(codes.InvalidArgument, "action %s: parameter %s (id %d, %d bits) is missing", al.Name, x.Name, x.ID, x.Width)
		}
	}
	if len(params) == 0 {
		params = nil
	}
	return al, params, nil
}

// matchID identifies an entry by what P4Runtime keys it on (its encoded
// match and priority), whatever notation its values were written in.
func matchID(t *p4info.TableLayout, match map[string]string, priority uint32) (string, error) {
	enc, err := t.EncodeMatch((&p4nf.Entry{Match: match}).Matches(), priority)
	if err != nil {
		return "", err
	}
	if enc.Scan {
		return fmt.Sprintf("%s|%x|%d", t.Name, enc.MatchKey, priority), nil
	}
	return fmt.Sprintf("%s|%x", t.Name, enc.Key), nil
}

// fromEntry converts a stored entry into P4Runtime form; don't-care
// fields are left out.
func fromEntry(t *p4info.TableLayout, e *p4nf.Entry) (*TableEntry, error) {
	var enc *p4info.Entry
	var err error
	if e.Member != nil || e.Group != nil { // the reader fills the action in (actprof.go)
		enc, err = t.EncodeMatch(e.Matches(), e.Priority)
	} else {
		enc, err = t.EncodeEntry(e.Matches(), e.Action, e.Args(), e.Priority)
	}
	if err != nil {
		return nil, err
	}
	var d *p4info.Decoded
	if enc.Scan {
		d, err = t.DecodeEntry(nil, enc.Value)
	} else {
		d, err = t.DecodeEntry(enc.Key, enc.Value)
	}
	if err != nil {
		return nil, err
	}
	te := &TableEntry{TableID: t.ID, Priority: int32(e.Priority)}
	if d, err := time.ParseDuration(e.IdleTimeout); err == nil {
		te.IdleTimeoutNs = int64(d)
	}
	for _, fm := range d.Matches {
		k := keyByID(t, fm.FieldID)
		if k == nil {
			continue
		}
		out := &FieldMatch{FieldID: fm.FieldID, Kind: k.MatchKind}
		switch k.MatchKind {
		case "exact":
			out.Value = fm.Value
		case "optional":
			if s := e.Match[k.Name]; s == "" || s == "*" || s == "_" {
				continue
			}
			out.Value = fm.Value
		case "lpm":
			if fm.PrefixLen == 0 {
				continue
			}
			out.Value, out.PrefixLen = fm.Value, int32(fm.PrefixLen)
		case "ternary":
			if new(big.Int).SetBytes(fm.Mask).Sign() == 0 {
				continue
			}
			out.Value, out.Mask = fm.Value, fm.Mask
		case "range":
			if new(big.Int).SetBytes(fm.Low).Sign() == 0 && new(big.Int).SetBytes(fm.High).Cmp(ones(k.Width)) == 0 {
				continue
			}
			out.Low, out.High = fm.Low, fm.High
		}
		te.Match = append(te.Match, out)
	}
	te.Action = &TableAction{Action: actionOf(t, d.Action)}
	return te, nil
}

func actionOf(t *p4info.TableLayout, a p4info.ActionData) *Action {
	out := &Action{ActionID: a.ActionID}
	if al := actionByID(t, a.ActionID); al != nil {
		for _, p := range al.Params {
			v := a.Params[p.ID]
			if len(v) == 0 {
				v = []byte{0}
			}
			out.Params = append(out.Params, &Param{ParamID: p.ID, Value: v})
		}
	}
	return out
}

// defaultEntry is a table's default entry in P4Runtime form: the one set
// by the control plane (d), else the program's.
func defaultEntry(t *p4info.TableLayout, d *p4nf.Default) (*TableEntry, error) {
	action, params := t.DefaultAction, map[string]string{}
	if d != nil {
		action, params = d.Action, d.Params
	} else if al := t.Action(action); al != nil {
		for i, p := range al.Params {
			if i < len(t.DefaultArgs) {
				params[p.Name] = t.DefaultArgs[i]
			}
		}
	}
	te := &TableEntry{TableID: t.ID, IsDefaultAction: true, Const: t.ConstDefault}
	if action == "" {
		return te, nil
	}
	val, err := t.EncodeValue(action, (&p4nf.Entry{Params: params}).Args())
	if err != nil {
		return nil, err
	}
	al := t.Action(action)
	a := p4info.ActionData{ActionID: al.ID, Params: map[uint32][]byte{}}
	for _, p := range al.Params {
		b := val[t.ParamOffset+p.Offset : t.ParamOffset+p.Offset+p.Size]
		a.Params[p.ID] = minimalBytes(new(big.Int).SetBytes(b))
	}
	te.Action = &TableAction{Action: actionOf(t, a)}
	return te, nil
}
