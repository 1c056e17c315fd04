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

// TestP4RuntimeShell: p4runtime-shell (PyPI), the P4Runtime client people
// use by hand, pushes pipelines made of `edgenf p4 compile --p4info`'s text
// P4Info and the P4 source (its --config p4info.txt,prog.p4), then writes
// and reads entries, a multicast group and direct counters by name
// (scripts/p4rt_shell_check.py says what is checked).
func TestP4RuntimeShell(t *testing.T) {
	testenv.E2E(t)
	venv, err := exec.Command("../../scripts/pyvenv.sh", "scripts/requirements-p4rt-shell.txt").Output()
	if err != nil {
		t.Fatalf("scripts/pyvenv.sh: %v", err)
	}
	python := filepath.Join(strings.TrimSpace(string(venv)), "bin", "python")
	dir := t.TempDir()
	args := []string{"../../scripts/p4rt_shell_check.py", "unix:" + filepath.Join(dir, "unused")}
	for _, prog := range []string{"l2learn", "l2switch"} {
		src, _ := filepath.Abs("../../examples/p4/" + prog + ".p4")
		info := filepath.Join(dir, prog+".p4info.txt")
		out, err := exec.Command(filepath.Join(binDir, "edgenf"), "p4", "compile", src, "-O", dir, "--p4info", info).CombinedOutput()
		if err != nil {
			t.Fatalf("edgenf p4 compile %s --p4info: %v\n%s", prog, err, out)
		}
		args = append(args, info, src)
	}
	d := startDaemon(t, "-p4rt-devices", "sw1=1")
	args[1] = "unix:" + d.p4rtSocket()
	cmd := exec.CommandContext(ctx(t, 120*time.Second), python, args...)
	cmd.Env = append(os.Environ(), "PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION=python")
	out, err := cmd.CombinedOutput()
	t.Logf("%s", out)
	if err != nil {
		t.Fatalf("p4runtime-shell: %v", err)
	}
	// what the shell wrote last is the daemon's state
	if got := d.cli("p4", "table-dump", "sw1", "SwIngress.mac_table"); !strings.Contains(got, "02:00:00:00:00:0c") {
		t.Errorf("the CLI does not show the shell's entry:\n%s", got)
	}
}
