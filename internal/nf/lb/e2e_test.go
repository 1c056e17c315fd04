package lb

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/datapath"
	"github.com/edgenf/edgenf/internal/engine"
	"github.com/edgenf/edgenf/internal/netlab"
	"github.com/edgenf/edgenf/internal/nf/counters"
	"github.com/edgenf/edgenf/internal/nftest"
	"github.com/edgenf/edgenf/internal/tenant"
	"github.com/edgenf/edgenf/internal/testenv"
	"github.com/vishvananda/netlink"
)

// backendServer is a tiny TCP server in a backend namespace: it reads the
// request line and answers with its name, then closes (so TIME_WAIT stays on
// the server side).
type backendServer struct {
	name     string
	accepted atomic.Int64
	ln       net.Listener
	wg       sync.WaitGroup
}

func serve(t *testing.T, h *netlab.Host, name string, port int) *backendServer {
	t.Helper()
	s := &backendServer{name: name}
	if err := h.Do(func() error {
		var err error
		s.ln, err = net.Listen("tcp", fmt.Sprintf(":%d", port)) // both families
		return err
	}); err != nil {
		t.Fatal(err)
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			c, err := s.ln.Accept()
			if err != nil {
				return
			}
			s.accepted.Add(1)
			go func() {
				defer c.Close()
				c.SetDeadline(time.Now().Add(5 * time.Second))
				buf := make([]byte, 64)
				if _, err := io.ReadFull(c, buf[:4]); err != nil {
					return
				}
				c.Write([]byte("hello from " + name))
			}()
		}
	}()
	t.Cleanup(func() { s.ln.Close(); s.wg.Wait() })
	return s
}

// plan is the addressing of the lab in one family.
type plan struct {
	client, clientNet string // the client's address and its subnet length
	vip               string
	frontAddr         string           // the lb's front port address (gateway of the client)
	backend           func(int) string // backend i's address
	backNet, backGW   string           // backends' subnet length and gateway (an lb port address)
}

var (
	plan4 = plan{client: "198.18.1.2", clientNet: "/24", vip: "198.18.9.100", frontAddr: "198.18.1.1",
		backend: func(i int) string { return fmt.Sprintf("198.18.2.%d", 10+i) }, backNet: "/24", backGW: "198.18.2.1"}
	plan6 = plan{client: "2001:db8:1::2", clientNet: "/64", vip: "2001:db8:9::100", frontAddr: "2001:db8:1::1",
		backend: func(i int) string { return fmt.Sprintf("2001:db8:2::%d", 10+i) }, backNet: "/64", backGW: "2001:db8:2::1"}
)

func (p plan) v6() bool { return strings.Contains(p.vip, ":") }

func (p plan) host(a string) string { // the address as a one-address prefix
	if p.v6() {
		return a + "/128"
	}
	return a + "/32"
}

// setupLB builds: client namespace — lb cube (port front) — 4 backend
// namespaces (ports b1..b4), each backend also linked directly to the
// client for DSR replies. Weights 1:2:3:4.
func setupLB(t *testing.T, hook datapath.Hook, mode string, tport int) (*netlab.Host, []*backendServer, *engine.Engine) {
	return setupLBPlan(t, hook, mode, tport, plan4)
}

func setupLBPlan(t *testing.T, hook datapath.Hook, mode string, tport int, pl plan) (*netlab.Host, []*backendServer, *engine.Engine) {
	lab := netlab.NewT(t)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	cl, err := lab.Host("c")
	must(err)
	cIf, err := lab.Veth(cl, "eth0", "c", pl.client+pl.clientNet)
	must(err)
	if pl.v6() {
		// The VIP on the link: the client resolves it itself (the lb
		// answers neighbour solicitations for it).
		lk, err := cl.Netlink().LinkByName("eth0")
		must(err)
		_, dst, _ := net.ParseCIDR(pl.host(pl.vip))
		must(cl.Netlink().RouteAdd(&netlink.Route{LinkIndex: lk.Attrs().Index, Dst: dst, Scope: netlink.SCOPE_LINK}))
	} else {
		must(cl.AddRoute("198.18.9.0/24", pl.frontAddr))
	}
	for _, k := range []string{"net/ipv4/conf/all/rp_filter", "net/ipv4/conf/default/rp_filter"} {
		must(cl.Sysctl(k, "0"))
	}
	ports := []cube.Port{{Name: "front", Index: 0, Peer: cIf, Addresses: []string{pl.frontAddr + pl.clientNet}}}
	var bes []Backend
	var servers []*backendServer
	listen := 80
	if mode == "nat" && tport != 0 {
		listen = tport
	}
	for i := 1; i <= 4; i++ {
		h, err := lab.Host(fmt.Sprintf("b%d", i))
		must(err)
		addr := pl.backend(i)
		root, err := lab.Veth(h, "eth0", fmt.Sprintf("b%d", i), addr+pl.backNet)
		must(err)
		mac, err := h.MAC("eth0")
		must(err)
		if mode == "dsr" {
			// The VIP on lo; replies go straight to the client over a
			// link of their own, not through the lb.
			must(h.AddAddr("lo", pl.host(pl.vip)))
			rdev := fmt.Sprintf("r%d", i)
			must(lab.Link(h, "r0", cl, rdev, nil, nil))
			lk, err := h.Netlink().LinkByName("r0")
			must(err)
			_, dst, _ := net.ParseCIDR(pl.host(pl.client))
			must(h.Netlink().RouteAdd(&netlink.Route{LinkIndex: lk.Attrs().Index, Dst: dst, Scope: netlink.SCOPE_LINK,
				Src: net.ParseIP(pl.vip)}))
			must(cl.Sysctl("net/ipv4/conf/"+rdev+"/rp_filter", "0"))
			if pl.v6() {
				// Linux answers neighbour solicitations only for the
				// addresses of the interface they arrive on.
				cmac, err := cl.MAC(rdev)
				must(err)
				must(h.SetNeigh("r0", pl.client, cmac.String()))
			}
		} else {
			must(h.AddRoute("default", pl.backGW))
		}
		ports = append(ports, cube.Port{Name: fmt.Sprintf("b%d", i), Index: i, Peer: root, Addresses: []string{pl.backGW + pl.backNet}})
		w := uint32(i)
		b := Backend{Name: fmt.Sprintf("be%d", i), Address: addr, MAC: mac.String(), Port: fmt.Sprintf("b%d", i), Weight: &w}
		if mode == "nat" {
			b.TargetPort = uint16(tport)
		}
		bes = append(bes, b)
		servers = append(servers, serve(t, h, b.Name, listen))
	}
	e := nftest.Engine(t)
	svc, _ := json.Marshal(Service{VIP: pl.vip, Port: 80, Mode: mode, Backends: bes})
	nftest.MustUpdate(t, e, func(tp *cube.Topology) error {
		if err := tp.AddCube(&cube.Cube{Name: "lb1", Type: "lb", Hook: hook, Ports: ports}); err != nil {
			return err
		}
		_, err := tp.PutEntry("lb1", "services", svc)
		return err
	})
	return cl, servers, e
}

// connect opens n TCP connections one after the other from client source
// ports first..first+n-1 to the VIP, sends a request and reads the reply
// (which names the backend) on each.
func connect(t *testing.T, cl *netlab.Host, pl plan, n, first int) map[string]int {
	t.Helper()
	got := map[string]int{}
	err := cl.Do(func() error {
		for i := 0; i < n; i++ {
			d := net.Dialer{Timeout: 3 * time.Second, LocalAddr: &net.TCPAddr{IP: net.ParseIP(pl.client), Port: first + i}}
			c, err := d.Dial("tcp", net.JoinHostPort(pl.vip, "80"))
			if err != nil {
				return fmt.Errorf("connection %d: %w", i, err)
			}
			c.SetDeadline(time.Now().Add(3 * time.Second))
			if _, err := c.Write([]byte("GET\n")); err != nil {
				c.Close()
				return fmt.Errorf("connection %d: write: %w", i, err)
			}
			b, err := io.ReadAll(c)
			c.Close()
			if err != nil || len(b) == 0 {
				return fmt.Errorf("connection %d: read %q: %v", i, b, err)
			}
			got[string(b)]++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func testThousand(t *testing.T, hook datapath.Hook, mode string, tport int) {
	testN(t, hook, mode, tport, 1000, plan4)
}

func testN(t *testing.T, hook datapath.Hook, mode string, tport, n int, pl plan) {
	cl, servers, e := setupLBPlan(t, hook, mode, tport, pl)
	testConns(t, cl, servers, e, mode, n, pl)
}

func testConns(t *testing.T, cl *netlab.Host, servers []*backendServer, e *engine.Engine, mode string, n int, pl plan) {
	start := time.Now()
	got := connect(t, cl, pl, n, 20000)
	t.Logf("%s: %d connections in %v: %v", mode, n, time.Since(start), got)
	total := 0
	for i, s := range servers {
		want := float64(n) * float64(i+1) / 10
		c := got["hello from "+s.name]
		total += c
		if n >= 1000 && (float64(c) < want*0.85 || float64(c) > want*1.15) {
			t.Errorf("%s (weight %d): %d connections, want %.0f ±15%%", s.name, i+1, c, want)
		}
		if int(s.accepted.Load()) != c {
			t.Errorf("%s accepted %d, answered %d", s.name, s.accepted.Load(), c)
		}
	}
	if total != n {
		t.Errorf("%d of %d connections completed", total, n)
	}
	v, err := e.View(tenant.Admin, "lb1", "services")
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range v.([]ServiceStatus)[0].Backends {
		if b.Flows != uint64(got["hello from "+b.Name]) {
			t.Errorf("backend %s: %d flows counted, %d connections", b.Name, b.Flows, got["hello from "+b.Name])
		}
	}
	checkReplyPath(t, e, mode, n)
}

// The replies' path: in DSR they bypass the lb (its front port sends only
// ARP replies); in NAT every reply is translated by it.
func checkReplyPath(t *testing.T, e *engine.Engine, mode string, n int) {
	st, err := e.Stats(tenant.Admin, "lb1")
	if err != nil {
		t.Fatal(err)
	}
	cv, _ := e.View(tenant.Admin, "lb1", "counters")
	c := map[string]uint64{}
	for _, x := range cv.([]counters.Counter) {
		c[x.Name] = x.Value
	}
	front := st.Ports[0]
	t.Logf("%s: front port %+v, counters %v", mode, front.Stats, c)
	// (unknown: stray IPv6 multicast and the like from the namespaces)
	if c["no_backend"] != 0 {
		t.Errorf("flows without a backend: %v", c)
	}
	if mode == "dsr" && (front.TxPackets > c["arp_replies"] || c["replies"] != 0) {
		t.Errorf("DSR: the lb sent %d packets to the client (ARP replies %d)", front.TxPackets, c["arp_replies"])
	}
	if mode == "nat" && (c["replies"] < uint64(3*n) || front.TxPackets < c["replies"]) {
		t.Errorf("NAT: %d replies translated for %d connections, %d sent to the client", c["replies"], n, front.TxPackets)
	}
}

func TestThousandConnectionsDSR(t *testing.T) {
	testenv.E2E(t)
	testThousand(t, datapath.XDP, "dsr", 0)
}

func TestThousandConnectionsNAT(t *testing.T) {
	testenv.E2E(t)
	testThousand(t, datapath.XDP, "nat", 8080)
}

// At TC the same, with 200 connections (skbs: GSO, checksum offload).
func TestConnectionsTC(t *testing.T) {
	testenv.E2E(t)
	for _, mode := range []string{"dsr", "nat"} {
		t.Run(mode, func(t *testing.T) { testN(t, datapath.TC, mode, 8080, 200, plan4) })
	}
}

// IPv6: an IPv6 VIP spreads 1,000 connections over IPv6 backends by weight,
// in DSR (the backends answer the client directly as the VIP) and in NAT
// mode at XDP, 200 at TC; the client finds the VIP, and NAT backends their
// gateway, through neighbour discovery answered by the lb.
func TestThousandConnectionsIPv6(t *testing.T) {
	testenv.E2E(t)
	for _, mode := range []string{"dsr", "nat"} {
		t.Run(mode, func(t *testing.T) { testN(t, datapath.XDP, mode, 8080, 1000, plan6) })
	}
}

func TestConnectionsIPv6TC(t *testing.T) {
	testenv.E2E(t)
	for _, mode := range []string{"dsr", "nat"} {
		t.Run(mode, func(t *testing.T) { testN(t, datapath.TC, mode, 8080, 200, plan6) })
	}
}
