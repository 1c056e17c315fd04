package p4path

import (
	"github.com/edgenf/edgenf/internal/p4/sema"
	"github.com/edgenf/edgenf/internal/p4/syntax"
)

// ---------- parser ----------

func (w *walker) pstate(name string, st *state, k func(*state)) {
	if w.truncated {
		return
	}
	switch name {
	case "accept":
		k(st)
		return
	case "reject":
		st.parserErr = true
		st.parser = append(st.parser, "reject")
		k(st)
		return
	}
	p := st.pblock
	if p == nil {
		p = w.parser
	}
	s := p.States[name]
	if s == nil {
		k(st)
		return
	}
	st.seen[name]++
	if st.seen[name] > w.loopCap {
		// the generated parser stops a loop there: ParserTimeout
		st.parserErr = true
		st.parser = append(st.parser, "reject")
		k(st)
		return
	}
	st.parser = append(st.parser, name)
	st.owner = "parser"
	w.stmts(s.Decl.Stmts, st, func(st *state) { w.transition(s.Decl.Transition, st, k) })
}

func (w *walker) transition(tr *syntax.Transition, st *state, k func(*state)) {
	if tr == nil {
		w.pstate("reject", st, k)
		return
	}
	if tr.Select == nil {
		w.pstate(tr.Next, st, k)
		return
	}
	for _, e := range tr.Select {
		w.exprCosts(e, st)
	}
	// one fork per distinct next state; a select without default can
	// also match nothing (reject)
	var next []string
	seen := map[string]bool{}
	hasDefault := false
	for _, c := range tr.Cases {
		if d, ok := c.Keyset.(*syntax.Default); ok && d != nil {
			hasDefault = true
		}
		if !seen[c.Next] {
			seen[c.Next] = true
			next = append(next, c.Next)
		}
	}
	if !hasDefault && !seen["reject"] && !w.exhaustive(tr) {
		next = append(next, "reject")
	}
	st.stmt()
	for i, n := range next {
		s := st
		if i < len(next)-1 {
			s = st.clone()
		}
		w.pstate(n, s, k)
		if w.full() {
			return
		}
	}
}

// exhaustive reports whether a select's cases cover every value of its
// key (a narrow key, cases of single values): it never rejects.
func (w *walker) exhaustive(tr *syntax.Transition) bool {
	if len(tr.Select) != 1 {
		return false
	}
	wd := sema.Width(w.info.Types[tr.Select[0]])
	if wd <= 0 || wd > 8 {
		return false
	}
	vals := map[string]bool{}
	for _, c := range tr.Cases {
		v, ok := w.info.Consts[c.Keyset]
		if !ok {
			return false
		}
		vals[v.String()] = true
	}
	return len(vals) == 1<<wd
}

// clobber forgets what the path knew of the out arguments of a call.
func (w *walker) clobber(c *syntax.Call, cr *sema.CallRef, st *state) {
	if cr.Proto == nil {
		return
	}
	for i, a := range c.Args {
		if i < len(cr.Proto.Params) && a.Value != nil && (cr.Proto.Params[i].Dir == "out" || cr.Proto.Params[i].Dir == "inout") {
			if n := w.canon(a.Value, st, false); n != "" {
				st.facts[n] = nil
				delete(st.notEq, n)
			}
		}
	}
}
