package sema

import "github.com/edgenf/edgenf/internal/p4/syntax"

// Direct application (P4-16 15.1): a control without constructor
// parameters may be applied by its type name, C.apply(...), inside another
// control's apply block: an anonymous instance of C. Every such apply in
// one control shares one instance, which is the same thing for a control
// without state (tables, externs); one with state applied directly from
// two places would need an instance each (againControl refuses that, as
// for named instances).

// directApply is the instance of callee that x (the receiver of .apply)
// names; nil where a direct application is not allowed (x is then an
// error of the caller's).
func (c *checker) directApply(x *syntax.Ident, callee *Control) *SubControl {
	if c.control == nil || c.action != nil || len(callee.Ctor) > 0 || callee == c.control {
		return nil
	}
	key := [2]*Control{c.control, callee}
	if sub := c.direct[key]; sub != nil {
		return sub
	}
	decl := &syntax.InstanceDecl{Pos: x.Pos, Name: callee.Name, Type: &syntax.NamedType{Pos: x.Pos, Name: callee.Name}}
	bt := &BlockT{Kind: "control", Name: callee.Name, Params: callee.Decl.Params, Decl: callee.Decl}
	sub, _ := c.subControl(decl, bt).(*SubControl)
	if sub != nil {
		c.direct[key] = sub
	}
	return sub
}
