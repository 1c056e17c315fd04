package syntax

import (
	"math/big"
	"strings"
)

// TokKind is the kind of a token.
type TokKind int

const (
	EOF TokKind = iota
	IDENT
	INT
	STRING
	OP
)

// Preprocessed is preprocessed text and, for each of its lines, where it
// came from (package cpp makes it from the C preprocessor's output).
type Preprocessed struct {
	Text  string
	Lines []Pos // Lines[i] is the origin of line i+1; each token's column is its column there
}

// Plain is the text of a file that needs no preprocessing (tests, tools):
// every line is its own origin. The text is recorded in sources.
func Plain(name string, src []byte, sources *Sources) *Preprocessed {
	sources.Add(name, string(src))
	n := strings.Count(string(src), "\n") + 1
	lines := make([]Pos, n)
	for i := range lines {
		lines[i] = Pos{File: name, Line: i + 1, Col: 1}
	}
	return &Preprocessed{Text: string(src), Lines: lines}
}

// Token is one lexical token.
type Token struct {
	Kind TokKind
	Text string
	Pos  Pos
	Off  int // byte offset in the preprocessed text, to detect adjacency
	// INT only
	Val      *big.Int
	Width    int // 0 when no width prefix
	Signed   bool
	HasWidth bool
}

var keywords = map[string]bool{
	"action": true, "actions": false, "apply": true, "bit": true, "bool": true, "const": true, "control": true,
	"default": true, "else": true, "enum": true, "error": true, "exit": true, "extern": true, "false": true,
	"header": true, "header_union": true, "if": true, "in": true, "inout": true, "int": true, "match_kind": true,
	"out": true, "package": true, "parser": true, "return": true, "select": true, "state": true, "string": true,
	"struct": true, "switch": true, "table": true, "transition": true, "true": true, "tuple": true,
	"type": true, "typedef": true, "varbit": true, "value_set": true, "void": true, "this": true, "abstract": true,
}

// IsKeyword reports whether s is a reserved word.
func IsKeyword(s string) bool { return keywords[s] }

var ops = []string{"&&&", "|+|", "|-|", "...", "..", "++", "&&", "||", "==", "!=", "<=", ">=", "<<",
	"+=", "-=", "*=", "&=", "|=", "^=", "{", "}", "(", ")", "[", "]", "<", ">", ";", ":", ",", ".", "=",
	"+", "-", "*", "/", "%", "&", "|", "^", "~", "!", "?", "@", "#"}

// Lex splits preprocessed text into tokens. Errors carry positions.
func Lex(pp *Preprocessed, src *Sources) ([]Token, ErrorList) {
	var toks []Token
	var errs ErrorList
	s := pp.Text
	line, lineStart := 1, 0
	posAt := func(off int) Pos {
		if line-1 < len(pp.Lines) {
			p := pp.Lines[line-1]
			p.Col = off - lineStart + 1
			return p
		}
		return Pos{File: "<input>", Line: line, Col: off - lineStart + 1}
	}
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '\n':
			line++
			i++
			lineStart = i
			continue
		case c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v':
			i++
			continue
		}
		pos := posAt(i)
		start := i
		switch {
		case isIdentStart(c):
			for i < len(s) && isIdentChar(s[i]) {
				i++
			}
			toks = append(toks, Token{Kind: IDENT, Text: s[start:i], Pos: pos, Off: start})
		case c >= '0' && c <= '9':
			for i < len(s) && (isIdentChar(s[i])) {
				i++
			}
			t := Token{Kind: INT, Text: s[start:i], Pos: pos, Off: start}
			if err := parseIntLit(&t); err != "" {
				errs = append(errs, src.Errorf(pos, "%s", err))
				t.Val = new(big.Int)
			}
			toks = append(toks, t)
		case c == '"':
			i++
			var b strings.Builder
			for i < len(s) && s[i] != '"' && s[i] != '\n' {
				if s[i] == '\\' && i+1 < len(s) {
					i++
				}
				b.WriteByte(s[i])
				i++
			}
			if i >= len(s) || s[i] != '"' {
				errs = append(errs, src.Errorf(pos, "unterminated string literal"))
			} else {
				i++
			}
			toks = append(toks, Token{Kind: STRING, Text: b.String(), Pos: pos, Off: start})
		default:
			found := false
			for _, op := range ops {
				if strings.HasPrefix(s[i:], op) {
					toks = append(toks, Token{Kind: OP, Text: op, Pos: pos, Off: start})
					i += len(op)
					found = true
					break
				}
			}
			if !found {
				errs = append(errs, src.Errorf(pos, "unexpected character %q", string(c)))
				i++
			}
		}
	}
	toks = append(toks, Token{Kind: EOF, Pos: posAt(len(s)), Off: len(s)})
	return toks, errs
}

// parseIntLit decodes [width(w|s)]value with 0x/0b/0o/0d prefixes and _ separators.
func parseIntLit(t *Token) string {
	txt := strings.ReplaceAll(t.Text, "_", "")
	// width prefix: digits followed by w or s
	j := 0
	for j < len(txt) && txt[j] >= '0' && txt[j] <= '9' {
		j++
	}
	if j > 0 && j < len(txt) && (txt[j] == 'w' || txt[j] == 's') {
		w, ok := new(big.Int).SetString(txt[:j], 10)
		if !ok || !w.IsInt64() || w.Int64() <= 0 || w.Int64() > 2048 {
			return "bad width in integer literal " + t.Text
		}
		t.Width = int(w.Int64())
		t.HasWidth = true
		t.Signed = txt[j] == 's'
		txt = txt[j+1:]
	}
	base := 10
	if len(txt) > 2 && txt[0] == '0' {
		switch txt[1] {
		case 'x', 'X':
			base = 16
		case 'b', 'B':
			base = 2
		case 'o', 'O':
			base = 8
		case 'd', 'D':
			base = 10
		}
		if base != 10 || txt[1] == 'd' || txt[1] == 'D' {
			txt = txt[2:]
		}
	}
	v, ok := new(big.Int).SetString(txt, base)
	if !ok || txt == "" {
		return "bad integer literal " + t.Text
	}
	t.Val = v
	return ""
}

func isIdentStart(c byte) bool {
	return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
}

func isIdentChar(c byte) bool { return isIdentStart(c) || (c >= '0' && c <= '9') }
