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
