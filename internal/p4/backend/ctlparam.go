package backend

// Constructor parameters of control and parser type (sema/ctlparam.go).

import (
	"github.com/edgenf/edgenf/internal/p4/ir"
	"github.com/edgenf/edgenf/internal/p4/sema"
	"github.com/edgenf/edgenf/internal/p4/syntax"
)

// controlPrototypes declares the controls passed as constructor arguments
// of control type (sema/ctlparam.go): the control applying one may come
// first in the source, and controls are generated in declaration order.
func (g *gen) controlPrototypes() {
	done := map[*sema.Control]bool{}
	for _, ct := range g.info.Controls {
		for i, p := range ct.Ctor {
			if _, ok := p.Type.(*sema.BlockT); !ok || i >= len(ct.CtorArgs) {
				continue
			}
			id, ok := ct.CtorArgs[i].(*syntax.Ident)
			if !ok {
				continue
			}
			sub, _ := g.info.Uses[id].(*sema.SubControl)
			if sub == nil || done[sub.Control] || !g.info.LiveControl(sub.Control) {
				continue
			}
			done[sub.Control] = true
			g.line("P4_STAGE int ctl_%s(ctx_t *ctx);", ir.Sanitize(sub.Control.Name))
		}
	}
	if len(done) > 0 {
		g.line("")
	}
}

// paramSubParser is the sub-parser an apply of a parser-typed constructor
// parameter reaches (ok: cr is one): the one the instance being inlined
// was given (sema/ctlparam.go). Sub-parsers are inlined at each apply, so
// each instance applies its own.
func (g *gen) paramSubParser(call *syntax.Call, cr *sema.CallRef) (sub *sema.SubParser, ok bool) {
	id, _ := cr.Recv.(*syntax.Ident)
	if id == nil {
		return nil, false
	}
	v, _ := g.info.Uses[id].(*sema.Var)
	if v == nil {
		return nil, false
	}
	if bt, isBlock := v.Type.(*sema.BlockT); !isBlock || bt.Kind != "parser" {
		return nil, false
	}
	if g.pscope != nil && v.Index < len(g.pscope.ctorArgs) {
		if a, isID := g.pscope.ctorArgs[v.Index].(*syntax.Ident); isID {
			sub, _ = g.info.Uses[a].(*sema.SubParser)
		}
	}
	if sub == nil {
		g.errorf(call.Pos, "%s.apply: no parser instance bound to constructor parameter %s", id.Name, v.Name)
	}
	return sub, true
}
