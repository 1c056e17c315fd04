package nat

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/datapath"
	"github.com/edgenf/edgenf/internal/engine"
	"github.com/edgenf/edgenf/internal/netlab"
	"github.com/edgenf/edgenf/internal/nftest"
	"github.com/edgenf/edgenf/internal/testenv"
	"github.com/vishvananda/netlink"

	"github.com/edgenf/edgenf/internal/nf/counters"
	_ "github.com/edgenf/edgenf/internal/nf/portfwd"
	_ "github.com/edgenf/edgenf/internal/nf/router"
	"github.com/edgenf/edgenf/internal/tenant"
)

// natLab is: inside hosts a1 (198.18.1.2) and a2 (198.18.2.2) behind a Linux
// router namespace r (wan 198.19.0.254/24); r's wan veth and the server's veth
// (198.19.0.1/24) are joined by an edgenf portfwd cube "pf" acting as a wire,
// and the NAT sits on the wire's server side: between a router and the
// outside, where it sits at an edge site. The router is Linux's so that a
// failure here is the NAT's alone (the edge demo stacks it on a UPF's n6).
type natLab struct {
	e         *engine.Engine
	lab       *netlab.Lab
	a1, a2, s *netlab.Host
	r         *netlab.Host
	wan, srv  string // root-side veth names
}

func newNATLab(t *testing.T, hook datapath.Hook) *natLab {
	t.Helper()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	l := &natLab{lab: netlab.NewT(t)}
	var err error
	for _, h := range []struct {
		p    **netlab.Host
		name string
	}{{&l.a1, "a1"}, {&l.a2, "a2"}, {&l.s, "s"}, {&l.r, "r"}} {
		*h.p, err = l.lab.Host(h.name)
		must(err)
	}
	must(l.lab.Link(l.a1, "eth0", l.r, "in1", []string{"198.18.1.2/24"}, []string{"198.18.1.1/24"}))
	must(l.lab.Link(l.a2, "eth0", l.r, "in2", []string{"198.18.2.2/24"}, []string{"198.18.2.1/24"}))
	must(l.a1.AddRoute("default", "198.18.1.1"))
	must(l.a2.AddRoute("default", "198.18.2.1"))
	must(l.r.Sysctl("net.ipv4.ip_forward", "1"))
	l.wan, err = l.lab.Veth(l.r, "wan", "wan", "198.19.0.254/24")
	must(err)
	l.srv, err = l.lab.Veth(l.s, "eth0", "srv", "198.19.0.1/24")
	must(err)
	l.e = nftest.Engine(t)
	nftest.MustUpdate(t, l.e, func(tp *cube.Topology) error {
		if err := tp.AddCube(&cube.Cube{Name: "pf", Type: "portfwd", Hook: hook, Ports: []cube.Port{
			{Name: "p0", Index: 0, Peer: l.wan},
			{Name: "p1", Index: 1, Peer: l.srv, Addresses: []string{"198.19.0.254/24"}},
		}}); err != nil {
			return err
		}
		for _, r := range []string{`{"in_port":"p0","out_port":"p1"}`, `{"in_port":"p1","out_port":"p0"}`} {
			if _, err := tp.PutEntry("pf", "rules", json.RawMessage(r)); err != nil {
				return err
			}
		}
		return nil
	})
	return l
}

// addNAT adds the NAT cube and attaches it to point.
func (l *natLab) addNAT(t *testing.T, hook datapath.Hook, point string, cfg string, rules map[string][]string) {
	t.Helper()
	nftest.MustUpdate(t, l.e, func(tp *cube.Topology) error {
		c := &cube.Cube{Name: "nat", Type: "nat", Hook: hook}
		if cfg != "" {
			c.Config = json.RawMessage(cfg)
		}
		if err := tp.AddCube(c); err != nil {
			return err
		}
		for table, rows := range rules {
			for _, r := range rows {
				if _, err := tp.PutEntry("nat", table, json.RawMessage(r)); err != nil {
					return err
				}
			}
		}
		return tp.Attach("nat", point, "last")
	})
}

// waitMasq waits until the NAT learned its masquerade address.
func (l *natLab) waitMasq(t *testing.T, want string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second) // (a tick, on a busy machine)
	for {
		v, err := l.e.View(tenant.Admin, "nat", "status")
		if err != nil {
			t.Fatal(err)
		}
		st := v.(Status)
		if st.MasqueradeAddress == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("masquerade address %q after 30 s, want %s (status %+v)", st.MasqueradeAddress, want, st)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// udpEcho serves on port in h: answers each datagram with the sender's
// address as the server saw it. Stopped at test end.
func udpEcho(t *testing.T, h *netlab.Host, port int) {
	t.Helper()
	var c *net.UDPConn
	if err := h.Do(func() (err error) {
		c, err = net.ListenUDP("udp", &net.UDPAddr{Port: port}) // both families
		return err
	}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	go func() {
		buf := make([]byte, 2048)
		for {
			n, from, err := c.ReadFromUDP(buf)
			if err != nil {
				return
			}
			c.WriteToUDP([]byte(string(buf[:n])+"|"+from.String()), from)
		}
	}()
}

// tcpWhoAmI serves on port in h: writes the peer's address and closes.
func tcpWhoAmI(t *testing.T, h *netlab.Host, port int) {
	t.Helper()
	var ln *net.TCPListener
	if err := h.Do(func() (err error) {
		ln, err = net.ListenTCP("tcp", &net.TCPAddr{Port: port}) // both families
		return err
	}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Write([]byte(c.RemoteAddr().String()))
			c.Close()
		}
	}()
}

// udpAsk sends msg from local port lport of h to dst and returns the reply
// (retrying a few times: the first datagrams may wait for ARP).
func udpAsk(ctx context.Context, h *netlab.Host, lport int, dst string, msg string) (string, error) {
	var c *net.UDPConn
	network := family(dst, "udp")
	if err := h.Do(func() (err error) {
		c, err = net.ListenUDP(network, &net.UDPAddr{Port: lport})
		return err
	}); err != nil {
		return "", err
	}
	defer c.Close()
	raddr, _ := net.ResolveUDPAddr(network, dst)
	buf := make([]byte, 2048)
	for i := 0; i < 20 && ctx.Err() == nil; i++ {
		if _, err := c.WriteToUDP([]byte(msg), raddr); err != nil {
			return "", err
		}
		c.SetReadDeadline(time.Now().Add(250 * time.Millisecond))
		n, _, err := c.ReadFromUDP(buf)
		if err == nil {
			return string(buf[:n]), nil
		}
	}
	return "", fmt.Errorf("no UDP reply from %s to %s", dst, h.Name)
}

// family is network ("udp", "tcp") for the family of dst ("[v6]:port" or
// "v4:port").
func family(dst, network string) string {
	if strings.HasPrefix(dst, "[") {
		return network + "6"
	}
	return network + "4"
}

// tcpAsk connects from local port lport of h to dst and reads what the
// server says.
func tcpAsk(ctx context.Context, h *netlab.Host, lport int, dst string) (string, error) {
	var c net.Conn
	d := net.Dialer{LocalAddr: &net.TCPAddr{Port: lport}, Timeout: 5 * time.Second}
	if err := h.Do(func() (err error) {
		c, err = d.DialContext(ctx, family(dst, "tcp"), dst)
		return err
	}); err != nil {
		return "", err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	var sb strings.Builder
	buf := make([]byte, 256)
	for {
		n, err := c.Read(buf)
		sb.Write(buf[:n])
		if err != nil {
			break
		}
	}
	return sb.String(), nil
}

// twoHostsSamePort runs UDP and TCP from a1 and a2 with the same source port
// at the same time and checks the server saw distinct translated sources of
// the masquerade address, and each host got its own answer.
func twoHostsSamePort(t *testing.T, l *natLab, extAddr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	udpEcho(t, l.s, 7777)
	tcpWhoAmI(t, l.s, 7778)
	// Warm ARP in r and s (not required, but keeps the concurrent part short).
	if err := l.a1.Ping(ctx, "198.19.0.1", 1); err != nil {
		t.Fatalf("ping through NAT: %v", err)
	}
	type answer struct {
		host       string
		udp, tcp   string
		udpE, tcpE error
	}
	res := make([]answer, 2)
	var wg sync.WaitGroup
	for i, h := range []*netlab.Host{l.a1, l.a2} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res[i].host = h.Name
			res[i].udp, res[i].udpE = udpAsk(ctx, h, 40000, "198.19.0.1:7777", h.Name)
			res[i].tcp, res[i].tcpE = tcpAsk(ctx, h, 40001, "198.19.0.1:7778")
		}()
	}
	wg.Wait()
	seenUDP, seenTCP := map[string]bool{}, map[string]bool{}
	for _, r := range res {
		if r.udpE != nil || r.tcpE != nil {
			t.Fatalf("%s: udp %v, tcp %v", r.host, r.udpE, r.tcpE)
		}
		msg, from, _ := strings.Cut(r.udp, "|")
		if msg != r.host {
			t.Errorf("%s got the answer meant for %s", r.host, msg)
		}
		if !strings.HasPrefix(from, extAddr+":") || !strings.HasPrefix(r.tcp, extAddr+":") {
			t.Errorf("%s: server saw udp %s tcp %s, want %s:*", r.host, from, r.tcp, extAddr)
		}
		seenUDP[from] = true
		seenTCP[r.tcp] = true
	}
	if len(seenUDP) != 2 || len(seenTCP) != 2 {
		t.Fatalf("server saw udp %v tcp %v: want two distinct sources each", seenUDP, seenTCP)
	}
	v, err := l.e.View(tenant.Admin, "nat", "sessions")
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]int{}
	for _, s := range v.([]Session) {
		kinds[s.Proto]++
	}
	if kinds["udp"] < 2 || kinds["tcp"] < 2 || kinds["icmp"] < 1 {
		t.Fatalf("sessions %+v", v)
	}
}

// TestE2EMasqueradeOnInterface: NAT attached to a Linux interface learns its
// address with netlink and masquerades two inside hosts using the same source
// ports at the same time.
func TestE2EMasqueradeOnInterface(t *testing.T) {
	testenv.E2E(t)
	l := newNATLab(t, datapath.XDP)
	// The interface's own address is what masquerade uses.
	lk, err := netlink.LinkByName(l.srv)
	if err != nil {
		t.Fatal(err)
	}
	addr, _ := netlink.ParseAddr("198.19.0.254/32")
	if err := netlink.AddrAdd(lk, addr); err != nil {
		t.Fatal(err)
	}
	l.addNAT(t, datapath.XDP, l.srv, `{"masquerade": true}`, nil)
	l.waitMasq(t, "198.19.0.254")
	twoHostsSamePort(t, l, "198.19.0.254")
}

// TestE2ESNATUploadAndPortForward (both hooks): NAT on a cube port; SNAT of
// the inside prefixes, an 8 MB TCP upload arrives intact, and a port
// forwarding rule lets the server reach a service on a1.
func TestE2ESNATUploadAndPortForward(t *testing.T) {
	testenv.E2E(t)
	for _, at := range nftest.Attachments {
		t.Run(at.Name, func(t *testing.T) {
			at.Use(t)
			hook := at.Hook
			l := newNATLab(t, hook)
			if at.TC != "" {
				nftest.CheckTCAttach(t, l.srv, at.TC)
			}
			l.addNAT(t, hook, "pf:p1", "", map[string][]string{
				"snat":            {`{"id":1,"internal":"198.18.0.0/16","external":"198.19.0.254"}`},
				"port_forwarding": {`{"id":1,"proto":"tcp","external":"198.19.0.254","external_port":8080,"internal":"198.18.1.2"}`},
			})
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			twoHostsSamePort(t, l, "198.19.0.254")
			const n = 8<<20 + 123
			if err := netlab.TCPTransfer(ctx, l.a2, l.s, "198.19.0.1", 5001, n); err != nil {
				t.Fatalf("upload through NAT: %v", err)
			}
			if err := netlab.TCPTransfer(ctx, l.s, l.a1, "198.19.0.254", 8080, 1<<20); err != nil {
				t.Fatalf("port forwarding: %v", err)
			}
			v, _ := l.e.View(tenant.Admin, "nat", "sessions")
			var up, fwd bool
			for _, s := range v.([]Session) {
				if s.Remote == "198.19.0.1:5001" && s.Bytes > n {
					up = true
				}
				if s.Kind == "port-forward" && s.Inside == "198.18.1.2:8080" && s.Outside == "198.19.0.254:8080" {
					fwd = true
				}
			}
			if !up || !fwd {
				t.Fatalf("sessions (upload %v, forward %v): %+v", up, fwd, v)
			}
		})
	}
}

// routerNATLab: a1 (198.18.1.2) and a2 (198.18.2.2) behind an edgenf router
// r1 (lan1 198.18.1.1/24, lan2 198.18.2.1/24, wan 198.19.0.254/24) towards
// server s (198.19.0.1/24, no route back to the inside); NAT masquerades on
// r1:wan.
func routerNATLab(t *testing.T, hook datapath.Hook) *natLab {
	t.Helper()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	l := &natLab{lab: netlab.NewT(t)}
	var err error
	for _, h := range []struct {
		p    **netlab.Host
		name string
	}{{&l.a1, "a1"}, {&l.a2, "a2"}, {&l.s, "s"}} {
		*h.p, err = l.lab.Host(h.name)
		must(err)
	}
	v1, err := l.lab.Veth(l.a1, "eth0", "v1", "198.18.1.2/24")
	must(err)
	v2, err := l.lab.Veth(l.a2, "eth0", "v2", "198.18.2.2/24")
	must(err)
	vs, err := l.lab.Veth(l.s, "eth0", "vs", "198.19.0.1/24")
	must(err)
	l.srv = vs
	must(l.a1.AddRoute("default", "198.18.1.1"))
	must(l.a2.AddRoute("default", "198.18.2.1"))
	l.e = nftest.Engine(t)
	nftest.MustUpdate(t, l.e, func(tp *cube.Topology) error {
		return tp.AddCube(&cube.Cube{Name: "r1", Type: "router", Hook: hook, Ports: []cube.Port{
			{Name: "lan1", Index: -1, Peer: v1, Addresses: []string{"198.18.1.1/24"}},
			{Name: "lan2", Index: -1, Peer: v2, Addresses: []string{"198.18.2.1/24"}},
			{Name: "wan", Index: -1, Peer: vs, Addresses: []string{"198.19.0.254/24"}},
		}})
	})
	return l
}

// TestE2ERouterNAT: two inside hosts behind router + nat (masquerade on the
// router's wan port) talk to an outside server with the same source ports at
// the same time; an 8 MB upload arrives intact; port forwarding reaches a1.
func TestE2ERouterNAT(t *testing.T) {
	testenv.E2E(t)
	for _, at := range nftest.Attachments {
		t.Run(at.Name, func(t *testing.T) {
			at.Use(t)
			hook := at.Hook
			l := routerNATLab(t, hook)
			if at.TC != "" {
				nftest.CheckTCAttach(t, l.srv, at.TC)
			}
			l.addNAT(t, hook, "r1:wan", `{"masquerade": true}`, map[string][]string{
				"port_forwarding": {`{"id":1,"proto":"tcp","external_port":8080,"internal":"198.18.1.2"}`},
			})
			l.waitMasq(t, "198.19.0.254")
			// Bad rules are refused through the engine, naming the field;
			// nothing changes.
			for table, bad := range map[string]string{
				"snat":            `{"id":5,"internal":"198.18.9.0/24"}`,
				"dnat":            `{"id":5,"external":"198.19.0.77","internal":"198.18.1.300"}`,
				"port_forwarding": `{"id":5,"proto":"tcp","external_port":0,"internal":"198.18.1.2"}`,
			} {
				err := l.e.Update(func(tp *cube.Topology) error {
					_, err := tp.PutEntry("nat", table, json.RawMessage(bad))
					return err
				})
				if err == nil || !strings.Contains(err.Error(), "tables."+table+".") {
					t.Fatalf("%s %s: error %v", table, bad, err)
				}
			}
			if tb := l.e.Topology().Lookup("nat").Tables; len(tb["snat"]) != 0 || len(tb["dnat"]) != 0 || len(tb["port_forwarding"]) != 1 {
				t.Fatalf("tables changed by refused rules: %v", tb)
			}
			twoHostsSamePort(t, l, "198.19.0.254")
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			const n = 8<<20 + 321
			if err := netlab.TCPTransfer(ctx, l.a1, l.s, "198.19.0.1", 5001, n); err != nil {
				t.Fatalf("upload through router + NAT: %v", err)
			}
			if err := netlab.TCPTransfer(ctx, l.s, l.a1, "198.19.0.254", 8080, 1<<20); err != nil {
				t.Fatalf("port forwarding through router + NAT: %v", err)
			}
			// The router's own address still answers from outside.
			if err := l.s.Ping(ctx, "198.19.0.254", 1); err != nil {
				t.Fatalf("ping the router's wan address: %v", err)
			}
		})
	}
}

// TestE2EFragmentedDatagramsThroughNAT (both hooks): large UDP datagrams,
// fragmented by the sender's kernel, cross the NAT both ways: out with
// SNAT, in through port forwarding. Every fragment is translated (the
// receivers reassemble every datagram: a fragment with another address
// would never join its datagram). A lone later fragment from an inside
// host, which the NAT cannot translate, does not leave: the server's IP
// layer never sees it.
func TestE2EFragmentedDatagramsThroughNAT(t *testing.T) {
	testenv.E2E(t)
	for _, hook := range []datapath.Hook{datapath.XDP, datapath.TC} {
		t.Run(string(hook), func(t *testing.T) {
			l := newNATLab(t, hook)
			l.addNAT(t, hook, "pf:p1", "", map[string][]string{
				"snat":            {`{"id":1,"internal":"198.18.0.0/16","external":"198.19.0.254"}`},
				"port_forwarding": {`{"id":1,"proto":"udp","external":"198.19.0.254","external_port":9001,"internal":"198.18.1.2"}`},
			})
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
			const n, size = 20, 3000
			before := stats(l.s)
			sent, got, err := netlab.UDPFlow(ctx, l.a1, l.s, "198.19.0.1", 9000, n, size, 200)
			if err != nil || got != sent {
				t.Fatalf("out: %d of %d datagrams arrived (%v)", got, sent, err)
			}
			after := stats(l.s)
			if d := after["ReasmOKs"] - before["ReasmOKs"]; d != uint64(got) {
				t.Errorf("the server reassembled %d datagrams, want %d", d, got)
			}
			sent, got, err = netlab.UDPFlow(ctx, l.s, l.a1, "198.19.0.254", 9001, n, size, 200)
			if err != nil || got != sent {
				t.Fatalf("in: %d of %d datagrams arrived (%v)", got, sent, err)
			}
			// A lone later fragment from a1.
			frag := make([]byte, 20+64)
			frag[0], frag[2], frag[3], frag[4], frag[5], frag[7], frag[8], frag[9] = 0x45, 0, 84, 0x55, 0x55, 185, 64, 17
			copy(frag[12:16], []byte{198, 18, 1, 2})
			copy(frag[16:20], []byte{198, 19, 0, 1})
			v, _ := l.e.View(tenant.Admin, "nat", "counters")
			drops := func(v any) uint64 {
				for _, c := range v.([]counters.Counter) {
					if c.Name == "untranslatable_drops" {
						return c.Value
					}
				}
				return 0
			}
			d0 := drops(v)
			before = stats(l.s)
			if err := l.a1.SendRawIPv4(frag); err != nil {
				t.Fatal(err)
			}
			deadline := time.Now().Add(30 * time.Second)
			for {
				v, _ = l.e.View(tenant.Admin, "nat", "counters")
				if drops(v) > d0 || time.Now().After(deadline) {
					break
				}
				time.Sleep(50 * time.Millisecond)
			}
			if drops(v) != d0+1 {
				t.Errorf("untranslatable_drops %d, want %d", drops(v), d0+1)
			}
			if d := stats(l.s)["ReasmReqds"] - before["ReasmReqds"]; d != 0 {
				t.Errorf("%d untranslated fragments reached the server", d)
			}
		})
	}
}
