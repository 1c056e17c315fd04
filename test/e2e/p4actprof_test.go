package e2e

import (
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/edgenf/edgenf/internal/netlab"
	"github.com/edgenf/edgenf/internal/testenv"
)

// The ECMP router of examples/p4/ecmp.p4 as a cube, configured with the
// BMv2-style CLI verbs: a route to a group of two next hops spreads flows
// over both ports and keeps each flow on one; a route to one member
// follows the member when it changes. Bad members, groups and references
// are refused and change nothing, and everything survives a daemon crash.
func TestP4ActionSelectorECMP(t *testing.T) {
	testenv.E2E(t)
	for _, hook := range []string{"xdp", "tc"} {
		t.Run(hook, func(t *testing.T) { ecmpSelector(t, hook) })
	}
}

func ecmpSelector(t *testing.T, hook string) {
	d := startDaemon(t)
	lab := netlab.NewT(t)
	hosts := map[string]*netlab.Host{}
	roots := map[string]string{}
	for i, n := range []string{"c", "a", "b", "x"} {
		hosts[n], roots[n] = quietHost(t, lab, n, fmt.Sprintf("198.18.0.%d/24", i+1))
	}
	mac := net.HardwareAddr{2, 0, 0, 0, 0, 1}
	prog, _ := filepath.Abs("../../examples/p4/ecmp.p4")
	d.cli("cube", "add", "r1", "p4", "--program", prog, "--hook", hook)
	for i, n := range []string{"a", "b", "x", "c"} {
		d.cli("port", "add", "r1", "p"+n, "--peer", roots[n], "--index", fmt.Sprint(i+1))
	}
	// members 0, 1, 2 (handles handed out in order), group 0 = {0, 1}
	for _, args := range [][]string{
		{"act-prof-create-member", "r1", "next_hops", "forward", "0xf1", "0xa1", "1"},
		{"act-prof-create-member", "r1", "next_hops", "forward", "0xf1", "0xa2", "2"},
		{"act_prof_create_member", "r1", "next_hops", "forward", "0xf1", "0xa3", "3"},
		{"act-prof-create-group", "r1", "next_hops"},
		{"act-prof-add-member-to-group", "r1", "next_hops", "0", "0"},
		{"act-prof-add-member-to-group", "r1", "next_hops", "1", "0"},
		{"table-indirect-add-with-group", "r1", "routes", "198.19.0.0/16", "=>", "0"},
		{"table_indirect_add", "r1", "routes", "198.20.0.0/16", "=>", "2"},
	} {
		d.cli(append([]string{"p4"}, args...)...)
	}
	dump := d.cli("p4", "act-prof-dump", "r1")
	for _, want := range []string{"member  0", "group   0", "0 1"} {
		if !strings.Contains(strings.Join(strings.Fields(dump), " "), strings.Join(strings.Fields(want), " ")) {
			t.Fatalf("act-prof-dump lacks %q:\n%s", want, dump)
		}
	}
	entries := d.cli("p4", "table-dump", "r1")
	if !strings.Contains(entries, "group 0") || !strings.Contains(entries, "member 2") {
		t.Fatalf("table-dump:\n%s", entries)
	}

	// bad input: precise errors, nothing changes
	for _, bad := range []struct {
		args []string
		want string
	}{
		{[]string{"act-prof-delete-member", "r1", "next_hops", "0"}, "in use by group 0"},
		{[]string{"act-prof-delete-member", "r1", "next_hops", "2"}, "in use by entry FwdIngress.routes"},
		{[]string{"act-prof-delete-group", "r1", "next_hops", "0"}, "in use by entry FwdIngress.routes"},
		{[]string{"table-indirect-add", "r1", "routes", "198.21.0.0/16", "=>", "9"}, "has no member 9"},
		{[]string{"table-indirect-add-with-group", "r1", "routes", "198.21.0.0/16", "=>", "7"}, "has no group 7"},
		{[]string{"table-add", "r1", "routes", "forward", "198.21.0.0/16", "=>", "1", "2", "3"}, "give a member or a group"},
		{[]string{"act-prof-add-member-to-group", "r1", "next_hops", "9", "0"}, "has no member 9"},
		{[]string{"act-prof-add-member-to-group", "r1", "next_hops", "0", "0"}, "already in group 0"},
		{[]string{"act-prof-create-member", "r1", "nope", "forward", "1", "2", "3"}, `no action profile "nope"`},
		{[]string{"act-prof-create-member", "r1", "next_hops", "forward", "1", "2", "3", "--id", "0"}, `already has an entry "FwdIngress.next_hops 0"`},
		{[]string{"act-prof-create-member", "r1", "next_hops", "forward", "0xf1", "0xa1", "0x1ff1"}, "port"},
	} {
		if out, err := d.try(append([]string{"p4"}, bad.args...)...); err == nil || !strings.Contains(out, bad.want) {
			t.Fatalf("edgenf p4 %s: %v\n%s (want %q)", strings.Join(bad.args, " "), err, out, bad.want)
		}
	}
	if after := d.cli("p4", "act-prof-dump", "r1"); after != dump {
		t.Fatalf("profiles changed by refused commands:\n%s\nthen\n%s", dump, after)
	}
	if after := d.cli("p4", "table-dump", "r1"); after != entries {
		t.Fatalf("entries changed by refused commands:\n%s\nthen\n%s", entries, after)
	}

	// 64 flows to the group's route: both next hops carry some, each
	// flow one; 10 packets to the member's route: all out of port 3
	send := func() {
		var frames [][]byte
		for i := 1; i <= 64; i++ {
			frames = append(frames, udpFrame(t, mac, mac, "198.18.0.1", fmt.Sprintf("198.19.0.%d", i), 5000, "ecmp"))
		}
		sendRawFrom(t, hosts["c"], frames...)
	}
	split := func(before map[string]counters) (a, b uint64) {
		after := waitTx(t, d, "r1", before, 64, "pa", "pb")
		return after["pa"].TxPackets - before["pa"].TxPackets, after["pb"].TxPackets - before["pb"].TxPackets
	}
	flows := func() (a, b uint64) {
		before := d.portStats("r1")["r1"]
		send()
		return split(before)
	}
	a1, b1 := flows()
	if a1 == 0 || b1 == 0 {
		t.Fatalf("64 flows over group {1, 2}: %d out of port 1, %d out of port 2", a1, b1)
	}
	member := func(port string) {
		before := d.portStats("r1")["r1"]
		for range 10 {
			sendRawFrom(t, hosts["c"], udpFrame(t, mac, mac, "198.18.0.1", "198.20.0.1", 5000, "ecmp"))
		}
		waitTx(t, d, "r1", before, 10, port)
	}
	member("px")

	// a crash: the data path goes on, the restarted daemon has it all
	before := d.portStats("r1")["r1"]
	d.kill()
	send()
	d.start()
	if a, b := split(before); a != a1 || b != b1 {
		t.Fatalf("flows while the daemon was down: %d/%d, before %d/%d", a, b, a1, b1)
	}
	if after := d.cli("p4", "act-prof-dump", "r1"); after != dump {
		t.Fatalf("profiles after a restart:\n%s\nbefore:\n%s", after, dump)
	}
	if a, b := flows(); a != a1 || b != b1 {
		t.Fatalf("flows after a restart: %d/%d, before %d/%d (each flow keeps its next hop)", a, b, a1, b1)
	}
	// the member changes: the route follows; member 1 leaves the group: all flows take member 0
	d.cli("p4", "act-prof-modify-member", "r1", "next_hops", "forward", "2", "0xf1", "0xa4", "4")
	member("pc")
	d.cli("p4", "act-prof-remove-member-from-group", "r1", "next_hops", "1", "0")
	if a, b := flows(); a != 64 || b != 0 {
		t.Fatalf("group {1}: %d out of port 1, %d out of port 2", a, b)
	}
	d.cli("p4", "table-delete", "r1", "routes", "198.20.0.0/16")
	d.cli("p4", "act-prof-delete-member", "r1", "next_hops", "2")
}

// waitTx waits until the ports of a cube sent n more packets than before,
// and returns the counters.
func waitTx(t *testing.T, d *daemon, cube string, before map[string]counters, n uint64, ports ...string) map[string]counters {
	t.Helper()
	var after map[string]counters
	for range 100 {
		after = d.portStats(cube)[cube]
		var sent uint64
		for _, p := range ports {
			sent += after[p].TxPackets - before[p].TxPackets
		}
		if sent >= n {
			return after
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("ports %v of %s sent fewer than %d packets: before %v, after %v", ports, cube, n, before, after)
	return nil
}
