package conformance

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func write(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o755); err != nil {
		t.Fatal(err)
	}
}

// fakeP4C lays out the parts of a p4c checkout the suites read.
func fakeP4C(t *testing.T) string {
	dir := t.TempDir()
	s := filepath.Join(dir, SamplesDir)
	write(t, filepath.Join(s, "a-bmv2.p4"), "#include <core.p4>\n#include <v1model.p4>\n")
	write(t, filepath.Join(s, "a-bmv2.stf"), "packet 0 00\n")
	write(t, filepath.Join(s, "b-bmv2.p4"), "# include \"v1model.p4\"\n")
	write(t, filepath.Join(s, "b-bmv2.stf"), "")
	write(t, filepath.Join(s, "nostf-bmv2.p4"), "#include <v1model.p4>\n") // no test: not a case
	write(t, filepath.Join(s, "p-psa.p4"), "#include <psa.p4>\n")
	write(t, filepath.Join(s, "p-psa.stf"), "")
	write(t, filepath.Join(s, "q-bmv2-psa.p4"), "#include <core.p4>\n#include <bmv2/psa.p4>\n")
	write(t, filepath.Join(s, "q-bmv2-psa.stf"), "")
	write(t, filepath.Join(s, "u_ebpf.p4"), "#include <ebpf_model.p4>\n") // another architecture
	write(t, filepath.Join(s, "u_ebpf.stf"), "")
	write(t, filepath.Join(s, "orphan.stf"), "") // an .stf without its program
	e := filepath.Join(dir, EBPFTests)
	write(t, filepath.Join(e, "simple.p4"), "#include <core.p4>\n#include <psa.p4>\n")
	write(t, filepath.Join(e, "common.p4"), "header h_t {}\n") // included by the others: not a program
	return dir
}

func TestDiscover(t *testing.T) {
	dir := fakeP4C(t)
	cases, err := Discover(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range cases {
		got = append(got, string(c.Suite)+":"+c.Name+":"+filepath.Base(c.STF))
	}
	want := "v1model STF:a-bmv2:a-bmv2.stf v1model STF:b-bmv2:b-bmv2.stf PSA compile:simple:. PSA STF:p-psa:p-psa.stf PSA STF:q-bmv2-psa:q-bmv2-psa.stf"
	if strings.Join(got, " ") != want {
		t.Errorf("cases\n got  %s\n want %s", strings.Join(got, " "), want)
	}
	if _, err := Discover(t.TempDir()); err == nil || !strings.Contains(err.Error(), "is not a p4c checkout") {
		t.Errorf("an empty directory: %v", err)
	}
}

func TestArgs(t *testing.T) {
	stf := Args(Case{Suite: V1ModelSTF, P4: "/s/x.p4", STF: "/s/x.stf"}, "/o")
	if strings.Join(stf, " ") != "p4 test x.p4 x.stf --arch v1model" {
		t.Errorf("v1model STF: %q", stf)
	}
	comp := Args(Case{Suite: PSACompile, P4: "/e/y.p4"}, "/o")
	want := "p4 compile y.p4 --arch psa --out-dir /o -D PORT0=0 -D PORT1=1 -D PORT2=2 -D PORT3=3 -D PORT4=4 -D PORT5=5 -D PSA_RECIRC=PSA_PORT_RECIRCULATE"
	if strings.Join(comp, " ") != want {
		t.Errorf("PSA compile: %q", comp)
	}
}

func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		name, out, class, first string
		timedOut                bool
	}{
		{"short frames", "error: 4 check(s) failed:\nt-bmv2.stf:9: port 1: length 14, want 6 exactly\n  got  0111\n  want 01\nt-bmv2.stf:12: port 2: byte 1 differs\n",
			ClassShort, "t-bmv2.stf:9: port 1: length 14, want 6 exactly", false},
		{"packets", "error: 1 check(s) failed:\narith5-bmv2.stf:30: port 0: byte 5 differs\n  got  ff\n",
			ClassPackets, "arith5-bmv2.stf:30: port 0: byte 5 differs", false},
		{"missing packet", "error: 1 check(s) failed:\nx.stf:3: expected a packet on port 2, none came\n",
			ClassPackets, "x.stf:3: expected a packet on port 2, none came", false},
		{"unsupported", "error: g-bmv2.p4:31:21: error: unsupported: action parameters with a direction (not yet implemented by edgenf's P4 compiler)\n      action do_thing(inout bit<8> val_0) {\n      ^\n",
			"unsupported: action parameters with a direction", "error: g-bmv2.p4:31:21: error: unsupported: action parameters with a direction (not yet implemented by edgenf's P4 compiler)", false},
		{"unsupported with a type", "error: /p/e.p4:50:21: error: unsupported: comparing values of type varbit<32> (not yet implemented by edgenf's P4 compiler)\n",
			"unsupported: comparing values of type X", "", false},
		{"type error", "error: c.p4:106:25: error: operands of * have different types bit<32> and bit<9> (cast one of them)\n",
			"front end: operands of * have different types bit<N> and bit<N> (cast one of them)", "", false},
		{"syntax", "error: f.p4:44:21: error: expected \")\", found \"i\"\n", "front end: syntax not parsed", "", false},
		{"unsatisfied", "error: loading the program: program edgenf_cube: Call at insn 164: symbol \"act_NoAction\": unsatisfied program reference\n",
			"load: unsatisfied program reference", "", false},
		{"verifier", "error: loading the program: program edgenf_cube: load program: permission denied: 12: (85) call ...\n",
			"load: the verifier rejects the program", "", false},
		{"architecture", "error: architecture \"psa\" is not supported (v1model)\n", "front end: architecture \"psa\" is not supported (v1model)", "", false},
		{"stf runner", "error: t.stf:4: table MyIngress.t has no key field h.x\n", "STF: table MyIngress.t has no key field h.x", "", false},
		{"panic", "panic: runtime error: invalid memory address or nil pointer dereference\n[signal SIGSEGV]\n\ngoroutine 1 [running]:\n",
			ClassCrash, "panic: runtime error: invalid memory address or nil pointer dereference", false},
		{"timeout", "", ClassTimeout, "no result within 1m0s", true},
	} {
		class, first := Classify(tc.out, tc.timedOut, time.Minute)
		if class != tc.class {
			t.Errorf("%s: class %q, want %q", tc.name, class, tc.class)
		}
		if tc.first != "" && first != tc.first {
			t.Errorf("%s: first error %q, want %q", tc.name, first, tc.first)
		}
	}
}

func TestReport(t *testing.T) {
	outs := []Outcome{
		{Case: Case{Suite: V1ModelSTF, Name: "a"}, Pass: true},
		{Case: Case{Suite: V1ModelSTF, Name: "b"}, Class: ClassPackets, First: "b.stf:3: port 0: byte 1 differs"},
		{Case: Case{Suite: V1ModelSTF, Name: "c"}, Class: "unsupported: x|y", First: "c.p4:1:1: error: unsupported: x|y"},
		{Case: Case{Suite: V1ModelSTF, Name: "d"}, Class: ClassPackets, First: "d.stf:9: port 1: length 20, want 21"},
		{Case: Case{Suite: PSACompile, Name: "p"}, Pass: true},
	}
	ts := Summarize(outs)
	if len(ts) != 2 || ts[0].Suite != V1ModelSTF || ts[0].Pass != 1 || ts[0].Total != 4 || ts[1].Rate() != 100 {
		t.Fatalf("tallies %+v", ts)
	}
	if c := ts[0].Classes(); len(c) != 2 || c[0] != ClassPackets || strings.Join(ts[0].ByClass[ClassPackets], ",") != "b,d" {
		t.Errorf("classes %q %v", c, ts[0].ByClass)
	}
	md := Markdown(outs, "p4c")
	for _, want := range []string{
		"| v1model STF | 1 | 4 | 25% |",
		"| PSA compile | 1 | 1 | 100% |",
		"**v1model STF: the 3 failures by class**",
		"| packets differ (2) | b, d | b.stf:3: port 0: byte 1 differs |",
		`| unsupported: x\|y (1) | c | c.p4:1:1: error: unsupported: x\|y |`,
	} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q:\n%s", want, md)
		}
	}
	if strings.Contains(md, "PSA compile: the") {
		t.Errorf("a suite that passes lists failures:\n%s", md)
	}
	var tab strings.Builder
	if err := WriteTable(&tab, outs); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(tab.String(), "FAIL") || !strings.Contains(tab.String(), "v1model STF    1/4   pass (25%)") {
		t.Errorf("table:\n%s", tab.String())
	}
}

func TestReplaceSection(t *testing.T) {
	doc := "# Guide\n\n" + BeginMarker + "\nold\n" + EndMarker + "\nrest\n"
	got, err := ReplaceSection(doc, "new\n\n")
	if err != nil || got != "# Guide\n\n"+BeginMarker+"\nnew\n"+EndMarker+"\nrest\n" {
		t.Errorf("%q %v", got, err)
	}
	for _, bad := range []string{"no markers", EndMarker + "\n" + BeginMarker, BeginMarker + BeginMarker + EndMarker} {
		if _, err := ReplaceSection(bad, "x"); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
	path := filepath.Join(t.TempDir(), "g.md")
	write(t, path, "x\n")
	if err := UpdateFile(path, "s"); err == nil {
		t.Error("a document without markers was written")
	}
	if b, _ := os.ReadFile(path); string(b) != "x\n" {
		t.Errorf("the document changed: %q", b)
	}
}

// TestRunner runs a stand-in edgenf that passes, fails, panics and hangs:
// each is one outcome, the hang bounded by the timeout.
func TestRunner(t *testing.T) {
	dir := t.TempDir()
	fake := filepath.Join(dir, "edgenf")
	write(t, fake, `#!/bin/sh
case "$3" in
*pass.p4) exit 0 ;;
*fail.p4) echo "error: 1 check(s) failed:"; echo "fail.stf:2: port 0: byte 3 differs"; exit 1 ;;
*crash.p4) echo "panic: runtime error: index out of range" >&2; echo "goroutine 1 [running]:" >&2; exit 2 ;;
*hang.p4) exec sleep 30 ;;
esac
exit 3
`)
	var cases []Case
	for _, n := range []string{"pass", "fail", "crash", "hang"} {
		cases = append(cases, Case{Suite: V1ModelSTF, Name: n, P4: filepath.Join(dir, n+".p4"), STF: filepath.Join(dir, n+".stf")})
	}
	done := 0
	outs, err := Runner{Edgenf: fake, Timeout: 2 * time.Second, Parallel: 4}.Run(context.Background(), cases, func(Outcome) { done++ })
	if err != nil {
		t.Fatal(err)
	}
	if done != 4 || len(outs) != 4 {
		t.Fatalf("%d callbacks, %d outcomes", done, len(outs))
	}
	want := []struct {
		pass  bool
		class string
	}{{true, ""}, {false, ClassPackets}, {false, ClassCrash}, {false, ClassTimeout}}
	for i, w := range want {
		if outs[i].Name != cases[i].Name || outs[i].Pass != w.pass || outs[i].Class != w.class {
			t.Errorf("%s: %+v, want pass=%v class %q", cases[i].Name, outs[i], w.pass, w.class)
		}
	}
}
