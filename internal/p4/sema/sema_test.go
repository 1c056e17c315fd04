package sema

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/edgenf/edgenf/internal/p4/cpp"
	"github.com/edgenf/edgenf/internal/p4/include"
	"github.com/edgenf/edgenf/internal/p4/syntax"
)

// checkSrc checks src (nil: the file name) as the compiler does.
func checkSrc(t *testing.T, name string, src []byte) (*Info, error) {
	t.Helper()
	if src == nil {
		var err error
		if src, err = os.ReadFile(name); err != nil {
			t.Fatal(err)
		}
	}
	srcs := syntax.NewSources()
	pp, err := cpp.Run(context.Background(), cpp.Options{Path: name, Source: src, System: include.FS, Sources: srcs})
	if err != nil {
		return nil, err
	}
	prog, err := syntax.ParsePreprocessed(pp, srcs)
	if err != nil {
		return nil, err
	}
	return Check(prog, srcs, Options{})
}

func TestExamplesCheck(t *testing.T) {
	files, _ := filepath.Glob("../../../examples/p4/*.p4")
	if len(files) < 5 {
		t.Fatalf("examples missing: %v", files)
	}
	for _, f := range files {
		info, err := checkSrc(t, f, nil)
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		if info.Main == nil || len(info.Main.Blocks) != 6 {
			t.Errorf("%s: main not resolved", f)
		}
	}
}

const prelude = "#include <core.p4>\n#include <v1model.p4>\nheader h_t { bit<8> a; bit<8> b; }\nstruct H { h_t h; }\nstruct M { bit<8> x; }\n"
const tail = "\ncontrol E(inout H h, inout M m, inout standard_metadata_t s) { apply {} }\ncontrol C(inout H h, inout M m) { apply {} }\ncontrol D(packet_out p, in H h) { apply { p.emit(h); } }\nparser P(packet_in p, out H h, inout M m, inout standard_metadata_t s) { state start { p.extract(h.h); transition accept; } }\nV1Switch(P(), C(), I(), E(), C(), D()) main;\n"

func TestCheckErrors(t *testing.T) {
	cases := []struct{ body, want string }{
		{"apply { m.x = 16w1; }", "cannot use a value of type bit<16> where bit<8> is expected"},
		{"apply { m.y = 1; }", "struct M has no field \"y\""},
		{"apply { h.h.bb = 1; }", "header h_t has no field \"bb\" (did you mean b?)"},
		{"action drop_it() {} table t { key = { m.x : exact; } actions = { drop_itt; } } apply { }", "unknown action \"drop_itt\" (did you mean drop_it?)"},
		{"apply { foo(); }", "unknown function or action \"foo\""},
		{"apply { m.x = h.h.a + 8w300; }", "value 300 does not fit in bit<8>"},
		{"table t { key = { m.x : fuzzy; } actions = { NoAction; } } apply { t.apply(); }", "unknown match kind"},
		{"action_profile(4) ap; apply { }", ""},
		{"counter(4, CounterType.packets) c; Sub(c) sc; apply { sc.apply(); }", ""},
		{"counter(4, CounterType.packets) c; Sub(c) sc; Sub(c) sc2; apply { sc.apply(); sc2.apply(); }", ""},
		{"counter(4, CounterType.packets) c; counter(4, CounterType.packets) d; Sub(c) sc; Sub(d) sc2; apply { sc.apply(); sc2.apply(); }", "with different extern instances as constructor arguments"},
		{"register<bit<8>>(4) r; Sub(r) sc; apply { sc.apply(); }", "constructor argument ctr of Sub must name a counter instance"},
		{"action_profile(4) ap; table t { key = { m.x : exact; h.h.a : selector; } actions = { NoAction; } implementation = ap; } apply { }", "selector key h.h.a: the table's implementation must be an action_selector"},
		{"table t { key = { m.x : exact; } actions = { NoAction; } implementation = action_selector(HashAlgorithm.crc16, 32w4, 32w8); } apply { }", "has no selector key"},
		{"table t { key = { m.x : exact; } actions = { NoAction; } implementation = m; } apply { }", "implementation must be an action_profile or action_selector"},
		{"table t { key = { m.x : exact; } actions = { NoAction; } implementation = action_profile(32w4); const entries = { 1 : NoAction(); } } apply { }", "unsupported: entries in a table implemented by an action profile"},
		{"counter(4, CounterType.packets) c; table t { actions = { NoAction; } meters = c; } apply { }", "meters must name a direct_meter instance"},
		{"meter(4, MeterType.bytes) mt; apply { bit<2> c; mt.execute_meter(1, c); }", ""},
		{"register<bit<8>>(4) r; apply { r.write(0, m.x); r.read(m.x, 1); }", ""},
		{"register<bit<8>>(4) r; apply { r.write(0, 16w1); }", "cannot use a value of type bit<16> where bit<8> is expected"},
		{"apply { if (m.x) { } }", "want bool"},
		{"action a(bit<8> v) { v = 1; } apply { }", "read-only"},
		{"apply { clone(CloneType.I2E, 1); }", ""},
		{"apply { clone(CloneType.I2E); }", "argument"},
		{"apply { m.x = h.h.a ++ h.h.b; }", "cannot use a value of type bit<16> where bit<8> is expected"},
		{"apply { h.h.a[9:0] = 1; }", "out of range"},
		{"table t { key = { m.x : exact; } actions = { nope; } } apply { }", "unknown action \"nope\""},
		{"action a() {} table t { key = { m.x : exact; } actions = { NoAction; } default_action = a(); } apply { }", "not in the table's actions list"},
		{"apply { exit; return; if (h.h.isValid()) { h.h.setInvalid(); } }", ""},
		{"apply { m.x = (bit<8>)true; }", ""},
		{"const bool ok = static_assert(8 > 2); apply { }", ""},
		{"const bool ok = static_assert(8w1 == 2, \"one is not two\"); apply { }", "static assertion failed: one is not two"},
		{"apply { bool b = m.x; }", "cannot use a value of type bit<8> where bool is expected"},
		{"action a() { t.apply(); } table t { actions = { a; } } apply { }", "unknown"},
	}
	for _, c := range cases {
		src := prelude + "control Sub()(counter ctr) { apply { ctr.count(1); } }\n" + "control I(inout H h, inout M m, inout standard_metadata_t s) {" + c.body + "}" + tail
		_, err := checkSrc(t, "t.p4", []byte(src))
		if c.want == "" {
			if err != nil {
				t.Errorf("%q: %v", c.body, err)
			}
			continue
		}
		if err == nil {
			t.Errorf("%q: no error, want %q", c.body, c.want)
			continue
		}
		if !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: got %v, want %q", c.body, err, c.want)
		}
		if !strings.Contains(err.Error(), "t.p4:") || !strings.Contains(err.Error(), "^") {
			t.Errorf("%q: error without position/caret: %v", c.body, err)
		}
	}
}

func TestUnsupportedNamed(t *testing.T) {
	cases := []struct{ src, want string }{
		{"header s_t { bit<8> a; } struct X { s_t[2] st; }", ""},
		{"header s_t { bit<8> a; } header_union u_t { s_t a; } struct X { u_t[2] st; }", ""},
		{"struct X { bit<8>[2] st; }", "unsupported: stacks of bit<8> (only stacks of headers and header unions)"},
		{"header s_t { bit<8> a; } control C2(inout H h) { s_t[2] st; apply { st[0] = h.h; st.push_front(1); } }", "cannot use a value of type h_t where s_t is expected"},
		{"header s_t { bit<8> a; } control C2(inout H h) { s_t[2] st; s_t[2] st2; apply { st = st2; st[1].setValid(); } }", ""},
		{"control C2(inout H h) { bit<8>[2] st; apply { } }", "unsupported: stacks of bit<8>"},
		{"header s_t { bit<8> a; } struct X { s_t[2] st; } control C2(inout X x, in bit<32> i) { apply { x.st[i].a = 1; } }", ""},
		{"header s_t { bit<8> a; } struct X { s_t[2] st; } control C2(inout X x, in bool i) { apply { x.st[i].a = 1; } }", "a header stack index must be bit<N> or int<N>, got bool"},
		{"header s_t { bit<8> a; } struct X { s_t[2] st; } control C2(inout X x) { apply { x.st[2].a = 1; } }", "index 2 is out of range"},
		{"header s_t { bit<8> a; } struct X { s_t[2] st; } control C2(inout X x) { apply { x.st.next.a = 1; } }", "can only be used in a parser"},
		{"header s_t { bit<8> a; } struct X { s_t[2] st; } control C2(inout X x) { apply { x.st.push_front(x.st[0].a); } }", "must be a non-negative compile-time constant"},
		{"header s_t { bit<8> a; } struct X { s_t[2] st; } control C2(inout X x) { apply { x.st.pop_front(1); x.st.push_front(2); x.st[1].setValid(); } }", ""},
		{"parser P3(packet_in p, out H h) { state start { bit<8> v = p.lookahead<bit<8>>(); p.advance((bit<32>)v); transition accept; } }", ""},
		{"control C3(inout H h) { apply { } } parser P3(packet_in p, out H h) { state start { p.advance(8); transition accept; } }", ""},
		{"header v_t { varbit<32> o; bit<8> z; }", "unsupported: fields after a varbit field"},
		{"bit<8> f(in bit<8> x) { if (x == 1) { return x; } }", "does not return a value on every path"},
		{"bit<8> f(inout bit<8> x) { x = x + 1; return x; }", ""},
		{"bit<8> f(in bit<8> x) { return; }", "must return a bit<8>"},
		{"control S(inout H h) { apply {} } control I2(inout H h) { S() a; S() b; apply { a.apply(h); } }", ""},
		{"control S(inout H h) { counter(1, CounterType.packets) n; apply { n.count(0); } } control I2(inout H h) { S() a; S() b; apply { a.apply(h); } }", "unsupported: instantiating control S more than once: it declares counter n, which each instance would need its own of"},
		{"control S(inout H h)(bit<8> k) { apply { h.h.a = k; } } control I2(inout H h) { S(1) a; S(2) b; apply { a.apply(h); } }", "unsupported: instances of control S with different constructor arguments"},
		{"parser SP(packet_in p, out H h) { state start { transition accept; } } parser P3(packet_in p, out H h) { SP() sp; state start { transition accept; } }", ""},
		{"control S(inout H h) { apply {} } parser P3(packet_in p, out H h) { S() sp; state start { transition accept; } }", "S is not a parser; a parser can instantiate parsers only"},
		{"control S(inout H h) { apply {} } control I2(inout H h, inout M m) { S() a; apply { a.apply(m); } }", "cannot use a value of type M where H is expected"},
		{"parser P2(packet_in p, out H h) { state start { p.advance(4); transition accept; } }", "unsupported: advance by a number of bits that is not a multiple of 8"},
		{"parser P2(packet_in p, out H h) { state start { bit<128> x = p.lookahead<bit<128>>(); transition accept; } }", "unsupported: lookahead of bit<128>"},
		{"control C2(inout H h) { apply { bit<8> x = 0; } } parser P2(packet_in p, out H h) { state start { transition accept; } } control C4(inout H h) { apply { } }", ""},
		{"header v_t { varbit<12> o; }", "unsupported: varbit<N> with N not a multiple of 8"},
	}
	for _, c := range cases {
		src := prelude + c.src + "\ncontrol I(inout H h, inout M m, inout standard_metadata_t s) { apply {} }" + tail
		_, err := checkSrc(t, "t.p4", []byte(src))
		if c.want == "" {
			if err != nil {
				t.Errorf("%q: %v", c.src, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "t.p4:") {
			t.Errorf("%q: got %v, want %q", c.src, err, c.want)
		}
	}
}

// An untyped literal that does not fit the bit<N> it converts to is
// truncated with a warning, as p4c does (gauntlet_various_ops: 4 / 1w1).
func TestLiteralTruncationWarns(t *testing.T) {
	src := prelude + "control I(inout H h, inout M m, inout standard_metadata_t s) { apply { m.x = h.h.a + 300; } }" + tail
	info, err := checkSrc(t, "t.p4", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if len(info.Warnings) != 1 || !strings.Contains(info.Warnings[0].Error(), "t.p4:6:") ||
		!strings.Contains(info.Warnings[0].Error(), "warning: value 300 does not fit in bit<8>: truncated to 44") {
		t.Fatalf("warnings %v", info.Warnings)
	}
}

// >> of a constant int<N> is arithmetic: -4s7 >> 1 >> 1 is -2 (4s14).
func TestSignedConstantShift(t *testing.T) {
	src := prelude + "control I(inout H h, inout M m, inout standard_metadata_t s) { apply { int<4> d = -4s7 >> 1 >> 1; m.x = (bit<8>)(bit<4>)d; } }" + tail
	info, err := checkSrc(t, "t.p4", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for e, v := range info.Consts {
		if b, ok := e.(*syntax.Binary); ok && b.Op == ">>" {
			got = append(got, v.String())
		}
	}
	sort.Strings(got)
	if strings.Join(got, ",") != "12,14" { // -7 >> 1 = -4 (12), >> 1 = -2 (14)
		t.Fatalf("folded shifts %v, want 12,14", got)
	}
}
