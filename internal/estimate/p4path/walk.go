package p4path

import (
	"fmt"
	"math/big"
	"strings"

	"github.com/edgenf/edgenf/internal/estimate"
	"github.com/edgenf/edgenf/internal/p4/ir"
	"github.com/edgenf/edgenf/internal/p4/sema"
	"github.com/edgenf/edgenf/internal/p4/syntax"
)

// tri is a condition's value as far as a path knows it.
type tri int

const (
	unknown tri = iota
	yes
	no
)

func triOf(b bool) tri {
	if b {
		return yes
	}
	return no
}

func (t tri) not() tri {
	switch t {
	case yes:
		return no
	case no:
		return yes
	}
	return unknown
}

// Why a statement list stops early.
const (
	running    = 0
	stopReturn = 1 // return: the action, function or control ends
	stopExit   = 2 // exit: the top-level control ends
)

// hinst is a valid header instance on a path: where it was parsed from
// (-1: added, or rewritten whole) and its size.
type hinst struct {
	off   int
	bytes int
}

// state is a path under construction.
type state struct {
	hdrs      map[string]hinst
	order     []string // extracted headers, in order
	off       int      // bytes the parser consumed
	next      map[string]int
	seen      map[string]int
	parserErr bool
	verdict   string
	mcast     bool
	stop      int
	owner     string // what statements are attributed to
	emitted   []string
	uses      []estimate.Use
	parser    []string
	tables    []Outcome
	steps     []string
	// facts are values the path knows: constants assigned, equalities
	// decided (nil: assigned something unknown); notEq values a decided
	// inequality ruled out.
	facts map[string]*big.Int
	notEq map[string][]*big.Int
}

func (s *state) clone() *state {
	n := *s
	n.hdrs = make(map[string]hinst, len(s.hdrs))
	for k, v := range s.hdrs {
		n.hdrs[k] = v
	}
	n.next = make(map[string]int, len(s.next))
	for k, v := range s.next {
		n.next[k] = v
	}
	n.seen = make(map[string]int, len(s.seen))
	for k, v := range s.seen {
		n.seen[k] = v
	}
	n.order = append([]string(nil), s.order...)
	n.emitted = append([]string(nil), s.emitted...)
	n.uses = append([]estimate.Use(nil), s.uses...)
	n.parser = append([]string(nil), s.parser...)
	n.tables = append([]Outcome(nil), s.tables...)
	n.steps = append([]string(nil), s.steps...)
	n.facts = make(map[string]*big.Int, len(s.facts))
	for k, v := range s.facts {
		n.facts[k] = v
	}
	n.notEq = make(map[string][]*big.Int, len(s.notEq))
	for k, v := range s.notEq {
		n.notEq[k] = v
	}
	return &n
}

func (s *state) use(term string, n float64, what string) {
	s.uses = append(s.uses, estimate.Use{Term: term, N: n, What: what})
}

func (s *state) stmt() { s.use(TermStmt, 1, s.owner) }

// walker enumerates the paths of one program.
type walker struct {
	prog       *ir.Program
	info       *sema.Info
	opt        Options
	hType      *sema.Struct
	mType      *sema.Struct
	smType     *sema.Struct
	parser     *sema.Parser
	controls   []*sema.Control // verify, ingress, egress, compute, deparser
	stateB     int
	mayChange  map[string]map[string]bool // header (stack index *) → fields written outside the parser ("*": all)
	tsIngress  bool
	tsEgress   bool
	replicates bool // the program can copy packets
	cpuPort    int64
	loopCap    int

	paths     []*Path
	seenPaths map[string]bool
	truncated bool
}

func newWalker(prog *ir.Program, opt Options) (*walker, error) {
	info := prog.Info
	if info.Main == nil || info.Main.Arch != "v1model" || len(info.Main.Blocks) != 6 {
		return nil, fmt.Errorf("estimating needs a v1model program (V1Switch with six blocks)")
	}
	w := &walker{prog: prog, info: info, opt: opt, mayChange: map[string]map[string]bool{}, seenPaths: map[string]bool{}, loopCap: 1}
	var ok bool
	if w.parser, ok = info.Main.Blocks[0].(*sema.Parser); !ok {
		return nil, fmt.Errorf("the first block of V1Switch is not a parser")
	}
	for _, b := range info.Main.Blocks[1:] {
		c, ok := b.(*sema.Control)
		if !ok {
			return nil, fmt.Errorf("V1Switch block %s is not a control", b.EntName())
		}
		w.controls = append(w.controls, c)
	}
	if len(w.parser.Params) >= 4 {
		w.hType, _ = w.parser.Params[1].Type.(*sema.Struct)
		w.mType, _ = w.parser.Params[2].Type.(*sema.Struct)
		w.smType, _ = w.parser.Params[3].Type.(*sema.Struct)
	}
	w.cpuPort = int64(opt.CPUPort)
	if w.cpuPort == 0 {
		w.cpuPort = 255
	}
	w.stateB = stateBytes(w.hType) + stateBytes(w.mType)
	for _, n := range []int{stackElems(w.hType), 1} {
		if n > w.loopCap {
			w.loopCap = n
		}
	}
	w.scanProgram()
	return w, nil
}

// stateBytes is the size of a type's per-packet state as the generated
// code holds it: fields in host integers, a valid flag per header.
func stateBytes(t sema.Type) int {
	switch x := t.(type) {
	case *sema.Bits:
		switch {
		case x.W <= 8:
			return 1
		case x.W <= 16:
			return 2
		case x.W <= 32:
			return 4
		case x.W <= 64:
			return 8
		}
		return (x.W + 7) / 8
	case *sema.Bool:
		return 1
	case *sema.Enum:
		if x.Under != nil {
			return stateBytes(x.Under)
		}
		return 4
	case *sema.ErrorT:
		return 4
	case *sema.Struct:
		n := 0
		if x.Kind == "header" {
			n = 1
		}
		for _, f := range x.Fields {
			n += stateBytes(f.Type)
		}
		return n
	case *sema.Stack:
		return x.Size * stateBytes(x.Elem)
	case *sema.Varbit:
		return x.Max/8 + 4
	}
	return 0
}

// stackElems is the largest header stack of t: loops of the parser visit
// their states at most that often.
func stackElems(t sema.Type) int {
	st, ok := t.(*sema.Struct)
	if !ok {
		return 0
	}
	n := 0
	for _, f := range st.Fields {
		switch x := f.Type.(type) {
		case *sema.Stack:
			if x.Size > n {
				n = x.Size
			}
		case *sema.Struct:
			if m := stackElems(x); m > n {
				n = m
			}
		}
	}
	return n
}

func headerBytes(t sema.Type) int {
	st, ok := t.(*sema.Struct)
	if !ok {
		return 0
	}
	return st.Bits / 8
}

func fieldCount(t sema.Type) int {
	if st, ok := t.(*sema.Struct); ok {
		return len(st.Fields)
	}
	return 0
}

// ---------- the walk ----------

func (w *walker) run() {
	st := &state{hdrs: map[string]hinst{}, next: map[string]int{}, seen: map[string]int{}, verdict: "send",
		facts: map[string]*big.Int{}, notEq: map[string][]*big.Int{}}
	if w.tsIngress {
		st.use(TermTimestamp, 1, "ingress_global_timestamp")
	}
	w.pstate("start", st, func(st *state) {
		w.control(w.controls[0], st, func(st *state) { // verify checksum
			w.control(w.controls[1], st, func(st *state) { // ingress
				if st.verdict == "drop" {
					w.finish(st)
					return
				}
				if w.tsEgress {
					st.use(TermTimestamp, 1, "egress_global_timestamp")
				}
				w.control(w.controls[2], st, func(st *state) { // egress
					if st.verdict == "drop" {
						w.finish(st)
						return
					}
					w.control(w.controls[3], st, func(st *state) { // compute checksum
						w.control(w.controls[4], st, func(st *state) { // deparser
							w.deparse(st)
							w.finish(st)
						})
					})
				})
			})
		})
	})
}

func (w *walker) full() bool {
	if len(w.paths) >= MaxPaths {
		w.truncated = true
	}
	return w.truncated
}

// finish records a complete path.
func (w *walker) finish(st *state) {
	if w.full() {
		return
	}
	verdictTerm := map[string]string{"send": TermSend, "drop": TermDrop, "punt": TermPunt}[st.verdict]
	what := map[string]string{"send": "P4 cube (entry, stages, send)", "drop": "P4 cube (entry, stages, drop)", "punt": "P4 cube (entry, stages, punt)"}[st.verdict]
	uses := append([]estimate.Use{{Term: verdictTerm, N: 1, What: what}, {Term: TermStateByte, N: float64(w.stateB), What: fmt.Sprintf("per-packet state reset (%d bytes)", w.stateB)}}, st.uses...)
	if st.mcast && st.verdict == "send" {
		uses = append(uses, estimate.Use{Term: TermClone, N: 1, What: "multicast (replication)"})
	}
	if w.replicates {
		uses = append(uses, estimate.Use{Term: TermReplicates, N: 1, What: "replication state (the program can copy packets)"})
	}
	p := &Path{Parser: st.parser, Valid: st.order, Tables: st.tables, Steps: st.steps, Verdict: st.verdict, Uses: uses}
	distinct := map[string]bool{}
	for _, s := range st.parser {
		distinct[s] = true
	}
	p.statesSeen = len(distinct)
	key := strings.Join(p.Parser, ">") + "|" + p.Describe()
	if w.seenPaths[key] {
		return
	}
	w.seenPaths[key] = true
	p.ID = len(w.paths) + 1
	w.paths = append(w.paths, p)
}

// control walks a top-level control (return and exit end it).
func (w *walker) control(c *sema.Control, st *state, k func(*state)) {
	if c.Decl.Body == nil {
		k(st)
		return
	}
	st.owner = "control " + c.Name
	st.stop = running
	w.stmts(c.Decl.Body.Stmts, st, func(st *state) {
		st.stop = running
		k(st)
	})
}

func (w *walker) stmts(ss []syntax.Stmt, st *state, k func(*state)) {
	if w.truncated {
		return
	}
	if len(ss) == 0 || st.stop != running {
		k(st)
		return
	}
	w.stmt(ss[0], st, func(st *state) { w.stmts(ss[1:], st, k) })
}

func (w *walker) stmt(s syntax.Stmt, st *state, k func(*state)) {
	switch x := s.(type) {
	case *syntax.AssignStmt:
		st.stmt()
		w.exprCosts(x.RHS, st)
		w.assign(x, st)
		k(st)
	case *syntax.CallStmt:
		w.call(x.Call, st, k)
	case *syntax.IfStmt:
		st.stmt()
		w.cond(x.Cond, st, func(st *state, v tri) {
			switch {
			case v == yes:
				w.stmt(x.Then, st, k)
			case x.Else != nil:
				w.stmt(x.Else, st, k)
			default:
				k(st)
			}
		})
	case *syntax.BlockStmt:
		if x.Annotations.Get("atomic") != nil {
			st.use(TermAtomic, 1, "@atomic block")
		}
		w.stmts(x.Stmts, st, k)
	case *syntax.ExitStmt:
		st.stop = stopExit
		k(st)
	case *syntax.ReturnStmt:
		if x.Value != nil {
			w.exprCosts(x.Value, st)
		}
		st.stop = stopReturn
		k(st)
	case *syntax.SwitchStmt:
		st.stmt()
		w.switchStmt(x, st, k)
	case *syntax.DeclStmt:
		if v, ok := x.Decl.(*syntax.VarDecl); ok && v.Init != nil {
			st.stmt()
			w.exprCosts(v.Init, st)
		}
		k(st)
	default:
		k(st)
	}
}

// assign follows what an assignment decides: the verdict, multicast,
// header validity of whole-header assignments.
func (w *walker) assign(a *syntax.AssignStmt, st *state) {
	lhs := w.canon(a.LHS, st, false)
	if lhs != "" {
		v, ok := w.value(a.RHS, st)
		if _, isSlice := a.LHS.(*syntax.Slice); ok && a.Op == "=" && !isSlice {
			st.facts[lhs] = v
		} else {
			st.facts[lhs] = nil
		}
		delete(st.notEq, lhs)
	}
	switch lhs {
	case "standard_metadata.egress_spec":
		st.verdict = "send"
		if v, ok := w.info.Consts[a.RHS]; ok {
			switch {
			case v.Int64() == 511:
				st.verdict = "drop"
			case v.Int64() == 510 || v.Int64() == w.cpuPort:
				st.verdict = "punt"
			}
		}
		return
	case "standard_metadata.mcast_grp":
		v, ok := w.info.Consts[a.RHS]
		st.mcast = !ok || v.Sign() != 0
		return
	}
	if lhs == "" || !sema.IsHeader(w.info.Types[a.LHS]) {
		return
	}
	t := w.info.Types[a.LHS]
	switch r := a.RHS.(type) {
	case *syntax.List:
		st.hdrs[lhs] = hinst{off: -1, bytes: headerBytes(t)}
	default:
		src := w.canon(r, st, false)
		if _, ok := st.hdrs[src]; ok || src == "" {
			st.hdrs[lhs] = hinst{off: -1, bytes: headerBytes(t)}
		} else {
			delete(st.hdrs, lhs)
		}
	}
}

// exprCosts prices what evaluating an expression calls (externs in
// expressions, P4 functions).
func (w *walker) exprCosts(e syntax.Expr, st *state) {
	walkExpr(e, func(x syntax.Expr) {
		c, ok := x.(*syntax.Call)
		if !ok {
			return
		}
		cr := w.info.Calls[c]
		if cr == nil {
			return
		}
		switch cr.Kind {
		case sema.CallFunction:
			if cr.Function != nil && cr.Function.Decl.Body != nil {
				st.use(TermStmt, float64(countStmts(cr.Function.Decl.Body.Stmts)), "function "+cr.Function.Name)
			}
		case sema.CallExternFunc:
			w.externFunc(c, cr, st)
		case sema.CallExternMethod:
			if cr.Instance != nil {
				w.externMethod(c, cr, st)
			}
		}
	})
}

func countStmts(ss []syntax.Stmt) int {
	n := 0
	for _, s := range ss {
		switch x := s.(type) {
		case *syntax.BlockStmt:
			n += countStmts(x.Stmts)
		case *syntax.IfStmt:
			n++
			n += countStmts([]syntax.Stmt{x.Then})
		case *syntax.EmptyStmt:
		default:
			n++
		}
	}
	return n
}

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
		if !b.hit && t.Kind != ir.KindKeyless && t.Kind != ir.KindConst {
			s.use(TermMiss, 1, what)
		}
		if b.hit && t.DirectCounter != nil {
			s.use(TermDirectCount, 1, what)
		}
		if b.hit && t.DirectMeter != nil {
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
			w.runAction(b.action, s, func(s *state) { k(s, o) })
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
