package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/edgenf/edgenf/internal/datapath"
	"github.com/edgenf/edgenf/internal/state"
	"github.com/edgenf/edgenf/internal/testenv"
)

// An in-place upgrade over a running P4 cube: the program pinned for it is
// not what the restarted daemon builds from its state (here a program that
// drops everything, pinned by hand in its place while the daemon was
// stopped, with a digest of its own, as an older edgenf would have left).
// The restarted daemon does not adopt it: it reloads the cube in place,
// says so in its log and metrics, and traffic follows the current program
// with its entries. A restart with nothing changed adopts, no reload.
func TestUpgradeReloadsAStaleP4Program(t *testing.T) {
	testenv.E2E(t)
	d := startDaemon(t)
	_, a, b, ra, rb := twoHosts(t)
	prog, _ := filepath.Abs("../../examples/p4/portfwd.p4")
	// in front of it a cube of the daemon's own: the interface runs that
	// cube's copy, and frames enter sw through the patch panel
	d.cli("cube", "add", "front", "portfwd")
	d.cli("port", "add", "front", "p0", "--peer", ra)
	d.cli("port", "add", "front", "p1")
	d.cli("cube", "add", "sw", "p4", "--program", prog)
	d.cli("port", "add", "sw", "p0", "--peer", "front:p1", "--index", "0")
	d.cli("port", "add", "sw", "p1", "--peer", rb, "--index", "1")
	d.cli("table", "add", "front", "rules", "in_port=p0", "out_port=p1")
	d.cli("table", "add", "front", "rules", "in_port=p1", "out_port=p0")
	d.cli("p4", "table-add", "sw", "fwd", "forward", "0", "=>", "1")
	d.cli("p4", "table-add", "sw", "fwd", "forward", "1", "=>", "0")
	if got := sendUDP(t, a, b, "198.18.0.2", 8101, 200, 100); got != 200 {
		t.Fatalf("%d of 200 before the upgrade", got)
	}
	d.stop()

	// another build of the cube's program, pinned in its place
	src, _ := os.ReadFile(prog)
	dir := t.TempDir()
	dropAll := filepath.Join(dir, "portfwd.p4")
	os.WriteFile(dropAll, []byte(strings.Replace(string(src), "fwd.apply();", "mark_to_drop(standard_metadata);", 1)), 0o644)
	if out, err := exec.Command(filepath.Join(binDir, "edgenf"), "p4", "compile", dropAll, "-O", dir).CombinedOutput(); err != nil {
		t.Fatalf("compile: %v\n%s", err, out)
	}
	handPin(t, d, filepath.Join(dir, "portfwd"))
	if got := sendUDP(t, a, b, "198.18.0.2", 8102, 100, 100); got != 0 {
		t.Fatalf("%d of 100 through the hand-pinned program that drops everything: it is not running", got)
	}

	d.start()
	waitFor(t, "the reload to be logged", func() bool {
		l := d.log.String()
		return strings.Contains(l, "reloaded in place") && strings.Contains(l, "cube=sw") && strings.Contains(l, "built from another object")
	})
	if n := d.metric(t, `edgenf_start_cubes{how="reloaded"}`); n != 1 || d.metric(t, `edgenf_start_cubes{how="adopted"}`) != 1 {
		t.Fatalf("edgenf_start_cubes{how=\"reloaded\"} = %v", n)
	}
	if got := sendUDP(t, a, b, "198.18.0.2", 8103, 200, 100); got != 200 {
		t.Fatalf("%d of 200 after the upgrade: the stale program still runs", got)
	}
	if out := d.cli("p4", "table-dump", "sw"); strings.Count(out, "forward") != 2 {
		t.Fatalf("entries after the upgrade:\n%s", out)
	}
	ents, _ := os.ReadDir(filepath.Join(d.bpffs, "cubes", "sw"))
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), "-aside") || strings.HasSuffix(e.Name(), "_new") {
			t.Errorf("the upgrade left the pin %s", e.Name())
		}
	}

	// nothing changed: adopted, no reload
	d.stop()
	d.start()
	waitFor(t, "the daemon to be ready", func() bool { return strings.Contains(d.log.String(), "edgenfd ready") })
	if l := d.log.String(); strings.Contains(l, "reloaded") {
		t.Fatalf("an unchanged cube was reloaded:\n%s", l)
	}
	if n := d.metric(t, `edgenf_start_cubes{how="adopted"}`); n != 2 {
		t.Fatalf("edgenf_start_cubes{how=\"adopted\"} = %v", n)
	}
	if got := sendUDP(t, a, b, "198.18.0.2", 8104, 200, 100); got != 200 {
		t.Fatalf("%d of 200 after an unchanged restart", got)
	}
}

// handPin loads the object compiled as base (base_<hook>.o) as the stopped
// daemon's cube sw, in its panel slot, with a digest that is not the one
// the daemon would record.
func handPin(t *testing.T, d *daemon, base string) {
	t.Helper()
	f, err := state.Load(d.state)
	if err != nil {
		t.Fatal(err)
	}
	hook := f.Topology.Lookup("sw").Hook
	b, err := os.ReadFile(base + "_" + string(hook) + ".o")
	if err != nil {
		t.Fatal(err)
	}
	spec, err := datapath.LoadSpec(b)
	if err != nil {
		t.Fatal(err)
	}
	dp, err := datapath.Open(d.bpffs)
	if err != nil {
		t.Fatal(err)
	}
	defer dp.Close()
	c, err := dp.ReloadCube("sw", hook, f.Slots["sw"], spec, datapath.LoadOptions{Reprogram: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.SetDigest(datapath.Digest{0xee}); err != nil {
		t.Fatal(err)
	}
}
