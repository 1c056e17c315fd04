package backend

// Control blocks, tables, statements and extern calls. Over 600 lines: the
// C for every statement kind and every v1model extern function is chosen
// here, in one switch each; the externs with their own runtime (meters,
// replication, digests, atomic blocks) have their own files.

import (
	"fmt"
	"math/bits"
	"sort"
	"strings"

	"github.com/edgenf/edgenf/internal/p4/ir"
	"github.com/edgenf/edgenf/internal/p4/sema"
	"github.com/edgenf/edgenf/internal/p4/syntax"
)

func actName(a *sema.Action) string {
	if a.Control != nil {
		return "act_" + ir.Sanitize(a.Control.Name) + "_" + ir.Sanitize(a.Name)
	}
	return "act_" + ir.Sanitize(a.Name)
}

// localStorage gives a local variable a slot in the state struct.
func (g *gen) localStorage(v *sema.Var, pos syntax.Pos) string {
	if c, ok := g.lv[v]; ok {
		return c
	}
	name := fmt.Sprintf("l%d_%s", v.ID, ir.Sanitize(v.Name))
	g.state = append(g.state, g.decl(v.Type, name, pos))
	g.lv[v] = "s->" + name
	return g.lv[v]
}

func (g *gen) controlLocals(locals []sema.Entity) {
	for _, l := range locals {
		if v, ok := l.(*sema.Var); ok {
			g.localStorage(v, v.Pos)
		}
	}
}

func (g *gen) action(a *sema.Action) {
	if a.Control != nil {
		g.controlLocals(a.Control.Locals)
	}
	var params []string
	for _, p := range a.Params {
		if p.Dir != "" {
			g.paramStorage(p) // copy-in/copy-out (calls.go)
			continue
		}
		name := "a_" + ir.Sanitize(p.Name)
		if isWide(p.Type) {
			params = append(params, "const __u8 *"+name)
		} else {
			params = append(params, "__u64 "+name)
		}
		g.lv[p] = name
	}
	sig := "ctx_t *ctx, struct p4_state *s"
	if len(params) > 0 {
		sig += ", " + strings.Join(params, ", ")
	}
	g.line("/* action %s */", comment(a.FullName))
	g.line("static __always_inline int %s(%s)", actName(a), sig)
	g.line("{")
	g.indent++
	g.inAction = true
	for _, s := range a.Decl.Body.Stmts {
		g.stmt(s)
	}
	g.inAction = false
	g.line("return 0;")
	g.indent--
	g.line("}")
	g.line("")
}

// dataFromValue renders the action data read from a table value at v.
func (g *gen) dataFromValue(t *ir.Table, a *ir.Action, v string) []string {
	var args []string
	for _, p := range a.Params {
		off := t.ParamOff
		if t.Profile != nil { // v is a member's value (selector.go)
			off = ir.MemberParamOff
		}
		at := fmt.Sprintf("%s + %d", v, off+p.Offset)
		if p.Width > 64 {
			args = append(args, at)
		} else {
			// v is a map value: wide loads (packet.go)
			args = append(args, fmt.Sprintf("(p4_ldbe(%s, %d) & %s)", at, p.Size, mask(p.Width)))
		}
	}
	return args
}

// constData renders the constant action data of a default action or entry.
func (g *gen) constData(ac *sema.ActionCall) []string {
	a := g.p.ActionOf[ac.Action]
	var args []string
	for i, p := range a.Params {
		if p.Width > 64 {
			args = append(args, byteLiteral(ac.Args[i], p.Size))
		} else {
			args = append(args, cint(ac.Args[i]))
		}
	}
	return args
}

func tblName(t *ir.Table) string { return "tbl_" + ir.Sanitize(t.Name) }

// table emits tbl_X(ctx, s, r): build the key, look up, run the action.
func (g *gen) table(t *ir.Table) {
	sn := ir.Sanitize(t.Name)
	g.pos = t.Ent.Decl.Pos
	defer func() { g.pos = syntax.Pos{} }()
	// runner: execute the action stored in a value
	g.line("static __always_inline int %s_run(ctx_t *ctx, struct p4_state *s, __u8 *v, struct p4_tres *r)", tblName(t))
	g.line("{")
	g.indent++
	if t.Profile != nil {
		g.resolveMember(t) // selector.go
	}
	g.line("r->action = *(__u32 *)v;")
	g.line("switch (r->action) {")
	for _, ta := range t.Actions {
		g.line("case 0x%08x: /* %s */", ta.Action.ID, comment(ta.Action.Name))
		g.tableAction(t, ta.Action.Ent, g.dataFromValue(t, ta.Action, "v"))
	}
	if t.Profile != nil && len(t.Profile.Actions) > len(t.Actions) {
		// a member of a shared profile whose action this table does not list
		g.line("default:")
		g.line("\treturn P4_AP_MISS;")
	}
	g.line("}")
	g.line("return 0;")
	g.indent--
	g.line("}")
	g.line("")
	if t.Kind == ir.KindScan {
		g.scanCallback(t)
	}
	g.line("/* table %s */", comment(t.Name))
	g.line("static __always_inline int %s_inner(ctx_t *ctx, struct p4_state *s, struct p4_tres *r)", tblName(t))
	g.line("{")
	g.indent++
	g.line("__u32 zero = 0;")
	if t.Kind == ir.KindKeyless {
		g.line("__u8 *d;")
	} else {
		g.line("__u8 *v = 0, *d;")
	}
	g.line("r->hit = 0;")
	g.line("r->action = 0;")
	aware := g.awareDirectMeter(t.DirectMeter) // psa_dmeter.go
	if aware {
		g.line("%s = 0;", g.dmHit(t))
	} else if t.DirectMeter != nil && t.DirectMeter.Ent.Extern.Name != "DirectMeter" {
		g.needDMColor()
		g.line("s->dm_color = 0; /* GREEN on a miss */")
	}
	kbase := "s->k_" + sn
	if t.Kind == ir.KindLPM {
		g.line("*(__u32 *)%s = %d;", kbase, t.KeyBytes*8)
		kbase = "(s->k_" + sn + " + 4)"
	}
	switch t.Kind {
	case ir.KindHash, ir.KindLPM, ir.KindScan:
		for _, k := range t.Keys {
			e := k.Ent.Elem.Expr
			if k.Width > 64 {
				g.line("p4_memcpy(%s + %d, %s, %d);", kbase, k.Offset, g.wref(e), k.Size)
			} else {
				g.line("p4_stbe(%s + %d, %s, %d);", kbase, k.Offset, g.rv(e), k.Size) // key buffer in p4_state: wide stores
			}
		}
	}
	switch t.Kind {
	case ir.KindHash, ir.KindLPM:
		g.line("v = bpf_map_lookup_elem(&%s, s->k_%s);", t.MapName, sn)
	case ir.KindScan:
		g.line("{")
		g.line("\tstruct p4_scan sc = { 0, 0 };")
		g.line("\t__u32 *n = bpf_map_lookup_elem(&%s, &zero);", t.CountMapName)
		g.line("\tif (n && *n)")
		g.line("\t\tbpf_loop(*n < %d ? *n : %d, scan_%s, &sc, 0);", t.Size, t.Size, sn)
		g.line("\tif (sc.prio) {")
		g.line("\t\t__u32 i = sc.idx;")
		if aware {
			g.line("\t\t%s = i;", g.dmIdx(t))
		}
		g.line("\t\t__u8 *e = bpf_map_lookup_elem(&%s, &i);", t.MapName)
		g.line("\t\tif (e)")
		g.line("\t\t\tv = e + %d;", t.EntryValueOff)
		g.line("\t}")
		g.line("}")
	case ir.KindConst:
		g.constEntries(t)
	}
	if t.Kind != ir.KindKeyless {
		g.line("if (v) {")
		g.line("\tr->hit = 1;")
		psaCount := psaDirectCounter(t.DirectCounter)
		if t.DirectCounter != nil && !psaCount { // v1model: every hit counts
			g.line("\t__sync_fetch_and_add((__u64 *)(v + %d), 1);", t.CounterOff)
			g.line("\t__sync_fetch_and_add((__u64 *)(v + %d), s->sm.f_packet_length);", t.CounterOff+8)
		}
		g.directMeterExec(t)
		if t.IdleOff >= 0 {
			g.line("\tp4_touch((__u64 *)(v + %d));", t.IdleOff)
		}
		if psaCount {
			g.line("\t%s = 0;", g.dcCalls(t))
		}
		if t.Profile == nil && !aware && !psaCount {
			g.line("\treturn %s_run(ctx, s, v, r);", tblName(t))
		} else {
			g.line("\tint e = %s_run(ctx, s, v, r);", tblName(t))
			if psaCount { // PSA: the calls of count() the action made
				g.line("\tif (%s) {", g.dcCalls(t))
				g.line("\t\t__sync_fetch_and_add((__u64 *)(v + %d), %s);", t.CounterOff, g.dcCalls(t))
				g.line("\t\t__sync_fetch_and_add((__u64 *)(v + %d), (__u64)%s * s->sm.f_packet_length);", t.CounterOff+8, g.dcCalls(t))
				g.line("\t}")
			}
			if aware {
				g.line("\t%s = 0;", g.dmHit(t))
			}
			if t.Profile != nil { // an empty group or a dangling reference: a miss (selector.go)
				g.line("\tif (e != P4_AP_MISS)")
				g.line("\t\treturn e;")
				g.line("\tr->hit = 0;")
			} else {
				g.line("\treturn e;")
			}
		}
		g.line("}")
	}
	g.line("d = bpf_map_lookup_elem(&%s, &zero);", t.DefaultMapName)
	if t.Profile != nil {
		g.line("if (d && *(__u32 *)d) {")
		g.line("\tint e = %s_run(ctx, s, d, r);", tblName(t))
		g.line("\tif (e != P4_AP_MISS)")
		g.line("\t\treturn e;")
		g.line("}")
	} else {
		g.line("if (d && *(__u32 *)d)")
		g.line("\treturn %s_run(ctx, s, d, r);", tblName(t))
	}
	if t.Default != nil {
		a := g.p.ActionOf[t.Default.Action]
		g.line("r->action = 0x%08x;", a.ID)
		g.tableAction(t, t.Default.Action, g.constData(t.Default))
	} else {
		g.line("return 0;")
	}
	g.indent--
	g.line("}")
	g.line("")
	// A separately verified BPF function: keeps the verifier's path count
	// additive across tables (inlined in small programs, stages.go).
	g.line("%s int %s(ctx_t *ctx)", g.tableAttr(), tblName(t))
	g.line("{")
	g.line("	__u32 zero = 0;")
	g.line("	struct p4_state *s = bpf_map_lookup_elem(&p4_state_map, &zero);")
	g.line("	struct p4_tres r = { 0, 0 };")
	g.line("	int e;")
	g.line("")
	g.line("\tP4_KEEP(ctx);")
	g.line("\tif (!s)")
	g.line("		return 0;")
	g.line("	e = %s_inner(ctx, s, &r);", tblName(t))
	g.line("	s->tr_hit = r.hit;")
	g.line("	s->tr_action = r.action;")
	g.line("	return e;")
	g.line("}")
	g.line("")
}

func (g *gen) scanCallback(t *ir.Table) {
	sn := ir.Sanitize(t.Name)
	kb := t.KeyBytes
	g.line("static long scan_%s(__u32 i, void *vc)", sn)
	g.line("{")
	g.indent++
	g.line("struct p4_scan *sc = vc;")
	g.line("__u32 zero = 0, idx = i, prio;")
	g.line("struct p4_state *s = bpf_map_lookup_elem(&p4_state_map, &zero);")
	g.line("__u8 *e = bpf_map_lookup_elem(&%s, &idx);", t.MapName)
	g.line("__u8 diff = 0;")
	g.line("if (!s || !e)")
	g.line("\treturn 1;")
	g.line("prio = *(__u32 *)e;")
	g.line("if (prio <= sc->prio)")
	g.line("\treturn 0;")
	g.line("#pragma unroll")
	g.line("for (int j = 0; j < %d; j++)", kb)
	g.line("\tdiff |= (s->k_%s[j] & e[%d + j]) ^ e[8 + j];", sn, 8+kb)
	g.line("if (diff)")
	g.line("\treturn 0;")
	for _, k := range t.Keys {
		if k.MatchKind != "range" {
			continue
		}
		lo := t.EntryRangeOff + k.RangeOff
		g.line("{")
		g.line("\t__u64 kv = p4_be(s->k_%s + %d, %d);", sn, k.Offset, k.Size)
		g.line("\tif (kv < p4_be(e + %d, %d) || kv > p4_be(e + %d, %d))", lo, k.Size, lo+k.Size, k.Size)
		g.line("\t\treturn 0;")
		g.line("}")
	}
	g.line("sc->idx = i;")
	g.line("sc->prio = prio;")
	g.line("return 0;")
	g.indent--
	g.line("}")
	g.line("")
}

// constEntries emits an if-chain for const entries (first match wins,
// explicit priorities ordered highest first).
func (g *gen) constEntries(t *ir.Table) {
	ents := append([]*sema.Entry(nil), t.Ent.Entries...)
	if k := lpmOnly(t); k >= 0 {
		// an lpm table (no ternary, range or optional key): the longest
		// prefix wins, whatever the order, as in BMv2
		sort.SliceStable(ents, func(i, j int) bool { return g.prefixLen(ents[i], k, t) > g.prefixLen(ents[j], k, t) })
	} else {
		sort.SliceStable(ents, func(i, j int) bool { return ents[i].Priority > ents[j].Priority })
	}
	for _, en := range ents {
		var conds []string
		for i, k := range t.KeysDecl {
			if i >= len(en.Keys) {
				break
			}
			c := g.keysetCond(en.Keys[i], k.Ent.Elem.Expr, k.Ent.Type)
			if c != "1" {
				conds = append(conds, c)
			}
		}
		cond := "1"
		if len(conds) > 0 {
			cond = strings.Join(conds, " && ")
		}
		a := g.p.ActionOf[en.Action.Action]
		g.line("if (%s) {", unparen(cond))
		g.line("\tr->hit = 1;")
		g.line("\tr->action = 0x%08x;", a.ID)
		g.indent++
		g.tableAction(t, en.Action.Action, g.constData(en.Action))
		g.indent--
		g.line("}")
	}
}

// lpmOnly is the index of t's lpm key when its other keys are exact; -1
// otherwise.
func lpmOnly(t *ir.Table) int {
	k := -1
	for i, kf := range t.KeysDecl {
		switch kf.MatchKind {
		case "exact":
		case "lpm":
			k = i
		default:
			return -1
		}
	}
	return k
}

// prefixLen is the prefix length of an entry's lpm key k: the mask's ones,
// the key's width for a plain value, 0 for _.
func (g *gen) prefixLen(en *sema.Entry, k int, t *ir.Table) int {
	if k >= len(en.Keys) {
		return 0
	}
	switch x := en.Keys[k].(type) {
	case *syntax.Default:
		return 0
	case *syntax.Mask:
		if m, ok := g.info.Consts[x.Mask]; ok {
			n := 0
			for _, w := range m.Bits() {
				n += bits.OnesCount64(uint64(w))
			}
			return n
		}
	}
	return t.KeysDecl[k].Width
}

// keysetCond renders the match of key expression k against one keyset element.
func (g *gen) keysetCond(ks syntax.Expr, k syntax.Expr, kt sema.Type) string {
	switch x := ks.(type) {
	case *syntax.Default:
		return "1"
	case *syntax.Mask:
		if isWide(kt) {
			return g.wideMaskCond(x, k, kt) // widemask.go
		}
		m := g.rv(x.Mask)
		return fmt.Sprintf("((%s & %s) == (%s & %s))", g.rv(k), m, g.rv(x.Value), m)
	case *syntax.Range:
		kv := g.rv(k)
		return fmt.Sprintf("((__u64)%s >= %s && (__u64)%s <= %s)", kv, g.rv(x.Lo), kv, g.rv(x.Hi))
	}
	if isWide(kt) {
		return fmt.Sprintf("p4_memeq(%s, %s, %d)", g.wref(k), g.wref(ks), width(kt)/8)
	}
	return fmt.Sprintf("(%s == %s)", g.rv(k), g.rv(ks))
}

// applyTable emits the application of t (call is t.apply()) and returns the result variable.
func (g *gen) applyTable(call *syntax.Call) string {
	cr := g.info.Calls[call]
	if cr == nil || cr.Kind != sema.CallTableApply {
		g.unsupported(call.Pos, "this call")
		return "r0"
	}
	t := g.p.TableOf[cr.Table]
	r := g.newTmp("r")
	g.line("struct p4_tres %s;", r)
	g.line("if (%s(ctx))", tblName(t))
	g.line("\treturn 1;")
	g.line("%s.hit = s->tr_hit;", r)
	g.line("%s.action = s->tr_action;", r)
	return r
}

func (g *gen) control(c *sema.Control) {
	g.controlLocals(c.Locals)
	g.line("/* control %s */", comment(c.Name))
	g.line("%s int ctl_%s(ctx_t *ctx)", g.stageAttr(), ir.Sanitize(c.Name)) // stages.go
	g.line("{")
	g.indent++
	g.stateLookup()
	g.ctorInits(c.Ctor, c.CtorArgs) // calls.go
	g.localInits(c.Decl.Locals)
	for _, s := range c.Decl.Body.Stmts {
		g.stmt(s)
	}
	g.line("return 0;")
	g.indent--
	g.line("}")
	g.line("")
}

func (g *gen) block(s syntax.Stmt) {
	g.line("{")
	g.indent++
	if b, ok := s.(*syntax.BlockStmt); ok {
		for _, x := range b.Stmts {
			g.stmt(x)
		}
	} else {
		g.stmt(s)
	}
	g.indent--
	g.line("}")
}

func (g *gen) stmt(s syntax.Stmt) {
	saved := g.pos
	g.pos = s.NodePos()
	defer func() { g.pos = saved }()
	switch x := s.(type) {
	case *syntax.BlockStmt:
		if x.Annotations.Get("atomic") != nil {
			g.atomicBlock(x)
			return
		}
		g.block(x)
	case *syntax.EmptyStmt:
	case *syntax.AssignStmt:
		g.assign(x.LHS, x.RHS, x.Op)
	case *syntax.IfStmt:
		g.line("{")
		g.indent++
		cond := g.rv(x.Cond)
		g.line("if (%s)", unparen(cond))
		g.block(x.Then)
		if x.Else != nil {
			g.line("else")
			g.block(x.Else)
		}
		g.indent--
		g.line("}")
	case *syntax.ExitStmt:
		g.line("return 1;")
	case *syntax.ReturnStmt:
		if g.inParser {
			g.unsupported(x.Pos, "return in a parser")
		}
		if g.inFunction != nil && x.Value != nil {
			g.returnValue(x.Value) // calls.go
			return
		}
		g.line("return 0;")
	case *syntax.CallStmt:
		g.callStmt(x.Call)
	case *syntax.SwitchStmt:
		g.switchStmt(x)
	case *syntax.DeclStmt:
		switch d := x.Decl.(type) {
		case *syntax.VarDecl:
			v := g.info.Decls[d].(*sema.Var)
			loc := g.localStorage(v, d.Pos)
			if d.Init != nil {
				g.assignTo(loc, v.Type, d.Init)
			} else {
				g.invalidate(loc, v.Type) // calls.go: a header declared is invalid (P4-16 8.26)
			}
		case *syntax.ConstDecl:
		}
	default:
		g.unsupported(s.NodePos(), "this statement")
	}
}

func (g *gen) switchStmt(x *syntax.SwitchStmt) {
	t := g.typeOf(x.X)
	g.line("{")
	g.indent++
	var sel string
	_, isRun := t.(*sema.ActionRunT)
	if isRun {
		m := x.X.(*syntax.Member)
		r := g.applyTable(m.X.(*syntax.Call))
		sel = r + ".action"
	} else {
		sel = g.rv(x.X)
	}
	g.line("switch (%s) {", sel)
	for _, cs := range x.Cases {
		for _, l := range cs.Labels {
			if _, ok := l.(*syntax.Default); ok {
				g.line("default:")
				continue
			}
			if isRun {
				a := g.info.Uses[l.(*syntax.Ident)].(*sema.Action)
				g.line("case 0x%08x: /* %s */", g.p.ActionOf[a].ID, comment(a.Name))
			} else {
				g.line("case %s:", g.rv(l))
			}
		}
		if cs.Body != nil {
			g.block(cs.Body)
			g.line("break;")
		}
	}
	g.line("}")
	g.indent--
	g.line("}")
}

func (g *gen) callStmt(call *syntax.Call) {
	cr := g.info.Calls[call]
	if cr == nil {
		g.unsupported(call.Pos, "this call")
		return
	}
	switch cr.Kind {
	case sema.CallAction:
		g.directAction(call, cr.Action) // calls.go
	case sema.CallTableApply:
		g.line("{")
		g.indent++
		g.applyTable(call)
		g.indent--
		g.line("}")
	case sema.CallHeaderMethod:
		switch cr.Method {
		case "setValid":
			g.line("%s.valid = 1;", g.lval(cr.Recv))
			g.unionInvalidateOthers(cr.Recv, "")
		case "setInvalid":
			g.line("%s.valid = 0;", g.lval(cr.Recv))
		case "isValid":
		case "push_front", "pop_front":
			g.stackShift(cr)
		}
	case sema.CallExternMethod:
		g.externMethod(call, cr)
	case sema.CallBlockApply:
		if cr.SubParser != nil {
			g.applySubParser(call, cr.SubParser) // subparser.go
			return
		}
		if sp, ok := g.paramSubParser(call, cr); ok { // ctlparam.go
			if sp != nil {
				g.applySubParser(call, sp)
			}
			return
		}
		g.applySub(call, cr.Sub)
	case sema.CallFunction:
		g.callFunction(call, cr.Function)
	case sema.CallExternFunc:
		g.externFunc(call, cr)
	default:
		g.unsupported(call.Pos, "this call")
	}
}

func (g *gen) externMethod(call *syntax.Call, cr *sema.CallRef) {
	if cr.Instance == nil {
		if id, ok := cr.Recv.(*syntax.Ident); ok {
			if v, ok := g.info.Uses[id].(*sema.Var); ok {
				if et, ok := v.Type.(*sema.ExternT); ok {
					switch {
					case et.Decl.Name == "packet_in" && cr.Method == "extract" && g.inParser:
						if len(call.Args) == 2 {
							g.extractVarbit(call.Args[0].Value, call.Args[1].Value)
							return
						}
						if len(call.Args) == 1 && call.Args[0].Value == nil {
							g.skipHeader(cr.Count) // lookahead.go: extract<T>(_)
							return
						}
						g.extract(call.Args[0].Value)
						return
					case et.Decl.Name == "packet_in" && cr.Method == "advance" && g.inParser:
						g.advance(call.Args[0].Value)
						return
					case et.Decl.Name == "packet_in" && cr.Method == "lookahead" && g.inParser:
						g.line("(void)%s;", g.lookahead(call))
						return
					case et.Decl.Name == "packet_out" && cr.Method == "emit":
						g.emit(call.Args[0].Value)
						return
					}
				}
			}
		}
		g.unsupported(call.Pos, "this method call")
		return
	}
	in := cr.Instance
	if r := g.p.RegisterOf[in]; r != nil && g.atomicRegisterOp(call, cr, r) {
		return
	}
	if in.Extern.Name == "direct_meter" {
		g.directMeterRead(call, cr)
		return
	}
	switch in.Extern.Name + "." + cr.Method {
	case "counter.count", "Counter.count": // PSA's Counter is v1model's counter
		c := g.p.CounterOf[in]
		g.line("{")
		g.line("\t__u32 ci = %s;", g.cellIndex(call.Args[0].Value))
		g.line("\tstruct p4_ctr *c = ci < %d ? bpf_map_lookup_elem(&%s, &ci) : 0;", c.Size, c.MapName)
		g.line("\tif (c) {")
		g.line("\t\tc->packets++;")
		g.line("\t\tc->bytes += s->sm.f_packet_length;")
		g.line("\t}")
		g.line("}")
	case "direct_counter.count":
		// v1model: counted by the table on every hit
	case "DirectCounter.count":
		// PSA: counted by the table after the action, once per call, on a
		// hit only (psaDirectCounter)
		if c := g.p.CounterOf[in]; c != nil && c.Table != nil {
			g.line("%s++;", g.dcCalls(c.Table))
		}
	case "meter.execute_meter":
		// v1model: GREEN 0, YELLOW 1, RED 2; an index out of range is GREEN
		m := g.p.MeterOf[in]
		out := call.Args[1].Value
		if isWide(g.typeOf(out)) || width(g.typeOf(out)) == 0 {
			g.unsupported(out.NodePos(), "execute_meter into this type")
			return
		}
		units := "1"
		if m.Unit == "bytes" {
			units = "s->sm.f_packet_length"
		}
		g.line("{")
		g.line("\t__u32 mi = %s;", g.cellIndex(call.Args[0].Value))
		g.line("\t%s = mi < %d ? p4_meter_exec(&%s, mi, %s) & %s : 0;", g.lval(out), m.Size, m.MapName, units, mask(width(g.typeOf(out))))
		g.line("}")
	case "register.read":
		// v1model: an out-of-range index reads 0
		r := g.p.RegisterOf[in]
		out := call.Args[0].Value
		if isWide(g.typeOf(out)) || width(g.typeOf(out)) == 0 {
			g.unsupported(out.NodePos(), "register.read into this type")
			return
		}
		g.line("{")
		g.line("	__u32 ri = %s;", g.cellIndex(call.Args[1].Value))
		g.line("	__u64 *rc = ri < %d ? bpf_map_lookup_elem(&%s, &ri) : 0;", r.Size, r.MapName)
		g.line("	%s = rc ? (*(volatile __u64 *)rc & %s) : 0;", g.lval(out), mask(r.Width))
		g.line("}")
	case "register.write", "Register.write":
		// v1model and PSA: an out-of-range index is ignored
		r := g.p.RegisterOf[in]
		g.line("{")
		g.line("	__u32 ri = %s;", g.cellIndex(call.Args[0].Value))
		g.line("	__u64 rv = %s;", regEncode(r, fmt.Sprintf("(__u64)(%s) & %s", g.rv(call.Args[1].Value), mask(r.Width))))
		g.line("	__u64 *rc = ri < %d ? bpf_map_lookup_elem(&%s, &ri) : 0;", r.Size, r.MapName)
		g.line("	if (rc)")
		g.line("		*(volatile __u64 *)rc = rv;")
		g.line("}")
	default:
		if g.psaExternStmt(call, cr) { // psa_externs.go
			return
		}
		if v, ok := g.psaExternValue(call, cr); ok { // psa_externs.go: the value unused
			g.line("(void)%s;", v)
			return
		}
		g.unsupported(call.Pos, in.Extern.Name+"."+cr.Method)
	}
}

// packList packs a list of fields ({a, b, ...}, a header or a single value)
// into s->cbuf and returns the number of bits.
func (g *gen) packList(e syntax.Expr) int { return g.packListFrom(e, 0) }

// packListFrom packs the list from bit start of s->cbuf on; it returns the
// bit where the list ends.
func (g *gen) packListFrom(e syntax.Expr, start int) int {
	bits := start
	var add func(e syntax.Expr, t sema.Type)
	addField := func(c string, t sema.Type, pos syntax.Pos) {
		w := width(t)
		if isWide(t) {
			if bits%8 != 0 {
				g.unsupported(pos, "a wide field at a non-byte offset in a field list")
			}
			g.line("p4_memcpy(s->cbuf + %d, %s, %d);", bits/8, c, w/8)
		} else {
			g.line("%s", pack("s->cbuf", bits, w, "(__u64)"+c))
		}
		bits += w
	}
	var addStruct func(c string, st *sema.Struct, pos syntax.Pos)
	addStruct = func(c string, st *sema.Struct, pos syntax.Pos) {
		for _, f := range st.Fields {
			if _, ok := f.Type.(*sema.Stack); ok {
				g.unsupported(pos, "a header stack in a field list")
				continue
			}
			if sub, ok := f.Type.(*sema.Struct); ok {
				addStruct(c+".f_"+f.Name, sub, pos)
				continue
			}
			if vb, ok := f.Type.(*sema.Varbit); ok {
				bits = g.packVarbit(c+".f_"+f.Name, vb, bits, pos)
				continue
			}
			addField(c+".f_"+f.Name, f.Type, pos)
		}
	}
	add = func(e syntax.Expr, t sema.Type) {
		switch x := e.(type) {
		case *syntax.List:
			for _, el := range x.Elems {
				add(el, g.typeOf(el))
			}
			return
		}
		if st, ok := t.(*sema.Struct); ok {
			addStruct(g.lval(e), st, e.NodePos())
			return
		}
		if vb, ok := t.(*sema.Varbit); ok {
			bits = g.packVarbit(g.lval(e), vb, bits, e.NodePos())
			return
		}
		if tt, ok := t.(*sema.Tuple); ok {
			base := g.lval(e)
			for i, el := range tt.Elems {
				c := fmt.Sprintf("%s.f%d", base, i)
				if sub, ok := el.(*sema.Struct); ok {
					addStruct(c, sub, e.NodePos())
				} else {
					addField(c, el, e.NodePos())
				}
			}
			return
		}
		if _, ok := t.(*sema.InfInt); ok {
			g.errorf(e.NodePos(), "field list elements need a width; write e.g. 8w0")
			return
		}
		if isWide(t) {
			addField(g.wref(e), t, e.NodePos())
			return
		}
		addField(g.rv(e), t, e.NodePos())
	}
	add(e, g.typeOf(e))
	if (bits+7)/8 > g.cbuf {
		g.cbuf = (bits + 7) / 8
	}
	return bits
}

func (g *gen) algo(e syntax.Expr) string {
	if m, ok := e.(*syntax.Member); ok {
		return m.Name
	}
	return ""
}

func (g *gen) externFunc(call *syntax.Call, cr *sema.CallRef) {
	args := call.Args
	switch cr.Method {
	case "clone", "clone3", "clone_preserving_field_list", "resubmit", "resubmit_preserving_field_list",
		"recirculate", "recirculate_preserving_field_list":
		g.replCall(call, cr) // replicate.go
	case "mark_to_drop":
		g.line("s->sm.f_egress_spec = P4_DROP_PORT;")
		g.line("s->sm.f_mcast_grp = 0;")
	case "log_msg":
		g.logCall(call)
	case "digest":
		g.digestCall(call)
	case "static_assert":
	case "assert", "assume":
		g.assertCheck(call, cr)
	case "random":
		g.random(call)
	case "truncate":
		g.truncate(call)
	case "verify":
		g.line("if (!(%s)) {", g.rv(args[0].Value))
		g.line("\ts->sm.f_parser_error = %s;", g.rv(args[1].Value))
		g.line("\tgoto st_reject;")
		g.line("}")
	case "verify_checksum", "update_checksum", "verify_checksum_with_payload", "update_checksum_with_payload":
		payload := strings.HasSuffix(cr.Method, "_with_payload")
		alg := g.algo(args[3].Value)
		if alg != "csum16" {
			g.unsupported(args[3].Value.NodePos(), "checksum algorithm "+alg+" (edgenf supports csum16)")
			return
		}
		ft := g.typeOf(args[2].Value)
		if width(ft) != 16 {
			g.errorf(args[2].Value.NodePos(), "csum16 needs a bit<16> checksum field")
			return
		}
		g.line("if (%s) {", unparen(g.rv(args[0].Value)))
		g.indent++
		sum, fast := g.csumSum(args[1].Value) // from the field values (packet.go)
		if !fast {
			bits := g.packList(args[1].Value)
			sum = fmt.Sprintf("p4_sum16(s->cbuf, %d)", (bits+7)/8)
		}
		if payload {
			g.payloadSum = true
			sum = fmt.Sprintf("((__u64)%s + p4_payload_sum(ctx, &s->off, s->pbuf))", sum)
		}
		if strings.HasPrefix(cr.Method, "verify") {
			g.line("if (p4_fold16(%s) != %s)", sum, g.rv(args[2].Value))
			g.line("\ts->sm.f_checksum_error = 1;")
		} else {
			g.line("%s = p4_fold16(%s);", g.lval(args[2].Value), sum)
		}
		g.indent--
		g.line("}")
	case "hash":
		if g.listHasVarbit(args[3].Value) {
			g.unsupported(args[3].Value.NodePos(), "hashing a varbit field (checksums over varbit fields are supported)")
			return
		}
		out := args[0].Value
		ow := width(g.typeOf(out))
		alg := g.algo(args[1].Value)
		g.line("{")
		g.indent++
		g.line("__u64 h = %s;", g.hashList(alg, args[3].Value, args[1].Value.NodePos(), call.Pos))
		g.line("__u64 mx = %s;", g.rv(args[4].Value))
		g.line("%s = ((__u64)%s + (mx ? h %% mx : h)) & %s;", g.lval(out), g.rv(args[2].Value), mask(ow))
		g.indent--
		g.line("}")
	default:
		g.unsupported(call.Pos, "extern "+cr.Method)
	}
}

// hashList packs the fields of list e into s->cbuf (lines generated) and
// returns the C value of their hash by algorithm alg (v1model's
// HashAlgorithm names; algPos is where the algorithm is named).
//
// A list that is not a whole number of bytes is hashed right-aligned, its
// first byte padded with zeros in front, as BMv2 does (a 12-bit field
// hashes as two bytes 0x0f 0xff, not 0xff 0xf0 and whatever followed).
func (g *gen) hashList(alg string, e syntax.Expr, algPos, pos syntax.Pos) string {
	return g.hashOf(alg, g.packPadded(e), pos, algPos) // selector.go
}

// packPadded packs list e into s->cbuf after leading zero bits that
// round it up to whole bytes (BMv2's hash input) and returns its bits,
// padding included.
func (g *gen) packPadded(e syntax.Expr) int {
	// the list's width: packed once into scratch, thrown away
	var scratch strings.Builder
	w, body, mark := g.w, g.body, len(g.bodyPos)
	g.w, g.body = &scratch, &scratch
	bits := g.packList(e)
	g.w, g.body, g.bodyPos = w, body, g.bodyPos[:mark]
	pad := (8 - bits%8) % 8
	if pad > 0 {
		g.line("s->cbuf[0] = 0;")
	}
	// the padding is leading zeros: an identity hash's value is the same
	return g.packListFrom(e, pad)
}

// stateLookup starts a separately verified function: it finds the state.
func (g *gen) stateLookup() {
	g.line("__u32 zero = 0;")
	g.line("struct p4_state *s = bpf_map_lookup_elem(&p4_state_map, &zero);")
	g.line("")
	g.line("P4_KEEP(ctx);")
	g.line("if (!s)")
	g.line("\treturn 0;")
}

// applySub applies a sub-control with P4's copy-in/copy-out semantics: the
// arguments are copied into the callee's parameters, and the out/inout ones
// back after it ran (also when it exits).
func (g *gen) applySub(call *syntax.Call, sub *sema.SubControl) {
	params := sub.Control.Params
	args := exprs(call.Args)
	g.line("{")
	g.indent++
	g.copyIn(params, args) // calls.go
	g.line("int e = ctl_%s(ctx);", ir.Sanitize(sub.Control.Name))
	g.copyOut(params, args)
	g.line("if (e)")
	g.line("\treturn 1;")
	g.indent--
	g.line("}")
}

// stackShift generates hs.push_front(n) / hs.pop_front(n): elements move by
// n, the vacated ones become invalid, nextIndex follows (clamped).
func (g *gen) stackShift(cr *sema.CallRef) {
	hs, ok := g.typeOf(cr.Recv).(*sema.Stack)
	if !ok {
		g.errorf(cr.Recv.NodePos(), "%s is not a header stack", sema.ExprString(cr.Recv))
		return
	}
	sc := g.lval(cr.Recv)
	n, size := cr.Count, hs.Size
	if n == 0 {
		return
	}
	if cr.Method == "push_front" {
		for i := size - 1; i >= n; i-- {
			g.line("%s.e[%d] = %s.e[%d];", sc, i, sc, i-n)
		}
		for i := 0; i < n && i < size; i++ {
			g.invalidate(fmt.Sprintf("%s.e[%d]", sc, i), hs.Elem) // calls.go
		}
		g.line("%s.next = %s.next + %d > %d ? %d : %s.next + %d;", sc, sc, n, size, size, sc, n)
		return
	}
	for i := 0; i+n < size; i++ {
		g.line("%s.e[%d] = %s.e[%d];", sc, i, sc, i+n)
	}
	for i := max(size-n, 0); i < size; i++ {
		g.invalidate(fmt.Sprintf("%s.e[%d]", sc, i), hs.Elem)
	}
	g.line("%s.next = %s.next > %d ? %s.next - %d : 0;", sc, sc, n, sc, n)
}
