package backend

// Header stacks (of headers or of header unions) indexed by a value known
// only at run time (P4-16 8.18):
// hs[i] with i out of range reads an undefined value and a write to it
// changes nothing in the stack (p4c's and BMv2's behaviour); the parser
// rejects extract(hs[i]) with error.StackOutOfBounds. The index is
// bounds-checked before it is used, so the verifier sees an access inside
// the stack; an index out of range selects a spare element of the same
// type instead (s->oob_<type>), never memory beside the stack.

import (
	"github.com/edgenf/edgenf/internal/p4/ir"
	"github.com/edgenf/edgenf/internal/p4/sema"
	"github.com/edgenf/edgenf/internal/p4/syntax"
)

// stackAt is the C lvalue of hs[i] for a run-time index i: a pointer set
// after the check, on the index's own register.
func (g *gen) stackAt(x *syntax.Index, hs *sema.Stack) string {
	base := g.lval(x.X)
	k, p := g.newTmp("hk"), g.newTmp("hp")
	g.line("__u64 %s = %s;", k, g.rv(x.Index))
	g.line("P4_OPAQUE(%s); /* clang must not drop the check below for an earlier one */", k)
	g.line("%s *%s = &%s;", g.elemType(hs, x.Pos), p, g.spare(hs.Elem, x.Pos))
	g.line("if (%s < %d) {", k, hs.Size)
	g.line("	P4_OPAQUE(%s);", k)
	g.line("	%s = &%s.e[%s];", p, base, k)
	g.line("}")
	return "(*" + p + ")"
}

// elemType is the C type of a stack's elements.
func (g *gen) elemType(hs *sema.Stack, pos syntax.Pos) string {
	if st, ok := hs.Elem.(*sema.Struct); ok {
		return g.structType(st, pos)
	}
	g.unsupported(pos, "stacks of "+hs.Elem.String())
	return "__u8"
}

// spare is the element an out-of-range index selects, one per type.
func (g *gen) spare(el sema.Type, pos syntax.Pos) string {
	name := "oob_" + ir.Sanitize(el.String())
	if g.spares == nil {
		g.spares = map[string]bool{}
	}
	if !g.spares[name] {
		g.spares[name] = true
		g.state = append(g.state, g.decl(el, name, pos))
	}
	return "s->" + name
}

// stackIndexCheck rejects the packet with error.StackOutOfBounds when e is
// a stack element at a run-time index out of range (extract in a parser).
func (g *gen) stackIndexCheck(e syntax.Expr) {
	x, ok := e.(*syntax.Index)
	if !ok {
		return
	}
	hs, ok := g.typeOf(x.X).(*sema.Stack)
	if _, isConst := g.info.Consts[x.Index]; !ok || isConst {
		return
	}
	g.line("if ((__u64)%s >= %d) {", g.rv(x.Index), hs.Size)
	g.line("\ts->sm.f_parser_error = %d; /* error.StackOutOfBounds */", g.errorID("StackOutOfBounds"))
	g.line("\tgoto st_reject;")
	g.line("}")
}

// unionBytes sizes a header_union: its largest member (what one element
// of a stack of unions can hold) and all members together (a bound).
func unionBytes(u *sema.Struct) (largest, total int) {
	for _, f := range u.Fields {
		if h, ok := f.Type.(*sema.Struct); ok {
			largest = max(largest, h.Bits/8)
			total += hdrBytes(h)
		}
	}
	return largest, total
}
