package p4path

import (
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/edgenf/edgenf/internal/datapath"
	"github.com/edgenf/edgenf/internal/estimate"
	"github.com/edgenf/edgenf/internal/p4"
)

// program is a v1model program with the given parser states, ingress
// declarations and body.
func program(t *testing.T, states, decls, body string) *Program {
	t.Helper()
	return programWith(t, states, decls, body, "", Options{})
}

// programWith is program with a compute-checksum body, enumerated with opt.
func programWith(t *testing.T, states, decls, body, csum string, opt Options) *Program {
	t.Helper()
	src := `#include <core.p4>
#include <v1model.p4>
header eth_t { bit<48> dst; bit<48> src; bit<16> type; }
header ipv4_t { bit<8> vihl; bit<8> tos; bit<16> len; bit<32> idf; bit<8> ttl; bit<8> proto; bit<16> csum; bit<32> src; bit<32> dst; }
header udp_t { bit<16> sport; bit<16> dport; bit<16> len; bit<16> csum; }
struct H { eth_t eth; ipv4_t ip; udp_t udp; }
struct M { bit<8> c; }
parser P(packet_in p, out H h, inout M m, inout standard_metadata_t sm) {
` + states + `
}
control V(inout H h, inout M m) { apply { } }
control I(inout H h, inout M m, inout standard_metadata_t sm) {
    action fwd(bit<9> port) { sm.egress_spec = port; }
    action drop() { mark_to_drop(sm); }
` + decls + `
    apply {
` + body + `
    }
}
control E(inout H h, inout M m, inout standard_metadata_t sm) { apply { } }
control C(inout H h, inout M m) { apply { ` + csum + ` } }
control D(packet_out p, in H h) { apply { p.emit(h); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
`
	prog, err := Check(p4.Options{Path: "t.p4", Source: []byte(src)})
	if err != nil {
		t.Fatal(err)
	}
	pr, err := Enumerate(prog, opt)
	if err != nil {
		t.Fatal(err)
	}
	return pr
}

const ethIP = `
    state start {
        p.extract(h.eth);
        transition select(h.eth.type) { 0x800: ip; default: accept; }
    }
    state ip {
        p.extract(h.ip);
        transition select(h.ip.proto) { 17: udp; 6: udp; default: accept; }
    }
    state udp { p.extract(h.udp); transition accept; }`

func describe(pr *Program) []string {
	var out []string
	for _, p := range pr.Paths {
		out = append(out, p.Describe())
	}
	sort.Strings(out)
	return out
}

func same(t *testing.T, got, want []string) {
	t.Helper()
	sort.Strings(want)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("paths:\n  %s\nwant:\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
}

// Parser states × table outcomes × action choices; validity decides the
// isValid() tests (no path takes the table without IPv4); select cases to
// the same state are one path.
func TestPathsOfParserTablesAndActions(t *testing.T) {
	pr := program(t, ethIP,
		`table t { key = { h.ip.dst: exact; } actions = { fwd; NoAction; } default_action = NoAction(); }`,
		`if (h.ip.isValid()) { t.apply(); } else { drop(); }`)
	same(t, describe(pr), []string{
		"eth; drop",
		"eth ip; t hit → fwd; send",
		"eth ip; t hit → NoAction; send",
		"eth ip; t miss → NoAction; send",
		"eth ip udp; t hit → fwd; send",
		"eth ip udp; t hit → NoAction; send",
		"eth ip udp; t miss → NoAction; send",
	})
}

// A switch on action_run follows the action chosen; exit ends the control;
// an undecided condition is a branch both ways; what a decided branch says
// (x == C) decides a later test of x.
func TestPathsOfSwitchExitAndBranches(t *testing.T) {
	pr := program(t, `state start { p.extract(h.eth); transition accept; }`,
		`table t { key = { h.eth.dst: exact; } actions = { fwd; drop; } default_action = drop(); }`,
		`switch (t.apply().action_run) {
            drop: { exit; }
        }
        if (h.eth.type == 0x800) { m.c = 1; }
        if (h.eth.type != 0x800) { sm.egress_spec = 510; }`)
	same(t, describe(pr), []string{
		"eth; t hit → drop; drop",
		"eth; t miss → drop; drop",
		"eth; t hit → fwd; (h.eth.type == 2048 @20) true; send",
		"eth; t hit → fwd; (h.eth.type == 2048 @20) false; punt",
	})
}

// The example l3router.p4: every path, exactly.
func TestPathsOfL3Router(t *testing.T) {
	opt, err := p4.FromFile(filepath.Join("..", "..", "..", "examples", "p4", "l3router.p4"))
	if err != nil {
		t.Fatal(err)
	}
	prog, err := Check(opt)
	if err != nil {
		t.Fatal(err)
	}
	pr, err := Enumerate(prog, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, lpm := range []string{"ipv4_forward", "drop", "NoAction"} {
		verdict := "send"
		if lpm == "drop" {
			verdict = "drop"
		}
		for _, mac := range []string{"hit → set_smac", "hit → NoAction", "miss → NoAction"} {
			want = append(want, "ethernet ipv4; (hdr.ipv4.ttl <= 1 @99) false; ipv4_lpm hit → "+lpm+"; port_mac "+mac+"; "+verdict)
		}
	}
	want = append(want,
		"ethernet ipv4; (hdr.ipv4.ttl <= 1 @99) true; punt",
		"ethernet ipv4; (hdr.ipv4.ttl <= 1 @99) false; ipv4_lpm miss → drop; drop",
		"ethernet; drop")
	same(t, describe(pr), want)
	s := Summarise(pr.Price(&estimate.Profile{Costs: map[string]float64{TermLPM: 10, TermHash: 10, TermSend: 30}}))
	if got := s.Typical.Describe(); got != "ethernet ipv4; (hdr.ipv4.ttl <= 1 @99) false; ipv4_lpm hit → ipv4_forward; port_mac hit → set_smac; send" {
		t.Fatalf("typical path: %s", got)
	}
}

// --path selects by number, headers, table outcomes, undecided branches
// and verdict; a spec no path matches says so.
func TestSelect(t *testing.T) {
	pr := program(t, ethIP,
		`table t { key = { h.ip.dst: exact; } actions = { fwd; NoAction; } default_action = NoAction(); }`,
		`if (h.ip.isValid()) { t.apply(); if (h.ip.ttl == 1) { sm.egress_spec = 510; } } else { drop(); }`)
	for spec, want := range map[string][]string{
		"eth":                        {"eth; drop"},
		"eth,ip,t=fwd,@26=false":     {"eth ip; t hit → fwd; (h.ip.ttl == 1 @26) false; send"},
		"eth ip t=miss verdict=punt": {"eth ip; t miss → NoAction; (h.ip.ttl == 1 @26) true; punt"},
		"#1":                         {pr.Paths[0].Describe()},
	} {
		got, err := pr.Select(spec)
		if err != nil {
			t.Fatalf("%s: %v", spec, err)
		}
		var d []string
		for _, p := range got {
			d = append(d, p.Describe())
		}
		if !reflect.DeepEqual(d, want) {
			t.Fatalf("%s: %v, want %v", spec, d, want)
		}
	}
	for spec, msg := range map[string]string{
		"nope=hit":         `no table "nope"`,
		"eth,ip,ip6":       "no path",
		"#99":              "paths 1 to",
		"verdict=sideways": "want send, drop or punt",
		"@26=maybe":        "want true or false",
	} {
		if _, err := pr.Select(spec); err == nil || !strings.Contains(err.Error(), msg) {
			t.Fatalf("%s: %v, want %q", spec, err, msg)
		}
	}
}

// What a path uses: headers parsed with their bytes, tables by kind and
// key, a header added (moved, the frame grows), the verdict.
func TestUses(t *testing.T) {
	pr := program(t, `state start { p.extract(h.eth); p.extract(h.ip); transition accept; }`,
		`table t { key = { h.ip.dst: lpm; } actions = { fwd; NoAction; } default_action = NoAction(); }`,
		`t.apply(); h.udp.setValid();`)
	got, err := pr.Select("t=fwd")
	if err != nil || len(got) != 1 {
		t.Fatalf("%v %v", got, err)
	}
	n := map[string]float64{}
	for _, u := range got[0].Uses {
		n[u.Term] += u.N
	}
	for term, want := range map[string]float64{TermSend: 1, TermParseHeader: 2, TermParseByte: 14 + 20, TermLPM: 1,
		TermDeparseHeader: 3, TermDeparseByte: 14 + 20 + 8, TermHeadAdjust: 1, TermAction: 1} {
		if n[term] != want {
			t.Errorf("%s: %v, want %v (uses %+v)", term, n[term], want, got[0].Uses)
		}
	}
}

// A program that applies one more table is estimated dearer (every
// profile shipped, both hooks), on its typical and its dearest path.
func TestAddingATableIncreasesTheEstimate(t *testing.T) {
	one := program(t, ethIP,
		`table t { key = { h.ip.dst: lpm; } actions = { fwd; NoAction; } default_action = NoAction(); }`,
		`if (h.ip.isValid()) { t.apply(); }`)
	two := program(t, ethIP,
		`table t { key = { h.ip.dst: lpm; } actions = { fwd; NoAction; } default_action = NoAction(); }
    table u { key = { h.udp.dport: exact; } actions = { drop; NoAction; } default_action = NoAction(); }`,
		`if (h.ip.isValid()) { t.apply(); u.apply(); }`)
	for _, hook := range []datapath.Hook{datapath.XDP, datapath.TC} {
		p, err := estimate.Builtin(hook)
		if err != nil {
			t.Fatal(err)
		}
		a, b := Summarise(one.Price(p)), Summarise(two.Price(p))
		if b.Typical.Cost.Total <= a.Typical.Cost.Total || b.Dearest.Cost.Total <= a.Dearest.Cost.Total {
			t.Fatalf("%s: one table: typical %.1f, dearest %.1f; two tables: %.1f, %.1f", hook,
				a.Typical.Cost.Total, a.Dearest.Cost.Total, b.Typical.Cost.Total, b.Dearest.Cost.Total)
		}
	}
}

// A lookahead, in a select or an assignment, is priced once per
// evaluation, on the paths that evaluate it only.
func TestLookahead(t *testing.T) {
	pr := program(t, `
    state start {
        p.extract(h.eth);
        transition select(p.lookahead<bit<4>>()) { 4: ip; default: accept; }
    }
    state ip { m.c = p.lookahead<bit<8>>(); p.extract(h.ip); transition accept; }`, ``, ``)
	lookaheads := map[string]float64{}
	for _, p := range pr.Paths {
		for _, u := range p.Uses {
			if u.Term == TermLookahead {
				lookaheads[strings.Join(p.Valid, " ")] += u.N
			}
		}
	}
	if want := map[string]float64{"hdr.eth": 1, "hdr.eth hdr.ip": 2}; !reflect.DeepEqual(lookaheads, want) {
		t.Fatalf("lookaheads by path %v, want %v", lookaheads, want)
	}
}

// A table is a global function of the compiled program when the compiler
// does not inline the program's tables (backend.InlinesTables: here, a
// counter the path never reaches): every table the path applies then
// costs its call (p4.table.call), and the estimate grows with it. Inlined,
// none does. (Without the term, examples/p4/portfwd.p4 was estimated 10 ns
// under its measurement: its counter made its one table a call.)
func TestTablesCalledAsFunctions(t *testing.T) {
	tables := `table t { key = { h.ip.dst: exact; } actions = { fwd; NoAction; } default_action = NoAction(); }
    table u { key = { h.ip.src: exact; } actions = { fwd; NoAction; } default_action = NoAction(); }`
	inlined := program(t, ethIP, tables, `t.apply(); u.apply();`)
	called := program(t, ethIP, `counter(8, CounterType.packets) c;`+"\n"+tables, `t.apply(); u.apply(); if (!h.eth.isValid()) { c.count(0); }`)
	calls := func(pr *Program) float64 {
		got, err := pr.Select("eth,ip,t=fwd,u=fwd")
		if err != nil || len(got) != 1 {
			t.Fatalf("%v %v", got, err)
		}
		n := 0.0
		for _, u := range got[0].Uses {
			if u.Term == TermTableCall {
				n += u.N
			}
		}
		return n
	}
	if a, b := calls(inlined), calls(called); a != 0 || b != 2 {
		t.Fatalf("table calls: %v inlined, %v beside a counter; want 0 and 2", a, b)
	}
	p := &estimate.Profile{Costs: map[string]float64{TermTableCall: 7, TermHash: 10, TermSend: 30}}
	a, b := Summarise(inlined.Price(p)), Summarise(called.Price(p))
	if d := b.Typical.Cost.Total - a.Typical.Cost.Total; d < 14 {
		t.Fatalf("typical path: %.1f inlined, %.1f called: %.1f more, want the two calls' 14", a.Typical.Cost.Total, b.Typical.Cost.Total, d)
	}
}
