package backend

// == and != on structured values (P4-16 8.9, 8.17, 8.18): headers are equal
// when both are invalid, or both valid with equal fields; header unions when
// their members are (at most one is valid); structs and stacks when their
// fields or elements are (a stack's nextIndex is not part of its value);
// varbits when their lengths and their first length bytes are.

import (
	"fmt"
	"strings"

	"github.com/edgenf/edgenf/internal/p4/sema"
	"github.com/edgenf/edgenf/internal/p4/syntax"
)

// structuredEq reports whether x compares values that are not scalars, and
// then its C expression.
func (g *gen) structuredEq(x *syntax.Binary, t sema.Type) (string, bool) {
	switch t.(type) {
	case *sema.Struct, *sema.Stack, *sema.Varbit:
	default:
		return "", false
	}
	a, b := g.spath(x.X), g.spath(x.Y)
	if a == "" || b == "" {
		g.unsupported(x.Pos, "comparing "+t.String()+" values that are not variables, headers or fields with constant stack indices")
		return "0", true
	}
	eq := g.eqPaths(a, b, t)
	if x.Op == "!=" {
		return "(!" + eq + ")", true
	}
	return eq, true
}

// eqPaths is the C condition that the values at C paths a and b, of type t,
// are equal.
func (g *gen) eqPaths(a, b string, t sema.Type) string {
	switch x := t.(type) {
	case *sema.Struct:
		var fields []string
		for _, f := range x.Fields {
			fields = append(fields, g.eqPaths(a+".f_"+f.Name, b+".f_"+f.Name, f.Type))
		}
		all := "1"
		if len(fields) > 0 {
			all = "(" + strings.Join(fields, " && ") + ")"
		}
		if x.Kind == "header" {
			return fmt.Sprintf("(%s.valid == %s.valid && (!%s.valid || %s))", a, b, a, all)
		}
		return all
	case *sema.Stack:
		var elems []string
		for i := 0; i < x.Size; i++ {
			elems = append(elems, g.eqPaths(fmt.Sprintf("%s.e[%d]", a, i), fmt.Sprintf("%s.e[%d]", b, i), x.Elem))
		}
		return "(" + strings.Join(elems, " && ") + ")"
	case *sema.Varbit:
		return fmt.Sprintf("(%s.len == %s.len && p4_vbeq(%s.b, %s.b, %s.len, %d))", a, b, a, b, a, x.Max/8)
	}
	if isWide(t) {
		return fmt.Sprintf("p4_memeq(%s, %s, %d)", a, b, width(t)/8)
	}
	return fmt.Sprintf("(%s == %s)", a, b)
}
