package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/edgenf/edgenf/internal/nftest"
	"github.com/edgenf/edgenf/internal/testenv"
)

// buildChain makes host A ↔ c1 ↔ c2 ↔ c3 ↔ host B of portfwd cubes at the
// given hooks, through the CLI.
func buildChain(t *testing.T, d *daemon, ra, rb string, hooks ...string) []string {
	names := make([]string, len(hooks))
	for i, h := range hooks {
		names[i] = fmt.Sprintf("c%d", i+1)
		d.cli("cube", "add", names[i], "portfwd", "--hook", h)
	}
	last := len(names) - 1
	d.cli("port", "add", names[0], "p0", "--peer", ra)
	for i, n := range names {
		if i > 0 {
			d.cli("port", "add", n, "p0", "--peer", names[i-1]+":p1")
		}
		if i == last {
			d.cli("port", "add", n, "p1", "--peer", rb)
		} else {
			d.cli("port", "add", n, "p1")
		}
		d.cli("table", "add", n, "rules", "in_port=p0", "out_port=p1")
		d.cli("table", "add", n, "rules", "in_port=p1", "out_port=p0")
	}
	return names
}

// checkExact sends n datagrams A→B, entering edgenf on interface in, and
// checks every port counter on the way counted exactly n packets one way and
// nothing the other way, and the interface n more frames taken in.
func checkExact(t *testing.T, d *daemon, in string, names []string, send func() int, n int) {
	t.Helper()
	for _, c := range names {
		d.cli("stats", "reset", c)
	}
	var before, after map[string]counters
	d.json(&before, "stats", "iface", in)
	if got := send(); got != n {
		t.Fatalf("%d of %d datagrams arrived intact", got, n)
	}
	d.json(&after, "stats", "iface", in)
	for k, a := range after {
		if got := a.RxPackets - before[k].RxPackets; got != uint64(n) {
			t.Errorf("interface %s (%s): %d frames taken in, want %d", in, k, got, n)
		}
	}
	if len(after) == 0 {
		t.Errorf("interface %s: no counters", in)
	}
	st := d.portStats(names...)
	for _, c := range names {
		p0, p1 := st[c]["p0"], st[c]["p1"]
		if p0.RxPackets != uint64(n) || p1.TxPackets != uint64(n) || p0.TxPackets != 0 || p1.RxPackets != 0 || p0.DropPackets != 0 {
			t.Errorf("%s counters: p0 %+v p1 %+v, want %d forward and nothing back", c, p0, p1, n)
		}
		if p0.RxBytes != p1.TxBytes {
			t.Errorf("%s: %d bytes in, %d bytes out", c, p0.RxBytes, p1.TxBytes)
		}
	}
}

func testChain(t *testing.T, at nftest.Attachment, hooks ...string) {
	d := startDaemonFor(t, at)
	_, a, b, ra, rb := twoHosts(t)
	names := buildChain(t, d, ra, rb, hooks...)
	if at.TC != "" {
		nftest.CheckTCAttach(t, ra, at.TC)
	}
	c := ctx(t, 60*time.Second)
	if err := a.Ping(c, "198.18.0.2", 3); err != nil {
		t.Fatalf("ping A→B: %v", err)
	}
	if err := b.Ping(c, "198.18.0.1", 3); err != nil {
		t.Fatalf("ping B→A: %v", err)
	}
	const n = 10000
	checkExact(t, d, ra, names, func() int { return sendUDP(t, a, b, "198.18.0.2", 5001, n, 256) }, n)
}

func TestChainXDP(t *testing.T) {
	testenv.E2E(t)
	testChain(t, nftest.Attachments[0], "xdp", "xdp", "xdp")
}

func TestChainTC(t *testing.T) {
	testenv.E2E(t)
	for _, at := range nftest.TCAttachments {
		t.Run(at.Name, func(t *testing.T) { testChain(t, at, "tc", "tc", "tc") })
	}
}

// XDP and TC programs cannot tail-call each other: a direct peering between
// cubes of different hooks is refused with a clear error, and the way to mix
// them (a veth pair between them) works.
func TestChainMixedHooks(t *testing.T) {
	testenv.E2E(t)
	d := startDaemon(t)
	lab, a, b, ra, rb := twoHosts(t)
	d.cli("cube", "add", "x1", "portfwd", "--hook", "xdp")
	d.cli("cube", "add", "t1", "portfwd", "--hook", "tc")
	d.cli("port", "add", "x1", "p0", "--peer", ra)
	d.cli("port", "add", "x1", "p1")
	d.cli("port", "add", "t1", "p0")
	before := d.cli("get", "topology", "-o", "json")
	out, err := d.try("peer", "x1:p1", "t1:p0")
	if err == nil || !strings.Contains(out, "XDP and TC programs cannot call each other") || !strings.Contains(out, "peer") {
		t.Fatalf("mixed peering: err %v, output %q", err, out)
	}
	if after := d.cli("get", "topology", "-o", "json"); after != before {
		t.Fatalf("state changed by a refused request:\n%s\n%s", before, after)
	}

	// The supported way: a veth pair between the xdp and the tc cube.
	x, y, err := lab.RootVeth("mx", "my")
	if err != nil {
		t.Fatal(err)
	}
	d.cli("port", "set", "x1", "p1", "--peer", x)
	d.cli("port", "set", "t1", "p0", "--peer", y)
	d.cli("port", "add", "t1", "p1", "--peer", rb)
	for _, c := range []string{"x1", "t1"} {
		d.cli("table", "add", c, "rules", "in_port=p0", "out_port=p1")
		d.cli("table", "add", c, "rules", "in_port=p1", "out_port=p0")
	}
	if err := a.Ping(ctx(t, 30*time.Second), "198.18.0.2", 3); err != nil {
		t.Fatalf("ping across xdp→veth→tc: %v", err)
	}
	const n = 2000
	checkExact(t, d, ra, []string{"x1", "t1"}, func() int { return sendUDP(t, a, b, "198.18.0.2", 5002, n, 200) }, n)
}

func TestMonitorAttachCountsAndDetach(t *testing.T) {
	testenv.E2E(t)
	for _, at := range nftest.Attachments {
		t.Run(at.Name, func(t *testing.T) {
			hook := string(at.Hook)
			d := startDaemonFor(t, at)
			_, a, b, ra, rb := twoHosts(t)
			buildChain(t, d, ra, rb, hook, hook, hook)
			d.cli("cube", "add", "m1", "monitor", "--hook", hook)
			d.cli("attach", "m1", "c2:p0")
			const n = 3000
			if got := sendUDP(t, a, b, "198.18.0.2", 5003, n, 300); got != n {
				t.Fatalf("%d of %d datagrams through the monitor", got, n)
			}
			var rows []struct {
				Direction string `json:"direction"`
				Protocol  string `json:"protocol"`
				Packets   uint64 `json:"packets"`
				Bytes     uint64 `json:"bytes"`
			}
			d.json(&rows, "view", "m1", "counters")
			// Frames: 14 Ethernet + 20 IPv4 + 8 UDP + 300 payload.
			if len(rows) != 1 || rows[0].Direction != "ingress" || rows[0].Protocol != "ipv4-udp" ||
				rows[0].Packets != n || rows[0].Bytes != n*342 {
				t.Fatalf("monitor counters %+v, want %d ipv4-udp ingress packets of 342 bytes", rows, n)
			}
			d.cli("detach", "m1")
			if got := sendUDP(t, a, b, "198.18.0.2", 5004, 500, 300); got != 500 {
				t.Fatalf("after detach %d of 500 arrived", got)
			}
			d.json(&rows, "view", "m1", "counters")
			if rows[0].Packets != n {
				t.Fatalf("detached monitor still counting: %+v", rows)
			}
		})
	}
}
