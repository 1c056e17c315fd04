package ir

import (
	"fmt"
	"sort"
	"strings"

	"github.com/edgenf/edgenf/internal/p4/sema"
	"github.com/edgenf/edgenf/internal/p4/syntax"
)

// The slow path of a v1model program: digests, log_msg calls and the
// @controller_header headers (packet_in / packet_out).
//
// A digest or log message travels on the framework's punt ring as a punt
// header (struct edgenf_punt_hdr: reason PuntDigest or PuntLog, arg the
// digest's or message's index, pkt_len the data length) followed by the
// data: each field big-endian in ceil(width/8) bytes, in declaration order
// (nested structs flattened), the P4Runtime bytestring of that field.

// Punt reasons of P4 cubes (struct edgenf_punt_hdr.reason).
const (
	PuntPacketIn = 1
	PuntDigest   = 2
	PuntLog      = 3
)

// DefaultCPUPort is the CPU port of a cube unless configured (BMv2's usual
// --cpu-port, the P4 tutorials' CPU_PORT); 510 punts as well.
const DefaultCPUPort = 255

// MaxDigestBytes bounds the data of one digest or log message.
const MaxDigestBytes = 256

// SlowPathStatsMap is the per-CPU array of u64 counters of slow-path
// messages: SPDigestSent, SPDigestLost, SPLogSent, SPLogLost.
const SlowPathStatsMap = "p4_sp_stats"

// Indexes in SlowPathStatsMap.
const (
	SPDigestSent = 0
	SPDigestLost = 1 // the punt ring was full
	SPLogSent    = 2
	SPLogLost    = 3 // ring full or over the in-kernel rate limit
	SPStats      = 4
)

// LogRatePerCPU is the number of log_msg messages a CPU sends per second;
// the rest are counted in SPLogLost.
const LogRatePerCPU = 64

// DataField is one field of a digest or log message.
type DataField struct {
	Name   string `json:"name"`
	Width  int    `json:"bitwidth"`
	Offset int    `json:"offset"` // bytes
	Size   int    `json:"size"`   // bytes: ceil(width/8)
	Signed bool   `json:"signed,omitempty"`
	Bool   bool   `json:"bool,omitempty"`
}

// Digest is one digest type (v1model: named after the type of its data;
// PSA: after its Digest instance).
type Digest struct {
	Name   string
	ID     uint32
	Index  int
	Type   *sema.Struct
	Fields []DataField
	Bytes  int
	Pos    syntax.Pos
}

// LogMsg is one log_msg call.
type LogMsg struct {
	Index  int
	Format string
	Fields []DataField
	Bytes  int
	Pos    syntax.Pos
}

// CtrlField is a field of a controller header.
type CtrlField struct {
	ID        uint32
	Name      string
	Width     int
	BitOffset int
}

// CtrlHeader is a header annotated @controller_header("packet_in") or
// ("packet_out").
type CtrlHeader struct {
	Name   string // the annotation's argument
	ID     uint32
	Header *sema.Struct
	Annots []string
	Fields []CtrlField
	Bytes  int
}

// SlowPath is what a program sends to and receives from the control plane.
type SlowPath struct {
	Digests  []*Digest
	DigestOf map[*syntax.Call]*Digest
	Logs     []*LogMsg
	LogOf    map[*syntax.Call]*LogMsg
	Headers  []*CtrlHeader
	Errs     syntax.ErrorList
}

// BuildSlowPath collects the digests, log messages and controller headers of
// p. It is deterministic: the backend and the model compute the same indexes.
func BuildSlowPath(p *Program, src *syntax.Sources) *SlowPath {
	sp := &SlowPath{DigestOf: map[*syntax.Call]*Digest{}, LogOf: map[*syntax.Call]*LogMsg{}}
	info := p.Info
	errorf := func(pos syntax.Pos, format string, args ...any) {
		if src != nil {
			sp.Errs = append(sp.Errs, src.Errorf(pos, format, args...))
		} else {
			sp.Errs = append(sp.Errs, &syntax.Error{Pos: pos, Msg: fmt.Sprintf(format, args...)})
		}
	}
	var calls []*syntax.Call
	for c, cr := range info.Calls {
		if cr.Kind == sema.CallExternFunc && (cr.Method == "digest" || cr.Method == "log_msg") || psaDigestPack(cr) {
			calls = append(calls, c)
		}
	}
	sort.Slice(calls, func(i, j int) bool { return posLess(calls[i].Pos, calls[j].Pos) })
	ids := newIDAlloc()
	byName := map[string]*Digest{}
	for _, c := range calls {
		switch cr := info.Calls[c]; cr.Method {
		case "digest", "pack":
			// v1model: digest(receiver, data), one digest per data type;
			// PSA: Digest<T> d; d.pack(data), one per instance
			data, name := c.Args[len(c.Args)-1].Value, ""
			if cr.Method == "digest" && (len(c.Args) != 2 || c.Args[1].Value == nil) {
				errorf(c.Pos, "digest takes a receiver and the data")
				continue
			}
			t := info.Types[data]
			if cr.Method == "pack" && len(cr.Instance.TypeArgs) == 1 {
				t = cr.Instance.TypeArgs[0] // Digest<T>: a list is packed as T
			}
			st, ok := t.(*sema.Struct)
			if !ok {
				errorf(data.NodePos(), "the data of a digest must have a struct type (write digest<T>(1, {...}) or pass a struct), not %s", typeName(t))
				continue
			}
			name = st.Name
			if cr.Method == "pack" {
				name = cr.Instance.FullName
			}
			d := byName[name]
			if d == nil {
				fields, n, err := flatten(st, "")
				if err != nil {
					errorf(c.Args[1].Value.NodePos(), "digest %s: %v", st.Name, err)
					continue
				}
				if n > MaxDigestBytes {
					errorf(c.Pos, "digest %s carries %d bytes; edgenf delivers at most %d bytes per digest", st.Name, n, MaxDigestBytes)
					continue
				}
				d = &Digest{Name: name, Index: len(sp.Digests), Type: st, Fields: fields, Bytes: n, Pos: c.Pos}
				d.ID = ids.id(PrefixDigest, name, nil)
				byName[name] = d
				sp.Digests = append(sp.Digests, d)
			}
			sp.DigestOf[c] = d
		case "log_msg":
			if len(c.Args) == 0 {
				continue
			}
			sl, ok := c.Args[0].Value.(*syntax.StringLit)
			if !ok {
				errorf(c.Pos, "log_msg needs a string literal")
				continue
			}
			m := &LogMsg{Index: len(sp.Logs), Format: sl.Value, Pos: c.Pos}
			if len(c.Args) > 1 && c.Args[1].Value != nil {
				fields, n, err := flattenExpr(info, c.Args[1].Value)
				if err != nil {
					errorf(c.Args[1].Value.NodePos(), "log_msg: %v", err)
					continue
				}
				if n > MaxDigestBytes {
					errorf(c.Pos, "log_msg data is %d bytes; at most %d", n, MaxDigestBytes)
					continue
				}
				m.Fields, m.Bytes = fields, n
			}
			if k := strings.Count(m.Format, "{}"); k != len(m.Fields) {
				errorf(c.Pos, "log_msg format has %d {} placeholders for %d values", k, len(m.Fields))
				continue
			}
			sp.LogOf[c] = m
			sp.Logs = append(sp.Logs, m)
		}
	}
	// controller headers, in declaration order
	hids := newIDAlloc()
	for _, d := range info.Prog.Decls {
		sd, ok := d.(*syntax.StructDecl)
		if !ok || sd.Kind != "header" {
			continue
		}
		a := sd.Annotations.Get("controller_header")
		if a == nil {
			continue
		}
		name := ""
		if len(a.Args) == 1 {
			if sl, ok := a.Args[0].(*syntax.StringLit); ok {
				name = sl.Value
			}
		}
		if name == "" {
			errorf(sd.Pos, "@controller_header needs a name: @controller_header(\"packet_in\")")
			continue
		}
		st := findHeader(info, sd.Name)
		if st == nil { // not part of the program's headers
			continue
		}
		h := &CtrlHeader{Name: name, Header: st, Bytes: st.Bits / 8,
			Annots: []string{fmt.Sprintf("@controller_header(%q)", name)}}
		h.ID = hids.id(0x04, name, sd.Annotations)
		off := 0
		for i, f := range st.Fields {
			w := sema.Width(f.Type)
			if w <= 0 {
				errorf(sd.Pos, "controller header %s: field %s has no fixed width", name, f.Name)
				break
			}
			h.Fields = append(h.Fields, CtrlField{ID: uint32(i + 1), Name: f.Name, Width: w, BitOffset: off})
			off += w
		}
		sp.Headers = append(sp.Headers, h)
	}
	return sp
}

// findHeader finds the header type named name among the program's headers
// (the parser's H parameter).
func findHeader(info *sema.Info, name string) *sema.Struct {
	if info.Main == nil || len(info.Main.Blocks) == 0 {
		return nil
	}
	p, ok := info.Main.Blocks[0].(*sema.Parser)
	if !ok || len(p.Params) < 2 {
		return nil
	}
	var walk func(t sema.Type, depth int) *sema.Struct
	walk = func(t sema.Type, depth int) *sema.Struct {
		if depth > 8 {
			return nil
		}
		switch x := t.(type) {
		case *sema.Struct:
			if x.Kind == "header" && x.Name == name {
				return x
			}
			for _, f := range x.Fields {
				if r := walk(f.Type, depth+1); r != nil {
					return r
				}
			}
		case *sema.Stack:
			return walk(x.Elem, depth+1)
		}
		return nil
	}
	return walk(p.Params[1].Type, 0)
}

func posLess(a, b syntax.Pos) bool {
	if a.File != b.File {
		return a.File < b.File
	}
	if a.Line != b.Line {
		return a.Line < b.Line
	}
	return a.Col < b.Col
}

func typeName(t sema.Type) string {
	if t == nil {
		return "an untyped value"
	}
	if _, ok := t.(*sema.ListT); ok {
		return "a list without a type (give the type: digest<T>(...))"
	}
	return t.String()
}

// leaf returns the field description of a scalar type.
func leaf(name string, t sema.Type) (DataField, error) {
	switch x := t.(type) {
	case *sema.Bits:
		if x.W > 64 && x.W%8 != 0 {
			return DataField{}, fmt.Errorf("field %s: values wider than 64 bits must be whole bytes", name)
		}
		return DataField{Name: name, Width: x.W, Size: (x.W + 7) / 8, Signed: x.Signed}, nil
	case *sema.Bool:
		return DataField{Name: name, Width: 1, Size: 1, Bool: true}, nil
	case *sema.Enum:
		if x.Under != nil {
			return DataField{Name: name, Width: x.Under.W, Size: (x.Under.W + 7) / 8, Signed: x.Under.Signed}, nil
		}
		return DataField{Name: name, Width: 32, Size: 4}, nil
	case *sema.ErrorT:
		return DataField{Name: name, Width: 32, Size: 4}, nil
	}
	return DataField{}, fmt.Errorf("field %s has type %s, which cannot be sent to the control plane", name, typeName(t))
}

// flatten lists the scalar fields of a struct or header (nested ones with
// dotted names) with their byte offsets.
func flatten(st *sema.Struct, prefix string) ([]DataField, int, error) {
	var out []DataField
	n := 0
	var walk func(st *sema.Struct, prefix string) error
	walk = func(st *sema.Struct, prefix string) error {
		for _, f := range st.Fields {
			name := prefix + f.Name
			if sub, ok := f.Type.(*sema.Struct); ok {
				if err := walk(sub, name+"."); err != nil {
					return err
				}
				continue
			}
			l, err := leaf(name, f.Type)
			if err != nil {
				return err
			}
			l.Offset = n
			n += l.Size
			out = append(out, l)
		}
		return nil
	}
	err := walk(st, prefix)
	return out, n, err
}

// FlattenData lists the scalar values of a log_msg/digest data expression
// (a list, a struct or a single value): with names f0, f1, ... for list
// elements.
func flattenExpr(info *sema.Info, e syntax.Expr) ([]DataField, int, error) {
	t := info.Types[e]
	if st, ok := t.(*sema.Struct); ok {
		return flatten(st, "")
	}
	var out []DataField
	n := 0
	add := func(name string, t sema.Type) error {
		if st, ok := t.(*sema.Struct); ok {
			fs, k, err := flatten(st, name+".")
			if err != nil {
				return err
			}
			for _, f := range fs {
				f.Offset += n
				out = append(out, f)
			}
			n += k
			return nil
		}
		if _, ok := t.(*sema.InfInt); ok {
			return fmt.Errorf("%s needs a width; write e.g. 8w0", name)
		}
		l, err := leaf(name, t)
		if err != nil {
			return err
		}
		l.Offset = n
		n += l.Size
		out = append(out, l)
		return nil
	}
	if l, ok := e.(*syntax.List); ok {
		for i, el := range l.Elems {
			if err := add(fmt.Sprintf("f%d", i), info.Types[el]); err != nil {
				return nil, 0, err
			}
		}
		return out, n, nil
	}
	if tt, ok := t.(*sema.Tuple); ok {
		for i, el := range tt.Elems {
			if err := add(fmt.Sprintf("f%d", i), el); err != nil {
				return nil, 0, err
			}
		}
		return out, n, nil
	}
	err := add("f0", t)
	return out, n, err
}

// psaDigestPack reports whether cr is PSA's Digest.pack(data).
func psaDigestPack(cr *sema.CallRef) bool {
	return cr.Kind == sema.CallExternMethod && cr.Instance != nil && cr.Instance.Extern.Name == "Digest" && cr.Method == "pack"
}
