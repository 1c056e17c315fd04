package sema

// Constructor parameters of parsers and controls (P4-16 14.1):
// control C(inout H h)(bit<8> limit) { ... } instantiated as C(10) c; or
// passed to the package as V1Switch(..., C(10), ...). Each is a value
// fixed by the instantiation: read-only in the block's body, where it is
// used like an in parameter (not as a compile-time constant: a width or a
// table size cannot be one).

import "github.com/edgenf/edgenf/internal/p4/syntax"

// ctorParams declares the constructor parameters ps of block owner.
func (c *checker) ctorParams(ps []*syntax.Param, owner string) []*Var {
	var out []*Var
	for i, p := range ps {
		t := c.resolveType(p.Type)
		if p.Dir != "" {
			c.errorf(p.Pos, "constructor parameter %s cannot have a direction", p.Name)
		}
		switch t.(type) {
		case *Bits, *Bool, *Enum, *ErrorT, *Invalid:
		default:
			c.unsupported(p.Pos, "constructor parameters of type "+t.String()+" (bit<N>, int<N>, bool, enums and error are supported)")
		}
		v := &Var{Name: p.Name, Type: t, Dir: "in", Kind: LocalVar, Pos: p.Pos, Index: i, Owner: owner, ID: c.id()}
		c.info.Decls[p] = v
		c.declare(p.Name, v, p.Pos)
		out = append(out, v)
	}
	return out
}

// ctorArgs checks the constructor arguments of an instantiation of block
// name against its parameters ps: compile-time constants of their types.
func (c *checker) ctorArgs(args []syntax.Arg, ps []*Var, name string, pos syntax.Pos) []syntax.Expr {
	if len(args) != len(ps) {
		c.errorf(pos, "%s takes %d constructor argument(s), got %d", name, len(ps), len(args))
		return nil
	}
	var out []syntax.Expr
	for i, a := range args {
		if a.Value == nil {
			c.errorf(pos, "missing constructor argument %d of %s", i+1, name)
			return nil
		}
		t := c.expr(a.Value, ps[i].Type)
		c.assignable(ps[i].Type, t, a.Value)
		if _, ok := c.info.Consts[a.Value]; !ok && !bad(t) {
			c.errorf(a.Value.NodePos(), "constructor argument %s of %s must be a compile-time constant", ps[i].Name, name)
		}
		out = append(out, a.Value)
	}
	return out
}

// againControl checks a second instantiation of control callee. Its code
// is generated once, so the instances can share it when the control keeps
// no state of its own (no table, extern instance or value_set, directly or
// in its sub-controls) and the constructor arguments are the same.
func (c *checker) againControl(x *syntax.InstanceDecl, callee *Control) Entity {
	if what := stateOf(callee, 0); what != "" {
		c.unsupported(x.Pos, "instantiating control "+callee.Name+" more than once: it declares "+what+", which each instance would need its own of")
		return nil
	}
	args := c.ctorArgs(x.Args, callee.Ctor, callee.Name, x.Pos)
	for i, a := range args {
		if i < len(callee.CtorArgs) && c.info.Consts[a] != nil && c.info.Consts[callee.CtorArgs[i]] != nil &&
			c.info.Consts[a].Cmp(c.info.Consts[callee.CtorArgs[i]]) != 0 {
			c.unsupported(a.NodePos(), "instances of control "+callee.Name+" with different constructor arguments")
			return nil
		}
	}
	sub := &SubControl{Name: x.Name, Decl: x, Control: callee, Parent: c.control}
	c.info.SubControls = append(c.info.SubControls, sub)
	c.declare(x.Name, sub, x.Pos)
	return sub
}

// stateOf names what control ct (or a control it instantiates) declares
// that is state of an instance: a table, an extern instance, a value_set.
func stateOf(ct *Control, depth int) string {
	if depth > 16 {
		return ""
	}
	for _, l := range ct.Locals {
		switch x := l.(type) {
		case *Table:
			return "table " + x.Name
		case *Instance:
			return x.Extern.Name + " " + x.Name
		case *ValueSet:
			return "value_set " + x.Name
		case *SubControl:
			if w := stateOf(x.Control, depth+1); w != "" {
				return w
			}
		}
	}
	return ""
}
