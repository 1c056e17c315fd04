package sema

// The type checking of statements and expressions. Over 600 lines: one
// case per kind of statement and expression of P4-16, in the order of the
// spec's chapters, which reads better than the same cases split across files.

import (
	"math/big"
	"strings"

	"github.com/edgenf/edgenf/internal/p4/syntax"
)

// ---------- statements ----------

func (c *checker) stmt(s syntax.Stmt) {
	switch x := s.(type) {
	case *syntax.BlockStmt:
		c.push()
		for _, st := range x.Stmts {
			c.stmt(st)
		}
		c.pop()
	case *syntax.EmptyStmt:
	case *syntax.AssignStmt:
		lt := c.expr(x.LHS, nil)
		c.lvalue(x.LHS)
		rt := c.expr(x.RHS, lt)
		if x.Op != "=" {
			if b, ok := lt.(*Bits); !ok && !bad(lt) {
				c.errorf(x.Pos, "%s needs a bit<N> or int<N> target", x.Op)
			} else if ok && b.W > 64 {
				c.wideOperator(x.Pos, strings.TrimSuffix(x.Op, "="), b) // wide.go
			}
		}
		c.assignable(lt, rt, x.RHS)
	case *syntax.CallStmt:
		c.expr(x.Call, nil)
	case *syntax.IfStmt:
		t := c.expr(x.Cond, &Bool{})
		if _, ok := t.(*Bool); !ok && !bad(t) {
			c.errorf(x.Cond.NodePos(), "if condition has type %s, want bool", t)
		}
		c.stmt(x.Then)
		if x.Else != nil {
			c.stmt(x.Else)
		}
	case *syntax.ExitStmt:
		if c.parser != nil {
			c.errorf(x.Pos, "exit is not allowed in a parser")
		}
		if c.function != nil {
			c.errorf(x.Pos, "exit is not allowed in a function")
		}
	case *syntax.ReturnStmt:
		if c.function != nil {
			_, void := c.function.Ret.(*Void)
			switch {
			case x.Value == nil && !void:
				c.errorf(x.Pos, "function %s must return a %s", c.function.Name, c.function.Ret)
			case x.Value != nil && void:
				c.errorf(x.Pos, "function %s returns void", c.function.Name)
			case x.Value != nil:
				t := c.expr(x.Value, c.function.Ret)
				c.assignable(c.function.Ret, t, x.Value)
			}
			break
		}
		if x.Value != nil {
			c.errorf(x.Pos, "return with a value outside a function")
		}
		if c.parser != nil {
			c.errorf(x.Pos, "return is not allowed in a parser")
		}
	case *syntax.SwitchStmt:
		t := c.expr(x.X, nil)
		switch y := t.(type) {
		case *ActionRunT:
			seen := map[*Action]bool{}
			for _, cs := range x.Cases {
				for _, l := range cs.Labels {
					if _, ok := l.(*syntax.Default); ok {
						continue
					}
					id, ok := l.(*syntax.Ident)
					var a *Action
					if ok {
						a, _ = c.sc.lookup(id.Name).(*Action)
					}
					if a == nil {
						c.errorf(l.NodePos(), "switch label must be an action of table %s", y.Table.Name)
						continue
					}
					c.info.Uses[id] = a
					found := false
					for _, ta := range y.Table.Actions {
						found = found || ta.Action == a
					}
					if !found {
						c.errorf(l.NodePos(), "action %s is not an action of table %s", a.Name, y.Table.Name)
					}
					if seen[a] {
						c.errorf(l.NodePos(), "duplicate switch label %s", a.Name)
					}
					seen[a] = true
				}
			}
		default:
			if _, ok := BitsOf(t); !ok {
				c.errorf(x.X.NodePos(), "switch expression must be t.apply().action_run or bit<N>, not %s", t)
				break
			}
			for _, cs := range x.Cases {
				for _, l := range cs.Labels {
					if _, ok := l.(*syntax.Default); ok {
						continue
					}
					c.constExpr(l, t)
				}
			}
		}
		for _, cs := range x.Cases {
			if cs.Body != nil {
				c.stmt(cs.Body)
			}
		}
	case *syntax.DeclStmt:
		switch d := x.Decl.(type) {
		case *syntax.VarDecl:
			owner := ""
			if c.control != nil {
				owner = c.control.Name
			} else if c.parser != nil {
				owner = c.parser.Name
			}
			c.varDecl(d, owner)
		case *syntax.ConstDecl:
			c.constDecl(d)
		}
	default:
		c.errorf(s.NodePos(), "unexpected statement")
	}
}

// lvalue checks that e can be written.
func (c *checker) lvalue(e syntax.Expr) {
	if bad(c.info.Types[e]) {
		return // already reported
	}
	switch x := e.(type) {
	case *syntax.Ident:
		switch v := c.info.Uses[x].(type) {
		case *Var:
			if v.Dir == "in" || (v.Kind == ActionParam && v.Dir == "") {
				c.errorf(x.Pos, "cannot assign to %s: it is read-only (direction %q)", x.Name, v.Dir)
			}
		default:
			c.errorf(x.Pos, "cannot assign to %s", x.Name)
		}
	case *syntax.Member:
		if r := c.info.Members[x]; r != nil && r.Kind == StackMember && (r.Name == "next" || r.Name == "last") {
			c.lvalue(x.X)
			return
		}
		if r := c.info.Members[x]; r == nil || r.Kind != FieldAccess {
			c.errorf(x.Pos, "cannot assign to %s", ExprString(x))
			return
		}
		c.lvalue(x.X)
	case *syntax.Slice:
		c.lvalue(x.X)
	case *syntax.Index:
		c.lvalue(x.X)
	default:
		c.errorf(e.NodePos(), "expression is not assignable")
	}
}

// assignable checks that a value of type from can be assigned to type to.
func (c *checker) assignable(to, from Type, e syntax.Expr) {
	if to == nil || from == nil || bad(to) || bad(from) {
		return
	}
	switch t := to.(type) {
	case *Bits:
		switch f := from.(type) {
		case *InfInt:
			return
		case *Bits:
			if f.W == t.W && f.Signed == t.Signed {
				return
			}
		case *Enum:
			if f.Under != nil && f.Under.W == t.W && f.Under.Signed == t.Signed {
				return // serializable enums convert implicitly to their type
			}
		}
	case *Bool:
		if _, ok := from.(*Bool); ok {
			return
		}
	case *Struct:
		if from == to {
			return
		}
		if l, ok := from.(*ListT); ok && len(l.Elems) == len(t.Fields) {
			return
		}
	case *Tuple:
		if l, ok := from.(*ListT); ok && len(l.Elems) == len(t.Elems) {
			return
		}
		if sameType(t, from) {
			return
		}
	case *TypeVar, *DontCare:
		return
	default:
		if sameType(to, from) || to == from {
			return
		}
	}
	if sameType(to, from) {
		return
	}
	c.errorf(e.NodePos(), "cannot use a value of type %s where %s is expected", from, to)
}

// ---------- expressions ----------

func (c *checker) setConst(e syntax.Expr, v *big.Int, t Type) {
	if v == nil {
		return
	}
	c.info.Consts[e] = fitTo(v, t)
}

func (c *checker) expr(e syntax.Expr, want Type) Type {
	t := c.expr1(e, want)
	if t == nil {
		t = &Invalid{}
	}
	c.info.Types[e] = t
	return t
}

func (c *checker) expr1(e syntax.Expr, want Type) Type {
	switch x := e.(type) {
	case *syntax.IntLit:
		if x.HasWidth {
			t := &Bits{W: x.Width, Signed: x.Signed}
			if x.Width < 2 && x.Signed {
				c.errorf(x.Pos, "int<1> is not allowed")
			}
			lim := new(big.Int).Lsh(big.NewInt(1), uint(x.Width))
			if x.Val.Cmp(lim) >= 0 {
				c.errorf(x.Pos, "value %s does not fit in %s", x.Val, t)
			}
			c.setConst(x, x.Val, t)
			return t
		}
		if b, ok := BitsOf(want); ok {
			if _, isBool := want.(*Bool); !isBool {
				lim := new(big.Int).Lsh(big.NewInt(1), uint(b.W))
				if x.Val.Cmp(lim) >= 0 {
					// p4c truncates an untyped literal converted to a
					// narrower bit<N> (4 / 1w1 is 0 / 1w1), with a warning
					c.warnf(x.Pos, "value %s does not fit in %s: truncated to %s", x.Val, b, fitTo(x.Val, b))
				}
				c.setConst(x, x.Val, b)
				return b
			}
		}
		c.info.Consts[x] = new(big.Int).Set(x.Val)
		return &InfInt{}
	case *syntax.BoolLit:
		if x.Value {
			c.info.Consts[x] = big.NewInt(1)
		} else {
			c.info.Consts[x] = big.NewInt(0)
		}
		return &Bool{}
	case *syntax.StringLit:
		return &Str{}
	case *syntax.Ident:
		var ent Entity
		if x.Global {
			ent = c.global.lookup(x.Name)
		} else {
			ent = c.sc.lookup(x.Name)
		}
		if ent == nil {
			c.errorf(x.Pos, "unknown name %q%s", x.Name, hint(x.Name, c.sc.visible()))
			return nil
		}
		c.info.Uses[x] = ent
		switch v := ent.(type) {
		case *Var:
			return v.Type
		case *Const:
			if _, ok := v.Type.(*InfInt); ok {
				if b, ok := want.(*Bits); ok {
					c.setConst(x, v.Val, b)
					return b
				}
			}
			c.info.Consts[x] = v.Val
			return v.Type
		case *Action:
			return &ActionT{Action: v}
		case *Table:
			return &TableT{Table: v}
		case *Instance:
			return &ExternT{Decl: v.Extern, TypeArgs: v.TypeArgs}
		case *TypeName:
			return v.Type
		case *Func:
			return &Void{}
		case *ValueSet:
			c.errorf(x.Pos, "value_set %s can only be used as a select case", x.Name)
			return nil
		case *SubControl:
			d := v.Control.Decl
			return &BlockT{Kind: "control", Name: v.Control.Name, Params: d.Params, Decl: d}
		case *Control:
			if sub := c.directApply(x, v); sub != nil { // direct.go
				c.info.Uses[x] = sub
				d := v.Decl
				return &BlockT{Kind: "control", Name: v.Name, Params: d.Params, Decl: d}
			}
		case *SubParser:
			d := v.Parser.Decl
			return &BlockT{Kind: "parser", Name: v.Parser.Name, Params: d.Params, Decl: d}
		}
		c.errorf(x.Pos, "%s cannot be used in an expression", x.Name)
		return nil
	case *syntax.TypeRef:
		return c.resolveType(x.Type)
	case *syntax.Member:
		return c.member(x)
	case *syntax.Call:
		return c.call(x, want)
	case *syntax.Slice:
		xt := c.expr(x.X, nil)
		b, ok := xt.(*Bits)
		if !ok {
			if !bad(xt) {
				c.errorf(x.Pos, "cannot slice a value of type %s", xt)
			}
			return nil
		}
		hi, ok1 := c.constInt(x.Hi, "slice bound")
		lo, ok2 := c.constInt(x.Lo, "slice bound")
		if !ok1 || !ok2 {
			return nil
		}
		if hi < lo || hi >= b.W {
			c.errorf(x.Pos, "slice [%d:%d] is out of range for %s", hi, lo, b)
			return nil
		}
		t := &Bits{W: hi - lo + 1}
		if v, ok := c.info.Consts[x.X]; ok {
			r := new(big.Int).Rsh(v, uint(lo))
			c.setConst(x, r, t)
		}
		return t
	case *syntax.Index:
		xt := c.expr(x.X, nil)
		if st, ok := xt.(*Stack); ok {
			it := c.expr(x.Index, nil)
			i, ok := c.info.Consts[x.Index]
			if !ok {
				// a run-time index: bounds-checked by the backend (P4-16
				// 8.18: out of range reads an undefined value, writes have
				// no effect; extract rejects with error.StackOutOfBounds)
				if _, isBits := it.(*Bits); !isBits && !bad(it) {
					c.errorf(x.Index.NodePos(), "a header stack index must be bit<N> or int<N>, got %s", it)
				}
				return st.Elem
			}
			if i.Sign() < 0 || i.Cmp(big.NewInt(int64(st.Size))) >= 0 {
				c.errorf(x.Pos, "index %s is out of range for %s", i, st)
				return nil
			}
			return st.Elem
		}
		tt, ok := xt.(*Tuple)
		if !ok {
			c.unsupported(x.Pos, "array indexing")
			return nil
		}
		i, ok := c.constInt(x.Index, "tuple index")
		if !ok {
			return nil
		}
		if i >= len(tt.Elems) {
			c.errorf(x.Pos, "index %d is out of range for %s", i, tt)
			return nil
		}
		return tt.Elems[i]
	case *syntax.Unary:
		return c.unary(x, want)
	case *syntax.Binary:
		return c.binary(x, want)
	case *syntax.Cond:
		ct := c.expr(x.Cond, &Bool{})
		if _, ok := ct.(*Bool); !ok {
			c.errorf(x.Cond.NodePos(), "condition has type %s, want bool", ct)
		}
		a := c.expr(x.Then, want)
		b := c.expr(x.Else, want)
		if _, ok := a.(*InfInt); ok {
			if _, ok := b.(*InfInt); ok {
				c.errorf(x.Pos, "the type of ?: cannot be inferred; cast one side to bit<N>")
				return a
			}
			a = c.expr(x.Then, b)
		}
		if _, ok := b.(*InfInt); ok {
			b = c.expr(x.Else, a)
		}
		a = c.literalAs(x.Then, a, b)
		b = c.literalAs(x.Else, b, a)
		if !sameType(a, b) {
			c.errorf(x.Pos, "the branches of ?: have different types %s and %s", a, b)
		}
		if cv, ok := c.info.Consts[x.Cond]; ok {
			av, ok1 := c.info.Consts[x.Then]
			bv, ok2 := c.info.Consts[x.Else]
			if ok1 && ok2 {
				if cv.Sign() != 0 {
					c.info.Consts[x] = av
				} else {
					c.info.Consts[x] = bv
				}
			}
		}
		return a
	case *syntax.Cast:
		to := c.resolveType(x.Type)
		from := c.expr(x.X, to)
		if bad(from) {
			return to
		}
		if v, ok := c.info.Consts[x.X]; ok {
			c.setConst(x, v, to)
		}
		switch t := to.(type) {
		case *Bits:
			switch f := from.(type) {
			case *Bits, *InfInt, *Bool:
				return t
			case *Enum:
				if f.Under != nil {
					return t
				}
			}
		case *Bool:
			if b, ok := from.(*Bits); ok && b.W == 1 {
				return t
			}
			if _, ok := from.(*Bool); ok {
				return t
			}
		case *Enum:
			if t.Under != nil {
				if _, ok := BitsOf(from); ok {
					return t
				}
				if _, ok := from.(*InfInt); ok {
					return t
				}
			}
		}
		if sameType(to, from) {
			return to
		}
		c.errorf(x.Pos, "cannot cast %s to %s", from, to)
		return to
	case *syntax.List:
		lt := &ListT{}
		var fields []Type
		switch w := want.(type) {
		case *Struct:
			for _, f := range w.Fields {
				fields = append(fields, f.Type)
			}
		case *Tuple:
			fields = w.Elems
		}
		for i, el := range x.Elems {
			var wt Type
			if i < len(fields) {
				wt = fields[i]
			}
			et := c.expr(el, wt)
			if wt != nil {
				c.assignable(wt, et, el)
			}
			lt.Elems = append(lt.Elems, et)
		}
		return lt
	case *syntax.Mask, *syntax.Range, *syntax.Default:
		c.errorf(e.NodePos(), "keyset expression outside a select case or table entry")
		return nil
	}
	c.errorf(e.NodePos(), "unsupported expression")
	return nil
}

func (c *checker) member(x *syntax.Member) Type {
	// error.X and Enum.X
	if tr, ok := x.X.(*syntax.TypeRef); ok {
		if bt, ok := tr.Type.(*syntax.BaseType); ok && bt.Kind == "error" {
			for i, n := range c.info.ErrorNames {
				if n == x.Name {
					c.info.Members[x] = &MemberRef{Kind: EnumMember, Index: i, Value: big.NewInt(int64(i))}
					c.info.Consts[x] = big.NewInt(int64(i))
					c.info.Types[x.X] = &ErrorT{}
					return &ErrorT{}
				}
			}
			c.errorf(x.Pos, "unknown error %q", x.Name)
			return nil
		}
	}
	if id, ok := x.X.(*syntax.Ident); ok {
		if tn, ok := c.sc.lookup(id.Name).(*TypeName); ok {
			c.info.Uses[id] = tn
			c.info.Types[id] = tn.Type
			if en, ok := tn.Type.(*Enum); ok {
				for i, m := range en.Members {
					if m == x.Name {
						c.info.Members[x] = &MemberRef{Kind: EnumMember, Index: i, Value: en.Values[i]}
						c.info.Consts[x] = en.Values[i]
						return en
					}
				}
				c.errorf(x.Pos, "enum %s has no member %q", en.Name, x.Name)
				return nil
			}
			c.errorf(x.Pos, "type %s has no member %q", tn.Name, x.Name)
			return nil
		}
	}
	xt := c.expr(x.X, nil)
	switch t := xt.(type) {
	case *Struct:
		if f := t.FieldByName(x.Name); f != nil {
			c.info.Members[x] = &MemberRef{Kind: FieldAccess, Field: f}
			return f.Type
		}
		if (t.Kind == "header" && (x.Name == "isValid" || x.Name == "setValid" || x.Name == "setInvalid")) || (t.Kind == "header_union" && x.Name == "isValid") {
			c.info.Members[x] = &MemberRef{Kind: MethodRef}
			return &Void{}
		}
		c.errorf(x.Pos, "%s %s has no field %q%s", t.Kind, t.Name, x.Name, hint(x.Name, fieldNames(t)))
		return nil
	case *ExternT:
		for _, m := range t.Decl.Methods {
			if m.Name == x.Name && m.Ret != nil {
				c.info.Members[x] = &MemberRef{Kind: MethodRef}
				return &Void{}
			}
		}
		c.errorf(x.Pos, "extern %s has no method %q", t.Decl.Name, x.Name)
		return nil
	case *TableT:
		if x.Name == "apply" {
			c.info.Members[x] = &MemberRef{Kind: MethodRef}
			return &Void{}
		}
		c.errorf(x.Pos, "table %s has no member %q (use %s.apply())", t.Table.Name, x.Name, t.Table.Name)
		return nil
	case *ApplyResult:
		switch x.Name {
		case "hit", "miss":
			c.info.Members[x] = &MemberRef{Kind: ApplyField}
			return &Bool{}
		case "action_run":
			c.info.Members[x] = &MemberRef{Kind: ApplyField}
			return &ActionRunT{Table: t.Table}
		}
		c.errorf(x.Pos, "the result of apply() has no member %q (hit, miss, action_run)", x.Name)
		return nil
	case *BlockT:
		if x.Name == "apply" {
			c.info.Members[x] = &MemberRef{Kind: MethodRef}
			return &Void{}
		}
	case *Stack:
		switch x.Name {
		case "next", "last", "lastIndex":
			if c.parser == nil {
				c.errorf(x.Pos, "%s.%s can only be used in a parser", ExprString(x.X), x.Name)
				return nil
			}
			c.info.Members[x] = &MemberRef{Kind: StackMember, Name: x.Name}
			if x.Name == "lastIndex" {
				return &Bits{W: 32}
			}
			return t.Elem
		case "size":
			c.info.Members[x] = &MemberRef{Kind: StackMember, Name: x.Name}
			c.setConst(x, big.NewInt(int64(t.Size)), &Bits{W: 32})
			return &Bits{W: 32}
		}
		c.errorf(x.Pos, "header stack %s has no member %q (next, last, lastIndex, size, push_front, pop_front, [i])", ExprString(x.X), x.Name)
		return nil
	case *Bits:
		c.errorf(x.Pos, "%s has no member %q", xt, x.Name)
		return nil
	}
	if !bad(xt) {
		c.errorf(x.Pos, "%s has no member %q", xt, x.Name)
	}
	return nil
}

func (c *checker) call(x *syntax.Call, want Type) Type {
	switch fn := x.Fn.(type) {
	case *syntax.Member:
		// header methods, extern methods, table apply
		xt := c.expr(fn.X, nil)
		switch t := xt.(type) {
		case *Struct:
			if t.Kind == "header_union" && fn.Name == "isValid" {
				c.info.Members[fn] = &MemberRef{Kind: MethodRef}
				c.info.Calls[x] = &CallRef{Kind: CallHeaderMethod, Method: fn.Name, Recv: fn.X}
				if len(x.Args) != 0 {
					c.errorf(x.Pos, "%s takes no arguments", fn.Name)
				}
				return &Bool{}
			}
			if t.Kind != "header" {
				break
			}
			switch fn.Name {
			case "isValid", "setValid", "setInvalid":
				c.info.Members[fn] = &MemberRef{Kind: MethodRef}
				c.info.Calls[x] = &CallRef{Kind: CallHeaderMethod, Method: fn.Name, Recv: fn.X}
				if len(x.Args) != 0 {
					c.errorf(x.Pos, "%s takes no arguments", fn.Name)
				}
				if fn.Name != "isValid" {
					c.lvalue(fn.X)
					return &Void{}
				}
				return &Bool{}
			}
			c.errorf(fn.Pos, "header %s has no method %q", t.Name, fn.Name)
			return nil
		case *Stack:
			if fn.Name != "push_front" && fn.Name != "pop_front" {
				c.errorf(fn.Pos, "header stack %s has no method %q", ExprString(fn.X), fn.Name)
				return nil
			}
			c.info.Members[fn] = &MemberRef{Kind: MethodRef}
			if len(x.Args) != 1 {
				c.errorf(x.Pos, "%s takes one argument", fn.Name)
				return &Void{}
			}
			c.expr(x.Args[0].Value, nil)
			n, ok := c.info.Consts[x.Args[0].Value]
			if !ok || n.Sign() < 0 || !n.IsInt64() {
				c.errorf(x.Args[0].Value.NodePos(), "the argument of %s must be a non-negative compile-time constant", fn.Name)
				return &Void{}
			}
			c.lvalue(fn.X)
			c.info.Calls[x] = &CallRef{Kind: CallHeaderMethod, Method: fn.Name, Recv: fn.X, Count: int(n.Int64())}
			return &Void{}
		case *TableT:
			if fn.Name != "apply" {
				c.errorf(fn.Pos, "table %s has no method %q", t.Table.Name, fn.Name)
				return nil
			}
			if c.action != nil {
				c.errorf(x.Pos, "tables cannot be applied inside actions")
			}
			c.info.Members[fn] = &MemberRef{Kind: MethodRef}
			c.info.Calls[x] = &CallRef{Kind: CallTableApply, Table: t.Table}
			return &ApplyResult{Table: t.Table}
		case *ExternT:
			var inst *Instance
			if id, ok := fn.X.(*syntax.Ident); ok {
				inst, _ = c.info.Uses[id].(*Instance)
			}
			var proto *syntax.FuncProto
			for _, m := range t.Decl.Methods {
				if m.Name == fn.Name && m.Ret != nil && arityOK(m, len(x.Args)) {
					proto = m
				}
			}
			if proto == nil {
				c.errorf(fn.Pos, "extern %s has no method %s taking %d arguments", t.Decl.Name, fn.Name, len(x.Args))
				return nil
			}
			c.info.Members[fn] = &MemberRef{Kind: MethodRef}
			c.info.Calls[x] = &CallRef{Kind: CallExternMethod, Method: fn.Name, Proto: proto, Instance: inst, Recv: fn.X}
			var ret Type
			c.withTypeParams(append(append([]string{}, t.Decl.TypeParams...), proto.TypeParams...), func() {
				c.bindExternTypeArgs(t)
				ret = c.checkArgs(x, proto)
			})
			if t.Decl.Name == "packet_in" || t.Decl.Name == "packet_out" {
				if ret != nil {
					c.info.Types[x] = ret
				}
				c.packetCall(x, t.Decl.Name, fn.Name)
			}
			return ret
		case *BlockT:
			var sub *SubControl
			if id, ok := fn.X.(*syntax.Ident); ok {
				sub, _ = c.info.Uses[id].(*SubControl)
				if sp, ok := c.info.Uses[id].(*SubParser); ok && fn.Name == "apply" {
					c.info.Members[fn] = &MemberRef{Kind: MethodRef}
					return c.applySubParser(x, sp) // subparser.go
				}
				if v, ok := c.info.Uses[id].(*Var); ok && fn.Name == "apply" && blockTypeParam(t) != nil && v.Kind == LocalVar && v.Dir == "in" {
					c.info.Members[fn] = &MemberRef{Kind: MethodRef}
					return c.applyBlockParam(x, id, t) // ctlparam.go
				}
			}
			if sub == nil || fn.Name != "apply" {
				c.unsupported(x.Pos, "applying a sub-"+t.Kind)
				return &Void{}
			}
			if c.action != nil {
				c.errorf(x.Pos, "controls cannot be applied inside actions")
			}
			c.info.Members[fn] = &MemberRef{Kind: MethodRef}
			c.info.Calls[x] = &CallRef{Kind: CallBlockApply, Sub: sub}
			params := sub.Control.Params
			if len(x.Args) != len(params) {
				c.errorf(x.Pos, "%s.apply takes %d arguments, got %d", sub.Name, len(params), len(x.Args))
				return &Void{}
			}
			for i, a := range x.Args {
				if a.Value == nil {
					c.errorf(x.Pos, "missing argument %d", i+1)
					continue
				}
				pt := params[i].Type
				if et, ok := pt.(*ExternT); ok {
					// a deparser's packet_out may be passed on: the
					// sub-control's emits are the deparser's (the backend
					// inlines it, backend/subdeparser.go)
					if at, ok := c.expr(a.Value, nil).(*ExternT); !ok || et.Decl.Name != "packet_out" || at.Decl.Name != "packet_out" {
						c.unsupported(a.Value.NodePos(), "passing "+et.Decl.Name+" to a sub-control")
					}
					continue
				}
				at := c.expr(a.Value, pt)
				c.assignable(pt, at, a.Value)
				if params[i].Dir == "out" || params[i].Dir == "inout" {
					c.lvalue(a.Value)
				}
			}
			return &Void{}
		}
		if !bad(xt) {
			c.errorf(fn.Pos, "%s has no method %q", xt, fn.Name)
		}
		return nil
	case *syntax.Ident:
		ent := c.sc.lookup(fn.Name)
		if fn.Global {
			ent = c.global.lookup(fn.Name)
		}
		c.info.Uses[fn] = ent
		switch v := ent.(type) {
		case *Action:
			if c.parser != nil {
				c.errorf(x.Pos, "actions cannot be called from a parser")
			}
			c.info.Calls[x] = &CallRef{Kind: CallAction, Action: v}
			if len(x.Args) != len(v.Params) {
				c.errorf(x.Pos, "action %s takes %d arguments, got %d", v.Name, len(v.Params), len(x.Args))
				return &Void{}
			}
			c.bindArgs(x.Args, v.Params, x.Pos)
			return &Void{}
		case *Func:
			var proto *syntax.FuncProto
			for _, p := range v.Protos {
				if arityOK(p, len(x.Args)) {
					proto = p
				}
			}
			if proto == nil {
				c.errorf(x.Pos, "no version of %s takes %d arguments", v.Name, len(x.Args))
				return nil
			}
			c.info.Calls[x] = &CallRef{Kind: CallExternFunc, Method: v.Name, Proto: proto, Func: v}
			var ret Type
			if len(x.TypeArgs) > 0 && len(x.TypeArgs) == len(proto.TypeParams) {
				// digest<T>(r, {..}), log_msg<T>(..): explicit type arguments
				ret = c.withTypeArgs(x, proto, func() Type { return c.checkArgs(x, proto) })
			} else {
				c.withTypeParams(proto.TypeParams, func() {
					ret = c.checkArgs(x, proto)
				})
			}
			if v.Name == "static_assert" {
				if len(x.Args) > 0 && x.Args[0].Value != nil {
					if cv, ok := c.info.Consts[x.Args[0].Value]; !ok {
						c.errorf(x.Pos, "static_assert needs a compile-time constant condition")
					} else if cv.Sign() == 0 {
						msg := "static assertion failed"
						if len(x.Args) > 1 {
							if sl, ok := x.Args[1].Value.(*syntax.StringLit); ok {
								msg += ": " + sl.Value
							}
						}
						c.errorf(x.Pos, "%s", msg)
					}
				}
				c.info.Consts[x] = big.NewInt(1)
				return &Bool{}
			}
			switch v.Name {
			case "mark_to_drop", "verify", "verify_checksum", "update_checksum", "hash",
				"verify_checksum_with_payload", "update_checksum_with_payload", "log_msg", "assert", "assume",
				"random", "truncate":
			case "digest": // slow path (backend/slowpath.go)
			case "clone", "clone3", "clone_preserving_field_list", "resubmit", "resubmit_preserving_field_list",
				"recirculate", "recirculate_preserving_field_list": // backend/replicate.go
			case "psa_clone_i2e", "psa_resubmit", "psa_normal", "psa_clone_e2e", "psa_recirculate": // backend/psa_replicate.go
			default:
				c.unsupported(x.Pos, "extern function "+v.Name)
			}
			if v.Name == "verify" && c.parser == nil {
				c.errorf(x.Pos, "verify can only be called in a parser")
			}
			return ret
		case *Function:
			c.info.Calls[x] = &CallRef{Kind: CallFunction, Function: v}
			if len(x.Args) != len(v.Params) {
				c.errorf(x.Pos, "function %s takes %d arguments, got %d", v.Name, len(v.Params), len(x.Args))
				return v.Ret
			}
			c.bindArgs(x.Args, v.Params, x.Pos)
			return v.Ret
		case nil:
			c.errorf(fn.Pos, "unknown function or action %q%s", fn.Name, hint(fn.Name, c.sc.visible()))
			return nil
		}
		c.errorf(fn.Pos, "%s is not callable", fn.Name)
		return nil
	}
	c.errorf(x.Pos, "this expression cannot be called")
	return nil
}

func (c *checker) bindExternTypeArgs(t *ExternT) {
	for i, n := range t.Decl.TypeParams {
		if i < len(t.TypeArgs) {
			c.sc.names[n] = &TypeName{Name: n, Type: t.TypeArgs[i]}
		}
	}
}

func arityOK(p *syntax.FuncProto, n int) bool {
	min := 0
	for _, pr := range p.Params {
		if pr.Default == nil {
			min++
		}
	}
	return n >= min && n <= len(p.Params)
}

func (c *checker) checkArgs(x *syntax.Call, proto *syntax.FuncProto) Type {
	for i, a := range x.Args {
		if i >= len(proto.Params) {
			break
		}
		pt := c.resolveType(proto.Params[i].Type)
		if _, ok := pt.(*TypeVar); ok {
			pt = nil
		}
		if a.Value == nil {
			continue
		}
		at := c.expr(a.Value, pt)
		if pt != nil {
			c.assignable(pt, at, a.Value)
		}
		if d := proto.Params[i].Dir; d == "out" || d == "inout" {
			c.lvalue(a.Value)
		}
	}
	if proto.Ret == nil {
		return &Void{}
	}
	rt := c.resolveType(proto.Ret)
	if _, ok := rt.(*TypeVar); ok {
		if len(x.TypeArgs) == 1 {
			return c.resolveType(x.TypeArgs[0])
		}
		c.unsupported(x.Pos, "generic return types without explicit type arguments")
	}
	return rt
}

func (c *checker) packetCall(x *syntax.Call, ext, method string) {
	switch {
	case ext == "packet_in" && method == "extract":
		if c.parser == nil {
			c.errorf(x.Pos, "extract can only be called in a parser")
		}
		if len(x.Args) == 0 || x.Args[0].Value == nil {
			c.extractSkip(x) // params.go
			return
		}
		if !IsHeader(c.info.Types[x.Args[0].Value]) {
			c.errorf(x.Args[0].Value.NodePos(), "extract needs a header, got %s", c.info.Types[x.Args[0].Value])
			return
		}
		c.extractVarbit(x)
	case ext == "packet_in" && (method == "lookahead" || method == "advance"):
		if c.parser == nil {
			c.errorf(x.Pos, "%s can only be called in a parser", method)
			return
		}
		if method == "lookahead" {
			c.lookaheadType(x) // params.go
			return
		}
		if v, ok := c.info.Consts[x.Args[0].Value]; ok && v.Int64()%8 != 0 {
			c.unsupported(x.Args[0].Value.NodePos(), "advance by a number of bits that is not a multiple of 8")
		}
	case ext == "packet_in" && method == "length":
		// the packet's length in bytes as the parser calling it sees it
		// (an egress parser: as the ingress deparser left it)
		if c.parser == nil {
			c.errorf(x.Pos, "length can only be called in a parser")
		}
	case ext == "packet_out" && method == "emit":
		t := c.info.Types[x.Args[0].Value]
		if _, ok := t.(*Stack); ok {
			return
		}
		if _, ok := t.(*Struct); !ok {
			c.errorf(x.Args[0].Value.NodePos(), "emit needs a header, a header_union or a struct of headers, got %s", t)
		}
	default:
		c.unsupported(x.Pos, ext+"."+method)
	}
}

func (c *checker) unary(x *syntax.Unary, want Type) Type {
	switch x.Op {
	case "!":
		t := c.expr(x.X, &Bool{})
		if _, ok := t.(*Bool); !ok && !bad(t) {
			c.errorf(x.Pos, "! needs a bool, got %s", t)
		}
		if v, ok := c.info.Consts[x.X]; ok {
			c.info.Consts[x] = big.NewInt(int64(1 - v.Int64()))
		}
		return &Bool{}
	case "-", "~":
		t := c.expr(x.X, want)
		if bad(t) {
			return t
		}
		switch tt := t.(type) {
		case *Bits:
			if v, ok := c.info.Consts[x.X]; ok {
				if x.Op == "-" {
					c.setConst(x, new(big.Int).Neg(v), tt)
				} else {
					m := new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), uint(tt.W)), big.NewInt(1))
					c.setConst(x, new(big.Int).Xor(v, m), tt)
				}
			}
			return t
		case *InfInt:
			if x.Op == "~" {
				c.errorf(x.Pos, "~ needs a value with a width; cast it to bit<N>")
				return t
			}
			if v, ok := c.info.Consts[x.X]; ok {
				c.info.Consts[x] = new(big.Int).Neg(v)
			}
			return t
		}
		c.errorf(x.Pos, "%s needs a bit<N> or int<N>, got %s", x.Op, t)
		return t
	}
	return nil
}

func (c *checker) binary(x *syntax.Binary, want Type) Type {
	switch x.Op {
	case "&&", "||":
		a := c.expr(x.X, &Bool{})
		b := c.expr(x.Y, &Bool{})
		if bad(a) || bad(b) {
			return &Bool{}
		}
		if _, ok := a.(*Bool); !ok {
			c.errorf(x.X.NodePos(), "%s needs bool operands, got %s", x.Op, a)
		}
		if _, ok := b.(*Bool); !ok {
			c.errorf(x.Y.NodePos(), "%s needs bool operands, got %s", x.Op, b)
		}
		av, ok1 := c.info.Consts[x.X]
		bv, ok2 := c.info.Consts[x.Y]
		if ok1 && ok2 {
			r := av.Sign() != 0 && bv.Sign() != 0
			if x.Op == "||" {
				r = av.Sign() != 0 || bv.Sign() != 0
			}
			c.info.Consts[x] = boolInt(r)
		}
		return &Bool{}
	case "<<", ">>":
		a := c.expr(x.X, want)
		b := c.expr(x.Y, nil)
		if bb, ok := b.(*Bits); ok && bb.Signed {
			c.errorf(x.Y.NodePos(), "shift amount must be unsigned")
		}
		av, ok1 := c.info.Consts[x.X]
		bv, ok2 := c.info.Consts[x.Y]
		if ok1 && ok2 && bv.IsInt64() && bv.Int64() < 4096 {
			if x.Op == "<<" {
				c.setConst(x, new(big.Int).Lsh(av, uint(bv.Int64())), a)
			} else {
				if ab, ok := a.(*Bits); ok && ab.Signed {
					av = signed(av, ab.W) // >> of int<N> is arithmetic
				}
				c.setConst(x, new(big.Int).Rsh(av, uint(bv.Int64())), a)
			}
		}
		if _, ok := a.(*Bits); !ok {
			if _, ok := a.(*InfInt); !ok {
				c.errorf(x.Pos, "cannot shift a value of type %s", a)
			}
		}
		return a
	case "++":
		a := c.expr(x.X, nil)
		b := c.expr(x.Y, nil)
		ab, ok1 := a.(*Bits)
		bb, ok2 := b.(*Bits)
		if bad(a) || bad(b) {
			return &Invalid{}
		}
		if !ok1 || !ok2 {
			c.errorf(x.Pos, "++ needs bit<N> operands with known widths, got %s and %s", a, b)
			return nil
		}
		t := &Bits{W: ab.W + bb.W, Signed: ab.Signed}
		av, ok1 := c.info.Consts[x.X]
		bv, ok2 := c.info.Consts[x.Y]
		if ok1 && ok2 {
			c.setConst(x, new(big.Int).Or(new(big.Int).Lsh(av, uint(bb.W)), bv), t)
		}
		return t
	}
	// arithmetic, bitwise, comparisons: unify operand types
	var ow Type
	if !isCompare(x.Op) {
		ow = want
	}
	a := c.expr(x.X, ow)
	b := c.expr(x.Y, a)
	if bad(a) || bad(b) {
		return boolIf(isCompare(x.Op), &Invalid{})
	}
	if _, ok := a.(*InfInt); ok {
		if _, ok := b.(*InfInt); !ok {
			a = c.expr(x.X, b)
		}
	}
	a = c.literalAs(x.X, a, b)
	if ea, ok := a.(*Enum); ok && ea.Under != nil {
		if _, ok := b.(*Bits); ok {
			a = ea.Under
		}
	}
	if eb, ok := b.(*Enum); ok && eb.Under != nil {
		if _, ok := a.(*Bits); ok {
			b = eb.Under
		}
	}
	var t Type
	switch {
	case sameType(a, b):
		t = a
	default:
		ea, ok1 := a.(*Enum)
		eb, ok2 := b.(*Enum)
		if ok1 && ok2 && ea == eb {
			t = a
		} else {
			c.errorf(x.Pos, "operands of %s have different types %s and %s (cast one of them)", x.Op, a, b)
			return boolIf(isCompare(x.Op), a)
		}
	}
	switch x.Op {
	case "==", "!=":
		switch t.(type) {
		case *Bits, *InfInt, *Bool, *Enum, *ErrorT, *Struct, *Stack, *Varbit:
		default:
			c.unsupported(x.Pos, "comparing values of type "+t.String())
		}
	case "<", ">", "<=", ">=", "+", "-", "*", "/", "%", "|+|", "|-|", "&", "|", "^":
		switch t.(type) {
		case *Bits, *InfInt:
		default:
			c.errorf(x.Pos, "%s needs bit<N> or int<N> operands, got %s", x.Op, t)
		}
	}
	if bt, ok := t.(*Bits); ok && bt.W > 64 {
		c.wideOperator(x.Pos, x.Op, bt) // wide.go
	}
	av, ok1 := c.info.Consts[x.X]
	bv, ok2 := c.info.Consts[x.Y]
	if ok1 && ok2 {
		if r := foldBinary(x.Op, av, bv, t); r != nil {
			if isCompare(x.Op) {
				c.info.Consts[x] = r
			} else {
				c.setConst(x, r, t)
			}
		}
	}
	if isCompare(x.Op) {
		return &Bool{}
	}
	return t
}

// literalAs retypes e, of type t, as other when the two differ and e is an
// integer literal expression the context typed (the width of a cast around
// the whole expression, say): a literal takes its type from the operand
// beside it, as p4c types (bit<32>)(4 * (bit<9>)x) and c ? 2 : 3w1.
func (c *checker) literalAs(e syntax.Expr, t, other Type) Type {
	ob, ok := other.(*Bits)
	if !ok || sameType(t, other) || !untypedLiteral(e) {
		return t
	}
	if _, ok := t.(*Bits); !ok {
		return t
	}
	return c.expr(e, ob)
}

// untypedLiteral reports whether e is built of integer literals without a
// width (4, -(2 + 1)) only.
func untypedLiteral(e syntax.Expr) bool {
	switch x := e.(type) {
	case *syntax.IntLit:
		return !x.HasWidth
	case *syntax.Unary:
		return untypedLiteral(x.X)
	case *syntax.Binary:
		return untypedLiteral(x.X) && untypedLiteral(x.Y)
	}
	return false
}

func boolIf(cmp bool, t Type) Type {
	if cmp {
		return &Bool{}
	}
	return t
}

func isCompare(op string) bool {
	switch op {
	case "==", "!=", "<", ">", "<=", ">=":
		return true
	}
	return false
}

func boolInt(b bool) *big.Int {
	if b {
		return big.NewInt(1)
	}
	return big.NewInt(0)
}

func foldBinary(op string, a, b *big.Int, t Type) *big.Int {
	sa, sb := a, b
	if bt, ok := t.(*Bits); ok && bt.Signed {
		sa, sb = signed(a, bt.W), signed(b, bt.W)
	}
	switch op {
	case "+":
		return new(big.Int).Add(a, b)
	case "-":
		return new(big.Int).Sub(a, b)
	case "*":
		return new(big.Int).Mul(a, b)
	case "/":
		if b.Sign() == 0 {
			return nil
		}
		return new(big.Int).Quo(a, b)
	case "%":
		if b.Sign() == 0 {
			return nil
		}
		return new(big.Int).Rem(a, b)
	case "&":
		return new(big.Int).And(a, b)
	case "|":
		return new(big.Int).Or(a, b)
	case "^":
		return new(big.Int).Xor(a, b)
	case "==":
		return boolInt(a.Cmp(b) == 0)
	case "!=":
		return boolInt(a.Cmp(b) != 0)
	case "<":
		return boolInt(sa.Cmp(sb) < 0)
	case ">":
		return boolInt(sa.Cmp(sb) > 0)
	case "<=":
		return boolInt(sa.Cmp(sb) <= 0)
	case ">=":
		return boolInt(sa.Cmp(sb) >= 0)
	case "|+|", "|-|":
		if bt, ok := t.(*Bits); ok && bt.Signed {
			return satSigned(op, sa, sb, bt.W)
		}
	}
	switch op {
	case "|+|":
		r := new(big.Int).Add(a, b)
		if bt, ok := t.(*Bits); ok && !bt.Signed {
			max := new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), uint(bt.W)), big.NewInt(1))
			if r.Cmp(max) > 0 {
				return max
			}
		}
		return r
	case "|-|":
		r := new(big.Int).Sub(a, b)
		if bt, ok := t.(*Bits); ok && !bt.Signed && r.Sign() < 0 {
			return new(big.Int)
		}
		return r
	}
	return nil
}

// satSigned is a |+| b or a |-| b on int<w> values, clamped to the range of
// int<w>, in w bits (two's complement).
func satSigned(op string, a, b *big.Int, w int) *big.Int {
	r := new(big.Int).Add(a, b)
	if op == "|-|" {
		r.Sub(a, b)
	}
	max := new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), uint(w-1)), big.NewInt(1))
	min := new(big.Int).Neg(new(big.Int).Lsh(big.NewInt(1), uint(w-1)))
	if r.Cmp(max) > 0 {
		r = max
	} else if r.Cmp(min) < 0 {
		r = min
	}
	return r.And(r, new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), uint(w)), big.NewInt(1)))
}

func signed(v *big.Int, w int) *big.Int {
	half := new(big.Int).Lsh(big.NewInt(1), uint(w-1))
	if v.Cmp(half) >= 0 {
		return new(big.Int).Sub(v, new(big.Int).Lsh(big.NewInt(1), uint(w)))
	}
	return v
}
