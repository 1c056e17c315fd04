// Package backend turns a lowered P4 program into eBPF C for edgenf's cube
// framework (bpf/include/edgenf) and compiles it with clang for the XDP and
// TC hooks. The C it writes includes the P4 runtime's headers
// (bpf/include/edgenf/p4) and defines this program's settings; the runtime
// itself is not generated.
//
// Generated code shape: all per-packet P4 state (headers, metadata,
// standard_metadata, locals, key and packet buffers) lives in one per-CPU
// array map value (p4_state_map) so the BPF stack stays small. The parser
// reads each header's fields straight from the packet into host-order
// integers; the deparser grows or shrinks the packet head by the difference
// to the parsed length and writes the valid headers in front of the
// payload, only the fields that may have changed of a header still where
// it was parsed (packet.go).
package backend

import (
	"fmt"
	"math/big"
	"strings"

	"github.com/edgenf/edgenf/internal/p4/ir"
	"github.com/edgenf/edgenf/internal/p4/sema"
	"github.com/edgenf/edgenf/internal/p4/syntax"
)

// Output is generated C with a map from C lines to P4 source positions.
type Output struct {
	C string
	// Lines maps a line of C (1-based) to the P4 statement it was generated
	// from, for lines generated from statements.
	Lines map[int]syntax.Pos
}

// Generate returns the C source for prog, for the target opt describes.
func Generate(prog *ir.Program, src *syntax.Sources, opt Options) (*Output, error) {
	g := &gen{p: prog, info: prog.Info, src: src, lv: map[*sema.Var]string{},
		structs: map[*sema.Struct]bool{}, opt: opt}
	g.run()
	if len(g.errs) > 0 {
		return nil, g.errs.Err()
	}
	out := &Output{C: g.out.String(), Lines: map[int]syntax.Pos{}}
	for i, p := range g.bodyPos {
		if p.IsValid() {
			out.Lines[g.bodyStart+i] = p
		}
	}
	return out, nil
}

type gen struct {
	p    *ir.Program
	info *sema.Info
	src  *syntax.Sources
	errs syntax.ErrorList

	types   strings.Builder // struct definitions
	maps    strings.Builder
	funcs   strings.Builder
	out     strings.Builder
	state   []string // fields of struct p4_state (reset per packet)
	bufs    []string // fields of struct p4_state not reset
	structs map[*sema.Struct]bool
	stacks  map[string]bool
	tuples  map[string]string

	lv        map[*sema.Var]string      // C lvalue of each variable
	rets      map[*sema.Function]string // return storage of functions returning non-scalars (calls.go)
	spares    map[string]bool           // elements out-of-range stack indices select (stacks.go)
	pscope    *parserScope              // the parser whose states are being generated (parser.go)
	loopLimit int                       // visits of parser loop states allowed (parser.go)
	subDepth  int                       // sub-parsers being inlined (subparser.go)
	tmp       int
	hTy       *sema.Struct // the H type
	mTy       *sema.Struct // the M type

	w          *strings.Builder // current function body
	body       *strings.Builder // the builder whose lines are tracked
	pos        syntax.Pos       // P4 statement being generated
	bodyPos    []syntax.Pos     // P4 position of each body line
	bodyStart  int              // C line number of the first body line
	indent     int
	inParser   bool
	inAction   bool
	maxHdr     int // largest header in bytes
	hdrTotal   int
	cbuf       int // checksum/hash buffer size needed
	inFunction *sema.Function
	emitMode   int
	needCRC32  bool
	needCRC16  bool
	fs         *fastState   // packet access and deparse-what-changed (packet.go)
	sp         *ir.SlowPath // digests, log_msg, controller headers (slowpath.go)
	opt        Options

	assertSites []string     // assert/assume call sites (externs.go)
	replLists   [][]string   // field lists of clone3/resubmit/recirculate data (replicate.go)
	atomic      *atomicState // inside an @atomic block with registers (atomic.go)
	atomicUsed  bool
}

func (g *gen) errorf(pos syntax.Pos, format string, args ...any) {
	if len(g.errs) < 50 {
		g.errs = append(g.errs, g.src.Errorf(pos, format, args...))
	}
}

func (g *gen) unsupported(pos syntax.Pos, what string) {
	g.errorf(pos, "unsupported: %s (not yet implemented by edgenf's P4 compiler)", what)
}

func (g *gen) line(format string, args ...any) {
	s := strings.Repeat("\t", g.indent) + fmt.Sprintf(format, args...) + "\n"
	if g.pscope != nil && g.pscope.reject != "" && strings.Contains(s, "goto st_reject;") {
		// inside an inlined sub-parser, reject goes through its copy-out
		// first (subparser.go)
		s = strings.ReplaceAll(s, "goto st_reject;", "goto "+g.pscope.reject+";")
		g.pscope.rejectUsed = true
	}
	g.w.WriteString(s)
	if g.w == g.body {
		for i := strings.Count(s, "\n"); i > 0; i-- {
			g.bodyPos = append(g.bodyPos, g.pos)
		}
	}
}

func (g *gen) newTmp(prefix string) string {
	g.tmp++
	return fmt.Sprintf("%s%d", prefix, g.tmp)
}

func mask(w int) string {
	if w >= 64 {
		return "0xffffffffffffffffULL"
	}
	return fmt.Sprintf("0x%xULL", (uint64(1)<<uint(w))-1)
}

func cint(v *big.Int) string {
	if v.Sign() >= 0 && v.BitLen() <= 64 {
		return fmt.Sprintf("0x%xULL", v.Uint64())
	}
	m := new(big.Int).And(v, new(big.Int).SetUint64(^uint64(0)))
	return fmt.Sprintf("0x%xULL", m.Uint64())
}

// ---------- types ----------

func scalarCType(w int) string {
	switch {
	case w <= 8:
		return "__u8"
	case w <= 16:
		return "__u16"
	case w <= 32:
		return "__u32"
	default:
		return "__u64"
	}
}

// decl returns a C declaration of name with P4 type t.
func (g *gen) decl(t sema.Type, name string, pos syntax.Pos) string {
	switch x := t.(type) {
	case *sema.Bits:
		if x.W > 64 {
			if x.W%8 != 0 {
				g.unsupported(pos, fmt.Sprintf("%s: values wider than 64 bits must be a whole number of bytes", x))
			}
			return fmt.Sprintf("__u8 %s[%d]", name, (x.W+7)/8)
		}
		return scalarCType(x.W) + " " + name
	case *sema.Bool:
		return "__u8 " + name
	case *sema.Enum:
		if x.Under != nil {
			return g.decl(x.Under, name, pos)
		}
		return "__u32 " + name
	case *sema.ErrorT:
		return "__u32 " + name
	case *sema.Struct:
		return g.structType(x, pos) + " " + name
	case *sema.Tuple:
		return g.tupleType(x, pos) + " " + name
	case *sema.Stack:
		return g.stackType(x, pos) + " " + name
	case *sema.Varbit:
		return g.varbitType(x) + " " + name
	}
	g.unsupported(pos, "variables of type "+t.String())
	return "__u8 " + name
}

// tupleType declares a C struct for a tuple type (fields f0, f1, ...).
func (g *gen) tupleType(tt *sema.Tuple, pos syntax.Pos) string {
	key := tt.String()
	if n, ok := g.tuples[key]; ok {
		return n
	}
	if g.tuples == nil {
		g.tuples = map[string]string{}
	}
	n := fmt.Sprintf("struct tup_%d", len(g.tuples))
	g.tuples[key] = n
	var b strings.Builder
	fmt.Fprintf(&b, "/* %s */\n%s {\n", comment(key), n)
	for i, e := range tt.Elems {
		fmt.Fprintf(&b, "\t%s;\n", g.decl(e, fmt.Sprintf("f%d", i), pos))
	}
	b.WriteString("};\n\n")
	g.types.WriteString(b.String())
	return n
}

func (g *gen) structType(st *sema.Struct, pos syntax.Pos) string {
	prefix := "s_"
	if st.Kind == "header" {
		prefix = "h_"
	} else if st.Kind == "header_union" {
		prefix = "u_"
	}
	cname := "struct " + prefix + ir.Sanitize(st.Name)
	if g.structs[st] {
		return cname
	}
	g.structs[st] = true
	var b strings.Builder
	fmt.Fprintf(&b, "%s {\n", cname)
	if st.Kind == "header" {
		b.WriteString("\t__u8 valid;\n")
	}
	for _, f := range st.Fields {
		fmt.Fprintf(&b, "\t%s;\n", g.decl(f.Type, "f_"+f.Name, pos))
	}
	if len(st.Fields) == 0 && st.Kind != "header" {
		b.WriteString("\t__u8 _empty;\n")
	}
	b.WriteString("};\n\n")
	g.types.WriteString(b.String())
	return cname
}

// stackType declares a C struct for a header stack: the elements and
// nextIndex (next).
func (g *gen) stackType(st *sema.Stack, pos syntax.Pos) string {
	el, ok := st.Elem.(*sema.Struct)
	if !ok {
		g.unsupported(pos, "stacks of "+st.Elem.String())
		return "__u8"
	}
	et := g.structType(el, pos)
	cname := fmt.Sprintf("struct hs_%s_%d", ir.Sanitize(el.Name), st.Size)
	if g.stacks == nil {
		g.stacks = map[string]bool{}
	}
	if g.stacks[cname] {
		return cname
	}
	g.stacks[cname] = true
	fmt.Fprintf(&g.types, "%s {\n\t%s e[%d];\n\t__u32 next;\n};\n\n", cname, et, st.Size)
	return cname
}

// ---------- driver ----------

func (g *gen) run() {
	info := g.info
	if info.Main.Arch != "v1model" {
		g.errorf(syntax.Pos{}, "architecture %s is not supported", info.Main.Arch)
		return
	}
	blocks := info.Main.Blocks
	parser := blocks[0].(*sema.Parser)
	// bind block parameters: Parser(packet_in, out H, inout M, inout SM)
	if len(parser.Params) != 4 {
		g.errorf(parser.Decl.Pos, "parser %s must have 4 parameters for V1Switch", parser.Name)
		return
	}
	h, ok1 := parser.Params[1].Type.(*sema.Struct)
	m, ok2 := parser.Params[2].Type.(*sema.Struct)
	if !ok1 || !ok2 || h.Kind != "struct" || m.Kind != "struct" {
		g.errorf(parser.Decl.Pos, "the headers and metadata parameters must be structs")
		return
	}
	g.hTy, g.mTy = h, m
	sm := info.StandardMetadata
	g.state = append(g.state, g.decl(h, "hdr", parser.Decl.Pos), g.decl(m, "meta", parser.Decl.Pos), g.decl(sm, "sm", parser.Decl.Pos), "__u32 off", "__u32 tr_hit", "__u32 tr_action")
	bind := func(v *sema.Var, c string) { g.lv[v] = c }
	bind(parser.Params[1], "s->hdr")
	bind(parser.Params[2], "s->meta")
	bind(parser.Params[3], "s->sm")
	kinds := []string{"parser", "verify", "ingress", "egress", "compute", "deparser"}
	for i, b := range blocks[1:] {
		c := b.(*sema.Control)
		var want []string
		switch kinds[i+1] {
		case "verify", "compute":
			want = []string{"s->hdr", "s->meta"}
		case "ingress", "egress":
			want = []string{"s->hdr", "s->meta", "s->sm"}
		case "deparser":
			want = []string{"", "s->hdr"}
		}
		if len(c.Params) != len(want) {
			g.errorf(c.Decl.Pos, "control %s has %d parameters; the V1Switch %s block takes %d", c.Name, len(c.Params), kinds[i+1], len(want))
			return
		}
		for j, v := range c.Params {
			if want[j] != "" {
				bind(v, want[j])
			}
		}
	}
	// header sizes
	var sizeHeaders func(st *sema.Struct)
	sizeHeaders = func(st *sema.Struct) {
		for _, f := range st.Fields {
			if hs, ok := f.Type.(*sema.Stack); ok {
				if el, ok := hs.Elem.(*sema.Struct); ok {
					n, total := el.Bits/8, hdrBytes(el)
					if el.Kind == "header_union" {
						n, total = unionBytes(el)
					}
					g.hdrTotal += total * hs.Size
					if n > g.maxHdr {
						g.maxHdr = n
					}
				}
				continue
			}
			sub, ok := f.Type.(*sema.Struct)
			if !ok {
				continue
			}
			if sub.Kind != "header" {
				sizeHeaders(sub)
				continue
			}
			n := sub.Bits / 8
			g.hdrTotal += hdrBytes(sub)
			if n > g.maxHdr {
				g.maxHdr = n
			}
		}
	}
	sizeHeaders(h)
	g.collectHeaders(h)
	if g.maxHdr == 0 {
		g.maxHdr = 1
	}
	g.cbuf = 64

	// maps for tables and counters
	g.emitMaps()
	g.slowPathSetup()

	var body strings.Builder
	g.w = &body
	g.body = &body
	// actions (all, including top-level), then tables, controls, parser, deparser
	// sub-controls: parameters get their own storage (copy-in/copy-out)
	for _, sub := range info.SubControls {
		if !info.LiveControl(sub.Parent) {
			continue
		}
		for _, v := range sub.Control.Params {
			if et, ok := v.Type.(*sema.ExternT); ok {
				g.unsupported(v.Pos, "a sub-control parameter of type "+et.Decl.Name)
				continue
			}
			g.localStorage(v, v.Pos)
		}
	}
	// What nothing calls is generated all the same (its errors are the
	// program's), but left out of the C: clang warns about unused functions.
	called := g.calledCode()
	for _, f := range info.Functions {
		g.unlessUnused(called[f], func() { g.function(f) })
	}
	for _, a := range info.Actions {
		if info.LiveControl(a.Control) {
			g.unlessUnused(called[a], func() { g.action(a) })
		}
	}
	for _, t := range g.p.Tables {
		g.table(t)
	}
	// controls in declaration order: a sub-control comes before its users
	dep := blocks[len(blocks)-1].(*sema.Control)
	for _, c := range info.Controls {
		switch {
		case c == dep:
			g.deparser(c)
		case info.LiveControl(c):
			g.unlessUnused(!emptyStage(blocks, c), func() { g.control(c) })
		}
	}
	g.parser(parser)
	g.pipeline(blocks)

	obufSize := 1
	for obufSize < g.hdrTotal {
		obufSize <<= 1
	}
	// assemble
	g.out.WriteString(g.head())
	g.out.WriteString("\n/* ---- types ---- */\n\n")
	g.out.WriteString(g.types.String())
	g.out.WriteString("/* Per-packet P4 state; everything before 'buf' is zeroed for each packet. */\nstruct p4_state {\n")
	for _, f := range g.state {
		fmt.Fprintf(&g.out, "\t%s;\n", f)
	}
	fmt.Fprintf(&g.out, "\t__u8 buf[%d];\n", g.maxHdr)
	fmt.Fprintf(&g.out, "\t__u8 obuf[%d];\n", obufSize+g.maxHdr)
	fmt.Fprintf(&g.out, "\t__u8 cbuf[%d];\n", g.cbuf+8)
	g.out.WriteString("\t__u8 pbuf[8];\n")
	for _, f := range g.bufs {
		fmt.Fprintf(&g.out, "\t%s;\n", f)
	}
	g.out.WriteString("};\n\n")
	fmt.Fprintf(&g.out, "#define P4_OBUF_MASK %d\n#define P4_OBUF_SIZE %d\n\n", obufSize-1, obufSize)
	g.out.WriteString("struct {\n\t__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);\n\t__uint(max_entries, 1);\n\t__type(key, __u32);\n\t__type(value, struct p4_state);\n} p4_state_map SEC(\".maps\");\n\n")
	g.out.WriteString("/* ---- tables and counters ---- */\n\n")
	g.out.WriteString(g.maps.String())
	g.out.WriteString(g.assertMaps())
	g.bodyStart = strings.Count(g.out.String(), "\n") + 1
	g.out.WriteString(body.String())
}

// head is the start of the generated C: the runtime headers the program
// needs (bpf/include/edgenf/p4) and the settings of this build.
func (g *gen) head() string {
	var b strings.Builder
	b.WriteString("// Generated by edgenf's P4 compiler. Do not edit.\n")
	b.WriteString("#include <edgenf/p4/p4.h>\n")
	opt := []struct {
		header string
		used   bool
	}{
		{"meter.h", len(g.p.Meters) > 0 || len(g.p.DirectMeters) > 0},
		{"crc.h", g.needCRC32 || g.needCRC16},
		{"digest.h", g.sp != nil && (len(g.sp.Digests) > 0 || len(g.sp.Logs) > 0)},
		{"atomic.h", g.atomicUsed},
		{"replicate.h", g.p.Replicates},
	}
	for _, o := range opt {
		if o.used {
			fmt.Fprintf(&b, "#include <edgenf/p4/%s>\n", o.header)
		}
	}
	debug := 0
	if g.opt.Debug {
		debug = 1
	}
	fmt.Fprintf(&b, "\n/* the CPU port of this build (510 punts too) */\n#define P4_CPU_PORT_CFG %d\n", g.opt.CPUPortOf())
	fmt.Fprintf(&b, "/* 1: assert and assume are checked (externs.go) */\n#define P4_DEBUG %d\n", debug)
	return b.String()
}

// calledCode is the set of P4 actions and functions the program calls:
// from tables (their action lists and default actions, which need not be
// listed: the implicit NoAction) or directly.
func (g *gen) calledCode() map[any]bool {
	called := map[any]bool{}
	for _, t := range g.p.Tables {
		for _, ta := range t.Actions {
			called[ta.Action.Ent] = true
		}
		if t.Default != nil {
			called[t.Default.Action] = true
		}
	}
	for _, cr := range g.info.Calls {
		switch {
		case cr == nil:
		case cr.Kind == sema.CallAction:
			called[cr.Action] = true
		case cr.Kind == sema.CallFunction:
			called[cr.Function] = true
		}
	}
	return called
}

// unlessUnused runs gen, which generates code, and keeps the code only if
// used.
func (g *gen) unlessUnused(used bool, gen func()) {
	if used {
		gen()
		return
	}
	var scratch strings.Builder
	w, body, mark := g.w, g.body, len(g.bodyPos)
	g.w, g.body = &scratch, &scratch
	gen()
	g.w, g.body, g.bodyPos = w, body, g.bodyPos[:mark]
}

// emptyStage reports whether c is a block of the pipeline with an empty
// body: the pipeline does not call it (ctlCall).
func emptyStage(blocks []sema.Entity, c *sema.Control) bool {
	for _, b := range blocks[1 : len(blocks)-1] {
		if b == sema.Entity(c) {
			return c.Decl != nil && c.Decl.Body != nil && len(c.Decl.Body.Stmts) == 0
		}
	}
	return false
}

func (g *gen) collectHeaders(st *sema.Struct) {
	g.structType(st, syntax.Pos{})
}

// ---------- maps ----------

func (g *gen) emitMaps() {
	w := &g.maps
	for _, t := range g.p.Tables {
		fmt.Fprintf(w, "/* table %s (%s), id 0x%08x */\n", comment(t.Name), t.Kind, t.ID)
		vs := fmt.Sprintf("tv_%s", ir.Sanitize(t.Name))
		g.valueStruct(w, vs, 0, t.ValueBytes, t)
		switch t.Kind {
		case ir.KindHash:
			fmt.Fprintf(w, "struct tk_%s { __u8 b[%d]; };\n", ir.Sanitize(t.Name), t.KeyBytes)
			fmt.Fprintf(w, "struct {\n\t__uint(type, BPF_MAP_TYPE_HASH);\n\t__uint(max_entries, %d);\n\t__type(key, struct tk_%s);\n\t__type(value, struct %s);\n} %s SEC(\".maps\");\n", t.Size, ir.Sanitize(t.Name), vs, t.MapName)
			g.bufs = append(g.bufs, fmt.Sprintf("__u8 k_%s[%d]", ir.Sanitize(t.Name), t.KeyBytes))
		case ir.KindLPM:
			fmt.Fprintf(w, "struct tk_%s { __u32 prefixlen; __u8 b[%d]; } __attribute__((packed));\n", ir.Sanitize(t.Name), t.KeyBytes)
			fmt.Fprintf(w, "struct {\n\t__uint(type, BPF_MAP_TYPE_LPM_TRIE);\n\t__uint(max_entries, %d);\n\t__uint(map_flags, BPF_F_NO_PREALLOC);\n\t__type(key, struct tk_%s);\n\t__type(value, struct %s);\n} %s SEC(\".maps\");\n", t.Size, ir.Sanitize(t.Name), vs, t.MapName)
			g.bufs = append(g.bufs, fmt.Sprintf("__u8 k_%s[%d] __attribute__((aligned(8)))", ir.Sanitize(t.Name), 4+t.KeyBytes))
		case ir.KindScan:
			g.valueStruct(w, "te_"+ir.Sanitize(t.Name), t.EntryValueOff, t.EntryBytes, t)
			fmt.Fprintf(w, "struct {\n\t__uint(type, BPF_MAP_TYPE_ARRAY);\n\t__uint(max_entries, %d);\n\t__type(key, __u32);\n\t__type(value, struct te_%s);\n} %s SEC(\".maps\");\n", t.Size, ir.Sanitize(t.Name), t.MapName)
			fmt.Fprintf(w, "/* number of slots of %s to scan (the control plane keeps it at the highest used slot + 1) */\n", t.MapName)
			fmt.Fprintf(w, "struct {\n\t__uint(type, BPF_MAP_TYPE_ARRAY);\n\t__uint(max_entries, 1);\n\t__type(key, __u32);\n\t__type(value, __u32);\n} %s SEC(\".maps\");\n", t.CountMapName)
			g.bufs = append(g.bufs, fmt.Sprintf("__u8 k_%s[%d]", ir.Sanitize(t.Name), t.KeyBytes))
		case ir.KindConst:
		}
		fmt.Fprintf(w, "struct {\n\t__uint(type, BPF_MAP_TYPE_ARRAY);\n\t__uint(max_entries, 1);\n\t__type(key, __u32);\n\t__type(value, struct %s);\n} %s SEC(\".maps\");\n\n", vs, t.DefaultMapName)
	}
	for _, v := range g.p.ValueSets {
		sn := ir.Sanitize(v.Name)
		fmt.Fprintf(w, "/* value_set %s (bit<%d>), id 0x%08x */\n", comment(v.Name), v.Width, v.ID)
		fmt.Fprintf(w, "struct {\n\t__uint(type, BPF_MAP_TYPE_ARRAY);\n\t__uint(max_entries, %d);\n\t__type(key, __u32);\n\t__type(value, struct p4_vs_member);\n} %s SEC(\".maps\");\n\n", v.Size, v.MapName)
		fmt.Fprintf(w, "static __always_inline int vs_match_%s(__u64 k)\n{\n#pragma unroll\n\tfor (__u32 i = 0; i < %d; i++) {\n\t\t__u32 idx = i;\n\t\tstruct p4_vs_member *m = bpf_map_lookup_elem(&%s, &idx);\n\n\t\tif (m && m->valid && (k & m->mask) == m->value)\n\t\t\treturn 1;\n\t}\n\treturn 0;\n}\n\n", sn, v.Size, v.MapName)
	}
	for _, r := range g.p.Registers {
		fmt.Fprintf(w, "/* register %s (%d x %d bits), id 0x%08x: shared by all CPUs, not per-CPU */\n", comment(r.Name), r.Size, r.Width, r.ID)
		fmt.Fprintf(w, "struct {\n\t__uint(type, BPF_MAP_TYPE_ARRAY);\n\t__uint(max_entries, %d);\n\t__type(key, __u32);\n\t__type(value, __u64);\n} %s SEC(\".maps\");\n\n", r.Size, r.MapName)
	}
	for _, m := range g.p.Meters {
		fmt.Fprintf(w, "/* meter %s (%s, %d), id 0x%08x: RFC 2698 trTCM, shared by all CPUs */\n", comment(m.Name), m.Unit, m.Size, m.ID)
		fmt.Fprintf(w, "struct {\n\t__uint(type, BPF_MAP_TYPE_ARRAY);\n\t__uint(max_entries, %d);\n\t__type(key, __u32);\n\t__type(value, struct p4_meter);\n} %s SEC(\".maps\");\n\n", m.Size, m.MapName)
	}
	for _, c := range g.p.Counters {
		fmt.Fprintf(w, "/* counter %s (%s), id 0x%08x */\n", comment(c.Name), c.Unit, c.ID)
		fmt.Fprintf(w, "struct {\n\t__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);\n\t__uint(max_entries, %d);\n\t__type(key, __u32);\n\t__type(value, struct p4_ctr);\n} %s SEC(\".maps\");\n\n", c.Size, c.MapName)
	}
}

// ---------- pipeline ----------

func (g *gen) pipeline(blocks []sema.Entity) {
	if g.replicates() {
		g.replPipeline(blocks) // replicate.go
		return
	}
	g.line("/* V1Switch: Parser, VerifyChecksum, Ingress, Egress, ComputeChecksum, Deparser. */")
	g.pipelineStart("__u32 port;", "")
	g.line("p4_parser(ctx);")
	g.ctlCall(blocks, 1) // not for an empty control (stages.go)
	g.ctlCall(blocks, 2) // not for an empty control (stages.go)
	g.line("if (s->sm.f_egress_spec == P4_DROP_PORT)")
	g.line("\treturn enf_drop(ctx, md);")
	g.line("s->sm.f_egress_port = s->sm.f_egress_spec;")
	if g.usesField("egress_global_timestamp") {
		g.line("s->sm.f_egress_global_timestamp = (bpf_ktime_get_ns() / 1000) & %s;", mask(48))
	}
	g.ctlCall(blocks, 3) // not for an empty control (stages.go)
	g.line("if (s->sm.f_egress_spec == P4_DROP_PORT)")
	g.line("\treturn enf_drop(ctx, md);")
	g.ctlCall(blocks, 4) // not for an empty control (stages.go)
	g.line("if (p4_deparse(ctx))")
	g.line("\treturn enf_drop(ctx, md);")
	g.pipelineTail()
	g.line("port = s->sm.f_egress_port;")
	g.pipelineSend()
}

// pipelineStart opens p4_pipeline: the per-CPU state (and, with extra, one
// more per-CPU map, a pointer checked like the state), reset for the packet,
// and the ingress standard metadata. portDecl declares the output port.
func (g *gen) pipelineStart(portDecl, extra string) {
	g.line("static __always_inline int p4_pipeline(ctx_t *ctx, struct edgenf_md *md)")
	g.line("{")
	g.indent++
	g.line("__u32 zero = 0;")
	g.line("struct p4_state *s = bpf_map_lookup_elem(&p4_state_map, &zero);")
	check := "!s"
	if extra != "" {
		g.line("%s", extra)
		check = "!s || !sn"
	}
	g.line("%s", portDecl)
	g.line("")
	g.line("if (%s)", check)
	g.line("\treturn enf_drop(ctx, md);")
	g.line("__builtin_memset(s, 0, __builtin_offsetof(struct p4_state, buf));")
	g.line("s->sm.f_ingress_port = md->in_port;")
	g.line("s->sm.f_packet_length = p4_plen(ctx);")
	if g.usesField("ingress_global_timestamp") {
		g.line("s->sm.f_ingress_global_timestamp = (bpf_ktime_get_ns() / 1000) & %s;", mask(48))
	}
}

// pipelineSend closes p4_pipeline: port, the egress port, leads to the
// slow path (CPU port) or out of a cube port.
func (g *gen) pipelineSend() {
	if g.usesField("priority") {
		// standard_metadata.priority (0..7, 7 most urgent, as BMv2's
		// priority queues) becomes skb->priority: the HTB class of
		// priority band 7-p on the egress interface's tree (the slicer's
		// ed00:8+band, see internal/nf/slicer; HTB takes skb->priority as
		// a class id before any filter). 0 leaves it alone. md->priority
		// carries it to the interface the frame leaves by; at XDP the
		// frame then takes the skb path to meet the qdisc there
		// (verdict.h: enf_out).
		g.line("if (s->sm.f_priority) {")
		g.line("	md->priority = P4_PRIO_CLASS(s->sm.f_priority);")
		g.line("#if defined(EDGENF_HOOK_TC)")
		g.line("	ctx->priority = md->priority;")
		g.line("#endif")
		g.line("}")
	}
	g.line("if (port == P4_CPU_PORT || port == P4_CPU_PORT_CFG)")
	g.line("\treturn enf_punt(ctx, md, P4_PUNT_PACKET_IN, 0);")
	g.line("return enf_send(ctx, md, port);")
	g.indent--
	g.line("}")
	g.line("")
	g.line("EDGENF_CUBE(p4_pipeline)")
}

// ---------- bit packing ----------

// unpack returns a C expression reading w bits (w <= 64) at bit offset off
// (MSB first) of the byte array arr.
func unpack(arr string, off, w int) string {
	if off%8 == 0 && w%8 == 0 {
		return fmt.Sprintf("p4_be(%s + %d, %d)", arr, off/8, w/8)
	}
	end := off + w
	var parts []string
	for k := off / 8; k <= (end-1)/8; k++ {
		a, b := max(off, 8*k), min(end, 8*k+8)
		nb := b - a
		sh := 8*k + 8 - b
		piece := fmt.Sprintf("((__u64)((%s[%d] >> %d) & 0x%x) << %d)", arr, k, sh, (1<<uint(nb))-1, end-b)
		parts = append(parts, piece)
	}
	return "(" + strings.Join(parts, " | ") + ")"
}

// pack returns C statements writing the value v (w <= 64 bits) at bit
// offset off of arr.
func pack(arr string, off, w int, v string) string {
	if off%8 == 0 && w%8 == 0 {
		return fmt.Sprintf("p4_wbe(%s + %d, %s, %d);", arr, off/8, v, w/8)
	}
	var b strings.Builder
	b.WriteString("{ __u64 _v = " + v + "; ")
	end := off + w
	for k := off / 8; k <= (end-1)/8; k++ {
		a, e := max(off, 8*k), min(end, 8*k+8)
		nb := e - a
		sh := 8*k + 8 - e
		m := (1 << uint(nb)) - 1
		if nb == 8 {
			fmt.Fprintf(&b, "%s[%d] = (__u8)(_v >> %d); ", arr, k, end-e)
		} else {
			fmt.Fprintf(&b, "%s[%d] = (%s[%d] & 0x%x) | (__u8)(((_v >> %d) & 0x%x) << %d); ", arr, k, arr, k, 0xff&^(m<<uint(sh)), end-e, m, sh)
		}
	}
	b.WriteString("}")
	return b.String()
}

// ---------- helpers ----------

func isWide(t sema.Type) bool {
	b, ok := t.(*sema.Bits)
	return ok && b.W > 64
}

func width(t sema.Type) int {
	if b, ok := sema.BitsOf(t); ok {
		return b.W
	}
	switch t.(type) {
	case *sema.Bool:
		return 1
	case *sema.ErrorT:
		return 32
	case *sema.Enum:
		return 32
	}
	return sema.Width(t)
}

// usesField reports whether the program uses a standard_metadata field.
func (g *gen) usesField(name string) bool { return ir.UsesField(g.info, name) }

// comment makes text from the program safe inside a C comment: names from
// @name annotations may be any string. Letters, digits and punctuation that
// can neither end a comment nor continue a line are kept; anything else
// becomes '?'.
func comment(s string) string {
	b := []byte(s)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("_.$@:<>[](),=+- ", c) >= 0) {
			b[i] = '?'
		}
	}
	return string(b)
}

// unparen drops the parentheses around a whole expression: conditions are
// generated inside their own ("if (%s)"), and clang warns about
// "if ((a == b))".
func unparen(s string) string {
	for len(s) >= 2 && s[0] == '(' && s[len(s)-1] == ')' && !strings.ContainsAny(s, "\"'") {
		depth := 0
		for i := 0; i < len(s)-1; i++ {
			switch s[i] {
			case '(':
				depth++
			case ')':
				depth--
			}
			if depth == 0 {
				return s // the first parenthesis closes before the end
			}
		}
		s = s[1 : len(s)-1]
	}
	return s
}

// cString is s as a C string literal: quotes and backslashes escaped,
// anything outside printable ASCII as an octal escape.
func cString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c < ' ' || c > '~' || c == '?':
			fmt.Fprintf(&b, "\\%03o", c) // '?' too: no trigraphs
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}
