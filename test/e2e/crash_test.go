package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/edgenf/edgenf/internal/netlab"
	"github.com/edgenf/edgenf/internal/testenv"
)

// crashDuring restarts the daemon so that it kills itself (SIGKILL) at the
// named step of the change the CLI command makes, then starts it again
// normally: a crash exactly there.
func (d *daemon) crashDuring(point string, args ...string) {
	d.t.Helper()
	d.stop()
	d.env = []string{"EDGENF_CRASH_AT=" + point}
	d.start()
	if out, err := d.try(args...); err == nil {
		d.t.Fatalf("edgenf %s answered instead of crashing at %s:\n%s", strings.Join(args, " "), point, out)
	}
	d.crashed()
	d.env = nil
	d.start()
}

// p4Switch is hosts a and b through a p4 cube sw running portfwd.p4,
// whose table starts empty: nothing forwards until an entry says so. (P4
// cubes keep kernel entries a restart does not name: the cases where an
// entry the state lost would forward invisibly.)
func p4Switch(t *testing.T) (d *daemon, send func() int) {
	d = startDaemon(t)
	_, a, b, ra, rb := twoHosts(t)
	prog, _ := filepath.Abs("../../examples/p4/portfwd.p4")
	d.cli("cube", "add", "sw", "p4", "--program", prog)
	d.cli("port", "add", "sw", "p0", "--peer", ra, "--index", "0")
	d.cli("port", "add", "sw", "p1", "--peer", rb, "--index", "1")
	port := 7000
	send = func() int {
		port++
		return sendUDP(t, a, b, "198.18.0.2", port, 200, 100)
	}
	if got := send(); got != 0 {
		t.Fatalf("with no entry %d of 200 arrived", got)
	}
	return d, send
}

// hostC makes host c (198.18.1.3, a subnet of its own) and returns it with
// the root end of its veth.
func hostC(t *testing.T, lab *netlab.Lab) (*netlab.Host, string) {
	t.Helper()
	c, err := lab.Host("c")
	if err != nil {
		t.Fatal(err)
	}
	rc, err := lab.Veth(c, "eth0", "c", "198.18.1.3/24")
	if err != nil {
		t.Fatal(err)
	}
	return c, rc
}

func (d *daemon) entries() string { return d.cli("p4", "table-dump", "sw") }

// crashAdding kills the daemon at point while it adds an entry to the p4
// switch: the restarted daemon lists the entry, and forwards by it.
func (d *daemon) crashAdding(point string, send func() int) {
	d.t.Helper()
	d.crashDuring(point, "p4", "table-add", "sw", "fwd", "forward", "0", "=>", "1")
	if l := d.entries(); !strings.Contains(l, "ingress_port=0") {
		d.t.Fatalf("the entry added when the daemon was killed at %s is not listed after the restart:\n%s", point, l)
	}
	if got := send(); got != 200 {
		d.t.Fatalf("the entry is listed, yet %d of 200 arrived", got)
	}
}

// savedEntries saves sw's entries table holding the entry that forwards
// port 0 to 1 in a file (for `table load`), and deletes that entry again.
func (d *daemon) savedEntries(t *testing.T) string {
	d.cli("p4", "table-add", "sw", "fwd", "forward", "0", "=>", "1")
	list := filepath.Join(t.TempDir(), "entries.json")
	if err := os.WriteFile(list, []byte(d.cli("table", "list", "sw", "entries", "-o", "json")), 0o600); err != nil {
		t.Fatal(err)
	}
	d.cli("p4", "table-delete", "sw", "fwd", "0")
	return list
}

// TestCrashBetweenJournalAndKernel: an entry change is journalled before it
// reaches the kernel. Killed in between, the restarted daemon shows and
// applies the same thing: an added entry is listed and forwards; a deleted
// one is gone from the list and from the kernel (before, the kernel could
// keep an entry no state named, which nothing could delete).
func TestCrashBetweenJournalAndKernel(t *testing.T) {
	testenv.E2E(t)
	d, send := p4Switch(t)
	d.crashAdding("entries-journalled", send)
	d.crashDuring("entries-journalled", "p4", "table-delete", "sw", "fwd", "0")
	if l := d.entries(); strings.Contains(l, "ingress_port=0") {
		t.Fatalf("the deleted entry is listed after the restart:\n%s", l)
	}
	if got := send(); got != 0 {
		t.Fatalf("no entry is listed, yet %d of 200 arrived (the kernel kept the deleted entry)", got)
	}
	if !strings.Contains(d.log.String(), "removed from the kernel an entry the state does not have") {
		t.Errorf("the restart did not say what it removed:\n%s", d.log)
	}
}

// TestCrashBetweenKernelAndAck: a change is written to the journal, then
// to the kernel, and acknowledged once the journal's group commit has made
// it durable. Killed while it waits for that, the daemon restarts with the
// change it wrote: listed and forwarding, as the kernel had it.
func TestCrashBetweenKernelAndAck(t *testing.T) {
	testenv.E2E(t)
	d, send := p4Switch(t)
	d.crashAdding("entries-applied", send)
}

// TestCrashAfterJournalKeepsTheChange: a topology change is made durable
// by appending the cubes it changed to the journal (not by a snapshot of
// every cube). Killed right after that append, before it answered, the
// restarted daemon has the change, in the list and in the kernel.
func TestCrashAfterJournalKeepsTheChange(t *testing.T) {
	testenv.E2E(t)
	d, send := p4Switch(t)
	list := d.savedEntries(t)
	// the whole table replaced: a topology change
	d.crashDuring("change-journalled", "table", "load", "sw", "entries", "-f", list)
	if l := d.entries(); !strings.Contains(l, "ingress_port=0") {
		t.Fatalf("the journalled change is not listed after the restart:\n%s", l)
	}
	if got := send(); got != 200 {
		t.Fatalf("the entry is listed, yet %d of 200 arrived", got)
	}
	d.crashDuring("change-journalled", "cube", "add", "z", "portfwd")
	if out := d.cli("cube", "list"); !strings.Contains(out, "z ") {
		t.Fatalf("the journalled cube is not listed after the restart:\n%s", out)
	}
	d.cli("cube", "del", "z")
	if got := send(); got != 200 {
		t.Fatalf("after the restarts %d of 200 arrived", got)
	}
}

// TestCrashBeforeSnapshotLeavesNothingBehind: killed after a change reached
// the kernel and before its snapshot was written, the daemon restarts with
// the state before the change, and the kernel follows it: entries the
// change added are removed, an interface program it attached is detached,
// a cube it loaded is reported and does not leak into a new cube.
func TestCrashBeforeSnapshotLeavesNothingBehind(t *testing.T) {
	testenv.E2E(t)
	d, send := p4Switch(t)
	list := d.savedEntries(t)
	// the whole table replaced (a topology change, killed before it is persisted)
	d.crashDuring("topology-applied", "table", "load", "sw", "entries", "-f", list)
	if l := d.entries(); strings.Contains(l, "ingress_port=0") {
		t.Fatalf("the unfinished change is listed:\n%s", l)
	}
	if got := send(); got != 0 {
		t.Fatalf("no entry is listed, yet %d of 200 arrived (the kernel kept the unfinished change)", got)
	}

	_, rc := hostC(t, netlab.NewT(t))
	d.cli("cube", "add", "x", "portfwd")
	d.crashDuring("topology-applied", "port", "add", "x", "p0", "--peer", rc)
	if out, err := d.try("stats", "iface", rc); err == nil {
		t.Fatalf("an interface no state names still has a program:\n%s", out)
	}
	if _, err := os.Stat(filepath.Join(d.bpffs, "ifaces", rc+"_xdp_ingress")); err == nil {
		t.Fatal("the interface program is still pinned")
	}
	if !strings.Contains(d.log.String(), "removed a program from an interface no state names") {
		t.Errorf("the restart did not say it detached %s:\n%s", rc, d.log)
	}

	d.crashDuring("topology-applied", "cube", "add", "y", "portfwd")
	if out, _ := d.try("cube", "list"); strings.Contains(out, "y ") {
		t.Fatalf("the unfinished cube is listed:\n%s", out)
	}
	if log := d.log.String(); !strings.Contains(log, "pinned cubes that no state names") || !strings.Contains(log, "cubes=y") {
		t.Errorf("the restart did not report the leftover cube:\n%s", log)
	}
	d.cli("cube", "add", "y", "portfwd")
}

// TestEmptyStateOverALiveDatapath: a state file reduced to {"version":1}
// while the chain forwards makes the daemon refuse to start, naming the
// ways out, and touch nothing; -adopt-empty then starts it empty and
// removes the chain, so nothing forwards invisibly.
func TestEmptyStateOverALiveDatapath(t *testing.T) {
	testenv.E2E(t)
	d := startDaemon(t)
	_, a, b, ra, rb := twoHosts(t)
	buildChain(t, d, ra, rb, "xdp", "xdp")
	d.stop()
	os.WriteFile(d.state, []byte(`{"version":1}`), 0o600)
	os.Remove(d.state + ".journal")
	out, err := exec.Command(filepath.Join(binDir, "edgenfd"), "-socket", d.socket, "-state", d.state, "-bpffs", d.bpffs).CombinedOutput()
	if err == nil {
		t.Fatalf("edgenfd started on an empty state over a live datapath:\n%s", out)
	}
	for _, w := range []string{"names no cube", "c1", ra, "-adopt-empty", "-destroy"} {
		if !strings.Contains(string(out), w) {
			t.Errorf("the refusal does not say %q:\n%s", w, out)
		}
	}
	if got := sendUDP(t, a, b, "198.18.0.2", 7101, 200, 100); got != 200 {
		t.Fatalf("the refusal disturbed the datapath: %d of 200 arrived", got)
	}
	d.flags = append(d.flags, "-adopt-empty")
	d.start()
	if out := d.cli("cube", "list", "-o", "json"); strings.TrimSpace(out) != "[]" {
		t.Fatalf("cubes after -adopt-empty: %s", out)
	}
	if left, _ := os.ReadDir(filepath.Join(d.bpffs, "cubes")); len(left) != 0 {
		t.Fatalf("pins left after -adopt-empty: %v", left)
	}
	if left, _ := os.ReadDir(filepath.Join(d.bpffs, "ifaces")); len(left) != 0 {
		t.Fatalf("interface programs left after -adopt-empty: %v", left)
	}
	if got := sendUDP(t, a, b, "198.18.0.2", 7102, 50, 100); got != 0 {
		t.Fatalf("%d datagrams went through a chain no state names", got)
	}
}

// TestTornJournalStarts: a journal whose last append was torn, or (written
// by earlier versions) has a record glued to a torn one, loads: the daemon
// starts with every acknowledged change, and says what it skipped.
func TestTornJournalStarts(t *testing.T) {
	testenv.E2E(t)
	d := startDaemon(t)
	d.cli("cube", "add", "dd", "ddos")
	d.cli("table", "add", "dd", "blacklist_src", "prefix=198.18.0.1/32")
	d.cli("table", "add", "dd", "blacklist_src", "prefix=198.18.0.2/32")
	d.kill()
	journal := d.state + ".journal"
	f, err := os.OpenFile(journal, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"gen":`) // an append cut short
	f.Close()
	d.start()
	for _, p := range []string{"198.18.0.1/32", "198.18.0.2/32"} {
		if !strings.Contains(d.cli("table", "list", "dd", "blacklist_src"), p) {
			t.Fatalf("%s lost", p)
		}
	}
	if !strings.Contains(d.log.String(), "torn last line") {
		t.Errorf("the torn line was not reported:\n%s", d.log)
	}

	d.kill()
	var st struct {
		Gen uint64 `json:"gen"`
	}
	raw, _ := os.ReadFile(d.state)
	json.Unmarshal(raw, &st)
	rec := func(p string) string {
		return fmt.Sprintf(`{"gen":%d,"cube":"dd","table":"blacklist_src","key":%q,"value":{"prefix":%q}}`, st.Gen, p, p)
	}
	legacy := rec("198.18.0.3/32") + "\n" + rec("198.18.0.9/32")[:40] + rec("198.18.0.4/32") + "\n"
	os.WriteFile(journal, []byte(legacy), 0o600)
	d.start()
	l := d.cli("table", "list", "dd", "blacklist_src")
	for _, p := range []string{"198.18.0.1/32", "198.18.0.2/32", "198.18.0.3/32", "198.18.0.4/32"} {
		if !strings.Contains(l, p) {
			t.Fatalf("%s lost:\n%s", p, l)
		}
	}
	if strings.Contains(l, "198.18.0.9/32") {
		t.Fatalf("the torn record was applied:\n%s", l)
	}
	if !strings.Contains(d.log.String(), "recovered a record glued") {
		t.Errorf("the glued line was not reported:\n%s", d.log)
	}
}

// TestCubeThatFailsToRestoreIsDownAlone: a p4 cube whose program no longer
// compiles is restored down (listed so, with the reason), dropping and
// counting what is sent to it, while the chain beside it forwards; a fixed
// program brings it up.
func TestCubeThatFailsToRestoreIsDownAlone(t *testing.T) {
	testenv.E2E(t)
	d := startDaemon(t)
	lab, a, b, ra, rb := twoHosts(t)
	buildChain(t, d, ra, rb, "xdp")
	c, rc := hostC(t, lab)
	prog, _ := filepath.Abs("../../examples/p4/l2switch.p4")
	d.cli("cube", "add", "sw", "p4", "--program", prog)
	d.cli("port", "add", "sw", "p1", "--index", "1", "--peer", rc)
	d.stop()

	// the program no longer compiles (a stricter compiler after an upgrade)
	var st map[string]any
	raw, _ := os.ReadFile(d.state)
	if err := json.Unmarshal(raw, &st); err != nil {
		t.Fatal(err)
	}
	cfg := st["topology"].(map[string]any)["cubes"].(map[string]any)["sw"].(map[string]any)["config"].(map[string]any)
	cfg["source"] = strings.Replace(cfg["source"].(string), "apply {", "apply { no_such_action();", 1)
	raw, _ = json.Marshal(st)
	os.WriteFile(d.state, raw, 0o600)

	d.start()
	var cubes []struct{ Name, Down string }
	d.json(&cubes, "cube", "list")
	for _, cb := range cubes {
		switch {
		case cb.Name == "sw" && !strings.Contains(cb.Down, "no_such_action"):
			t.Fatalf("sw is not down with the compiler's reason: %+v", cb)
		case cb.Name != "sw" && cb.Down != "":
			t.Fatalf("%s is down too: %s", cb.Name, cb.Down)
		}
	}
	if out := d.cli("cube", "list"); !strings.Contains(out, "down") {
		t.Fatalf("cube list does not show sw down:\n%s", out)
	}
	if out := d.cli("describe", "cube", "sw"); !strings.Contains(out, "Status:") || !strings.Contains(out, "no_such_action") {
		t.Fatalf("describe does not say why sw is down:\n%s", out)
	}
	if got := sendUDP(t, a, b, "198.18.0.2", 7201, 200, 100); got != 200 {
		t.Fatalf("the chain beside the down cube: %d of 200 arrived", got)
	}
	// what reaches the down cube is dropped, and counted
	c.Ping(ctx(t, 5*time.Second), "198.18.1.4", 2)
	drops := uint64(0)
	for i := 0; i < 50 && drops == 0; i++ {
		drops = d.portStats("sw")["sw"]["p1"].DropPackets
		time.Sleep(100 * time.Millisecond)
	}
	if drops == 0 {
		t.Fatal("frames into the down cube were not dropped and counted")
	}
	if out, err := d.try("p4", "info", "sw"); err == nil || !strings.Contains(out, "down") {
		t.Fatalf("reading a down cube's program model: %v\n%s", err, out)
	}
	d.cli("cube", "set", "sw", "--program", prog)
	var after []struct{ Name, Down string }
	d.json(&after, "cube", "list")
	for _, cb := range after {
		if cb.Down != "" {
			t.Fatalf("%s still down after the fix: %s", cb.Name, cb.Down)
		}
	}
}
