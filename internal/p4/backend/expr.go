package backend

import (
	"fmt"
	"math/big"
	"strings"

	"github.com/edgenf/edgenf/internal/p4/sema"
	"github.com/edgenf/edgenf/internal/p4/syntax"
)

// lval returns a C lvalue for e (a variable, field or parameter).
func (g *gen) lval(e syntax.Expr) string {
	switch x := e.(type) {
	case *syntax.Ident:
		if v, ok := g.info.Uses[x].(*sema.Var); ok {
			if c, ok := g.lv[v]; ok {
				return c
			}
			g.errorf(x.Pos, "internal: variable %s has no storage", x.Name)
			return "0"
		}
	case *syntax.Member:
		if r := g.info.Members[x]; r != nil && r.Kind == sema.FieldAccess {
			return g.lval(x.X) + ".f_" + x.Name
		}
		if r := g.info.Members[x]; r != nil && r.Kind == sema.StackMember {
			hs, _ := g.typeOf(x.X).(*sema.Stack)
			if hs == nil {
				break
			}
			s := g.lval(x.X)
			switch r.Name {
			case "next":
				return fmt.Sprintf("%s.e[P4_IDX(%s.next, %d)]", s, s, hs.Size)
			case "last":
				return fmt.Sprintf("%s.e[P4_IDX(%s.next - 1, %d)]", s, s, hs.Size)
			}
		}
	case *syntax.Call:
		if cr := g.info.Calls[x]; cr != nil && cr.Kind == sema.CallFunction && !scalarRet(cr.Function.Ret) {
			return g.callFunction(x, cr.Function) // calls.go
		}
		if cr := g.info.Calls[x]; cr != nil && cr.Kind == sema.CallExternMethod && cr.Method == "lookahead" && g.inParser {
			if st, ok := g.typeOf(x).(*sema.Struct); ok {
				return g.lookaheadValue(x, st) // lookahead.go
			}
		}
	case *syntax.Index:
		if hs, ok := g.typeOf(x.X).(*sema.Stack); ok {
			if i, ok := g.info.Consts[x.Index]; ok {
				return fmt.Sprintf("%s.e[%d]", g.lval(x.X), i.Int64())
			}
			return g.stackAt(x, hs) // stacks.go
		}
		if _, ok := g.typeOf(x.X).(*sema.Tuple); ok {
			return fmt.Sprintf("%s.f%d", g.lval(x.X), g.info.Consts[x.Index].Int64())
		}
	}
	g.errorf(e.NodePos(), "expression %s cannot be used as a location here", sema.ExprString(e))
	return "0"
}

func (g *gen) typeOf(e syntax.Expr) sema.Type { return g.info.Types[e] }

// rv returns a C expression (of integer type, value < 2^W) for a scalar P4 expression.
func (g *gen) rv(e syntax.Expr) string {
	t := g.typeOf(e)
	if v, ok := g.info.Consts[e]; ok {
		if w := width(t); w > 0 && w <= 64 {
			return cint(new(big.Int).And(v, new(big.Int).SetUint64(^uint64(0)>>(64-uint(w)))))
		}
		return cint(v)
	}
	if isWide(t) {
		g.unsupported(e.NodePos(), "this use of a value wider than 64 bits (only assignment, ==, !=, slices, table keys and action parameters are supported)")
		return "0"
	}
	switch x := e.(type) {
	case *syntax.Ident:
		return g.lval(x)
	case *syntax.Index:
		return g.lval(x)
	case *syntax.Member:
		r := g.info.Members[x]
		if r == nil {
			break
		}
		switch r.Kind {
		case sema.FieldAccess:
			return g.lval(x)
		case sema.StackMember:
			if r.Name == "lastIndex" {
				// nextIndex - 1 (all ones, an error in P4, when nothing was extracted)
				return fmt.Sprintf("((__u32)(%s.next - 1))", g.lval(x.X))
			}
		case sema.ApplyField:
			call, ok := x.X.(*syntax.Call)
			if !ok {
				break
			}
			res := g.applyTable(call)
			switch x.Name {
			case "hit":
				return res + ".hit"
			case "miss":
				return "(!" + res + ".hit)"
			}
		}
	case *syntax.Call:
		cr := g.info.Calls[x]
		if cr != nil && cr.Kind == sema.CallHeaderMethod && cr.Method == "isValid" {
			return g.validExpr(cr.Recv)
		}
		if cr != nil && cr.Kind == sema.CallFunction {
			return "(" + g.callFunction(x, cr.Function) + " & " + mask(width(t)) + ")"
		}
		if cr != nil && cr.Kind == sema.CallExternMethod && cr.Method == "lookahead" && g.inParser {
			if et, ok := g.typeOf(cr.Recv).(*sema.ExternT); ok && et.Decl.Name == "packet_in" {
				return g.lookahead(x)
			}
		}
		if cr != nil && cr.Kind == sema.CallExternMethod && cr.Method == "length" && g.inParser {
			if et, ok := g.typeOf(cr.Recv).(*sema.ExternT); ok && et.Decl.Name == "packet_in" {
				return "((__u64)p4_plen(ctx))" // packet_in.length(): the whole packet, in bytes
			}
		}
		if cr != nil && cr.Kind == sema.CallExternFunc {
			if v, ok := g.psaPathFunc(x, cr); ok { // psa_replicate.go
				return v
			}
		}
		if cr != nil && cr.Kind == sema.CallExternMethod && cr.Instance != nil {
			if v, ok := g.psaExternValue(x, cr); ok { // psa_externs.go
				return v
			}
		}
		if cr != nil {
			g.unsupported(x.Pos, "a call in an expression")
			return "0"
		}
	case *syntax.Slice:
		hi := int(g.info.Consts[x.Hi].Int64())
		lo := int(g.info.Consts[x.Lo].Int64())
		n := hi - lo + 1
		xt := g.typeOf(x.X)
		if isWide(xt) {
			wd := width(xt)
			return unpack(g.wref(x.X), wd-1-hi, n)
		}
		return fmt.Sprintf("((%s >> %d) & %s)", g.rv(x.X), lo, mask(n))
	case *syntax.Unary:
		w := width(t)
		switch x.Op {
		case "!":
			return "(!" + g.rv(x.X) + ")"
		case "~":
			return fmt.Sprintf("((~(__u64)%s) & %s)", g.rv(x.X), mask(w))
		case "-":
			return fmt.Sprintf("((-(__u64)%s) & %s)", g.rv(x.X), mask(w))
		}
	case *syntax.Binary:
		return g.binary(x, t)
	case *syntax.Cond:
		if g.hasEffects(x.Then) || g.hasEffects(x.Else) {
			return g.condEffects(x) // effects.go
		}
		return fmt.Sprintf("(%s ? %s : %s)", g.rv(x.Cond), g.rv(x.Then), g.rv(x.Else))
	case *syntax.Cast:
		from := g.typeOf(x.X)
		if isWide(from) { // the low bits of a wide value
			if w := width(t); w > 0 {
				return unpack(g.wref(x.X), width(from)-w, w)
			}
		}
		v := g.rv(x.X)
		switch to := t.(type) {
		case *sema.Bool:
			return "(" + v + " != 0)"
		case *sema.Bits:
			fb, ok := sema.BitsOf(from)
			if ok && fb.Signed && to.W > fb.W {
				return fmt.Sprintf("((__u64)P4_SEXT(%s, %d) & %s)", v, fb.W, mask(to.W))
			}
			if ok && fb.W <= to.W {
				return v
			}
			return fmt.Sprintf("((__u64)%s & %s)", v, mask(to.W))
		case *sema.Enum:
			return v
		}
	}
	g.unsupported(e.NodePos(), "expression "+sema.ExprString(e))
	return "0"
}

func (g *gen) binary(x *syntax.Binary, t sema.Type) string {
	ot := g.typeOf(x.X)
	if ot != nil {
		if _, ok := ot.(*sema.InfInt); ok {
			ot = g.typeOf(x.Y)
		}
	}
	if x.Op == "==" || x.Op == "!=" {
		if eq, ok := g.structuredEq(x, ot); ok { // equality.go
			return eq
		}
	}
	if isWide(ot) {
		switch x.Op {
		case "<", ">", "<=", ">=":
			return g.wideCompare(x, ot) // wide.go
		}
	}
	if (x.Op == "==" || x.Op == "!=") && isWide(ot) {
		n := width(ot) / 8
		eq := fmt.Sprintf("p4_memeq(%s, %s, %d)", g.wref(x.X), g.wref(x.Y), n)
		if x.Op == "!=" {
			return "(!" + eq + ")"
		}
		return eq
	}
	if (x.Op == "&&" || x.Op == "||") && g.hasEffects(x.Y) {
		return g.shortCircuit(x) // effects.go
	}
	a := g.rv(x.X)
	if g.hasEffects(x.Y) {
		a = g.settle(a) // effects.go: a is read before b's effects
	}
	b := g.rv(x.Y)
	w := width(t)
	ob, _ := sema.BitsOf(ot)
	signed := ob != nil && ob.Signed
	switch x.Op {
	case "&&", "||", "&", "|", "^":
		return fmt.Sprintf("(%s %s %s)", a, x.Op, b)
	case "==", "!=":
		return fmt.Sprintf("(%s %s %s)", a, x.Op, b)
	case "<", ">", "<=", ">=":
		if signed {
			return fmt.Sprintf("(P4_SEXT(%s, %d) %s P4_SEXT(%s, %d))", a, ob.W, x.Op, b, ob.W)
		}
		return fmt.Sprintf("((__u64)%s %s (__u64)%s)", a, x.Op, b)
	case "+", "-", "*":
		return fmt.Sprintf("(((__u64)%s %s (__u64)%s) & %s)", a, x.Op, b, mask(w))
	case "/", "%":
		if signed {
			g.unsupported(x.Pos, "signed division")
		}
		return fmt.Sprintf("((__u64)%s %s (__u64)%s)", a, x.Op, b)
	case "<<", ">>":
		lw := width(t)
		var shifted string
		if x.Op == "<<" {
			shifted = fmt.Sprintf("(((__u64)%s << %s) & %s)", a, b, mask(lw))
		} else if signed {
			shifted = fmt.Sprintf("((__u64)(P4_SEXT(%s, %d) >> %s) & %s)", a, lw, b, mask(lw))
		} else {
			shifted = fmt.Sprintf("((__u64)%s >> %s)", a, b)
		}
		if c, ok := g.info.Consts[x.Y]; ok {
			if c.Cmp(big.NewInt(int64(lw))) >= 0 || c.Cmp(big.NewInt(63)) > 0 {
				if signed && x.Op == ">>" {
					return fmt.Sprintf("((__u64)(P4_SEXT(%s, %d) >> 63) & %s)", a, lw, mask(lw))
				}
				return "0ULL"
			}
			return shifted
		}
		past := "0ULL" // shifted by the width or more: 0, or the sign everywhere
		if signed && x.Op == ">>" {
			past = fmt.Sprintf("((__u64)(P4_SEXT(%s, %d) >> 63) & %s)", a, lw, mask(lw))
		}
		return fmt.Sprintf("((__u64)%s >= %d ? %s : %s)", b, min(lw, 64), past, shifted)
	case "++":
		wb := width(g.typeOf(x.Y))
		if w > 64 {
			g.unsupported(x.Pos, "concatenation wider than 64 bits")
			return "0"
		}
		return fmt.Sprintf("(((__u64)%s << %d) | %s)", a, wb, b)
	case "|+|", "|-|":
		if signed {
			return fmt.Sprintf("p4_sat_sadd(P4_SEXT(%s, %d), P4_SEXT(%s, %d), %d, %d)", a, w, b, w, b2i(x.Op == "|-|"), w)
		}
		if x.Op == "|+|" {
			return fmt.Sprintf("p4_sat_add(%s, %s, %s)", a, b, mask(w))
		}
		return fmt.Sprintf("((__u64)%s > (__u64)%s ? (__u64)%s - (__u64)%s : 0ULL)", a, b, a, b)
	}
	g.unsupported(x.Pos, "operator "+x.Op)
	return "0"
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// wref returns a C expression pointing at the big-endian bytes of a wide value.
func (g *gen) wref(e syntax.Expr) string {
	t := g.typeOf(e)
	n := (width(t) + 7) / 8
	if v, ok := g.info.Consts[e]; ok {
		return byteLiteral(v, n)
	}
	switch e.(type) {
	case *syntax.Ident, *syntax.Member, *syntax.Index, *syntax.Call:
		return "(" + g.lval(e) + ")"
	}
	if p, ok := g.wideValue(e); ok { // wide.go
		return p
	}
	g.unsupported(e.NodePos(), "this expression on a value wider than 64 bits")
	return "(__u8 *)0"
}

func byteLiteral(v *big.Int, n int) string {
	b := make([]byte, n)
	v.FillBytes(b)
	var parts []string
	for _, x := range b {
		parts = append(parts, fmt.Sprintf("0x%02x", x))
	}
	return "((__u8[]){" + strings.Join(parts, ", ") + "})"
}

// flatSlice is a slice of slices (x[7:4][3:0]) as one slice of the value
// that is not a slice: that value and the bits, counted from its own bit 0.
func (g *gen) flatSlice(sl *syntax.Slice) (base syntax.Expr, hi, lo int) {
	hi, lo = int(g.info.Consts[sl.Hi].Int64()), int(g.info.Consts[sl.Lo].Int64())
	base = sl.X
	for {
		in, ok := base.(*syntax.Slice)
		if !ok {
			return base, hi, lo
		}
		off := int(g.info.Consts[in.Lo].Int64())
		hi, lo, base = hi+off, lo+off, in.X
	}
}

// assign emits lhs = rhs for any supported type.
func (g *gen) assign(lhs syntax.Expr, rhs syntax.Expr, op string) {
	lt := g.typeOf(lhs)
	if sl, ok := lhs.(*syntax.Slice); ok {
		base, hi, lo := g.flatSlice(sl)
		n := hi - lo + 1
		v := g.rv(rhs)
		if op != "=" && op != "" {
			v = fmt.Sprintf("(((__u64)%s %s (__u64)%s) & %s)", g.rv(sl), strings.TrimSuffix(op, "="), v, mask(n))
		}
		xt := g.typeOf(base)
		if isWide(xt) {
			g.line("%s", pack(g.wref(base), width(xt)-1-hi, n, v))
			return
		}
		tgt := g.lval(base)
		g.line("%s = (%s & ~(%s << %d)) | (((__u64)%s & %s) << %d);", tgt, tgt, mask(n), lo, v, mask(n), lo)
		return
	}
	tgt := g.lval(lhs)
	switch t := lt.(type) {
	case *sema.Tuple:
		g.assignTo(tgt, t, rhs)
		return
	case *sema.Struct:
		if l, ok := rhs.(*syntax.List); ok {
			for i, f := range t.Fields {
				if i < len(l.Elems) {
					g.assignTo(tgt+".f_"+f.Name, f.Type, l.Elems[i])
				}
			}
			if t.Kind == "header" {
				g.line("%s.valid = 1;", tgt)
				g.unionInvalidateOthers(lhs, "")
			}
			return
		}
		g.line("%s = %s;", tgt, g.lval(rhs))
		if t.Kind == "header" {
			g.unionInvalidateOthers(lhs, tgt+".valid")
		}
		return
	}
	if op != "=" && op != "" && isWide(lt) {
		// x op= y as x = x op y, computed in a scratch array (wide.go)
		bin := &syntax.Binary{Pos: rhs.NodePos(), Op: strings.TrimSuffix(op, "="), X: lhs, Y: rhs}
		g.info.Types[bin] = lt
		g.line("p4_memcpy(%s, %s, %d);", tgt, g.wref(bin), width(lt)/8)
		return
	}
	if op != "=" && op != "" {
		bop := strings.TrimSuffix(op, "=")
		v := g.rv(rhs)
		w := width(lt)
		g.line("%s = ((__u64)%s %s (__u64)%s) & %s;", tgt, tgt, bop, v, mask(w))
		return
	}
	g.assignTo(tgt, lt, rhs)
}

func (g *gen) assignTo(tgt string, lt sema.Type, rhs syntax.Expr) {
	if tt, ok := lt.(*sema.Tuple); ok {
		if l, ok := rhs.(*syntax.List); ok {
			for i, el := range tt.Elems {
				if i < len(l.Elems) {
					g.assignTo(fmt.Sprintf("%s.f%d", tgt, i), el, l.Elems[i])
				}
			}
			return
		}
		g.line("%s = %s;", tgt, g.lval(rhs))
		return
	}
	if isWide(lt) {
		g.line("p4_memcpy(%s, %s, %d);", tgt, g.wref(rhs), width(lt)/8)
		return
	}
	if st, ok := lt.(*sema.Struct); ok {
		if l, ok := rhs.(*syntax.List); ok {
			for i, f := range st.Fields {
				if i < len(l.Elems) {
					g.assignTo(tgt+".f_"+f.Name, f.Type, l.Elems[i])
				}
			}
			if st.Kind == "header" {
				g.line("%s.valid = 1;", tgt) // a header initialized from a list is valid
			}
			return
		}
		g.line("%s = %s;", tgt, g.lval(rhs))
		return
	}
	g.line("%s = %s;", tgt, g.rv(rhs))
}
