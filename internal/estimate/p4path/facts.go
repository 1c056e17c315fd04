package p4path

import (
	"fmt"
	"strings"

	"github.com/edgenf/edgenf/internal/p4/sema"
	"github.com/edgenf/edgenf/internal/p4/syntax"
)

// ---------- program-wide facts ----------

// scanProgram finds what the generated code decides for the whole
// program: the header fields anything but the parser may write (the
// deparser writes those back), and the timestamps read.
func (w *walker) scanProgram() {
	var stmts func(ss []syntax.Stmt)
	var expr func(e syntax.Expr)
	expr = func(e syntax.Expr) {
		walkExpr(e, func(x syntax.Expr) {
			if m, ok := x.(*syntax.Member); ok && w.rootKind(m) == "standard_metadata" {
				switch m.Name {
				case "ingress_global_timestamp":
					w.tsIngress = true
				case "egress_global_timestamp":
					w.tsEgress = true
				}
			}
			if c, ok := x.(*syntax.Call); ok {
				if cr := w.info.Calls[c]; cr != nil && cr.Kind == sema.CallAction && psaBuiltin(cr.Action, "multicast") {
					w.replicates = true
				}
				if cr := w.info.Calls[c]; cr != nil && cr.Kind == sema.CallExternFunc {
					switch cr.Method {
					case "clone", "clone3", "clone_preserving_field_list", "resubmit", "resubmit_preserving_field_list",
						"recirculate", "recirculate_preserving_field_list":
						w.replicates = true
					}
				}
				if cr := w.info.Calls[c]; cr != nil && cr.Proto != nil {
					for i, a := range c.Args {
						if i < len(cr.Proto.Params) && a.Value != nil && (cr.Proto.Params[i].Dir == "out" || cr.Proto.Params[i].Dir == "inout") {
							w.written(a.Value)
						}
					}
				}
				if cr := w.info.Calls[c]; cr != nil && cr.Kind == sema.CallHeaderMethod && (cr.Method == "setValid" || cr.Method == "push_front" || cr.Method == "pop_front") {
					w.written(cr.Recv)
				}
			}
		})
	}
	stmts = func(ss []syntax.Stmt) {
		for _, s := range ss {
			switch x := s.(type) {
			case *syntax.AssignStmt:
				if lhs := w.canonStatic(x.LHS); lhs == "standard_metadata.mcast_grp" || psaCopies[lhs] {
					w.replicates = true
				}
				w.written(x.LHS)
				expr(x.LHS)
				expr(x.RHS)
			case *syntax.CallStmt:
				expr(x.Call)
			case *syntax.IfStmt:
				expr(x.Cond)
				stmts([]syntax.Stmt{x.Then})
				if x.Else != nil {
					stmts([]syntax.Stmt{x.Else})
				}
			case *syntax.BlockStmt:
				stmts(x.Stmts)
			case *syntax.SwitchStmt:
				expr(x.X)
				for _, c := range x.Cases {
					if c.Body != nil {
						stmts(c.Body.Stmts)
					}
				}
			case *syntax.DeclStmt:
				if v, ok := x.Decl.(*syntax.VarDecl); ok && v.Init != nil {
					expr(v.Init)
				}
			case *syntax.ReturnStmt:
				if x.Value != nil {
					expr(x.Value)
				}
			}
		}
	}
	for _, c := range w.controls {
		stmts(c.Decl.Body.Stmts)
	}
	for _, c := range w.info.Controls {
		if c.Decl.Body != nil && w.info.LiveControl(c) {
			stmts(c.Decl.Body.Stmts)
		}
	}
	for _, a := range w.info.Actions {
		if a.Decl != nil && a.Decl.Body != nil {
			stmts(a.Decl.Body.Stmts)
		}
	}
	for _, f := range w.info.Functions {
		if f.Decl.Body != nil {
			stmts(f.Decl.Body.Stmts)
		}
	}
	// the parser's own expressions (timestamps read in select keys)
	parsers := []*sema.Parser{w.parser}
	if w.psa != nil && !w.psa.egressEmpty {
		parsers = append(parsers, w.psa.egressParser)
	}
	for _, p := range parsers {
		for _, st := range p.Order {
			for _, s := range st.Decl.Stmts {
				if a, ok := s.(*syntax.AssignStmt); ok {
					expr(a.RHS)
				}
			}
		}
	}
}

// written records an lvalue written outside the parser.
func (w *walker) written(lv syntax.Expr) {
	for e := lv; e != nil; {
		switch x := e.(type) {
		case *syntax.Slice:
			e = x.X
			continue
		case *syntax.Index:
			if sema.IsHeader(w.info.Types[x]) {
				w.markAll(x)
				return
			}
			e = x.X
			continue
		case *syntax.Member:
			if sema.IsHeader(w.info.Types[x.X]) {
				h := w.canonStatic(x.X)
				if h == "" {
					return
				}
				if w.mayChange[h] == nil {
					w.mayChange[h] = map[string]bool{}
				}
				w.mayChange[h][x.Name] = true
				return
			}
			if sema.IsHeader(w.info.Types[x]) {
				w.markAll(x)
				return
			}
			e = x.X
			continue
		case *syntax.Ident:
			if sema.IsHeader(w.info.Types[x]) {
				w.markAll(x)
			}
		}
		return
	}
}

func (w *walker) markAll(h syntax.Expr) {
	n := w.canonStatic(h)
	if n == "" {
		return
	}
	if w.mayChange[n] == nil {
		w.mayChange[n] = map[string]bool{}
	}
	w.mayChange[n]["*"] = true
}

// writtenFields is how many fields of header instance h the deparser
// writes back when h is where it was parsed.
func (w *walker) writtenFields(h string, t sema.Type) int {
	f := w.mayChange[stackless(h)]
	if f["*"] {
		return fieldCount(t)
	}
	return len(f)
}

// stackless replaces stack indices by [*].
func stackless(h string) string {
	var b strings.Builder
	for i := 0; i < len(h); i++ {
		if h[i] == '[' {
			j := strings.IndexByte(h[i:], ']')
			if j < 0 {
				break
			}
			b.WriteString("[*]")
			i += j
			continue
		}
		b.WriteByte(h[i])
	}
	return b.String()
}

// walkExpr calls f on e and every expression inside it.
func walkExpr(e syntax.Expr, f func(syntax.Expr)) {
	if e == nil {
		return
	}
	f(e)
	switch x := e.(type) {
	case *syntax.Member:
		walkExpr(x.X, f)
	case *syntax.Index:
		walkExpr(x.X, f)
		walkExpr(x.Index, f)
	case *syntax.Slice:
		walkExpr(x.X, f)
		walkExpr(x.Hi, f)
		walkExpr(x.Lo, f)
	case *syntax.Call:
		walkExpr(x.Fn, f)
		for _, a := range x.Args {
			walkExpr(a.Value, f)
		}
	case *syntax.Unary:
		walkExpr(x.X, f)
	case *syntax.Binary:
		walkExpr(x.X, f)
		walkExpr(x.Y, f)
	case *syntax.Cond:
		walkExpr(x.Cond, f)
		walkExpr(x.Then, f)
		walkExpr(x.Else, f)
	case *syntax.Cast:
		walkExpr(x.X, f)
	case *syntax.List:
		for _, el := range x.Elems {
			walkExpr(el, f)
		}
	case *syntax.Mask:
		walkExpr(x.Value, f)
		walkExpr(x.Mask, f)
	case *syntax.Range:
		walkExpr(x.Lo, f)
		walkExpr(x.Hi, f)
	}
}

// ---------- names ----------

// rootKind names the block parameter an lvalue is rooted at by its type
// (w.roots): "hdr", "meta" or "standard_metadata" (PSA: psa.go); a local
// variable by its name; "" for action and function parameters (they may
// alias anything).
func (w *walker) rootKind(e syntax.Expr) string {
	for {
		switch x := e.(type) {
		case *syntax.Member:
			e = x.X
			continue
		case *syntax.Index:
			e = x.X
			continue
		case *syntax.Slice:
			e = x.X
			continue
		case *syntax.Ident:
			v, ok := w.info.Uses[x].(*sema.Var)
			if !ok {
				return ""
			}
			switch v.Kind {
			case sema.BlockParam:
				return w.roots[v.Type]
			case sema.LocalVar:
				return "local." + v.Name
			}
			return ""
		}
		return ""
	}
}

// canonStatic names an lvalue without a path's stack positions: stack
// elements by a constant index, or [*].
func (w *walker) canonStatic(e syntax.Expr) string {
	return w.canon(e, nil, false)
}

// canon names an lvalue the same way in every block (hdr.ipv4,
// hdr.mpls[1]); st resolves hs.next and hs.last (advancing next when
// extracting); "" when it cannot be named.
func (w *walker) canon(e syntax.Expr, st *state, extracting bool) string {
	switch x := e.(type) {
	case *syntax.Ident:
		return w.rootKind(x)
	case *syntax.Member:
		base := w.canon(x.X, st, extracting)
		if base == "" {
			return ""
		}
		if ref := w.info.Members[x]; ref != nil && ref.Kind == sema.StackMember {
			if st == nil {
				return base + "[*]"
			}
			switch ref.Name {
			case "next":
				i := st.next[base]
				if extracting {
					st.next[base] = i + 1
				}
				return fmt.Sprintf("%s[%d]", base, i)
			case "last":
				return fmt.Sprintf("%s[%d]", base, st.next[base]-1)
			}
			return ""
		}
		return base + "." + x.Name
	case *syntax.Index:
		base := w.canon(x.X, st, extracting)
		if base == "" {
			return ""
		}
		if v, ok := w.info.Consts[x.Index]; ok {
			if st == nil {
				return base + "[*]"
			}
			return fmt.Sprintf("%s[%s]", base, v)
		}
		if st == nil {
			return base + "[*]"
		}
		return ""
	}
	return ""
}
