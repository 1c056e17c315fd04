package p4path

import (
	"fmt"
	"strings"

	"github.com/edgenf/edgenf/internal/estimate"
	"github.com/edgenf/edgenf/internal/p4/ir"
	"github.com/edgenf/edgenf/internal/p4/sema"
	"github.com/edgenf/edgenf/internal/p4/syntax"
)

// ---------- calls ----------

func (w *walker) call(c *syntax.Call, st *state, k func(*state)) {
	cr := w.info.Calls[c]
	if cr == nil {
		st.stmt()
		k(st)
		return
	}
	switch cr.Kind {
	case sema.CallAction:
		w.exprCosts(c, st)
		if w.psa != nil && w.psaAction(c, cr.Action, st) { // psa.go: send_to_port, ingress_drop, egress_drop
			k(st)
			return
		}
		w.runAction(cr.Action, st, k)
	case sema.CallTableApply:
		w.apply(c, cr, st, func(st *state, _ Outcome) { k(st) })
	case sema.CallExternMethod:
		w.method(c, cr, st)
		k(st)
	case sema.CallExternFunc:
		w.externFunc(c, cr, st)
		k(st)
	case sema.CallHeaderMethod:
		w.headerMethod(c, cr, st)
		k(st)
	case sema.CallBlockApply:
		if cr.Sub == nil || cr.Sub.Control == nil || cr.Sub.Control.Decl.Body == nil {
			k(st)
			return
		}
		owner := st.owner
		st.owner = "control " + cr.Sub.Name
		w.stmts(cr.Sub.Control.Decl.Body.Stmts, st, func(st *state) {
			if st.stop == stopReturn {
				st.stop = running
			}
			st.owner = owner
			k(st)
		})
	case sema.CallFunction:
		if cr.Function == nil || cr.Function.Decl.Body == nil {
			k(st)
			return
		}
		w.stmts(cr.Function.Decl.Body.Stmts, st, func(st *state) {
			if st.stop == stopReturn {
				st.stop = running
			}
			k(st)
		})
	default:
		st.stmt()
		k(st)
	}
}

// runAction runs an action's body, its statements priced to it.
func (w *walker) runAction(a *sema.Action, st *state, k func(*state)) {
	owner := st.owner
	st.owner = "action " + short(a.FullName)
	st.use(TermAction, 1, st.owner)
	if a.Decl == nil || a.Decl.Body == nil {
		st.owner = owner
		k(st)
		return
	}
	w.stmts(a.Decl.Body.Stmts, st, func(st *state) {
		if st.stop == stopReturn {
			st.stop = running
		}
		st.owner = owner
		k(st)
	})
}

// apply applies a table: one fork per action a hit can run, one for a miss.
func (w *walker) apply(c *syntax.Call, cr *sema.CallRef, st *state, k func(*state, Outcome)) {
	t := w.prog.TableOf[cr.Table]
	if t == nil {
		k(st, Outcome{Table: cr.Table.FullName})
		return
	}
	n := w.entries(t)
	what := fmt.Sprintf("table %s (%s)", short(t.Name), describeTable(t, n))
	type branch struct {
		hit      bool
		action   *sema.Action
		compared int
	}
	var bs []branch
	switch t.Kind {
	case ir.KindKeyless:
	case ir.KindConst:
		seen := map[*sema.Action]bool{}
		for i, en := range t.Ent.Entries {
			if en.Action != nil && !seen[en.Action.Action] {
				seen[en.Action.Action] = true
				bs = append(bs, branch{hit: true, action: en.Action.Action, compared: i + 1})
			}
		}
	default:
		for _, ta := range t.Actions {
			if !ta.DefaultOnly {
				bs = append(bs, branch{hit: true, action: ta.Action.Ent})
			}
		}
	}
	var def *sema.Action
	if t.Default != nil {
		def = t.Default.Action
	}
	bs = append(bs, branch{hit: false, action: def, compared: len(t.Ent.Entries)})
	for i, b := range bs {
		s := st
		if i < len(bs)-1 {
			s = st.clone()
		}
		switch t.Kind {
		case ir.KindHash:
			s.use(TermHash, 1, what)
			s.use(TermHashKeyByte, float64(t.KeyBytes), what)
		case ir.KindLPM:
			s.use(TermLPM, 1, what)
			s.use(TermLPMLog2, estimate.Log2(n), what)
		case ir.KindScan:
			s.use(TermScan, 1, what)
			s.use(TermScanEntry, float64(n), what)
		case ir.KindConst:
			s.use(TermConst, 1, what)
			s.use(TermConstEntry, float64(b.compared), what)
		case ir.KindKeyless:
			s.use(TermKeyless, 1, what)
		}
		if w.tableCalls {
			s.use(TermTableCall, 1, what)
		}
		if !b.hit && t.Kind != ir.KindKeyless && t.Kind != ir.KindConst {
			s.use(TermMiss, 1, what)
		}
		if b.hit {
			w.resolveReference(t, s, what) // profiles.go
		}
		// v1model's direct counter and meter act on every hit; PSA's at
		// their calls in the table's actions (psaExternMethod)
		if b.hit && t.DirectCounter != nil && t.DirectCounter.Ent.Extern.Name != "DirectCounter" {
			s.use(TermDirectCount, 1, what)
		}
		if b.hit && t.DirectMeter != nil && t.DirectMeter.Ent.Extern.Name != "DirectMeter" {
			s.use(TermMeter, 1, what)
		}
		o := Outcome{Table: t.Name, Hit: b.hit, Action: "NoAction"}
		if b.action != nil {
			o.Action = b.action.FullName
		}
		s.tables = append(s.tables, o)
		s.steps = append(s.steps, o.String())
		if b.action == nil {
			k(s, o)
		} else {
			if b.hit {
				s.hit, s.counted = t, false
			}
			w.runAction(b.action, s, func(s *state) {
				s.hit = nil
				k(s, o)
			})
		}
		if w.full() {
			return
		}
	}
}

func describeTable(t *ir.Table, n int) string {
	bits := keyBits(t)
	switch t.Kind {
	case ir.KindKeyless:
		return "keyless"
	case ir.KindConst:
		return fmt.Sprintf("%d const entries", len(t.Ent.Entries))
	case ir.KindLPM, ir.KindScan:
		return fmt.Sprintf("%s, %d-bit key, %d %s", kindName(t.Kind), bits, n, plural(n, "entry", "entries"))
	}
	return fmt.Sprintf("%s, %d-bit key", kindName(t.Kind), bits)
}

func kindName(k string) string {
	switch k {
	case ir.KindHash:
		return "exact"
	case ir.KindScan:
		return "ternary/range"
	}
	return k
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// entries is the number of entries assumed in table t.
func (w *walker) entries(t *ir.Table) int {
	switch t.Kind {
	case ir.KindConst:
		return len(t.Ent.Entries)
	case ir.KindKeyless:
		return 0
	}
	if n, ok := w.opt.Entries[t.Name]; ok {
		return n
	}
	if n, ok := w.opt.Entries[short(t.Name)]; ok {
		return n
	}
	if w.opt.DefaultEntries > 0 {
		return w.opt.DefaultEntries
	}
	return 1
}

func (w *walker) switchStmt(x *syntax.SwitchStmt, st *state, k func(*state)) {
	// body of case i, falling through empty cases
	body := func(i int) *syntax.BlockStmt {
		for ; i < len(x.Cases); i++ {
			if x.Cases[i].Body != nil {
				return x.Cases[i].Body
			}
		}
		return nil
	}
	run := func(i int, st *state) {
		if i < 0 {
			k(st)
			return
		}
		if b := body(i); b != nil {
			w.stmts(b.Stmts, st, k)
			return
		}
		k(st)
	}
	defaultCase := -1
	for i, c := range x.Cases {
		for _, l := range c.Labels {
			if _, ok := l.(*syntax.Default); ok {
				defaultCase = i
			}
		}
	}
	if m, ok := x.X.(*syntax.Member); ok && m.Name == "action_run" {
		if call, ok := m.X.(*syntax.Call); ok {
			if cr := w.info.Calls[call]; cr != nil && cr.Kind == sema.CallTableApply {
				w.apply(call, cr, st, func(st *state, o Outcome) {
					chosen := defaultCase
					for i, c := range x.Cases {
						for _, l := range c.Labels {
							if id, ok := l.(*syntax.Ident); ok {
								if a, ok := w.info.Uses[id].(*sema.Action); ok && a.FullName == o.Action {
									chosen = i
								}
							}
						}
					}
					run(chosen, st)
				})
				return
			}
		}
	}
	w.exprCosts(x.X, st)
	text := fmt.Sprintf("switch (%s) @%d", exprString(x.X), x.Pos.Line)
	choices := []int{}
	for i := range x.Cases {
		if x.Cases[i].Body != nil || i == len(x.Cases)-1 {
			choices = append(choices, i)
		}
	}
	if defaultCase < 0 {
		choices = append(choices, -1)
	}
	for j, i := range choices {
		s := st
		if j < len(choices)-1 {
			s = st.clone()
		}
		label := "no case"
		if i >= 0 {
			var ls []string
			for _, l := range x.Cases[i].Labels {
				ls = append(ls, exprString(l))
			}
			label = strings.Join(ls, ", ")
		}
		s.steps = append(s.steps, text+": "+label)
		run(i, s)
		if w.full() {
			return
		}
	}
}

// relookup prices finding table t's winning entry again (a PSA
// DirectMeter's execute, psa_dmeter.go): by its key, the table's own
// lookup; a ternary or range table's by the winning index, one lookup of a
// 4-byte key.
func (w *walker) relookup(t *ir.Table, st *state, what string) {
	switch t.Kind {
	case ir.KindHash:
		st.use(TermHash, 1, what)
		st.use(TermHashKeyByte, float64(t.KeyBytes), what)
	case ir.KindLPM:
		st.use(TermLPM, 1, what)
		st.use(TermLPMLog2, estimate.Log2(w.entries(t)), what)
	case ir.KindScan:
		st.use(TermHash, 1, what)
		st.use(TermHashKeyByte, 4, what)
	}
}
