package e2e

import (
	"encoding/binary"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/edgenf/edgenf/internal/netlab"
	"github.com/edgenf/edgenf/internal/testenv"
)

// routedTenant is a tenant whose pods are plugged straight into its router.
type routedTenant struct {
	name       string
	v4, v6     string // the pods' IPAM subnets
	out4, out6 string // the router's "out" addresses, toward the outside host
	peer4      string // the outside host's addresses on that link
	peer6      string
}

// Pods plugged straight into their tenant's router cube, each on a port of
// its own (a point-to-point link: /32 and /128 addresses, the port's
// link-local gateways): ADD and CHECK; pod to pod on the node and pod to
// outside, IPv4 and IPv6, through the router; red's firewall on the
// router's way out drops what its rule says; never a path to the other
// tenant's pods; a pod cannot send as another (its port's source check);
// the router's host routes go with DEL and GC, and stay across a re-apply
// of the node's topology and a daemon restart.
func TestCNIPodsOnRouterCubes(t *testing.T) {
	testenv.E2E(t)
	lab := netlab.NewT(t)
	d := startDaemon(t)
	outside, err := lab.Host("out")
	if err != nil {
		t.Fatal(err)
	}
	tenants := []routedTenant{
		{"red", "198.18.12.0/24", "2001:db8:12::/64", "198.18.102.1", "2001:db8:102::1", "198.18.102.2", "2001:db8:102::2"},
		{"blue", "198.18.13.0/24", "2001:db8:13::/64", "198.18.103.1", "2001:db8:103::1", "198.18.103.2", "2001:db8:103::2"},
	}
	var doc strings.Builder
	doc.WriteString("cubes:\n")
	for _, tn := range tenants {
		up, err := lab.Veth(outside, tn.name, tn.name[:1]+"o", tn.peer4+"/24", tn.peer6+"/64")
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range [][2]string{{tn.v4, tn.out4}, {tn.v6, tn.out6}} {
			if err := outside.AddRoute(r[0], r[1]); err != nil {
				t.Fatal(err)
			}
		}
		fmt.Fprintf(&doc, `  - name: %[1]sr
    type: router
    tenant: %[1]s
    ports:
      - {name: out, peer: %[2]s, addresses: [%[3]s/24, %[4]s/64]}
    tables:
      routes: [{prefix: 0.0.0.0/0, next_hop: %[5]s}, {prefix: "::/0", next_hop: "%[6]s"}]
`, tn.name, up, tn.out4, tn.out6, tn.peer4, tn.peer6)
	}
	doc.WriteString(`  - name: redfw
    type: firewall
    tenant: red
    tables:
      egress: [{id: 10, proto: udp, dport: "9999", action: drop}]
attachments:
  - {cube: redfw, point: "redr:out"}
`)
	file := filepath.Join(t.TempDir(), "node.yaml")
	if err := os.WriteFile(file, []byte(doc.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	d.cli("apply", "-f", file)
	ipamDir := t.TempDir()
	var tconf []string
	for _, tn := range tenants {
		ns := "shop"
		if tn.name == "red" {
			ns = "red"
		}
		// host-local's gateways are the subnets': a routed pod does
		// not use them (its gateways are its port's)
		tconf = append(tconf, fmt.Sprintf(`%q: {"cube": "%sr", "namespaces": [%q], "ipam": %s}`, tn.name, tn.name, ns,
			hostLocal(filepath.Join(ipamDir, tn.name), tn.v4, strings.TrimSuffix(tn.v4, "0/24")+"1", tn.v6, strings.TrimSuffix(tn.v6, "/64")+"1")))
	}
	r := newCNIRuntime(t, d, fmt.Sprintf(`{"cniVersion": "1.1.0", "name": "routed", "plugins": [{"type": "edgenf-cni", "socket": %q,
	  "capabilities": {"io.kubernetes.cri.pod-annotations": true}, "tenants": {%s}}]}`, d.socket, strings.Join(tconf, ", ")))
	reds, blues := makePods(t, lab, "red", 0, 3), makePods(t, lab, "blue", 0, 3)
	all := append(slices.Clone(reds), blues...)
	for _, p := range all {
		if err := r.add(p); err != nil {
			t.Fatalf("ADD %s: %v", p, err)
		}
		for _, ipc := range p.res.IPs {
			ones, bits := ipc.Address.Mask.Size()
			gw := ipc.Gateway.String()
			if ones != bits || !(strings.HasPrefix(gw, "169.254.") || strings.HasPrefix(gw, "fe80::")) {
				t.Fatalf("ADD %s: %s via %s, want a host address via a link-local gateway", p, &ipc.Address, gw)
			}
		}
		if p.ip(4) == "" || p.ip(6) == "" || len(p.res.Routes) != 2 {
			t.Fatalf("ADD %s: result %+v", p, p.res)
		}
	}
	for _, p := range all {
		if err := r.check(p); err != nil {
			t.Errorf("CHECK %s: %v", p, err)
		}
	}
	eps := d.endpoints()
	for _, e := range eps {
		if e.Cube != e.Tenant+"r" || len(e.Gateways) != 2 {
			t.Errorf("endpoint %+v", e)
		}
	}
	// the router has a host route per pod address out of the pod's port
	routes := func(tenant string) map[string]string {
		var list []struct {
			Prefix string `json:"prefix"`
			Port   string `json:"port"`
		}
		d.json(&list, "table", "list", tenant+"r", "routes")
		out := map[string]string{}
		for _, rt := range list {
			out[rt.Prefix] = rt.Port
		}
		return out
	}
	red0 := endpointOf(eps, reds[0].id)
	if rt := routes("red"); rt[reds[0].ip(4)+"/32"] != red0 || rt[reds[0].ip(6)+"/128"] != red0 {
		t.Fatalf("red's routes %v: no host routes to %s out of %s", rt, reds[0], red0)
	}
	if t.Failed() {
		return
	}

	traffic := func(when string) {
		t.Helper()
		reaches(t, reds[0], reds[1].ip(4))
		reaches(t, reds[1], reds[2].ip(6))
		reaches(t, blues[0], blues[2].ip(4))
		reaches(t, blues[2], blues[1].ip(6))
		reaches(t, reds[2], "169.254.1.1") // a router's gateway answers ping
		if err := netlab.TCPTransfer(ctx(t, 30*time.Second), reds[0].h, reds[2].h, reds[2].ip(6), 7003, 200_000); err != nil {
			t.Errorf("%s: TCP red pod to red pod over IPv6: %v", when, err)
		}
		cannotReach(t, reds[0], blues[0].ip(4))
		cannotReach(t, blues[1], reds[1].ip(6))
		reaches(t, reds[1], tenants[0].peer4)
		reaches(t, reds[1], tenants[0].peer6)
		reaches(t, blues[1], tenants[1].peer6)
		out := &pod{h: outside, name: "outside"}
		for _, c := range []struct {
			from *pod
			dst  string
			port int
			want bool
		}{{reds[2], tenants[0].peer4, 5000, true}, {reds[2], tenants[0].peer4, 9999, false}, {reds[2], tenants[0].peer6, 9999, false},
			{blues[2], tenants[1].peer6, 9999, true}} {
			sent, got, err := netlab.UDPFlow(ctx(t, 30*time.Second), c.from.h, out.h, c.dst, c.port, 50, 100, 1000)
			if err != nil {
				t.Fatal(err)
			}
			if c.want && got < sent*9/10 || !c.want && got != 0 {
				t.Errorf("%s: UDP %s → %s:%d: %d of %d delivered", when, c.from, c.dst, c.port, got, sent)
			}
		}
	}
	traffic("after ADD")
	if t.Failed() {
		return
	}
	// The node's topology applied again (as -apply-file does on every
	// change of its file): the pods' ports and host routes stay.
	d.cli("apply", "-f", file)
	if rt := routes("red"); rt[reds[0].ip(4)+"/32"] != red0 {
		t.Fatalf("after a re-apply, red's routes %v lack %s's", rt, reds[0])
	}
	reaches(t, reds[0], reds[1].ip(6))
	// and across a restart
	d.stop()
	d.start()
	traffic("after a restart")
	spoofIsDropped(t, d, reds[0], red0, reds[1].ip(4), tenants[0].peer4)

	// DEL: the pod's port and routes go; GC after a crash too.
	if err := r.del(reds[0]); err != nil {
		t.Fatalf("DEL %s: %v", reds[0], err)
	}
	if rt := routes("red"); rt[reds[0].ip(4)+"/32"] != "" || rt[reds[0].ip(6)+"/128"] != "" || len(rt) != 2+2*2 {
		t.Errorf("after DEL %s: red's routes %v", reds[0], rt)
	}
	cannotReach(t, reds[1], reds[0].ip(4))
	r.forget(blues[0])
	name := endpointOf(d.endpoints(), blues[0].id)
	if err := blues[0].h.Remove(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the crashed pod's host interface to go", func() bool { return !linkExists(name) })
	if err := r.gc(append(slices.Clone(reds[1:]), blues[1:]...)); err != nil {
		t.Fatalf("GC: %v", err)
	}
	if rt := routes("blue"); len(rt) != 2+2*2 {
		t.Errorf("after GC: blue's routes %v", rt)
	}
	// a new pod takes the freed address (host-local hands out the lowest)
	// on a port of its own
	late := makePods(t, lab, "red", 5, 1)[0]
	if err := r.add(late); err != nil {
		t.Fatalf("ADD %s: %v", late, err)
	}
	reaches(t, late, reds[1].ip(4))
	reaches(t, reds[2], late.ip(6))
	for _, p := range append(append(slices.Clone(reds[1:]), blues[1:]...), late) {
		if err := r.del(p); err != nil {
			t.Errorf("DEL %s: %v", p, err)
		}
	}
	if eps := d.endpoints(); len(eps) != 0 {
		t.Errorf("endpoints left: %v", eps)
	}
	for _, tn := range tenants {
		if rt := routes(tn.name); len(rt) != 2 {
			t.Errorf("%s's routes left: %v", tn.name, rt)
		}
	}
}

// spoofIsDropped: a pod sending with another pod's address as its source
// is dropped by its port's source check, which plugging turned on (and a
// restart kept), and counted; the port accepts only the pod's own /32 and
// /128.
func spoofIsDropped(t *testing.T, d *daemon, from *pod, port, other, dst string) {
	t.Helper()
	type row struct {
		Port    string   `json:"port"`
		Check   bool     `json:"check"`
		Allowed []string `json:"allowed"`
		Dropped uint64   `json:"dropped"`
	}
	view := func() row {
		var rows []row
		d.json(&rows, "view", "redr", "source_check")
		for _, r := range rows {
			if r.Port == port {
				return r
			}
		}
		t.Fatalf("no source_check row for port %s in %+v", port, rows)
		return row{}
	}
	before := view()
	if !before.Check || !slices.Equal(before.Allowed, []string{from.ip(4) + "/32", from.ip(6) + "/128"}) {
		t.Fatalf("%s's port %s: %+v, want the check on with its own addresses", from, port, before)
	}
	pkt := make([]byte, 28+8)
	pkt[0], pkt[8], pkt[9] = 0x45, 64, 17 // IPv4, TTL, UDP
	copy(pkt[12:16], net.ParseIP(other).To4())
	copy(pkt[16:20], net.ParseIP(dst).To4())
	binary.BigEndian.PutUint16(pkt[20:], 40000)
	binary.BigEndian.PutUint16(pkt[22:], 5000)
	binary.BigEndian.PutUint16(pkt[24:], 16) // UDP length; checksum 0: none
	const n = 20
	for i := 0; i < n; i++ {
		if err := from.h.SendRawIPv4(pkt); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "the spoofed packets to be counted", func() bool { return view().Dropped >= before.Dropped+n })
}
