package cpp

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/edgenf/edgenf/internal/p4/syntax"
)

var sysFS = fstest.MapFS{
	"core.p4": {Data: []byte("#ifndef CORE\n#define CORE\nerror { NoError }\nextern packet_in { void extract<T>(out T hdr); }\n#endif\n")},
}

func run(t *testing.T, src string, opt Options) (*syntax.Preprocessed, error) {
	t.Helper()
	if opt.Path == "" {
		opt.Path = "t.p4"
	}
	opt.Source = []byte(src)
	if opt.System == nil {
		opt.System = sysFS
	}
	return Run(context.Background(), opt)
}

// lineOf finds the output line holding s and its origin.
func lineOf(t *testing.T, pp *syntax.Preprocessed, s string) (string, syntax.Pos) {
	t.Helper()
	for i, l := range strings.Split(pp.Text, "\n") {
		if strings.Contains(l, s) {
			return l, pp.Lines[i]
		}
	}
	t.Fatalf("no line with %q in:\n%s", s, pp.Text)
	return "", syntax.Pos{}
}

// TestThePreprocessorIsCs: the real C preprocessor's language — includes
// with guards, object and function-like macros, invocations spanning lines,
// ## pasting, #if expressions, -D — with every line mapped to its file and
// line and every token to its column.
func TestThePreprocessorIsCs(t *testing.T) {
	src := `#include <core.p4>
#include <core.p4>
#define W 16
#define MAX(a, b) ((a) > (b) ? (a) : (b))
#define CAT(a, b) a##b
#if defined(FOO) && FOO > 2
const bit<W> x = 1;
#elif !defined(BAR)
const bit<W>   y  =  MAX(3,
                         4); /* comment
   spanning lines */
#else
#error "no"
#endif
const bit<8>  CAT(z, 1)   = 0x1_0;  // comment
    table  t { key = { h.a : exact; } }
`
	pp, err := run(t, src, Options{Defines: map[string]string{"FOO": "1"}})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(pp.Text, "const bit<16> x") || strings.Contains(pp.Text, "#error") {
		t.Errorf("wrong branch taken:\n%s", pp.Text)
	}
	if strings.Count(pp.Text, "extern packet_in") != 1 {
		t.Errorf("include guard failed:\n%s", pp.Text)
	}
	if l, p := lineOf(t, pp, "extern packet_in"); p.File != "<core.p4>" || p.Line != 4 || strings.Index(l, "extern")+1 != 1 {
		t.Errorf("core.p4's extern maps to %v", p)
	}
	l, p := lineOf(t, pp, "((3) > (4) ? (3) : (4))")
	if p.File != "t.p4" || p.Line != 9 {
		t.Errorf("y maps to %v", p)
	}
	// columns are the source's: "y" at 16, "=" at 19; the expansion at
	// the macro's name (22)
	if strings.Index(l, "y")+1 != 16 || strings.Index(l, "=")+1 != 19 || strings.Index(l, "((")+1 != 22 {
		t.Errorf("columns of %q, want y at 16, = at 19, (( at 22", l)
	}
	l, p = lineOf(t, pp, "z1")
	if p.Line != 15 || strings.Index(l, "z1")+1 != 15 || strings.Index(l, "0x1_0")+1 != 29 {
		t.Errorf("z1 at %v col %d, 0x1_0 col %d", p, strings.Index(l, "z1")+1, strings.Index(l, "0x1_0")+1)
	}
	if l, p = lineOf(t, pp, "table"); p.Line != 16 || strings.Index(l, "table")+1 != 5 || strings.Index(l, "t {")+1 != 12 {
		t.Errorf("%q at %v", l, p)
	}
	// the lexer sees the same positions
	srcs := syntax.NewSources()
	toks, errs := syntax.Lex(pp, srcs)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	for _, tk := range toks {
		if tk.Text == "exact" && (tk.Pos.Line != 16 || tk.Pos.Col != 30) {
			t.Errorf("exact at %v, want t.p4:16:30", tk.Pos)
		}
	}
}

// TestDiagnosticsArePositioned: the preprocessor's errors come at
// file:line:col of the file they are in, quoting that line and nothing of
// the preprocessor's own output.
func TestDiagnosticsArePositioned(t *testing.T) {
	inc := openDir(t)
	must(t, os.WriteFile(filepath.Join(inc, "lib.p4"), []byte("const bit<8> a = 1;\n#error \"lib says no\"\n"), 0o644))
	cases := []struct {
		src, want, pos string
	}{
		{"#if 1\nconst bit<8> a = 1;\n", "unterminated conditional directive", "t.p4:1:2"},
		{"\n#include <nope.p4>\n", "'nope.p4' file not found", "t.p4:2:10"},
		{"#define F(a, b) a\nconst bit<8> x = F(1);\n", "too few arguments", "t.p4:2:21"},
		{"  #error \"stop here\"\n", `"stop here"`, "t.p4:1:4"},
		{"#include \"lib.p4\"\n", `"lib says no"`, filepath.Join(inc, "lib.p4") + ":2:2"},
	}
	for _, c := range cases {
		_, err := run(t, c.src, Options{IncludeDirs: []string{inc}})
		var el syntax.ErrorList
		if !errors.As(err, &el) || len(el) == 0 {
			t.Errorf("%q: %v, want an ErrorList", c.src, err)
			continue
		}
		if !strings.Contains(el[0].Msg, c.want) || el[0].Pos.String() != c.pos {
			t.Errorf("%q: %v at %v, want %q at %s", c.src, el[0].Msg, el[0].Pos, c.want, c.pos)
		}
		if el[0].Line == "" || strings.Contains(err.Error(), "/w/") {
			t.Errorf("%q: %v: want the source line quoted and no sandbox path", c.src, err)
		}
	}
}

// TestHostileIncludesAreRefused: the preprocessor reads nothing but the
// built-in files and the configured include directories; nothing of any
// other file reaches a message, and endless input fails fast with a clear
// error.
func TestHostileIncludesAreRefused(t *testing.T) {
	secret := openDir(t)
	must(t, os.WriteFile(filepath.Join(secret, "secret.p4"), []byte("TOP_SECRET_CONTENT\n"), 0o644))
	inc := openDir(t)
	must(t, os.WriteFile(filepath.Join(inc, "ok.p4"), []byte("const bit<8> ok = 1;\n"), 0o644))
	// a symlink inside an include directory to a file outside it
	must(t, os.Symlink(filepath.Join(secret, "secret.p4"), filepath.Join(inc, "link.p4")))
	cases := []struct{ name, src, want string }{
		{"absolute", `#include "/etc/shadow"`, "absolute paths are refused"},
		{"absolute <>", `#include </etc/passwd>`, "absolute paths are refused"},
		{"dev zero", `#include "/dev/zero"`, "absolute paths are refused"},
		{"dot dot", `#include "../../../../etc/shadow"`, `".." is refused`},
		{"dot dot inside", `#include <sub/../../x.p4>`, `".." is refused`},
		{"include_next", `#include_next <core.p4>`, "#include_next is not supported"},
		{"import", `#import "ok.p4"`, "#import is not supported"},
		{"computed", "#define F \"/etc/shadow\"\n#include F\n", "file not found"},
		{"computed dev", "#define Z </dev/zero>\n#include Z\n", "file not found"},
		{"computed secret", "#define S \"" + filepath.Join(secret, "secret.p4") + "\"\n#include S\n", "file not found"},
		{"through a symlink", `#include "link.p4"`, "file not found"},
		{"line marker", "#line 7 \"/etc/shadow\"\nconst bit<8> x = 1;\n", "not one of the files this program may read"},
		{"has_include", "#if __has_include(\"/etc/passwd\")\n#error \"found\"\n#endif\n", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			pp, err := run(t, c.src, Options{IncludeDirs: []string{inc}})
			if c.want == "" {
				if err != nil {
					t.Fatalf("%v", err)
				}
				return
			}
			var el syntax.ErrorList
			if !errors.As(err, &el) {
				t.Fatalf("got %v (text %v), want an ErrorList", err, pp)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("got %v, want %q", err, c.want)
			}
			for _, bad := range []string{"TOP_SECRET", "root:", "/w/"} {
				if strings.Contains(err.Error(), bad) {
					t.Errorf("the error shows %q: %v", bad, err)
				}
			}
		})
	}
	pp, err := run(t, `#include "ok.p4"`, Options{IncludeDirs: []string{inc}})
	if err != nil {
		t.Fatal(err)
	}
	if _, p := lineOf(t, pp, "const bit<8> ok"); p.File != filepath.Join(inc, "ok.p4") || p.Line != 1 {
		t.Errorf("ok.p4 maps to %v", p)
	}
}

// TestEndlessInputFailsFast: output and run time are bounded.
func TestEndlessInputFailsFast(t *testing.T) {
	var bomb strings.Builder
	bomb.WriteString("#define A0 x x x x x x x x\n")
	for i := 1; i <= 9; i++ {
		bomb.WriteString("#define A" + string(rune('0'+i)) + strings.Repeat(" A"+string(rune('0'+i-1)), 8) + "\n")
	}
	bomb.WriteString("A9 A9 A9\n")
	_, err := run(t, bomb.String(), Options{MaxOutput: 1 << 20})
	if err == nil || !strings.Contains(err.Error(), "larger than 1 MiB") {
		t.Errorf("a macro bomb: %v", err)
	}
	// a guardless file including itself, forever
	inc := openDir(t)
	must(t, os.WriteFile(filepath.Join(inc, "self.p4"), []byte("x\n#include \"self.p4\"\n"), 0o644))
	_, err = run(t, `#include "self.p4"`, Options{IncludeDirs: []string{inc}})
	if err == nil || !strings.Contains(err.Error(), "nested too deeply") {
		t.Errorf("endless self-inclusion: %v", err)
	}
	// slow: the time bound
	_, err = run(t, bomb.String(), Options{Timeout: time.Millisecond})
	if err == nil || !strings.Contains(err.Error(), "stopped") {
		t.Errorf("a time bound of 1 ms: %v", err)
	}
}

// TestDefinesAreChecked: -D names must be identifiers and values one line.
func TestDefinesAreChecked(t *testing.T) {
	for _, d := range []map[string]string{{"1X": ""}, {"X Y": "1"}, {"X": "1\n#include \"/etc/shadow\""}, {"X": "a\rb"}} {
		if _, err := run(t, "X\n", Options{Defines: d}); err == nil {
			t.Errorf("-D %q accepted", d)
		}
	}
	pp, err := run(t, "const bit<8> v = V;\n", Options{Defines: map[string]string{"V": "0x2a"}})
	if err != nil || !strings.Contains(pp.Text, "const bit<8> v = 0x2a;") {
		t.Errorf("-D V=0x2a: %v\n%v", err, pp)
	}
}

// openDir is a temporary directory the user nobody (the preprocessor) can
// read, removed when the test ends.
func openDir(t *testing.T) string {
	t.Helper()
	d, err := os.MkdirTemp("", "edgenf-cpp-test-")
	must(t, err)
	must(t, os.Chmod(d, 0o755))
	t.Cleanup(func() { os.RemoveAll(d) })
	return d
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
