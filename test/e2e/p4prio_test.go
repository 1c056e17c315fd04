package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/edgenf/edgenf/internal/testenv"
	"github.com/vishvananda/netlink"
)

// A P4 program at XDP that sets standard_metadata.priority: its frames
// leave through the skb path (verdict.h: enf_out) and meet the egress
// qdisc with skb->priority set, so an HTB tree with the slicer's priority
// bands (ed00:8+band) puts them in band 0; the frames of a program that
// sets none are redirected at XDP and meet no qdisc.
func TestP4PriorityIsRealAtXDP(t *testing.T) {
	testenv.E2E(t)
	d := startDaemon(t)
	_, a, b, ra, rb := twoHosts(t)
	urgent := urgentPortfwd(t)
	plain, _ := filepath.Abs("../../examples/p4/portfwd.p4")
	d.cli("cube", "add", "sw", "p4", "--hook", "xdp", "--program", urgent)
	d.cli("port", "add", "sw", "p0", "--peer", ra, "--index", "0")
	d.cli("port", "add", "sw", "p1", "--peer", rb, "--index", "1")
	d.cli("p4", "table-add", "sw", "fwd", "forward", "0", "=>", "1")
	d.cli("p4", "table-add", "sw", "fwd", "forward", "1", "=>", "0")

	// rb's egress: HTB with a default class ed00:2 and band 0, ed00:8
	lk, err := netlink.LinkByName(rb)
	if err != nil {
		t.Fatal(err)
	}
	root := netlink.NewHtb(netlink.QdiscAttrs{LinkIndex: lk.Attrs().Index, Handle: netlink.MakeHandle(0xed00, 0), Parent: netlink.HANDLE_ROOT})
	root.Defcls = 2
	if err := netlink.QdiscReplace(root); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { netlink.QdiscDel(root) })
	for _, minor := range []uint16{2, 8} {
		c := netlink.NewHtbClass(netlink.ClassAttrs{LinkIndex: lk.Attrs().Index, Parent: netlink.MakeHandle(0xed00, 0),
			Handle: netlink.MakeHandle(0xed00, minor)}, netlink.HtbClassAttrs{Rate: 1e9, Ceil: 1e9, Buffer: 1 << 20, Cbuffer: 1 << 20})
		if err := netlink.ClassAdd(c); err != nil {
			t.Fatal(err)
		}
	}
	classPackets := func(minor uint16) uint64 {
		t.Helper()
		cs, err := netlink.ClassList(lk, netlink.MakeHandle(0xed00, 0))
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range cs {
			if c.Attrs().Handle == netlink.MakeHandle(0xed00, minor) && c.Attrs().Statistics != nil {
				return uint64(c.Attrs().Statistics.Basic.Packets)
			}
		}
		return 0
	}

	const n = 500
	b0, d0 := classPackets(8), classPackets(2)
	if got := sendUDP(t, a, b, "198.18.0.2", 8101, n, 200); got != n {
		t.Fatalf("%d of %d datagrams through the urgent program", got, n)
	}
	if band, def := classPackets(8)-b0, classPackets(2)-d0; band < n || def >= n {
		t.Fatalf("priority 7 at XDP: %d frames in band 0 (ed00:8), %d in the default class; want the %d datagrams in band 0", band, def, n)
	}
	if st := d.portStats("sw"); st["sw"]["p1"].TxPackets < n {
		t.Fatalf("the cube counted %d frames out of p1", st["sw"]["p1"].TxPackets)
	}

	// The same program without the priority: redirected at XDP, its
	// frames meet no qdisc at all.
	d.cli("cube", "set", "sw", "--program", plain)
	b0, d0 = classPackets(8), classPackets(2)
	if got := sendUDP(t, a, b, "198.18.0.2", 8102, n, 200); got != n {
		t.Fatalf("%d of %d datagrams through the plain program", got, n)
	}
	if band, def := classPackets(8)-b0, classPackets(2)-d0; band != 0 || def >= n {
		t.Fatalf("no priority: %d frames in band 0, %d in the default class; want them redirected at XDP, past the qdisc", band, def)
	}
}

// urgentPortfwd writes examples/p4/portfwd.p4 with every frame given
// standard_metadata.priority 7 (band 0 of a slicer's egress tree) and
// returns its path.
func urgentPortfwd(t *testing.T) string {
	t.Helper()
	src, err := os.ReadFile("../../examples/p4/portfwd.p4")
	if err != nil {
		t.Fatal(err)
	}
	urgent := filepath.Join(t.TempDir(), "urgent.p4")
	if err := os.WriteFile(urgent, []byte(strings.Replace(string(src), "fwd.apply();", "standard_metadata.priority = 7;\n        fwd.apply();", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	return urgent
}
