// Package syntax holds the P4-16 front end: the lexer, the parser and the
// AST, with source positions and diagnostics. Preprocessing is the real C
// preprocessor's (package cpp); this package reads its output.
package syntax

import (
	"fmt"
	"sort"
	"strings"
)

// Pos is a position in a source file (1-based line and column).
type Pos struct {
	File string
	Line int
	Col  int
}

func (p Pos) String() string {
	if p.File == "" && p.Line == 0 {
		return "<unknown>"
	}
	return fmt.Sprintf("%s:%d:%d", p.File, p.Line, p.Col)
}

// IsValid reports whether the position points somewhere.
func (p Pos) IsValid() bool { return p.Line > 0 }

// Error is one diagnostic: a message at a position, with the source line
// and a caret under the column when the line is known.
type Error struct {
	Pos     Pos
	Msg     string
	Line    string // the source line, if known
	Warning bool   // a warning (the program compiles), not an error
}

func (e *Error) Error() string {
	var b strings.Builder
	kind := "error"
	if e.Warning {
		kind = "warning"
	}
	fmt.Fprintf(&b, "%s: %s: %s", e.Pos, kind, e.Msg)
	if e.Line != "" {
		line := strings.ReplaceAll(e.Line, "\t", " ")
		b.WriteString("\n  " + line + "\n  ")
		col := e.Pos.Col
		if col < 1 {
			col = 1
		}
		if col > len(line)+1 {
			col = len(line) + 1
		}
		b.WriteString(strings.Repeat(" ", col-1) + "^")
	}
	return b.String()
}

// ErrorList is a list of diagnostics; it is itself an error.
type ErrorList []*Error

func (l ErrorList) Error() string {
	var parts []string
	for i, e := range l {
		if i == 20 {
			parts = append(parts, fmt.Sprintf("... and %d more errors", len(l)-20))
			break
		}
		parts = append(parts, e.Error())
	}
	return strings.Join(parts, "\n")
}

// Err returns the list as an error, or nil when empty.
func (l ErrorList) Err() error {
	if len(l) == 0 {
		return nil
	}
	l.Sort()
	return l
}

// Sort orders diagnostics by position.
func (l ErrorList) Sort() {
	sort.SliceStable(l, func(i, j int) bool {
		a, b := l[i].Pos, l[j].Pos
		if a.File != b.File {
			return a.File < b.File
		}
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		return a.Col < b.Col
	})
}

// Sources remembers the text of every file read, to quote lines in errors.
type Sources struct {
	files map[string][]string
}

// NewSources returns an empty source set.
func NewSources() *Sources { return &Sources{files: map[string][]string{}} }

// Add records a file's text.
func (s *Sources) Add(name, text string) {
	if s == nil {
		return
	}
	s.files[name] = strings.Split(text, "\n")
}

// Has reports whether a file's text was recorded.
func (s *Sources) Has(name string) bool {
	if s == nil {
		return false
	}
	_, ok := s.files[name]
	return ok
}

// Text returns a recorded file's text, or "".
func (s *Sources) Text(name string) string {
	if s == nil {
		return ""
	}
	return strings.Join(s.files[name], "\n")
}

// Line returns line n (1-based) of file, or "".
func (s *Sources) Line(p Pos) string {
	if s == nil {
		return ""
	}
	lines := s.files[p.File]
	if p.Line < 1 || p.Line > len(lines) {
		return ""
	}
	return strings.TrimRight(lines[p.Line-1], "\r")
}

// Errorf builds an Error quoting the source line.
func (s *Sources) Errorf(p Pos, format string, args ...any) *Error {
	return &Error{Pos: p, Msg: fmt.Sprintf(format, args...), Line: s.Line(p)}
}
