package e2e

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vishvananda/netlink"

	"github.com/edgenf/edgenf/internal/netlab"
)

// Multi-node chains (docs/kubernetes.md): every node runs each tenant's
// bridge and router; the routers of a tenant reach each other over the
// node network through the tenant's own overlay (a VXLAN, one VNI per
// tenant), and route the other nodes' pod prefixes there. Two "nodes"
// here are namespaces, each with its own edgenfd (own bpffs root and
// socket) and its own CNI runtime, joined by a veth "node network".
func TestCNITwoNodes(t *testing.T) {
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
		name    string
		vni     int
		pods    [2]string // pod subnet (/24) on each node; the router is .1
		transit [2]string // the routers' addresses on the tenant's overlay
	}
	plans := []tenantPlan{
		{"red", 100, [2]string{"198.18.20", "198.18.21"}, [2]string{"198.18.250.1", "198.18.250.2"}},
		{"blue", 200, [2]string{"198.18.30", "198.18.31"}, [2]string{"198.18.251.1", "198.18.251.2"}},
	}
	var runtimes [2]*cniRuntime
	var daemons [2]*daemon
	pods := map[string][2][]*pod{} // tenant → node → pods
	for i, node := range nodes {
		nl := node.Netlink()
		eth0, err := nl.LinkByName("eth0")
		if err != nil {
			t.Fatal(err)
		}
		var doc strings.Builder
		doc.WriteString("cubes:\n")
		var tenants []string
		for _, p := range plans {
			// the tenant's overlay between the nodes, and the veth pair
			// joining its bridge to its router on this node
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
			fmt.Fprintf(&doc, `  - {name: %[1]sbr, type: bridge, tenant: %[1]s, ports: [{name: gw, peer: %[1]sgb}]}
  - name: %[1]sr
    type: router
    hook: tc
    tenant: %[1]s
    ports:
      - {name: lan, peer: %[1]sgr, addresses: [%[2]s.1/24]}
      - {name: nodes, peer: vx%[1]s, addresses: [%[3]s/30]}
    tables:
      routes: [{prefix: %[4]s.0/24, next_hop: %[5]s}]
`, p.name, p.pods[i], p.transit[i], p.pods[1-i], p.transit[1-i])
			tenants = append(tenants, fmt.Sprintf(`%q: {"cube": "%sbr", "ipam": %s}`, p.name, p.name,
				hostLocal(filepath.Join(t.TempDir(), p.name), p.pods[i]+".0/24", p.pods[i]+".1", fmt.Sprintf("2001:db8:%d:%d::/64", p.vni, i), fmt.Sprintf("2001:db8:%d:%d::1", p.vni, i))))
		}
		daemons[i] = startDaemonIn(t, "/var/run/netns/"+node.Name)
		file := filepath.Join(t.TempDir(), "node.yaml")
		if err := os.WriteFile(file, []byte(doc.String()), 0o600); err != nil {
			t.Fatal(err)
		}
		daemons[i].cli("apply", "-f", file)
		runtimes[i] = newCNIRuntime(t, daemons[i], fmt.Sprintf(`{"cniVersion": "1.1.0", "name": "edge", "plugins": [{"type": "edgenf-cni",
		  "socket": %q, "mtu": 1450, "capabilities": {"io.kubernetes.cri.pod-annotations": true}, "tenants": {%s}}]}`,
			daemons[i].socket, strings.Join(tenants, ", ")))
		for _, p := range plans {
			ps := pods[p.name]
			ps[i] = makePods(t, lab, p.name, 10*i, 2)
			pods[p.name] = ps
			for _, q := range ps[i] {
				q.ann = map[string]string{"edgenf.io/tenant": p.name}
				if err := runtimes[i].add(q); err != nil {
					t.Fatalf("node %s: ADD %s: %v", node.Name, q, err)
				}
				if !strings.HasPrefix(q.ip(4), p.pods[i]+".") {
					t.Fatalf("node %s: %s got %s, not from %s.0/24", node.Name, q, q.ip(4), p.pods[i])
				}
			}
		}
	}
	red, blue := pods["red"], pods["blue"]
	// a tenant's pods reach each other across the nodes, both ways
	reaches(t, red[0][0], red[1][0].ip(4))
	reaches(t, red[1][1], red[0][1].ip(4))
	reaches(t, blue[0][1], blue[1][0].ip(4))
	reaches(t, blue[1][1], blue[0][0].ip(4))
	if err := netlab.TCPTransfer(ctx(t, 30*time.Second), red[0][0].h, red[1][1].h, red[1][1].ip(4), 7002, 200_000); err != nil {
		t.Errorf("TCP red pod on node A to red pod on node B: %v", err)
	}
	// never another tenant's, on the other node or the same
	for _, c := range [][2]*pod{{red[0][0], blue[1][0]}, {red[0][1], blue[0][0]}, {blue[0][0], red[1][0]}, {blue[1][1], red[0][1]}} {
		cannotReach(t, c[0], c[1].ip(4))
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
