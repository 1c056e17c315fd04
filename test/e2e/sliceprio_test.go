package e2e

import (
	"fmt"
	"testing"

	"github.com/edgenf/edgenf/internal/testenv"
	"github.com/vishvananda/netlink"
)

// A tenant's P4 program in a slice's chain that sets
// standard_metadata.priority = 7 cannot lift the slice's frames out of the
// slice's HTB class into priority band 0 (ed00:8), where they would take
// spare capacity ahead of every other slice: they stay in the slice's class
// (ed00:101). The same program outside any slice still gets band 0
// (TestP4PriorityIsRealAtXDP, int_test).
func TestSliceClassHoldsAgainstAP4Priority(t *testing.T) {
	testenv.E2E(t)
	d := startDaemon(t)
	_, a, b, ra, rb := twoHosts(t)
	d.cli("cube", "add", "sw", "p4", "--hook", "tc", "--program", urgentPortfwd(t))
	d.cli("port", "add", "sw", "p0", "--index", "0")
	d.cli("port", "add", "sw", "p1", "--peer", rb, "--index", "1")
	d.cli("p4", "table-add", "sw", "fwd", "forward", "0", "=>", "1")
	d.cli("p4", "table-add", "sw", "fwd", "forward", "1", "=>", "0")
	d.cli("cube", "add", "edge", "slicer", "--hook", "tc")
	d.cli("port", "add", "edge", "up", "--peer", ra)
	d.cli("cube", "set", "edge", "--config", fmt.Sprintf(`{"uplink":"up","egress":[{"interface":%q,"rate_bps":100000000}]}`, rb))
	d.cli("slice", "create", "bronze", "--on", "edge", "--id", "1", "--chain", "sw:p0", "--min", "8mbit", "--priority", "7")
	d.cli("cube", "set", "edge", "--config", fmt.Sprintf(`{"uplink":"up","default":"bronze","egress":[{"interface":%q,"rate_bps":100000000}]}`, rb))

	lk, err := netlink.LinkByName(rb)
	if err != nil {
		t.Fatal(err)
	}
	classPackets := func() map[uint16]uint64 {
		t.Helper()
		cs, err := netlink.ClassList(lk, netlink.MakeHandle(0xed00, 0))
		if err != nil {
			t.Fatal(err)
		}
		out := map[uint16]uint64{}
		for _, c := range cs {
			if c.Attrs().Statistics != nil {
				_, minor := netlink.MajorMinor(c.Attrs().Handle)
				out[minor] = uint64(c.Attrs().Statistics.Basic.Packets)
			}
		}
		return out
	}
	const n = 300
	before := classPackets()
	if got := sendUDP(t, a, b, "198.18.0.2", 8103, n, 200); got != n {
		t.Fatalf("%d of %d datagrams through slice bronze's chain", got, n)
	}
	after := classPackets()
	if slice, band := after[0x101]-before[0x101], after[8]-before[8]; slice < n || band != 0 {
		t.Fatalf("slice bronze (priority 7, ed00:101) counted %d frames and band 0 (ed00:8) %d; want the %d datagrams in the slice's class, none in band 0 (classes %v)", slice, band, n, after)
	}
}
