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
	hTy       *sema.Struct // the H type (PSA: the ingress pipeline's)
	mTy       *sema.Struct // the M type (PSA: the ingress pipeline's)
	arch      arch         // the architecture's bindings and pipeline (arch.go)

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
	payloadSum bool         // a *_checksum_with_payload: s->pbuf (csum.h)
	fs         *fastState   // packet access and deparse-what-changed (packet.go)
	sp         *ir.SlowPath // digests, log_msg, controller headers (slowpath.go)
	opt        Options

	assertSites []string                // assert/assume call sites (externs.go)
	replLists   [][]string              // field lists of clone3/resubmit/recirculate data (replicate.go)
	atomic      *atomicState            // inside an @atomic block with registers (atomic.go)
	dmAware     map[*sema.Instance]bool // direct meters executed colour-aware (psa_dmeter.go)
	// the sliced CRCs the program uses (crcslice.go)
	sliceCRC   map[string]bool
	atomicUsed bool
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

// ---------- driver ----------

func (g *gen) run() {
	info := g.info
	g.arch = archOf(info.Main.Arch) // arch.go
	if g.arch == nil {
		g.errorf(syntax.Pos{}, "architecture %s is not supported", info.Main.Arch)
		return
	}
	blocks := info.Main.Blocks
	if !g.arch.bind(g, blocks) {
		return
	}
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
		if !info.LiveControl(sub.Parent) || subDeparser(sub.Control) {
			continue // a sub-deparser's parameters alias its caller's (subdeparser.go)
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
			g.unlessUnused(called[a] && !psaInlined(a), func() { g.action(a) })
		}
	}
	for _, t := range g.p.Tables {
		g.table(t)
	}
	// controls in declaration order: a sub-control comes before its users
	// (one passed as a constructor argument may not: ctlparam.go)
	g.controlPrototypes()
	parsers, deparsers := g.arch.stages(blocks)
	for _, c := range info.Controls {
		switch {
		case deparsers[c] != "":
			g.deparser(c, deparsers[c])
		case subDeparser(c):
			// inlined in the deparsers that apply it (subdeparser.go)
		case info.LiveControl(c):
			g.unlessUnused(!emptyStage(blocks, c), func() { g.control(c) })
		}
	}
	for _, p := range parsers {
		g.parser(p.parser, p.fn)
	}
	g.arch.pipeline(g, blocks)

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
	if g.payloadSum {
		g.out.WriteString("\t__u8 pbuf[P4_PAYLOAD_CHUNK] __attribute__((aligned(8)));\n")
	}
	for _, f := range g.bufs {
		fmt.Fprintf(&g.out, "\t%s;\n", f)
	}
	g.out.WriteString("};\n\n")
	fmt.Fprintf(&g.out, "#define P4_OBUF_MASK %d\n#define P4_OBUF_SIZE %d\n\n", obufSize-1, obufSize)
	g.out.WriteString("struct {\n\t__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);\n\t__uint(max_entries, 1);\n\t__type(key, __u32);\n\t__type(value, struct p4_state);\n} p4_state_map SEC(\".maps\");\n\n")
	g.out.WriteString("/* ---- tables and counters ---- */\n\n")
	g.out.WriteString(g.maps.String())
	g.out.WriteString(g.crcSlices())
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
	for _, b := range blocks[1:] {
		if b == sema.Entity(c) {
			return c.Decl != nil && c.Decl.Body != nil && len(c.Decl.Body.Stmts) == 0
		}
	}
	return false
}

// sizeHeaders adds the headers of H type st to the sizes of the packet
// buffers: the largest header (s->buf) and all of them (s->obuf).
func (g *gen) sizeHeaders(st *sema.Struct) {
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
			g.sizeHeaders(sub)
			continue
		}
		n := sub.Bits / 8
		g.hdrTotal += hdrBytes(sub)
		if n > g.maxHdr {
			g.maxHdr = n
		}
	}
}

func (g *gen) collectHeaders(st *sema.Struct) {
	g.structType(st, syntax.Pos{})
}
