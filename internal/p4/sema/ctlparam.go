package sema

// Constructor parameters of control and parser type (P4-16 14.1):
//
//	control my_control_type(inout bit<16> x);
//	control C2(inout bit<16> x)(my_control_type c) { apply { c.apply(x); } }
//	control E(...) { C1() c1; C2(c1) c2; ... }
//
//	parser PT(packet_in p, inout H h);
//	parser SP(packet_in p, inout H h)(PT q) { state start { q.apply(p, h); transition accept; } }
//	parser P(...) { Sub() sub; SP(sub) sp; ... }
//
// The argument is an instance, declared before it in the enclosing block,
// whose signature is the parameter's type; only a control takes a control
// and only a parser a parser (the spec's appendix on restrictions on calls:
// a control cannot apply a parser, nor a parser a control). As with extern
// instances (ctor.go: bindExterns), a control's code is generated once, so
// its applies of the parameter are bound statically to the instance its
// (one) instantiation passes: they become applies of that sub-control. A
// sub-parser is inlined at each apply (backend/subparser.go), so its
// applies of the parameter are bound, also at compile time, per instance:
// to the sub-parser that instance was given (backend/ctlparam.go).

import (
	"fmt"
	"strconv"

	"github.com/edgenf/edgenf/internal/p4/syntax"
)

// controlTypeParam reports whether ctor parameter type t is a control type.
func controlTypeParam(t Type) bool {
	b, ok := t.(*BlockT)
	return ok && b.Kind == "control"
}

// blockTypeParam is ctor parameter type t when it is a control or parser
// type (nil otherwise).
func blockTypeParam(t Type) *BlockT {
	if b, ok := t.(*BlockT); ok && (b.Kind == "control" || b.Kind == "parser") {
		return b
	}
	return nil
}

// blockCtorParam checks a constructor parameter of block type bt of the
// parser or control being declared: a parser takes parsers, a control
// controls.
func (c *checker) blockCtorParam(p *syntax.Param, bt *BlockT) {
	owner := "control"
	if c.parser != nil {
		owner = "parser"
	}
	if bt.Kind != owner {
		c.errorf(p.Pos, "constructor parameter %s of a %s cannot have %s type %s: only a %s can apply a %s", p.Name, owner, bt.Kind, bt.Name, bt.Kind, bt.Kind)
	}
}

// blockArg checks the instance passed for constructor parameter p (of
// control or parser type bt): the name of a sub-control or sub-parser
// declared before it, with bt's signature.
func (c *checker) blockArg(e syntax.Expr, p *Var, bt *BlockT, block string) syntax.Expr {
	e = c.anonBlockArg(e)
	id, _ := e.(*syntax.Ident)
	var ent Entity
	var name string
	var params []*Var
	if id != nil {
		switch x := c.sc.lookup(id.Name).(type) {
		case *SubControl:
			if bt.Kind == "control" {
				ent, name, params = x, x.Control.Name, x.Control.Params
			}
		case *SubParser:
			if bt.Kind == "parser" {
				ent, name, params = x, x.Parser.Name, x.Parser.Params
			}
		}
	}
	if ent == nil {
		c.errorf(e.NodePos(), "constructor argument %s of %s must name a %s instance declared before it (of type %s)", p.Name, block, bt.Kind, bt.Name)
		return e
	}
	if why := c.signatureDiffers(params, bt); why != "" {
		c.errorf(e.NodePos(), "constructor argument %s of %s: %s %s does not have type %s: %s", p.Name, block, bt.Kind, name, bt.Name, why)
		return e
	}
	c.info.Uses[id] = ent
	return e
}

// anonBlockArg desugars a control or parser constructed in a constructor
// argument, Twice(Add(1)), into an instance of its own (P4-16 10.3.1):
// a hidden, uniquely named "Add(1) Add_argN;" declared just before its
// user, which the argument then names. Nested arguments are desugared
// when that declaration is checked. Anything else is returned unchanged.
func (c *checker) anonBlockArg(e syntax.Expr) syntax.Expr {
	call, ok := e.(*syntax.Call)
	if !ok {
		return e
	}
	fn, ok := call.Fn.(*syntax.Ident)
	if !ok {
		return e
	}
	switch c.global.lookup(fn.Name).(type) {
	case *Control, *Parser:
	default:
		return e
	}
	name := fmt.Sprintf("%s_arg%d", fn.Name, c.id())
	for c.sc.lookup(name) != nil {
		name = fmt.Sprintf("%s_arg%d", fn.Name, c.id())
	}
	owner := ""
	if c.control != nil {
		owner = c.control.Name
	} else if c.parser != nil {
		owner = c.parser.Name
	}
	decl := &syntax.InstanceDecl{Pos: call.Pos, Type: &syntax.NamedType{Pos: fn.Pos, Name: fn.Name}, Args: call.Args, Name: name}
	c.instanceDecl(decl, owner)
	return &syntax.Ident{Pos: fn.Pos, Name: name}
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
		bpt := c.resolveType(bp.Type)
		if pe, ok := p.Type.(*ExternT); ok { // packet_in
			if be, ok := bpt.(*ExternT); ok && be.Decl == pe.Decl {
				continue
			}
		}
		if !sameType(p.Type, bpt) {
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

// applyBlockParam checks p.apply(args) of a constructor parameter of
// control or parser type bt; bindControls binds a control's to the
// instance passed, the backend a parser's (backend/ctlparam.go).
func (c *checker) applyBlockParam(x *syntax.Call, recv *syntax.Ident, bt *BlockT) Type {
	if c.action != nil {
		c.errorf(x.Pos, "controls cannot be applied inside actions")
	}
	if bt.Kind == "parser" && c.parser == nil {
		c.errorf(x.Pos, "a sub-parser can only be applied in a parser state")
		return &Void{}
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
		if et, ok := pt.(*ExternT); ok {
			if bt.Kind == "parser" { // packet_in: the caller's packet
				c.packetArg(a.Value, i, recv.Name, et) // subparser.go
			} else {
				c.unsupported(a.Value.NodePos(), "passing "+pt.String()+" to a control applied through a constructor parameter")
			}
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
