package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vishvananda/netlink"

	"github.com/edgenf/edgenf/internal/endpoint"
	"github.com/edgenf/edgenf/internal/netlab"
	"github.com/edgenf/edgenf/internal/testenv"
)

// chainNode is one node's tenants: for each tenant a bridge cube that pods
// are plugged into, joined by a veth pair to the tenant's router (the
// pods' gateway), whose "out" port leads to an outside host; red's router
// has a firewall on that port that drops UDP to port 9999.
type chainNode struct {
	d       *daemon
	outside *netlab.Host
	tenants []nodeTenant
}

// nodeTenant is one tenant's addressing on a node.
type nodeTenant struct {
	name      string
	v4, gw4   string // pod subnet and the router's address on it
	v6, gw6   string // pod IPv6 subnet and its gateway (bridged only: the router is IPv4)
	out, peer string // router's outside address and the outside host's
}

var (
	red  = nodeTenant{"red", "198.18.10.0/24", "198.18.10.1", "2001:db8:10::/64", "2001:db8:10::1", "198.18.100.1/24", "198.18.100.2"}
	blue = nodeTenant{"blue", "198.18.11.0/24", "198.18.11.1", "2001:db8:11::/64", "2001:db8:11::1", "198.18.101.1/24", "198.18.101.2"}
)

// newChainNode builds the tenants' chains on a node whose daemon runs in
// the test's namespace, and an outside host reached by both routers.
func newChainNode(t *testing.T, lab *netlab.Lab, d *daemon, tenants ...nodeTenant) *chainNode {
	t.Helper()
	outside, err := lab.Host("out")
	if err != nil {
		t.Fatal(err)
	}
	n := &chainNode{d: d, outside: outside, tenants: tenants}
	var doc strings.Builder
	doc.WriteString("cubes:\n")
	var attachments []string
	for _, tn := range tenants {
		b, r, err := lab.RootVeth(tn.name[:1]+"gb", tn.name[:1]+"gr")
		if err != nil {
			t.Fatal(err)
		}
		up, err := lab.Veth(outside, tn.name, tn.name[:1]+"o", tn.peer+"/24")
		if err != nil {
			t.Fatal(err)
		}
		if err := outside.AddRoute(tn.v4, strings.Split(tn.out, "/")[0]); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&doc, `  - {name: %[1]sbr, type: bridge, tenant: %[1]s, ports: [{name: gw, peer: %[2]s}]}
  - name: %[1]sr
    type: router
    tenant: %[1]s
    ports:
      - {name: lan, peer: %[3]s, addresses: [%[4]s/%[5]s]}
      - {name: out, peer: %[6]s, addresses: [%[7]s]}
    tables:
      routes: [{prefix: 0.0.0.0/0, next_hop: %[8]s}]
`, tn.name, b, r, tn.gw4, strings.Split(tn.v4, "/")[1], up, tn.out, tn.peer)
		if tn.name == "red" {
			doc.WriteString(`  - name: redfw
    type: firewall
    tenant: red
    tables:
      egress: [{id: 10, proto: udp, dport: "9999", action: drop}]
`)
			attachments = append(attachments, "  - {cube: redfw, point: \"redr:out\"}\n")
		}
	}
	if len(attachments) > 0 {
		doc.WriteString("attachments:\n" + strings.Join(attachments, ""))
	}
	file := filepath.Join(t.TempDir(), "node.yaml")
	if err := os.WriteFile(file, []byte(doc.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	d.cli("apply", "-f", file)
	return n
}

// conflist is the network configuration list of the node's pods: red takes
// the pods of namespace red, blue those of namespace shop (annotated for
// it: the annotation picks the tenant, the namespace admits the pod).
func (n *chainNode) conflist(network, ipamDir, socket string) string {
	var tenants []string
	for _, tn := range n.tenants {
		ns := `"namespaces": ["shop"], `
		if tn.name == "red" {
			ns = `"namespaces": ["red"], `
		}
		tenants = append(tenants, fmt.Sprintf(`%q: {"cube": "%sbr", %s"ipam": %s}`, tn.name, tn.name, ns,
			hostLocal(filepath.Join(ipamDir, tn.name), tn.v4, tn.gw4, tn.v6, tn.gw6)))
	}
	return fmt.Sprintf(`{"cniVersion": "1.1.0", "name": %q, "plugins": [{"type": "edgenf-cni", "socket": %q,
	  "capabilities": {"io.kubernetes.cri.pod-annotations": true},
	  "tenants": {%s}}]}`, network, socket, strings.Join(tenants, ", "))
}

// makePods creates pod sandboxes first..first+n-1 of a tenant: red's in
// namespace red, blue's in namespace shop with the tenant annotation.
func makePods(t *testing.T, lab *netlab.Lab, tenant string, first, n int) []*pod {
	t.Helper()
	var out []*pod
	for i := first; i < first+n; i++ {
		h, err := lab.Host(fmt.Sprintf("%s%d", tenant[:1], i))
		if err != nil {
			t.Fatal(err)
		}
		p := &pod{h: h, id: fmt.Sprintf("%s-%s-%02d", lab.Prefix(), tenant, i), namespace: tenant, name: fmt.Sprintf("%s-%d", tenant, i)}
		if tenant != "red" {
			p.namespace, p.ann = "shop", map[string]string{"edgenf.io/tenant": tenant}
		}
		out = append(out, p)
	}
	return out
}

func reaches(t *testing.T, from *pod, dst string) {
	t.Helper()
	if err := from.h.Ping(ctx(t, 20*time.Second), dst, 2); err != nil {
		t.Errorf("%s cannot reach %s: %v", from, dst, err)
	}
}

func cannotReach(t *testing.T, from *pod, dst string) {
	t.Helper()
	if err := from.h.Ping(ctx(t, 20*time.Second), dst, 2); err == nil {
		t.Errorf("%s reaches %s", from, dst)
	}
}

// linkExists reports whether the test's namespace has an interface.
func linkExists(name string) bool {
	_, err := netlink.LinkByName(name)
	return err == nil
}

// Pods plugged by edgenf-cni, driven by libcni, into two tenants' chains:
// ADD, CHECK and STATUS; traffic pod to pod (IPv4, IPv6, TCP) and pod to
// outside through the tenant's router, red's firewall dropping what its rule
// says; never a path to the other tenant; DEL of half the pods leaves
// nothing of theirs; GC after a pod's sandbox vanished without a DEL.
func TestCNIPodsInTenantChains(t *testing.T) {
	testenv.E2E(t)
	lab := netlab.NewT(t)
	d := startDaemon(t)
	node := newChainNode(t, lab, d, red, blue)
	ipamDir := t.TempDir()
	r := newCNIRuntime(t, d, node.conflist("edge", ipamDir, d.socket))
	if err := r.status(); err != nil {
		t.Fatalf("STATUS: %v", err)
	}
	reds, blues := makePods(t, lab, "red", 0, 10), makePods(t, lab, "blue", 0, 10)
	all := append(slices.Clone(reds), blues...)
	for _, p := range all {
		if err := r.add(p); err != nil {
			t.Fatalf("ADD %s: %v", p, err)
		}
		if p.ip(4) == "" || p.ip(6) == "" || len(p.res.Interfaces) != 2 || p.res.Interfaces[1].Sandbox == "" {
			t.Fatalf("ADD %s: result %+v", p, p.res)
		}
	}
	for _, p := range all {
		if err := r.check(p); err != nil {
			t.Errorf("CHECK %s: %v", p, err)
		}
	}
	eps := d.endpoints()
	if len(eps) != 20 {
		t.Fatalf("%d endpoints, want 20", len(eps))
	}
	perTenant := map[string]int{}
	for _, e := range eps {
		perTenant[e.Tenant]++
		if e.Cube != e.Tenant+"br" || e.Network != "edge" || e.Pod == nil || !linkExists(e.Interface) {
			t.Errorf("endpoint %+v", e)
		}
	}
	if perTenant["red"] != 10 || perTenant["blue"] != 10 {
		t.Fatalf("endpoints per tenant: %v", perTenant)
	}
	if t.Failed() {
		return
	}

	// Pod to pod within a tenant, both families; never across tenants.
	reaches(t, reds[0], reds[1].ip(4))
	reaches(t, reds[2], reds[9].ip(6))
	reaches(t, blues[0], blues[7].ip(4))
	reaches(t, blues[3], blues[4].ip(6))
	if err := netlab.TCPTransfer(ctx(t, 30*time.Second), reds[3].h, reds[4].h, reds[4].ip(4), 7001, 200_000); err != nil {
		t.Errorf("TCP red pod to red pod: %v", err)
	}
	cannotReach(t, reds[0], blues[0].ip(4))
	cannotReach(t, blues[1], reds[1].ip(4))
	cannotReach(t, blues[1], reds[1].ip(6))
	// Pod to outside through the tenant's router; red's firewall drops
	// UDP to 9999, blue has no such rule.
	reaches(t, reds[5], red.peer)
	reaches(t, blues[5], blue.peer)
	out := &pod{h: node.outside, name: "outside"}
	for _, c := range []struct {
		from *pod
		dst  string
		port int
		want bool
	}{{reds[6], red.peer, 5000, true}, {reds[6], red.peer, 9999, false}, {blues[6], blue.peer, 9999, true}} {
		sent, got, err := netlab.UDPFlow(ctx(t, 30*time.Second), c.from.h, out.h, c.dst, c.port, 50, 100, 1000)
		if err != nil {
			t.Fatal(err)
		}
		if c.want && got < sent*9/10 || !c.want && got != 0 {
			t.Errorf("UDP %s → %s:%d: %d of %d delivered", c.from, c.dst, c.port, got, sent)
		}
	}
	if t.Failed() {
		return
	}

	// DEL half of each tenant's pods: nothing of theirs is left.
	held := len(ipamFiles(t, filepath.Join(ipamDir, "red"), "edge")) + len(ipamFiles(t, filepath.Join(ipamDir, "blue"), "edge"))
	if held != 40 {
		t.Fatalf("host-local holds %d addresses, want 40", held)
	}
	gone := append(slices.Clone(reds[:5]), blues[:5]...)
	for _, p := range gone {
		if err := r.del(p); err != nil {
			t.Fatalf("DEL %s: %v", p, err)
		}
	}
	eps = d.endpoints()
	for _, p := range gone {
		for _, e := range eps {
			if e.ContainerID == p.id {
				t.Errorf("endpoint of %s left: %+v", p, e)
			}
		}
		if l, err := p.h.Netlink().LinkByName("eth0"); err == nil {
			t.Errorf("%s still has eth0 %v", p, l.Attrs().HardwareAddr)
		}
	}
	if len(eps) != 10 {
		t.Errorf("%d endpoints left, want 10", len(eps))
	}
	held = len(ipamFiles(t, filepath.Join(ipamDir, "red"), "edge")) + len(ipamFiles(t, filepath.Join(ipamDir, "blue"), "edge"))
	if held != 20 {
		t.Errorf("host-local holds %d addresses after DEL, want 20", held)
	}
	var cubes []struct {
		Name  string `json:"name"`
		Ports []struct {
			Name string `json:"name"`
			Peer string `json:"peer"`
		} `json:"ports"`
	}
	d.json(&cubes, "cube", "list")
	ports := 0
	for _, c := range cubes {
		for _, p := range c.Ports {
			if strings.HasPrefix(p.Name, "enf") {
				ports++
				if !linkExists(p.Peer) {
					t.Errorf("port %s:%s peered with missing %s", c.Name, p.Name, p.Peer)
				}
			}
		}
	}
	if ports != 10 {
		t.Errorf("%d pod ports left, want 10", ports)
	}
	for _, p := range gone { // DEL is idempotent
		if err := r.del(p); err != nil {
			t.Errorf("DEL %s again: %v", p, err)
		}
	}
	reaches(t, reds[5], reds[6].ip(4))
	reaches(t, blues[8], blues[9].ip(4))

	// Pods' sandboxes vanish without a DEL (the runtime crashed with
	// them): their ports stay, peered with missing interfaces, until GC.
	// libcni's GC DELs the attachments it has cached (red-9's); the
	// plugin's own GC finds those the runtime forgot (blue-9's).
	crashed := []*pod{reds[9], blues[9]}
	r.forget(blues[9])
	var names []string
	for _, p := range crashed {
		name := endpointOf(eps, p.id)
		names = append(names, name)
		if err := p.h.Remove(); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "the crashed pod's host interface to go", func() bool { return !linkExists(name) })
	}
	if eps := d.endpoints(); eps[names[0]] == nil || eps[names[1]] == nil {
		t.Fatal("a crashed pod's endpoint went without GC")
	}
	valid := append(slices.Clone(reds[5:9]), blues[5:9]...)
	if err := r.gc(valid); err != nil {
		t.Fatalf("GC: %v", err)
	}
	eps = d.endpoints()
	if len(eps) != 8 || eps[names[0]] != nil || eps[names[1]] != nil {
		t.Errorf("after GC: %d endpoints, want 8", len(eps))
	}
	held = len(ipamFiles(t, filepath.Join(ipamDir, "red"), "edge")) + len(ipamFiles(t, filepath.Join(ipamDir, "blue"), "edge"))
	if held != 16 {
		t.Errorf("host-local holds %d addresses after GC, want 16", held)
	}
	for _, p := range crashed { // the runtime's late DEL
		if err := r.del(p); err != nil {
			t.Errorf("DEL of crashed %s after GC: %v", p, err)
		}
	}
	reaches(t, reds[7], reds[8].ip(4))
	reaches(t, reds[8], red.peer)
	for _, p := range valid {
		if err := r.check(p); err != nil {
			t.Errorf("CHECK %s after GC: %v", p, err)
		}
		if err := r.del(p); err != nil {
			t.Errorf("DEL %s: %v", p, err)
		}
	}
	if eps := d.endpoints(); len(eps) != 0 {
		t.Errorf("endpoints left: %v", eps)
	}
}

func endpointOf(eps map[string]*endpoint.Endpoint, id string) string {
	for name, e := range eps {
		if e.ContainerID == id {
			return name
		}
	}
	return ""
}

// edgenf-cni in a list with Debian's reference plugins (CNI 1.0.0, the
// newest they speak): after loopback (whose result it extends) and before
// tuning (which reads its result and sets a sysctl on the pod's
// interface); ADD, CHECK and DEL go through the whole list.
func TestCNIChained(t *testing.T) {
	testenv.E2E(t)
	lab := netlab.NewT(t)
	d := startDaemon(t)
	newChainNode(t, lab, d, red)
	ipam := hostLocal(t.TempDir(), red.v4, red.gw4, red.v6, red.gw6)
	r := newCNIRuntime(t, d, fmt.Sprintf(`{"cniVersion": "1.0.0", "name": "chained", "plugins": [
	  {"type": "loopback"},
	  {"type": "edgenf-cni", "socket": %q, "tenant": "red", "cube": "redbr", "mtu": 1400, "ipam": %s},
	  {"type": "tuning", "sysctl": {"net.ipv4.conf.eth0.arp_notify": "1"}}]}`, d.socket, ipam))
	pods := makePods(t, lab, "red", 0, 2)
	for _, p := range pods {
		if err := r.add(p); err != nil {
			t.Fatalf("ADD %s: %v", p, err)
		}
		if n := len(p.res.Interfaces); n != 3 || p.res.Interfaces[0].Name != "lo" || p.res.Interfaces[2].Name != "eth0" {
			t.Fatalf("ADD %s: interfaces %+v", p, p.res.Interfaces)
		}
		for _, ipc := range p.res.IPs {
			if ipc.Address.IP.IsLoopback() != (*ipc.Interface == 0) {
				t.Fatalf("ADD %s: %v on interface %d", p, ipc.Address, *ipc.Interface)
			}
		}
		var v []byte
		p.h.Do(func() (err error) { v, err = os.ReadFile("/proc/sys/net/ipv4/conf/eth0/arp_notify"); return })
		l, err := p.h.Netlink().LinkByName("eth0")
		if strings.TrimSpace(string(v)) != "1" || err != nil || l.Attrs().MTU != 1400 {
			t.Fatalf("%s: arp_notify %q (tuning), eth0 %v", p, v, err)
		}
		if err := r.check(p); err != nil {
			t.Fatalf("CHECK %s: %v", p, err)
		}
	}
	reaches(t, pods[0], pods[1].ip(4))
	reaches(t, pods[1], pods[0].ip(6))
	// CHECK notices what changed since ADD
	nl := pods[1].h.Netlink()
	l, err := nl.LinkByName("eth0")
	if err != nil {
		t.Fatal(err)
	}
	addr, _ := netlink.ParseAddr(pods[1].ip(4) + "/24")
	if err := nl.AddrDel(l, addr); err != nil {
		t.Fatal(err)
	}
	if err := r.check(pods[1]); cniCode(err) != 102 {
		t.Errorf("CHECK after the pod's address went: %v (code %d)", err, cniCode(err))
	}
	for _, p := range pods {
		if err := r.del(p); err != nil {
			t.Fatalf("DEL %s: %v", p, err)
		}
	}
	if eps := d.endpoints(); len(eps) != 0 {
		t.Fatalf("endpoints left: %v", eps)
	}
}
