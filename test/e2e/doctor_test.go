package e2e

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/edgenf/edgenf/internal/testenv"
)

type finding struct {
	Check, Status, Detail, Fix string
}

func findings(t *testing.T, out string) map[string]finding {
	t.Helper()
	var rs []finding
	if err := json.Unmarshal([]byte(out[:strings.LastIndex(out, "]")+1]), &rs); err != nil {
		t.Fatalf("doctor -o json: %v\n%s", err, out)
	}
	m := map[string]finding{}
	for _, r := range rs {
		m[r.Check] = r
	}
	return m
}

// TestDoctorReportsThisMachine: on this machine (Linux 6.18, root, JIT,
// bpffs, TCX, clang) `edgenf doctor` finds everything in order, the daemon
// answering with its topology, and native XDP on the interfaces that
// topology uses; `edgenfd -check` agrees from the state file. Broken
// things fail with their fix: a daemon that is gone, a pin directory
// outside bpffs.
func TestDoctorReportsThisMachine(t *testing.T) {
	testenv.E2E(t)
	d := startDaemon(t)
	_, _, _, ra, rb := twoHosts(t)
	buildChain(t, d, ra, rb, "xdp", "xdp")
	out := d.cli("doctor", "--bpffs", d.bpffs, "-o", "json")
	got := findings(t, out)
	want := map[string][]string{
		"kernel":    {"ok", "Linux 6.", "has all", "need Linux 6.3 or newer"}, // the upf's TC decapsulation flags (docs/kernel.md)
		"btf":       {"ok", "/sys/kernel/btf/vmlinux"},
		"jit":       {"ok", "JIT on"},
		"bpffs":     {"ok", d.bpffs[:len("/sys/fs/bpf")]},
		"tc":        {"ok", "TCX"},
		"shaping":   {"ok", "sch_htb present", "slicers"},
		"memlock":   {"ok", "memory cgroup"},
		"clang":     {"ok", "clang version"},
		"daemon":    {"ok", "2 cubes, 2 interfaces"},
		"xdp " + ra: {"ok", "native XDP", "veth"},
		"xdp " + rb: {"ok", "native XDP", "veth"},
	}
	for check, w := range want {
		r, ok := got[check]
		if !ok {
			t.Errorf("doctor reports no %q:\n%s", check, out)
			continue
		}
		if r.Status != w[0] {
			t.Errorf("%s: %s (%s), want %s", check, r.Status, r.Detail, w[0])
		}
		for _, s := range w[1:] {
			if !strings.Contains(r.Detail, s) {
				t.Errorf("%s: %q lacks %q", check, r.Detail, s)
			}
		}
	}
	if len(got) != len(want) {
		t.Errorf("doctor reports %d checks, want %d:\n%s", len(got), len(want), out)
	}

	// edgenfd -check: the same machine checks, the interfaces from the
	// state file, no daemon needed.
	chk, err := exec.Command(filepath.Join(binDir, "edgenfd"), "-check", "-state", d.state, "-bpffs", d.bpffs).CombinedOutput()
	if err != nil || !strings.Contains(string(chk), "xdp "+ra) || strings.Contains(string(chk), "FAIL") {
		t.Errorf("edgenfd -check: %v\n%s", err, chk)
	}

	// Broken: the daemon is gone, the pin directory is not on bpffs.
	d.stop()
	out, err = d.try("doctor", "--bpffs", t.TempDir(), "-o", "json")
	if err == nil {
		t.Fatalf("doctor with nothing running succeeded:\n%s", out)
	}
	got = findings(t, out)
	for check, fix := range map[string]string{"daemon": "systemctl start edgenfd", "bpffs": "mount -t bpf bpf"} {
		if r := got[check]; r.Status != "FAIL" || !strings.Contains(r.Fix, fix) {
			t.Errorf("%s: %+v, want FAIL with a fix saying %q", check, r, fix)
		}
	}
	if !strings.Contains(out, "see the FAIL lines") {
		t.Errorf("doctor's last line:\n%s", out)
	}
}
