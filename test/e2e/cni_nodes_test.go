package e2e

import (
	"encoding/json"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vishvananda/netlink"

	"github.com/edgenf/edgenf/internal/netlab"
	"github.com/edgenf/edgenf/internal/testenv"
)

// exampleDir is the two-node site of docs/kubernetes.md, as the cluster's
// ConfigMaps hold it.
const exampleDir = "../../deploy/kubernetes/example"

// Multi-node chains (docs/kubernetes.md), run on the documented example:
// every node runs each tenant's bridge and router; the routers of a tenant
// reach each other over the node network through the tenant's own overlay
// (a VXLAN, one VNI per tenant) and route the other node's pod prefix
// there. The two "nodes" here are namespaces, each with its own edgenfd
// (own bpffs root and socket, the example's topology as -apply-file, like
// the DaemonSet's) and its own CNI runtime (the example's conflist), joined
// by a veth "node network".
func TestCNITwoNodes(t *testing.T) {
	testenv.E2E(t)
	lab := netlab.NewT(t)
	var nodes [2]*netlab.Host
	for i, name := range []string{"na", "nb"} {
		var err error
		if nodes[i], err = lab.Host(name); err != nil {
			t.Fatal(err)
		}
	}
	nodeIP := [2]string{"198.18.200.1", "198.18.200.2"}
	if err := lab.Link(nodes[0], "eth0", nodes[1], "eth0", []string{nodeIP[0] + "/24"}, []string{nodeIP[1] + "/24"}); err != nil {
		t.Fatal(err)
	}
	type tenantPlan struct {
		name string
		vni  int       // also the third group of its pods' IPv6 prefixes
		pods [2]string // pod subnet (/24) on each node, as the example has them
	}
	plans := []tenantPlan{{"red", 100, [2]string{"198.18.20", "198.18.21"}}, {"blue", 200, [2]string{"198.18.30", "198.18.31"}}}
	var runtimes [2]*cniRuntime
	var daemons [2]*daemon
	pods := map[string][2][]*pod{} // tenant → node → pods
	for i, node := range nodes {
		nl := node.Netlink()
		eth0, err := nl.LinkByName("eth0")
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range plans {
			// the node's provisioning: the tenant's overlay between the
			// nodes, and the veth pair joining its bridge to its router
			vx := &netlink.Vxlan{LinkAttrs: netlink.LinkAttrs{Name: "vx" + p.name, MTU: 1450}, VxlanId: p.vni, VtepDevIndex: eth0.Attrs().Index,
				SrcAddr: net.ParseIP(nodeIP[i]), Group: net.ParseIP(nodeIP[1-i]), Port: 4789}
			veth := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: p.name + "gb", MTU: 1450}, PeerName: p.name + "gr"}
			for _, l := range []netlink.Link{vx, veth} {
				if err := nl.LinkAdd(l); err != nil {
					t.Fatalf("%s: %v", l.Attrs().Name, err)
				}
			}
			for _, name := range []string{"vx" + p.name, p.name + "gb", p.name + "gr"} {
				l, err := nl.LinkByName(name)
				if err == nil {
					err = nl.LinkSetUp(l)
				}
				if err != nil {
					t.Fatal(err)
				}
			}
		}
		file, err := filepath.Abs(filepath.Join(exampleDir, "node-"+string(rune('a'+i))))
		if err != nil {
			t.Fatal(err)
		}
		daemons[i] = startDaemonIn(t, "/var/run/netns/"+node.Name, "-apply-file", file+".yaml")
		d := daemons[i]
		waitFor(t, "node "+node.Name+" to apply its file", func() bool { return d.metric(t, "edgenf_apply_file_ok") == 1 })
		runtimes[i] = newCNIRuntime(t, d, nodeConflist(t, file+".conflist", d.socket))
		for _, p := range plans {
			ps := pods[p.name]
			ps[i] = makePods(t, lab, p.name, 10*i, 2)
			pods[p.name] = ps
			for _, q := range ps[i] {
				q.namespace = p.name // the tenant's own namespace, which admits them
				q.ann = map[string]string{"edgenf.io/tenant": p.name}
				if err := runtimes[i].add(q); err != nil {
					t.Fatalf("node %s: ADD %s: %v", node.Name, q, err)
				}
				if !strings.HasPrefix(q.ip(4), p.pods[i]+".") || !netip.MustParsePrefix(fmt.Sprintf("2001:db8:%d:%d::/64", p.vni, i)).Contains(netip.MustParseAddr(q.ip(6))) {
					t.Fatalf("node %s: %s got %s and %s, not from %s.0/24 and 2001:db8:%d:%d::/64", node.Name, q, q.ip(4), q.ip(6), p.pods[i], p.vni, i)
				}
			}
		}
	}
	red, blue := pods["red"], pods["blue"]
	// a tenant's pods reach each other across the nodes, both ways, IPv4
	// and IPv6 (each node's router routes the other's pod prefixes of
	// both families over the tenant's overlay)
	reaches(t, red[0][0], red[1][0].ip(4))
	reaches(t, red[1][1], red[0][1].ip(4))
	reaches(t, blue[0][1], blue[1][0].ip(4))
	reaches(t, blue[1][1], blue[0][0].ip(4))
	reaches(t, red[0][1], red[1][1].ip(6))
	reaches(t, red[1][0], red[0][0].ip(6))
	reaches(t, blue[0][0], blue[1][1].ip(6))
	reaches(t, blue[1][0], blue[0][1].ip(6))
	for _, family := range []int{4, 6} {
		if err := netlab.TCPTransfer(ctx(t, 30*time.Second), red[0][0].h, red[1][1].h, red[1][1].ip(family), 7002, 200_000); err != nil {
			t.Errorf("TCP (IPv%d) red pod on node A to red pod on node B: %v", family, err)
		}
		// red's firewall on its router's pod side drops TCP to port 22
		if err := netlab.TCPTransfer(ctx(t, 3*time.Second), red[0][1].h, red[1][0].h, red[1][0].ip(family), 22, 10_000); err == nil {
			t.Errorf("TCP (IPv%d) to port 22 crossed red's firewall", family)
		}
	}
	// never another tenant's, on the other node or the same
	for _, c := range [][2]*pod{{red[0][0], blue[1][0]}, {red[0][1], blue[0][0]}, {blue[0][0], red[1][0]}, {blue[1][1], red[0][1]}} {
		cannotReach(t, c[0], c[1].ip(4))
		cannotReach(t, c[0], c[1].ip(6))
	}
	// and nothing of one tenant leaves on the other's overlay
	var vxStats [2][2]uint64
	for i, node := range nodes {
		for j, name := range []string{"vxred", "vxblue"} {
			l, err := node.Netlink().LinkByName(name)
			if err != nil {
				t.Fatal(err)
			}
			vxStats[i][j] = l.Attrs().Statistics.TxPackets
		}
	}
	sent, got, err := netlab.UDPFlow(ctx(t, 30*time.Second), red[0][0].h, red[1][0].h, red[1][0].ip(4), 5001, 200, 100, 2000)
	if err != nil || got < sent*9/10 {
		t.Fatalf("UDP red A → red B: %d of %d (%v)", got, sent, err)
	}
	for i, node := range nodes {
		l, _ := node.Netlink().LinkByName("vxblue")
		if d := l.Attrs().Statistics.TxPackets - vxStats[i][1]; d > 10 {
			t.Errorf("node %s: %d frames left on blue's overlay during red's flow", node.Name, d)
		}
		l, _ = node.Netlink().LinkByName("vxred")
		if i == 0 && l.Attrs().Statistics.TxPackets-vxStats[i][0] < uint64(sent*9/10) {
			t.Errorf("node %s: red's flow did not leave on red's overlay", node.Name)
		}
	}

	for i := range nodes {
		for _, p := range plans {
			for _, q := range pods[p.name][i] {
				if err := runtimes[i].del(q); err != nil {
					t.Errorf("DEL %s: %v", q, err)
				}
			}
		}
		if eps := daemons[i].endpoints(); len(eps) != 0 {
			t.Errorf("node %d: endpoints left: %v", i, slices.Collect(func(yield func(string) bool) {
				for n := range eps {
					yield(n)
				}
			}))
		}
	}
}

// nodeConflist is a node's conflist of the example with what a test node
// differs in: its daemon's socket, and host-local's files in the test's
// directory.
func nodeConflist(t *testing.T, file, socket string) string {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var list map[string]any
	if err := json.Unmarshal(b, &list); err != nil {
		t.Fatal(err)
	}
	plugin := list["plugins"].([]any)[0].(map[string]any)
	plugin["socket"] = socket
	for name, tc := range plugin["tenants"].(map[string]any) {
		tc.(map[string]any)["ipam"].(map[string]any)["dataDir"] = filepath.Join(t.TempDir(), name)
	}
	b, _ = json.Marshal(list)
	return string(b)
}
