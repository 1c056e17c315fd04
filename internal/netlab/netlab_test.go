package netlab

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

func TestNewPrefix(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	for _, bad := range []string{"", "toolong7", "Abc", "a-b", "1ab"} {
		if _, err := New(bad); err == nil {
			t.Errorf("New(%q) accepted", bad)
		}
	}
	l, err := New("ok1")
	if err != nil {
		t.Fatal(err)
	}
	if l.Prefix() != "ok1" || l.Name("a0") != "ok1-a0" {
		t.Fatalf("prefix %q name %q", l.Prefix(), l.Name("a0"))
	}
	if _, err := l.checkName("0123456789ab"); err == nil {
		t.Fatal("15-byte limit not checked")
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal("second Close:", err)
	}
}

func TestUniquePrefix(t *testing.T) {
	seen := map[string]bool{}
	for range 50 {
		p := UniquePrefix()
		if len(p) > MaxPrefix || !prefixRE.MatchString(p) || seen[p] {
			t.Fatalf("bad or repeated prefix %q", p)
		}
		seen[p] = true
	}
}

// twoHosts returns hosts a and b joined directly by a veth pair, dual stack.
func twoHosts(t *testing.T) (*Lab, *Host, *Host) {
	l := NewT(t)
	a, err := l.Host("a")
	if err != nil {
		t.Fatal(err)
	}
	b, err := l.Host("b")
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Link(a, "eth0", b, "eth0",
		[]string{"198.18.1.1/24", "2001:db8:1::1/64"},
		[]string{"198.18.1.2/24", "2001:db8:1::2/64"}); err != nil {
		t.Fatal(err)
	}
	return l, a, b
}

func TestPingAndExec(t *testing.T) {
	_, a, b := twoHosts(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := a.Ping(ctx, "198.18.1.2", 3); err != nil {
		t.Fatal(err)
	}
	if err := b.Ping(ctx, "2001:db8:1::1", 3); err != nil {
		t.Fatal(err)
	}
	if err := a.Ping(ctx, "198.18.1.99", 1); err == nil {
		t.Fatal("ping to an absent address succeeded")
	}
	out, err := a.Exec(ctx, "ip", "-br", "addr", "show", "eth0")
	if err != nil || !strings.Contains(string(out), "198.18.1.1/24") {
		t.Fatalf("exec: %v: %s", err, out)
	}
	if _, err := a.Exec(ctx, "ip", "link", "show", "nosuchdev"); err == nil || !strings.Contains(err.Error(), "nosuchdev") {
		t.Fatalf("exec error should carry the output: %v", err)
	}
	mac, err := b.MAC("eth0")
	if err != nil || len(mac) != 6 {
		t.Fatalf("mac %v %v", mac, err)
	}
}

func TestUDPFlow(t *testing.T) {
	_, a, b := twoHosts(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, dst := range []string{"198.18.1.2", "2001:db8:1::2"} {
		sent, recv, err := UDPFlow(ctx, a, b, dst, 5001, 10000, 200, 20000)
		if err != nil {
			t.Fatal(dst, err)
		}
		if sent != 10000 || recv != sent {
			t.Fatalf("%s: sent %d received %d", dst, sent, recv)
		}
	}
	// Nobody routes to 198.18.9.9: everything is lost, and that is no error.
	sent, recv, err := UDPFlow(ctx, a, b, "198.18.1.77", 5002, 100, 64, 10000)
	if sent != 100 || recv != 0 {
		t.Fatalf("unreachable: sent %d received %d err %v", sent, recv, err)
	}
}

func TestTCPTransfer(t *testing.T) {
	_, a, b := twoHosts(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := TCPTransfer(ctx, a, b, "198.18.1.2", 5003, 8<<20); err != nil {
		t.Fatal(err)
	}
	if err := TCPTransfer(ctx, b, a, "2001:db8:1::1", 5003, 1<<20+17); err != nil {
		t.Fatal(err)
	}
}

// TestRouterHostAndRootVeth: hosts a and b talk through router host r
// (routes, a static neighbour, forwarding sysctls), plus root-side veths.
func TestRouterHostAndRootVeth(t *testing.T) {
	l := NewT(t)
	a, _ := l.Host("a")
	r, _ := l.Host("r")
	b, err := l.Host("b")
	if err != nil {
		t.Fatal(err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(l.Link(a, "eth0", r, "ra", []string{"198.18.10.2/24", "2001:db8:10::2/64"}, []string{"198.18.10.1/24", "2001:db8:10::1/64"}))
	must(l.Link(b, "eth0", r, "rb", []string{"198.18.11.2/24", "2001:db8:11::2/64"}, []string{"198.18.11.1/24", "2001:db8:11::1/64"}))
	must(r.Sysctl("net.ipv4.ip_forward", "1"))
	must(r.Sysctl("net/ipv6/conf/all/forwarding", "1"))
	must(a.AddRoute("default", "198.18.10.1"))
	must(a.AddRoute("default", "2001:db8:10::1"))
	must(b.AddRoute("default", "198.18.11.1"))
	must(b.AddRoute("2001:db8:10::/64", "2001:db8:11::1"))
	// Static neighbours on the whole path: a ping must not wait for ARP or
	// neighbour discovery at the router (its first echo was lost on a loaded
	// machine).
	neigh := func(h *Host, dev, ip string, peer *Host, peerDev string) {
		t.Helper()
		mac, err := peer.MAC(peerDev)
		must(err)
		must(h.SetNeigh(dev, ip, mac.String()))
	}
	neigh(a, "eth0", "198.18.10.1", r, "ra")
	neigh(r, "ra", "198.18.10.2", a, "eth0")
	neigh(r, "rb", "198.18.11.2", b, "eth0")
	neigh(b, "eth0", "198.18.11.1", r, "rb")
	neigh(a, "eth0", "2001:db8:10::1", r, "ra")
	neigh(r, "ra", "2001:db8:10::2", a, "eth0")
	neigh(r, "rb", "2001:db8:11::2", b, "eth0")
	neigh(b, "eth0", "2001:db8:11::1", r, "rb")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	must(a.Ping(ctx, "198.18.11.2", 2))
	must(a.Ping(ctx, "2001:db8:11::2", 2))
	must(TCPTransfer(ctx, a, b, "2001:db8:11::2", 5004, 1<<20))

	// Root-side veths, named with the prefix.
	x, y, err := l.RootVeth("x0", "x1")
	must(err)
	if !strings.HasPrefix(x, l.Prefix()+"-") || !strings.HasPrefix(y, l.Prefix()+"-") {
		t.Fatal(x, y)
	}
	h, err := l.Host("c")
	must(err)
	outer, err := l.Veth(h, "eth0", "c0", "198.18.12.2/24")
	must(err)
	if outer != l.Name("c0") {
		t.Fatal(outer)
	}
	if _, err := h.IfIndex("eth0"); err != nil {
		t.Fatal(err)
	}
}

func TestCloseLeavesNothing(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	l, err := New(UniquePrefix())
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	a, err := l.Host("a")
	if err != nil {
		t.Fatal(err)
	}
	b, err := l.Host("b")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Veth(a, "eth0", "a0", "198.18.2.1/24", "2001:db8:2::1/64"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := l.RootVeth("r0", "r1"); err != nil {
		t.Fatal(err)
	}
	if err := l.Link(a, "ab", b, "ba", nil, nil); err != nil {
		t.Fatal(err)
	}
	left, err := Leftovers(l.Prefix())
	if err != nil || len(left) != 5 { // 2 netns + a0 + r0 + r1
		t.Fatalf("before close: %v %v", left, err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	// The kernel tears namespaces down asynchronously; links in the root
	// namespace are gone at once.
	left, err = Leftovers(l.Prefix())
	if err != nil || len(left) != 0 {
		t.Fatalf("after close: %v %v", left, err)
	}
	outb, _ := exec.Command("ip", "netns", "list").CombinedOutput()
	out := string(outb)
	if strings.Contains(out, l.Prefix()+"-") {
		t.Fatalf("ip netns list still shows the lab:\n%s", out)
	}
	if _, err := l.Host("z"); err == nil {
		t.Fatal("Host after Close succeeded")
	}
}
