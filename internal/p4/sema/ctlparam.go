package sema

// Constructor parameters of control type (P4-16 14.1):
//
//	control my_control_type(inout bit<16> x);
//	control C2(inout bit<16> x)(my_control_type c) { apply { c.apply(x); } }
//	control E(...) { C1() c1; C2(c1) c2; ... }
//
// The argument is a control instance of the enclosing control whose
// signature is the parameter's type. As with extern instances
// (ctor.go: bindExterns), a control's code is generated once, so its
// applies of the parameter are bound statically to the instance its (one)
// instantiation passes: they become applies of that sub-control.

import (
	"strconv"

	"github.com/edgenf/edgenf/internal/p4/syntax"
)

// controlTypeParam reports whether ctor parameter type t is a control type.
func controlTypeParam(t Type) bool {
	b, ok := t.(*BlockT)
	return ok && b.Kind == "control"
}

// controlArg checks the control instance passed for constructor parameter
// p (of control type bt): the name of a sub-control with bt's signature.
func (c *checker) controlArg(e syntax.Expr, p *Var, bt *BlockT, block string) {
	id, ok := e.(*syntax.Ident)
	var sub *SubControl
	if ok {
		sub, _ = c.sc.lookup(id.Name).(*SubControl)
	}
	if sub == nil {
		c.errorf(e.NodePos(), "constructor argument %s of %s must name a control instance declared before it (of type %s)", p.Name, block, bt.Name)
		return
	}
	if why := c.signatureDiffers(sub.Control.Params, bt); why != "" {
		c.errorf(e.NodePos(), "constructor argument %s of %s: control %s does not have type %s: %s", p.Name, block, sub.Control.Name, bt.Name, why)
		return
	}
	c.info.Uses[id] = sub
}

// signatureDiffers says how apply parameters ps differ from those of
// block type bt ("" when they match: count, directions and types).
func (c *checker) signatureDiffers(ps []*Var, bt *BlockT) string {
	if len(ps) != len(bt.Params) {
		return pluralParams(len(ps)) + ", the type " + pluralParams(len(bt.Params))
	}
	for i, bp := range bt.Params {
		p := ps[i]
		if p.Dir != bp.Dir {
			return "parameter " + p.Name + " is " + dirName(p.Dir) + ", the type's " + bp.Name + " " + dirName(bp.Dir)
		}
		if bpt := c.resolveType(bp.Type); !sameType(p.Type, bpt) {
			return "parameter " + p.Name + " has type " + p.Type.String() + ", the type's " + bp.Name + " " + bpt.String()
		}
	}
	return ""
}

func pluralParams(n int) string {
	if n == 1 {
		return "1 parameter"
	}
	return strconv.Itoa(n) + " parameters"
}

func dirName(d string) string {
	if d == "" {
		return "directionless"
	}
	return d
}

// applyControlParam checks p.apply(args) of a constructor parameter of
// control type bt; bindControls binds it to the instance passed.
func (c *checker) applyControlParam(x *syntax.Call, recv *syntax.Ident, bt *BlockT) Type {
	if c.action != nil {
		c.errorf(x.Pos, "controls cannot be applied inside actions")
	}
	c.info.Calls[x] = &CallRef{Kind: CallBlockApply, Recv: recv}
	if len(x.Args) != len(bt.Params) {
		c.errorf(x.Pos, "%s.apply takes %d arguments, got %d", recv.Name, len(bt.Params), len(x.Args))
		return &Void{}
	}
	for i, a := range x.Args {
		if a.Value == nil {
			c.errorf(x.Pos, "missing argument %d", i+1)
			continue
		}
		bp := bt.Params[i]
		pt := c.resolveType(bp.Type)
		if _, ok := pt.(*ExternT); ok {
			c.unsupported(a.Value.NodePos(), "passing "+pt.String()+" to a control applied through a constructor parameter")
			continue
		}
		at := c.expr(a.Value, pt)
		c.assignable(pt, at, a.Value)
		if bp.Dir == "out" || bp.Dir == "inout" {
			c.lvalue(a.Value)
		}
	}
	return &Void{}
}

// bindControls makes the applies of block ct's control-typed constructor
// parameters applies of the sub-controls its instantiation passes.
func (c *checker) bindControls(ps []*Var, args []syntax.Expr) {
	bound := map[*Var]*SubControl{}
	for i, p := range ps {
		if controlTypeParam(p.Type) && i < len(args) {
			if sub := c.argSubControl(args[i]); sub != nil {
				bound[p] = sub
			}
		}
	}
	if len(bound) == 0 {
		return
	}
	for _, cr := range c.info.Calls {
		if cr.Kind != CallBlockApply || cr.Sub != nil || cr.SubParser != nil {
			continue
		}
		if id, ok := cr.Recv.(*syntax.Ident); ok {
			if v, ok := c.info.Uses[id].(*Var); ok && bound[v] != nil {
				cr.Sub = bound[v]
			}
		}
	}
}

// argSubControl is the sub-control a constructor argument names (nil:
// none).
func (c *checker) argSubControl(e syntax.Expr) *SubControl {
	if id, ok := e.(*syntax.Ident); ok {
		sub, _ := c.info.Uses[id].(*SubControl)
		return sub
	}
	return nil
}
