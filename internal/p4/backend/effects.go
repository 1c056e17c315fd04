package backend

// Short-circuit evaluation (P4-16 8.5, 8.6): the right operand of && and ||
// and the branches of ?: run only when they are selected. An operand whose
// evaluation emits statements (a table apply, a function call with its
// copy-in/copy-out) is generated inside an if, not as a C operand that
// would run it unconditionally.

import (
	"fmt"
	"strings"

	"github.com/edgenf/edgenf/internal/p4/sema"
	"github.com/edgenf/edgenf/internal/p4/syntax"
)

// hasEffects reports whether generating e emits statements: it calls a
// table, a function, an action or a stateful extern method.
func (g *gen) hasEffects(e syntax.Expr) bool {
	switch x := e.(type) {
	case *syntax.Call:
		if g.info.Consts[x] == nil {
			if cr := g.info.Calls[x]; cr != nil {
				switch cr.Kind {
				case sema.CallTableApply, sema.CallFunction, sema.CallAction, sema.CallBlockApply:
					return true
				case sema.CallExternMethod:
					if cr.Method != "lookahead" {
						return true
					}
				}
			}
		}
		if g.hasEffects(x.Fn) {
			return true
		}
		for _, a := range x.Args {
			if a.Value != nil && g.hasEffects(a.Value) {
				return true
			}
		}
	case *syntax.Member:
		return g.hasEffects(x.X)
	case *syntax.Index:
		return g.hasEffects(x.X) || g.hasEffects(x.Index)
	case *syntax.Slice:
		return g.hasEffects(x.X)
	case *syntax.Unary:
		return g.hasEffects(x.X)
	case *syntax.Cast:
		return g.hasEffects(x.X)
	case *syntax.Binary:
		return g.hasEffects(x.X) || g.hasEffects(x.Y)
	case *syntax.Cond:
		return g.hasEffects(x.Cond) || g.hasEffects(x.Then) || g.hasEffects(x.Else)
	case *syntax.List:
		for _, el := range x.Elems {
			if g.hasEffects(el) {
				return true
			}
		}
	}
	return false
}

// shortCircuit renders a && b or a || b whose b has effects: b is
// generated only when a does not decide the result.
func (g *gen) shortCircuit(x *syntax.Binary) string {
	t := g.newTmp("sc")
	g.line("__u8 %s = !!(%s);", t, g.rv(x.X))
	if x.Op == "&&" {
		g.line("if (%s) {", t)
	} else {
		g.line("if (!%s) {", t)
	}
	g.indent++
	g.line("%s = !!(%s);", t, g.rv(x.Y))
	g.indent--
	g.line("}")
	return t
}

// condEffects renders c ? a : b when a or b has effects: only the chosen
// branch is generated to run.
func (g *gen) condEffects(x *syntax.Cond) string {
	t := g.newTmp("mx")
	g.line("__u64 %s;", t)
	g.line("if (%s) {", unparen(g.rv(x.Cond)))
	g.indent++
	g.line("%s = %s;", t, g.rv(x.Then))
	g.indent--
	g.line("} else {")
	g.indent++
	g.line("%s = %s;", t, g.rv(x.Else))
	g.indent--
	g.line("}")
	return fmt.Sprintf("((__u64)%s)", t)
}

// settle saves the value of a C expression in a temporary, so that effects
// generated after it (a function's copy-out) do not change it: P4
// evaluates operands left to right.
func (g *gen) settle(v string) string {
	if strings.HasPrefix(v, "0x") {
		return v // a constant
	}
	t := g.newTmp("lv")
	g.line("__u64 %s = %s;", t, v)
	return t
}
