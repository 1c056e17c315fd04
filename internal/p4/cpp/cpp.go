// Package cpp runs the C preprocessor on P4 source, as p4c does (clang -E -x
// c -undef -nostdinc, the built-in include directory first), confined so
// that a hostile program reaches nothing but the files it may include.
//
// The source is given as text; no path is ever opened on its behalf. The
// preprocessor runs in a bubblewrap sandbox as the user nobody, with no
// network, no /dev, /proc or /etc, and a file system holding only /usr (for
// clang), the program, the built-in include files and the include
// directories the caller trusts (an administrator's, or the local user's
// own for the CLI), all read-only. #include of an absolute path or through
// ".." is refused before it runs; every line marker of its output must name
// one of those files. Its output, run time and address space are bounded, so
// #include "/dev/zero" or a macro that expands without end fails fast with a
// clear error. Diagnostics are the preprocessor's own, at file:line:col of
// the original files; its raw output (which quotes source lines) is never
// passed on.
package cpp

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/edgenf/edgenf/internal/p4/syntax"
)

// Options configures Run.
type Options struct {
	// Path names the program in diagnostics; it is never opened.
	Path   string
	Source []byte
	// IncludeDirs are trusted directories searched, after the built-in
	// files, by #include "x" and <x>. The preprocessor reads them as the
	// user nobody: they must be readable by it.
	IncludeDirs []string
	// Defines are -D NAME[=value] macros ("" means 1).
	Defines map[string]string
	// System holds the built-in include files (core.p4, v1model.p4).
	System fs.FS
	// Sources receives the text of every file the program used, to quote
	// lines in diagnostics.
	Sources *syntax.Sources
	// Clang is the compiler whose preprocessor runs; "" means bpf.Clang()
	// ($EDGENF_CLANG, else clang or clang-NN on PATH). It must live under
	// /usr.
	Clang string
	// Timeout bounds the run (default 10 s), MaxOutput the preprocessed
	// text (default 16 MiB).
	Timeout   time.Duration
	MaxOutput int
}

const (
	defaultTimeout   = 10 * time.Second
	defaultMaxOutput = 16 << 20
	maxStderr        = 64 << 10
	maxIncluded      = 4 << 20 // bytes of an include file read to quote its lines
	addressSpace     = 2 << 30 // the preprocessor's RLIMIT_AS
	nobody           = 65534
)

// Run preprocesses opt.Source. Errors are syntax.ErrorList values, except
// when the preprocessor cannot run at all.
func Run(ctx context.Context, opt Options) (*syntax.Preprocessed, error) {
	if opt.Source == nil {
		return nil, errors.New("cpp: no source text (the preprocessor reads no file on a program's behalf)")
	}
	if opt.Path == "" {
		opt.Path = "program.p4"
	}
	if opt.Sources == nil {
		opt.Sources = syntax.NewSources()
	}
	if opt.Timeout <= 0 {
		opt.Timeout = defaultTimeout
	}
	if opt.MaxOutput <= 0 {
		opt.MaxOutput = defaultMaxOutput
	}
	// The preprocessor ends a line at a lone CR as at LF: so do positions
	// (a raw CR in a string literal ends the literal's line there).
	opt.Source = normalizeNewlines(opt.Source)
	opt.Sources.Add(opt.Path, string(opt.Source))
	if errs := checkDirectives(opt.Path, opt.Source, opt.Sources); len(errs) > 0 {
		return nil, errs.Err()
	}
	first := syntax.Pos{File: opt.Path, Line: 1, Col: 1}
	for _, name := range sortedKeys(opt.Defines) {
		if !isIdent(name) {
			return nil, syntax.ErrorList{opt.Sources.Errorf(first, "-D %q: a macro name is an identifier", name)}.Err()
		}
		if strings.ContainsFunc(opt.Defines[name], func(r rune) bool { return r < ' ' || r == 0x7f }) {
			return nil, syntax.ErrorList{opt.Sources.Errorf(first, "-D %s: the value has control characters", name)}.Err()
		}
	}
	ws, err := newWorkspace(opt)
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(ws.dir)
	out, stderr, runErr := ws.run(ctx, opt)
	if runErr != nil {
		return nil, runErr
	}
	if stderr != nil {
		return nil, stderr
	}
	return ws.translate(out, opt)
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func isIdent(s string) bool {
	if s == "" || !(s[0] == '_' || s[0] >= 'a' && s[0] <= 'z' || s[0] >= 'A' && s[0] <= 'Z') {
		return false
	}
	for i := 1; i < len(s); i++ {
		c := s[i]
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

var includeRE = regexp.MustCompile(`^[ \t]*#[ \t]*(include|include_next|import)\b[ \t]*(.*)$`)

// checkDirectives refuses, before anything runs, the #include directives of
// the program that could name a file outside the allowed set: absolute
// paths, ".." and the variants clang has beyond C's #include. (Computed
// includes are confined by the sandbox and the line-marker check.)
func checkDirectives(name string, src []byte, sources *syntax.Sources) syntax.ErrorList {
	var errs syntax.ErrorList
	lines := strings.Split(blankComments(string(src)), "\n")
	for i := 0; i < len(lines); i++ {
		line, n := lines[i], i+1
		for strings.HasSuffix(strings.TrimRight(line, "\r"), "\\") && i+1 < len(lines) {
			i++
			line = strings.TrimSuffix(strings.TrimRight(line, "\r"), "\\") + lines[i]
		}
		m := includeRE.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		pos := syntax.Pos{File: name, Line: n, Col: strings.Index(line, "#") + 1}
		if m[1] != "include" {
			errs = append(errs, sources.Errorf(pos, "#%s is not supported: use #include", m[1]))
			continue
		}
		arg := strings.TrimSpace(m[2])
		if len(arg) < 2 || (arg[0] != '"' && arg[0] != '<') {
			continue // a computed include: the sandbox confines it
		}
		end := strings.IndexByte(arg[1:], map[byte]byte{'"': '"', '<': '>'}[arg[0]])
		if end < 0 {
			continue // malformed: the preprocessor says so
		}
		file := arg[1 : 1+end]
		switch {
		case strings.HasPrefix(file, "/"):
			errs = append(errs, sources.Errorf(pos, "#include %s: absolute paths are refused; include files come from the built-in and configured include directories", arg[:end+2]))
		case hasDotDot(file):
			errs = append(errs, sources.Errorf(pos, "#include %s: \"..\" is refused; include files come from the built-in and configured include directories", arg[:end+2]))
		}
	}
	return errs
}

func hasDotDot(p string) bool {
	for _, el := range strings.FieldsFunc(p, func(r rune) bool { return r == '/' || r == '\\' }) {
		if el == ".." {
			return true
		}
	}
	return false
}

var diagRE = regexp.MustCompile(`^(.+?):(\d+):(\d+): (fatal error|error): (.*)$`)

// diagnostics turns the preprocessor's errors into positioned ones; the
// source lines and carets it prints are dropped (Sources quotes the
// lines of the files the program may read).
func (ws *workspace) diagnostics(stderr []byte, opt Options) syntax.ErrorList {
	var errs syntax.ErrorList
	for _, l := range strings.Split(string(stderr), "\n") {
		m := diagRE.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		line, _ := strconv.Atoi(m[2])
		col, _ := strconv.Atoi(m[3])
		f, ok := ws.file(m[1], opt)
		if !ok {
			f = file{display: opt.Path}
			line, col = 1, 1
		}
		ws.load(f, opt)
		msg := ws.displayPaths(m[5], opt)
		if strings.HasSuffix(msg, "file not found") && len(ws.unreadable) > 0 {
			msg += fmt.Sprintf(" (left out of the search: %s, which the user nobody, as whom the preprocessor runs, cannot read)", strings.Join(ws.unreadable, ", "))
		}
		errs = append(errs, opt.Sources.Errorf(syntax.Pos{File: f.display, Line: line, Col: col}, "%s", msg))
	}
	return errs
}

// displayPaths replaces sandbox paths in a message by the names the user
// knows.
func (ws *workspace) displayPaths(msg string, opt Options) string {
	msg = strings.ReplaceAll(msg, mainFile, opt.Path)
	for i, d := range ws.dirs {
		msg = strings.ReplaceAll(msg, incDir+"/"+strconv.Itoa(i), d)
	}
	return strings.ReplaceAll(msg, sysDir+"/", "")
}

// file is a file named by a line marker.
type file struct {
	display string // as diagnostics name it
	sys     string // built-in: its name in Options.System
	dir     int    // include directory (-1: none)
	rel     string // path inside it
	virtual bool   // <built-in>, <command line>
}

// file maps a path of the sandbox to the file the user knows; false for a
// path outside the files the program may read.
func (ws *workspace) file(p string, opt Options) (file, bool) {
	switch {
	case p == mainFile:
		return file{display: opt.Path, dir: -1}, true
	case p == "<built-in>" || p == "<command line>":
		return file{display: p, dir: -1, virtual: true}, true
	case strings.HasPrefix(p, sysDir+"/"):
		rel := path.Clean(strings.TrimPrefix(p, sysDir+"/"))
		if !fs.ValidPath(rel) {
			return file{}, false
		}
		return file{display: "<" + rel + ">", sys: rel, dir: -1}, true
	case strings.HasPrefix(p, incDir+"/"):
		n, rel, _ := strings.Cut(strings.TrimPrefix(p, incDir+"/"), "/")
		i, err := strconv.Atoi(n)
		rel = path.Clean(rel)
		if err != nil || i < 0 || i >= len(ws.dirs) || ws.dirs[i] == "" || !filepath.IsLocal(rel) {
			return file{}, false
		}
		return file{display: filepath.Join(opt.IncludeDirs[i], rel), dir: i, rel: rel}, true
	}
	return file{}, false
}

// load records the text of an included file in Sources (to quote its lines
// and align columns). Files of include directories are read only when
// they resolve inside their directory.
func (ws *workspace) load(f file, opt Options) {
	if f.virtual || f.display == opt.Path || opt.Sources.Has(f.display) {
		return
	}
	var b []byte
	switch {
	case f.sys != "":
		b, _ = fs.ReadFile(opt.System, f.sys)
	case f.dir >= 0:
		full, err := filepath.EvalSymlinks(filepath.Join(ws.dirs[f.dir], f.rel))
		if err != nil {
			break
		}
		if rel, err := filepath.Rel(ws.dirs[f.dir], full); err != nil || !filepath.IsLocal(rel) {
			break
		}
		fh, err := os.Open(full)
		if err != nil {
			break
		}
		b, _ = io.ReadAll(io.LimitReader(fh, maxIncluded))
		fh.Close()
	}
	opt.Sources.Add(f.display, string(normalizeNewlines(b)))
}

// normalizeNewlines turns CRLF and lone CR into LF.
func normalizeNewlines(b []byte) []byte {
	if !bytes.ContainsRune(b, '\r') {
		return b
	}
	b = bytes.ReplaceAll(b, []byte("\r\n"), []byte("\n"))
	return bytes.ReplaceAll(b, []byte("\r"), []byte("\n"))
}

var markerRE = regexp.MustCompile(`^# (\d+) "((?:[^"\\]|\\.)*)"`)

// translate turns the preprocessor's output into text and origins: line
// markers are checked and consumed, every output line gets the file and
// line it came from, and its tokens are moved to the columns they have in
// that line (the preprocessor squeezes spaces), so that the lexer's
// positions are the source's.
func (ws *workspace) translate(out []byte, opt Options) (*syntax.Preprocessed, error) {
	var text strings.Builder
	var lines []syntax.Pos
	cur := syntax.Pos{File: opt.Path, Line: 1, Col: 1}
	blanked := map[string][]string{}
	for _, l := range strings.Split(string(out), "\n") {
		if m := markerRE.FindStringSubmatch(l); m != nil {
			n, _ := strconv.Atoi(m[1])
			name, err := strconv.Unquote(`"` + m[2] + `"`)
			if err != nil {
				name = m[2]
			}
			f, ok := ws.file(name, opt)
			if !ok {
				return nil, syntax.ErrorList{opt.Sources.Errorf(cur, "a line marker names %q, which is not one of the files this program may read (#line with a file name is not supported)", name)}.Err()
			}
			ws.load(f, opt)
			cur = syntax.Pos{File: f.display, Line: n, Col: 1}
			continue
		}
		if strings.HasPrefix(strings.TrimSpace(l), "#") {
			l = "" // #pragma and the like, which P4 has no use for
		}
		src, ok := blanked[cur.File]
		if !ok {
			src = strings.Split(blankComments(opt.Sources.Text(cur.File)), "\n")
			blanked[cur.File] = src
		}
		if cur.Line >= 1 && cur.Line <= len(src) {
			l = align(l, src[cur.Line-1])
		}
		text.WriteString(l)
		text.WriteByte('\n')
		lines = append(lines, cur)
		cur.Line++
	}
	return &syntax.Preprocessed{Text: text.String(), Lines: lines}, nil
}
