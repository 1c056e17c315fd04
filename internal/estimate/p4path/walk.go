package p4path

import (
	"fmt"
	"math/big"
	"strings"

	"github.com/edgenf/edgenf/internal/estimate"
	"github.com/edgenf/edgenf/internal/p4/backend"
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
	owner     string       // what statements are attributed to
	pblock    *sema.Parser // the parser running (nil: w.parser; PSA's egress parser)
	igValid   int          // PSA: the headers of order the ingress parser extracted (-1: all)
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
	// hit is the table whose hit's action is running (nil otherwise):
	// PSA's DirectCounter.count and DirectMeter.execute act only there;
	// counted is set once its direct counter was priced.
	hit     *ir.Table
	counted bool
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
	prog *ir.Program
	info *sema.Info
	opt  Options
	// tableCalls: the compiled program calls its tables as global
	// functions (backend.InlinesTables)
	tableCalls bool
	hType      *sema.Struct
	mType      *sema.Struct
	smType     *sema.Struct
	parser     *sema.Parser
	controls   []*sema.Control // verify, ingress, egress, compute, deparser; PSA: ingress, ingress deparser, egress, egress deparser
	psa        *psaPipeline    // PSA programs (psa.go)
	// roots names the block parameters by type (rootKind): "hdr",
	// "meta", "standard_metadata"; PSA's own (psa.go)
	roots      map[sema.Type]string
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
	w := &walker{prog: prog, info: info, opt: opt, tableCalls: !backend.InlinesTables(prog), mayChange: map[string]map[string]bool{}, seenPaths: map[string]bool{}, loopCap: 1,
		roots: map[sema.Type]string{}}
	if info.Main != nil && info.Main.Arch == "psa" && len(info.Main.Blocks) == sema.PSABlocks {
		if err := w.bindPSA(info.Main.Blocks); err != nil { // psa.go
			return nil, err
		}
		w.finishSetup()
		return w, nil
	}
	if info.Main == nil || info.Main.Arch != "v1model" || len(info.Main.Blocks) != 6 {
		return nil, fmt.Errorf("estimating needs a v1model program (V1Switch with six blocks) or a PSA program (PSA_Switch)")
	}
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
	for t, name := range map[*sema.Struct]string{w.hType: "hdr", w.mType: "meta", w.smType: "standard_metadata"} {
		if t != nil {
			w.roots[t] = name
		}
	}
	w.cpuPort = int64(opt.CPUPort)
	if w.cpuPort == 0 {
		w.cpuPort = 255
	}
	w.stateB = stateBytes(w.hType) + stateBytes(w.mType)
	w.finishSetup()
	return w, nil
}

// finishSetup sizes the parser loops and scans the program.
func (w *walker) finishSetup() {
	for _, n := range []int{stackElems(w.hType), 1} {
		if n > w.loopCap {
			w.loopCap = n
		}
	}
	w.scanProgram()
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
		facts: map[string]*big.Int{}, notEq: map[string][]*big.Int{}, igValid: -1}
	if w.psa != nil {
		w.runPSA(st) // psa.go
		return
	}
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
	if w.psa != nil {
		uses = append(uses, estimate.Use{Term: TermPSA, N: 1, What: "PSA pipeline (architecture metadata)"})
	}
	valid := st.order
	if st.igValid >= 0 && st.igValid < len(valid) {
		valid = valid[:st.igValid] // PSA: what the egress parser extracted is in Steps
	}
	p := &Path{Parser: st.parser, Valid: valid, Tables: st.tables, Steps: st.steps, Verdict: st.verdict, Uses: uses}
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
	if w.psa != nil && w.psaAssign(lhs, a, st) { // psa.go
		return
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
			} else if cr.Method == "lookahead" {
				st.use(TermLookahead, 1, "parser: lookahead")
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
