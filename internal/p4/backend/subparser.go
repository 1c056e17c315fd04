package backend

// Sub-parsers (P4-16 13.9), inlined: each apply generates the sub-parser's
// states again, under labels of their own, inside the calling state. The
// arguments are copied in, the sub-parser's accept continues the calling
// state after the out and inout parameters are copied back, and its reject
// (or a failed verify, extract, ...) copies them back too, then rejects
// the packet: what it extracted is kept, so no byte of the packet is lost. A sub-parser shares the packet, its offset and the parser's loop
// budget with its caller.

import (
	"github.com/edgenf/edgenf/internal/p4/sema"
	"github.com/edgenf/edgenf/internal/p4/syntax"
)

// applySubParser generates sub.apply(args) in a parser state.
func (g *gen) applySubParser(call *syntax.Call, sub *sema.SubParser) {
	if g.subDepth > 8 {
		g.errorf(call.Pos, "sub-parsers nested more than 8 deep")
		return
	}
	g.subDepth++
	defer func() { g.subDepth-- }()
	var params []*sema.Var
	var args []syntax.Expr
	for i, p := range sub.Parser.Params {
		if _, ext := p.Type.(*sema.ExternT); ext || i >= len(call.Args) {
			continue // packet_in: the caller's packet and offset
		}
		params, args = append(params, p), append(args, call.Args[i].Value)
	}
	n := g.newTmp("sp")
	sc := &parserScope{prefix: n + "_", accept: n + "_accept", reject: n + "_reject", ctorArgs: sub.Args}
	g.line("{")
	g.indent++
	g.line("/* %s.apply: parser %s inlined */", sub.Name, comment(sub.Parser.Name))
	g.copyIn(params, args) // calls.go
	g.parserStates(sub.Parser, sc)
	if sc.rejectUsed {
		// reject: the arguments get what the sub-parser extracted (the
		// bytes it consumed stay in the packet), then the caller rejects
		g.indent--
		g.line("%s:", sc.reject)
		g.indent++
		g.copyOut(params, args)
		g.line("goto st_reject;") // mapped to an enclosing sub-parser's reject by line
	}
	if sc.acceptUsed {
		g.indent--
		g.line("%s:", sc.accept)
		g.indent++
		g.copyOut(params, args)
	}
	g.indent--
	g.line("}")
}

// parserHasLoops reports whether p or a parser it applies has a loop.
func (g *gen) parserHasLoops(p *sema.Parser) bool {
	return g.walkSubParsers(p, 0, func(q *sema.Parser) bool {
		_, loops := parserLoops(q)
		return len(loops) > 0
	})
}

// walkSubParsers reports whether f holds for p or a parser p instantiates.
func (g *gen) walkSubParsers(p *sema.Parser, depth int, f func(*sema.Parser) bool) bool {
	if f(p) {
		return true
	}
	if depth > 8 {
		return false
	}
	for _, l := range p.Locals {
		if sp, ok := l.(*sema.SubParser); ok && g.walkSubParsers(sp.Parser, depth+1, f) {
			return true
		}
	}
	return false
}
