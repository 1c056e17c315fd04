package router

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
	"github.com/edgenf/edgenf/internal/nf/monitor"
	"github.com/edgenf/edgenf/internal/nftest"
	"github.com/edgenf/edgenf/internal/tenant"
	"github.com/edgenf/edgenf/internal/testenv"
)

// twoSubnets: host a (198.18.0.10/24) — router r1 — host b (198.18.1.20/24).
func twoSubnets(t *testing.T, hook datapath.Hook) (*engine.Engine, *netlab.Host, *netlab.Host) {
	t.Helper()
	lab := netlab.NewT(t)
	a, err := lab.Host("a")
	if err != nil {
		t.Fatal(err)
	}
	b, err := lab.Host("b")
	if err != nil {
		t.Fatal(err)
	}
	va, err := lab.Veth(a, "eth0", "ra", "198.18.0.10/24")
	if err != nil {
		t.Fatal(err)
	}
	vb, err := lab.Veth(b, "eth0", "rb", "198.18.1.20/24")
	if err != nil {
		t.Fatal(err)
	}
	if err := a.AddRoute("default", "198.18.0.1"); err != nil {
		t.Fatal(err)
	}
	if err := b.AddRoute("default", "198.18.1.1"); err != nil {
		t.Fatal(err)
	}
	e := nftest.Engine(t)
	nftest.MustUpdate(t, e, func(tp *cube.Topology) error {
		return tp.AddCube(&cube.Cube{Name: "r1", Type: "router", Hook: hook,
			Config: json.RawMessage(`{"icmp_rate_limit": 1000}`),
			Ports: []cube.Port{
				{Name: "p0", Index: -1, Peer: va, Addresses: []string{"198.18.0.1/24"}},
				{Name: "p1", Index: -1, Peer: vb, Addresses: []string{"198.18.1.1/24"}},
			}})
	})
	return e, a, b
}

func TestE2ERouterPingAndTCP(t *testing.T) {
	testenv.E2E(t)
	for _, hook := range []datapath.Hook{datapath.XDP, datapath.TC} {
		t.Run(string(hook), func(t *testing.T) {
			e, a, b := twoSubnets(t, hook)
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			// The router's own address answers ping (fast path echo).
			if err := a.Ping(ctx, "198.18.0.1", 2); err != nil {
				t.Fatal(err)
			}
			// Across: needs ARP resolution through the slow path first.
			if err := a.Ping(ctx, "198.18.1.20", 3); err != nil {
				t.Fatal(err)
			}
			if err := b.Ping(ctx, "198.18.0.10", 2); err != nil {
				t.Fatal(err)
			}
			const n = 8 << 20
			if err := netlab.TCPTransfer(ctx, a, b, "198.18.1.20", 5001, n); err != nil {
				t.Fatal(err)
			}
			st, err := e.Stats(tenant.Admin, "r1")
			if err != nil {
				t.Fatal(err)
			}
			if st.Ports[1].TxBytes < n {
				t.Fatalf("router sent %d bytes towards b, less than the %d transferred", st.Ports[1].TxBytes, n)
			}
			v, err := e.View(tenant.Admin, "r1", "arp")
			if err != nil {
				t.Fatal(err)
			}
			learned := map[string]string{}
			for _, x := range v.([]ARPInfo) {
				learned[x.IP] = x.Type
			}
			if learned["198.18.0.10"] != "dynamic" || learned["198.18.1.20"] != "dynamic" {
				t.Fatalf("arp table %+v", v)
			}
		})
	}
}

// icmpWait sends a UDP datagram with the given TTL from h to dst and waits
// for an ICMP error; it returns its type, code and source.
func icmpWait(t *testing.T, h *netlab.Host, dst string, ttl int, wait time.Duration) (int, int, string) {
	t.Helper()
	var ic net.PacketConn
	var udp *net.UDPConn
	if err := h.Do(func() error {
		var err error
		if ic, err = net.ListenPacket("ip4:icmp", "0.0.0.0"); err != nil {
			return err
		}
		udp, err = net.DialUDP("udp4", nil, &net.UDPAddr{IP: net.ParseIP(dst), Port: 33434})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer ic.Close()
	defer udp.Close()
	raw, _ := udp.SyscallConn()
	raw.Control(func(fd uintptr) { setTTL(int(fd), ttl) })
	end := time.Now().Add(wait)
	buf := make([]byte, 1500)
	next := time.Now()
	for time.Now().Before(end) {
		if time.Now().After(next) {
			udp.Write([]byte("probe"))
			next = time.Now().Add(time.Second)
		}
		ic.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
		n, from, err := ic.ReadFrom(buf)
		if err != nil || n < 8+28 {
			continue
		}
		// Only errors about our probe (quoted UDP to dst:33434).
		q := buf[8:n]
		if net.IP(q[16:20]).String() != dst || q[9] != 17 {
			continue
		}
		return int(buf[0]), int(buf[1]), from.String()
	}
	return -1, -1, ""
}

func TestE2ERouterICMPErrors(t *testing.T) {
	testenv.E2E(t)
	e, a, _ := twoSubnets(t, datapath.XDP)
	// Traceroute-style: TTL 1 expires at the router.
	typ, code, from := icmpWait(t, a, "198.18.1.20", 1, 3*time.Second)
	if typ != 11 || code != 0 || from != "198.18.0.1" {
		t.Fatalf("TTL 1: ICMP %d/%d from %q, want time exceeded (11/0) from 198.18.0.1", typ, code, from)
	}
	// TTL 2 gets through to b: b answers port unreachable itself.
	typ, _, from = icmpWait(t, a, "198.18.1.20", 2, 3*time.Second)
	if typ != 3 || from != "198.18.1.20" {
		t.Fatalf("TTL 2: ICMP %d from %q, want b's port unreachable", typ, from)
	}
	// No route: net unreachable.
	typ, code, _ = icmpWait(t, a, "198.19.9.9", 64, 3*time.Second)
	if typ != 3 || code != 0 {
		t.Fatalf("no route: ICMP %d/%d, want 3/0", typ, code)
	}
	// A next hop nobody answers for: host unreachable after ARP gives up.
	nftest.MustUpdate(t, e, func(tp *cube.Topology) error {
		_, err := tp.PutEntry("r1", "routes", json.RawMessage(`{"prefix":"198.19.0.0/16","next_hop":"198.18.1.99"}`))
		return err
	})
	typ, code, from = icmpWait(t, a, "198.19.0.5", 64, 8*time.Second)
	if typ != 3 || code != 1 || from != "198.18.0.1" {
		t.Fatalf("unresolvable next hop: ICMP %d/%d from %q, want host unreachable (3/1) from 198.18.0.1", typ, code, from)
	}
	c, _ := e.View(tenant.Admin, "r1", "counters")
	if cs := c.(Counters); cs.ResolveFailures == 0 || cs.ICMPSent < 3 {
		t.Fatalf("counters %+v", cs)
	}
}

// A transparent cube (monitor) on a router port sees the routed traffic and
// the router's own ARP requests in both directions; routing is unaffected.
func TestE2ERouterWithTransparentCubeOnPort(t *testing.T) {
	testenv.E2E(t)
	e, a, b := twoSubnets(t, datapath.XDP)
	nftest.MustUpdate(t, e, func(tp *cube.Topology) error {
		if err := tp.AddCube(&cube.Cube{Name: "m1", Type: "monitor", Hook: datapath.XDP}); err != nil {
			return err
		}
		return tp.Attach("m1", "r1:p1", "last")
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := a.Ping(ctx, "198.18.1.20", 3); err != nil {
		t.Fatal(err)
	}
	if err := netlab.TCPTransfer(ctx, b, a, "198.18.0.10", 5003, 1<<20); err != nil {
		t.Fatal(err)
	}
	v, err := e.View(tenant.Admin, "m1", "counters")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]uint64{}
	for _, c := range v.([]monitor.Count) {
		got[c.Direction+"/"+c.Protocol] = c.Packets
	}
	// Egress: out of the router towards b (echo requests, the router's ARP
	// request); ingress: from b into the router (echo replies, the TCP data).
	if got["egress/icmp"] < 3 || got["ingress/icmp"] < 3 || got["egress/arp"] < 1 || got["ingress/ipv4-tcp"] < 700 {
		t.Fatalf("monitor on r1:p1 saw %v", got)
	}
}

// Bad input through the engine (what the REST API and CLI call): clear
// errors naming the field, and the running router is left as it was.
func TestE2ERouterBadInputLeavesStateAlone(t *testing.T) {
	testenv.E2E(t)
	e, a, _ := twoSubnets(t, datapath.XDP)
	routesBefore, _ := e.View(tenant.Admin, "r1", "routes")
	cases := []struct {
		fn   func(tp *cube.Topology) error
		want string
	}{
		{func(tp *cube.Topology) error {
			_, err := tp.PutEntry("r1", "routes", json.RawMessage(`{"prefix":"198.19.0.0/16","next_hop":"198.20.0.1"}`))
			return err
		}, "next_hop: 198.20.0.1 is not on a connected subnet"},
		{func(tp *cube.Topology) error {
			_, err := tp.PutEntry("r1", "routes", json.RawMessage(`{"prefix":"198.19.0.0/99","next_hop":"198.18.1.20"}`))
			return err
		}, "prefix: invalid prefix"},
		{func(tp *cube.Topology) error {
			_, err := tp.PutEntry("r1", "routes", json.RawMessage(`{"prefix":"198.19.0.0/16","next_hop":"198.18.1.20","metric":5}`))
			return err
		}, "metric: unknown field"},
		{func(tp *cube.Topology) error {
			r1, err := tp.Edit("r1")
			r1.Ports[1].Addresses = []string{"198.18.0.200/24"}
			return err
		}, "overlaps 198.18.0.0/24 of port p0"},
		{func(tp *cube.Topology) error {
			return tp.SetConfig("r1", json.RawMessage(`{"icmp_rate_limit":-1}`))
		}, "config.icmp_rate_limit"},
	}
	for _, c := range cases {
		err := e.Update(c.fn)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("error %v, want %q", err, c.want)
		}
	}
	routesAfter, _ := e.View(tenant.Admin, "r1", "routes")
	if fmt.Sprint(routesBefore) != fmt.Sprint(routesAfter) {
		t.Fatalf("routes changed: %v → %v", routesBefore, routesAfter)
	}
	if got := e.Topology().Lookup("r1").Ports[1].Addresses; len(got) != 1 || got[0] != "198.18.1.1/24" {
		t.Fatalf("port addresses changed: %v", got)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := a.Ping(ctx, "198.18.1.20", 2); err != nil {
		t.Fatal(err)
	}
}
