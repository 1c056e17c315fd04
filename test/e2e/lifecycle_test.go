package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/edgenf/edgenf/internal/netlab"
	"github.com/edgenf/edgenf/internal/nftest"
	"github.com/edgenf/edgenf/internal/testenv"
)

// streamDuring runs a UDP stream A→B of n datagrams at pps while action runs,
// and returns how many were sent and received.
func streamDuring(t *testing.T, a, b *netlab.Host, port, n, pps int, action func()) (int, int) {
	t.Helper()
	type result struct{ sent, recv int }
	done := make(chan result, 1)
	errc := make(chan error, 1)
	go func() {
		s, r, err := netlab.UDPFlow(ctx(t, 60*time.Second), a, b, "198.18.0.2", port, n, 200, pps)
		errc <- err
		done <- result{s, r}
	}()
	time.Sleep(500 * time.Millisecond) // the stream is flowing
	action()
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	res := <-done
	return res.sent, res.recv
}

func TestHotSwapMiddleCubeLosesNothing(t *testing.T) {
	testenv.E2E(t)
	for _, at := range nftest.Attachments {
		t.Run(at.Name, func(t *testing.T) { testHotSwap(t, at) })
	}
}

func testHotSwap(t *testing.T, at nftest.Attachment) {
	d := startDaemonFor(t, at)
	_, a, b, ra, rb := twoHosts(t)
	h := string(at.Hook)
	buildChain(t, d, ra, rb, h, h, h)
	sent, recv := streamDuring(t, a, b, 6001, 30000, 15000, func() {
		for i := 0; i < 5; i++ {
			d.cli("cube", "swap", "c2")
			time.Sleep(100 * time.Millisecond)
		}
	})
	if sent != 30000 || recv != sent {
		t.Fatalf("hot swap during the stream: sent %d, received %d", sent, recv)
	}
	// The counters survived the swaps (maps are kept): every datagram of the
	// stream went through c2.
	st := d.portStats("c2")
	if st["c2"]["p0"].RxPackets < uint64(sent) {
		t.Fatalf("c2 counters lost across swaps: %+v", st["c2"]["p0"])
	}
}

func TestKillDaemonKeepsTrafficAndRestartChangesNothing(t *testing.T) {
	testenv.E2E(t)
	for _, at := range nftest.TCAttachments {
		t.Run(at.Name, func(t *testing.T) { testKillAndRestart(t, at) })
	}
}

func testKillAndRestart(t *testing.T, at nftest.Attachment) {
	d := startDaemonFor(t, at)
	_, a, b, ra, rb := twoHosts(t)
	buildChain(t, d, ra, rb, "tc", "tc", "tc")
	before := map[string]string{}
	for _, q := range [][]string{{"get", "topology", "-o", "json"}, {"get", "cubes"}, {"get", "attachments", "-o", "yaml"}} {
		before[strings.Join(q, " ")] = d.cli(q...)
	}
	sent, recv := streamDuring(t, a, b, 6002, 20000, 10000, func() {
		d.kill()
		time.Sleep(300 * time.Millisecond)
	})
	if recv != sent || sent != 20000 {
		t.Fatalf("with the daemon killed: sent %d, received %d", sent, recv)
	}
	d.start()
	// the restarted daemon took its own programs back, adding none
	nftest.CheckTCAttach(t, ra, at.TC)
	for q, want := range before {
		if got := d.cli(strings.Fields(q)...); got != want {
			t.Errorf("after restart `edgenf %s` differs:\n--- before\n%s\n--- after\n%s", q, want, got)
		}
	}
	if got := sendUDP(t, a, b, "198.18.0.2", 6003, 1000, 100); got != 1000 {
		t.Fatalf("after restart %d of 1000 arrived", got)
	}
	// Still manageable after the restart.
	d.cli("cube", "add", "m1", "monitor", "--hook", "tc")
	d.cli("attach", "m1", "c3:p0")
	if got := sendUDP(t, a, b, "198.18.0.2", 6004, 500, 100); got != 500 {
		t.Fatalf("after restart + attach %d of 500 arrived", got)
	}
}

const chainYAML = `
cubes:
  - name: c1
    type: portfwd
    ports:
      - {name: p0, peer: %A%}
      - {name: p1, peer: "c2:p0"}
    tables:
      rules:
        - {in_port: p0, out_port: p1}
        - {in_port: p1, out_port: p0}
  - name: c2
    type: portfwd
    ports:
      - {name: p0}
      - {name: p1, peer: %B%}
    tables:
      rules:
        - {in_port: p0, out_port: p1}
        - {in_port: p1, out_port: p0}
  - name: m1
    type: monitor
attachments:
  - {cube: m1, point: "c2:p0"}
`

func TestApplyIsIdempotentAndAppliesOnlyTheDifference(t *testing.T) {
	testenv.E2E(t)
	d := startDaemon(t)
	_, a, b, ra, rb := twoHosts(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "topo.yaml")
	doc := strings.NewReplacer("%A%", ra, "%B%", rb).Replace(chainYAML)
	os.WriteFile(file, []byte(doc), 0o644)

	dry := d.cli("apply", "-f", file, "--dry-run")
	if !strings.Contains(dry, "+ cube c1") || !strings.Contains(dry, "dry run") {
		t.Fatalf("dry run output:\n%s", dry)
	}
	if got := d.cli("get", "cubes"); strings.Contains(got, "c1") {
		t.Fatalf("dry run changed state:\n%s", got)
	}
	out := d.cli("apply", "-f", file)
	if !strings.Contains(out, "4 changes applied") {
		t.Fatalf("first apply:\n%s", out)
	}
	if err := a.Ping(ctx(t, 20*time.Second), "198.18.0.2", 2); err != nil {
		t.Fatalf("ping through the applied chain: %v", err)
	}
	state := d.cli("get", "topology", "-o", "json")
	if out := d.cli("apply", "-f", file); !strings.Contains(out, "no changes") {
		t.Fatalf("second apply of the same file:\n%s", out)
	}
	if again := d.cli("get", "topology", "-o", "json"); again != state {
		t.Fatal("second apply changed the state")
	}
	// What `get topology` prints applies back with no change.
	exported := filepath.Join(dir, "exported.yaml")
	os.WriteFile(exported, []byte(d.cli("get", "topology", "-o", "yaml")), 0o644)
	if out := d.cli("apply", "-f", exported); !strings.Contains(out, "no changes") {
		t.Fatalf("applying the exported topology:\n%s", out)
	}

	// Edit: drop the monitor, change one rule to drop. Only those change.
	edited := strings.Replace(doc, "        - {in_port: p1, out_port: p0}\n  - name: m1\n    type: monitor\nattachments:\n  - {cube: m1, point: \"c2:p0\"}\n",
		"        - {in_port: p1, action: drop}\n", 1)
	os.WriteFile(file, []byte(edited), 0o644)
	out = d.cli("apply", "-f", file)
	for _, want := range []string{"~ cube c2", "table rules +0 -0 ~1", "- cube m1", "- attachment c2:p0"} {
		if !strings.Contains(out, want) {
			t.Errorf("edited apply lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "cube c1") {
		t.Errorf("edited apply touched c1:\n%s", out)
	}
	if got := sendUDP(t, a, b, "198.18.0.2", 6005, 500, 64); got != 500 {
		t.Fatalf("A→B after edit: %d of 500", got)
	}
	if err := b.Ping(ctx(t, 5*time.Second), "198.18.0.1", 1); err == nil {
		t.Fatal("B→A passes although c2 now drops what comes back on p1")
	}
}
