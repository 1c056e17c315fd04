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
		case *ExternT: // an extern instance the instantiation passes (bindExterns)
		default:
			if bt := blockTypeParam(t); bt != nil { // a control or parser instance (ctlparam.go)
				c.blockCtorParam(p, bt)
				break
			}
			c.unsupported(p.Pos, "constructor parameters of type "+t.String()+" (bit<N>, int<N>, bool, enums, error, extern instances, controls and parsers are supported)")
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
		if et, ok := ps[i].Type.(*ExternT); ok {
			c.externArg(a.Value, ps[i], et, name)
			out = append(out, a.Value)
			continue
		}
		if bt := blockTypeParam(ps[i].Type); bt != nil {
			args[i].Value = c.blockArg(a.Value, ps[i], bt, name) // ctlparam.go
			out = append(out, args[i].Value)
			continue
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
	if len(callee.Ctor) > 0 && callee.CtorArgs == nil {
		// S(S(A())): the first instance's arguments are still being checked
		c.unsupported(x.Pos, "an instance of control "+callee.Name+" in a constructor argument of another instance of it")
		return nil
	}
	args := c.ctorArgs(x.Args, callee.Ctor, callee.Name, x.Pos)
	for i, a := range args {
		if i < len(callee.CtorArgs) && c.argInstance(a) != c.argInstance(callee.CtorArgs[i]) {
			c.unsupported(a.NodePos(), "instances of control "+callee.Name+" with different extern instances as constructor arguments")
			return nil
		}
		if i < len(callee.CtorArgs) && c.argSubControl(a) != c.argSubControl(callee.CtorArgs[i]) {
			c.unsupported(a.NodePos(), "instances of control "+callee.Name+" with different controls as constructor arguments")
			return nil
		}
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

// externArg checks an extern instance passed for constructor parameter p
// (of extern type et): the name of an instance of that extern.
func (c *checker) externArg(e syntax.Expr, p *Var, et *ExternT, block string) {
	id, ok := e.(*syntax.Ident)
	var inst *Instance
	if ok {
		inst, _ = c.sc.lookup(id.Name).(*Instance)
	}
	if inst == nil || inst.Extern != et.Decl {
		c.errorf(e.NodePos(), "constructor argument %s of %s must name a %s instance", p.Name, block, et.Decl.Name)
		return
	}
	c.info.Uses[id] = inst
}

// argInstance is the extern instance a constructor argument names (nil:
// none, a value).
func (c *checker) argInstance(e syntax.Expr) *Instance {
	if id, ok := e.(*syntax.Ident); ok {
		inst, _ := c.info.Uses[id].(*Instance)
		return inst
	}
	return nil
}

// bindExterns makes the method calls of block ct on its extern-typed
// constructor parameters calls on the instances its (one) instantiation
// passes: the block's code is generated once (instances of it share it,
// againControl), so the binding is static.
func (c *checker) bindExterns(ps []*Var, args []syntax.Expr) {
	bound := map[*Var]*Instance{}
	for i, p := range ps {
		if _, ok := p.Type.(*ExternT); ok && i < len(args) {
			if inst := c.argInstance(args[i]); inst != nil {
				bound[p] = inst
			}
		}
	}
	if len(bound) == 0 {
		return
	}
	for _, cr := range c.info.Calls {
		if cr.Kind != CallExternMethod || cr.Instance != nil {
			continue
		}
		if id, ok := cr.Recv.(*syntax.Ident); ok {
			if v, ok := c.info.Uses[id].(*Var); ok && bound[v] != nil {
				cr.Instance = bound[v]
			}
		}
	}
}
