package syntax

import (
	"errors"
	"strings"
	"testing"
)

// core stands for core.p4 in these tests (the preprocessor is package
// cpp's; the parser reads its output).
const core = "error { NoError }\nextern packet_in { void extract<T>(out T hdr); }\n"

func parse(t *testing.T, src string) (*Program, error) {
	t.Helper()
	srcs := NewSources()
	return ParsePreprocessed(Plain("t.p4", []byte(src), srcs), srcs)
}

func TestLexer(t *testing.T) {
	srcs := NewSources()
	toks, errs := Lex(Plain("t.p4", []byte("8w10 16s0x_ff 0b101 32w0xFFFFFFFF &&& |+| |-| ++ .. x_1 \"s\""), srcs), srcs)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	want := []string{"8w10", "16s0x_ff", "0b101", "32w0xFFFFFFFF", "&&&", "|+|", "|-|", "++", "..", "x_1", "s", ""}
	if len(toks) != len(want) {
		t.Fatalf("got %d tokens", len(toks))
	}
	for i, w := range want {
		if toks[i].Text != w {
			t.Errorf("token %d: %q, want %q", i, toks[i].Text, w)
		}
	}
	if toks[0].Width != 8 || toks[0].Val.Int64() != 10 || !toks[1].Signed || toks[1].Val.Int64() != 255 || toks[2].Val.Int64() != 5 {
		t.Errorf("bad literal values")
	}
	if toks[4].Pos.Col != 35 {
		t.Errorf("col of &&& = %d", toks[4].Pos.Col)
	}
}

func TestParseConstructs(t *testing.T) {
	src := core + `typedef bit<48> mac_t;
type bit<32> ip_t;
header h_t { mac_t a; bit<16> b; }
header_union u_t { h_t x; }
struct s_t { h_t h; h_t[2] stack; tuple<bit<8>, bool> t; }
enum bit<8> E { A = 1, B = 2 }
enum F { X, Y }
error { Oops }
match_kind { fancy }
const bit<32> K = (bit<32>)E.A << 2 ++ 4w0;
extern Ctr<T> { Ctr(bit<32> n); void count(in T i); abstract void cb(); }
extern void f<T>(in T x, @optional in bit<8> y);
parser P(packet_in p, out s_t s) {
    value_set<bit<16>>(4) pvs;
    state start {
        p.extract(s.h);
        transition select(s.h.b, s.h.a[7:0]) {
            (0x800 &&& 0xff00, 1 .. 5): next;
            (pvs, _): accept;
            default: reject;
        }
    }
    state next { verify(s.h.b != 0, error.Oops); transition accept; }
}
control C(inout s_t s) {
    action a(bit<16> v) { s.h.b = v |+| 1; s.h.a[15:8] = 8w3; exit; }
    @name("tbl") table t {
        key = { s.h.b : exact @name("b"); s.h.a : ternary; }
        actions = { a; @defaultonly NoAction; }
        const entries = {
            priority=10: (0x1, _) : a(1);
            (0x2, 0x3 &&& 0xf) : a(2);
        }
        size = 16;
        default_action = NoAction();
    }
    apply {
        bit<8> x = s.h.b == 1 ? 8w1 : 8w2;
        if (t.apply().hit) { return; } else if (!s.h.isValid()) { s.h.setValid(); }
        switch (t.apply().action_run) {
            a: { x = x - 1; }
            NoAction:
            default: {}
        }
        s.h.b = s.h.b >> 2;
        s.h.b = (bit<16>)x ++ 8w0 & 0xff00;
        f(x);
        .NoAction();
    }
}
`
	prog, err := parse(t, src)
	if err != nil {
		t.Fatal(err)
	}
	if len(prog.Decls) < 14 {
		t.Errorf("got %d declarations", len(prog.Decls))
	}
}

func TestParseErrors(t *testing.T) {
	cases := []struct{ src, want, pos string }{
		{"header h { bit<8> a }", `expected ";"`, "t.p4:1:21"},
		{"control C() { apply { x = ; } }", "expected an expression", "t.p4:1:27"},
		{"foo bar;", `unknown type "foo"`, "t.p4:1:1"},
		{"const bit<8> x = 8w0x;", "bad integer literal", "t.p4:1:18"},
		{"parser P() { state start { transition } }", "expected a name", "t.p4:1:39"},
		{"control C() { }", "has no apply block", "t.p4:1:15"},
		{"\"abc", "unterminated string", "t.p4:1:1"},
		{"$", "unexpected character", "t.p4:1:1"},
	}
	for _, c := range cases {
		_, err := parse(t, c.src)
		if err == nil {
			t.Errorf("%q: no error", c.src)
			continue
		}
		var el ErrorList
		if !errors.As(err, &el) || len(el) == 0 {
			t.Errorf("%q: not an ErrorList: %v", c.src, err)
			continue
		}
		if !strings.Contains(err.Error(), c.want) || el[0].Pos.String() != c.pos {
			t.Errorf("%q: got %v (at %v), want %q at %s", c.src, err, el[0].Pos, c.want, c.pos)
		}
		if !strings.Contains(err.Error(), "^") {
			t.Errorf("%q: no caret in %v", c.src, err)
		}
	}
}
