package syntax

// The recursive-descent parser of P4-16. Over 600 lines: one function per
// rule of the grammar (the spec's appendix), kept together as the grammar is.

import (
	"fmt"
	"math/big"
)

type bailout struct{}

type parser struct {
	toks      []Token
	i         int
	src       *Sources
	errs      ErrorList
	typeNames map[string]bool
	depth     int
}

// ParsePreprocessed parses preprocessed text.
func ParsePreprocessed(pp *Preprocessed, sources *Sources) (prog *Program, err error) {
	toks, lerrs := Lex(pp, sources)
	if len(lerrs) > 0 {
		return nil, lerrs.Err()
	}
	p := &parser{toks: toks, src: sources, typeNames: map[string]bool{}}
	prog = &Program{}
	defer func() {
		if r := recover(); r != nil {
			if _, ok := r.(bailout); !ok {
				panic(r)
			}
			prog, err = nil, p.errs.Err()
		}
	}()
	for p.tok().Kind != EOF {
		if p.is(";") {
			p.next()
			continue
		}
		if d := p.topDecl(); d != nil {
			prog.Decls = append(prog.Decls, d)
		}
	}
	if len(p.errs) > 0 {
		return nil, p.errs.Err()
	}
	return prog, nil
}

func (p *parser) tok() Token { return p.toks[p.i] }
func (p *parser) peek(n int) Token {
	if p.i+n < len(p.toks) {
		return p.toks[p.i+n]
	}
	return p.toks[len(p.toks)-1]
}
func (p *parser) next() Token {
	t := p.toks[p.i]
	if p.i < len(p.toks)-1 {
		p.i++
	}
	return t
}
func (p *parser) is(s string) bool {
	t := p.tok()
	return (t.Kind == OP || t.Kind == IDENT) && t.Text == s
}
func (p *parser) isAt(n int, s string) bool {
	t := p.peek(n)
	return (t.Kind == OP || t.Kind == IDENT) && t.Text == s
}

func (p *parser) fail(pos Pos, format string, args ...any) {
	p.errs = append(p.errs, p.src.Errorf(pos, format, args...))
	panic(bailout{})
}

func describe(t Token) string {
	switch t.Kind {
	case EOF:
		return "end of file"
	case STRING:
		return fmt.Sprintf("string %q", t.Text)
	}
	return fmt.Sprintf("%q", t.Text)
}

func (p *parser) expect(s string) Token {
	if !p.is(s) {
		p.fail(p.tok().Pos, "expected %q, found %s", s, describe(p.tok()))
	}
	return p.next()
}

func (p *parser) accept(s string) bool {
	if p.is(s) {
		p.next()
		return true
	}
	return false
}

// name parses an identifier (non-keyword; a few keywords are allowed as names where P4 allows them).
func (p *parser) name() (string, Pos) {
	t := p.tok()
	if t.Kind != IDENT || (IsKeyword(t.Text) && t.Text != "apply" && t.Text != "state" && t.Text != "key" && t.Text != "type") {
		p.fail(t.Pos, "expected a name, found %s", describe(t))
	}
	p.next()
	return t.Text, t.Pos
}

func (p *parser) enter() {
	p.depth++
	if p.depth > 300 {
		p.fail(p.tok().Pos, "nesting too deep")
	}
}
func (p *parser) leave() { p.depth-- }

// ---------- annotations ----------

func (p *parser) annotations() Annotations {
	var as Annotations
	for p.is("@") {
		at := p.next()
		n := p.tok()
		if n.Kind != IDENT {
			p.fail(n.Pos, "expected annotation name after @")
		}
		p.next()
		a := &Annotation{Pos: at.Pos, Name: n.Text}
		if p.is("(") || p.is("[") {
			p.next()
			start := p.i
			depth := 1
			for depth > 0 {
				t := p.tok()
				if t.Kind == EOF {
					p.fail(at.Pos, "unterminated annotation @%s", n.Text)
				}
				if t.Kind == OP && (t.Text == "(" || t.Text == "[" || t.Text == "{") {
					depth++
				} else if t.Kind == OP && (t.Text == ")" || t.Text == "]" || t.Text == "}") {
					depth--
				}
				p.next()
			}
			a.Raw = append([]Token(nil), p.toks[start:p.i-1]...)
			a.Args = p.tryExprList(a.Raw)
		}
		as = append(as, a)
	}
	return as
}

// tryExprList parses tokens as a comma-separated expression list; nil on failure.
func (p *parser) tryExprList(toks []Token) (out []Expr) {
	if len(toks) == 0 {
		return nil
	}
	sub := &parser{toks: append(append([]Token(nil), toks...), Token{Kind: EOF, Pos: toks[len(toks)-1].Pos}), src: p.src, typeNames: p.typeNames}
	defer func() {
		if r := recover(); r != nil {
			if _, ok := r.(bailout); !ok {
				panic(r)
			}
			out = nil
		}
	}()
	for {
		out = append(out, sub.expr())
		if !sub.accept(",") {
			break
		}
	}
	if sub.tok().Kind != EOF {
		return nil
	}
	return out
}

// ---------- types ----------

func (p *parser) isTypeStart() bool {
	t := p.tok()
	if t.Kind != IDENT {
		return p.is(".") && p.peek(1).Kind == IDENT && p.typeNames[p.peek(1).Text]
	}
	switch t.Text {
	case "bit", "int", "varbit", "bool", "error", "string", "void", "tuple", "match_kind":
		return true
	}
	return p.typeNames[t.Text] && !IsKeyword(t.Text)
}

func (p *parser) typeRef() Type {
	p.enter()
	defer p.leave()
	t := p.tok()
	var ty Type
	switch {
	case t.Kind == IDENT && (t.Text == "bit" || t.Text == "int" || t.Text == "varbit"):
		p.next()
		bt := &BaseType{Pos: t.Pos, Kind: t.Text}
		if p.accept("<") {
			bt.Width = p.widthExpr()
			p.expect(">")
		} else if t.Text == "bit" {
			bt.Width = &IntLit{Pos: t.Pos, Val: big.NewInt(1)}
		} else if t.Text == "varbit" {
			p.fail(t.Pos, "varbit needs a width")
		}
		ty = bt
	case t.Kind == IDENT && (t.Text == "bool" || t.Text == "error" || t.Text == "string" || t.Text == "void" || t.Text == "match_kind"):
		p.next()
		ty = &BaseType{Pos: t.Pos, Kind: t.Text}
	case t.Kind == IDENT && t.Text == "tuple":
		p.next()
		tt := &TupleType{Pos: t.Pos}
		p.expect("<")
		for !p.is(">") {
			tt.Elems = append(tt.Elems, p.typeArg())
			if !p.accept(",") {
				break
			}
		}
		p.expect(">")
		ty = tt
	case t.Kind == OP && t.Text == ".":
		p.next()
		n, pos := p.name()
		ty = p.namedTypeRest(n, pos)
	case t.Kind == IDENT && !IsKeyword(t.Text):
		p.next()
		ty = p.namedTypeRest(t.Text, t.Pos)
	default:
		p.fail(t.Pos, "expected a type, found %s", describe(t))
	}
	for p.is("[") {
		pos := p.next().Pos
		size := p.expr()
		p.expect("]")
		ty = &StackType{Pos: pos, Elem: ty, Size: size}
	}
	return ty
}

func (p *parser) namedTypeRest(n string, pos Pos) Type {
	nt := &NamedType{Pos: pos, Name: n}
	if p.is("<") {
		p.next()
		for !p.is(">") {
			nt.Args = append(nt.Args, p.typeArg())
			if !p.accept(",") {
				break
			}
		}
		p.expect(">")
	}
	return nt
}

func (p *parser) typeArg() Type {
	if p.is("_") {
		return &DontCareType{Pos: p.next().Pos}
	}
	return p.typeRef()
}

func (p *parser) widthExpr() Expr {
	t := p.tok()
	switch {
	case t.Kind == INT:
		p.next()
		return &IntLit{Pos: t.Pos, Val: t.Val, Width: t.Width, Signed: t.Signed, HasWidth: t.HasWidth}
	case p.is("("):
		p.next()
		e := p.expr()
		p.expect(")")
		return e
	case t.Kind == IDENT:
		p.next()
		return &Ident{Pos: t.Pos, Name: t.Text}
	}
	p.fail(t.Pos, "expected a width, found %s", describe(t))
	return nil
}

func (p *parser) typeParams() []string {
	var out []string
	if p.accept("<") {
		for !p.is(">") {
			n, _ := p.name()
			p.typeNames[n] = true
			out = append(out, n)
			if !p.accept(",") {
				break
			}
		}
		p.expect(">")
	}
	return out
}

func (p *parser) params() []*Param {
	p.expect("(")
	var out []*Param
	for !p.is(")") {
		as := p.annotations()
		pr := &Param{Pos: p.tok().Pos, Annotations: as}
		if p.is("in") || p.is("out") || p.is("inout") {
			pr.Dir = p.next().Text
		}
		pr.Type = p.typeRef()
		pr.Name, _ = p.name()
		if p.accept("=") {
			pr.Default = p.expr()
		}
		out = append(out, pr)
		if !p.accept(",") {
			break
		}
	}
	p.expect(")")
	return out
}

// ---------- declarations ----------

func (p *parser) topDecl() Decl {
	as := p.annotations()
	t := p.tok()
	switch {
	case p.is("const"):
		return p.constDecl(as)
	case p.is("typedef") || p.is("type"):
		p.next()
		ty := p.typeRef()
		n, _ := p.name()
		p.expect(";")
		p.typeNames[n] = true
		return &TypedefDecl{Pos: t.Pos, Annotations: as, Type: ty, Name: n, New: t.Text == "type"}
	case p.is("header") || p.is("struct") || p.is("header_union"):
		return p.structDecl(as)
	case p.is("enum"):
		return p.enumDecl(as)
	case p.is("error") && p.isAt(1, "{"), p.is("match_kind") && p.isAt(1, "{"):
		kind := p.next().Text
		d := &ErrorDecl{Pos: t.Pos, Kind: kind}
		p.expect("{")
		for !p.is("}") {
			n, pos := p.name()
			d.Members = append(d.Members, &EnumMember{Pos: pos, Name: n})
			if !p.accept(",") {
				break
			}
		}
		p.expect("}")
		return d
	case p.is("extern"):
		return p.externDecl(as)
	case p.is("parser"):
		return p.parserDecl(as)
	case p.is("control"):
		return p.controlDecl(as)
	case p.is("package"):
		p.next()
		n, _ := p.name()
		p.typeNames[n] = true
		d := &BlockTypeDecl{Pos: t.Pos, Annotations: as, Kind: "package", Name: n}
		d.TypeParams = p.typeParams()
		d.Params = p.params()
		p.expect(";")
		return d
	case p.is("action"):
		return p.actionDecl(as)
	}
	if p.isTypeStart() {
		ty := p.typeRef()
		if p.is("(") {
			return p.instanceRest(as, ty)
		}
		n, npos := p.name()
		if p.is("(") || p.is("<") {
			proto := &FuncProto{Pos: npos, Annotations: as, Ret: ty, Name: n}
			proto.TypeParams = p.typeParams()
			proto.Params = p.params()
			body := p.block()
			return &FunctionDecl{Proto: proto, Body: body}
		}
		d := &VarDecl{Pos: npos, Annotations: as, Type: ty, Name: n}
		if p.accept("=") {
			d.Init = p.expr()
		}
		p.expect(";")
		return d
	}
	if t.Kind == IDENT && !IsKeyword(t.Text) {
		p.fail(t.Pos, "unknown type %q", t.Text)
	}
	p.fail(t.Pos, "expected a declaration, found %s", describe(t))
	return nil
}

func (p *parser) constDecl(as Annotations) Decl {
	t := p.expect("const")
	ty := p.typeRef()
	n, _ := p.name()
	p.expect("=")
	v := p.expr()
	p.expect(";")
	return &ConstDecl{Pos: t.Pos, Annotations: as, Type: ty, Name: n, Value: v}
}

func (p *parser) structDecl(as Annotations) Decl {
	t := p.next()
	n, _ := p.name()
	p.typeNames[n] = true
	d := &StructDecl{Pos: t.Pos, Annotations: as, Kind: t.Text, Name: n}
	d.TypeParams = p.typeParams()
	p.expect("{")
	for !p.is("}") {
		fa := p.annotations()
		fpos := p.tok().Pos
		ty := p.typeRef()
		fn, _ := p.name()
		p.expect(";")
		d.Fields = append(d.Fields, &Field{Pos: fpos, Annotations: fa, Type: ty, Name: fn})
	}
	p.expect("}")
	return d
}

func (p *parser) enumDecl(as Annotations) Decl {
	t := p.expect("enum")
	d := &EnumDecl{Pos: t.Pos, Annotations: as}
	if !(p.tok().Kind == IDENT && p.isAt(1, "{")) {
		d.Underlying = p.typeRef()
	}
	d.Name, _ = p.name()
	p.typeNames[d.Name] = true
	p.expect("{")
	for !p.is("}") {
		n, pos := p.name()
		m := &EnumMember{Pos: pos, Name: n}
		if p.accept("=") {
			m.Value = p.expr()
		}
		d.Members = append(d.Members, m)
		if !p.accept(",") {
			break
		}
	}
	p.expect("}")
	return d
}

func (p *parser) externDecl(as Annotations) Decl {
	t := p.expect("extern")
	// object: extern Name [<T,...>] { ... }
	save := p.i
	if p.tok().Kind == IDENT && !IsKeyword(p.tok().Text) {
		n := p.tok().Text
		p.next()
		old := map[string]bool{}
		for k := range p.typeNames {
			old[k] = true
		}
		tps := p.typeParams()
		if p.is("{") {
			p.typeNames[n] = true
			d := &ExternDecl{Pos: t.Pos, Annotations: as, Name: n, TypeParams: tps}
			p.next()
			for !p.is("}") {
				mas := p.annotations()
				abstract := p.accept("abstract")
				mpos := p.tok().Pos
				var fp *FuncProto
				if p.tok().Kind == IDENT && p.tok().Text == n && p.isAt(1, "(") {
					p.next()
					fp = &FuncProto{Pos: mpos, Annotations: mas, Name: n}
				} else {
					ret := p.typeRef()
					mn, mp := p.name()
					fp = &FuncProto{Pos: mp, Annotations: mas, Ret: ret, Name: mn}
					fp.TypeParams = p.typeParams()
				}
				fp.Abstract = abstract
				fp.Params = p.params()
				p.expect(";")
				d.Methods = append(d.Methods, fp)
			}
			p.expect("}")
			return d
		}
		p.typeNames = old
	}
	p.i = save
	ret := p.typeRef()
	n, npos := p.name()
	fp := &FuncProto{Pos: npos, Annotations: as, Ret: ret, Name: n}
	fp.TypeParams = p.typeParams()
	fp.Params = p.params()
	p.expect(";")
	return &ExternFuncDecl{Proto: fp}
}

func (p *parser) parserDecl(as Annotations) Decl {
	t := p.expect("parser")
	n, _ := p.name()
	p.typeNames[n] = true
	tps := p.typeParams()
	params := p.params()
	if p.accept(";") {
		return &BlockTypeDecl{Pos: t.Pos, Annotations: as, Kind: "parser", Name: n, TypeParams: tps, Params: params}
	}
	d := &ParserDecl{Pos: t.Pos, Annotations: as, Name: n, TypeParams: tps, Params: params}
	if p.is("(") {
		d.CtorParams = p.params()
	}
	p.expect("{")
	for !p.is("}") {
		las := p.annotations()
		if p.is("state") {
			d.States = append(d.States, p.parserState(las))
			continue
		}
		d.Locals = append(d.Locals, p.localDecl(las, false))
	}
	p.expect("}")
	return d
}

func (p *parser) parserState(as Annotations) *ParserState {
	t := p.expect("state")
	n, _ := p.name()
	st := &ParserState{Pos: t.Pos, Annotations: as, Name: n}
	p.expect("{")
	for !p.is("}") && !p.is("transition") {
		st.Stmts = append(st.Stmts, p.stmt())
	}
	if p.is("transition") {
		tr := &Transition{Pos: p.next().Pos}
		if p.is("select") {
			p.next()
			p.expect("(")
			for !p.is(")") {
				tr.Select = append(tr.Select, p.expr())
				if !p.accept(",") {
					break
				}
			}
			p.expect(")")
			p.expect("{")
			for !p.is("}") {
				p.annotations()
				cpos := p.tok().Pos
				ks := p.keyset()
				p.expect(":")
				nx, _ := p.name()
				p.expect(";")
				tr.Cases = append(tr.Cases, &SelectCase{Pos: cpos, Keyset: ks, Next: nx})
			}
			p.expect("}")
		} else {
			tr.Next, _ = p.name()
			p.expect(";")
		}
		st.Transition = tr
	}
	p.expect("}")
	return st
}

// keyset parses a select case / table entry key: a tuple "(k1, k2)" or one element.
func (p *parser) keyset() Expr {
	if p.is("(") {
		save := p.i
		pos := p.next().Pos
		var elems []Expr
		for !p.is(")") {
			elems = append(elems, p.keysetElem())
			if !p.accept(",") {
				break
			}
		}
		p.expect(")")
		if len(elems) != 1 || !(p.is(":") || p.is(",")) {
			if len(elems) == 1 && !p.is(":") {
				// something like (a) &&& b: reparse as an element
				p.i = save
				return p.keysetElem()
			}
		}
		return &List{Pos: pos, Elems: elems}
	}
	return p.keysetElem()
}

func (p *parser) keysetElem() Expr {
	t := p.tok()
	if p.is("default") {
		p.next()
		return &Default{Pos: t.Pos}
	}
	if p.is("_") {
		p.next()
		return &Default{Pos: t.Pos, DontCare: true}
	}
	e := p.expr()
	if p.is("&&&") {
		pos := p.next().Pos
		m := p.expr()
		return &Mask{Pos: pos, Value: e, Mask: m}
	}
	if p.is("..") {
		pos := p.next().Pos
		h := p.expr()
		return &Range{Pos: pos, Lo: e, Hi: h}
	}
	return e
}

func (p *parser) controlDecl(as Annotations) Decl {
	t := p.expect("control")
	n, _ := p.name()
	p.typeNames[n] = true
	tps := p.typeParams()
	params := p.params()
	if p.accept(";") {
		return &BlockTypeDecl{Pos: t.Pos, Annotations: as, Kind: "control", Name: n, TypeParams: tps, Params: params}
	}
	d := &ControlDecl{Pos: t.Pos, Annotations: as, Name: n, TypeParams: tps, Params: params}
	if p.is("(") {
		d.CtorParams = p.params()
	}
	p.expect("{")
	for !p.is("apply") {
		if p.is("}") {
			p.fail(p.tok().Pos, "control %s has no apply block", n)
		}
		las := p.annotations()
		if p.is("apply") {
			break
		}
		d.Locals = append(d.Locals, p.localDecl(las, true))
	}
	p.expect("apply")
	d.Body = p.block()
	p.expect("}")
	return d
}

func (p *parser) localDecl(as Annotations, inControl bool) Decl {
	t := p.tok()
	switch {
	case p.is("const"):
		return p.constDecl(as)
	case p.is("action") && inControl:
		return p.actionDecl(as)
	case p.is("table") && inControl:
		return p.tableDecl(as)
	case p.is("value_set"):
		p.next()
		p.expect("<")
		el := p.typeArg()
		p.expect(">")
		p.expect("(")
		sz := p.expr()
		p.expect(")")
		n, _ := p.name()
		p.expect(";")
		return &ValueSetDecl{Pos: t.Pos, Annotations: as, Elem: el, Size: sz, Name: n}
	}
	if p.isTypeStart() {
		ty := p.typeRef()
		if p.is("(") {
			return p.instanceRest(as, ty)
		}
		n, npos := p.name()
		d := &VarDecl{Pos: npos, Annotations: as, Type: ty, Name: n}
		if p.accept("=") {
			d.Init = p.expr()
		}
		p.expect(";")
		return d
	}
	if t.Kind == IDENT && !IsKeyword(t.Text) {
		p.fail(t.Pos, "unknown type %q", t.Text)
	}
	p.fail(t.Pos, "expected a declaration, found %s", describe(t))
	return nil
}

func (p *parser) instanceRest(as Annotations, ty Type) Decl {
	pos := ty.NodePos()
	args := p.args()
	n, _ := p.name()
	p.expect(";")
	return &InstanceDecl{Pos: pos, Annotations: as, Type: ty, Args: args, Name: n}
}

func (p *parser) args() []Arg {
	p.expect("(")
	var out []Arg
	for !p.is(")") {
		var a Arg
		if p.tok().Kind == IDENT && p.isAt(1, "=") && !p.isAt(1, "==") {
			a.Name = p.next().Text
			p.next()
		}
		if p.is("_") && (p.isAt(1, ",") || p.isAt(1, ")")) {
			p.next()
		} else {
			a.Value = p.expr()
		}
		out = append(out, a)
		if !p.accept(",") {
			break
		}
	}
	p.expect(")")
	return out
}

func (p *parser) actionDecl(as Annotations) Decl {
	t := p.expect("action")
	n, _ := p.name()
	d := &ActionDecl{Pos: t.Pos, Annotations: as, Name: n}
	d.Params = p.params()
	d.Body = p.block()
	return d
}

func (p *parser) tableDecl(as Annotations) Decl {
	t := p.expect("table")
	n, _ := p.name()
	d := &TableDecl{Pos: t.Pos, Annotations: as, Name: n}
	p.expect("{")
	for !p.is("}") {
		pas := p.annotations()
		pr := &TableProp{Pos: p.tok().Pos, Annotations: pas}
		pr.Const = p.accept("const")
		pr.Name, _ = p.propName()
		switch pr.Name {
		case "key":
			p.expect("=")
			p.expect("{")
			for !p.is("}") {
				kpos := p.tok().Pos
				e := p.expr()
				p.expect(":")
				mk, _ := p.name()
				kas := p.annotations()
				p.expect(";")
				pr.Keys = append(pr.Keys, &KeyElem{Pos: kpos, Annotations: kas, Expr: e, MatchKind: mk})
			}
			p.expect("}")
		case "actions":
			p.expect("=")
			p.expect("{")
			for !p.is("}") {
				aas := p.annotations()
				an, apos := p.name()
				ar := &ActionRef{Pos: apos, Annotations: aas, Name: an}
				if p.is("(") {
					ar.Args = p.args()
				}
				p.expect(";")
				pr.Actions = append(pr.Actions, ar)
			}
			p.expect("}")
		case "entries":
			p.expect("=")
			p.expect("{")
			for !p.is("}") {
				eas := p.annotations()
				en := &TableEntry{Pos: p.tok().Pos, Annotations: eas}
				if p.is("priority") && p.isAt(1, "=") {
					p.next()
					p.next()
					en.Priority = p.expr()
					p.expect(":")
				}
				en.Keyset = p.keyset()
				p.expect(":")
				an, apos := p.name()
				en.Action = &ActionRef{Pos: apos, Name: an}
				if p.is("(") {
					en.Action.Args = p.args()
				}
				// p4c also takes an entry's annotations after its action
				en.Annotations = append(en.Annotations, p.annotations()...)
				if a := en.Annotations.Get("priority"); a != nil && len(a.Args) == 1 && en.Priority == nil {
					en.Priority = a.Args[0]
					en.BMv2Priority = true
				}
				p.expect(";")
				pr.Entries = append(pr.Entries, en)
			}
			p.expect("}")
		default:
			p.expect("=")
			pr.Value = p.expr()
			p.expect(";")
		}
		d.Props = append(d.Props, pr)
	}
	p.expect("}")
	return d
}

func (p *parser) propName() (string, Pos) {
	t := p.tok()
	if t.Kind != IDENT {
		p.fail(t.Pos, "expected a table property, found %s", describe(t))
	}
	p.next()
	return t.Text, t.Pos
}

// ---------- statements ----------

func (p *parser) block() *BlockStmt {
	t := p.expect("{")
	b := &BlockStmt{Pos: t.Pos}
	for !p.is("}") {
		if p.tok().Kind == EOF {
			p.fail(t.Pos, "unterminated block")
		}
		b.Stmts = append(b.Stmts, p.stmt())
	}
	p.expect("}")
	return b
}

func (p *parser) stmt() Stmt {
	p.enter()
	defer p.leave()
	as := p.annotations()
	t := p.tok()
	switch {
	case p.is("{"):
		b := p.block()
		b.Annotations = as
		return b
	case p.is(";"):
		p.next()
		return &EmptyStmt{Pos: t.Pos}
	case p.is("if"):
		p.next()
		p.expect("(")
		c := p.expr()
		p.expect(")")
		s := &IfStmt{Pos: t.Pos, Cond: c, Then: p.stmt()}
		if p.accept("else") {
			s.Else = p.stmt()
		}
		return s
	case p.is("exit"):
		p.next()
		p.expect(";")
		return &ExitStmt{Pos: t.Pos}
	case p.is("return"):
		p.next()
		s := &ReturnStmt{Pos: t.Pos}
		if !p.is(";") {
			s.Value = p.expr()
		}
		p.expect(";")
		return s
	case p.is("switch"):
		p.next()
		p.expect("(")
		x := p.expr()
		p.expect(")")
		s := &SwitchStmt{Pos: t.Pos, X: x}
		p.expect("{")
		for !p.is("}") {
			c := &SwitchCase{Pos: p.tok().Pos}
			for {
				if p.is("default") {
					c.Labels = append(c.Labels, &Default{Pos: p.next().Pos})
				} else {
					c.Labels = append(c.Labels, p.expr())
				}
				p.expect(":")
				if p.is("{") {
					break
				}
				// fallthrough label: "a: b: { ... }" or "a:" alone before "}"
				if p.is("}") {
					break
				}
				s.Cases = append(s.Cases, c)
				c = &SwitchCase{Pos: p.tok().Pos}
			}
			if p.is("{") {
				c.Body = p.block()
			}
			s.Cases = append(s.Cases, c)
		}
		p.expect("}")
		return s
	case p.is("const"):
		return &DeclStmt{Pos: t.Pos, Decl: p.constDecl(as)}
	}
	if p.isTypeStart() && (p.peek(1).Kind == IDENT || p.isAt(1, "<") || p.isAt(1, "[")) && !p.isAt(1, ".") {
		ty := p.typeRef()
		n, npos := p.name()
		d := &VarDecl{Pos: npos, Annotations: as, Type: ty, Name: n}
		if p.accept("=") {
			d.Init = p.expr()
		}
		p.expect(";")
		return &DeclStmt{Pos: t.Pos, Decl: d}
	}
	lhs := p.expr()
	for _, op := range []string{"=", "+=", "-=", "*=", "&=", "|=", "^="} {
		if p.is(op) {
			p.next()
			rhs := p.expr()
			p.expect(";")
			return &AssignStmt{Pos: t.Pos, Op: op, LHS: lhs, RHS: rhs}
		}
	}
	c, ok := lhs.(*Call)
	if !ok {
		p.fail(p.tok().Pos, "expected '=' or a method call, found %s", describe(p.tok()))
	}
	p.expect(";")
	return &CallStmt{Pos: t.Pos, Call: c}
}

// ---------- expressions ----------

var binPrec = map[string]int{
	"||": 1, "&&": 2, "==": 3, "!=": 3, "<": 4, ">": 4, "<=": 4, ">=": 4,
	"|": 5, "^": 6, "&": 7, "<<": 8, ">>": 8, "++": 9, "+": 9, "-": 9, "|+|": 9, "|-|": 9,
	"*": 10, "/": 10, "%": 10,
}

func (p *parser) expr() Expr {
	p.enter()
	defer p.leave()
	c := p.binary(1)
	if p.is("?") {
		pos := p.next().Pos
		a := p.expr()
		p.expect(":")
		b := p.expr()
		return &Cond{Pos: pos, Cond: c, Then: a, Else: b}
	}
	return c
}

func (p *parser) binOp() (string, int) {
	t := p.tok()
	if t.Kind != OP {
		return "", 0
	}
	if t.Text == ">" {
		n := p.peek(1)
		if n.Kind == OP && n.Text == ">" && n.Off == t.Off+1 {
			return ">>", 2
		}
	}
	return t.Text, 1
}

func (p *parser) binary(min int) Expr {
	x := p.unary()
	for {
		op, ntok := p.binOp()
		pr, ok := binPrec[op]
		if !ok || pr < min {
			return x
		}
		pos := p.tok().Pos
		for k := 0; k < ntok; k++ {
			p.next()
		}
		y := p.binary(pr + 1)
		x = &Binary{Pos: pos, Op: op, X: x, Y: y}
	}
}

func (p *parser) unary() Expr {
	p.enter()
	defer p.leave()
	t := p.tok()
	if t.Kind == OP && (t.Text == "-" || t.Text == "!" || t.Text == "~" || t.Text == "+") {
		p.next()
		x := p.unary()
		if t.Text == "+" {
			return x
		}
		return &Unary{Pos: t.Pos, Op: t.Text, X: x}
	}
	if p.is("(") {
		// cast?
		save := p.i
		p.next()
		if p.isTypeStart() {
			ty := p.typeRef()
			if p.is(")") {
				p.next()
				x := p.unary()
				return &Cast{Pos: t.Pos, Type: ty, X: x}
			}
		}
		p.i = save
	}
	return p.postfix(p.primary())
}

func (p *parser) primary() Expr {
	t := p.tok()
	switch t.Kind {
	case INT:
		p.next()
		return &IntLit{Pos: t.Pos, Val: t.Val, Width: t.Width, Signed: t.Signed, HasWidth: t.HasWidth}
	case STRING:
		p.next()
		return &StringLit{Pos: t.Pos, Value: t.Text}
	case IDENT:
		switch t.Text {
		case "true", "false":
			p.next()
			return &BoolLit{Pos: t.Pos, Value: t.Text == "true"}
		case "error":
			p.next()
			return &TypeRef{Pos: t.Pos, Type: &BaseType{Pos: t.Pos, Kind: "error"}}
		case "bit", "int", "varbit", "bool", "tuple":
			return &TypeRef{Pos: t.Pos, Type: p.typeRef()}
		}
		if IsKeyword(t.Text) && t.Text != "apply" && t.Text != "state" && t.Text != "type" {
			p.fail(t.Pos, "unexpected keyword %q in expression", t.Text)
		}
		p.next()
		if p.typeNames[t.Text] && p.is("<") {
			// generic type in expression position (e.g. a constructor call)
			p.i--
			return &TypeRef{Pos: t.Pos, Type: p.typeRef()}
		}
		return &Ident{Pos: t.Pos, Name: t.Text}
	case OP:
		switch t.Text {
		case "(":
			p.next()
			e := p.expr()
			p.expect(")")
			return e
		case "{":
			p.next()
			l := &List{Pos: t.Pos}
			for !p.is("}") {
				if p.tok().Kind == IDENT && p.isAt(1, "=") {
					// struct initializer with names: keep values in order
					p.next()
					p.next()
				}
				l.Elems = append(l.Elems, p.expr())
				if !p.accept(",") {
					break
				}
			}
			p.expect("}")
			return l
		case ".":
			p.next()
			n, pos := p.name()
			return &Ident{Pos: pos, Name: n, Global: true}
		}
	}
	p.fail(t.Pos, "expected an expression, found %s", describe(t))
	return nil
}

func (p *parser) postfix(x Expr) Expr {
	for {
		t := p.tok()
		switch {
		case p.is("."):
			p.next()
			nt := p.tok()
			if nt.Kind != IDENT {
				p.fail(nt.Pos, "expected a member name after '.', found %s", describe(nt))
			}
			p.next()
			x = &Member{Pos: nt.Pos, X: x, Name: nt.Text}
		case p.is("["):
			p.next()
			i := p.expr()
			if p.accept(":") {
				lo := p.expr()
				p.expect("]")
				x = &Slice{Pos: t.Pos, X: x, Hi: i, Lo: lo}
			} else {
				p.expect("]")
				x = &Index{Pos: t.Pos, X: x, Index: i}
			}
		case p.is("("):
			args := p.args()
			x = &Call{Pos: t.Pos, Fn: x, Args: args}
		case p.is("<") && p.isGenericCall():
			p.next()
			var tas []Type
			for !p.is(">") {
				tas = append(tas, p.typeArg())
				if !p.accept(",") {
					break
				}
			}
			p.expect(">")
			args := p.args()
			x = &Call{Pos: t.Pos, Fn: x, TypeArgs: tas, Args: args}
		default:
			return x
		}
	}
}

// isGenericCall looks ahead for "< types > (" after a name.
func (p *parser) isGenericCall() bool {
	depth := 0
	for k := 0; k < 40; k++ {
		t := p.peek(k)
		if t.Kind == EOF {
			return false
		}
		if t.Kind == OP {
			switch t.Text {
			case "<":
				depth++
			case ">":
				depth--
				if depth == 0 {
					return p.isAt(k+1, "(")
				}
			case ",", "_":
			default:
				return false
			}
			continue
		}
		if t.Kind == IDENT && (p.typeNames[t.Text] || t.Text == "bit" || t.Text == "int" || t.Text == "bool") {
			continue
		}
		if t.Kind == INT {
			continue
		}
		return false
	}
	return false
}
