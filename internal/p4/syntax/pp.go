package syntax

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// PPOptions configures the preprocessor.
type PPOptions struct {
	IncludeDirs []string          // searched for #include "x" (after the including file's dir) and <x>
	Defines     map[string]string // -D NAME=value ("" value means 1)
	System      fs.FS             // searched last for <x> (the embedded core.p4, v1model.p4)
	// ReadFile reads a user file; os.ReadFile when nil.
	ReadFile func(name string) ([]byte, error)
	Sources  *Sources // receives the text of every file read
}

// Preprocessed is the preprocessor's output: the text and, for each output
// line, where it came from.
type Preprocessed struct {
	Text  string
	Lines []Pos // Lines[i] is the origin of output line i+1 (column 1)
}

type macro struct {
	name     string
	params   []string
	funcLike bool
	body     string
}

type ppCond struct {
	active    bool // lines in this branch are kept
	taken     bool // some branch of this #if was taken
	parentAct bool
	elseSeen  bool
	pos       Pos
}

type preproc struct {
	opt     PPOptions
	macros  map[string]*macro
	out     strings.Builder
	lines   []Pos
	errs    ErrorList
	once    map[string]bool
	depth   int
	sources *Sources
	tooBig  bool
}

const maxExpansion = 1 << 16

// Preprocess runs the C preprocessor subset P4 programs use: #include,
// object-like and function-like #define, #undef, #if/#ifdef/#ifndef/#elif/
// #else/#endif with defined(), #error, #pragma once; comments are removed.
func Preprocess(path string, src []byte, opt PPOptions) (*Preprocessed, error) {
	p := &preproc{opt: opt, macros: map[string]*macro{}, once: map[string]bool{}, sources: opt.Sources}
	for k, v := range opt.Defines {
		if v == "" {
			v = "1"
		}
		p.macros[k] = &macro{name: k, body: v}
	}
	if src == nil {
		b, err := p.read(path)
		if err != nil {
			return nil, err
		}
		src = b
	}
	p.file(path, string(src))
	if len(p.errs) > 0 {
		return nil, p.errs.Err()
	}
	return &Preprocessed{Text: p.out.String(), Lines: p.lines}, nil
}

func (p *preproc) read(name string) ([]byte, error) {
	if p.opt.ReadFile != nil {
		return p.opt.ReadFile(name)
	}
	return os.ReadFile(name)
}

func (p *preproc) errorf(pos Pos, format string, args ...any) {
	p.errs = append(p.errs, p.sources.Errorf(pos, format, args...))
}

func (p *preproc) emit(line string, pos Pos) {
	p.out.WriteString(line)
	p.out.WriteByte('\n')
	p.lines = append(p.lines, pos)
}

// stripComments replaces comments by spaces, keeping newlines.
func stripComments(s string) string {
	b := []byte(s)
	for i := 0; i < len(b); i++ {
		switch {
		case b[i] == '"':
			for i++; i < len(b) && b[i] != '"' && b[i] != '\n'; i++ {
				if b[i] == '\\' {
					i++
				}
			}
		case b[i] == '/' && i+1 < len(b) && b[i+1] == '/':
			for ; i < len(b) && b[i] != '\n'; i++ {
				b[i] = ' '
			}
		case b[i] == '/' && i+1 < len(b) && b[i+1] == '*':
			b[i], b[i+1] = ' ', ' '
			i += 2
			for ; i < len(b) && !(b[i] == '*' && i+1 < len(b) && b[i+1] == '/'); i++ {
				if b[i] != '\n' {
					b[i] = ' '
				}
			}
			if i < len(b) {
				b[i], b[i+1] = ' ', ' '
				i++
			}
		}
	}
	return string(b)
}

func (p *preproc) file(path, text string) {
	p.depth++
	defer func() { p.depth-- }()
	p.sources.Add(path, text)
	lines := strings.Split(stripComments(text), "\n")
	var conds []ppCond
	active := func() bool { return len(conds) == 0 || conds[len(conds)-1].active }
	for i := 0; i < len(lines); i++ {
		pos := Pos{File: path, Line: i + 1, Col: 1}
		line := strings.TrimRight(lines[i], "\r")
		// Line continuations: join, and keep the line count.
		extra := 0
		for strings.HasSuffix(line, "\\") && i+1 < len(lines) {
			i++
			extra++
			line = line[:len(line)-1] + " " + strings.TrimRight(lines[i], "\r")
		}
		trimmed := strings.TrimSpace(line)
		if strings.HasPrefix(trimmed, "#") {
			dpos := pos
			dpos.Col = strings.Index(line, "#") + 1
			d := strings.TrimSpace(trimmed[1:])
			name := d
			rest := ""
			if j := strings.IndexAny(d, " \t("); j >= 0 {
				name, rest = d[:j], strings.TrimSpace(d[j:])
			}
			if name == "define" || name == "undef" || name == "include" || name == "error" || name == "warning" || name == "pragma" || name == "line" {
				// handled below when active
			}
			switch name {
			case "if", "ifdef", "ifndef":
				par := active()
				var v bool
				if par {
					switch name {
					case "ifdef":
						_, v = p.macros[firstWord(rest)]
					case "ifndef":
						_, v = p.macros[firstWord(rest)]
						v = !v
					default:
						v = p.evalCond(rest, dpos)
					}
				}
				conds = append(conds, ppCond{active: par && v, taken: v, parentAct: par, pos: dpos})
			case "elif":
				if len(conds) == 0 {
					p.errorf(dpos, "#elif without #if")
					break
				}
				c := &conds[len(conds)-1]
				if c.taken || !c.parentAct {
					c.active = false
				} else {
					v := p.evalCond(rest, dpos)
					c.active, c.taken = v, v
				}
			case "else":
				if len(conds) == 0 {
					p.errorf(dpos, "#else without #if")
					break
				}
				c := &conds[len(conds)-1]
				if c.elseSeen {
					p.errorf(dpos, "#else after #else")
				}
				c.elseSeen = true
				c.active = c.parentAct && !c.taken
				c.taken = true
			case "endif":
				if len(conds) == 0 {
					p.errorf(dpos, "#endif without #if")
					break
				}
				conds = conds[:len(conds)-1]
			default:
				if !active() {
					break
				}
				switch name {
				case "define":
					p.define(rest, dpos)
				case "undef":
					delete(p.macros, firstWord(rest))
				case "include":
					p.include(rest, dpos, path)
				case "error":
					p.errorf(dpos, "#error %s", rest)
				case "warning", "line", "":
				case "pragma":
					if strings.TrimSpace(rest) == "once" {
						p.once[path] = true
					}
				default:
					p.errorf(dpos, "unknown preprocessor directive #%s", name)
				}
			}
			p.emit("", pos)
		} else if active() {
			p.emit(p.expand(line, pos, 0, nil), pos)
			if p.out.Len() > 64<<20 {
				p.errorf(pos, "preprocessed program too large")
				return
			}
		} else {
			p.emit("", pos)
		}
		for k := 0; k < extra; k++ {
			p.emit("", Pos{File: path, Line: pos.Line + k + 1, Col: 1})
		}
	}
	if len(conds) > 0 {
		p.errorf(conds[len(conds)-1].pos, "unterminated #if")
	}
}

func firstWord(s string) string {
	s = strings.TrimSpace(s)
	for i, c := range s {
		if !(isIdentChar(byte(c))) {
			return s[:i]
		}
	}
	return s
}

func isIdentStart(c byte) bool {
	return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
}
func isIdentChar(c byte) bool { return isIdentStart(c) || (c >= '0' && c <= '9') }

func (p *preproc) define(rest string, pos Pos) {
	i := 0
	for i < len(rest) && isIdentChar(rest[i]) {
		i++
	}
	name := rest[:i]
	if name == "" || !isIdentStart(name[0]) {
		p.errorf(pos, "#define needs a macro name")
		return
	}
	m := &macro{name: name}
	if i < len(rest) && rest[i] == '(' {
		j := strings.IndexByte(rest[i:], ')')
		if j < 0 {
			p.errorf(pos, "unterminated macro parameter list")
			return
		}
		m.funcLike = true
		for _, a := range strings.Split(rest[i+1:i+j], ",") {
			if a = strings.TrimSpace(a); a != "" {
				m.params = append(m.params, a)
			}
		}
		i += j + 1
	}
	m.body = strings.TrimSpace(rest[i:])
	p.macros[name] = m
}

func (p *preproc) include(rest string, pos Pos, from string) {
	rest = strings.TrimSpace(p.expand(rest, pos, 0, nil))
	if len(rest) < 2 {
		p.errorf(pos, "#include expects \"file\" or <file>")
		return
	}
	var name string
	sys := false
	switch {
	case rest[0] == '"' && strings.IndexByte(rest[1:], '"') >= 0:
		name = rest[1 : 1+strings.IndexByte(rest[1:], '"')]
	case rest[0] == '<' && strings.IndexByte(rest, '>') > 0:
		name = rest[1:strings.IndexByte(rest, '>')]
		sys = true
	default:
		p.errorf(pos, "#include expects \"file\" or <file>")
		return
	}
	if p.depth > 40 {
		p.errorf(pos, "#include nested too deeply")
		return
	}
	var dirs []string
	if !sys {
		dirs = append(dirs, filepath.Dir(from))
	}
	dirs = append(dirs, p.opt.IncludeDirs...)
	for _, d := range dirs {
		full := filepath.Join(d, name)
		if b, err := p.read(full); err == nil {
			if !p.once[full] {
				p.file(full, string(b))
			}
			return
		}
	}
	if p.opt.System != nil {
		if b, err := fs.ReadFile(p.opt.System, name); err == nil {
			full := "<" + name + ">"
			if !p.once[full] {
				p.file(full, string(b))
			}
			return
		}
	}
	p.errorf(pos, "cannot find include file %q", name)
}

// expand replaces macros in one line.
func (p *preproc) expand(s string, pos Pos, depth int, hide map[string]bool) string {
	if depth > 50 {
		p.errorf(pos, "macro expansion too deep")
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		if b.Len() > maxExpansion {
			if !p.tooBig {
				p.errorf(pos, "macro expansion too large")
				p.tooBig = true
			}
			return b.String()
		}
		c := s[i]
		switch {
		case c == '"':
			j := i + 1
			for j < len(s) && s[j] != '"' {
				if s[j] == '\\' {
					j++
				}
				j++
			}
			if j < len(s) {
				j++
			} else {
				j = len(s)
			}
			b.WriteString(s[i:j])
			i = j
		case c >= '0' && c <= '9':
			j := i
			for j < len(s) && isIdentChar(s[j]) {
				j++
			}
			b.WriteString(s[i:j])
			i = j
		case isIdentStart(c):
			j := i
			for j < len(s) && isIdentChar(s[j]) {
				j++
			}
			word := s[i:j]
			m := p.macros[word]
			if m == nil || hide[word] {
				b.WriteString(word)
				i = j
				continue
			}
			nh := map[string]bool{word: true}
			for k := range hide {
				nh[k] = true
			}
			if !m.funcLike {
				b.WriteString(p.expand(m.body, pos, depth+1, nh))
				i = j
				continue
			}
			k := j
			for k < len(s) && (s[k] == ' ' || s[k] == '\t') {
				k++
			}
			if k >= len(s) || s[k] != '(' {
				b.WriteString(word)
				i = j
				continue
			}
			args, end, ok := splitArgs(s, k)
			if !ok {
				p.errorf(pos, "unterminated call of macro %s (arguments must be on one line)", word)
				b.WriteString(word)
				i = j
				continue
			}
			if len(args) == 1 && strings.TrimSpace(args[0]) == "" && len(m.params) == 0 {
				args = nil
			}
			if len(args) != len(m.params) {
				p.errorf(pos, "macro %s expects %d arguments, got %d", word, len(m.params), len(args))
			}
			for ai := range args {
				args[ai] = p.expand(args[ai], pos, depth+1, hide)
			}
			body := substParams(m, args)
			b.WriteString(p.expand(body, pos, depth+1, nh))
			i = end
		default:
			b.WriteByte(c)
			i++
		}
	}
	return b.String()
}

func splitArgs(s string, open int) ([]string, int, bool) {
	depth := 0
	var args []string
	start := open + 1
	for i := open; i < len(s); i++ {
		switch s[i] {
		case '(':
			depth++
		case ')':
			depth--
			if depth == 0 {
				args = append(args, s[start:i])
				return args, i + 1, true
			}
		case ',':
			if depth == 1 {
				args = append(args, s[start:i])
				start = i + 1
			}
		}
	}
	return nil, 0, false
}

func substParams(m *macro, args []string) string {
	idx := map[string]int{}
	for i, n := range m.params {
		idx[n] = i
	}
	s := m.body
	var b strings.Builder
	for i := 0; i < len(s); {
		if isIdentStart(s[i]) {
			j := i
			for j < len(s) && isIdentChar(s[j]) {
				j++
			}
			if k, ok := idx[s[i:j]]; ok && k < len(args) {
				b.WriteString(strings.TrimSpace(args[k]))
			} else {
				b.WriteString(s[i:j])
			}
			i = j
			continue
		}
		b.WriteByte(s[i])
		i++
	}
	return b.String()
}

// evalCond evaluates an #if expression.
func (p *preproc) evalCond(expr string, pos Pos) bool {
	// Replace defined(X) / defined X first, then expand macros.
	var b strings.Builder
	for i := 0; i < len(expr); {
		if strings.HasPrefix(expr[i:], "defined") && (i+7 == len(expr) || !isIdentChar(expr[i+7])) && (i == 0 || !isIdentChar(expr[i-1])) {
			j := i + 7
			for j < len(expr) && expr[j] == ' ' {
				j++
			}
			paren := j < len(expr) && expr[j] == '('
			if paren {
				j++
			}
			for j < len(expr) && expr[j] == ' ' {
				j++
			}
			k := j
			for k < len(expr) && isIdentChar(expr[k]) {
				k++
			}
			name := expr[j:k]
			if paren {
				for k < len(expr) && expr[k] == ' ' {
					k++
				}
				if k < len(expr) && expr[k] == ')' {
					k++
				}
			}
			if _, ok := p.macros[name]; ok {
				b.WriteString(" 1 ")
			} else {
				b.WriteString(" 0 ")
			}
			i = k
			continue
		}
		b.WriteByte(expr[i])
		i++
	}
	ex := p.expand(b.String(), pos, 0, nil)
	ev := &condEval{s: ex}
	ev.lex()
	v := ev.ternary()
	if ev.err != "" || ev.i < len(ev.toks) {
		msg := ev.err
		if msg == "" {
			msg = "unexpected " + ev.toks[ev.i]
		}
		p.errorf(pos, "bad #if expression %q: %s", strings.TrimSpace(expr), msg)
		return false
	}
	return v != 0
}

type condEval struct {
	s    string
	toks []string
	i    int
	err  string
}

func (e *condEval) lex() {
	s := e.s
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == ' ' || c == '\t':
			i++
		case isIdentChar(c):
			j := i
			for j < len(s) && isIdentChar(s[j]) {
				j++
			}
			e.toks = append(e.toks, s[i:j])
			i = j
		default:
			for _, op := range []string{"&&", "||", "==", "!=", "<=", ">=", "<<", ">>"} {
				if strings.HasPrefix(s[i:], op) {
					e.toks = append(e.toks, op)
					i += 2
					goto next
				}
			}
			e.toks = append(e.toks, string(c))
			i++
		next:
		}
	}
}

func (e *condEval) peek() string {
	if e.i < len(e.toks) {
		return e.toks[e.i]
	}
	return ""
}

func (e *condEval) ternary() int64 {
	c := e.binary(0)
	if e.peek() == "?" {
		e.i++
		a := e.ternary()
		if e.peek() != ":" {
			e.err = "expected :"
			return 0
		}
		e.i++
		b := e.ternary()
		if c != 0 {
			return a
		}
		return b
	}
	return c
}

var ppPrec = map[string]int{"||": 1, "&&": 2, "|": 3, "^": 4, "&": 5, "==": 6, "!=": 6, "<": 7, ">": 7, "<=": 7, ">=": 7, "<<": 8, ">>": 8, "+": 9, "-": 9, "*": 10, "/": 10, "%": 10}

func (e *condEval) binary(min int) int64 {
	x := e.unary()
	for {
		op := e.peek()
		pr, ok := ppPrec[op]
		if !ok || pr <= min {
			return x
		}
		e.i++
		y := e.binary(pr)
		switch op {
		case "||":
			x = b2i(x != 0 || y != 0)
		case "&&":
			x = b2i(x != 0 && y != 0)
		case "|":
			x |= y
		case "^":
			x ^= y
		case "&":
			x &= y
		case "==":
			x = b2i(x == y)
		case "!=":
			x = b2i(x != y)
		case "<":
			x = b2i(x < y)
		case ">":
			x = b2i(x > y)
		case "<=":
			x = b2i(x <= y)
		case ">=":
			x = b2i(x >= y)
		case "<<":
			x <<= uint(y & 63)
		case ">>":
			x >>= uint(y & 63)
		case "+":
			x += y
		case "-":
			x -= y
		case "*":
			x *= y
		case "/", "%":
			if y == 0 {
				e.err = "division by zero"
				return 0
			}
			if op == "/" {
				x /= y
			} else {
				x %= y
			}
		}
	}
}

func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

func (e *condEval) unary() int64 {
	t := e.peek()
	switch t {
	case "":
		e.err = "unexpected end of expression"
		return 0
	case "!":
		e.i++
		return b2i(e.unary() == 0)
	case "-":
		e.i++
		return -e.unary()
	case "+":
		e.i++
		return e.unary()
	case "~":
		e.i++
		return ^e.unary()
	case "(":
		e.i++
		v := e.ternary()
		if e.peek() != ")" {
			e.err = "expected )"
			return 0
		}
		e.i++
		return v
	}
	e.i++
	if t[0] >= '0' && t[0] <= '9' {
		s := strings.TrimRight(t, "uUlL")
		v, err := strconv.ParseInt(s, 0, 64)
		if err != nil {
			e.err = fmt.Sprintf("bad number %s", t)
		}
		return v
	}
	if isIdentStart(t[0]) {
		return 0 // undefined identifiers are 0, as in C
	}
	e.err = "unexpected " + t
	return 0
}
