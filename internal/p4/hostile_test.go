package p4

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/edgenf/edgenf/internal/p4/syntax"
)

// hostileProgram puts name (any bytes) where a P4 program may put text of
// its own: @name annotations of a table, an action, a counter and a
// control, and a log_msg string.
func hostileProgram(name string) []byte {
	lit := `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(name) + `"`
	return []byte(strings.ReplaceAll(`#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> a; }
struct H { h_t h; }
struct M { bit<8> x; }
parser P(packet_in p, out H h, inout M m, inout standard_metadata_t s) {
    state start { p.extract(h.h); transition accept; }
}
control V(inout H h, inout M m) { apply {} }
@name(NAME) control I(inout H h, inout M m, inout standard_metadata_t s) {
    @name(NAME) counter(4, CounterType.packets) c;
    @name(NAME) action fwd(bit<9> port) { s.egress_spec = port; c.count(0); }
    @name(NAME) table t { key = { h.h.a : exact; } actions = { fwd; NoAction; } default_action = NoAction(); }
    apply { t.apply(); assert(h.h.a != 0); log_msg(NAME); }
}
control E(inout H h, inout M m, inout standard_metadata_t s) { apply {} }
control C(inout H h, inout M m) { apply {} }
control D(packet_out p, in H h) { apply { p.emit(h.h); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
`, "NAME", lit))
}

// cToken is one token of C source as clang's lexer splits it.
type cToken struct {
	kind byte // 'i' identifier or keyword, 'n' number, 's' string or char literal, 'p' punctuation
	text string
}

// cTokens splits C source into tokens, dropping comments and white space:
// what clang's preprocessor and parser see.
func cTokens(src string) ([]cToken, error) {
	src = strings.ReplaceAll(src, "\\\n", "") // line splices
	var out []cToken
	for i := 0; i < len(src); {
		c := src[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v':
			i++
		case strings.HasPrefix(src[i:], "//"):
			for i < len(src) && src[i] != '\n' {
				i++
			}
		case strings.HasPrefix(src[i:], "/*"):
			end := strings.Index(src[i+2:], "*/")
			if end < 0 {
				return nil, fmt.Errorf("unterminated comment at byte %d", i)
			}
			i += end + 4
		case c == '"' || c == '\'':
			j := i + 1
			for j < len(src) && src[j] != c {
				if src[j] == '\n' {
					return nil, fmt.Errorf("newline in a literal at byte %d", i)
				}
				if src[j] == '\\' {
					j++
				}
				j++
			}
			if j >= len(src) {
				return nil, fmt.Errorf("unterminated literal at byte %d", i)
			}
			out = append(out, cToken{'s', src[i : j+1]})
			i = j + 1
		case c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
			j := i
			for j < len(src) && (src[j] == '_' || src[j] >= 'a' && src[j] <= 'z' || src[j] >= 'A' && src[j] <= 'Z' || src[j] >= '0' && src[j] <= '9') {
				j++
			}
			out = append(out, cToken{'i', src[i:j]})
			i = j
		case c >= '0' && c <= '9':
			j := i
			for j < len(src) && (src[j] == '_' || src[j] == '.' || src[j] >= 'a' && src[j] <= 'z' || src[j] >= 'A' && src[j] <= 'Z' || src[j] >= '0' && src[j] <= '9') {
				j++
			}
			out = append(out, cToken{'n', src[i:j]})
			i = j
		default:
			out = append(out, cToken{'p', src[i : i+1]})
			i++
		}
	}
	return out, nil
}

// checkConfined compiles the hostile program (to C) and compares its tokens
// with the same program's under a plain name: user text may change the
// spelling of identifiers (sanitised names) and of literals (escaped), and
// nothing else: no token added, removed or turned into code.
func checkConfined(t *testing.T, name string) {
	t.Helper()
	res, err := Compile(context.Background(), Options{Path: name + ".p4", Source: hostileProgram(name), NoObject: true, Debug: true})
	if err != nil {
		var el syntax.ErrorList
		if !errors.As(err, &el) {
			t.Fatalf("%q: an error without a position: %v", name, err)
		}
		return // refused: nothing was generated
	}
	base, err := Compile(context.Background(), Options{Path: "plain.p4", Source: hostileProgram("plain"), NoObject: true, Debug: true})
	if err != nil {
		t.Fatal(err)
	}
	got, err := cTokens(res.C)
	if err != nil {
		t.Fatalf("%q: the generated C does not even tokenize: %v", name, err)
	}
	want, _ := cTokens(base.C)
	if len(got) != len(want) {
		t.Fatalf("%q: %d C tokens, %d with a plain name: user text became code", name, len(got), len(want))
	}
	for i := range got {
		g, w := got[i], want[i]
		// (numbers may differ: P4Info ids are hashes of names)
		if g.kind != w.kind || g.kind == 'p' && g.text != w.text {
			t.Fatalf("%q: C token %d is %c %q where a plain name gives %c %q", name, i, g.kind, g.text, w.kind, w.text)
		}
		if g.kind == 'i' && (g.text == "asm" || g.text == "__asm__" || g.text == "_Pragma" || g.text == "__attribute__") && g.text != w.text {
			t.Fatalf("%q: identifier %q where a plain name gives %q", name, g.text, w.text)
		}
	}
}

// TestHostileNamesStayInsideIdentifiersAndLiterals: @name strings and
// log_msg strings that try to close a comment, end a string, start a
// directive or carry raw control bytes reach the generated C only as
// (sanitised) identifiers and (escaped) literals; the program still
// compiles with clang.
func TestHostileNamesStayInsideIdentifiersAndLiterals(t *testing.T) {
	hostile := []string{
		"x */ int injected; /*",
		"x */\n#include \"/etc/shadow\"\n/*",
		"carriage\rreturn\r#include </etc/passwd>",
		`back\slash\`,
		`quote" ); asm("nop`,
		"%s%n%x printk",
		"??/ trigraph",
		"// line comment",
		"\x00\x01\x7f\xff",
		"",
	}
	for _, h := range hostile {
		checkConfined(t, h)
	}
	res, err := Compile(context.Background(), Options{Path: "x.p4", Source: hostileProgram(hostile[0] + hostile[3] + hostile[4] + hostile[5]), Debug: true})
	if err != nil {
		t.Fatalf("the hostile program does not compile: %v", err)
	}
	if len(res.Object) == 0 || len(res.ObjectTC) == 0 {
		t.Fatal("no object")
	}
}

// TestRawCarriageReturnEndsTheLine: the C preprocessor ends a line at a lone
// CR, so a raw CR in a string literal leaves it unterminated, reported at
// the line the CR ends (as with p4c, which runs the same preprocessor); a
// directive after the CR is a directive, refused if it names a file
// outside the include directories.
func TestRawCarriageReturnEndsTheLine(t *testing.T) {
	for _, c := range []struct{ src, want string }{
		{"@name(\"x\ry\") extern E { E(); }\n", "cr.p4:3:7: error: unterminated string"},
		{"@name(\"x\r#include </etc/shadow>\") extern E { E(); }\n", "cr.p4:4:1: error: #include </etc/shadow>: absolute paths are refused"},
	} {
		src := "#include <core.p4>\nconst bit<8> a = 1;\n" + c.src
		_, err := Compile(context.Background(), Options{Path: "cr.p4", Source: []byte(src), NoObject: true})
		var el syntax.ErrorList
		if !errors.As(err, &el) || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("got %v, want %s", err, c.want)
		}
	}
}

// FuzzGeneratedCConfinesUserText: for any text in names and strings.
func FuzzGeneratedCConfinesUserText(f *testing.F) {
	for _, s := range []string{"a */ b", "\r\n", `\"`, "%%", "/*", "#define"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		checkConfined(t, name)
	})
}
