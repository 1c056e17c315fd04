package p4

import (
	"context"
	"strings"
	"testing"
)

// langProgram wraps declarations, a parser state body and an ingress body
// into a v1model program.
func langProgram(decls, parse, ingress string) string {
	return `#include <core.p4>
#include <v1model.p4>
header eth_t { bit<48> d; bit<48> s; bit<16> t; }
header a_t { bit<8> x; }
header b_t { bit<16> y; }
` + decls + `
control V(inout H h, inout M m) { apply { } }
parser P(packet_in p, out H h, inout M m, inout standard_metadata_t sm) {
    state start { ` + parse + ` transition accept; }
}
control I(inout H h, inout M m, inout standard_metadata_t sm) {
    register<bit<32>>(16) r;
    register<bit<32>>(16) r2;
    table t { key = { h.eth.t : exact; } actions = { NoAction; } }
    apply { ` + ingress + ` }
}
control E(inout H h, inout M m, inout standard_metadata_t sm) { apply { } }
control C(inout H h, inout M m) { apply { } }
control D(packet_out p, in H h) { apply { p.emit(h); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
`
}

const langStructs = `header_union u_t { a_t a; b_t b; }
header v_t { bit<8> len; varbit<32> o; }
struct H { eth_t eth; u_t u; v_t v; }
struct M { bit<32> i; bit<32> x; }`

// TestLanguageErrors: what edgenf rejects around varbit, header unions,
// stacks and @atomic, at the right position.
func TestLanguageErrors(t *testing.T) {
	for _, c := range []struct{ decls, parse, ingress, want string }{
		{langStructs, "p.extract(h.v);", "", "test.p4:12:28: error: header v_t has a varbit field: extract it with two arguments"},
		{langStructs, "p.extract(h.eth, 32w8);", "", "two-argument extract needs a header with a varbit field"},
		{"header w_t { varbit<32> o; bit<8> z; }\nstruct H { eth_t eth; w_t w; }\nstruct M { bit<32> i; bit<32> x; }", "", "", "unsupported: fields after a varbit field"},
		{"header w_t { varbit<12> o; }\nstruct H { eth_t eth; w_t w; }\nstruct M { bit<32> i; bit<32> x; }", "", "", "unsupported: varbit<N> with N not a multiple of 8"},
		{"struct H { eth_t eth; bit<8>[2] us; }\nstruct M { bit<32> i; bit<32> x; }", "", "", "test.p4:6:23: error: unsupported: stacks of bit<8> (only stacks of headers and header unions)"},
		{"header_union u_t { a_t a; bit<8> b; }\nstruct H { eth_t eth; u_t u; }\nstruct M { bit<32> i; bit<32> x; }", "", "", "members must be headers"},
		{langStructs, "", "hash(m.x, HashAlgorithm.crc32, 32w0, {h.v.o}, 32w16);", "unsupported: hashing a varbit field"},
		{langStructs, "", "@atomic { r.read(m.x, m.i); t.apply(); r.write(m.i, m.x + 1); }", "test.p4:18:48: error: unsupported: @atomic block with a call of t.apply"},
		{langStructs, "", "@atomic { r.read(m.x, m.i); r.write(m.i + 1, m.x + 1); }", "unsupported: @atomic block with register accesses at different indices"},
		{langStructs, "", "@atomic { r.read(m.i, m.i); r.write(m.i, m.x + 1); }", "unsupported: @atomic block that assigns m.i"},
		{langStructs, "", "@atomic { r.read(m.x, m.i); exit; }", "unsupported: @atomic block with exit"},
		// calls in @atomic: the callee's body runs under the lock
		{langStructs + "\nvoid setI(inout bit<32> v) { v = 3; }", "", "@atomic { r.read(m.x, m.i); setI(m.i); r.write(m.i, m.x); }", "unsupported: @atomic block that assigns m.i"},
		{langStructs + "\naction quit() { exit; }", "", "@atomic { r.read(m.x, m.i); quit(); }", "unsupported: @atomic block with exit in quit, called from it"},
		// wide values: * / % |+| |-| and signed arithmetic are refused where written
		{"struct H { eth_t eth; }\nstruct M { bit<128> i; bit<128> x; int<128> s; }", "", "m.x = m.i * m.x;", "test.p4:16:23: error: unsupported: operator * on values wider than 64 bits"},
		{"struct H { eth_t eth; }\nstruct M { bit<128> i; bit<128> x; int<128> s; }", "", "m.x = m.i |+| m.x;", "unsupported: operator |+| on values wider than 64 bits"},
		{"struct H { eth_t eth; }\nstruct M { bit<128> i; bit<128> x; int<128> s; }", "", "m.s = m.s + 1;", "unsupported: operator + on int<N> wider than 64 bits"},
		{"struct H { eth_t eth; }\nstruct M { bit<128> i; bit<128> x; int<128> s; }", "", "m.i *= m.x;", "unsupported: operator * on values wider than 64 bits"},
		// structs inside headers hold fixed-width fields only
		{"struct in_t { bit<4> a; varbit<8> v; }\nheader w_t { bit<4> z; in_t s; }\nstruct H { eth_t eth; w_t w; }\nstruct M { bit<32> i; bit<32> x; }", "", "", "test.p4:7:24: error: header field s has type in_t, whose field s.v is a varbit<8>"},
		{"struct in_t { a_t a; }\nheader w_t { in_t s; }\nstruct H { eth_t eth; w_t w; }\nstruct M { bit<32> i; bit<32> x; }", "", "", "whose field s.a is a a_t"},
		{"header w_t { u_t s; }\nheader_union u_t { a_t a; b_t b; }\nstruct H { eth_t eth; w_t w; }\nstruct M { bit<32> i; bit<32> x; }", "", "", "error:"},
	} {
		_, err := Compile(context.Background(), Options{Path: "test.p4", Source: []byte(langProgram(c.decls, c.parse, c.ingress)), NoObject: true})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s / %s / %s:\ngot %v\nwant %q", c.decls, c.parse, c.ingress, err, c.want)
		}
	}
}

// TestAtomicCodegen: a register read-modify-write under @atomic takes the
// lock of its index around the block, after the lookups.
func TestAtomicCodegen(t *testing.T) {
	src := langProgram(langStructs, "", "@atomic { r.read(m.x, m.i); r2.read(m.x, m.i); if (m.x < 10) { r.write(m.i, m.x + 1); } }")
	res, err := Compile(context.Background(), Options{Path: "test.p4", Source: []byte(src), NoObject: true})
	if err != nil {
		t.Fatal(err)
	}
	c := res.C
	lock, unlock := strings.Index(c, "bpf_spin_lock(&lk->l)"), strings.Index(c, "bpf_spin_unlock(&lk->l)")
	look := strings.Index(c, "__u64 *ac1 = ")
	if lock < 0 || unlock < lock || look < 0 || look > lock || !strings.Contains(c, "#include <edgenf/p4/atomic.h>") {
		t.Errorf("no lock around the block:\n%s", c)
	}
	// without registers: no lock
	src = langProgram(langStructs, "", "@atomic { m.x = m.x + 1; }")
	res, err = Compile(context.Background(), Options{Path: "test.p4", Source: []byte(src), NoObject: true})
	if err != nil || strings.Contains(res.C, "bpf_spin_lock(&lk") {
		t.Errorf("%v", err)
	}
}

// TestSupportTimeout: support_timeout = true gives the entries a last-hit
// time (P4Info: NOTIFY_CONTROL); anything but a boolean, or a table with no
// control-plane entries, is refused.
func TestSupportTimeout(t *testing.T) {
	prog := func(props string, key bool) string {
		src := langProgram("struct H { eth_t eth; }\nstruct M { bit<32> i; bit<32> x; }", "p.extract(h.eth);", "u.apply();")
		k := "key = { h.eth.t : exact; }"
		if !key {
			k = ""
		}
		return strings.Replace(src, "    apply { u.apply(); }",
			"    table u { "+k+" actions = { NoAction; } "+props+" }\n    apply { u.apply(); }", 1)
	}
	r, err := Compile(context.Background(), Options{Path: "test.p4", Source: []byte(prog("support_timeout = true;", true)), NoObject: true})
	if err != nil {
		t.Fatal(err)
	}
	tl := r.Info.Edgenf.Table("I.u")
	if tl == nil || tl.IdleOffset == 0 || tl.ParamOffset < tl.IdleOffset+8 {
		t.Fatalf("layout %+v: want a last-hit word before the parameters", tl)
	}
	for _, pt := range r.Info.Tables {
		if pt.Preamble.Name == "I.u" && pt.IdleTimeoutBehavior != "NOTIFY_CONTROL" {
			t.Fatalf("P4Info table %+v: want idleTimeoutBehavior NOTIFY_CONTROL", pt)
		}
	}
	for _, c := range []struct {
		props string
		key   bool
		want  string
	}{
		{"support_timeout = 1;", true, "support_timeout must be true or false"},
		{"support_timeout = true;", false, "unsupported: support_timeout on table u"},
	} {
		_, err := Compile(context.Background(), Options{Path: "test.p4", Source: []byte(prog(c.props, c.key)), NoObject: true})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want %q", c.props, err, c.want)
		}
	}
}
