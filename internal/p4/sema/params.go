package sema

// Directional parameters of actions and functions (P4-16 6.8): in, out and
// inout parameters are passed by copy-in/copy-out, so the backend gives
// each one storage of its own; that needs a type with a fixed layout.

import "github.com/edgenf/edgenf/internal/p4/syntax"

// storable reports an error unless a directional parameter's type can be
// copied in and out.
func (c *checker) storable(p *Var, of string) {
	switch t := p.Type.(type) {
	case *Bits, *Bool, *Enum, *ErrorT, *Struct, *Tuple, *Stack, *Varbit, *Invalid:
		return
	case *ExternT:
		c.unsupported(p.Pos, "passing an extern object ("+t.Decl.Name+") to an "+of)
		return
	}
	c.errorf(p.Pos, "%s parameter %s cannot have type %s", of, p.Name, p.Type)
}

// directional returns the parameters of a with a direction (they come first).
func (a *Action) Directional() []*Var { return a.Params[:len(a.Params)-len(a.DataParams)] }

// bindArgs checks arguments for parameters ps, and that an out or inout
// parameter gets something assignable.
func (c *checker) bindArgs(args []syntax.Arg, ps []*Var, pos syntax.Pos) {
	for i, a := range args {
		if i >= len(ps) {
			break
		}
		if a.Value == nil {
			c.errorf(pos, "missing argument %d", i+1)
			continue
		}
		pt := ps[i].Type
		at := c.expr(a.Value, pt)
		c.assignable(pt, at, a.Value)
		if ps[i].Dir == "out" || ps[i].Dir == "inout" {
			c.lvalue(a.Value)
		}
	}
}

// tableActionArgs checks the arguments an action gets in a table's action
// list: one per directional parameter, bound every time the table runs
// the action; the control plane supplies the rest.
func (c *checker) tableActionArgs(ar *syntax.ActionRef, a *Action) {
	dir := a.Directional()
	if len(ar.Args) != len(dir) {
		if len(dir) == 0 {
			c.errorf(ar.Pos, "action %s has no directional parameters; its parameters are action data, supplied by the control plane, not in the table's action list", a.Name)
			return
		}
		c.errorf(ar.Pos, "action %s has %d directional parameter(s) (%s); the table's action list must bind each of them, got %d argument(s)", a.Name, len(dir), paramNames(dir), len(ar.Args))
		return
	}
	c.bindArgs(ar.Args, dir, ar.Pos)
}

func paramNames(ps []*Var) string {
	s := ""
	for i, p := range ps {
		if i > 0 {
			s += ", "
		}
		s += p.Dir + " " + p.Name
	}
	return s
}

// sameBinding checks that directional arguments written in a default
// action or an entry are those of the table's action list (p4c's rule: the
// list binds them, once).
func (c *checker) sameBinding(ac *ActionCall, ta *TableAction) {
	for i, e := range ac.DirArgs {
		if i < len(ta.Args) && ta.Args[i].Value != nil && ExprString(e) != ExprString(ta.Args[i].Value) {
			c.errorf(e.NodePos(), "argument %s for parameter %s of %s differs from the table's action list, which binds it to %s", ExprString(e), ac.Action.Params[i].Name, ac.Action.Name, ExprString(ta.Args[i].Value))
		}
	}
}

// lookaheadType checks the type of packet.lookahead<T>(): bit<N> or int<N>
// up to 64 bits, a header without a varbit field, or a struct of bit<N>
// fields (read as they lie in the packet).
func (c *checker) lookaheadType(x *syntax.Call) {
	t := c.info.Types[x]
	switch y := t.(type) {
	case *Bits:
		if y.W <= 64 {
			return
		}
	case *Struct:
		ok := y.Kind == "header" && y.Varbit == nil
		if y.Kind == "struct" {
			ok = len(y.Fields) > 0
			for _, f := range y.Fields {
				if _, isBits := BitsOf(f.Type); !isBits || Width(f.Type) > 64 {
					ok = false
				}
			}
		}
		if ok {
			return
		}
	}
	if !bad(t) {
		c.unsupported(x.Pos, "lookahead of "+t.String()+" (bit<N> and int<N> up to 64 bits, headers without varbit fields and structs of bit<N> fields are supported)")
	}
}

// extractSkip checks packet.extract<T>(_): a header of type T is read and
// dropped, i.e. the packet advances by its size (CallRef.Count bits).
func (c *checker) extractSkip(x *syntax.Call) {
	if len(x.TypeArgs) != 1 {
		c.errorf(x.Pos, "extract(_) needs the header type: extract<T>(_)")
		return
	}
	t := c.resolveType(x.TypeArgs[0])
	h, ok := t.(*Struct)
	if !ok || h.Kind != "header" || h.Varbit != nil {
		if !bad(t) {
			c.errorf(x.Pos, "extract<T>(_) needs a header type without a varbit field, got %s", t)
		}
		return
	}
	c.info.Calls[x].Count = h.Bits
}

// stackVar checks a header stack declared as a variable (H[2] tmp;).
func (c *checker) stackVar(x *syntax.VarDecl, s *Stack) {
	el, ok := s.Elem.(*Struct)
	if !ok || (el.Kind != "header" && el.Kind != "header_union") {
		if !bad(s.Elem) {
			c.unsupported(x.Pos, "stacks of "+s.Elem.String()+" (only stacks of headers and header unions)")
		}
		return
	}
	if s.Size <= 0 || s.Size > 64 {
		c.errorf(x.Pos, "header stack size %d out of range (1..64)", s.Size)
	}
}
