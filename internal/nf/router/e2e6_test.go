package router

import (
	"context"
	"encoding/json"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/vishvananda/netlink"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/datapath"
	"github.com/edgenf/edgenf/internal/netlab"
	"github.com/edgenf/edgenf/internal/nftest"
	"github.com/edgenf/edgenf/internal/tenant"
	"github.com/edgenf/edgenf/internal/testenv"
)

// slaacAddr waits until h has a global address in pf configured from a
// router advertisement (not tentative), and a default route.
func slaacAddr(t *testing.T, h *netlab.Host, pf netip.Prefix, within time.Duration) string {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		var got string
		lk, err := h.Netlink().LinkByName("eth0")
		if err != nil {
			t.Fatal(err)
		}
		addrs, _ := h.Netlink().AddrList(lk, netlink.FAMILY_V6)
		for _, a := range addrs {
			ip, ok := netip.AddrFromSlice(a.IP)
			if ok && pf.Contains(ip) && a.Flags&0x40 == 0 { // not IFA_F_TENTATIVE
				got = ip.String()
			}
		}
		routes, _ := h.Netlink().RouteList(lk, netlink.FAMILY_V6)
		def := false
		for _, r := range routes {
			if (r.Dst == nil || r.Dst.String() == "::/0") && r.Gw != nil {
				def = true
			}
		}
		if got != "" && def {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s configured no address in %s with a default route from router advertisements within %v (addresses %v)", h.Name, pf, within, addrs)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestE2ERouterIPv6: dual-stack hosts on two links configure their IPv6
// addresses and default route from the router's advertisements (SLAAC; no
// static address, neighbour or route on the hosts), then ping6 the router
// and each other, and exchange UDP and TCP both ways; the router learned
// both hosts through neighbour discovery, and IPv4 works beside.
func TestE2ERouterIPv6(t *testing.T) {
	testenv.E2E(t)
	for _, hook := range []datapath.Hook{datapath.XDP, datapath.TC} {
		t.Run(string(hook), func(t *testing.T) {
			lab := netlab.NewT(t)
			must := func(err error) {
				t.Helper()
				if err != nil {
					t.Fatal(err)
				}
			}
			a, err := lab.Host("a")
			must(err)
			b, err := lab.Host("b")
			must(err)
			for _, h := range []*netlab.Host{a, b} {
				must(h.Sysctl("net.ipv6.conf.default.accept_ra", "2"))
				must(h.Sysctl("net.ipv6.conf.default.dad_transmits", "0"))
			}
			va, err := lab.Veth(a, "eth0", "ra", "198.18.0.10/24")
			must(err)
			vb, err := lab.Veth(b, "eth0", "rb", "198.18.1.20/24")
			must(err)
			must(a.AddRoute("default", "198.18.0.1"))
			must(b.AddRoute("default", "198.18.1.1"))
			e := nftest.Engine(t)
			nftest.MustUpdate(t, e, func(tp *cube.Topology) error {
				if err := tp.AddCube(&cube.Cube{Name: "r1", Type: "router", Hook: hook,
					Ports: []cube.Port{
						{Name: "p0", Index: -1, Peer: va, Addresses: []string{"198.18.0.1/24", "2001:db8:a::1/64"}},
						{Name: "p1", Index: -1, Peer: vb, Addresses: []string{"198.18.1.1/24", "2001:db8:b::1/64"}},
					}}); err != nil {
					return err
				}
				for _, p := range []string{"p0", "p1"} {
					if _, err := tp.PutEntry("r1", "ra", json.RawMessage(`{"port":"`+p+`","interval":4,"mtu":1400,"dns":["2001:db8:a::53"]}`)); err != nil {
						return err
					}
				}
				return nil
			})
			addrA := slaacAddr(t, a, netip.MustParsePrefix("2001:db8:a::/64"), 20*time.Second)
			addrB := slaacAddr(t, b, netip.MustParsePrefix("2001:db8:b::/64"), 20*time.Second)
			// The hosts took the link MTU from the advertisements' MTU option.
			for _, h := range []*netlab.Host{a, b} {
				out, err := h.Exec(context.Background(), "sysctl", "-n", "net.ipv6.conf.eth0.mtu")
				if err != nil || strings.TrimSpace(string(out)) != "1400" {
					t.Fatalf("%s: IPv6 MTU %q (%v), want 1400 from the RA's MTU option", h.Name, out, err)
				}
			}
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			must(a.Ping(ctx, "2001:db8:a::1", 2))
			must(a.Ping(ctx, addrB, 3))
			must(b.Ping(ctx, addrA, 2))
			for _, d := range []struct {
				from, to *netlab.Host
				dst      string
			}{{a, b, addrB}, {b, a, addrA}} {
				if sent, got, err := netlab.UDPFlow(ctx, d.from, d.to, d.dst, 7000, 200, 200, 2000); err != nil || got != sent {
					t.Fatalf("UDP %s -> %s: %d of %d (%v)", d.from.Name, d.dst, got, sent, err)
				}
				must(netlab.TCPTransfer(ctx, d.from, d.to, d.dst, 5001, 2<<20))
			}
			must(a.Ping(ctx, "198.18.1.20", 2))
			// b's link shrinks to 1280 bytes: a's larger packets get packet
			// too big (IPv6) and fragmentation needed (IPv4, DF), and a's
			// kernel records the path MTU.
			lk, err := netlink.LinkByName(vb)
			must(err)
			must(netlink.LinkSetMTU(lk, 1280))
			for _, dst := range []string{addrB, "198.18.1.20"} {
				deadline := time.Now().Add(15 * time.Second)
				for {
					a.Exec(ctx, "ping", "-M", "do", "-s", "1300", "-c", "1", "-W", "1", dst) // fails: too big
					out, _ := a.Exec(ctx, "ip", "route", "get", dst)
					if strings.Contains(string(out), "mtu 1280") {
						break
					}
					if time.Now().After(deadline) {
						t.Fatalf("a's route to %s after a 1328-byte ping through a 1280-byte link: %s", dst, out)
					}
					time.Sleep(500 * time.Millisecond)
				}
			}
			must(a.Ping(ctx, addrB, 1)) // small packets still pass
			v, err := e.View(tenant.Admin, "r1", "arp")
			must(err)
			learned := map[string]string{}
			for _, x := range v.([]ARPInfo) {
				learned[x.IP] = x.Type
			}
			if learned[addrA] != "dynamic" || learned[addrB] != "dynamic" {
				t.Fatalf("neighbour table %+v, want %s and %s learned", v, addrA, addrB)
			}
		})
	}
}
