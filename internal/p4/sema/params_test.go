package sema

import (
	"strings"
	"testing"
)

// TestDirectionalParams: actions and functions with in/out/inout
// parameters, and the rules binding them, each misuse reported where it is.
func TestDirectionalParams(t *testing.T) {
	cases := []struct{ body, want, at string }{
		// actions
		{"action a(inout bit<8> x, bit<8> d) { x = x + d; } apply { a(m.x, 1); }", "", ""},
		{"action a(out h_t o) { o.setValid(); o.a = 1; } apply { a(h.h); }", "", ""},
		{"action a(bit<8> d, inout bit<8> x) { x = d; } apply { }", "parameter x has direction inout but follows action data parameter d; directional parameters must come before the directionless ones", "7:20:"},
		{"action a(in bit<8> x) { x = 1; } apply { }", "cannot assign to x: it is read-only (direction \"in\")", ""},
		{"action a(inout bit<8> x) { } apply { a(1); }", "expression is not assignable", ""},
		{"action a(out bit<8> x) { x = 1; } apply { a(h.h.a + 1); }", "expression is not assignable", ""},
		{"action a(inout bit<8> x) { } apply { a(16w1); }", "cannot use a value of type bit<16> where bit<8> is expected", ""},
		{"action a(inout bit<8> x, bit<8> d) { x = d; } table t { key = { m.x : exact; } actions = { a(m.x); } } apply { t.apply(); }", "", ""},
		{"action a(inout bit<8> x, bit<8> d) { x = d; } table t { key = { m.x : exact; } actions = { a(m.x); } default_action = a(m.x, 3); } apply { t.apply(); }", "", ""},
		{"action a(inout bit<8> x, bit<8> d) { x = d; } table t { key = { m.x : exact; } actions = { a(m.x); } default_action = a(3); } apply { t.apply(); }", "", ""},
		{"action a(inout bit<8> x, bit<8> d) { x = d; } table t { key = { m.x : exact; } actions = { a; } } apply { t.apply(); }", "action a has 1 directional parameter(s) (inout x); the table's action list must bind each of them, got 0 argument(s)", ""},
		{"action a(bit<8> d) { m.x = d; } table t { key = { m.x : exact; } actions = { a(1); } } apply { t.apply(); }", "action a has no directional parameters; its parameters are action data, supplied by the control plane", ""},
		{"action a(inout bit<8> x, bit<8> d) { x = d; } table t { key = { m.x : exact; } actions = { a(1); } } apply { t.apply(); }", "expression is not assignable", ""},
		{"action a(inout bit<8> x, bit<8> d) { x = d; } table t { key = { m.x : exact; } actions = { a(m.x); } default_action = a(h.h.a, 3); } apply { t.apply(); }", "argument h.h.a for parameter x of a differs from the table's action list, which binds it to m.x", ""},
		{"action a(inout bit<8> x, bit<8> d) { x = d; } table t { key = { m.x : exact; } actions = { a(m.x); } default_action = a(m.x, 3, 4); } apply { t.apply(); }", "action a takes 1 action data argument(s), got 3", ""},
		{"action a(inout bit<8> x, h_t d) { } apply { }", "action data (directionless parameters) must be bit<N>", ""},
		{"action a(inout packet_in p) { } apply { }", "unsupported: passing an extern object (packet_in) to an action", ""},
	}
	for _, c := range cases {
		src := prelude + "control I(inout H h, inout M m, inout standard_metadata_t s) {\n" + c.body + "}" + tail
		_, err := checkSrc(t, "t.p4", []byte(src))
		if c.want == "" {
			if err != nil {
				t.Errorf("%q: %v", c.body, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "t.p4:"+c.at) || !strings.Contains(err.Error(), "^") {
			t.Errorf("%q: got %v, want %q at t.p4:%s", c.body, err, c.want, c.at)
		}
	}
}

// TestFunctionParams: functions with every direction, returning any type.
func TestFunctionParams(t *testing.T) {
	cases := []struct{ src, want string }{
		{"bit<8> f(inout bit<8> x, out bit<8> y, in bit<8> z) { y = x; x = z; return x + y; }", ""},
		{"h_t f(in h_t a) { h_t r = a; r.a = 1; return r; }", ""},
		{"H f(in H a) { return a; }", ""},
		{"void f(out h_t a) { a.setInvalid(); }", ""},
		{"bit<8> f(in bit<8> x) { x = 1; return x; }", "cannot assign to x: it is read-only"},
		{"h_t f(in h_t a) { return; }", "must return a h_t"},
		{"h_t f(in h_t a) { return a.a; }", "cannot use a value of type bit<8> where h_t is expected"},
		{"bit<8> f(out bit<8> x) { x = 1; return x; } control C2(inout H h) { apply { h.h.a = f(h.h.a + 1); } }", "expression is not assignable"},
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
