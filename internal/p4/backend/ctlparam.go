package backend

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
