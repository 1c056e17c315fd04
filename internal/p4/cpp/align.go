package cpp

import "strings"

// blankComments replaces the comments of C-like source by spaces, keeping
// newlines (and so every line and column), and leaves string literals alone.
func blankComments(s string) string {
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
			for i += 2; i < len(b) && !(b[i] == '*' && i+1 < len(b) && b[i+1] == '/'); i++ {
				if b[i] != '\n' {
					b[i] = ' '
				}
			}
			if i+1 < len(b) {
				b[i], b[i+1] = ' ', ' '
				i++
			}
		}
	}
	return string(b)
}

func isWordChar(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// token is one token of a preprocessed line, and whether white space came
// before it.
type token struct {
	text  string
	space bool
}

// tokens splits a line into words (identifiers and numbers), string
// literals and single other characters.
func tokens(l string) []token {
	var out []token
	space := false
	for i := 0; i < len(l); {
		c := l[i]
		j := i + 1
		switch {
		case c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v':
			space = true
			i++
			continue
		case isWordChar(c):
			for j < len(l) && isWordChar(l[j]) {
				j++
			}
		case c == '"':
			for j < len(l) && l[j] != '"' {
				if l[j] == '\\' {
					j++
				}
				j++
			}
			j = min(j+1, len(l))
		}
		out = append(out, token{l[i:j], space})
		space = false
		i = j
	}
	return out
}

// find is the index of tok in src at or after from, on token boundaries,
// or -1. Words and strings are searched for (macros may stand between);
// other characters, too common to search for, must come next.
func find(src string, from int, tok string) int {
	word := isWordChar(tok[0])
	if !word && tok[0] != '"' {
		i := skipBlanks(src, from)
		if strings.HasPrefix(src[i:], tok) {
			return i
		}
		return -1
	}
	for i := from; i <= len(src)-len(tok); {
		k := strings.Index(src[i:], tok)
		if k < 0 {
			return -1
		}
		k += i
		if !word || (k == 0 || !isWordChar(src[k-1])) && (k+len(tok) == len(src) || !isWordChar(src[k+len(tok)])) {
			return k
		}
		i = k + 1
	}
	return -1
}

// align re-spaces a preprocessed line so that its tokens sit at the columns
// they have in src, the source line it came from (comments blanked). The
// preprocessor keeps a line's tokens but squeezes the white space between
// them; tokens a macro produced take the column of what follows the last
// token found (the macro's name). Tokens the preprocessor wrote side by
// side stay side by side, those it spaced stay spaced: the token stream is
// unchanged.
func align(l, src string) string {
	toks := tokens(l)
	if len(toks) == 0 {
		return l
	}
	var b strings.Builder
	cursor := 0
	for _, t := range toks {
		col := find(src, cursor, t.text)
		if col >= 0 {
			cursor = col + len(t.text)
		} else {
			col = skipBlanks(src, cursor)
		}
		switch {
		case b.Len() == 0 || t.space:
			if pad := col - b.Len(); pad > 0 {
				b.WriteString(strings.Repeat(" ", pad))
			} else if b.Len() > 0 {
				b.WriteByte(' ')
			}
		}
		b.WriteString(t.text)
	}
	return b.String()
}

func skipBlanks(src string, i int) int {
	for i < len(src) && (src[i] == ' ' || src[i] == '\t') {
		i++
	}
	return i
}
