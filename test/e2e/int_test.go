package e2e

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/edgenf/edgenf/internal/netlab"
	"github.com/edgenf/edgenf/internal/testenv"
)

// intFrame is a UDP datagram to the INT port (5555) carrying an INT header
// (switch id 9, target port 7000, delay so far) after the UDP header, from
// a to dst (198.18.0.3, the sink side).
func intFrame(t *testing.T, a, b *netlab.Host, delayUS uint32, seq int) []byte {
	t.Helper()
	ma, _ := a.MAC("eth0")
	mb, _ := b.MAC("eth0")
	hdr := make([]byte, 12)
	binary.BigEndian.PutUint32(hdr[0:], 9)
	binary.BigEndian.PutUint16(hdr[4:], 7000)
	binary.BigEndian.PutUint32(hdr[8:], delayUS)
	return udpFrame(t, ma, mb, "198.18.0.1", "198.18.0.3", 5555, string(hdr)+fmt.Sprintf("payload-%03d", seq))
}

// htbPackets reads the packets counted by each class of the HTB qdisc on
// dev (tc -s class show), by class id.
func htbPackets(t *testing.T, dev string) map[string]uint64 {
	t.Helper()
	out, err := exec.Command("tc", "-s", "class", "show", "dev", dev).CombinedOutput()
	if err != nil {
		t.Fatalf("tc -s class show dev %s: %v\n%s", dev, err, out)
	}
	got := map[string]uint64{}
	re := regexp.MustCompile(`(?s)class htb (\S+) .*? Sent \d+ bytes (\d+) pkt`)
	for _, m := range re.FindAllStringSubmatch(string(out), -1) {
		n, _ := strconv.ParseUint(m[2], 10, 64)
		got[m[1]] = n
	}
	return got
}

// The INT use case of seed 000 end to end at TC, with the int_telemetry
// example: datagrams whose accumulated delay is over the threshold leave
// towards the sink with the priority raised to 7, which is real
// skb->priority: they are counted in the most urgent band's class of the
// egress interface's HTB tree, the others in its default class; their
// copies, as they arrived, reach the collector's interface (the mirror
// port); the sink gets every datagram with the INT header removed, on its
// real UDP port.
func TestINTPriorityAndMirrorTC(t *testing.T) {
	testenv.E2E(t)
	d := startDaemon(t)
	lab := netlab.NewT(t)
	a, ra := quietHost(t, lab, "a", "198.18.0.1/24")
	b, rb := quietHost(t, lab, "b", "198.18.0.3/24")
	c, rc := quietHost(t, lab, "c", "198.18.0.4/24")
	// the egress tree a slicer builds on its egress interfaces (see
	// internal/nf/slicer): default class ed00:2, band b in ed00:8+b
	for _, args := range [][]string{
		{"qdisc", "add", "dev", rb, "root", "handle", "ed00:", "htb", "default", "2"},
		{"class", "add", "dev", rb, "parent", "ed00:", "classid", "ed00:1", "htb", "rate", "1gbit"},
		{"class", "add", "dev", rb, "parent", "ed00:1", "classid", "ed00:2", "htb", "rate", "8kbit", "ceil", "1gbit", "prio", "7"},
		{"class", "add", "dev", rb, "parent", "ed00:1", "classid", "ed00:8", "htb", "rate", "8kbit", "ceil", "1gbit", "prio", "0"},
	} {
		if out, err := exec.Command("tc", args...).CombinedOutput(); err != nil {
			t.Fatalf("tc %v: %v\n%s", args, err, out)
		}
	}
	prog, _ := filepath.Abs("../../examples/p4/int_telemetry.p4")
	d.cli("cube", "add", "int1", "p4", "--hook", "tc", "--program", prog)
	d.cli("port", "add", "int1", "p1", "--peer", ra, "--index", "1")
	d.cli("port", "add", "int1", "p3", "--peer", rb, "--index", "3")
	d.cli("port", "add", "int1", "p4", "--peer", rc, "--index", "4")
	d.cli("p4", "table-add", "int1", "ipv4_fwd", "forward", "198.18.0.3", "=>", "3")
	d.cli("p4", "table-add", "int1", "int_sink", "strip_int", "3")
	d.cli("p4", "table-set-default", "int1", "int_config", "set_int_params", "7", "1000", "200")
	d.cli("p4", "mirroring-add", "int1", "200", "4")

	sink, collector := openMonitor(t, b), openMonitor(t, c)
	const slow, fast = 20, 30
	var frames, slowFrames [][]byte
	for i := range slow + fast {
		delay := uint32(10) // µs so far: under the 1000 µs threshold
		if i%5 < 2 {
			delay = 5000 // over it
		}
		f := intFrame(t, a, b, delay, i)
		frames = append(frames, f)
		if delay > 1000 {
			slowFrames = append(slowFrames, f)
		}
	}
	before := htbPackets(t, rb)
	sendRawFrom(t, a, frames...)
	ports := sink.udpFrom("198.18.0.1", len(frames))
	if len(ports) != len(frames) {
		t.Fatalf("the sink received %d of %d datagrams", len(ports), len(frames))
	}
	for i, p := range ports {
		if p != 7000 {
			t.Fatalf("datagram %d reached the sink on port %d, want 7000 (INT stripped)", i, p)
		}
	}
	mirrored := collector.framesFrom("198.18.0.1", len(slowFrames))
	if len(mirrored) != len(slowFrames) {
		t.Fatalf("the collector received %d copies, want %d (the datagrams over the threshold)", len(mirrored), len(slowFrames))
	}
	for i, f := range mirrored {
		if string(f) != string(slowFrames[i]) {
			t.Fatalf("copy %d at the collector is\n%x\nwant the datagram as it arrived\n%x", i, f, slowFrames[i])
		}
	}
	if extra := collector.framesFrom("198.18.0.1", 0); len(extra) != 0 {
		t.Fatalf("the collector received %d copies too many", len(extra))
	}
	after := htbPackets(t, rb)
	if got := after["ed00:8"] - before["ed00:8"]; got != uint64(len(slowFrames)) {
		t.Errorf("band 0 (ed00:8) counted %d packets, want the %d raised to priority 7 (classes: %v)", got, len(slowFrames), after)
	}
	if got := after["ed00:2"] - before["ed00:2"]; got != uint64(len(frames)-len(slowFrames)) {
		t.Errorf("the default class counted %d packets, want the %d under the threshold (classes: %v)", got, len(frames)-len(slowFrames), after)
	}
}

// Two INT switches in a chain (7, transit; 8, the sink), each reporting
// its hop to the daemon: per-switch hop and path latency histograms reach
// Prometheus (/metrics) and InfluxDB, one observation per datagram and
// hop, the path latency carrying the delay the datagrams came with.
func TestINTHopLatencyToPrometheusAndInflux(t *testing.T) {
	testenv.E2E(t)
	x := startInfluxd(t)
	x.query(t, "", `CREATE DATABASE "edge"`)
	addr := freeAddr(t)
	d := startDaemon(t, "-listen", addr, "-tokens", tokenFile(t), "-influx-url", x.url, "-influx-db", "edge", "-influx-interval", "1s")
	lab := netlab.NewT(t)
	a, ra := quietHost(t, lab, "a", "198.18.0.1/24")
	b, rb := quietHost(t, lab, "b", "198.18.0.3/24")
	prog, _ := filepath.Abs("../../examples/p4/int_telemetry.p4")
	for _, sw := range []struct {
		name, id string
	}{{"int1", "7"}, {"int2", "8"}} {
		d.cli("cube", "add", sw.name, "p4", "--hook", "tc", "--program", prog)
		d.cli("p4", "table-add", sw.name, "ipv4_fwd", "forward", "198.18.0.3", "=>", "3")
		// a threshold no datagram reaches: no mirroring here
		d.cli("p4", "table-set-default", sw.name, "int_config", "set_int_params", sw.id, "1000000", "200")
	}
	d.cli("port", "add", "int1", "p1", "--peer", ra, "--index", "1")
	d.cli("port", "add", "int2", "p1", "--index", "1")
	d.cli("port", "add", "int1", "p3", "--peer", "int2:p1", "--index", "3")
	d.cli("port", "add", "int2", "p3", "--peer", rb, "--index", "3")
	d.cli("p4", "table-add", "int2", "int_sink", "strip_int", "3")

	sink := openMonitor(t, b)
	const n = 40
	var frames [][]byte
	for i := range n {
		frames = append(frames, intFrame(t, a, b, 10, i)) // 10 µs of delay so far
	}
	sendRawFrom(t, a, frames...)
	if ports := sink.udpFrom("198.18.0.1", n); len(ports) != n || ports[0] != 7000 {
		t.Fatalf("the sink received %d of %d datagrams (ports %v)", len(ports), n, ports)
	}
	count := func(metrics, name, cube, sw string) (float64, bool) {
		re := regexp.MustCompile(`(?m)^edgenf_p4_` + name + `\{cube="` + cube + `"[^}]*switch_id="` + sw + `"[^}]*\} (\S+)$`)
		m := re.FindStringSubmatch(metrics)
		if m == nil {
			return 0, false
		}
		v, err := strconv.ParseFloat(m[1], 64)
		return v, err == nil
	}
	var metrics string
	if msg := eventually(20*time.Second, func() string {
		metrics = scrapeTCP(t, "http://"+addr, adminToken)
		for _, c := range [][2]string{{"int1", "7"}, {"int2", "8"}} {
			for _, h := range []string{"int_hop_latency_seconds_count", "int_path_latency_seconds_count"} {
				if v, ok := count(metrics, h, c[0], c[1]); !ok || v != n {
					return fmt.Sprintf("%s of switch %s: %v, want %d", h, c[1], v, n)
				}
			}
		}
		return ""
	}); msg != "" {
		t.Fatalf("%s\n%s", msg, grep(metrics, "edgenf_p4_int"))
	}
	if v, _ := count(metrics, "int_path_latency_seconds_sum", "int2", "8"); v < n*10e-6 {
		t.Errorf("switch 8's path latency sums to %v s, want at least the %v s the datagrams came with", v, n*10e-6)
	}
	if msg := eventually(30*time.Second, func() string {
		res := x.query(t, "edge", `SELECT last("int_hop_latency_seconds_count"), last("int_path_latency_seconds_sum") FROM "edgenf_p4" GROUP BY "switch_id"`)
		got := map[string]int64{}
		for _, s := range res.Series {
			v, _ := s.Values[0][1].(json.Number).Int64()
			got[s.Tags["switch_id"]] = v
			if s.Tags["switch_id"] == "8" {
				if sum, _ := s.Values[0][2].(json.Number).Float64(); sum < n*10e-6 {
					return fmt.Sprintf("switch 8's path latency in InfluxDB sums to %v", sum)
				}
			}
		}
		if got["7"] != n || got["8"] != n {
			return fmt.Sprintf("hop latency observations in InfluxDB by switch: %v, want %d each", got, n)
		}
		return ""
	}); msg != "" {
		t.Fatal(msg)
	}
}
