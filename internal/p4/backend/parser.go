package backend

import (
	"fmt"
	"slices"

	"github.com/edgenf/edgenf/internal/p4/ir"
	"github.com/edgenf/edgenf/internal/p4/sema"
	"github.com/edgenf/edgenf/internal/p4/syntax"
)

func (g *gen) errorID(name string) int {
	for i, n := range g.info.ErrorNames {
		if n == name {
			return i
		}
	}
	return 0
}

func (g *gen) parser(p *sema.Parser, fn string) {
	g.line("/* parser %s */", comment(p.Name))
	g.line("%s int %s(ctx_t *ctx)", g.stageAttr(), fn) // stages.go
	g.line("{")
	g.indent++
	g.stateLookup()
	g.line("__u32 off = 0;")
	g.fast()
	g.line("s->p4_dpd = 0; /* the packet is as parsed (packet.go) */")
	if g.parserHasLoops(p) {
		g.loopLimit = g.parserLoopLimit()
		g.line("__u32 loops = 0; /* visits of loop states; more than %d: error.ParserTimeout */", g.loopLimit)
	}
	g.inParser = true
	g.parserStates(p, &parserScope{accept: "st_accept", ctorArgs: p.CtorArgs})
	g.inParser = false
	g.pos = syntax.Pos{}
	g.indent--
	g.line("st_accept:")
	g.line("\ts->off = off;")
	g.line("\treturn 0;")
	g.line("st_reject:")
	g.line("\ts->off = off;")
	g.line("\treturn 0;")
	g.line("}")
	g.line("")
}

// parserScope names the states of one parser in the C function: the main
// parser's, or a sub-parser's inlined at one apply (subparser.go).
type parserScope struct {
	prefix string // of the state labels
	accept string // the label accept goes to
	reject string // the label reject goes to ("": st_reject)
	// ctorArgs are the values of the parser's constructor parameters
	ctorArgs []syntax.Expr
	// a goto to accept / reject was generated (a label nothing jumps to
	// is a clang warning)
	acceptUsed, rejectUsed bool
}

// parserLoops finds the states of p that close a loop: they count visits
// so that the verifier sees a bounded loop. reached is the states reached
// from start.
func parserLoops(p *sema.Parser) (reached, loopTarget map[string]bool) {
	color := map[string]int{}
	loopTarget = map[string]bool{}
	var visit func(n string)
	visit = func(n string) {
		st := p.States[n]
		if st == nil {
			return
		}
		switch color[n] {
		case 1:
			loopTarget[n] = true
			return
		case 2:
			return
		}
		color[n] = 1
		if tr := st.Decl.Transition; tr != nil {
			if tr.Select == nil {
				visit(tr.Next)
			}
			for _, c := range tr.Cases {
				visit(c.Next)
			}
		}
		color[n] = 2
	}
	visit("start")
	reached = map[string]bool{}
	for n := range color {
		reached[n] = true
	}
	return reached, loopTarget
}

// parserStates generates the variables and states of p, from start.
func (g *gen) parserStates(p *sema.Parser, sc *parserScope) {
	for _, l := range p.Locals {
		switch x := l.(type) {
		case *sema.Var:
			g.localStorage(x, x.Pos)
		case *sema.ValueSet:
		}
	}
	reached, loopTarget := parserLoops(p)
	saved := g.pscope
	g.pscope = sc
	defer func() { g.pscope = saved }()
	g.ctorInits(p.Ctor, sc.ctorArgs) // calls.go
	g.localInits(p.Decl.Locals)
	g.line("goto %s;", g.stateLabel("start"))
	for _, st := range p.Order {
		if !reached[st.Name] {
			continue // unreachable
		}
		g.pos = st.Decl.Pos
		g.indent--
		g.line("%s:", g.stateLabel(st.Name))
		g.indent++
		g.line("{")
		g.indent++
		if loopTarget[st.Name] {
			g.line("if (++loops > %d) {", g.loopLimit)
			g.line("\ts->sm.f_parser_error = %d; /* error.ParserTimeout */", g.errorID("ParserTimeout"))
			g.line("\tgoto st_reject;")
			g.line("}")
		}
		for _, s := range st.Decl.Stmts {
			g.stmt(s)
		}
		if st.Decl.Transition != nil {
			g.pos = st.Decl.Transition.Pos
		}
		g.transition(st.Decl.Transition)
		g.indent--
		g.line("}")
	}
}

// parserLoopLimit bounds the visits of loop states: one per element of
// every header stack, plus one to reach the StackOutOfBounds check, and at
// least 16 (loops over options that do not fill a stack).
func (g *gen) parserLoopLimit() int {
	n := 1
	var walk func(st *sema.Struct)
	walk = func(st *sema.Struct) {
		for _, f := range st.Fields {
			switch t := f.Type.(type) {
			case *sema.Stack:
				n += t.Size
			case *sema.Struct:
				walk(t)
			}
		}
	}
	if g.hTy != nil {
		walk(g.hTy)
	}
	return max(n, 16)
}

// stateLabel is the C label of state n of the parser being generated.
func (g *gen) stateLabel(n string) string {
	switch {
	case n == "reject":
		return "st_reject" // a sub-parser's reject rejects the packet (line maps it)
	case n == "accept" && g.pscope != nil:
		g.pscope.acceptUsed = true
		return g.pscope.accept
	case g.pscope != nil:
		return g.pscope.prefix + "st_" + ir.Sanitize(n)
	}
	return "st_" + ir.Sanitize(n)
}

func (g *gen) transition(tr *syntax.Transition) {
	if tr == nil {
		g.line("goto st_reject;")
		return
	}
	if tr.Select == nil {
		g.line("goto %s;", g.stateLabel(tr.Next))
		return
	}
	var keys []string
	for i, k := range tr.Select {
		if isWide(g.typeOf(k)) {
			g.unsupported(k.NodePos(), "select on a value wider than 64 bits")
			return
		}
		n := fmt.Sprintf("sk%d", i)
		g.line("__u64 %s = %s;", n, g.rv(k))
		keys = append(keys, n)
	}
	for _, c := range tr.Cases {
		var elems []syntax.Expr
		if l, ok := c.Keyset.(*syntax.List); ok && len(tr.Select) > 1 {
			elems = l.Elems
		} else if ok && len(l.Elems) == 1 {
			elems = l.Elems
		} else {
			elems = []syntax.Expr{c.Keyset}
		}
		cond := ""
		for i, e := range elems {
			if i >= len(keys) {
				break
			}
			c := g.selectCond(e, keys[i])
			if c == "1" {
				continue
			}
			if cond != "" {
				cond += " && "
			}
			cond += c
		}
		if cond == "" {
			g.line("goto %s;", g.stateLabel(c.Next))
			return
		}
		g.line("if (%s)", unparen(cond))
		g.line("\tgoto %s;", g.stateLabel(c.Next))
	}
	g.line("s->sm.f_parser_error = %d; /* error.NoMatch */", g.errorID("NoMatch"))
	g.line("goto st_reject;")
}

func (g *gen) selectCond(e syntax.Expr, k string) string {
	switch x := e.(type) {
	case *syntax.Default:
		return "1"
	case *syntax.Mask:
		m := g.rv(x.Mask)
		return fmt.Sprintf("((%s & %s) == (%s & %s))", k, m, g.rv(x.Value), m)
	case *syntax.Range:
		return fmt.Sprintf("(%s >= %s && %s <= %s)", k, g.rv(x.Lo), k, g.rv(x.Hi))
	case *syntax.Ident:
		if vs, ok := g.info.Uses[x].(*sema.ValueSet); ok {
			return fmt.Sprintf("vs_match_%s(%s)", ir.Sanitize(g.p.ValueSetOf[vs].Name), k)
		}
	}
	return fmt.Sprintf("(%s == %s)", k, g.rv(e))
}

// advance generates packet.advance(bits): bits must be a multiple of 8 (a
// constant is checked by sema; a variable that is not ends the parser with
// error.ParserInvalidArgument). Advancing past the end of the packet is
// error.PacketTooShort.
func (g *gen) advance(arg syntax.Expr) {
	g.line("{")
	g.line("\t__u32 adv = (__u32)%s;", g.rv(arg))
	g.line("\tif (adv & 7) {")
	g.line("\t\ts->sm.f_parser_error = %d; /* error.ParserInvalidArgument */", g.errorID("ParserInvalidArgument"))
	g.line("\t\tgoto st_reject;")
	g.line("\t}")
	g.skipBytes("adv >> 3")
	g.line("}")
}

// runtCheck is error.PacketTooShort when n (a C expression) bytes at off
// are past the real end of a padded runt in a test run (packet.h,
// p4_runt_test; nothing in a cube).
func (g *gen) runtCheck(n string) {
	g.line("if (p4_runt_test && (__u64)off + (%s) > p4_runt_len(ctx)) {", n)
	g.line("\ts->sm.f_parser_error = %d; /* error.PacketTooShort */", g.errorID("PacketTooShort"))
	g.line("\tgoto st_reject;")
	g.line("}")
}

// skipBytes moves the parser n (a C expression) bytes on, error.PacketTooShort
// past the end (advance, and extract<T>(_) in lookahead.go).
func (g *gen) skipBytes(n string) {
	g.line("\tif ((__u64)off + (%s) > p4_plen(ctx)) {", n)
	g.line("\t\ts->sm.f_parser_error = %d; /* error.PacketTooShort */", g.errorID("PacketTooShort"))
	g.line("\t\tgoto st_reject;")
	g.line("\t}")
	g.line("\toff += %s;", n)
}

// lookahead returns a C expression for packet.lookahead<bit<N>>() (N <= 64):
// the next N bits, without moving; error.PacketTooShort past the end.
func (g *gen) lookahead(call *syntax.Call) string {
	if st, ok := g.typeOf(call).(*sema.Struct); ok {
		g.lookaheadValue(call, st) // lookahead.go
		return "0"
	}
	w := width(g.typeOf(call))
	if w <= 0 || w > 64 {
		g.unsupported(call.Pos, "lookahead of this type")
		return "0"
	}
	nb := (w + 7) / 8
	if nb > g.maxHdr {
		g.maxHdr = nb
	}
	return fmt.Sprintf("({ if (p4_load(ctx, off, s->buf, %d) || (p4_runt_test && (__u64)off + %d > p4_runt_len(ctx))) { s->sm.f_parser_error = %d; goto st_reject; } (__u64)%s; })",
		nb, nb, g.errorID("PacketTooShort"), unpack("s->buf", 0, w))
}

// stackNext returns the stack of hs.next, or nil.
func (g *gen) stackNext(arg syntax.Expr) (*sema.Stack, syntax.Expr) {
	m, ok := arg.(*syntax.Member)
	if !ok {
		return nil, nil
	}
	if u, ok := g.typeOf(m.X).(*sema.Struct); ok && u.Kind == "header_union" {
		return g.stackNext(m.X) // hs.next.member of a stack of unions (stacks.go)
	}
	if r := g.info.Members[m]; r == nil || r.Kind != sema.StackMember || r.Name != "next" {
		return nil, nil
	}
	hs, _ := g.typeOf(m.X).(*sema.Stack)
	return hs, m.X
}

func (g *gen) extract(arg syntax.Expr) {
	st, ok := g.typeOf(arg).(*sema.Struct)
	if !ok || st.Kind != "header" {
		g.errorf(arg.NodePos(), "extract needs a header")
		return
	}
	n := st.Bits / 8
	if n > g.maxHdr {
		g.maxHdr = n // s->buf is declared after the body is generated
	}
	g.stackIndexCheck(arg) // stacks.go
	dst := g.lval(arg)
	if hs, sx := g.stackNext(arg); hs != nil {
		// hs.next: error.StackOutOfBounds when the stack is full
		sc := g.lval(sx)
		g.line("if (%s.next >= %d) {", sc, hs.Size)
		g.line("	s->sm.f_parser_error = %d; /* error.StackOutOfBounds */", g.errorID("StackOutOfBounds"))
		g.line("	goto st_reject;")
		g.line("}")
		defer g.line("%s.next++;", sc)
	}
	g.extractHeader(arg, dst, st) // packet.go
	g.line("%s.valid = 1;", dst)
	g.unionInvalidateOthers(arg, "") // before hs.next moves on (a stack of unions)
	g.line("off += %d;", n)
}

func (g *gen) emit(arg syntax.Expr) {
	if hs, ok := g.typeOf(arg).(*sema.Stack); ok {
		g.emitStack(g.lval(arg), hs, arg.NodePos())
		return
	}
	st, ok := g.typeOf(arg).(*sema.Struct)
	if !ok {
		g.errorf(arg.NodePos(), "emit needs a header or a struct of headers")
		return
	}
	g.emitStruct(g.lval(arg), st, arg.NodePos())
}

func (g *gen) emitStruct(c string, st *sema.Struct, pos syntax.Pos) {
	if st.Kind != "header" {
		for _, f := range st.Fields {
			if hs, ok := f.Type.(*sema.Stack); ok {
				g.emitStack(c+".f_"+f.Name, hs, pos)
				continue
			}
			sub, ok := f.Type.(*sema.Struct)
			if !ok {
				g.errorf(pos, "emit: field %s of %s is not a header", f.Name, st.Name)
				continue
			}
			g.emitStruct(c+".f_"+f.Name, sub, pos)
		}
		return
	}
	if st.Varbit != nil {
		g.emitVarbitHeader(c, st)
		return
	}
	n := st.Bits / 8
	if g.emitMode == emitLength {
		g.line("if (%s.valid)", c)
		g.line("\to += %d;", n)
		return
	}
	g.line("if (%s.valid) {", c)
	g.indent++
	if g.emitMode == emitPacket {
		g.emitHeaderPacket(c, st, n) // packet.go
	} else {
		g.line("__u8 *b = s->obuf + (o & P4_OBUF_MASK);")
		g.writeFields(c, st, "b")
	}
	g.line("o += %d;", n)
	g.indent--
	g.line("}")
}

// emitStack emits the valid elements of a header stack, in order.
func (g *gen) emitStack(c string, hs *sema.Stack, pos syntax.Pos) {
	el, ok := hs.Elem.(*sema.Struct)
	if !ok {
		g.errorf(pos, "emit: %s is not a header stack", hs)
		return
	}
	for i := 0; i < hs.Size; i++ {
		g.emitStruct(fmt.Sprintf("%s.e[%d]", c, i), el, pos)
	}
}

func (g *gen) deparser(c *sema.Control, fn string) {
	g.controlLocals(c.Locals)
	g.deparserFn(c, fn, false)
}

// deparserFn generates deparser c as C function fn. With metaOnly, fn runs
// only what the deparser does besides writing the packet (PSA: the
// metadata its out parameters bridge to the next pass or copy, computed
// before the packet is known to need its emits, psa_replicate.go).
func (g *gen) deparserFn(c *sema.Control, fn string, metaOnly bool) {
	g.line("/* deparser %s */", comment(c.Name))
	g.line("%s int %s(ctx_t *ctx)", g.stageAttr(), fn) // stages.go, packet.go
	g.line("{")
	g.indent++
	g.stateLookup()
	g.line("__u32 o = 0;")
	g.line("int delta;")
	g.line("")
	stmts := g.inlineSubDeparsers(c.Decl.Body.Stmts) // subdeparser.go
	// The emits at the end, after statements that emit nothing (a PSA
	// deparser computes its checksums first): those run once, as they
	// are, then the emits write the headers straight into the packet.
	k := len(stmts)
	for k > 0 && g.isEmit(stmts[k-1]) {
		k--
	}
	direct := !g.hasVarbit() // varbit headers are packed through the buffer
	for _, s := range stmts[:k] {
		if g.emitsIn(s) {
			direct = false
		}
	}
	if metaOnly {
		// the emits at the end write nothing else; emits among the other
		// statements pack into s->obuf, never stored
		if direct {
			stmts = stmts[:k]
		}
		for _, s := range stmts {
			g.stmt(s)
		}
		g.line("(void)o;")
		g.line("(void)delta;")
		g.line("return 0;")
	} else if direct {
		// Emits only at the end: size the packet first, then write the
		// headers straight into it (packet.go).
		for _, s := range stmts[:k] {
			g.stmt(s)
		}
		g.directDeparse(stmts[k:])
	} else {
		for _, s := range stmts {
			g.stmt(s)
		}
		// The length goes through the state map: read back, the verifier
		// knows it as a range instead of one value per set of valid
		// headers (per varbit length), each then walked through moving the
		// head and storing (varbit.p4 at TC: 743,000 instructions, 80,000
		// this way).
		if !slices.Contains(g.bufs, deparsedLen) {
			g.bufs = append(g.bufs, deparsedLen)
		}
		g.line("s->p4_olen = o;")
		g.line("o = *(volatile __u32 *)&s->p4_olen;")
		g.line("delta = (int)s->off - (int)o;")
		g.line("if (delta && ctx_adjust_head(ctx, delta))")
		g.line("\treturn -1;")
		g.line("if (o > P4_OBUF_SIZE)")
		g.line("\treturn -1;")
		g.line("if (o && p4_store(ctx, 0, s->obuf, o))")
		g.line("\treturn -1;")
		g.line("return 0;")
	}
	g.indent--
	g.line("}")
	g.line("")
}

// deparsedLen holds a buffered deparser's length (p4_olen) in struct
// p4_state.
const deparsedLen = "__u32 p4_olen /* the headers a buffered deparser wrote, octets */"

// isEmit reports whether s is a packet_out.emit call.
func (g *gen) isEmit(s syntax.Stmt) bool {
	cs, ok := s.(*syntax.CallStmt)
	if !ok {
		return false
	}
	cr := g.info.Calls[cs.Call]
	return cr != nil && cr.Kind == sema.CallExternMethod && cr.Method == "emit"
}

// emitsIn reports whether statement s may emit: an emit anywhere in it, or
// a call (of an action, a function, a sub-control) that might.
func (g *gen) emitsIn(s syntax.Stmt) bool {
	switch x := s.(type) {
	case nil, *syntax.EmptyStmt, *syntax.AssignStmt, *syntax.DeclStmt:
		return false
	case *syntax.BlockStmt:
		for _, y := range x.Stmts {
			if g.emitsIn(y) {
				return true
			}
		}
		return false
	case *syntax.IfStmt:
		return g.emitsIn(x.Then) || g.emitsIn(x.Else)
	case *syntax.CallStmt:
		// extern methods other than emit (checksums, digests) and header
		// methods emit nothing
		cr := g.info.Calls[x.Call]
		return cr == nil || cr.Method == "emit" || cr.Kind != sema.CallExternMethod && cr.Kind != sema.CallHeaderMethod
	}
	return true
}

// How emit is generated.
const (
	emitBuffer = iota // pack into s->obuf
	emitLength        // only add up the length
	emitPacket        // pack straight into the packet (XDP)
)
