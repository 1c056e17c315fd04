package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A P4 program runs as a cube: BMv2-style entries, real traffic, exact
// counters; a new program is swapped in place and traffic follows it.
func TestP4CubeWithRealTrafficAndProgramSwap(t *testing.T) {
	d := startDaemon(t)
	_, a, b, ra, rb := twoHosts(t)
	prog, _ := filepath.Abs("../../examples/p4/portfwd.p4")
	d.cli("cube", "add", "sw", "p4", "--program", prog)
	d.cli("port", "add", "sw", "p0", "--peer", ra, "--index", "0")
	d.cli("port", "add", "sw", "p1", "--peer", rb, "--index", "1")
	d.cli("p4", "table-add", "sw", "fwd", "forward", "0", "=>", "1")
	d.cli("p4", "table-add", "sw", "MyIngress.fwd", "MyIngress.forward", "1", "=>", "0")
	if out := d.cli("p4", "table-dump", "sw"); !strings.Contains(out, "standard_metadata.ingress_port=0") {
		t.Fatalf("table-dump:\n%s", out)
	}
	// Same entry by alias and full name: one entry, a conflict.
	if out, err := d.try("p4", "table-add", "sw", "MyIngress.fwd", "forward", "0", "=>", "1"); err == nil || !strings.Contains(out, "already has an entry") {
		t.Fatalf("duplicate entry: %v\n%s", err, out)
	}
	if out, err := d.try("p4", "table-add", "sw", "fwd", "forward", "0"); err == nil || !strings.Contains(out, "takes 1 parameters (port)") {
		t.Fatalf("missing parameter: %v\n%s", err, out)
	}
	if err := a.Ping(ctx(t, 20*time.Second), "198.18.0.2", 2); err != nil {
		t.Fatalf("ping through the P4 cube: %v", err)
	}
	d.cli("stats", "reset", "sw")
	if got := sendUDP(t, a, b, "198.18.0.2", 8001, 2000, 200); got != 2000 {
		t.Fatalf("%d of 2000 through the P4 cube", got)
	}
	st := d.portStats("sw")
	if st["sw"]["p0"].RxPackets != 2000 || st["sw"]["p1"].TxPackets != 2000 {
		t.Fatalf("counters %+v", st["sw"])
	}
	var ctrs []struct {
		Counter string `json:"counter"`
		Index   int    `json:"index"`
		Packets uint64 `json:"packets"`
	}
	d.json(&ctrs, "p4", "counter-read", "sw", "rx_counter")
	if len(ctrs) == 0 || ctrs[0].Index != 0 || ctrs[0].Packets < 2000 {
		t.Fatalf("P4 counter: %+v", ctrs)
	}

	// A program that drops everything replaces it in place...
	src, _ := os.ReadFile(prog)
	dropAll := strings.Replace(string(src), "fwd.apply();", "mark_to_drop(standard_metadata);", 1)
	dropFile := filepath.Join(t.TempDir(), "dropall.p4")
	os.WriteFile(dropFile, []byte(dropAll), 0o644)
	d.cli("cube", "set", "sw", "--program", dropFile)
	if got := sendUDP(t, a, b, "198.18.0.2", 8002, 200, 100); got != 0 {
		t.Fatalf("%d datagrams through a program that drops everything", got)
	}
	// ...and back: entries and ports were kept.
	d.cli("cube", "set", "sw", "--program", prog)
	if got := sendUDP(t, a, b, "198.18.0.2", 8003, 500, 100); got != 500 {
		t.Fatalf("after swapping back: %d of 500", got)
	}
	// A program that does not compile is refused with its position, and
	// nothing changes.
	bad := filepath.Join(t.TempDir(), "bad.p4")
	os.WriteFile(bad, []byte(strings.Replace(string(src), "fwd.apply();", "fwd.apply()", 1)), 0o644)
	before := d.cli("get", "cube", "sw", "-o", "json")
	if out, err := d.try("cube", "set", "sw", "--program", bad); err == nil || !strings.Contains(out, "bad.p4:") {
		t.Fatalf("bad program: %v\n%s", err, out)
	}
	if after := d.cli("get", "cube", "sw", "-o", "json"); after != before {
		t.Fatal("a refused program changed the cube")
	}
	if got := sendUDP(t, a, b, "198.18.0.2", 8004, 200, 100); got != 200 {
		t.Fatalf("after the refused program: %d of 200", got)
	}
}
