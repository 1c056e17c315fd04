package backend

// Calls with P4's copy-in/copy-out semantics (P4-16 6.8): actions and
// functions give each directional parameter storage of its own in
// p4_state; a call copies the in and inout arguments in, runs, and copies
// the out and inout parameters back into the arguments, also when the
// callee exits. Action data (directionless action parameters) stays a C
// argument: tables pass it from their entries.

import (
	"fmt"
	"strings"

	"github.com/edgenf/edgenf/internal/p4/ir"
	"github.com/edgenf/edgenf/internal/p4/sema"
	"github.com/edgenf/edgenf/internal/p4/syntax"
)

// paramStorage is the C lvalue of a directional parameter's storage.
func (g *gen) paramStorage(p *sema.Var) string { return g.localStorage(p, p.Pos) }

// copyIn copies arguments into the parameters ps (a function's
// directionless parameters are in parameters). An out parameter starts
// with its headers invalid (P4-16 6.8: an out header is invalid until
// written).
func (g *gen) copyIn(ps []*sema.Var, args []syntax.Expr) {
	for i, p := range ps {
		if i >= len(args) || args[i] == nil {
			continue
		}
		slot := g.paramStorage(p)
		if p.Dir == "out" {
			g.invalidate(slot, p.Type)
			continue
		}
		g.assignTo(slot, p.Type, args[i])
	}
}

// copyOut copies the out and inout parameters ps back into their arguments.
func (g *gen) copyOut(ps []*sema.Var, args []syntax.Expr) {
	for i, p := range ps {
		if i >= len(args) || args[i] == nil || (p.Dir != "out" && p.Dir != "inout") {
			continue
		}
		g.store(args[i], g.paramStorage(p), p.Type)
	}
}

// store emits lhs = the C value at src (of P4 type t).
func (g *gen) store(lhs syntax.Expr, src string, t sema.Type) {
	if sl, ok := lhs.(*syntax.Slice); ok {
		g.storeSlice(sl, src)
		return
	}
	if isWide(t) {
		g.line("p4_memcpy(%s, %s, %d);", g.lval(lhs), src, width(t)/8)
		return
	}
	g.line("%s = %s;", g.lval(lhs), src)
}

// storeSlice emits x[hi:lo] = v.
func (g *gen) storeSlice(sl *syntax.Slice, v string) {
	hi := int(g.info.Consts[sl.Hi].Int64())
	lo := int(g.info.Consts[sl.Lo].Int64())
	n := hi - lo + 1
	xt := g.typeOf(sl.X)
	if isWide(xt) {
		g.line("%s", pack(g.wref(sl.X), width(xt)-1-hi, n, v))
		return
	}
	if inner, ok := sl.X.(*syntax.Slice); ok {
		// n[7:4][3:0] = v: read-modify-write of the outer slice
		cur := g.newTmp("sl")
		g.line("__u64 %s = %s;", cur, g.rv(inner))
		g.line("%s = (%s & ~(%s << %d)) | (((__u64)%s & %s) << %d);", cur, cur, mask(n), lo, v, mask(n), lo)
		g.storeSlice(inner, cur)
		return
	}
	tgt := g.lval(sl.X)
	g.line("%s = (%s & ~(%s << %d)) | (((__u64)%s & %s) << %d);", tgt, tgt, mask(n), lo, v, mask(n), lo)
}

// invalidate marks every header in the value at c (of type t) invalid.
func (g *gen) invalidate(c string, t sema.Type) {
	switch x := t.(type) {
	case *sema.Struct:
		if x.Kind == "header" {
			g.line("%s.valid = 0;", c)
			return
		}
		for _, f := range x.Fields {
			g.invalidate(c+".f_"+f.Name, f.Type)
		}
	case *sema.Stack:
		for i := 0; i < x.Size; i++ {
			g.invalidate(fmt.Sprintf("%s.e[%d]", c, i), x.Elem)
		}
		g.line("%s.next = 0;", c)
	}
}

func exprs(args []syntax.Arg) []syntax.Expr {
	var es []syntax.Expr
	for _, a := range args {
		es = append(es, a.Value)
	}
	return es
}

// invokeAction emits a call of action a with its directional arguments dir
// and its action data, then the statement then (which may use e, the
// action's result: 1 if it exited).
func (g *gen) invokeAction(a *sema.Action, dir []syntax.Expr, data []string, then string) {
	g.line("{")
	g.indent++
	if g.psaAction(a, dir) { // psa.go: psa.p4's own actions, on their arguments
		g.line("int e = 0;")
		g.line("%s", then)
		g.indent--
		g.line("}")
		return
	}
	ps := a.Directional()
	g.copyIn(ps, dir)
	g.line("int e = %s(%s);", actName(a), strings.Join(append([]string{"ctx", "s"}, data...), ", "))
	g.copyOut(ps, dir)
	g.line("%s", then)
	g.indent--
	g.line("}")
}

// tableAction runs action a for table t: the table's action list binds the
// directional parameters, data comes from the entry or the default.
func (g *gen) tableAction(t *ir.Table, a *sema.Action, data []string) {
	var dir []syntax.Expr
	for _, ta := range t.Ent.Actions {
		if ta.Action == a {
			dir = exprs(ta.Args)
		}
	}
	g.invokeAction(a, dir, data, "return e;")
}

// directAction is a call of an action from a control's apply block or
// another action.
func (g *gen) directAction(call *syntax.Call, a *sema.Action) {
	args := exprs(call.Args)
	nd := len(a.Directional())
	var data []string
	for i, e := range args[nd:] {
		if isWide(a.DataParams[i].Type) {
			data = append(data, g.wref(e))
		} else {
			data = append(data, g.rv(e))
		}
	}
	g.invokeAction(a, args[:nd], data, "if (e)\n"+strings.Repeat("\t", g.indent+1)+"\treturn 1;")
}

func fnName(f *sema.Function) string { return "fn_" + ir.Sanitize(f.Name) }

// scalarRet reports whether a function returns its value as a C __u64;
// other values are returned in storage of the function's own.
func scalarRet(t sema.Type) bool { w := width(t); return w > 0 && w <= 64 && !isStructLike(t) }

func isStructLike(t sema.Type) bool {
	switch t.(type) {
	case *sema.Struct, *sema.Tuple, *sema.Stack:
		return true
	}
	return false
}

// retStorage is the storage of a non-scalar function's return value.
func (g *gen) retStorage(f *sema.Function) string {
	if c, ok := g.rets[f]; ok {
		return c
	}
	if g.rets == nil {
		g.rets = map[*sema.Function]string{}
	}
	name := "ret_" + ir.Sanitize(f.Name)
	g.state = append(g.state, g.decl(f.Ret, name, f.Decl.Proto.Pos))
	g.rets[f] = "s->" + name
	return g.rets[f]
}

// function emits a P4 function as a C function over p4_state: its
// parameters live in their storage (copied in and out by the caller).
func (g *gen) function(f *sema.Function) {
	ret := "int"
	_, void := f.Ret.(*sema.Void)
	switch {
	case void:
	case scalarRet(f.Ret):
		ret = "__u64"
	default:
		g.retStorage(f)
	}
	for _, p := range f.Params {
		g.paramStorage(p)
	}
	g.line("/* function %s */", comment(f.Name))
	g.line("static __always_inline %s %s(ctx_t *ctx, struct p4_state *s)", ret, fnName(f))
	g.line("{")
	g.indent++
	g.inFunction = f
	for _, s := range f.Decl.Body.Stmts {
		g.stmt(s)
	}
	g.inFunction = nil
	g.line("return 0;")
	g.indent--
	g.line("}")
	g.line("")
}

// returnValue emits return v from the function being generated.
func (g *gen) returnValue(v syntax.Expr) {
	f := g.inFunction
	if scalarRet(f.Ret) {
		g.line("return %s;", g.rv(v))
		return
	}
	g.assignTo(g.retStorage(f), f.Ret, v)
	g.line("return 0;")
}

// callFunction emits a call of f (copy-in, call, copy-out) and returns a C
// expression for its result: a temporary for scalars, the function's
// return storage for other values (read it before f is called again).
func (g *gen) callFunction(call *syntax.Call, f *sema.Function) string {
	args := exprs(call.Args)
	g.copyIn(f.Params, args)
	res := ""
	switch {
	case scalarRet(f.Ret):
		res = g.newTmp("fr")
		g.line("__u64 %s = %s(ctx, s);", res, fnName(f))
	default:
		g.line("%s(ctx, s);", fnName(f))
		if _, void := f.Ret.(*sema.Void); !void {
			res = g.retStorage(f)
		}
	}
	g.copyOut(f.Params, args)
	return res
}

// localInits runs the initializers of a parser's or control's variables
// (bit<8> c = 12;) each time the block starts.
func (g *gen) localInits(decls []syntax.Decl) {
	for _, d := range decls {
		if vd, ok := d.(*syntax.VarDecl); ok && vd.Init != nil {
			if v, ok := g.info.Decls[vd].(*sema.Var); ok {
				g.assignTo(g.localStorage(v, vd.Pos), v.Type, vd.Init)
			}
		}
	}
}

// ctorInits gives a block's constructor parameters the values of its
// instantiation, each time the block starts (a sub-parser: at each apply,
// with its own instance's values).
func (g *gen) ctorInits(ps []*sema.Var, args []syntax.Expr) {
	for i, p := range ps {
		if _, ext := p.Type.(*sema.ExternT); ext { // bound to the instance (sema.bindExterns)
			continue
		}
		if _, ctl := p.Type.(*sema.BlockT); ctl { // bound to the sub-control (sema.bindControls)
			continue
		}
		if i < len(args) {
			g.assignTo(g.localStorage(p, p.Pos), p.Type, args[i])
		}
	}
}
