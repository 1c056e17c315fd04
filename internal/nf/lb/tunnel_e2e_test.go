package lb

import (
	"encoding/json"
	"fmt"
	"net"
	"net/netip"
	"syscall"
	"testing"
	"time"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/datapath"
	"github.com/edgenf/edgenf/internal/netlab"
	"github.com/edgenf/edgenf/internal/nftest"
	"github.com/edgenf/edgenf/internal/tenant"
	"github.com/edgenf/edgenf/internal/testenv"
)

// tunnelReceiver is a backend's end of IPv6-in-IPv6 on a kernel without an
// ip6tnl device (this one has none): a raw socket of next header 41 in the
// backend's namespace, which the kernel hands every packet addressed to the
// backend with an IPv6 header inside (the inner packet, outer header
// stripped) and the outer source.
type tunnelReceiver struct{ fd int }

func listenTunnel(t *testing.T, h *netlab.Host) *tunnelReceiver {
	t.Helper()
	r := &tunnelReceiver{fd: -1}
	if err := h.Do(func() error {
		fd, err := syscall.Socket(syscall.AF_INET6, syscall.SOCK_RAW, syscall.IPPROTO_IPV6)
		if err != nil {
			return err
		}
		r.fd = fd
		tv := syscall.NsecToTimeval((500 * time.Millisecond).Nanoseconds())
		if err := syscall.SetsockoptTimeval(fd, syscall.SOL_SOCKET, syscall.SO_RCVTIMEO, &tv); err != nil {
			return err
		}
		// Room for every datagram of the test: read after they all came.
		return syscall.SetsockoptInt(fd, syscall.SOL_SOCKET, syscall.SO_RCVBUFFORCE, 8<<20)
	}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Close(r.fd) })
	return r
}

// tunneled is one packet a backend got through the tunnel.
type tunneled struct {
	outerSrc       netip.Addr
	src, dst       netip.Addr // the inner packet's
	sport, dport   uint16
	payload        string
	innerNextHdr   uint8
	innerHopLimit  uint8
	innerPayloadOK bool // the inner IPv6 payload length matches what came
}

// drain reads what arrived until the socket stays quiet.
func (r *tunnelReceiver) drain() []tunneled {
	var out []tunneled
	buf := make([]byte, 2048)
	for {
		n, from, err := syscall.Recvfrom(r.fd, buf, 0)
		if err != nil {
			return out
		}
		b := buf[:n]
		if n < 48 || b[0]>>4 != 6 {
			continue
		}
		p := tunneled{src: netip.AddrFrom16([16]byte(b[8:24])), dst: netip.AddrFrom16([16]byte(b[24:40])),
			innerNextHdr: b[6], innerHopLimit: b[7], innerPayloadOK: int(b[4])<<8|int(b[5]) == n-40}
		if sa, ok := from.(*syscall.SockaddrInet6); ok {
			p.outerSrc = netip.AddrFrom16(sa.Addr)
		}
		if p.innerNextHdr == syscall.IPPROTO_UDP {
			p.sport, p.dport = uint16(b[40])<<8|uint16(b[41]), uint16(b[42])<<8|uint16(b[43])
			p.payload = string(b[48:])
		}
		out = append(out, p)
	}
}

// TestTunnelIPv6E2E: a real client's UDP datagrams to an IPv6 tunnel-mode
// service reach two backend hosts' kernels as IPv6-in-IPv6 from the lb's
// port address, addressed to each backend, the client's datagram intact
// inside; every datagram of a flow at one backend, the flows spread by
// weight 1:3 and the lb's per-backend flow counts matching what arrived.
// At XDP and at TC.
func TestTunnelIPv6E2E(t *testing.T) {
	testenv.E2E(t)
	for _, hook := range []datapath.Hook{datapath.XDP, datapath.TC} {
		t.Run(string(hook), func(t *testing.T) { testTunnelE2E(t, hook) })
	}
}

func testTunnelE2E(t *testing.T, hook datapath.Hook) {
	pl := plan6
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
	must(cl.AddRoute(pl.vip+"/128", pl.frontAddr))
	ports := []cube.Port{{Name: "front", Index: 0, Peer: cIf, MAC: frontMAC, Addresses: []string{pl.frontAddr + pl.clientNet}}}
	var bes []Backend
	var rx []*tunnelReceiver
	for i := 1; i <= 2; i++ {
		h, err := lab.Host(fmt.Sprintf("b%d", i))
		must(err)
		root, err := lab.Veth(h, "eth0", fmt.Sprintf("b%d", i), pl.backend(i)+pl.backNet)
		must(err)
		mac, err := h.MAC("eth0")
		must(err)
		rx = append(rx, listenTunnel(t, h))
		ports = append(ports, cube.Port{Name: fmt.Sprintf("b%d", i), Index: i, Peer: root, Addresses: []string{pl.backGW + pl.backNet}})
		w := uint32(2*i - 1)
		bes = append(bes, Backend{Name: fmt.Sprintf("be%d", i), Address: pl.backend(i), MAC: mac.String(), Port: fmt.Sprintf("b%d", i), Weight: &w})
	}
	e := nftest.Engine(t)
	svc, _ := json.Marshal(Service{VIP: pl.vip, Protocol: "udp", Port: 80, Mode: "tunnel", TableSize: 251, Backends: bes})
	nftest.MustUpdate(t, e, func(tp *cube.Topology) error {
		if err := tp.AddCube(&cube.Cube{Name: "lb1", Type: "lb", Hook: hook, Ports: ports}); err != nil {
			return err
		}
		_, err := tp.PutEntry("lb1", "services", svc)
		return err
	})

	// The gateway's MAC known: a burst queued behind neighbour discovery
	// would lose all but its first datagrams (the queue is short).
	must(cl.SetNeigh("eth0", pl.frontAddr, frontMAC))
	// 200 flows (source ports), 2 datagrams each, from real sockets.
	const flows = 200
	must(cl.Do(func() error {
		for i := 0; i < flows; i++ {
			c, err := net.DialUDP("udp6", &net.UDPAddr{IP: net.ParseIP(pl.client), Port: 30000 + i}, &net.UDPAddr{IP: net.ParseIP(pl.vip), Port: 80})
			if err != nil {
				return err
			}
			for j := 0; j < 2; j++ {
				if _, err := fmt.Fprintf(c, "flow %d datagram %d", i, j); err != nil {
					c.Close()
					return err
				}
			}
			c.Close()
		}
		return nil
	}))
	client, vip, gw := netip.MustParseAddr(pl.client), netip.MustParseAddr(pl.vip), netip.MustParseAddr(pl.backGW)
	where := map[uint16]int{}
	got := map[int]int{}
	for i, r := range rx {
		for _, p := range r.drain() {
			if p.innerNextHdr != syscall.IPPROTO_UDP {
				continue // (e.g. the client's neighbour discovery: not tunneled, never here)
			}
			want := fmt.Sprintf("flow %d datagram ", int(p.sport)-30000)
			if p.outerSrc != gw || p.src != client || p.dst != vip || p.dport != 80 || p.innerHopLimit != 64 || !p.innerPayloadOK ||
				len(p.payload) != len(want)+1 || p.payload[:len(want)] != want {
				t.Fatalf("backend %d got %+v", i+1, p)
			}
			if b, seen := where[p.sport]; seen && b != i {
				t.Fatalf("flow from port %d at both backends", p.sport)
			}
			where[p.sport] = i
			got[i]++
		}
	}
	if got[0]+got[1] != 2*flows {
		t.Fatalf("%d of %d datagrams arrived through the tunnel (%v)", got[0]+got[1], 2*flows, got)
	}
	if got[0] < 2*flows/4*6/10 || got[0] > 2*flows/4*14/10 {
		t.Errorf("backend 1 (weight 1 of 4) got %d datagrams of %d", got[0], 2*flows)
	}
	v, err := e.View(tenant.Admin, "lb1", "services")
	must(err)
	for i, b := range v.([]ServiceStatus)[0].Backends {
		if b.Flows != uint64(got[i]/2) {
			t.Errorf("backend %s: %d flows counted, %d arrived", b.Name, b.Flows, got[i]/2)
		}
	}
}
