package firewall

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/datapath"
	"github.com/edgenf/edgenf/internal/engine"
	"github.com/edgenf/edgenf/internal/netlab"
	"github.com/edgenf/edgenf/internal/nftest"
	"github.com/edgenf/edgenf/internal/testenv"

	_ "github.com/edgenf/edgenf/internal/nf/nat"
	_ "github.com/edgenf/edgenf/internal/nf/portfwd"
	_ "github.com/edgenf/edgenf/internal/nf/router"
	"github.com/edgenf/edgenf/internal/tenant"
)

// fwLab: host a (198.18.1.2) and host b (198.18.1.3) on one subnet, joined
// by a portfwd cube acting as a wire; the firewall is attached to b's
// interface: egress = traffic towards b, ingress = traffic from b.
func fwLab(t *testing.T, hook datapath.Hook, cfg string, ingress, egress []string) (*engine.Engine, *netlab.Host, *netlab.Host) {
	t.Helper()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	lab := netlab.NewT(t)
	a, err := lab.Host("a")
	must(err)
	b, err := lab.Host("b")
	must(err)
	va, err := lab.Veth(a, "eth0", "va", "198.18.1.2/24")
	must(err)
	vb, err := lab.Veth(b, "eth0", "vb", "198.18.1.3/24")
	must(err)
	e := nftest.Engine(t)
	nftest.MustUpdate(t, e, func(tp *cube.Topology) error {
		if err := tp.AddCube(&cube.Cube{Name: "pf", Type: "portfwd", Hook: hook, Ports: []cube.Port{
			{Name: "p0", Index: 0, Peer: va}, {Name: "p1", Index: 1, Peer: vb}}}); err != nil {
			return err
		}
		for _, r := range []string{`{"in_port":"p0","out_port":"p1"}`, `{"in_port":"p1","out_port":"p0"}`} {
			if _, err := tp.PutEntry("pf", "rules", json.RawMessage(r)); err != nil {
				return err
			}
		}
		if err := tp.AddCube(&cube.Cube{Name: "fw", Type: "firewall", Hook: hook, Config: json.RawMessage(cfg)}); err != nil {
			return err
		}
		for table, rows := range map[string][]string{"ingress": ingress, "egress": egress} {
			for _, r := range rows {
				if _, err := tp.PutEntry("fw", table, json.RawMessage(r)); err != nil {
					return err
				}
			}
		}
		return tp.Attach("fw", vb, "last")
	})
	if hook == datapath.TC {
		nftest.CheckTCAttach(t, va, "")
	}
	return e, a, b
}

// tcpConnect opens (and closes) one TCP connection from one host to a
// listener on port in another; it reports whether the handshake completed.
func tcpConnect(t *testing.T, from, to *netlab.Host, dst string, port int) error {
	t.Helper()
	network := "tcp4"
	if strings.Contains(dst, ":") {
		network = "tcp6"
	}
	var ln *net.TCPListener
	if err := to.Do(func() (err error) {
		ln, err = net.ListenTCP(network, &net.TCPAddr{Port: port})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var c net.Conn
	err := from.Do(func() (err error) {
		c, err = net.DialTimeout(network, net.JoinHostPort(dst, fmt.Sprint(port)), 1500*time.Millisecond)
		return err
	})
	if err == nil {
		c.Close()
	}
	return err
}

// TestE2EFirewallPermitsAndBlocks: TCP, UDP and ICMP pass or are blocked
// exactly as the rules say; return traffic passes with accept_established
// and is blocked without it; counters and the log show the matches.
func TestE2EFirewallPermitsAndBlocks(t *testing.T) {
	testenv.E2E(t)
	for _, at := range nftest.Attachments {
		t.Run(at.Name, func(t *testing.T) {
			at.Use(t)
			hook := at.Hook
			e, a, b := fwLab(t, hook, `{"egress_policy":"drop","accept_established":true}`,
				[]string{`{"id":10,"proto":"tcp","dport":"7000","action":"drop"}`},
				[]string{
					`{"id":10,"proto":"tcp","dport":"5001","state":"new","action":"accept"}`,
					`{"id":20,"proto":"udp","dport":"6000-6001","action":"accept"}`,
					`{"id":30,"src":"198.18.1.2/32","proto":"icmp","action":"accept"}`,
					`{"id":40,"proto":"tcp","dport":"5002","action":"drop","log":true}`,
				})
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			if err := a.Ping(ctx, "198.18.1.3", 2); err != nil { // the 2nd request is established
				t.Fatalf("ping a->b (rule 30): %v", err)
			}
			if err := b.Ping(ctx, "198.18.1.2", 2); err != nil {
				t.Fatalf("ping b->a (ingress accept, reply established): %v", err)
			}
			if err := netlab.TCPTransfer(ctx, a, b, "198.18.1.3", 5001, 2<<20); err != nil {
				t.Fatalf("tcp a->b:5001 (rule 10): %v", err)
			}
			if err := tcpConnect(t, a, b, "198.18.1.3", 5002); err == nil {
				t.Fatal("tcp a->b:5002 connected; rule 40 drops it")
			}
			if err := tcpConnect(t, a, b, "198.18.1.3", 5003); err == nil {
				t.Fatal("tcp a->b:5003 connected; the egress policy drops it")
			}
			if sent, got, err := netlab.UDPFlow(ctx, a, b, "198.18.1.3", 6001, 200, 64, 5000); err != nil || got != sent {
				t.Fatalf("udp a->b:6001: %d/%d, %v", got, sent, err)
			}
			if _, got, _ := netlab.UDPFlow(ctx, a, b, "198.18.1.3", 6002, 50, 64, 5000); got != 0 {
				t.Fatalf("udp a->b:6002: %d datagrams passed the drop policy", got)
			}
			if err := tcpConnect(t, b, a, "198.18.1.2", 7000); err == nil {
				t.Fatal("tcp b->a:7000 connected; ingress rule 10 drops it")
			}
			if err := tcpConnect(t, b, a, "198.18.1.2", 7001); err != nil {
				t.Fatalf("tcp b->a:7001 (return traffic established): %v", err)
			}

			v, err := e.View(tenant.Admin, "fw", "counters")
			if err != nil {
				t.Fatal(err)
			}
			c := map[string]RuleCounter{}
			for _, r := range v.([]RuleCounter) {
				c[fmt.Sprintf("%s/%d", r.Chain, r.ID)] = r
			}
			if c["egress/10"].Packets == 0 || c["egress/40"].Packets == 0 || c["egress/20"].Packets < 200 ||
				c["ingress/10"].Packets == 0 || c["egress/-1"].Packets == 0 || c["egress/30"].Packets != 1 {
				t.Fatalf("counters %+v", v)
			}
			deadline := time.Now().Add(30 * time.Second) // (the log is read from a ring)
			for {
				lv, _ := e.View(tenant.Admin, "fw", "log")
				logs := lv.([]LogEntry)
				if len(logs) > 0 {
					if l := logs[0]; l.Rule != 40 || l.Chain != "egress" || l.Verdict != "drop" {
						t.Fatalf("log %+v", logs)
					}
					break
				}
				if time.Now().After(deadline) {
					t.Fatal("nothing logged for rule 40")
				}
				time.Sleep(50 * time.Millisecond)
			}

			// Bad input through the engine: refused, naming the field;
			// the running rules are untouched.
			for bad, want := range map[string]string{
				`{"id":50,"proto":"tcp","dport":"9-1","action":"accept"}`: "tables.egress.dport: inverted port range",
				`{"id":51,"src":"198.18.1.0/33","action":"accept"}`:       "tables.egress.src: invalid prefix",
				`{"id":52,"state":"new,sleepy","action":"accept"}`:        "tables.egress.state: unknown state",
			} {
				err := e.Update(func(tp *cube.Topology) error {
					_, err := tp.PutEntry("fw", "egress", json.RawMessage(bad))
					return err
				})
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Fatalf("%s: error %v, want %q", bad, err, want)
				}
			}
			if n := len(e.Topology().Lookup("fw").Tables["egress"]); n != 4 {
				t.Fatalf("egress chain has %d rules after refused changes, want 4", n)
			}
			if err := tcpConnect(t, a, b, "198.18.1.3", 5001); err != nil {
				t.Fatalf("rule 10 lost after refused changes: %v", err)
			}

			// Without accept_established the replies to b's connections
			// meet the egress drop policy.
			nftest.MustUpdate(t, e, func(tp *cube.Topology) error {
				return tp.SetConfig("fw", json.RawMessage(`{"egress_policy":"drop"}`))
			})
			if err := tcpConnect(t, b, a, "198.18.1.2", 7002); err == nil {
				t.Fatal("tcp b->a:7002 connected without accept_established")
			}
		})
	}
}

// TestE2ERouterNATFirewall: an edgenf router with a firewall (outermost) and
// a NAT stacked on its WAN port: inside → outside works through masquerade
// with return traffic accepted as established; from outside only the
// forwarded port the firewall allows gets in.
func TestE2ERouterNATFirewall(t *testing.T) {
	testenv.E2E(t)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	lab := netlab.NewT(t)
	a, err := lab.Host("a")
	must(err)
	s, err := lab.Host("s")
	must(err)
	va, err := lab.Veth(a, "eth0", "va", "198.18.1.2/24")
	must(err)
	vs, err := lab.Veth(s, "eth0", "vs", "198.19.0.1/24")
	must(err)
	must(a.AddRoute("default", "198.18.1.1"))
	e := nftest.Engine(t)
	nftest.MustUpdate(t, e, func(tp *cube.Topology) error {
		if err := tp.AddCube(&cube.Cube{Name: "r1", Type: "router", Ports: []cube.Port{
			{Name: "lan", Index: -1, Peer: va, Addresses: []string{"198.18.1.1/24"}},
			{Name: "wan", Index: -1, Peer: vs, Addresses: []string{"198.19.0.254/24"}},
		}}); err != nil {
			return err
		}
		if err := tp.AddCube(&cube.Cube{Name: "nat", Type: "nat", Config: json.RawMessage(`{"masquerade":true}`)}); err != nil {
			return err
		}
		for _, r := range []string{
			`{"id":1,"proto":"tcp","external_port":8080,"internal":"198.18.1.2"}`,
			`{"id":2,"proto":"tcp","external_port":8081,"internal":"198.18.1.2"}`,
		} {
			if _, err := tp.PutEntry("nat", "port_forwarding", json.RawMessage(r)); err != nil {
				return err
			}
		}
		if err := tp.AddCube(&cube.Cube{Name: "fw", Type: "firewall",
			Config: json.RawMessage(`{"ingress_policy":"drop","accept_established":true}`)}); err != nil {
			return err
		}
		if _, err := tp.PutEntry("fw", "ingress", json.RawMessage(`{"id":10,"proto":"tcp","dst":"198.19.0.254","dport":"8080","action":"accept"}`)); err != nil {
			return err
		}
		if err := tp.Attach("nat", "r1:wan", "last"); err != nil {
			return err
		}
		return tp.Attach("fw", "r1:wan", "first")
	})
	// Masquerade learns the port address within a tick.
	deadline := time.Now().Add(30 * time.Second)
	for {
		v, err := e.View(tenant.Admin, "nat", "status")
		must(err)
		if b, _ := json.Marshal(v); strings.Contains(string(b), `"masquerade_address":"198.19.0.254"`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("nat status %+v", v)
		}
		time.Sleep(100 * time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := a.Ping(ctx, "198.19.0.1", 2); err != nil {
		t.Fatalf("ping out: %v", err)
	}
	if err := netlab.TCPTransfer(ctx, a, s, "198.19.0.1", 5001, 4<<20); err != nil {
		t.Fatalf("upload out: %v", err)
	}
	if err := netlab.TCPTransfer(ctx, s, a, "198.19.0.254", 8080, 1<<20); err != nil {
		t.Fatalf("forwarded port allowed by the firewall: %v", err)
	}
	if err := tcpConnect(t, s, a, "198.19.0.254", 8081); err == nil {
		t.Fatal("forwarded port 8081 reachable; the firewall drops it")
	}
	if err := s.Ping(ctx, "198.19.0.254", 1); err == nil {
		t.Fatal("ping of the router from outside passed the ingress drop policy")
	}
}

// TestE2EFragmentedDatagramsMeetTheRules: large UDP datagrams, fragmented by
// the sender's kernel, meet a rule that drops their port: not one fragment
// reaches the receiver's IP layer (its reassembly counters do not move),
// while the datagrams of an allowed port arrive whole. A crafted later
// fragment of a datagram whose first fragment never came meets the drop
// policy of the other chain.
func TestE2EFragmentedDatagramsMeetTheRules(t *testing.T) {
	testenv.E2E(t)
	for _, hook := range []datapath.Hook{datapath.XDP, datapath.TC} {
		t.Run(string(hook), func(t *testing.T) {
			e, a, b := fwLab(t, hook, `{"ingress_policy":"drop"}`,
				[]string{`{"id":10,"proto":"udp","action":"accept"}`},
				[]string{`{"id":10,"proto":"udp","dport":"7000","action":"drop"}`})
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			stats := func(h *netlab.Host) map[string]uint64 {
				t.Helper()
				s, err := h.IPStats()
				if err != nil {
					t.Fatal(err)
				}
				return s
			}
			const n, size = 20, 3000 // three fragments each on a 1500-byte MTU
			before := stats(b)
			_, got, err := netlab.UDPFlow(ctx, a, b, "198.18.1.3", 7000, n, size, 200)
			if err != nil {
				t.Fatal(err)
			}
			after := stats(b)
			if got != 0 {
				t.Errorf("%d datagrams to the denied port arrived", got)
			}
			if d := after["ReasmReqds"] - before["ReasmReqds"]; d != 0 {
				t.Errorf("%d fragments of denied datagrams reached b", d)
			}
			sent, got, err := netlab.UDPFlow(ctx, a, b, "198.18.1.3", 7001, n, size, 200)
			if err != nil {
				t.Fatal(err)
			}
			if got != sent {
				t.Errorf("%d of %d allowed datagrams arrived", got, sent)
			}
			final := stats(b)
			if d := final["ReasmOKs"] - after["ReasmOKs"]; d != uint64(got) {
				t.Errorf("b reassembled %d datagrams, received %d", d, got)
			}
			c := map[string]RuleCounter{}
			v, err := e.View(tenant.Admin, "fw", "counters")
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range v.([]RuleCounter) {
				c[fmt.Sprintf("%s/%d", r.Chain, r.ID)] = r
			}
			if p := c["egress/10"].Packets; p < 3*n {
				t.Errorf("the drop rule counted %d packets, want every fragment of the %d datagrams", p, n)
			}
			// From b: a lone later fragment, never a first one: the
			// ingress chain's drop policy (no port to match rule 10).
			frag := rawFragment("198.18.1.3", "198.18.1.2", 17, 0x7777, 185, 64)
			before = stats(a)
			if err := b.SendRawIPv4(frag); err != nil {
				t.Fatal(err)
			}
			time.Sleep(200 * time.Millisecond) // no way to wait for a packet that must not come
			if d := stats(a)["ReasmReqds"] - before["ReasmReqds"]; d != 0 {
				t.Errorf("a lone later fragment reached a")
			}
			v, _ = e.View(tenant.Admin, "fw", "counters")
			found := false
			for _, r := range v.([]RuleCounter) {
				if r.Chain == "ingress" && r.ID == -2 && r.Packets >= 1 && r.Action == "drop" {
					found = true
				}
			}
			if !found {
				t.Errorf("no ingress row -2 with the lone fragment: %+v", v)
			}
		})
	}
}

// rawFragment is an IPv4 fragment (no more fragments after it) at byte
// offset off8*8 of datagram id, with n bytes of payload.
func rawFragment(src, dst string, proto byte, id uint16, off8 uint16, n int) []byte {
	p := make([]byte, 20+n)
	p[0] = 0x45
	p[2], p[3] = byte((20+n)>>8), byte(20+n)
	p[4], p[5] = byte(id>>8), byte(id)
	p[6], p[7] = byte(off8>>8), byte(off8)
	p[8], p[9] = 64, proto
	copy(p[12:16], net.ParseIP(src).To4())
	copy(p[16:20], net.ParseIP(dst).To4())
	return p
}
