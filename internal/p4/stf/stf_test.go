package stf

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/edgenf/edgenf/internal/p4/p4test"
)

func runSTF(t *testing.T, p4file string) {
	t.Helper()
	runSTFHook(t, p4file, "xdp")
}

func runSTFHook(t *testing.T, p4file, hook string) {
	t.Helper()
	res := compileFile(t, p4file)
	stfFile := strings.TrimSuffix(p4file, ".p4") + ".stf"
	text, err := os.ReadFile(stfFile)
	if os.IsNotExist(err) {
		t.Skipf("no %s", stfFile)
	}
	if err != nil {
		t.Fatal(err)
	}
	cmds, err := Parse(stfFile, string(text))
	if err != nil {
		t.Fatal(err)
	}
	obj := res.Object
	if hook == "tc" {
		obj = res.ObjectTC
	}
	r, err := LoadHook(obj, res.Info, hook)
	if err != nil {
		os.WriteFile(filepath.Join(os.TempDir(), filepath.Base(p4file)+".c"), []byte(res.C), 0o644)
		t.Fatal(err)
	}
	defer r.Close()
	out, err := r.Run(stfFile, cmds)
	if err != nil {
		t.Fatal(err)
	}
	if !out.OK() {
		t.Fatal(out.Error())
	}
}

func TestExamplesSTF(t *testing.T) {
	needRoot(t)
	files, _ := filepath.Glob("../../../examples/p4/*.p4")
	if len(files) < 5 {
		t.Fatalf("examples missing")
	}
	for _, f := range files {
		f := f
		t.Run(strings.TrimSuffix(filepath.Base(f), ".p4"), func(t *testing.T) {
			t.Parallel()
			runSTF(t, f)
		})
	}
}

func TestFeaturesSTF(t *testing.T) {
	needRoot(t)
	files, _ := filepath.Glob("../testdata/*.p4")
	for _, f := range files {
		f := f
		t.Run(strings.TrimSuffix(filepath.Base(f), ".p4"), func(t *testing.T) {
			t.Parallel()
			runSTF(t, f)
		})
	}
}

// TestExamplesSTFTC runs the same tests through the TC object.
func TestExamplesSTFTC(t *testing.T) {
	needRoot(t)
	files, _ := filepath.Glob("../../../examples/p4/*.p4")
	files2, _ := filepath.Glob("../testdata/*.p4")
	for _, f := range append(files, files2...) {
		f := f
		t.Run(strings.TrimSuffix(filepath.Base(f), ".p4"), func(t *testing.T) {
			t.Parallel()
			runSTFHook(t, f, "tc")
		})
	}
}

func TestRunFile(t *testing.T) {
	needRoot(t)
	res, err := RunFile(context.Background(), p4test.File(t, "../../../examples/p4/portfwd.p4"), "../../../examples/p4/portfwd.stf", "")
	if err != nil || !res.OK() {
		t.Fatalf("%v %v", res, err)
	}
	// a failing expectation is reported with its line
	bad := filepath.Join(t.TempDir(), "bad.stf")
	os.WriteFile(bad, []byte("add MyIngress.fwd standard_metadata.ingress_port:0 MyIngress.forward(port:1)\npacket 0 000000000002 000000000001 0800 aa\nexpect 2 000000000002 000000000001 0800 aa\n"), 0o644)
	res, err = RunFile(context.Background(), p4test.File(t, "../../../examples/p4/portfwd.p4"), bad, "")
	if err != nil {
		t.Fatal(err)
	}
	if res.OK() || !strings.Contains(res.Error(), "bad.stf:3: expected a packet on port 2") || !strings.Contains(res.Error(), "bad.stf:2: unexpected packet on port 1") {
		t.Errorf("got %q", res.Error())
	}
}

func TestParseSTF(t *testing.T) {
	cmds, err := Parse("x.stf", "add t 5 a:0x1&&&0xf b:2001:db8::1 act(p:1, q:aa:bb:cc:dd:ee:ff)\nexpect 1 00** 11 $\ncheck_counter c(3) bytes > 10\n# c\nwait\n")
	if err != nil {
		t.Fatal(err)
	}
	if len(cmds) != 4 || cmds[0].Priority != 5 || cmds[0].Matches[1].Value != "2001:db8::1" || cmds[0].Args[1].Value != "aa:bb:cc:dd:ee:ff" {
		t.Errorf("add: %+v", cmds[0])
	}
	if !cmds[1].Exact || cmds[1].Mask[1] != 0 || cmds[1].Data[2] != 0x11 {
		t.Errorf("expect: %+v", cmds[1])
	}
	if cmds[2].Field != "bytes" || cmds[2].Op != ">" || cmds[2].Value != 10 || cmds[2].Index != 3 {
		t.Errorf("check_counter: %+v", cmds[2])
	}
	regs, err := Parse("x.stf", "register_write Ig.r 3 0x10\nregister_read r 3 -2\n")
	if err != nil {
		t.Fatal(err)
	}
	if regs[0].Kind != "register_write" || regs[0].Register != "Ig.r" || regs[0].Index != 3 || regs[0].Value != 16 ||
		regs[1].Kind != "register_read" || regs[1].Value != ^uint64(1) {
		t.Errorf("registers: %+v %+v", regs[0], regs[1])
	}
	// p4c's PSA samples: register_read without a value reads only
	ro, err := Parse("x.stf", "register_read Ig.r 1\nregister_reset Ig.r\n")
	if err != nil || !ro[0].NoCheck || ro[0].Index != 1 || ro[1].Kind != "register_reset" || ro[1].Register != "Ig.r" {
		t.Errorf("read-only register_read, register_reset: %v %+v", err, ro)
	}
	ms, err := Parse("x.stf", "meter_set Ig.m 2 100 10 200 0x20\n")
	if err != nil || ms[0].Meter != "Ig.m" || ms[0].Index != 2 || ms[0].Rates != [4]uint64{100, 10, 200, 32} {
		t.Errorf("meter_set: %v %+v", err, ms)
	}
	for _, bad := range []string{"packet x 00", "expect 1 0", "add t", "frobnicate", "check_counter c 1", "add t a:1 act(p)", "register_read r", "register_reset", "register_reset r x", "register_write r x 1", "register_write r 1 zz", "meter_set m 1 2 3 4", "meter_set m 1 2 3 4 x"} {
		if _, err := Parse("x.stf", bad); err == nil || !strings.Contains(err.Error(), "x.stf:1:") {
			t.Errorf("%q: %v", bad, err)
		}
	}
}

// p4c's STF spells a stack element in a key name with $ (extra$0.h) and
// means the higher priority wins.
func TestParseSTFStackKeyAndPriority(t *testing.T) {
	cmds, err := Parse("x.stf", "add ex1 110 extra$0.h:0x2525 hdr.s$12.f$3:1 act2(val:0x27)\nadd ex1 100 extra$0.h:0x25** act1(val:1)\n")
	if err != nil {
		t.Fatal(err)
	}
	if got := cmds[0].Matches[0].Field; got != "extra[0].h" {
		t.Errorf("field %q, want extra[0].h", got)
	}
	if got := cmds[0].Matches[1].Field; got != "hdr.s[12].f[3]" {
		t.Errorf("field %q, want hdr.s[12].f[3]", got)
	}
	if cmds[0].EntryPriority() <= cmds[1].EntryPriority() || cmds[1].EntryPriority() == 0 {
		t.Errorf("priorities %d, %d: the STF priority 110 must beat 100", cmds[0].EntryPriority(), cmds[1].EntryPriority())
	}
	for _, bad := range []string{"add t -1 a:1 x()", "add t 536870912 a:1 x()", "direct_meter_set t -3 a:1 1 2 3 4"} {
		if _, err := Parse("x.stf", bad); err == nil || !strings.Contains(err.Error(), "x.stf:1") {
			t.Errorf("%q: got %v, want a positioned error", bad, err)
		}
	}
}
