package sema

// The checker's entry point, its result (Info) and the declarations: types,
// externs, parsers, controls, tables, instantiations. Over 600 lines: one
// case per kind of P4-16 declaration, resolved in one pass.

import (
	"fmt"
	"math/big"
	"strings"

	"github.com/edgenf/edgenf/internal/p4/syntax"
)

// Info is the result of checking a program.
type Info struct {
	Prog             *syntax.Program
	Types            map[syntax.Expr]Type
	Uses             map[*syntax.Ident]Entity
	Members          map[*syntax.Member]*MemberRef
	Calls            map[*syntax.Call]*CallRef
	Consts           map[syntax.Expr]*big.Int
	Decls            map[syntax.Node]Entity // VarDecl/ConstDecl/ActionDecl/... -> entity
	ErrorNames       []string               // error ids: index = id
	Actions          []*Action
	Tables           []*Table
	Instances        []*Instance
	Warnings         syntax.ErrorList // the program compiles, but see these
	ValueSets        []*ValueSet
	Parsers          []*Parser
	Controls         []*Control
	Main             *Package
	StandardMetadata *Struct
	SubControls      []*SubControl
	Functions        []*Function
	Live             map[*Control]bool // controls code is generated for (see LiveControl)
}

type scope struct {
	parent *scope
	names  map[string]Entity
}

func (s *scope) lookup(n string) Entity {
	for ; s != nil; s = s.parent {
		if e, ok := s.names[n]; ok {
			return e
		}
	}
	return nil
}

type checker struct {
	info         *Info
	src          *syntax.Sources
	errs         syntax.ErrorList
	global       *scope
	sc           *scope
	control      *Control
	parser       *Parser
	action       *Action
	function     *Function
	nextID       int
	matchKinds   map[string]bool
	instantiated map[*Control]bool
	subParsers   map[*Parser]bool            // parsers instantiated in another (subparser.go)
	arch         string                      // Options.Arch
	pipelines    map[string]*pipelineInst    // PSA pipelines declared by name (psa.go)
	direct       map[[2]*Control]*SubControl // direct applications (direct.go)
}

// Options configures Check.
type Options struct {
	// Arch is the architecture the caller expects ("v1model", "psa"); ""
	// takes the program's (its main package's).
	Arch string
}

// Check type-checks prog. Errors quote lines from src.
func Check(prog *syntax.Program, src *syntax.Sources, opt Options) (*Info, error) {
	c := &checker{src: src, matchKinds: map[string]bool{}, instantiated: map[*Control]bool{}, arch: opt.Arch, pipelines: map[string]*pipelineInst{},
		direct: map[[2]*Control]*SubControl{}}
	c.info = &Info{Prog: prog, Types: map[syntax.Expr]Type{}, Uses: map[*syntax.Ident]Entity{},
		Members: map[*syntax.Member]*MemberRef{}, Calls: map[*syntax.Call]*CallRef{},
		Consts: map[syntax.Expr]*big.Int{}, Decls: map[syntax.Node]Entity{}}
	c.global = &scope{names: map[string]Entity{}}
	c.sc = c.global
	func() {
		defer func() {
			if r := recover(); r != nil {
				if _, ok := r.(tooMany); !ok {
					panic(r)
				}
			}
		}()
		for _, d := range prog.Decls {
			c.topDecl(d)
		}
		if c.info.Main == nil && len(c.errs) == 0 {
			c.errs = append(c.errs, &syntax.Error{Pos: syntax.Pos{File: "<program>", Line: 1, Col: 1}, Msg: "the program has no 'main' package instantiation (e.g. V1Switch(...) main; or PSA_Switch(...) main;)"})
		}
	}()
	if len(c.errs) > 0 {
		return nil, c.errs.Err()
	}
	return c.info, nil
}

type tooMany struct{}

func (c *checker) errorf(pos syntax.Pos, format string, args ...any) {
	c.errs = append(c.errs, c.src.Errorf(pos, format, args...))
	if len(c.errs) > 50 {
		panic(tooMany{})
	}
}

// warnf records a warning: the program compiles, as with p4c, but the
// user should know (Info.Warnings).
func (c *checker) warnf(pos syntax.Pos, format string, args ...any) {
	w := c.src.Errorf(pos, format, args...)
	w.Warning = true
	c.info.Warnings = append(c.info.Warnings, w)
}

func (c *checker) unsupported(pos syntax.Pos, what string) {
	c.errorf(pos, "unsupported: %s (not yet implemented by edgenf's P4 compiler)", what)
}

func (c *checker) declare(name string, e Entity, pos syntax.Pos) {
	if name == "" {
		return
	}
	if old, ok := c.sc.names[name]; ok {
		// extern functions may be overloaded
		if f, ok1 := old.(*Func); ok1 {
			if g, ok2 := e.(*Func); ok2 {
				f.Protos = append(f.Protos, g.Protos...)
				f.Decls = append(f.Decls, g.Decls...)
				return
			}
		}
		// match_kind / error re-declarations are merged elsewhere
		c.errorf(pos, "%q is already declared in this scope", name)
		return
	}
	c.sc.names[name] = e
}

func (c *checker) push() { c.sc = &scope{parent: c.sc, names: map[string]Entity{}} }
func (c *checker) pop()  { c.sc = c.sc.parent }

// ---------- types ----------

func (c *checker) constInt(e syntax.Expr, what string) (int, bool) {
	c.expr(e, nil)
	v, ok := c.info.Consts[e]
	if !ok {
		c.errorf(e.NodePos(), "%s must be a compile-time constant", what)
		return 0, false
	}
	if !v.IsInt64() || v.Int64() < 0 || v.Int64() > 1<<31 {
		c.errorf(e.NodePos(), "%s %s is out of range", what, v)
		return 0, false
	}
	return int(v.Int64()), true
}

func (c *checker) resolveType(t syntax.Type) Type {
	switch x := t.(type) {
	case *syntax.BaseType:
		switch x.Kind {
		case "bit", "int":
			if x.Width == nil {
				if x.Kind == "int" {
					return &InfInt{}
				}
				return &Bits{W: 1}
			}
			w, ok := c.constInt(x.Width, "width")
			if !ok {
				return &Bits{W: 1}
			}
			if w < 1 || w > 2048 || (x.Kind == "int" && w < 2) {
				c.errorf(x.Width.NodePos(), "invalid width %d for %s", w, x.Kind)
				return &Bits{W: 1}
			}
			return &Bits{W: w, Signed: x.Kind == "int"}
		case "varbit":
			w, _ := c.constInt(x.Width, "width")
			return &Varbit{Max: w}
		case "bool":
			return &Bool{}
		case "error":
			return &ErrorT{}
		case "string":
			return &Str{}
		case "void":
			return &Void{}
		case "match_kind":
			return &MatchKindT{}
		}
	case *syntax.NamedType:
		e := c.sc.lookup(x.Name)
		switch y := e.(type) {
		case *TypeName:
			if et, ok := y.Type.(*ExternT); ok && len(x.Args) > 0 {
				n := &ExternT{Decl: et.Decl}
				for _, a := range x.Args {
					n.TypeArgs = append(n.TypeArgs, c.resolveType(a))
				}
				return n
			}
			return y.Type
		case *Control:
			return &BlockT{Kind: "control", Name: y.Name, Params: y.Decl.Params, Decl: y.Decl}
		case *Parser:
			return &BlockT{Kind: "parser", Name: y.Name, Params: y.Decl.Params, Decl: y.Decl}
		case nil:
			c.errorf(x.Pos, "unknown type %q%s", x.Name, hint(x.Name, c.sc.visible()))
		default:
			c.errorf(x.Pos, "%q is not a type", x.Name)
		}
		return &Invalid{}
	case *syntax.TupleType:
		tt := &Tuple{}
		for _, e := range x.Elems {
			tt.Elems = append(tt.Elems, c.resolveType(e))
		}
		return tt
	case *syntax.StackType:
		el := c.resolveType(x.Elem)
		n, _ := c.constInt(x.Size, "stack size")
		return &Stack{Elem: el, Size: n}
	case *syntax.DontCareType:
		return &DontCare{}
	}
	c.errorf(t.NodePos(), "bad type")
	return &Void{}
}

// ---------- top level ----------

func (c *checker) topDecl(d syntax.Decl) {
	switch x := d.(type) {
	case *syntax.ConstDecl:
		c.constDecl(x)
	case *syntax.TypedefDecl:
		t := c.resolveType(x.Type)
		c.declare(x.Name, &TypeName{Name: x.Name, Type: t}, x.Pos)
	case *syntax.StructDecl:
		c.structDecl(x)
	case *syntax.EnumDecl:
		c.enumDecl(x)
	case *syntax.ErrorDecl:
		for _, m := range x.Members {
			if x.Kind == "error" {
				for _, n := range c.info.ErrorNames {
					if n == m.Name {
						c.errorf(m.Pos, "error %s already declared", m.Name)
					}
				}
				c.info.ErrorNames = append(c.info.ErrorNames, m.Name)
			} else {
				c.matchKinds[m.Name] = true
			}
		}
	case *syntax.ExternDecl:
		c.withTypeParams(x.TypeParams, func() {})
		c.declare(x.Name, &TypeName{Name: x.Name, Type: &ExternT{Decl: x}}, x.Pos)
	case *syntax.ExternFuncDecl:
		c.declare(x.Proto.Name, &Func{Name: x.Proto.Name, Protos: []*syntax.FuncProto{x.Proto}}, x.Proto.Pos)
	case *syntax.FunctionDecl:
		c.functionDecl(x)
	case *syntax.BlockTypeDecl:
		c.declare(x.Name, &TypeName{Name: x.Name, Type: &BlockT{Kind: x.Kind, Name: x.Name, Params: x.Params, Decl: x}}, x.Pos)
	case *syntax.ParserDecl:
		c.parserDecl(x)
	case *syntax.ControlDecl:
		c.controlDecl(x)
	case *syntax.ActionDecl:
		a := c.actionDecl(x, nil)
		c.declare(a.Name, a, x.Pos)
	case *syntax.InstanceDecl:
		if _, ok := c.resolveType(x.Type).(*ExternT); ok {
			// a program-wide extern instance (a register shared by the
			// controls that name it), as p4c allows
			c.instanceDecl(x, "")
		} else {
			c.mainDecl(x)
		}
	case *syntax.VarDecl:
		c.errorf(x.Pos, "variables cannot be declared at the top level")
	default:
		c.errorf(d.NodePos(), "unexpected declaration")
	}
}

func (c *checker) withTypeParams(tps []string, f func()) {
	if len(tps) == 0 {
		f()
		return
	}
	c.push()
	for _, n := range tps {
		c.sc.names[n] = &TypeName{Name: n, Type: &TypeVar{Name: n}}
	}
	f()
	c.pop()
}

func (c *checker) constDecl(x *syntax.ConstDecl) {
	t := c.resolveType(x.Type)
	vt := c.expr(x.Value, t)
	c.assignable(t, vt, x.Value)
	v, ok := c.info.Consts[x.Value]
	if !ok {
		c.errorf(x.Value.NodePos(), "the value of constant %s is not a compile-time constant", x.Name)
		v = new(big.Int)
	}
	k := &Const{Name: x.Name, Type: t, Val: fitTo(v, t)}
	c.info.Decls[x] = k
	c.declare(x.Name, k, x.Pos)
}

func (c *checker) structDecl(x *syntax.StructDecl) {
	if len(x.TypeParams) > 0 {
		c.unsupported(x.Pos, "generic structs")
	}
	st := &Struct{Kind: x.Kind, Name: x.Name}
	off := 0
	seen := map[string]bool{}
	for _, f := range x.Fields {
		ft := c.resolveType(f.Type)
		if seen[f.Name] {
			c.errorf(f.Pos, "duplicate field %s", f.Name)
		}
		seen[f.Name] = true
		if x.Kind == "header" {
			switch y := ft.(type) {
			case *Bits:
			case *Bool:
			case *Enum:
				if y.Under == nil {
					c.errorf(f.Pos, "header field %s: enum %s has no underlying type", f.Name, y.Name)
				}
			case *Varbit:
				c.varbitField(st, f, y, len(x.Fields))
			case *Struct:
				c.headerStructField(f, y) // hdrstructs.go
			case *Invalid:
			default:
				c.errorf(f.Pos, "header field %s has type %s; header fields must be bit<N>, int<N>, bool, enum bit<N> or a struct of them", f.Name, ft)
			}
		}
		if x.Kind == "header_union" {
			c.unionField(x, f, ft)
		}
		if s, ok := ft.(*Stack); ok {
			if x.Kind != "struct" {
				c.unsupported(f.Pos, "header stacks inside a "+x.Kind)
			} else if el, ok := s.Elem.(*Struct); !ok || (el.Kind != "header" && el.Kind != "header_union") {
				if !bad(s.Elem) {
					c.unsupported(f.Pos, "stacks of "+s.Elem.String()+" (only stacks of headers and header unions)")
				}
			} else if s.Size <= 0 || s.Size > 64 {
				c.errorf(f.Pos, "header stack size %d out of range (1..64)", s.Size)
			}
		}
		w := Width(ft)
		st.Fields = append(st.Fields, &Field{Name: f.Name, Type: ft, Offset: off, Annots: f.Annotations})
		if _, ok := ft.(*Varbit); ok && x.Kind == "header" && st.Varbit == nil {
			st.Varbit = st.Fields[len(st.Fields)-1]
		}
		if w > 0 {
			off += w
		}
	}
	if x.Kind == "header" {
		st.Bits = off
		if off%8 != 0 {
			c.errorf(x.Pos, "header %s is %d bits long; headers must be a whole number of bytes", x.Name, off)
		}
	}
	if x.Name == "standard_metadata_t" {
		c.info.StandardMetadata = st
	}
	c.declare(x.Name, &TypeName{Name: x.Name, Type: st}, x.Pos)
}

func (c *checker) enumDecl(x *syntax.EnumDecl) {
	en := &Enum{Name: x.Name}
	if x.Underlying != nil {
		t := c.resolveType(x.Underlying)
		b, ok := t.(*Bits)
		if !ok {
			c.errorf(x.Underlying.NodePos(), "the underlying type of an enum must be bit<N> or int<N>")
			b = &Bits{W: 32}
		}
		en.Under = b
	}
	for i, m := range x.Members {
		en.Members = append(en.Members, m.Name)
		if en.Under != nil {
			if m.Value == nil {
				c.errorf(m.Pos, "member %s of serializable enum %s needs a value", m.Name, x.Name)
				en.Values = append(en.Values, big.NewInt(int64(i)))
				continue
			}
			c.expr(m.Value, en.Under)
			v, ok := c.info.Consts[m.Value]
			if !ok {
				c.errorf(m.Value.NodePos(), "enum value must be a constant")
				v = new(big.Int)
			}
			en.Values = append(en.Values, fitTo(v, en.Under))
		} else {
			en.Values = append(en.Values, big.NewInt(int64(i)))
		}
	}
	c.declare(x.Name, &TypeName{Name: x.Name, Type: en}, x.Pos)
}

func (c *checker) blockParams(params []*syntax.Param, owner string, kind VarKind) []*Var {
	var out []*Var
	for i, p := range params {
		t := c.resolveType(p.Type)
		v := &Var{Name: p.Name, Type: t, Dir: p.Dir, Kind: kind, Pos: p.Pos, Index: i, Owner: owner, ID: c.id()}
		c.info.Decls[p] = v
		c.declare(p.Name, v, p.Pos)
		out = append(out, v)
	}
	return out
}

func (c *checker) id() int { c.nextID++; return c.nextID }

func (c *checker) parserDecl(x *syntax.ParserDecl) {
	p := &Parser{Name: x.Name, Decl: x, States: map[string]*State{}}
	c.declare(x.Name, p, x.Pos)
	c.info.Parsers = append(c.info.Parsers, p)
	if len(x.TypeParams) > 0 {
		c.unsupported(x.Pos, "generic parsers")
	}
	c.push()
	defer c.pop()
	c.parser = p
	defer func() { c.parser = nil }()
	p.Params = c.blockParams(x.Params, x.Name, BlockParam)
	p.Ctor = c.ctorParams(x.CtorParams, x.Name) // ctor.go
	for _, l := range x.Locals {
		if e := c.localDecl(l, x.Name); e != nil {
			p.Locals = append(p.Locals, e)
		}
	}
	for _, s := range x.States {
		if s.Name == "accept" || s.Name == "reject" {
			c.errorf(s.Pos, "state %s is predefined", s.Name)
			continue
		}
		if _, dup := p.States[s.Name]; dup {
			c.errorf(s.Pos, "duplicate state %s", s.Name)
			continue
		}
		st := &State{Name: s.Name, Decl: s}
		p.States[s.Name] = st
		p.Order = append(p.Order, st)
	}
	if p.States["start"] == nil {
		c.errorf(x.Pos, "parser %s has no start state", x.Name)
	}
	for _, st := range p.Order {
		s := st.Decl
		c.push() // the state's variables: its statements and its select see them
		for _, stmt := range s.Stmts {
			c.stmt(stmt)
		}
		tr := s.Transition
		if tr == nil {
			c.pop()
			c.errorf(s.Pos, "state %s has no transition", s.Name)
			continue
		}
		c.transition(p, tr)
		c.pop()
	}
}

// transition checks a state's transition to known states, and its select.
func (c *checker) transition(p *Parser, tr *syntax.Transition) {
	checkNext := func(n string, pos syntax.Pos) {
		if n != "accept" && n != "reject" && p.States[n] == nil {
			c.errorf(pos, "unknown parser state %q", n)
		}
	}
	if tr.Select == nil {
		checkNext(tr.Next, tr.Pos)
		return
	}
	var kts []Type
	for _, k := range tr.Select {
		kt := c.expr(k, nil)
		if _, ok := BitsOf(kt); !ok && !isPlainEnum(kt) {
			if _, isErr := kt.(*ErrorT); !isErr {
				c.errorf(k.NodePos(), "select key of type %s is not supported (use bit<N>, int<N>, bool or an enum)", kt)
			}
		}
		kts = append(kts, kt)
	}
	for _, cs := range tr.Cases {
		c.keyset(cs.Keyset, kts, true)
		checkNext(cs.Next, cs.Pos)
	}
}

// keyset checks a select case or const entry keyset against key types.
func (c *checker) keyset(ks syntax.Expr, kts []Type, allowVS bool) {
	if d, ok := ks.(*syntax.Default); ok {
		c.info.Types[d] = &DontCare{}
		return
	}
	if id, ok := ks.(*syntax.Ident); ok && allowVS {
		if vs, ok := c.sc.lookup(id.Name).(*ValueSet); ok {
			c.info.Uses[id] = vs
			if len(kts) == 1 && !sameType(vs.Elem, kts[0]) {
				c.errorf(id.Pos, "value_set %s has element type %s, the select key is %s", vs.Name, vs.Elem, kts[0])
			}
			return
		}
	}
	if l, ok := ks.(*syntax.List); ok && len(kts) != 1 {
		if len(l.Elems) != len(kts) {
			c.errorf(l.Pos, "keyset has %d elements, the key has %d", len(l.Elems), len(kts))
			return
		}
		for i, e := range l.Elems {
			c.keysetElem(e, kts[i])
		}
		return
	}
	if l, ok := ks.(*syntax.List); ok && len(l.Elems) == 1 {
		ks = l.Elems[0]
	}
	if len(kts) != 1 {
		c.errorf(ks.NodePos(), "keyset needs %d elements", len(kts))
		return
	}
	c.keysetElem(ks, kts[0])
}

func (c *checker) keysetElem(e syntax.Expr, kt Type) {
	switch x := e.(type) {
	case *syntax.Default:
		c.info.Types[x] = &DontCare{}
	case *syntax.Mask:
		if isPlainEnum(kt) {
			c.errorf(x.Pos, "a key of enum %s matches its members or default, not a mask", kt)
			return
		}
		c.constExpr(x.Value, kt)
		mt := kt
		if e, ok := kt.(*Enum); ok && e.Under != nil {
			mt = e.Under // a serializable enum's mask is bits: MyEnum.A &&& 0xff00
		}
		c.constExpr(x.Mask, mt)
		c.info.Types[x] = kt
	case *syntax.Range:
		if isPlainEnum(kt) {
			c.errorf(x.Pos, "a key of enum %s matches its members or default, not a range", kt)
			return
		}
		c.constExpr(x.Lo, kt)
		c.constExpr(x.Hi, kt)
		c.info.Types[x] = kt
	default:
		c.constExpr(e, kt)
	}
}

func (c *checker) constExpr(e syntax.Expr, want Type) {
	t := c.expr(e, want)
	c.assignable(want, t, e)
	if _, ok := c.info.Consts[e]; !ok {
		c.errorf(e.NodePos(), "expected a compile-time constant")
	}
}

func (c *checker) localDecl(d syntax.Decl, owner string) Entity {
	switch x := d.(type) {
	case *syntax.ConstDecl:
		c.constDecl(x)
		return c.info.Decls[x]
	case *syntax.VarDecl:
		return c.varDecl(x, owner)
	case *syntax.ActionDecl:
		a := c.actionDecl(x, c.control)
		c.declare(a.Name, a, x.Pos)
		return a
	case *syntax.TableDecl:
		t := c.tableDecl(x)
		c.declare(x.Name, t, x.Pos)
		return t
	case *syntax.InstanceDecl:
		return c.instanceDecl(x, owner)
	case *syntax.ValueSetDecl:
		et := c.resolveType(x.Elem)
		n, _ := c.constInt(x.Size, "value_set size")
		vs := &ValueSet{Name: x.Name, FullName: fullName(owner, x.Name, x.Annotations), Decl: x, Elem: et, Size: n}
		if _, ok := et.(*Bits); !ok {
			c.unsupported(x.Pos, "value_set of a struct type")
		}
		c.info.ValueSets = append(c.info.ValueSets, vs)
		c.declare(x.Name, vs, x.Pos)
		return vs
	}
	c.errorf(d.NodePos(), "unexpected declaration here")
	return nil
}

func (c *checker) varDecl(x *syntax.VarDecl, owner string) *Var {
	t := c.resolveType(x.Type)
	if s, ok := t.(*Stack); ok {
		c.stackVar(x, s) // params.go
	}
	v := &Var{Name: x.Name, Type: t, Kind: LocalVar, Pos: x.Pos, Owner: owner, ID: c.id()}
	if x.Init != nil {
		it := c.expr(x.Init, t)
		c.assignable(t, it, x.Init)
	}
	c.info.Decls[x] = v
	c.declare(x.Name, v, x.Pos)
	return v
}

func fullName(owner, name string, as syntax.Annotations) string {
	if n, ok := as.String("name"); ok {
		if strings.HasPrefix(n, ".") {
			return n[1:]
		}
		name = n
	}
	if owner == "" {
		return name
	}
	return owner + "." + name
}

func (c *checker) instanceDecl(x *syntax.InstanceDecl, owner string) Entity {
	t := c.resolveType(x.Type)
	switch y := t.(type) {
	case *ExternT:
		inst := &Instance{Name: x.Name, FullName: fullName(owner, x.Name, x.Annotations), Decl: x, Extern: y.Decl, TypeArgs: y.TypeArgs, Control: c.control, Annots: x.Annotations}
		var ctor *syntax.FuncProto
		for _, m := range y.Decl.Methods {
			if m.Ret == nil && len(m.Params) == len(x.Args) {
				ctor = m
			}
		}
		if ctor == nil {
			c.errorf(x.Pos, "%s has no constructor with %d arguments", y.Decl.Name, len(x.Args))
		}
		// type arguments left out are inferred from the constructor's
		// arguments: Random(16w0, 16w127) is a Random<bit<16>>
		inferred := map[string]Type{}
		for i, a := range x.Args {
			var want Type
			if ctor != nil {
				c.withTypeParams(y.Decl.TypeParams, func() { want = c.resolveType(ctor.Params[i].Type) })
			}
			tv, isTV := want.(*TypeVar)
			if isTV {
				want = nil
			}
			at := c.expr(a.Value, want)
			if _, inf := at.(*InfInt); isTV && at != nil && !inf {
				inferred[tv.Name] = at
			}
			v, ok := c.info.Consts[a.Value]
			if !ok {
				c.errorf(a.Value.NodePos(), "constructor arguments must be compile-time constants")
				v = new(big.Int)
			}
			inst.Args = append(inst.Args, v)
		}
		if len(inst.TypeArgs) == 0 && len(y.Decl.TypeParams) > 0 && len(inferred) == len(y.Decl.TypeParams) {
			for _, n := range y.Decl.TypeParams {
				inst.TypeArgs = append(inst.TypeArgs, inferred[n])
			}
		}
		switch {
		case ExternKind(y.Decl.Name) == "" && !IsActionProfile(inst) && !psaFunctionExtern(y.Decl.Name):
			c.unsupported(x.Pos, "extern "+y.Decl.Name)
		}
		c.info.Instances = append(c.info.Instances, inst)
		c.declare(x.Name, inst, x.Pos)
		return inst
	case *BlockT:
		return c.subControl(x, y)
	}
	c.errorf(x.Pos, "cannot instantiate %s", t)
	return nil
}

func (c *checker) controlDecl(x *syntax.ControlDecl) {
	ct := &Control{Name: x.Name, Decl: x}
	c.declare(x.Name, ct, x.Pos)
	c.info.Controls = append(c.info.Controls, ct)
	if len(x.TypeParams) > 0 {
		c.unsupported(x.Pos, "generic controls")
	}
	c.push()
	defer c.pop()
	c.control = ct
	defer func() { c.control = nil }()
	ct.Params = c.blockParams(x.Params, x.Name, BlockParam)
	ct.Ctor = c.ctorParams(x.CtorParams, x.Name) // ctor.go
	for _, l := range x.Locals {
		if e := c.localDecl(l, x.Name); e != nil {
			ct.Locals = append(ct.Locals, e)
		}
	}
	c.push()
	for _, s := range x.Body.Stmts {
		c.stmt(s)
	}
	c.pop()
}

func (c *checker) actionDecl(x *syntax.ActionDecl, ct *Control) *Action {
	owner := ""
	if ct != nil {
		owner = ct.Name
	}
	name := x.Name
	a := &Action{Name: name, FullName: fullName(owner, name, x.Annotations), Decl: x, Control: ct, Annots: x.Annotations}
	c.info.Decls[x] = a
	c.info.Actions = append(c.info.Actions, a)
	c.push()
	defer c.pop()
	saved := c.action
	c.action = a
	defer func() { c.action = saved }()
	a.Params = c.blockParams(x.Params, a.FullName, ActionParam)
	for _, p := range a.Params {
		if p.Dir == "" {
			a.DataParams = append(a.DataParams, p)
			if _, ok := BitsOf(p.Type); !ok {
				if _, isB := p.Type.(*Bool); !isB && !bad(p.Type) {
					c.errorf(p.Pos, "action parameter %s has type %s; action data (directionless parameters) must be bit<N>, int<N>, bool or enum bit<N>", p.Name, p.Type)
				}
			}
			continue
		}
		// P4-16 6.8.1: the control plane supplies the directionless
		// parameters (action data); the directional ones are bound where
		// the action is called or listed, so they come first.
		if len(a.DataParams) > 0 {
			c.errorf(p.Pos, "parameter %s has direction %s but follows action data parameter %s; directional parameters must come before the directionless ones", p.Name, p.Dir, a.DataParams[0].Name)
		}
		c.storable(p, "action")
	}
	c.push()
	for _, s := range x.Body.Stmts {
		c.stmt(s)
	}
	c.pop()
	return a
}

func (c *checker) mainDecl(x *syntax.InstanceDecl) {
	t := c.resolveType(x.Type)
	bt, ok := t.(*BlockT)
	if !ok || bt.Kind != "package" {
		c.errorf(x.Pos, "top-level instantiation must be a package (e.g. V1Switch(...) main;)")
		return
	}
	if x.Name != "main" {
		if pipelinePackage(bt.Name) {
			c.pipelineDecl(x, bt) // psa.go: a PSA pipeline main takes by name
			return
		}
		c.errorf(x.Pos, "the top-level package instance must be named main")
	}
	pkg := &Package{Name: bt.Name}
	switch bt.Name {
	case "V1Switch":
		pkg.Arch = "v1model"
		if !c.packageBlocks(pkg, x.Pos, x.Args, bt) {
			return
		}
	case "PSA_Switch":
		pkg.Arch = "psa"
		if !c.psaMain(pkg, x, bt) { // psa.go
			return
		}
	default:
		c.unsupported(x.Pos, "architecture package "+bt.Name+" (edgenf supports V1Switch and PSA_Switch)")
		return
	}
	if c.arch != "" && c.arch != pkg.Arch {
		c.errorf(x.Pos, "%s is a %s program; it was compiled for %s (--arch)", bt.Name, pkg.Arch, c.arch)
		return
	}
	c.info.Main = pkg
	c.info.Live = map[*Control]bool{}
	for _, b := range pkg.Blocks {
		if ct, ok := b.(*Control); ok {
			c.info.Live[ct] = true
		}
	}
	for changed := true; changed; {
		changed = false
		for _, s := range c.info.SubControls {
			if c.info.Live[s.Parent] && !c.info.Live[s.Control] {
				c.info.Live[s.Control] = true
				changed = true
			}
		}
	}
}

// packageBlocks binds the arguments of package bt (parsers and controls,
// constructed in place) to pkg.Blocks in order, checking each against the
// package's parameter: a parser where a parser is expected, the number of
// parameters.
func (c *checker) packageBlocks(pkg *Package, pos syntax.Pos, args []syntax.Arg, bt *BlockT) bool {
	if len(args) != len(bt.Params) {
		c.errorf(pos, "%s takes %d blocks, got %d", bt.Name, len(bt.Params), len(args))
		return false
	}
	for i, a := range args {
		call, ok := a.Value.(*syntax.Call)
		var id *syntax.Ident
		if ok {
			id, _ = call.Fn.(*syntax.Ident)
		}
		if id == nil {
			c.errorf(a.Value.NodePos(), "package argument must be a constructor call like MyIngress()")
			return false
		}
		e := c.sc.lookup(id.Name)
		c.info.Uses[id] = e
		kind := c.blockTypeKind(bt.Params[i])
		wantParser := kind == "parser" || kind == "" && i == 0
		switch b := e.(type) {
		case *Parser:
			if !wantParser {
				c.errorf(id.Pos, "%s is a parser, %s expects a control here", id.Name, bt.Name)
			}
			b.CtorArgs = c.ctorArgs(call.Args, b.Ctor, b.Name, call.Pos)
			pkg.Blocks = append(pkg.Blocks, b)
		case *Control:
			if wantParser {
				c.errorf(id.Pos, "%s is a control, %s expects a parser here", id.Name, bt.Name)
			}
			b.CtorArgs = c.ctorArgs(call.Args, b.Ctor, b.Name, call.Pos)
			pkg.Blocks = append(pkg.Blocks, b)
		default:
			c.errorf(id.Pos, "unknown parser or control %q", id.Name)
			return false
		}
		// check the block's parameter count against the package's parameter type
		want := c.blockTypeParams(bt.Params[i])
		got := 0
		switch b := e.(type) {
		case *Parser:
			got = len(b.Params)
		case *Control:
			got = len(b.Params)
		}
		if want >= 0 && got != want {
			c.errorf(id.Pos, "%s has %d parameters, %s expects %d", id.Name, got, bt.Params[i].Name, want)
		}
	}
	return true
}

// LiveControl reports whether code is generated for a control: it is a
// block of the main package or instantiated (transitively) by one. Nil
// (top level) is live.
func (i *Info) LiveControl(c *Control) bool { return c == nil || i.Live[c] }

func (c *checker) blockTypeParams(p *syntax.Param) int {
	if b := c.blockType(p); b != nil {
		return len(b.Params)
	}
	return -1
}

// blockTypeKind is "parser", "control" or "package" for a package
// parameter of such a type; "" otherwise.
func (c *checker) blockTypeKind(p *syntax.Param) string {
	if b := c.blockType(p); b != nil {
		return b.Kind
	}
	return ""
}

func (c *checker) blockType(p *syntax.Param) *BlockT {
	nt, ok := p.Type.(*syntax.NamedType)
	if !ok {
		return nil
	}
	if tn, ok := c.global.lookup(nt.Name).(*TypeName); ok {
		if b, ok := tn.Type.(*BlockT); ok {
			return b
		}
	}
	return nil
}

// ---------- tables ----------

func (c *checker) tableDecl(x *syntax.TableDecl) *Table {
	t := &Table{Name: x.Name, FullName: fullName(c.control.Name, x.Name, x.Annotations), Decl: x, Control: c.control, Annots: x.Annotations}
	c.info.Decls[x] = t
	c.info.Tables = append(c.info.Tables, t)
	seen := map[string]bool{}
	var defaultProp, entriesProp, emptyGroupProp *syntax.TableProp
	for _, p := range x.Props {
		if seen[p.Name] {
			c.errorf(p.Pos, "duplicate table property %s", p.Name)
		}
		seen[p.Name] = true
		switch p.Name {
		case "key":
			for _, k := range p.Keys {
				kt := c.expr(k.Expr, nil)
				if !c.matchKinds[k.MatchKind] {
					c.errorf(k.Pos, "unknown match kind %q", k.MatchKind)
				}
				w := Width(kt)
				if _, ok := BitsOf(kt); !ok {
					switch kt.(type) {
					case *Bool, *ErrorT: // an error matches as its number (declaration order), 32 bits
					default:
						c.errorf(k.Expr.NodePos(), "table key of type %s is not supported", kt)
					}
				}
				name := ExprString(k.Expr)
				if call, ok := k.Expr.(*syntax.Call); ok {
					if m, ok := call.Fn.(*syntax.Member); ok && m.Name == "isValid" && len(call.Args) == 0 {
						name = ExprString(m.X) + ".$valid$" // p4c's name for validity keys
					}
				}
				if n, ok := k.Annotations.String("name"); ok {
					name = n
				}
				t.Keys = append(t.Keys, &KeyInfo{Elem: k, Name: name, MatchKind: k.MatchKind, Type: kt, Width: w})
			}
		case "actions":
			for _, ar := range p.Actions {
				a, ok := c.sc.lookup(ar.Name).(*Action)
				if !ok {
					c.errorf(ar.Pos, "unknown action %q%s", ar.Name, hint(ar.Name, c.sc.visible()))
					continue
				}
				c.tableActionArgs(ar, a)
				t.Actions = append(t.Actions, &TableAction{Action: a, Args: ar.Args,
					DefaultOnly: ar.Annotations.Get("defaultonly") != nil, TableOnly: ar.Annotations.Get("tableonly") != nil})
			}
		case "default_action":
			defaultProp = p
		case "psa_empty_group_action":
			emptyGroupProp = p
		case "size":
			n, _ := c.constInt(p.Value, "table size")
			t.Size = n
		case "entries":
			entriesProp = p
		case "counters", "psa_direct_counter":
			id, ok := p.Value.(*syntax.Ident)
			var inst *Instance
			if ok {
				inst, _ = c.sc.lookup(id.Name).(*Instance)
			}
			if inst == nil || ExternKind(inst.Extern.Name) != "direct_counter" {
				c.errorf(p.Value.NodePos(), "%s must name a %s instance", p.Name, map[string]string{"counters": "direct_counter", "psa_direct_counter": "DirectCounter"}[p.Name])
				continue
			}
			c.info.Uses[id] = inst
			t.DirectCounter = inst
		case "implementation", "psa_implementation":
			t.Implementation = c.tableImplementation(p, t) // actprof.go
		case "meters", "psa_direct_meter":
			id, ok := p.Value.(*syntax.Ident)
			var inst *Instance
			if ok {
				inst, _ = c.sc.lookup(id.Name).(*Instance)
			}
			if inst == nil || ExternKind(inst.Extern.Name) != "direct_meter" {
				c.errorf(p.Value.NodePos(), "%s must name a %s instance", p.Name, map[string]string{"meters": "direct_meter", "psa_direct_meter": "DirectMeter"}[p.Name])
				continue
			}
			c.info.Uses[id] = inst
			t.DirectMeter = inst
		case "support_timeout":
			b, ok := p.Value.(*syntax.BoolLit)
			if !ok {
				c.errorf(p.Value.NodePos(), "support_timeout must be true or false")
				continue
			}
			t.SupportTimeout = b.Value
		case "psa_idle_timeout":
			t.SupportTimeout = c.psaIdleTimeout(p) // psa.go
		case "idle_timeout", "largest_priority_wins", "priority_delta":
		default:
			c.errorf(p.Pos, "unknown table property %q", p.Name)
		}
	}
	inList := func(ac *ActionCall) bool {
		for _, ta := range t.Actions {
			if ta.Action == ac.Action {
				c.sameBinding(ac, ta)
				return true
			}
		}
		return false
	}
	if defaultProp != nil {
		ac := c.actionCall(defaultProp.Value)
		if ac != nil && !inList(ac) {
			c.errorf(defaultProp.Value.NodePos(), "default action %s is not in the table's actions list", ac.Action.Name)
		}
		t.Default = ac
		t.ConstDefault = defaultProp.Const
	} else {
		// p4c: NoAction when absent
		if na, ok := c.global.lookup("NoAction").(*Action); ok {
			t.Default = &ActionCall{Action: na, Pos: x.Pos}
		}
	}
	c.checkImplementation(t, entriesProp) // actprof.go
	if emptyGroupProp != nil {
		t.EmptyGroupAction = c.emptyGroupAction(t, emptyGroupProp, inList) // actprof.go
	}
	if entriesProp != nil {
		t.EntriesConst = entriesProp.Const
		if !entriesProp.Const {
			c.unsupported(entriesProp.Pos, "non-const table entries (declare them 'const entries')")
		}
		var kts []Type
		for _, k := range t.Keys {
			kts = append(kts, k.Type)
		}
		bmv2Prio := false
		for _, e := range entriesProp.Entries {
			bmv2Prio = bmv2Prio || e.BMv2Priority
		}
		for i, e := range entriesProp.Entries {
			c.keyset(e.Keyset, kts, false)
			en := &Entry{Pos: e.Pos}
			if l, ok := e.Keyset.(*syntax.List); ok && len(kts) != 1 {
				en.Keys = l.Elems
			} else if ok && len(l.Elems) == 1 {
				en.Keys = l.Elems
			} else {
				en.Keys = []syntax.Expr{e.Keyset}
			}
			if e.Priority != nil {
				n, _ := c.constInt(e.Priority, "entry priority")
				en.Priority = int64(n)
			}
			if bmv2Prio {
				// @priority(N) as p4c's BMv2 back end: the smaller number
				// wins, an entry without one ranks by its position (1, 2,
				// ...); negated, so that the higher Priority wins as always
				if !e.BMv2Priority {
					en.Priority = int64(i + 1)
				}
				en.Priority = -en.Priority
			}
			call := &syntax.Call{Pos: e.Action.Pos, Fn: &syntax.Ident{Pos: e.Action.Pos, Name: e.Action.Name}, Args: e.Action.Args}
			en.Action = c.actionCall(call)
			if en.Action != nil && !inList(en.Action) {
				c.errorf(e.Action.Pos, "action %s is not in the table's actions list", en.Action.Action.Name)
			}
			t.Entries = append(t.Entries, en)
		}
	}
	return t
}

// actionCall checks an action reference with constant arguments.
func (c *checker) actionCall(e syntax.Expr) *ActionCall {
	var id *syntax.Ident
	var args []syntax.Arg
	switch x := e.(type) {
	case *syntax.Ident:
		id = x
	case *syntax.Call:
		id, _ = x.Fn.(*syntax.Ident)
		args = x.Args
	}
	if id == nil {
		c.errorf(e.NodePos(), "expected an action call")
		return nil
	}
	a, ok := c.sc.lookup(id.Name).(*Action)
	if !ok {
		c.errorf(id.Pos, "unknown action %q", id.Name)
		return nil
	}
	c.info.Uses[id] = a
	ac := &ActionCall{Action: a, Pos: e.NodePos()}
	if dir := a.Directional(); len(dir) > 0 && len(args) == len(a.Params) {
		// default_action = a(hdr.x, 5): the directional arguments repeat
		// the table's action list (checked by the table), then the data.
		c.bindArgs(args[:len(dir)], dir, e.NodePos())
		for _, arg := range args[:len(dir)] {
			ac.DirArgs = append(ac.DirArgs, arg.Value)
		}
		args = args[len(dir):]
	}
	if len(args) != len(a.DataParams) {
		c.errorf(e.NodePos(), "action %s takes %d action data argument(s), got %d", a.Name, len(a.DataParams), len(args))
		return nil
	}
	for i, arg := range args {
		if arg.Value == nil {
			c.errorf(e.NodePos(), "missing argument")
			return nil
		}
		pt := a.DataParams[i].Type
		at := c.expr(arg.Value, pt)
		c.assignable(pt, at, arg.Value)
		v, ok := c.info.Consts[arg.Value]
		if !ok {
			c.errorf(arg.Value.NodePos(), "action arguments here must be compile-time constants")
			v = new(big.Int)
		}
		ac.Args = append(ac.Args, fitTo(v, pt))
	}
	return ac
}

// ExprString renders an expression as P4 source (used for key names).
func ExprString(e syntax.Expr) string {
	switch x := e.(type) {
	case *syntax.Ident:
		if x.Global {
			return "." + x.Name
		}
		return x.Name
	case *syntax.Member:
		return ExprString(x.X) + "." + x.Name
	case *syntax.Slice:
		return fmt.Sprintf("%s[%s:%s]", ExprString(x.X), ExprString(x.Hi), ExprString(x.Lo))
	case *syntax.Index:
		return fmt.Sprintf("%s[%s]", ExprString(x.X), ExprString(x.Index))
	case *syntax.Call:
		var as []string
		for _, a := range x.Args {
			if a.Value == nil {
				as = append(as, "_")
			} else {
				as = append(as, ExprString(a.Value))
			}
		}
		return ExprString(x.Fn) + "(" + strings.Join(as, ", ") + ")"
	case *syntax.IntLit:
		if x.HasWidth {
			s := "w"
			if x.Signed {
				s = "s"
			}
			return fmt.Sprintf("%d%s%s", x.Width, s, x.Val)
		}
		return x.Val.String()
	case *syntax.BoolLit:
		return fmt.Sprint(x.Value)
	case *syntax.TypeRef:
		if bt, ok := x.Type.(*syntax.BaseType); ok {
			return bt.Kind
		}
		if nt, ok := x.Type.(*syntax.NamedType); ok {
			return nt.Name
		}
	case *syntax.Binary:
		return "(" + ExprString(x.X) + " " + x.Op + " " + ExprString(x.Y) + ")"
	case *syntax.Unary:
		return x.Op + ExprString(x.X)
	case *syntax.Cast:
		return "(cast)" + ExprString(x.X)
	}
	return "?"
}

// fitTo truncates v to the width of t (two's complement for negative values).
func fitTo(v *big.Int, t Type) *big.Int {
	b, ok := BitsOf(t)
	if !ok {
		return v
	}
	m := new(big.Int).Lsh(big.NewInt(1), uint(b.W))
	r := new(big.Int).Mod(v, m)
	return r
}

// subControl checks "Sub() name;" inside a control.
func (c *checker) subControl(x *syntax.InstanceDecl, y *BlockT) Entity {
	if c.parser != nil {
		return c.subParser(x, y) // subparser.go
	}
	callee, _ := c.global.lookup(y.Name).(*Control)
	if y.Kind != "control" || c.control == nil || callee == nil {
		c.unsupported(x.Pos, "instantiating "+y.Kind+" "+y.Name+" inside another block")
		return nil
	}
	if c.instantiated[callee] {
		return c.againControl(x, callee) // ctor.go
	}
	c.instantiated[callee] = true
	callee.CtorArgs = c.ctorArgs(x.Args, callee.Ctor, callee.Name, x.Pos) // ctor.go
	c.bindExterns(callee.Ctor, callee.CtorArgs)
	c.bindControls(callee.Ctor, callee.CtorArgs) // ctlparam.go
	sub := &SubControl{Name: x.Name, Decl: x, Control: callee, Parent: c.control}
	// p4c names what the sub-control declares after the instance path.
	from := callee.Name + "."
	to := c.control.Name + "." + x.Name + "."
	rename := func(n string) string {
		if strings.HasPrefix(n, from) {
			return to + n[len(from):]
		}
		return n
	}
	for _, a := range c.info.Actions {
		a.FullName = rename(a.FullName)
	}
	for _, t := range c.info.Tables {
		t.FullName = rename(t.FullName)
	}
	for _, in := range c.info.Instances {
		in.FullName = rename(in.FullName)
	}
	c.info.SubControls = append(c.info.SubControls, sub)
	c.declare(x.Name, sub, x.Pos)
	return sub
}

// functionDecl checks a P4 function: parameters of any direction, a body
// whose every path returns a value (unless it returns void).
func (c *checker) functionDecl(x *syntax.FunctionDecl) {
	p := x.Proto
	if len(p.TypeParams) > 0 {
		c.unsupported(p.Pos, "generic functions")
		return
	}
	f := &Function{Name: p.Name, Decl: x, Ret: c.resolveType(p.Ret)}
	c.info.Decls[x] = f
	c.declare(p.Name, f, p.Pos)
	c.push()
	defer c.pop()
	f.Params = c.blockParams(p.Params, p.Name, FuncParam)
	for _, v := range f.Params {
		c.storable(v, "function")
	}
	saved := c.function
	c.function = f
	defer func() { c.function = saved }()
	c.push()
	for _, s := range x.Body.Stmts {
		c.stmt(s)
	}
	c.pop()
	if _, void := f.Ret.(*Void); !void && !returns(x.Body) {
		c.errorf(p.Pos, "function %s does not return a value on every path", p.Name)
	}
	c.info.Functions = append(c.info.Functions, f)
}

// returns reports whether every path through s ends in return.
func returns(s syntax.Stmt) bool {
	switch x := s.(type) {
	case *syntax.ReturnStmt:
		return true
	case *syntax.BlockStmt:
		for _, st := range x.Stmts {
			if returns(st) {
				return true
			}
		}
	case *syntax.IfStmt:
		return x.Else != nil && returns(x.Then) && returns(x.Else)
	}
	return false
}

// isPlainEnum reports whether t is an enum without an underlying type (its
// members are distinct values, compared for equality only: a select on
// one, as PSA's packet_path, matches members or default).
func isPlainEnum(t Type) bool {
	e, ok := t.(*Enum)
	return ok && e.Under == nil
}
