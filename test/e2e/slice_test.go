package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/edgenf/edgenf/internal/testenv"
	"github.com/vishvananda/netlink"
)

// A slicer from a topology file: slice gold (UDP to port 7000) leads into a
// portfwd towards host b; the slicer shapes at b's interface.
const sliceYAML = `
cubes:
  - name: edge
    type: slicer
    hook: tc
    config:
      uplink: up
      egress:
        - {interface: %B%, rate_bps: 16000000}
    ports:
      - {name: up, peer: %A%}
      - {name: gold, peer: "pf:p0"}
      - {name: spare}
      - {name: spare2}
    tables:
      slices:
        - name: gold
          id: 1
          tenant: red
          port: gold
          rules:
            - {proto: udp, port: 7000}
          min_bps: 8000000
          priority: 1
  - name: pf
    type: portfwd
    hook: tc
    ports:
      - {name: p0}
      - {name: p1, peer: %B%}
    tables:
      rules:
        - {in_port: p0, out_port: p1}
        - {in_port: p1, out_port: p0}
  - name: pf2
    type: portfwd
    hook: tc
    tenant: red
    ports:
      - {name: p0}
      - {name: p1}
`

// The slice commands end to end: a slicer applied from a file, its slice's
// counters and HTB class after real traffic, slices created and deleted
// from the CLI (through a slicer port, and straight into a chain's entry),
// and bad slices refused naming the field, leaving the slices as they were.
func TestSliceCLIAndTopologyFile(t *testing.T) {
	testenv.E2E(t)
	d := startDaemon(t)
	_, a, b, ra, rb := twoHosts(t)
	file := filepath.Join(t.TempDir(), "slices.yaml")
	os.WriteFile(file, []byte(strings.NewReplacer("%A%", ra, "%B%", rb).Replace(sliceYAML)), 0o644)
	d.cli("apply", "-f", file)

	const n = 200
	if got := sendUDP(t, a, b, "198.18.0.2", 7000, n, 500); got != n {
		t.Fatalf("b received %d of %d datagrams through slice gold", got, n)
	}
	var got struct {
		Slicer  string `json:"slicer"`
		Shaping string `json:"shaping"`
		Status  struct {
			InPackets uint64 `json:"in_packets"`
			Class     string `json:"class"`
			Egress    []struct {
				Packets uint64 `json:"packets"`
			} `json:"egress"`
		} `json:"status"`
	}
	d.json(&got, "slice", "get", "gold")
	if got.Slicer != "edge" || got.Shaping != "htb" || got.Status.InPackets != n || got.Status.Class != "ed00:101" ||
		len(got.Status.Egress) != 1 || got.Status.Egress[0].Packets < n {
		t.Fatalf("slice get gold: %+v", got)
	}
	if out := d.cli("slice", "get", "gold"); !strings.Contains(out, "htb (probed: sch_") || !strings.Contains(out, "priority 1, class ed00:101") || !strings.Contains(out, "min") {
		t.Fatalf("slice get gold (table):\n%s", out)
	}
	// top --slices: gold's rate while traffic flows through it
	top := make(chan string)
	go func() {
		out, err := d.try("top", "--slices", "--interval", "1s", "--count", "3")
		if err != nil {
			out = "error: " + err.Error() + "\n" + out
		}
		top <- out
	}()
	var topOut string
	for topOut == "" {
		select {
		case topOut = <-top:
		case <-time.After(300 * time.Millisecond):
			sendUDP(t, a, b, "198.18.0.2", 7000, 100, 500)
		}
	}
	busy := false
	for _, line := range strings.Split(topOut, "\n") {
		if f := strings.Fields(line); len(f) == 10 && f[0] == "edge" && f[1] == "gold" && f[2] == "red" && f[3] != "0" {
			busy = true
		}
	}
	if !strings.Contains(topOut, "SLICER  SLICE  TENANT  IN PPS") || !busy {
		t.Fatalf("top --slices shows no traffic in slice gold:\n%s", topOut)
	}
	d.json(&got, "slice", "get", "gold")
	n0 := got.Status.InPackets // what top's traffic added
	lk, err := netlink.LinkByName(rb)
	if err != nil {
		t.Fatal(err)
	}
	classes, _ := netlink.ClassList(lk, netlink.MakeHandle(0xed00, 0))
	var gold *netlink.HtbClass
	for _, c := range classes {
		if hc, ok := c.(*netlink.HtbClass); ok && hc.Handle == netlink.MakeHandle(0xed00, 0x101) {
			gold = hc
		}
	}
	if gold == nil || gold.Rate != 1e6 || gold.Prio != 1 {
		t.Fatalf("HTB class of slice gold on %s: %+v", rb, gold)
	}

	d.cli("slice", "create", "silver", "--on", "edge", "--port", "spare", "--rule", "dst=198.19.0.0/24", "--rule", "proto=udp,port=7001",
		"--rate", "4mbit", "--min", "2mbit", "--priority", "3")
	d.cli("slice", "create", "iron", "--on", "edge", "--tenant", "red", "--chain", "pf2:p0", "--rule", "dst=198.19.1.0/24")
	list := d.cli("slice", "list")
	if !strings.Contains(list, "silver") || !strings.Contains(list, "ed00:102") || !strings.Contains(list, "pf2:p0") {
		t.Fatalf("slice list:\n%s", list)
	}
	for _, bad := range []struct {
		args []string
		want []string
	}{
		{[]string{"--rule", "dst=198.19.0.1/24"}, []string{"rules[0].dst", "host bits"}},
		{[]string{"--rule", "proto=udp,port=7000"}, []string{"rules[0]", "already slice gold's"}},
		{[]string{"--min", "10mbit"}, []string{"min_bps", "admission refused", "20Mbit/s", "16Mbit/s"}},
		{[]string{"--rule", "teid=9-3"}, []string{"rules[0].teid", "ends before it starts"}},
		{[]string{"--port", "nope"}, []string{"port", `no port "nope"`}},
		{[]string{"--chain", "pf:p0"}, []string{"slices[bronze].chain", "peered with"}},
		{[]string{"--chain", "pf2:p0"}, []string{"chain", "already slice iron's chain entry"}},
		{[]string{"--chain", "pf2:p1"}, []string{"slices[bronze].chain", "a slice leads only into its own tenant's cubes"}},
		{[]string{"--chain", "pf2:p1", "--port", "spare2"}, []string{"chain", "give port or chain"}},
	} {
		args := append([]string{"slice", "create", "bronze", "--on", "edge", "--port", "spare2", "--replace"}, bad.args...)
		if bad.args[0] == "--port" || bad.args[0] == "--chain" {
			args = append([]string{"slice", "create", "bronze", "--on", "edge", "--replace"}, bad.args...)
		}
		out, err := d.try(args...)
		if err == nil {
			t.Fatalf("slice create %v accepted:\n%s", bad.args, out)
		}
		for _, w := range bad.want {
			if !strings.Contains(out, w) {
				t.Errorf("slice create %v: error does not say %q:\n%s", bad.args, w, out)
			}
		}
	}
	if after := d.cli("slice", "list"); after != list || strings.Contains(after, "bronze") {
		t.Fatalf("refused slices changed the slices:\n%s\nwas\n%s", after, list)
	}
	// the daemon dies: the slice keeps classifying, shaping and counting;
	// restarted, it picks the slices up as they were
	d.kill()
	if got := sendUDP(t, a, b, "198.18.0.2", 7000, n, 500); got != n {
		t.Fatalf("daemon dead: b received %d of %d datagrams through slice gold", got, n)
	}
	d.start()
	d.json(&got, "slice", "get", "gold")
	if got.Status.InPackets != n0+n || got.Status.Class != "ed00:101" || len(got.Status.Egress) != 1 || got.Status.Egress[0].Packets < n0+n {
		t.Fatalf("slice get gold after a restart: %+v", got)
	}
	d.cli("slice", "delete", "silver")
	if out, err := d.try("slice", "get", "silver"); err == nil || !strings.Contains(out, `no slice named "silver"`) {
		t.Fatalf("deleted slice: %v\n%s", err, out)
	}
}
