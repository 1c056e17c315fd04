package p4path

import (
	"fmt"
	"math/big"
	"strings"

	"github.com/edgenf/edgenf/internal/p4/sema"
	"github.com/edgenf/edgenf/internal/p4/syntax"
)

// ---------- conditions ----------

// cond evaluates a condition, forking where the path cannot decide it;
// tables applied in it (t.apply().hit) are applied.
func (w *walker) cond(e syntax.Expr, st *state, k func(*state, tri)) {
	switch x := e.(type) {
	case *syntax.Unary:
		if x.Op == "!" {
			w.cond(x.X, st, func(st *state, v tri) { k(st, v.not()) })
			return
		}
	case *syntax.Binary:
		// && and || decide without their right side when the left one is
		// false (&&) or true (||)
		if decides, ok := map[string]tri{"&&": no, "||": yes}[x.Op]; ok {
			w.cond(x.X, st, func(st *state, v tri) {
				if v == decides {
					k(st, decides)
					return
				}
				w.cond(x.Y, st, k)
			})
			return
		}
	case *syntax.Member:
		if call, ok := x.X.(*syntax.Call); ok && (x.Name == "hit" || x.Name == "miss") {
			if cr := w.info.Calls[call]; cr != nil && cr.Kind == sema.CallTableApply {
				w.apply(call, cr, st, func(st *state, o Outcome) {
					k(st, triOf(o.Hit == (x.Name == "hit")))
				})
				return
			}
		}
	}
	w.exprCosts(e, st)
	v := w.eval(e, st)
	if v != unknown {
		k(st, v)
		return
	}
	text := fmt.Sprintf("%s @%d", exprString(e), e.NodePos().Line)
	t := st.clone()
	t.steps = append(t.steps, "("+text+") true")
	w.learn(e, t, true)
	k(t, yes)
	if w.full() {
		return
	}
	st.steps = append(st.steps, "("+text+") false")
	w.learn(e, st, false)
	k(st, no)
}

// eval decides a condition from what the path knows: header validity, the
// parser's error, constants.
func (w *walker) eval(e syntax.Expr, st *state) tri {
	if v, ok := w.info.Consts[e]; ok {
		return triOf(v.Sign() != 0)
	}
	switch x := e.(type) {
	case *syntax.BoolLit:
		return triOf(x.Value)
	case *syntax.Unary:
		if x.Op == "!" {
			return w.eval(x.X, st).not()
		}
	case *syntax.Binary:
		switch x.Op {
		case "&&":
			a, b := w.eval(x.X, st), w.eval(x.Y, st)
			if a == no || b == no {
				return no
			}
			if a == yes && b == yes {
				return yes
			}
			return unknown
		case "||":
			a, b := w.eval(x.X, st), w.eval(x.Y, st)
			if a == yes || b == yes {
				return yes
			}
			if a == no && b == no {
				return no
			}
			return unknown
		case "==", "!=":
			a, aok := w.value(x.X, st)
			b, bok := w.value(x.Y, st)
			switch {
			case aok && bok:
				return triOf((a.Cmp(b) == 0) == (x.Op == "=="))
			case bok && w.ruledOut(x.X, b, st), aok && w.ruledOut(x.Y, a, st):
				return triOf(x.Op == "!=")
			}
			return unknown
		case "<", "<=", ">", ">=":
			a, aok := w.value(x.X, st)
			b, bok := w.value(x.Y, st)
			if !aok || !bok {
				return unknown
			}
			c := a.Cmp(b)
			return triOf(map[string]bool{"<": c < 0, "<=": c <= 0, ">": c > 0, ">=": c >= 0}[x.Op])
		}
	case *syntax.Call:
		cr := w.info.Calls[x]
		if cr != nil && cr.Kind == sema.CallHeaderMethod && cr.Method == "isValid" {
			h := w.canon(cr.Recv, st, false)
			if h == "" {
				return unknown
			}
			_, ok := st.hdrs[h]
			return triOf(ok)
		}
	}
	return unknown
}

// value is the known value of an expression: a constant, an error or the
// parser's error and the checksum error (packets are well formed).
func (w *walker) value(e syntax.Expr, st *state) (*big.Int, bool) {
	if v, ok := w.info.Consts[e]; ok {
		return v, true
	}
	m, ok := e.(*syntax.Member)
	if !ok {
		return nil, false
	}
	if ref := w.info.Members[m]; ref != nil && ref.Kind == sema.EnumMember {
		if _, isErr := w.info.Types[m].(*sema.ErrorT); isErr {
			return big.NewInt(int64(ref.Index)), true
		}
	}
	name := w.canon(m, st, false)
	if name == "" {
		return nil, false
	}
	if v, ok := st.facts[name]; ok {
		return v, v != nil
	}
	switch name {
	case "standard_metadata.parser_error":
		if st.parserErr {
			return nil, false // which error is not followed
		}
		return big.NewInt(0), true // error.NoError
	case "standard_metadata.checksum_error", "standard_metadata.egress_spec", "standard_metadata.mcast_grp",
		"standard_metadata.instance_type":
		return big.NewInt(0), true // what every packet starts with
	}
	if strings.HasPrefix(name, "meta.") {
		if _, isBits := sema.BitsOf(w.info.Types[m]); isBits {
			return big.NewInt(0), true // metadata starts zeroed
		}
	}
	return nil, false
}

// learn records what a decided condition says: x == C holds (or not).
func (w *walker) learn(e syntax.Expr, st *state, holds bool) {
	b, ok := e.(*syntax.Binary)
	if !ok || (b.Op != "==" && b.Op != "!=") {
		return
	}
	x, c := b.X, b.Y
	if _, known := w.value(x, st); known {
		x, c = b.Y, b.X
	}
	v, known := w.value(c, st)
	name := w.canon(x, st, false)
	if !known || name == "" {
		return
	}
	if holds == (b.Op == "==") {
		st.facts[name] = v
	} else {
		st.notEq[name] = append(st.notEq[name], v)
	}
}

// ruledOut reports whether the path knows e != v.
func (w *walker) ruledOut(e syntax.Expr, v *big.Int, st *state) bool {
	name := w.canon(e, st, false)
	for _, x := range st.notEq[name] {
		if x.Cmp(v) == 0 {
			return true
		}
	}
	return false
}
