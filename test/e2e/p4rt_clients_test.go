package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/edgenf/edgenf/internal/testenv"
)

// clientPython is the python of a third-party P4Runtime client's venv
// (scripts/requirements-NAME.txt).
func clientPython(t *testing.T, name string) string {
	t.Helper()
	venv, err := exec.Command("../../scripts/pyvenv.sh", "scripts/requirements-"+name+".txt").Output()
	if err != nil {
		t.Fatalf("scripts/pyvenv.sh %s: %v", name, err)
	}
	return filepath.Join(strings.TrimSpace(string(venv)), "bin", "python")
}

// p4infoText compiles an example with `edgenf p4 compile --p4info` into
// dir and returns the text P4Info's path and the source's.
func p4infoText(t *testing.T, dir, prog string) (info, src string) {
	t.Helper()
	src, _ = filepath.Abs("../../examples/p4/" + prog + ".p4")
	info = filepath.Join(dir, prog+".p4info.txt")
	out, err := exec.Command(filepath.Join(binDir, "edgenf"), "p4", "compile", src, "-O", dir, "--p4info", info).CombinedOutput()
	if err != nil {
		t.Fatalf("edgenf p4 compile %s --p4info: %v\n%s", prog, err, out)
	}
	return info, src
}

// runClient runs a client script; it fails the test if the script does.
func runClient(t *testing.T, python string, args ...string) {
	t.Helper()
	cmd := exec.CommandContext(ctx(t, 120*time.Second), python, args...)
	cmd.Env = append(os.Environ(), "PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION=python")
	out, err := cmd.CombinedOutput()
	t.Logf("%s", out)
	if err != nil {
		t.Fatalf("%s: %v", args[0], err)
	}
}

// TestP4RuntimeShell: p4runtime-shell (PyPI), the P4Runtime client people
// use by hand, pushes pipelines made of `edgenf p4 compile --p4info`'s text
// P4Info and the P4 source (its --config p4info.txt,prog.p4), then writes
// and reads entries, a multicast group, direct counters, and an action
// selector's members, groups and one-shot action sets by name
// (scripts/p4rt_shell_check.py says what is checked).
func TestP4RuntimeShell(t *testing.T) {
	testenv.E2E(t)
	python := clientPython(t, "p4rt-shell")
	dir := t.TempDir()
	learnInfo, learnSrc := p4infoText(t, dir, "l2learn")
	switchInfo, switchSrc := p4infoText(t, dir, "l2switch")
	ecmpInfo, ecmpSrc := p4infoText(t, dir, "ecmp")
	d := startDaemon(t, "-p4rt-devices", "sw1=1")
	runClient(t, python, "../../scripts/p4rt_shell_check.py", "unix:"+d.p4rtSocket(), learnInfo, learnSrc, switchInfo, switchSrc, ecmpInfo, ecmpSrc)
	// what the shell wrote last is the daemon's state
	if got := d.cli("p4", "table-dump", "sw1", "FwdIngress.routes"); !strings.Contains(got, "198.19.0.0/16") || !strings.Contains(got, "group 10") {
		t.Errorf("the CLI does not show the shell's entry:\n%s", got)
	}
	if got := d.cli("p4", "act-prof-dump", "sw1", "-o", "json"); !strings.Contains(got, `"group": 10`) || !strings.Contains(got, `"port": "5"`) {
		t.Errorf("the CLI does not show the shell's members and group:\n%s", got)
	}
}

// TestP4RuntimeFinsy: finsy (PyPI), a controller that sets a switch's
// pipeline only when the switch reports another cookie than its own (a
// 64-bit hash), installs the pipeline and an entry; after a daemon restart
// it reconnects, sees its cookie and does not reload: the entry is there.
func TestP4RuntimeFinsy(t *testing.T) {
	testenv.E2E(t)
	python := clientPython(t, "finsy")
	info, src := p4infoText(t, t.TempDir(), "l2learn")
	d := startDaemon(t, "-p4rt-devices", "sw1=1")
	runClient(t, python, "../../scripts/p4rt_finsy_check.py", "unix:"+d.p4rtSocket(), info, src, "first")
	d.stop()
	d.start()
	runClient(t, python, "../../scripts/p4rt_finsy_check.py", "unix:"+d.p4rtSocket(), info, src, "again")
	if n := strings.Count(d.log.String(), "p4rt: pipeline committed"); n != 0 {
		t.Errorf("finsy set the pipeline %d time(s) after the restart", n)
	}
}
