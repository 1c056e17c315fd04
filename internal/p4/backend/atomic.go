package backend

import (
	"fmt"
	"slices"
	"strings"

	"github.com/edgenf/edgenf/internal/p4/ir"
	"github.com/edgenf/edgenf/internal/p4/sema"
	"github.com/edgenf/edgenf/internal/p4/syntax"
)

// @atomic blocks.
//
// Per-packet state (headers, metadata, locals) is per-CPU, so a block that
// touches no register is atomic as it is. A block that reads and writes
// registers is made atomic with a bpf_spin_lock: all its register accesses
// must use one index (the same expression, not assigned in the block); the
// cells are looked up first, then the block runs holding lock
// p4_atomic_locks[index % P4_ATOMIC_LOCKS] (one lock array for the
// program: the verifier lets a program hold one lock at a time). While
// holding it a BPF program may call no helper and no function, so the block
// may only hold assignments, if statements, local declarations, header
// validity, register read/write, and calls of actions and functions (the
// generated ones are inlined) whose bodies hold the same minus register
// accesses; anything else is reported at its position.

// atomicLocks is the number of lock cells (a power of two).
const atomicLocks = 1024

type atomicState struct {
	cells map[*sema.Instance]string // register -> C pointer to its cell
}

type atomicScan struct {
	g       *gen
	regs    []*sema.Instance
	idx     []syntax.Expr
	assigns []syntax.Expr
	bad     bool
	callee  string   // the action or function being scanned, called from the block; "" in the block itself
	locals  []string // variables the block declares: no index can use them
	// calleeVars: the parameters and variables of the callees scanned,
	// which the block's index cannot name either
	calleeVars []string
}

// rootIn reports whether e is (a part of) a variable named in names.
func rootIn(e syntax.Expr, names []string) bool {
	for {
		switch x := e.(type) {
		case *syntax.Member:
			e = x.X
		case *syntax.Index:
			e = x.X
		case *syntax.Slice:
			e = x.X
		case *syntax.Ident:
			return slices.Contains(names, x.Name)
		default:
			return false
		}
	}
}

func (a *atomicScan) reject(pos syntax.Pos, what string) {
	if a.callee != "" {
		what += " in " + a.callee + ", called from it"
	}
	if !a.bad {
		a.g.unsupported(pos, "@atomic block with "+what+": edgenf makes atomic the blocks of register reads and writes at one index, assignments and if statements")
	}
	a.bad = true
}

func (a *atomicScan) stmt(s syntax.Stmt) {
	switch x := s.(type) {
	case *syntax.BlockStmt:
		for _, y := range x.Stmts {
			a.stmt(y)
		}
	case *syntax.EmptyStmt:
	case *syntax.AssignStmt:
		if a.callee == "" || !rootIn(x.LHS, a.calleeVars) {
			a.assigns = append(a.assigns, x.LHS)
		}
		a.expr(x.LHS)
		a.expr(x.RHS)
	case *syntax.IfStmt:
		a.expr(x.Cond)
		a.stmt(x.Then)
		if x.Else != nil {
			a.stmt(x.Else)
		}
	case *syntax.DeclStmt:
		if d, ok := x.Decl.(*syntax.VarDecl); ok {
			if a.callee == "" {
				a.locals = append(a.locals, d.Name)
			} else {
				a.calleeVars = append(a.calleeVars, d.Name)
			}
			if d.Init != nil {
				a.expr(d.Init)
			}
		}
	case *syntax.CallStmt:
		a.call(x.Call)
	case *syntax.ExitStmt:
		a.reject(x.Pos, "exit")
	case *syntax.ReturnStmt:
		if a.callee == "" {
			a.reject(x.Pos, "return")
			return
		}
		a.expr(x.Value) // leaves the inlined callee, not the block
	default:
		a.reject(s.NodePos(), "this statement")
	}
}

func (a *atomicScan) call(call *syntax.Call) {
	cr := a.g.info.Calls[call]
	if cr == nil {
		a.reject(call.Pos, "this call")
		return
	}
	switch cr.Kind {
	case sema.CallAction:
		if cr.Action != nil && cr.Action.Decl != nil {
			a.calleeBody(call, cr.Action.Name, cr.Action.Params, cr.Action.Decl.Body)
			return
		}
	case sema.CallFunction:
		if cr.Function != nil && cr.Function.Decl != nil {
			a.calleeBody(call, cr.Function.Name, cr.Function.Params, cr.Function.Decl.Body)
			return
		}
	case sema.CallHeaderMethod:
		if cr.Method == "push_front" || cr.Method == "pop_front" || cr.Method == "isValid" || cr.Method == "setValid" || cr.Method == "setInvalid" {
			return
		}
	case sema.CallExternMethod:
		if in := cr.Instance; in != nil && sema.ExternKind(in.Extern.Name) == "register" && len(call.Args) == 2 /* v1model read(out, index); write(index, value) */ {
			if a.callee != "" {
				break
			}
			switch cr.Method {
			case "read":
				a.regs = append(a.regs, in)
				a.idx = append(a.idx, call.Args[1].Value)
				a.assigns = append(a.assigns, call.Args[0].Value)
				a.expr(call.Args[1].Value)
				return
			case "write":
				a.regs = append(a.regs, in)
				a.idx = append(a.idx, call.Args[0].Value)
				a.expr(call.Args[0].Value)
				a.expr(call.Args[1].Value)
				return
			}
		}
	case sema.CallExternFunc:
		if cr.Method == "mark_to_drop" {
			return
		}
	}
	a.reject(call.Pos, "a call of "+sema.ExprString(call.Fn))
}

// calleeBody scans a call of an action or function from the block: its
// arguments (out and inout ones are assigned) and its body, which runs
// inlined under the lock and so must hold what the block may, without
// register accesses (their cells are looked up before the lock, by the
// block's own accesses).
func (a *atomicScan) calleeBody(call *syntax.Call, name string, params []*sema.Var, body *syntax.BlockStmt) {
	for i, arg := range call.Args {
		a.expr(arg.Value)
		if i < len(params) && (params[i].Dir == "out" || params[i].Dir == "inout") {
			a.assigns = append(a.assigns, arg.Value)
		}
	}
	if body == nil {
		return
	}
	for _, p := range params {
		a.calleeVars = append(a.calleeVars, p.Name)
	}
	outer := a.callee
	if outer == "" {
		a.callee = name
	}
	a.stmt(body)
	a.callee = outer
}

func (a *atomicScan) expr(e syntax.Expr) {
	switch x := e.(type) {
	case nil:
	case *syntax.Call:
		cr := a.g.info.Calls[x]
		if cr != nil && cr.Kind == sema.CallHeaderMethod && cr.Method == "isValid" {
			return
		}
		if cr != nil && cr.Kind == sema.CallFunction {
			a.call(x) // a function's value
			return
		}
		if cr != nil && cr.Kind == sema.CallExternMethod && cr.Instance != nil && cr.Instance.Extern.Name == "Register" && cr.Method == "read" && len(x.Args) == 1 && a.callee == "" {
			// PSA: reg.read(index) is a value (psa_externs.go)
			a.regs = append(a.regs, cr.Instance)
			a.idx = append(a.idx, x.Args[0].Value)
			a.expr(x.Args[0].Value)
			return
		}
		a.reject(x.Pos, "a call of "+sema.ExprString(x.Fn))
	case *syntax.Member:
		if r := a.g.info.Members[x]; r != nil && r.Kind == sema.ApplyField {
			a.reject(x.Pos, "a table application")
			return
		}
		a.expr(x.X)
	case *syntax.Index:
		a.expr(x.X)
		a.expr(x.Index)
	case *syntax.Slice:
		a.expr(x.X)
	case *syntax.Unary:
		a.expr(x.X)
	case *syntax.Binary:
		a.expr(x.X)
		a.expr(x.Y)
	case *syntax.Cond:
		a.expr(x.Cond)
		a.expr(x.Then)
		a.expr(x.Else)
	case *syntax.Cast:
		a.expr(x.X)
	case *syntax.List:
		for _, el := range x.Elems {
			a.expr(el)
		}
	}
}

// atomicBlock generates an @atomic block statement.
func (g *gen) atomicBlock(b *syntax.BlockStmt) {
	if g.atomic != nil {
		g.block(b) // nested: already under the lock
		return
	}
	sc := &atomicScan{g: g}
	sc.stmt(b)
	if sc.bad {
		return
	}
	if len(sc.regs) == 0 {
		g.block(b)
		return
	}
	idx := g.rv(sc.idx[0])
	for i, e := range sc.idx[1:] {
		if c := g.rv(e); c != idx {
			g.unsupported(sc.idx[i+1].NodePos(), fmt.Sprintf("@atomic block with register accesses at different indices (%s and %s): edgenf locks one index per block",
				sema.ExprString(sc.idx[0]), sema.ExprString(e)))
			return
		}
	}
	for _, as := range sc.assigns {
		if rootIn(as, sc.locals) {
			continue // not declared yet, and no index uses it
		}
		if l := g.lval(as); strings.Contains(idx, l) {
			g.unsupported(as.NodePos(), "@atomic block that assigns "+sema.ExprString(as)+", which its register index uses")
			return
		}
	}
	g.atomicUsed = true
	st := &atomicState{cells: map[*sema.Instance]string{}}
	g.line("{")
	g.indent++
	g.line("/* @atomic: the register cells are looked up first, then the block runs under the lock of its index */")
	g.line("__u32 ai = %s;", g.cellIndex(sc.idx[0]))
	for _, in := range sc.regs {
		if _, ok := st.cells[in]; ok {
			continue
		}
		r := g.p.RegisterOf[in]
		c := fmt.Sprintf("ac%d", len(st.cells))
		st.cells[in] = c
		g.line("__u64 *%s = ai < %d ? bpf_map_lookup_elem(&%s, &ai) : 0;", c, r.Size, r.MapName)
	}
	g.line("__u32 li = ai & %d;", atomicLocks-1)
	g.line("struct p4_atomic_lock *lk = bpf_map_lookup_elem(&p4_atomic_locks, &li);")
	g.line("if (lk)")
	g.line("\tbpf_spin_lock(&lk->l);")
	g.atomic = st
	g.block(b)
	g.atomic = nil
	g.line("if (lk)")
	g.line("\tbpf_spin_unlock(&lk->l);")
	g.indent--
	g.line("}")
}

// atomicRegisterOp generates register.read/write inside an @atomic block
// through the cell pointer looked up before the lock; it reports whether it
// did.
func (g *gen) atomicRegisterOp(call *syntax.Call, cr *sema.CallRef, r *ir.Register) bool {
	if g.atomic == nil {
		return false
	}
	c, ok := g.atomic.cells[cr.Instance]
	if !ok {
		return false
	}
	switch cr.Method {
	case "read":
		if len(call.Args) != 2 {
			return false // PSA's read(index) is a value: atomicRegisterRead
		}
		g.line("%s = %s ? %s : %s;", g.lval(call.Args[0].Value), c, regDecode(r, "*"+c), regInit(r))
	case "write":
		g.line("if (%s)", unparen(c))
		g.line("\t*%s = %s;", c, regEncode(r, fmt.Sprintf("(__u64)(%s) & %s", g.rv(call.Args[1].Value), mask(r.Width))))
	default:
		return false
	}
	return true
}

// atomicRegisterRead is PSA's reg.read(index) inside an @atomic block: the
// cell looked up before the lock; false outside one.
func (g *gen) atomicRegisterRead(cr *sema.CallRef, r *ir.Register) (string, bool) {
	if g.atomic == nil {
		return "", false
	}
	c, ok := g.atomic.cells[cr.Instance]
	if !ok {
		return "", false
	}
	return fmt.Sprintf("(%s ? %s : %s)", c, regDecode(r, "*"+c), regInit(r)), true
}
