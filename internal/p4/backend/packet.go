package backend

import (
	"fmt"
	"sort"
	"strings"

	"github.com/edgenf/edgenf/internal/p4/sema"
	"github.com/edgenf/edgenf/internal/p4/syntax"
)

// This file: direct packet access and the deparser of the generated code
// (over 600 lines: the static analysis that makes the deparser write only
// what changed needs the extraction code beside it).
//
//   - Header fields are read straight from the packet (direct packet access
//     with a data_end check; at TC bpf_skb_load_bytes only when the bytes
//     are not in the linear part) with the widest loads: a header is split
//     into runs of fields that start and end on byte boundaries, each run
//     is one big-endian load of up to 8 bytes.
//   - The direct deparser (only emit statements) writes into the packet at
//     both hooks, and writes only what may have changed: the parser records
//     where each header was extracted (p4_poff), a static analysis of the
//     whole program finds the header fields anything but extract may write,
//     and a header emitted at the offset it was parsed from (after the head
//     adjustment) gets only those fields written; the others are the
//     parsed bytes, still there. Headers added or moved are written whole.
//   - csum16 checksums over scalar fields are summed from the field values
//     in 32-bit big-endian words, without packing the list into a buffer.

// fieldRun is a run of header fields from byte offset start to byte offset
// end: one wide field, or scalar fields of 64 bits or less in all.
type fieldRun struct {
	start, end int // bytes
	fields     []*sema.Field
	wide       bool
}

// headerRuns splits a fixed-size header into runs; false if its layout does
// not allow it (then fields are accessed one by one).
func headerRuns(st *sema.Struct) ([]fieldRun, bool) {
	if st.Varbit != nil {
		return nil, false
	}
	var runs []fieldRun
	var cur *fieldRun
	for _, f := range wireFields(st) {
		w := width(f.Type)
		if w <= 0 {
			return nil, false
		}
		if w > 64 {
			if cur != nil || f.Offset%8 != 0 || w%8 != 0 {
				return nil, false
			}
			runs = append(runs, fieldRun{start: f.Offset / 8, end: (f.Offset + w) / 8, fields: []*sema.Field{f}, wide: true})
			continue
		}
		if cur == nil {
			if f.Offset%8 != 0 {
				return nil, false
			}
			runs = append(runs, fieldRun{start: f.Offset / 8})
			cur = &runs[len(runs)-1]
		}
		cur.fields = append(cur.fields, f)
		end := f.Offset + w
		if end-8*cur.start > 64 {
			return nil, false
		}
		if end%8 == 0 {
			cur.end = end / 8
			cur = nil
		}
	}
	if cur != nil {
		return nil, false
	}
	return runs, true
}

// extractFields unpacks header st from the bytes at C pointer p into dst.
func (g *gen) extractFields(dst string, st *sema.Struct, p string, pos syntax.Pos) {
	runs, ok := headerRuns(st)
	if !ok {
		for _, f := range wireFields(st) {
			w := width(f.Type)
			if w > 64 {
				if f.Offset%8 != 0 {
					g.unsupported(pos, fmt.Sprintf("field %s wider than 64 bits at a non-byte offset", f.Name))
				}
				g.line("p4_memcpy(%s.f_%s, %s + %d, %d);", dst, f.Name, p, f.Offset/8, w/8)
				continue
			}
			g.line("%s.f_%s = %s;", dst, f.Name, unpack(p, f.Offset, w))
		}
		return
	}
	for _, r := range runs {
		n := r.end - r.start
		if r.wide {
			g.wideCopy(fmt.Sprintf("%s.f_%s", dst, r.fields[0].Name), fmt.Sprintf("%s + %d", p, r.start), n)
			continue
		}
		if len(r.fields) == 1 {
			g.line("%s.f_%s = p4_ldbe(%s + %d, %d);", dst, r.fields[0].Name, p, r.start, n)
			continue
		}
		g.line("{")
		g.line("\t__u64 r = p4_ldbe(%s + %d, %d);", p, r.start, n)
		for _, f := range r.fields {
			w := width(f.Type)
			sh := 8*r.end - (f.Offset + w)
			g.line("\t%s.f_%s = (r >> %d) & %s;", dst, f.Name, sh, mask(w))
		}
		g.line("}")
	}
}

// wideCopy copies n bytes between packet and map memory (never the
// stack: misaligned) in 8, 4, 2 and 1-byte moves.
func (g *gen) wideCopy(d, src string, n int) {
	for off := 0; off < n; {
		sz, ty := 1, "__u8"
		switch {
		case n-off >= 8:
			sz, ty = 8, "__u64"
		case n-off >= 4:
			sz, ty = 4, "__u32"
		case n-off >= 2:
			sz, ty = 2, "__u16"
		}
		g.line("*(%s *)((__u8 *)(%s) + %d) = *(const %s *)((const __u8 *)(%s) + %d);", ty, d, off, ty, src, off)
		off += sz
	}
}

// writeFields packs all fields of header st (in C lvalue c) into the bytes
// at C pointer b.
func (g *gen) writeFields(c string, st *sema.Struct, b string) {
	runs, ok := headerRuns(st)
	if !ok {
		for _, f := range wireFields(st) {
			g.writeField(c, f, b)
		}
		return
	}
	for _, r := range runs {
		n := r.end - r.start
		if r.wide {
			g.wideCopy(fmt.Sprintf("%s + %d", b, r.start), fmt.Sprintf("%s.f_%s", c, r.fields[0].Name), n)
			continue
		}
		if len(r.fields) == 1 {
			g.line("p4_stbe(%s + %d, (__u64)%s.f_%s, %d);", b, r.start, c, r.fields[0].Name, n)
			continue
		}
		var parts []string
		for _, f := range r.fields {
			w := width(f.Type)
			sh := 8*r.end - (f.Offset + w)
			parts = append(parts, fmt.Sprintf("(((__u64)%s.f_%s & %s) << %d)", c, f.Name, mask(w), sh))
		}
		g.line("p4_stbe(%s + %d, %s, %d);", b, r.start, strings.Join(parts, " | "), n)
	}
}

// writeField packs one field of a header into the bytes at b, leaving the
// bits around it as they are.
func (g *gen) writeField(c string, f *sema.Field, b string) {
	w := width(f.Type)
	switch {
	case w > 64:
		g.wideCopy(fmt.Sprintf("%s + %d", b, f.Offset/8), fmt.Sprintf("%s.f_%s", c, f.Name), w/8)
	case f.Offset%8 == 0 && w%8 == 0:
		g.line("p4_stbe(%s + %d, (__u64)%s.f_%s, %d);", b, f.Offset/8, c, f.Name, w/8)
	default:
		g.line("%s", pack(b, f.Offset, w, fmt.Sprintf("(__u64)%s.f_%s", c, f.Name)))
	}
}

// ---------- what the program may write ----------

// fastState is the state of the deparse-what-changed analysis.
type fastState struct {
	done  bool
	all   bool            // anything may be written (something not understood)
	dirty []string        // C paths that may be written outside extract
	slots map[string]int  // C path of a header extracted at a fixed place -> p4_poff index
	used  map[string]bool // slots the deparser relies on

	inlineTablesSet, inlineTables bool
	nslots                        int
}

// spath is the C path of a fixed location (a header in s->hdr, a field), or
// "" (stack elements by next/last, expressions).
func (g *gen) spath(e syntax.Expr) string {
	switch x := e.(type) {
	case *syntax.Ident:
		if v, ok := g.info.Uses[x].(*sema.Var); ok {
			return g.lv[v]
		}
	case *syntax.Member:
		if r := g.info.Members[x]; r != nil && r.Kind == sema.FieldAccess {
			if p := g.spath(x.X); p != "" {
				return p + ".f_" + x.Name
			}
		}
	case *syntax.Index:
		if _, ok := g.typeOf(x.X).(*sema.Stack); ok {
			if v, ok := g.info.Consts[x.Index]; ok {
				if p := g.spath(x.X); p != "" {
					return fmt.Sprintf("%s.e[%d]", p, v.Int64())
				}
			}
		}
	}
	return ""
}

// wpath is the C path of the storage a write to e may change: the location
// itself, or the variable/header/stack containing it; "" when e is no
// location.
func (g *gen) wpath(e syntax.Expr) string {
	p, _ := g.wpathx(e)
	return p
}

// wpathx is wpath; exact is false once the path stopped at a container
// (a stack indexed, hs.next/last): fields below it are not named.
func (g *gen) wpathx(e syntax.Expr) (p string, exact bool) {
	switch x := e.(type) {
	case *syntax.Ident:
		if v, ok := g.info.Uses[x].(*sema.Var); ok {
			// a variable without storage yet is a local (parser locals
			// get theirs after the deparser is generated): not s->hdr
			return g.lv[v], true
		}
	case *syntax.Member:
		p, exact := g.wpathx(x.X)
		if r := g.info.Members[x]; r != nil && r.Kind == sema.FieldAccess && exact && p != "" {
			return p + ".f_" + x.Name, true
		}
		return p, false // hs.next, hs.last, ... or a field of one
	case *syntax.Index:
		p, _ := g.wpathx(x.X)
		return p, false // a whole stack (or tuple)
	case *syntax.Slice:
		return g.wpathx(x.X)
	case *syntax.Cast:
		return g.wpathx(x.X)
	}
	return "", false
}

// fast runs the analysis once: the C paths anything but extract may write
// (assignments anywhere, out/inout arguments of every call, stack shifts;
// a statement it does not know makes everything dirty), and the headers
// extracted at a fixed place (p4_poff slots).
func (g *gen) fast() *fastState {
	if g.fs == nil {
		g.fs = &fastState{slots: map[string]int{}, used: map[string]bool{}}
	}
	fs := g.fs
	if fs.done {
		return fs
	}
	fs.done = true
	mark := func(e syntax.Expr) {
		if e == nil {
			return
		}
		if p := g.wpath(e); p != "" {
			fs.dirty = append(fs.dirty, p)
		}
	}
	// writes by assignment
	var walk func(s syntax.Stmt)
	walk = func(s syntax.Stmt) {
		switch x := s.(type) {
		case nil:
		case *syntax.AssignStmt:
			mark(x.LHS)
		case *syntax.BlockStmt:
			for _, y := range x.Stmts {
				walk(y)
			}
		case *syntax.IfStmt:
			walk(x.Then)
			walk(x.Else)
		case *syntax.SwitchStmt:
			for _, c := range x.Cases {
				if c.Body != nil {
					walk(c.Body)
				}
			}
		case *syntax.CallStmt, *syntax.ExitStmt, *syntax.ReturnStmt, *syntax.EmptyStmt, *syntax.DeclStmt:
			// calls: below, from info.Calls; declarations write locals
		default:
			fs.all = true
		}
	}
	for _, a := range g.info.Actions {
		if a.Decl != nil && a.Decl.Body != nil {
			walk(a.Decl.Body)
		}
	}
	for _, f := range g.info.Functions {
		if f.Decl != nil && f.Decl.Body != nil {
			walk(f.Decl.Body)
		}
	}
	for _, c := range g.info.Controls {
		if c.Decl != nil && c.Decl.Body != nil {
			walk(c.Decl.Body)
		}
	}
	for _, p := range g.info.Parsers {
		for _, st := range p.States {
			if st.Decl != nil {
				for _, s := range st.Decl.Stmts {
					walk(s)
				}
			}
		}
	}
	// writes through out/inout arguments
	for call, cr := range g.info.Calls {
		if cr == nil {
			continue
		}
		if cr.Kind == sema.CallExternMethod && cr.Instance == nil && (cr.Method == "extract" || cr.Method == "lookahead" || cr.Method == "advance" || cr.Method == "emit") {
			if cr.Method != "extract" || len(call.Args) == 1 {
				continue // the extract target is the packet's, see below
			}
		}
		var dirs []string
		var names []string
		known := true
		switch cr.Kind {
		case sema.CallTableApply:
			continue
		case sema.CallHeaderMethod:
			switch cr.Method {
			case "isValid", "setValid", "setInvalid":
			default: // push_front, pop_front: the whole stack moves
				mark(cr.Recv)
			}
			continue
		case sema.CallAction:
			for _, p := range cr.Action.Params {
				dirs, names = append(dirs, p.Dir), append(names, p.Name)
			}
		case sema.CallFunction:
			for _, p := range cr.Function.Params {
				dirs, names = append(dirs, p.Dir), append(names, p.Name)
			}
		case sema.CallBlockApply:
			if cr.Sub == nil || cr.Sub.Control == nil {
				known = false
				break
			}
			for _, p := range cr.Sub.Control.Params {
				dirs, names = append(dirs, p.Dir), append(names, p.Name)
			}
		case sema.CallExternMethod, sema.CallExternFunc:
			if cr.Proto == nil {
				known = false
				break
			}
			for _, p := range cr.Proto.Params {
				dirs, names = append(dirs, p.Dir), append(names, p.Name)
			}
		default:
			known = false
		}
		if cr.Kind == sema.CallExternMethod && cr.Recv != nil && cr.Instance == nil {
			if _, ok := g.typeOf(cr.Recv).(*sema.ExternT); !ok {
				mark(cr.Recv) // a method of something that is not an extern
			}
		}
		for i, a := range call.Args {
			if a.Value == nil {
				continue
			}
			j := i
			if a.Name != "" {
				j = -1
				for k, n := range names {
					if n == a.Name {
						j = k
					}
				}
			}
			if !known || j < 0 || j >= len(dirs) || dirs[j] == "out" || dirs[j] == "inout" {
				mark(a.Value)
			}
		}
	}
	// writes through the out/inout parameters a table's action list binds
	for _, t := range g.info.Tables {
		for _, ta := range t.Actions {
			for i, a := range ta.Args {
				if d := ta.Action.Params[i].Dir; d == "out" || d == "inout" {
					mark(a.Value)
				}
			}
		}
	}
	// headers the parser extracts at a place the deparser can check
	var keys []string
	for call, cr := range g.info.Calls {
		if cr == nil || cr.Kind != sema.CallExternMethod || cr.Instance != nil || cr.Method != "extract" || len(call.Args) != 1 {
			continue
		}
		p := g.spath(call.Args[0].Value)
		if strings.HasPrefix(p, "s->hdr.") {
			if _, ok := fs.slots[p]; !ok {
				fs.slots[p] = -1
				keys = append(keys, p)
			}
		}
	}
	sort.Strings(keys)
	for i, k := range keys {
		fs.slots[k] = i
	}
	fs.nslots = len(keys)
	g.bufs = append(g.bufs, "__u32 p4_dpd /* the packet was deparsed since it was parsed */")
	return fs
}

// under reports whether path b is a or inside a.
func under(a, b string) bool {
	return strings.HasPrefix(b, a) && (len(b) == len(a) || b[len(a)] == '.' || b[len(a)] == '[')
}

// fieldDirty reports whether field f of the header at C path c may be
// written by something other than the parser's extract.
func (g *gen) fieldDirty(c string, f *sema.Field) bool {
	fs := g.fast()
	if fs.all {
		return true
	}
	p := c + ".f_" + f.Name
	for _, d := range fs.dirty {
		if under(d, p) || under(p, d) {
			return true
		}
	}
	return false
}

// poffSlot returns the p4_poff index of the header at C path c, or -1.
func (g *gen) poffSlot(c string) int {
	fs := g.fast()
	if i, ok := fs.slots[c]; ok && !fs.all {
		return i
	}
	return -1
}

// extractHeader generates the fixed-size part of packet.extract(arg) into
// header st at C lvalue dst: bounds, fields, validity and the offset it was
// found at.
func (g *gen) extractHeader(arg syntax.Expr, dst string, st *sema.Struct) {
	n := st.Bits / 8
	g.runtCheck(fmt.Sprint(n))
	g.line("{")
	g.indent++
	g.line("__u8 *pk = (__u8 *)ctx_data(ctx) + (off & 0x3ff);")
	g.line("")
	g.line("if (off <= 0x3ff && (void *)(pk + %d) <= ctx_data_end(ctx)) {", n)
	g.indent++
	g.extractFields(dst, st, "pk", arg.NodePos())
	g.indent--
	g.line("} else {")
	g.line("#if defined(EDGENF_HOOK_TC)")
	g.indent++
	// not in the linear part: through the buffer, with its own copy of the
	// field code so that no pointer is either packet or buffer (the
	// verifier would walk the rest of the parser once for each)
	g.line("if (p4_load_h(ctx, off, s->buf, %d)) {", n)
	g.line("\ts->sm.f_parser_error = %d; /* error.PacketTooShort */", g.errorID("PacketTooShort"))
	g.line("\tgoto st_reject;")
	g.line("}")
	g.extractFields(dst, st, "s->buf", arg.NodePos())
	g.indent--
	g.line("#else")
	g.line("\ts->sm.f_parser_error = %d; /* error.PacketTooShort */", g.errorID("PacketTooShort"))
	g.line("\tgoto st_reject;")
	g.line("#endif")
	g.line("}")
	g.indent--
	g.line("}")
	if k := g.poffSlot(g.spath(arg)); k >= 0 && g.fs.used[g.spath(arg)] {
		g.line("s->p4_poff[%d] = off + 1;", k)
	}
}

// ---------- deparser ----------

// neverInPlace makes every p4_poff comparison fail.
const neverInPlace = "-0x10000"

// directDeparse generates a deparser made of emit statements only: it sizes
// the packet, moves its head if the headers grew or shrank, then writes
// the headers into the packet, headers still where they were parsed only
// in their fields the program may have changed.
func (g *gen) directDeparse(stmts []syntax.Stmt) {
	g.fast()
	g.emitMode = emitLength
	for _, s := range stmts {
		g.stmt(s)
	}
	g.line("if (o > P4_OBUF_SIZE)")
	g.line("\treturn -1;")
	g.line("delta = (int)s->off - (int)o;")
	// The writes go first into a buffer of their own: whether a header is
	// checked against where it was parsed (pd) is known once they are made.
	var writes strings.Builder
	w, body, mark := g.w, g.body, len(g.bodyPos)
	g.w, g.body = &writes, &writes
	g.emitMode = emitPacket
	for _, s := range stmts {
		g.stmt(s)
	}
	g.emitMode = emitBuffer
	g.w, g.body = w, body
	writesPos := append([]syntax.Pos(nil), g.bodyPos[mark:]...)
	g.bodyPos = g.bodyPos[:mark]
	if len(g.fs.used) > 0 && len(stmts) > 0 {
		g.line("/* a header parsed from offset x is now at x - delta (TC cuts room after")
		g.line(" * the MAC header: not there); once the packet was deparsed (replication),")
		g.line(" * p4_poff no longer describes it */")
		g.line("int pd = s->p4_dpd ? %s : delta + 1;", neverInPlace)
		g.line("#if defined(EDGENF_HOOK_TC)")
		g.line("if (delta > 0)")
		g.line("\tpd = %s;", neverInPlace)
		g.line("#endif")
	}
	g.line("s->p4_dpd = 1;")
	g.line("if (delta && ctx_adjust_head(ctx, delta))")
	g.line("\treturn -1;")
	g.line("if (o && ctx_pull(ctx, o))")
	g.line("\treturn -1;")
	g.line("o = 0;")
	g.w.WriteString(writes.String())
	g.bodyPos = append(g.bodyPos, writesPos...)
	g.line("return 0;")
}

// emitHeaderPacket writes valid header st (C lvalue c, n bytes) at offset o
// of the packet (emitPacket mode).
func (g *gen) emitHeaderPacket(c string, st *sema.Struct, n int) {
	g.line("__u8 *b = (__u8 *)ctx_data(ctx) + (o & P4_OBUF_MASK);")
	g.line("if ((void *)(b + %d) > ctx_data_end(ctx))", n)
	g.line("\treturn -1;")
	k := g.poffSlot(c)
	var dirty []*sema.Field
	if k >= 0 {
		for _, f := range wireFields(st) {
			if g.fieldDirty(c, f) {
				dirty = append(dirty, f)
			}
		}
	}
	if k < 0 || len(dirty) == len(wireFields(st)) {
		g.writeFields(c, st, "b")
		return
	}
	if len(g.fs.used) == 0 {
		g.state = append(g.state, fmt.Sprintf("__u16 p4_poff[%d] /* offset + 1 each header was extracted from */", g.fs.nslots))
	}
	g.fs.used[c] = true
	g.line("if ((int)s->p4_poff[%d] == (int)o + pd) {", k)
	g.indent++
	if len(dirty) == 0 {
		g.line("/* parsed here, never written */")
	} else {
		g.line("/* parsed here: the fields that may have changed */")
	}
	for _, f := range dirty {
		g.writeField(c, f, "b")
	}
	g.indent--
	g.line("} else {")
	g.indent++
	g.writeFields(c, st, "b")
	g.indent--
	g.line("}")
}

// ---------- checksums ----------

// csumSum returns a C expression (__u64) of the ones' complement sum of the
// field list e as 16-bit big-endian words (zero padded), computed from the
// field values, or false when the list has fields this cannot handle.
func (g *gen) csumSum(e syntax.Expr) (string, bool) {
	type item struct {
		c string
		e syntax.Expr // rendered once the whole list is known to be fine
		w int
	}
	var items []item
	ok := true
	var addStruct func(c string, st *sema.Struct)
	addStruct = func(c string, st *sema.Struct) {
		if st.Varbit != nil {
			ok = false
			return
		}
		for _, f := range st.Fields {
			switch t := f.Type.(type) {
			case *sema.Struct:
				addStruct(c+".f_"+f.Name, t)
				continue
			case *sema.Stack, *sema.Varbit, *sema.Tuple:
				ok = false
				return
			}
			w := width(f.Type)
			if w <= 0 || w > 64 {
				ok = false
				return
			}
			items = append(items, item{c: c + ".f_" + f.Name, w: w})
		}
	}
	var add func(e syntax.Expr)
	add = func(e syntax.Expr) {
		if l, isList := e.(*syntax.List); isList {
			for _, el := range l.Elems {
				add(el)
			}
			return
		}
		t := g.typeOf(e)
		switch x := t.(type) {
		case *sema.Struct:
			if p := g.spath(e); p != "" {
				addStruct(p, x)
			} else {
				ok = false
			}
			return
		case *sema.Varbit, *sema.Tuple, *sema.Stack, *sema.InfInt:
			ok = false
			return
		}
		w := width(t)
		if w <= 0 || w > 64 {
			ok = false
			return
		}
		items = append(items, item{e: e, w: w})
	}
	add(e)
	if !ok {
		return "", false
	}
	for i := range items {
		if items[i].e != nil {
			items[i].c = "(" + g.rv(items[i].e) + ")"
		}
	}
	bits := 0
	for _, it := range items {
		bits += it.w
	}
	if bits == 0 {
		return "0", true
	}
	// 32-bit words: word k holds bits [32k, 32k+32) of the list
	var words []string
	pos := 0
	var cur []string
	wordEnd := 32
	flush := func() {
		if len(cur) > 0 {
			words = append(words, "("+strings.Join(cur, " | ")+")")
		}
		cur = nil
	}
	for _, it := range items {
		a, end := pos, pos+it.w
		for a < end {
			if a >= wordEnd {
				flush()
				wordEnd += 32
				continue
			}
			b := min(end, wordEnd)
			n := b - a
			// bits [a, b) of the list are bits [end-b, end-a) of the value (from the LSB)
			piece := fmt.Sprintf("((__u64)%s >> %d)", it.c, end-b)
			if end-b == 0 {
				piece = "(__u64)" + it.c
			}
			if n < it.w || end-b > 0 {
				piece = fmt.Sprintf("(%s & %s)", piece, mask(n))
			}
			if sh := wordEnd - b; sh > 0 {
				piece = fmt.Sprintf("(%s << %d)", piece, sh)
			}
			cur = append(cur, piece)
			a = b
		}
		pos = end
	}
	flush()
	return "(" + strings.Join(words, " + ") + ")", true
}
