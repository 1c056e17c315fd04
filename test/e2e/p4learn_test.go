package e2e

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/edgenf/edgenf/internal/netlab"
	"github.com/edgenf/edgenf/internal/testenv"
)

// learnRules makes the p4 cube's control plane a learning controller for
// examples/p4/l2learn.p4: each learn_t digest installs the source MAC into
// smac (no more digests for it) and dmac (forward to its port).
const learnRules = `{"learn": [
 {"digest": "learn_t", "table": "smac", "match": {"hdr.ethernet.srcAddr": "$srcAddr"}, "action": "NoAction"},
 {"digest": "learn_t", "table": "dmac", "match": {"hdr.ethernet.dstAddr": "$srcAddr"}, "action": "forward", "params": {"port": "$ingress_port"}}]}`

// threeHosts makes hosts a, b, c (198.18.0.1..3/24) with static neighbours
// and IPv6 off, so that the only frames are the test's.
func threeHosts(t *testing.T) (hosts []*netlab.Host, roots []string) {
	t.Helper()
	lab := netlab.NewT(t)
	for i, n := range []string{"a", "b", "c"} {
		h, r := quietHost(t, lab, n, fmt.Sprintf("198.18.0.%d/24", i+1))
		hosts, roots = append(hosts, h), append(roots, r)
	}
	for i, h := range hosts {
		for j, o := range hosts {
			if i != j {
				m, _ := o.MAC("eth0")
				must(t, h.SetNeigh("eth0", fmt.Sprintf("198.18.0.%d", j+1), m.String()))
			}
		}
	}
	return hosts, roots
}

// The l2learn example as a cube: unknown destinations are flooded, sources
// are learned through digests by the cube's control plane, then traffic is
// unicast; digests are listed and streamed, learned entries listed, and a
// packet-out leaves by the port its packet_out header names.
func TestP4LearningSwitchDigestsAndPacketOut(t *testing.T) {
	testenv.E2E(t)
	for _, hook := range []string{"xdp", "tc"} {
		t.Run(hook, func(t *testing.T) { learningSwitch(t, hook) })
	}
}

func learningSwitch(t *testing.T, hook string) {
	d := startDaemon(t)
	hosts, roots := threeHosts(t)
	a, b, c := hosts[0], hosts[1], hosts[2]
	prog, _ := filepath.Abs("../../examples/p4/l2learn.p4")
	d.cli("cube", "add", "sw", "p4", "--hook", hook, "--program", prog, "--config", learnRules)
	for i, r := range roots {
		d.cli("port", "add", "sw", fmt.Sprintf("p%d", i+1), "--peer", r, "--index", fmt.Sprint(i+1))
	}
	floodGroup(t, d, "sw")
	ma, _ := a.MAC("eth0")
	mb, _ := b.MAC("eth0")
	mc, _ := c.MAC("eth0")

	// a digest stream from the first event on (--from 0: buffered ones too)
	watch := exec.Command(filepath.Join(binDir, "edgenf"), "--socket", d.socket,
		"p4", "digest-watch", "sw", "--from", "0", "--count", "2", "--timeout", "30s", "-o", "json")
	var watchOut strings.Builder
	watch.Stdout, watch.Stderr = &watchOut, &watchOut
	must(t, watch.Start())
	watched := make(chan error, 1)
	go func() { watched <- watch.Wait() }()
	t.Cleanup(func() { watch.Process.Kill() })

	// a -> b: b is unknown, the frame is flooded (b and c's ports); a is learned
	if got := sendUDP(t, a, b, "198.18.0.2", 7300, 1, 64); got != 1 {
		t.Fatalf("flooded datagram: b got %d of 1", got)
	}
	st := d.portStats("sw")
	if st["sw"]["p2"].TxPackets != 1 || st["sw"]["p3"].TxPackets != 1 || st["sw"]["p1"].TxPackets != 0 {
		t.Fatalf("the first frame should be flooded to p2 and p3 only: %+v", st["sw"])
	}
	if n := slowCopies(t, d, "sw"); n != 0 {
		t.Fatalf("the flood's copy went through the daemon (%d): it should be made in the kernel", n)
	}
	waitFor(t, "a learned", func() bool { return len(learned(t, d)) == 2 })

	// b -> a: a is known (unicast to p1 only); b is learned
	if got := sendUDP(t, b, a, "198.18.0.1", 7301, 1, 64); got != 1 {
		t.Fatalf("b -> a: %d of 1", got)
	}
	waitFor(t, "b learned", func() bool { return len(learned(t, d)) == 4 })
	st = d.portStats("sw")
	if st["sw"]["p1"].TxPackets != 1 || st["sw"]["p3"].TxPackets != 1 {
		t.Fatalf("b -> a should be unicast to p1: %+v", st["sw"])
	}

	// from now on, a <-> b is unicast: c sees nothing more
	if got := sendUDP(t, a, b, "198.18.0.2", 7302, 200, 100); got != 200 {
		t.Fatalf("a -> b after learning: %d of 200", got)
	}
	if got := sendUDP(t, b, a, "198.18.0.1", 7303, 200, 100); got != 200 {
		t.Fatalf("b -> a after learning: %d of 200", got)
	}
	st = d.portStats("sw")
	if st["sw"]["p3"].TxPackets != 1 || st["sw"]["p2"].TxPackets != 201 || st["sw"]["p1"].TxPackets != 201 {
		t.Fatalf("after learning, traffic must be unicast: %+v", st["sw"])
	}

	// the learned entries, listed
	out := d.cli("p4", "learned", "sw")
	for _, want := range []string{"LearnIngress.smac", "LearnIngress.dmac", ma.String(), mb.String(), "port=1", "port=2"} {
		if !strings.Contains(out, want) {
			t.Errorf("p4 learned: no %q in\n%s", want, out)
		}
	}
	// the digests, listed and streamed: a then b, nothing else
	var digests []struct {
		Digest string            `json:"digest"`
		Port   int               `json:"port"`
		Fields map[string]string `json:"fields"`
	}
	d.json(&digests, "p4", "digests", "sw")
	if len(digests) != 2 || digests[0].Fields["srcAddr"] != ma.String() || digests[0].Fields["ingress_port"] != "1" ||
		digests[1].Fields["srcAddr"] != mb.String() || digests[1].Port != 2 || digests[0].Digest != "learn_t" {
		t.Fatalf("digests %+v", digests)
	}
	select {
	case err := <-watched:
		if err != nil {
			t.Fatalf("digest-watch: %v\n%s", err, watchOut.String())
		}
	case <-time.After(40 * time.Second):
		t.Fatal("digest-watch did not end")
	}
	lines := strings.Split(strings.TrimSpace(watchOut.String()), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], ma.String()) || !strings.Contains(lines[1], mb.String()) {
		t.Fatalf("digest-watch printed:\n%s", watchOut.String())
	}
	var sp map[string]float64
	d.json(&sp, "p4", "slowpath", "sw")
	if sp["digests"] != 2 || sp["digests_sent"] != 2 || sp["digests_lost"] != 0 || sp["learned"] != 4 {
		t.Fatalf("slow-path counters %v", sp)
	}

	// packet-in: a link-local control frame from c goes to the CPU port;
	// its packet_in header (ingress_port) is decoded and stripped
	lldp := append(append(append([]byte{0x01, 0x80, 0xc2, 0, 0, 0x0e}, mc...), 0x88, 0xcc), []byte("edgenf-lldp-test-payload-0123456789abcdef")...)
	sendRawFrom(t, c, lldp)
	var pins []struct {
		Port   int               `json:"port"`
		Fields map[string]string `json:"fields"`
		Frame  string            `json:"frame"`
		Length int               `json:"length"`
	}
	waitFor(t, "packet-in", func() bool {
		d.json(&pins, "p4", "packet-in", "sw")
		return len(pins) > 0
	})
	if len(pins) != 1 || pins[0].Port != 3 || pins[0].Fields["ingress_port"] != "3" ||
		pins[0].Frame != hex.EncodeToString(lldp) || pins[0].Length != len(lldp) {
		t.Fatalf("packet-in %+v, want from port 3: %x", pins, lldp)
	}

	// packet-out: a frame for c, sent out of p3 by the packet_out header
	toC := udpFrame(t, ma, mc, "198.18.0.1", "198.18.0.3", 7304, "packet-out")
	gotC := listenOnce(t, c, 7304)
	d.cli("p4", "packet-out", "sw", hex.EncodeToString(toC), "egress_port=3")
	if msg := <-gotC; msg != "packet-out" {
		t.Fatalf("packet-out to port 3: c got %q", msg)
	}
	// bad packet-outs are refused, precisely, and inject nothing
	for _, bad := range []struct {
		args []string
		want string
	}{
		{[]string{hex.EncodeToString(toC), "port=3"}, `no field "port"`},
		{[]string{hex.EncodeToString(toC), "egress_port=999"}, "does not fit in 9 bits"},
		{[]string{"0102", "egress_port=3"}, "2 bytes"},
		{[]string{"xyz"}, "not hex"},
	} {
		if out, err := d.try(append([]string{"p4", "packet-out", "sw"}, bad.args...)...); err == nil || !strings.Contains(out, bad.want) {
			t.Errorf("packet-out %v: %v\n%s (want %q)", bad.args, err, out, bad.want)
		}
	}
	var sp2 map[string]float64
	d.json(&sp2, "p4", "slowpath", "sw")
	if sp2["packet_outs"] != 1 {
		t.Errorf("packet_outs %v", sp2["packet_outs"])
	}
	// log_msg of the packet-out branch reached the daemon's log
	waitFor(t, "log_msg line", func() bool {
		var st map[string]float64
		d.json(&st, "p4", "slowpath", "sw")
		return st["logs_sent"] >= 1
	})
	d.stop()
	if !strings.Contains(d.log.String(), "packet-out to port 3") {
		t.Errorf("the daemon log has no log_msg line:\n%s", d.log.String())
	}

	// a restarted daemon lists what was learned (the entries stayed in the
	// pinned maps) and traffic stays unicast
	d.start()
	if n := len(learned(t, d)); n != 4 {
		t.Fatalf("after a restart, %d learned entries listed\n%s", n, d.cli("p4", "learned", "sw"))
	}
	d.cli("stats", "reset", "sw")
	if got := sendUDP(t, a, b, "198.18.0.2", 7305, 100, 100); got != 100 {
		t.Fatalf("a -> b after the restart: %d of 100", got)
	}
	if st := d.portStats("sw"); st["sw"]["p3"].TxPackets != 0 || st["sw"]["p2"].TxPackets != 100 {
		t.Fatalf("after the restart, traffic must stay unicast: %+v", st["sw"])
	}
}

func learned(t *testing.T, d *daemon) []json.RawMessage {
	var rows []json.RawMessage
	d.json(&rows, "p4", "learned", "sw")
	return rows
}

// floodGroup makes multicast group 1 (the program's flood group) the
// cube's ports 1, 2 and 3.
func floodGroup(t *testing.T, d *daemon, cube string) {
	t.Helper()
	d.cli("p4", "mc-mgrp-create", cube, "1")
	d.cli("p4", "mc-node-associate", cube, "1", "0", "1", "2", "3")
}
