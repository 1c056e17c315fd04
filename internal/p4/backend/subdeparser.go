package backend

import (
	"github.com/edgenf/edgenf/internal/p4/sema"
	"github.com/edgenf/edgenf/internal/p4/syntax"
)

// Sub-deparsers: a control that takes the deparser's packet_out, applied
// from a deparser (p4c's PSA samples share one between the ingress and
// egress deparsers: CommonDeparserImpl() cp; cp.apply(buffer, hdr)). Its
// emits are the deparser's, so it is inlined into each deparser that
// applies it: its parameters alias the caller's arguments (its body may
// only emit, so it reads them only, and aliasing is copy-in/copy-out), and the deparser stays a list of emits
// that writes the headers straight into the packet (packet.go).

// subDeparser reports whether c takes a packet_out.
func subDeparser(c *sema.Control) bool {
	for _, v := range c.Params {
		if et, ok := v.Type.(*sema.ExternT); ok && et.Decl.Name == "packet_out" {
			return true
		}
	}
	return false
}

// inlineSubDeparsers returns stmts with each apply of a sub-deparser
// replaced by its body, its parameters bound to the arguments.
func (g *gen) inlineSubDeparsers(stmts []syntax.Stmt) []syntax.Stmt {
	var out []syntax.Stmt
	for _, s := range stmts {
		cs, ok := s.(*syntax.CallStmt)
		if !ok {
			out = append(out, s)
			continue
		}
		cr := g.info.Calls[cs.Call]
		if cr == nil || cr.Kind != sema.CallBlockApply || cr.Sub == nil || !subDeparser(cr.Sub.Control) {
			out = append(out, s)
			continue
		}
		sub := cr.Sub.Control
		if len(sub.Locals) > 0 {
			g.unsupported(cs.Call.Pos, "a sub-control taking packet_out ("+sub.Name+") with local declarations")
			continue
		}
		for i, v := range sub.Params {
			if _, ok := v.Type.(*sema.ExternT); ok {
				continue // the packet_out: emits go to the deparser's packet
			}
			g.lv[v] = g.lval(cs.Call.Args[i].Value)
		}
		for _, b := range sub.Decl.Body.Stmts {
			if !g.emitOrSubDeparser(b) {
				g.unsupported(b.NodePos(), "a statement other than emit in a sub-control taking packet_out ("+sub.Name+")")
			}
		}
		out = append(out, g.inlineSubDeparsers(sub.Decl.Body.Stmts)...)
	}
	return out
}

func (g *gen) emitOrSubDeparser(s syntax.Stmt) bool {
	cs, ok := s.(*syntax.CallStmt)
	if !ok {
		return false
	}
	cr := g.info.Calls[cs.Call]
	return cr != nil && (cr.Kind == sema.CallExternMethod && cr.Method == "emit" ||
		cr.Kind == sema.CallBlockApply && cr.Sub != nil && subDeparser(cr.Sub.Control))
}
