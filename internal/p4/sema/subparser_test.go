package sema

import (
	"strings"
	"testing"
)

// TestSubParserErrors: sub-parsers, their apply and lookahead types.
func TestSubParserErrors(t *testing.T) {
	const sp = "parser SP(packet_in p, inout H h, out bit<8> n) { state start { n = 1; transition accept; } }\n"
	cases := []struct{ src, want string }{
		{sp + "parser P3(packet_in p, out H h) { SP() a; SP() b; state start { a.apply(p, h, h.h.a); b.apply(p, h, h.h.b); transition accept; } }", ""},
		{sp + "parser P3(packet_in p, out H h) { SP() a; state start { a.apply(p, h); transition accept; } }", "a.apply takes 3 arguments, got 2"},
		{sp + "parser P3(packet_in p, out H h) { SP() a; state start { a.apply(p, h, 1); transition accept; } }", "expression is not assignable"},
		{sp + "parser P3(packet_in p, out H h) { SP() a; state start { a.apply(h.h, h, h.h.a); transition accept; } }", "argument 1 of a.apply must be a packet_in, got h_t"},
		{sp + "parser P3(packet_in p, out H h) { P3() a; state start { transition accept; } }", "parser P3 cannot instantiate itself"},
		{"parser SV(packet_in p, out H h) { value_set<bit<8>>(4) vs; state start { transition select(h.h.a) { vs: accept; default: reject; } } }\n" +
			"parser P3(packet_in p, out H h) { SV() a; SV() b; state start { transition accept; } }", "unsupported: instantiating parser SV, which declares a value_set, more than once"},
		{"struct S { bit<8> a; h_t h; } parser P3(packet_in p, out H h) { state start { S s = p.lookahead<S>(); transition accept; } }", "unsupported: lookahead of S"},
		{"parser P3(packet_in p, out H h) { state start { h.h = p.lookahead<h_t>(); transition select(p.lookahead<h_t>().a) { 1: accept; default: reject; } } }", ""},
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
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "t.p4:") || !strings.Contains(err.Error(), "^") {
			t.Errorf("%q: got %v, want %q", c.src, err, c.want)
		}
	}
}

// TestCtorParamErrors: constructor parameters and arguments.
func TestCtorParamErrors(t *testing.T) {
	// a parser applying a parser-typed constructor parameter
	const pt = "parser PT(packet_in p, inout H h); parser A(packet_in p, inout H h) { state start { h.h.a = h.h.a + 1; transition accept; } } parser SP(packet_in p, inout H h)(PT q) { state start { q.apply(p, h); transition accept; } } "
	cases := []struct{ src, want string }{
		{"control S(inout bit<8> v)(bit<8> k, bool on) { apply { if (on) { v = v + k; } } } control I2(inout H h) { S(2, true) s; apply { s.apply(h.h.a); } }", ""},
		{"control S(inout bit<8> v)(bit<8> k) { apply { v = k; } } control I2(inout H h) { S() s; apply { s.apply(h.h.a); } }", "S takes 1 constructor argument(s), got 0"},
		{"control S(inout bit<8> v)(bit<8> k) { apply { v = k; } } control I2(inout H h) { S(h.h.b) s; apply { s.apply(h.h.a); } }", "constructor argument k of S must be a compile-time constant"},
		{"control S(inout bit<8> v)(bit<8> k) { apply { k = v; } }", "cannot assign to k: it is read-only"},
		{"control S(inout bit<8> v)(bit<8> k) { apply { } } control I2(inout H h) { S(16w1) s; apply { s.apply(h.h.a); } }", "cannot use a value of type bit<16> where bit<8> is expected"},
		{"control S(inout bit<8> v)(counter c) { apply { c.count(0); } } control I2(inout H h) { counter(2, CounterType.packets) n; S(n) s; apply { s.apply(h.h.a); } }", ""},
		{"control S(inout bit<8> v)(counter c) { apply { } } control I2(inout H h) { S(3) s; apply { s.apply(h.h.a); } }", "constructor argument c of S must name a counter instance"},
		{"control CT(inout bit<8> v); control A(inout bit<8> v) { apply { v = v + 1; } } control S(inout bit<8> v)(CT c) { apply { c.apply(v); } } control I2(inout H h) { A() a; S(a) s; apply { s.apply(h.h.a); } }", ""},
		{"control CT(inout bit<8> v); control A(inout bit<8> v) { apply { v = v + 1; } } control S(inout bit<8> v)(CT c) { apply { c.apply(v); } } control I2(inout H h) { A() a; S(a) s; S(a) s2; apply { s.apply(h.h.a); s2.apply(h.h.b); } }", ""},
		{"control CT(inout bit<8> v); control A(inout bit<8> v) { apply { v = v + 1; } } control S(inout bit<8> v)(CT c) { apply { c.apply(v); } } control B(inout bit<16> v) { apply { } } control I2(inout H h) { B() b; S(b) s; apply { } }", "constructor argument c of S: control B does not have type CT: parameter v has type bit<16>, the type's v bit<8>"},
		{"control CT(inout bit<8> v); control A(inout bit<8> v) { apply { v = v + 1; } } control S(inout bit<8> v)(CT c) { apply { c.apply(v); } } control B(in bit<8> v) { apply { } } control I2(inout H h) { B() b; S(b) s; apply { } }", "parameter v is in, the type's v inout"},
		{"control CT(inout bit<8> v); control A(inout bit<8> v) { apply { v = v + 1; } } control S(inout bit<8> v)(CT c) { apply { c.apply(v); } } control I2(inout H h) { S(3) s; apply { } }", "constructor argument c of S must name a control instance"},
		{"control CT(inout bit<8> v); control A(inout bit<8> v) { apply { v = v + 1; } } control S(inout bit<8> v)(CT c) { apply { c.apply(v); } } control A2(inout bit<8> v) { apply { } } control I2(inout H h) { A() a; A2() a2; S(a) s; S(a2) s2; apply { } }", "unsupported: instances of control S with different controls as constructor arguments"},
		{"control CT(inout bit<8> v); control S(inout bit<8> v)(CT c) { apply { c.apply(); } }", "c.apply takes 1 arguments, got 0"},
		{"control CT(inout bit<8> v); control S(inout bit<8> v)(CT c) { apply { c.apply(3); } }", "not assignable"},
		// parser-typed constructor parameters
		{pt + "parser P3(packet_in p, out H h) { A() a; SP(a) s; state start { s.apply(p, h); transition accept; } }", ""},
		{pt + "parser B(packet_in p, inout H h) { state start { transition accept; } } parser P3(packet_in p, out H h) { A() a; B() b; SP(a) s; SP(b) s2; state start { s.apply(p, h); s2.apply(p, h); transition accept; } }", ""},
		{pt + "parser B(packet_in p, in H h) { state start { transition accept; } } parser P3(packet_in p, out H h) { B() b; SP(b) s; state start { transition accept; } }", "constructor argument q of SP: parser B does not have type PT: parameter h is in, the type's h inout"},
		{pt + "parser B(packet_in p, inout h_t h) { state start { transition accept; } } parser P3(packet_in p, out H h) { B() b; SP(b) s; state start { transition accept; } }", "constructor argument q of SP: parser B does not have type PT: parameter h has type h_t, the type's h H"},
		{pt + "parser B(packet_in p) { state start { transition accept; } } parser P3(packet_in p, out H h) { B() b; SP(b) s; state start { transition accept; } }", "parser B does not have type PT: 1 parameter, the type 2 parameters"},
		{pt + "parser P3(packet_in p, out H h) { SP(3) s; state start { transition accept; } }", "constructor argument q of SP must name a parser instance declared before it (of type PT)"},
		{pt + "parser P3(packet_in p, out H h) { SP(a) s; A() a; state start { transition accept; } }", "constructor argument q of SP must name a parser instance declared before it (of type PT)"},
		{pt + "parser P3(packet_in p, out H h) { SP(P3) s; state start { transition accept; } }", "constructor argument q of SP must name a parser instance"},
		// an instance constructed in the argument is an anonymous instance of its own
		{pt + "parser P3(packet_in p, out H h) { SP(A()) s; state start { s.apply(p, h); transition accept; } }", ""},
		{pt + "parser B(packet_in p, in H h) { state start { transition accept; } } parser P3(packet_in p, out H h) { SP(B()) s; state start { transition accept; } }", "constructor argument q of SP: parser B does not have type PT: parameter h is in, the type's h inout"},
		{pt + "parser P3(packet_in p, out H h) { SP(A(1)) s; state start { transition accept; } }", "A takes 0 constructor argument(s), got 1"},
		{"control CT(inout bit<8> v); control A(inout bit<8> v) { apply { } } control S(inout bit<8> v)(CT c) { apply { c.apply(v); } } control I2(inout H h) { S(A()) s; apply { s.apply(h.h.a); } }", ""},
		{"control CT(inout bit<8> v); control A(inout bit<8> v)(bit<8> k) { apply { v = v + k; } } control S(inout bit<8> v)(CT c) { apply { c.apply(v); } } control I2(inout H h) { S(S(A(3))) s; apply { s.apply(h.h.a); } }", "unsupported: an instance of control S in a constructor argument of another instance of it"},
		{"control CT(inout bit<8> v); control A(inout bit<8> v)(bit<8> k) { apply { v = v + k; } } control S(inout bit<8> v)(CT c) { apply { c.apply(v); } } control T(inout bit<8> v)(CT c) { apply { c.apply(v); } } control I2(inout H h) { S(T(A(3))) s; apply { s.apply(h.h.a); } }", ""},
		{"control CT(inout bit<8> v); control A(inout bit<8> v)(bit<8> k) { apply { v = v + k; } } control S(inout bit<8> v)(CT c) { apply { c.apply(v); } } control I2(inout H h) { S(A(h.h.b)) s; apply { } }", "constructor argument k of A must be a compile-time constant"},
		{"control CT(inout bit<8> v); control B(inout bit<16> v) { apply { } } control S(inout bit<8> v)(CT c) { apply { c.apply(v); } } control I2(inout H h) { S(B()) s; apply { } }", "constructor argument c of S: control B does not have type CT: parameter v has type bit<16>, the type's v bit<8>"},
		{"parser PT(packet_in p, inout H h); parser SP(packet_in p, inout H h)(PT q) { state start { q.apply(p); transition accept; } }", "q.apply takes 2 arguments, got 1"},
		{"parser PT(packet_in p, inout H h); parser SP(packet_in p, inout H h)(PT q) { state start { q.apply(h.h, h); transition accept; } }", "argument 1 of q.apply must be a packet_in, got h_t"},
		{"parser PT(packet_in p, inout H h); control S(inout bit<8> v)(PT q) { apply { } }", "constructor parameter q of a control cannot have parser type PT: only a parser can apply a parser"},
		{"control CT(inout bit<8> v); parser SP(packet_in p, inout H h)(CT c) { state start { transition accept; } }", "constructor parameter c of a parser cannot have control type CT: only a control can apply a control"},
		{"parser SP(packet_in p, inout H h)(bit<8> k) { state start { h.h.a = k; transition accept; } } parser P3(packet_in p, out H h) { SP(1) a; SP(2) b; state start { a.apply(p, h); b.apply(p, h); transition accept; } }", ""},
		{"parser SP(packet_in p, inout H h)(bit<8> k) { state start { transition accept; } } parser P3(packet_in p, out H h) { SP(1, 2) a; state start { transition accept; } }", "SP takes 1 constructor argument(s), got 2"},
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
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "t.p4:") || !strings.Contains(err.Error(), "^") {
			t.Errorf("%q: got %v, want %q", c.src, err, c.want)
		}
	}
}

// TestExtractSkip: extract<T>(_) skips a header; misuse is an error, not a
// crash.
func TestExtractSkip(t *testing.T) {
	cases := []struct{ src, want string }{
		{"parser P3(packet_in p, out H h) { state start { p.extract<h_t>(_); transition accept; } }", ""},
		{"parser P3(packet_in p, out H h) { state start { p.extract(_); transition accept; } }", "extract(_) needs the header type: extract<T>(_)"},
		{"parser P3(packet_in p, out H h) { state start { p.extract<bit<8>>(_); transition accept; } }", "extract<T>(_) needs a header type without a varbit field, got bit<8>"},
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
