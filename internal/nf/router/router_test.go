package router

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/datapath"
	"github.com/edgenf/edgenf/internal/nftest"
	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
)

const (
	macP0 = "02:00:00:00:aa:00"
	macP1 = "02:00:00:00:aa:01"
	macP2 = "02:00:00:00:aa:02"
	macH0 = "02:00:00:00:00:10"
	macN1 = "02:00:00:00:00:11"
	macN2 = "02:00:00:00:00:12"
)

func model(hook datapath.Hook, routes []Route, arp []Neighbor) *cube.Cube {
	c := &cube.Cube{Name: "r1", Type: "router", Hook: hook,
		Ports: []cube.Port{
			{Name: "p0", Index: 0, MAC: macP0, Addresses: []string{"198.18.0.1/24"}},
			{Name: "p1", Index: 1, MAC: macP1, Addresses: []string{"198.18.1.1/24"}},
			{Name: "p2", Index: 2, MAC: macP2, Addresses: []string{"198.18.2.1/24", "198.18.3.1/24"}},
		},
		Tables: map[string]map[string]json.RawMessage{}}
	if len(routes) > 0 {
		c.Tables["routes"] = map[string]json.RawMessage{}
		for _, r := range routes {
			c.Tables["routes"][r.Prefix] = nftest.Entry(r)
		}
	}
	if len(arp) > 0 {
		c.Tables["arp"] = map[string]json.RawMessage{}
		for _, n := range arp {
			c.Tables["arp"][n.IP] = nftest.Entry(n)
		}
	}
	return c
}

var hooks = []struct {
	hook       datapath.Hook
	sent, drop uint32
}{
	{datapath.XDP, datapath.XDPRedirect, datapath.XDPDrop},
	{datapath.TC, datapath.TCActRedirect, datapath.TCActShot},
}

// ipFrame builds Ethernet/IPv4/payload addressed to the router's port MAC.
func udpTo(dstMAC, src, dst string, ttl uint8) []byte {
	eth := &layers.Ethernet{SrcMAC: nftest.MAC(macH0), DstMAC: nftest.MAC(dstMAC), EthernetType: layers.EthernetTypeIPv4}
	ip := &layers.IPv4{Version: 4, TTL: ttl, Id: 0x1234, Protocol: layers.IPProtocolUDP, SrcIP: net.ParseIP(src), DstIP: net.ParseIP(dst)}
	udp := &layers.UDP{SrcPort: 33434, DstPort: 33435}
	return nftest.Serialize(eth, ip, udp, gopacket.Payload([]byte("payload-bytes")))
}

func decode(t *testing.T, b []byte) gopacket.Packet {
	t.Helper()
	return gopacket.NewPacket(b, layers.LayerTypeEthernet, gopacket.Default)
}

// checkIPv4Csum verifies the IPv4 header checksum of a frame.
func checkIPv4Csum(t *testing.T, f []byte) {
	t.Helper()
	if checksum(f[14:34]) != 0 {
		t.Fatalf("bad IPv4 header checksum: % x", f[14:34])
	}
}

func TestForwardConnectedTTLChecksum(t *testing.T) {
	for _, h := range hooks {
		t.Run(string(h.hook), func(t *testing.T) {
			r := nftest.New(t, Type, model(h.hook, nil, []Neighbor{{IP: "198.18.1.20", MAC: macN1}}))
			in := udpTo(macP0, "198.18.0.10", "198.18.1.20", 64)
			res := r.Run("p0", in)
			if res.Verdict != h.sent || res.Port != 1 {
				t.Fatalf("verdict %d port %d, want sent out of port 1", res.Verdict, res.Port)
			}
			out := res.Data[:len(in)]
			if !bytes.Equal(out[0:6], nftest.MAC(macN1)) || !bytes.Equal(out[6:12], nftest.MAC(macP1)) {
				t.Fatalf("MACs: dst %x src %x", out[0:6], out[6:12])
			}
			if out[14+8] != 63 {
				t.Fatalf("TTL %d, want 63", out[14+8])
			}
			checkIPv4Csum(t, out)
			// Nothing but TTL and checksum changed in the IP packet.
			a, b := append([]byte(nil), in[14:]...), append([]byte(nil), out[14:]...)
			a[8], b[8], a[10], a[11], b[10], b[11] = 0, 0, 0, 0, 0, 0
			if !bytes.Equal(a, b) {
				t.Fatal("IP packet changed beyond TTL and checksum")
			}
			// TTL 2 → 1 still forwarded; checksum edge: check many TTLs.
			for ttl := 2; ttl < 256; ttl += 37 {
				res := r.Run("p0", udpTo(macP0, "198.18.0.10", "198.18.1.20", uint8(ttl)))
				if res.Port != 1 || res.Data[22] != uint8(ttl-1) {
					t.Fatalf("ttl %d: port %d ttl %d", ttl, res.Port, res.Data[22])
				}
				checkIPv4Csum(t, res.Data)
			}
			st := r.Stats()
			if st[0].RxPackets != 8 || st[1].TxPackets != 8 || st[1].TxBytes != 8*uint64(len(in)) {
				t.Fatalf("counters p0 %+v p1 %+v", st[0], st[1])
			}
		})
	}
}

func TestLPMChoosesLongestPrefix(t *testing.T) {
	for _, h := range hooks {
		t.Run(string(h.hook), func(t *testing.T) {
			r := nftest.New(t, Type, model(h.hook,
				[]Route{
					{Prefix: "0.0.0.0/0", NextHop: "198.18.0.254"},
					{Prefix: "198.19.0.0/16", NextHop: "198.18.1.20"},
					{Prefix: "198.19.1.0/24", NextHop: "198.18.2.20"},
					{Prefix: "198.19.1.128/25", Port: "p2"},
				},
				[]Neighbor{{IP: "198.18.1.20", MAC: macN1}, {IP: "198.18.2.20", MAC: macN2}, {IP: "198.18.0.254", MAC: macH0}}))
			cases := []struct {
				dst  string
				port int
				mac  string
			}{
				{"198.19.7.7", 1, macN1},
				{"198.19.1.5", 2, macN2},
				{"198.19.1.200", -2, ""}, // on-link via p2, unresolved: punted
				{"198.19.1.127", 2, macN2},
				{"8.8.8.8", 0, macH0},
				{"198.18.3.9", -2, ""}, // connected on p2, unresolved: punted
			}
			for _, c := range cases {
				res := r.Run("p0", udpTo(macP0, "198.18.0.10", c.dst, 64))
				if c.port == -2 {
					if res.Sent() || res.Verdict != h.drop {
						t.Errorf("%s: verdict %d port %d, want punt", c.dst, res.Verdict, res.Port)
					}
					continue
				}
				if res.Port != c.port || !bytes.Equal(res.Data[0:6], nftest.MAC(c.mac)) {
					t.Errorf("%s: port %d dst MAC %x, want port %d %s", c.dst, res.Port, res.Data[0:6], c.port, c.mac)
				}
			}
		})
	}
}

func TestARPReplyForOwnAddress(t *testing.T) {
	for _, h := range hooks {
		t.Run(string(h.hook), func(t *testing.T) {
			r := nftest.New(t, Type, model(h.hook, nil, nil))
			res := r.Run("p2", nftest.ARPRequest(macH0, "198.18.3.50", "198.18.3.1"))
			if res.Verdict != h.sent || res.Port != 2 {
				t.Fatalf("verdict %d port %d, want reply out of p2", res.Verdict, res.Port)
			}
			p := decode(t, res.Data[:42])
			eth := p.Layer(layers.LayerTypeEthernet).(*layers.Ethernet)
			arp, _ := p.Layer(layers.LayerTypeARP).(*layers.ARP)
			if arp == nil || arp.Operation != layers.ARPReply {
				t.Fatalf("not an ARP reply: %v", p)
			}
			if eth.DstMAC.String() != macH0 || eth.SrcMAC.String() != macP2 ||
				net.HardwareAddr(arp.SourceHwAddress).String() != macP2 || net.IP(arp.SourceProtAddress).String() != "198.18.3.1" ||
				net.HardwareAddr(arp.DstHwAddress).String() != macH0 || net.IP(arp.DstProtAddress).String() != "198.18.3.50" {
				t.Fatalf("wrong reply: %+v %+v", eth, arp)
			}
			// Not ours, or ours but on another port: dropped, no reply.
			for _, q := range [][2]string{{"p2", "198.18.3.7"}, {"p0", "198.18.3.1"}} {
				if res := r.Run(q[0], nftest.ARPRequest(macH0, "198.18.3.50", q[1])); res.Sent() {
					t.Errorf("request for %s on %s answered", q[1], q[0])
				}
			}
		})
	}
}

func TestEchoReply(t *testing.T) {
	r := nftest.New(t, Type, model(datapath.XDP, nil, nil))
	in := nftest.ICMP4Echo("198.18.0.10", "198.18.1.1", 7, 9)
	copy(in[0:6], nftest.MAC(macP0))
	res := r.Run("p0", in)
	if res.Port != 0 {
		t.Fatalf("port %d, want reply out of p0", res.Port)
	}
	p := decode(t, res.Data[:len(in)])
	ip := p.Layer(layers.LayerTypeIPv4).(*layers.IPv4)
	ic := p.Layer(layers.LayerTypeICMPv4).(*layers.ICMPv4)
	if ic.TypeCode.Type() != layers.ICMPv4TypeEchoReply || ic.Id != 7 || ic.Seq != 9 || ip.SrcIP.String() != "198.18.1.1" || ip.DstIP.String() != "198.18.0.10" {
		t.Fatalf("reply: %v", p)
	}
	checkIPv4Csum(t, res.Data)
	if checksum(res.Data[34:len(in)]) != 0 {
		t.Fatal("bad ICMP checksum")
	}
}

func puntOf(in []byte, port int, reason uint32, arg uint32) cube.Punt {
	return cube.Punt{InPort: port, Reason: reason, Arg: arg, PktLen: len(in), Frame: in}
}

func TestTTLExpiryTimeExceeded(t *testing.T) {
	for _, h := range hooks {
		t.Run(string(h.hook), func(t *testing.T) {
			r := nftest.New(t, Type, model(h.hook, nil, []Neighbor{{IP: "198.18.1.20", MAC: macN1}}))
			in := udpTo(macP0, "198.18.0.10", "198.18.1.20", 1)
			res := r.Run("p0", in)
			if res.Sent() || res.Verdict != h.drop || r.Stats()[0].PuntPackets != 1 {
				t.Fatalf("TTL 1: verdict %d port %d punts %d, want punted", res.Verdict, res.Port, r.Stats()[0].PuntPackets)
			}
			r.Ctl.(cube.PuntHandler).HandlePunt(r.Handle(), r.Model, puntOf(in, 0, puntTTL, 0))
			if len(r.Transmitted) != 1 || r.Transmitted[0].Port != 0 {
				t.Fatalf("transmitted %+v, want one frame on p0", r.Transmitted)
			}
			p := decode(t, r.Transmitted[0].Data)
			eth := p.Layer(layers.LayerTypeEthernet).(*layers.Ethernet)
			ip := p.Layer(layers.LayerTypeIPv4).(*layers.IPv4)
			ic := p.Layer(layers.LayerTypeICMPv4).(*layers.ICMPv4)
			if eth.DstMAC.String() != macH0 || eth.SrcMAC.String() != macP0 || ip.SrcIP.String() != "198.18.0.1" || ip.DstIP.String() != "198.18.0.10" ||
				ic.TypeCode != layers.CreateICMPv4TypeCode(11, 0) {
				t.Fatalf("time exceeded: %v", p)
			}
			if !bytes.Equal(ic.Payload, in[14:14+41]) {
				t.Fatalf("quote % x, want the original datagram % x", ic.Payload, in[14:])
			}
			checkIPv4Csum(t, r.Transmitted[0].Data)
			if checksum(r.Transmitted[0].Data[34:]) != 0 {
				t.Fatal("bad ICMP checksum")
			}
		})
	}
}

func TestARPResolutionQueueAndRelease(t *testing.T) {
	r := nftest.New(t, Type, model(datapath.XDP, []Route{{Prefix: "198.19.0.0/16", NextHop: "198.18.1.20"}}, nil))
	ph := r.Ctl.(cube.PuntHandler)
	var frames [][]byte
	for i := 0; i < 3; i++ {
		in := udpTo(macP0, "198.18.0.10", fmt.Sprintf("198.19.0.%d", i+1), 64)
		res := r.Run("p0", in)
		if res.Sent() {
			t.Fatal("unresolved next hop forwarded")
		}
		frames = append(frames, in)
		ph.HandlePunt(r.Handle(), r.Model, puntOf(in, 0, puntARPMiss, le32("198.18.1.20")))
	}
	if len(r.Transmitted) != 1 || r.Transmitted[0].Port != 1 {
		t.Fatalf("transmitted %d frames, want one ARP request on p1", len(r.Transmitted))
	}
	p := decode(t, r.Transmitted[0].Data)
	arp := p.Layer(layers.LayerTypeARP).(*layers.ARP)
	if arp.Operation != layers.ARPRequest || net.IP(arp.DstProtAddress).String() != "198.18.1.20" ||
		net.IP(arp.SourceProtAddress).String() != "198.18.1.1" || net.HardwareAddr(arp.SourceHwAddress).String() != macP1 {
		t.Fatalf("request: %+v", arp)
	}
	v, _ := r.Ctl.(*controller).listARP(r.Handle(), r.Model)
	if rows := v.([]ARPInfo); len(rows) != 1 || rows[0].Type != "incomplete" || rows[0].Queued != 3 {
		t.Fatalf("arp view: %+v", rows)
	}
	// The reply arrives: the fast path punts it, the slow path learns and releases.
	reply := arpReply(macN1, "198.18.1.20", macP1, "198.18.1.1")
	if res := r.Run("p1", reply); res.Sent() || r.Stats()[1].PuntPackets != 1 {
		t.Fatalf("ARP reply not punted: port %d", res.Port)
	}
	ph.HandlePunt(r.Handle(), r.Model, puntOf(reply, 1, puntARP, 1))
	if len(r.Injected) != 3 {
		t.Fatalf("released %d frames, want 3", len(r.Injected))
	}
	for i, f := range r.Injected {
		if f.Port != 0 || !bytes.Equal(f.Data, frames[i]) {
			t.Fatalf("released frame %d differs or wrong port %d", i, f.Port)
		}
		res := r.Run("p0", f.Data)
		if res.Port != 1 || !bytes.Equal(res.Data[0:6], nftest.MAC(macN1)) {
			t.Fatalf("released frame %d: port %d dst %x", i, res.Port, res.Data[0:6])
		}
	}
	v, _ = r.Ctl.(*controller).listARP(r.Handle(), r.Model)
	if rows := v.([]ARPInfo); len(rows) != 1 || rows[0].Type != "dynamic" || rows[0].MAC != macN1 || rows[0].Port != "p1" {
		t.Fatalf("arp view: %+v", rows)
	}
}

func TestUnresolvableNextHopHostUnreachable(t *testing.T) {
	r := nftest.New(t, Type, model(datapath.XDP, []Route{{Prefix: "198.19.0.0/16", NextHop: "198.18.1.99"}}, nil))
	ctl := r.Ctl.(*controller)
	now := time.Now()
	ctl.now = func() time.Time { return now }
	in := udpTo(macP0, "198.18.0.10", "198.19.0.1", 64)
	ctl.HandlePunt(r.Handle(), r.Model, puntOf(in, 0, puntARPMiss, le32("198.18.1.99")))
	for i := 1; i <= 3; i++ {
		now = now.Add(time.Second)
		ctl.Tick(r.Handle(), r.Model, now)
	}
	var reqs, unreach int
	for _, f := range r.Transmitted {
		p := decode(t, f.Data)
		if p.Layer(layers.LayerTypeARP) != nil {
			reqs++
		}
		if ic, ok := p.Layer(layers.LayerTypeICMPv4).(*layers.ICMPv4); ok {
			if ic.TypeCode != layers.CreateICMPv4TypeCode(3, 1) || f.Port != 0 {
				t.Fatalf("icmp %v on port %d", ic.TypeCode, f.Port)
			}
			unreach++
		}
	}
	if reqs != 3 || unreach != 1 {
		t.Fatalf("%d ARP requests, %d host unreachable; want 3 and 1", reqs, unreach)
	}
}

func TestICMPRateLimit(t *testing.T) {
	c := model(datapath.XDP, nil, nil)
	c.Config = json.RawMessage(`{"icmp_rate_limit": 5}`)
	r := nftest.New(t, Type, c)
	ctl := r.Ctl.(*controller)
	now := time.Now()
	ctl.now = func() time.Time { return now }
	in := udpTo(macP0, "198.18.0.10", "198.18.1.20", 1)
	for i := 0; i < 20; i++ {
		ctl.HandlePunt(r.Handle(), r.Model, puntOf(in, 0, puntTTL, 0))
	}
	if len(r.Transmitted) != 5 || ctl.stats.ICMPRateLimited != 15 {
		t.Fatalf("sent %d, limited %d; want 5 and 15", len(r.Transmitted), ctl.stats.ICMPRateLimited)
	}
	now = now.Add(time.Second)
	ctl.HandlePunt(r.Handle(), r.Model, puntOf(in, 0, puntTTL, 0))
	if len(r.Transmitted) != 6 {
		t.Fatal("bucket not refilled after a second")
	}
}

func TestNoRouteNetUnreachable(t *testing.T) {
	r := nftest.New(t, Type, model(datapath.XDP, nil, nil))
	in := udpTo(macP0, "198.18.0.10", "198.19.9.9", 64)
	if res := r.Run("p0", in); res.Sent() || r.Stats()[0].PuntPackets != 1 {
		t.Fatal("no route: not punted")
	}
	r.Ctl.(cube.PuntHandler).HandlePunt(r.Handle(), r.Model, puntOf(in, 0, puntNoRoute, 0))
	if len(r.Transmitted) != 1 {
		t.Fatal("no ICMP")
	}
	ic := decode(t, r.Transmitted[0].Data).Layer(layers.LayerTypeICMPv4).(*layers.ICMPv4)
	if ic.TypeCode != layers.CreateICMPv4TypeCode(3, 0) {
		t.Fatalf("type %v", ic.TypeCode)
	}
}

func TestDropsForeignAndTagged(t *testing.T) {
	r := nftest.New(t, Type, model(datapath.XDP, nil, []Neighbor{{IP: "198.18.1.20", MAC: macN1}}))
	// Not addressed to the port's MAC.
	if res := r.Run("p0", udpTo(macP1, "198.18.0.10", "198.18.1.20", 64)); res.Sent() || res.Verdict != datapath.XDPDrop {
		t.Fatal("frame to another MAC forwarded")
	}
	if res := r.Run("p0", nftest.UDP6("2001:db8::1", "2001:db8::2", 1, 2, nil)); res.Sent() {
		t.Fatal("IPv6 forwarded")
	}
	if res := r.Run("p0", udpTo(macP0, "198.18.0.10", "255.255.255.255", 64)); res.Sent() || r.Stats()[0].PuntPackets != 0 {
		t.Fatal("limited broadcast routed or punted")
	}
	if res := r.Run("p0", udpTo(macP0, "198.18.0.10", "239.1.2.3", 64)); res.Sent() {
		t.Fatal("multicast routed")
	}
	// A directed broadcast reaches the slow path (no ARP entry) but is not
	// queued or ARPed for.
	bc := udpTo(macP0, "198.18.0.10", "198.18.1.255", 64)
	r.Ctl.(cube.PuntHandler).HandlePunt(r.Handle(), r.Model, puntOf(bc, 0, puntARPMiss, le32("198.18.1.255")))
	if len(r.Transmitted) != 0 {
		t.Fatal("ARP request for a broadcast address")
	}
	if st := r.Stats(); st[0].DropPackets != 4 {
		t.Fatalf("drops %d", st[0].DropPackets)
	}
}

func TestSingleRouteChangesAndViews(t *testing.T) {
	r := nftest.New(t, Type, model(datapath.XDP, []Route{{Prefix: "198.19.0.0/16", NextHop: "198.18.1.20"}}, []Neighbor{{IP: "198.18.1.20", MAC: macN1}, {IP: "198.18.2.20", MAC: macN2}}))
	ew := r.Ctl.(cube.EntryWriter)
	if err := ew.PutEntry(r.Handle(), r.Model, "routes", &Route{Prefix: "198.19.5.0/24", NextHop: "198.18.2.20"}); err != nil {
		t.Fatal(err)
	}
	if res := r.Run("p0", udpTo(macP0, "198.18.0.10", "198.19.5.1", 64)); res.Port != 2 {
		t.Fatalf("after put: port %d", res.Port)
	}
	if err := ew.DeleteEntry(r.Handle(), r.Model, "routes", &Route{Prefix: "198.19.5.0/24"}); err != nil {
		t.Fatal(err)
	}
	if res := r.Run("p0", udpTo(macP0, "198.18.0.10", "198.19.5.1", 64)); res.Port != 1 {
		t.Fatalf("after delete: port %d", res.Port)
	}
	v, err := listRoutes(r.Handle(), r.Model)
	if err != nil {
		t.Fatal(err)
	}
	rows := v.([]RouteInfo)
	want := []string{"198.18.0.0/24 connected p0", "198.18.1.0/24 connected p1", "198.18.2.0/24 connected p2",
		"198.18.3.0/24 connected p2", "198.19.0.0/16 static p1 198.18.1.20"}
	var got []string
	for _, x := range rows {
		got = append(got, strings.TrimSpace(fmt.Sprintf("%s %s %s %s", x.Prefix, x.Type, x.Port, x.NextHop)))
	}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("routes view:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// A full resync after a port change keeps routes right.
	m := model(datapath.XDP, []Route{{Prefix: "198.19.0.0/16", NextHop: "198.18.1.20"}}, []Neighbor{{IP: "198.18.1.20", MAC: macN1}})
	m.Ports[2].Addresses = []string{"198.18.2.1/24"}
	if err := r.Update(m); err != nil {
		t.Fatal(err)
	}
	v, _ = listRoutes(r.Handle(), r.Model)
	if n := len(v.([]RouteInfo)); n != 4 {
		t.Fatalf("%d routes after removing an address, want 4", n)
	}
	if res := r.Run("p0", udpTo(macP0, "198.18.0.10", "198.18.2.20", 64)); res.Sent() {
		t.Fatal("removed static ARP entry still used")
	}
}

func TestValidation(t *testing.T) {
	base := func() *cube.Cube { return model(datapath.XDP, nil, nil) }
	cases := []struct {
		name string
		mod  func(c *cube.Cube)
		want string
	}{
		{"malformed prefix", addRoute(Route{Prefix: "198.19.0.0/33", NextHop: "198.18.1.20"}), "prefix: invalid prefix"},
		{"host bits", addRoute(Route{Prefix: "198.19.1.1/16", NextHop: "198.18.1.20"}), "did you mean 198.19.0.0/16"},
		{"ipv6 prefix, ipv4 next hop", addRoute(Route{Prefix: "2001:db8::/32", NextHop: "198.18.1.20"}), "198.18.1.20 and the prefix 2001:db8::/32 are of different address families"},
		{"nexthop off-link", addRoute(Route{Prefix: "198.19.0.0/16", NextHop: "198.20.0.1"}), "next_hop: 198.20.0.1 is not on a connected subnet"},
		{"nexthop own", addRoute(Route{Prefix: "198.19.0.0/16", NextHop: "198.18.1.1"}), "router's own address"},
		{"nexthop wrong port", addRoute(Route{Prefix: "198.19.0.0/16", NextHop: "198.18.1.20", Port: "p0"}), "not of port p0"},
		{"no nexthop", addRoute(Route{Prefix: "198.19.0.0/16"}), "needs a next_hop"},
		{"connected dup", addRoute(Route{Prefix: "198.18.1.0/24", NextHop: "198.18.2.9"}), "connected subnet of port p1"},
		{"bad port", addRoute(Route{Prefix: "198.19.0.0/16", Port: "p9"}), "port: cube r1 has no port"},
		{"overlapping ports", func(c *cube.Cube) { c.Ports[1].Addresses = []string{"198.18.0.129/25"} }, "overlaps 198.18.0.0/24 of port p0"},
		{"network address", func(c *cube.Cube) { c.Ports[1].Addresses = []string{"198.18.1.0/24"} }, "network or broadcast"},
		{"link-local address", func(c *cube.Cube) { c.Ports[1].Addresses = []string{"fe80::1/64"} }, "every port has its link-local address already"},
		{"ipv6 subnet-router anycast", func(c *cube.Cube) { c.Ports[1].Addresses = []string{"2001:db8:5::/64"} }, "subnet-router anycast address"},
		{"link-local next hop without port", addRoute(Route{Prefix: "2001:db8:7::/48", NextHop: "fe80::1"}), "port: required with the link-local next hop fe80::1"},
		{"multicast mac", func(c *cube.Cube) { c.Ports[1].MAC = "01:00:5e:00:00:01" }, "multicast or broadcast MAC"},
		{"arp off-link", addARP(Neighbor{IP: "198.20.0.1", MAC: macN1}), "ip: 198.20.0.1 is not on a connected subnet"},
		{"arp bad mac", addARP(Neighbor{IP: "198.18.1.9", MAC: "zz"}), "mac: invalid MAC"},
		{"arp own", addARP(Neighbor{IP: "198.18.1.1", MAC: macN1}), "own address"},
		{"bad timeout", func(c *cube.Cube) { c.Config = json.RawMessage(`{"arp_timeout": -5}`) }, "config.arp_timeout"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := base()
			tc.mod(c)
			topo := cube.NewTopology()
			topo.Put(c)
			err := topo.Validate(nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
		})
	}
	// Through the rig: a bad update leaves the datapath as it was.
	r := nftest.New(t, Type, model(datapath.XDP, []Route{{Prefix: "198.19.0.0/16", NextHop: "198.18.1.20"}}, []Neighbor{{IP: "198.18.1.20", MAC: macN1}}))
	bad := model(datapath.XDP, []Route{{Prefix: "198.19.0.0/16", NextHop: "198.77.1.20"}}, nil)
	if err := r.Update(bad); err == nil {
		t.Fatal("bad update accepted")
	}
	if res := r.Run("p0", udpTo(macP0, "198.18.0.10", "198.19.0.1", 64)); res.Port != 1 {
		t.Fatal("state changed by a rejected update")
	}
}

func addRoute(rt Route) func(*cube.Cube) {
	return func(c *cube.Cube) {
		c.Tables["routes"] = map[string]json.RawMessage{rt.Prefix: nftest.Entry(rt)}
	}
}

func addARP(n Neighbor) func(*cube.Cube) {
	return func(c *cube.Cube) {
		c.Tables["arp"] = map[string]json.RawMessage{n.IP: nftest.Entry(n)}
	}
}

func TestGeneratedPortMAC(t *testing.T) {
	c := &cube.Cube{Name: "r9", Ports: []cube.Port{{Name: "p0"}}}
	a, b := PortMAC(c, &c.Ports[0]), PortMAC(c, &c.Ports[0])
	if a.String() != b.String() || a[0] != 0x02 {
		t.Fatalf("generated MAC %s not stable or not locally administered", a)
	}
}

func le32(ip string) uint32 {
	b := netip.MustParseAddr(ip).As4()
	return binary.LittleEndian.Uint32(b[:])
}

func arpReply(sha, sip, tha, tip string) []byte {
	eth := &layers.Ethernet{SrcMAC: nftest.MAC(sha), DstMAC: nftest.MAC(tha), EthernetType: layers.EthernetTypeARP}
	arp := &layers.ARP{AddrType: layers.LinkTypeEthernet, Protocol: layers.EthernetTypeIPv4, HwAddressSize: 6, ProtAddressSize: 4,
		Operation: layers.ARPReply, SourceHwAddress: nftest.MAC(sha), SourceProtAddress: net.ParseIP(sip).To4(),
		DstHwAddress: nftest.MAC(tha), DstProtAddress: net.ParseIP(tip).To4()}
	return nftest.Serialize(eth, arp)
}

func TestOnLinkRouteResolution(t *testing.T) {
	r := nftest.New(t, Type, model(datapath.XDP, []Route{{Prefix: "198.19.1.128/25", Port: "p2"}}, nil))
	ph := r.Ctl.(cube.PuntHandler)
	in := udpTo(macP0, "198.18.0.10", "198.19.1.200", 64)
	if res := r.Run("p0", in); res.Sent() {
		t.Fatal("unresolved on-link destination forwarded")
	}
	ph.HandlePunt(r.Handle(), r.Model, puntOf(in, 0, puntARPMiss, le32("198.19.1.200")))
	if len(r.Transmitted) != 1 || r.Transmitted[0].Port != 2 {
		t.Fatalf("want one ARP request out of p2, got %+v", r.Transmitted)
	}
	arp := decode(t, r.Transmitted[0].Data).Layer(layers.LayerTypeARP).(*layers.ARP)
	if net.IP(arp.DstProtAddress).String() != "198.19.1.200" || net.IP(arp.SourceProtAddress).String() != "198.18.2.1" {
		t.Fatalf("request %+v", arp)
	}
	ph.HandlePunt(r.Handle(), r.Model, puntOf(arpReply("02:00:00:00:00:c8", "198.19.1.200", macP2, "198.18.2.1"), 2, puntARP, 2))
	if len(r.Injected) != 1 {
		t.Fatalf("released %d", len(r.Injected))
	}
	if res := r.Run("p0", in); res.Port != 2 || !bytes.Equal(res.Data[0:6], nftest.MAC("02:00:00:00:00:c8")) {
		t.Fatalf("after resolution: port %d dst %x", res.Port, res.Data[0:6])
	}
}

func TestARPAgingProbesThenRemoves(t *testing.T) {
	c := model(datapath.XDP, nil, nil)
	c.Config = json.RawMessage(`{"arp_timeout": 60}`)
	r := nftest.New(t, Type, c)
	ctl := r.Ctl.(*controller)
	now := time.Now()
	ctl.now = func() time.Time { return now }
	for _, n := range []struct{ mac, ip string }{{macN1, "198.18.1.20"}, {macN2, "198.18.1.21"}} {
		ctl.HandlePunt(r.Handle(), r.Model, puntOf(arpReply(n.mac, n.ip, macP1, "198.18.1.1"), 1, puntARP, 1))
	}
	fwd := func(dst string) bool { return r.Run("p0", udpTo(macP0, "198.18.0.10", dst, 64)).Port == 1 }
	if !fwd("198.18.1.20") || !fwd("198.18.1.21") {
		t.Fatal("learned entries not used")
	}
	// Timeout: both probed with a unicast request, still usable.
	now = now.Add(61 * time.Second)
	ctl.Tick(r.Handle(), r.Model, now)
	probes := 0
	for _, f := range r.Transmitted {
		if a, ok := decode(t, f.Data).Layer(layers.LayerTypeARP).(*layers.ARP); ok && a.Operation == layers.ARPRequest && f.Data[0]&1 == 0 {
			probes++
		}
	}
	if probes != 2 || !fwd("198.18.1.20") {
		t.Fatalf("%d unicast probes, want 2; entry usable while probing: %v", probes, fwd("198.18.1.20"))
	}
	// .20 answers, .21 does not: after 3 s only .20 is left.
	now = now.Add(time.Second)
	ctl.HandlePunt(r.Handle(), r.Model, puntOf(arpReply(macN1, "198.18.1.20", macP1, "198.18.1.1"), 1, puntARP, 1))
	now = now.Add(3 * time.Second)
	ctl.Tick(r.Handle(), r.Model, now)
	if !fwd("198.18.1.20") || fwd("198.18.1.21") {
		t.Fatalf("after probing: .20 %v (want kept), .21 %v (want removed)", fwd("198.18.1.20"), fwd("198.18.1.21"))
	}
}

func TestNoICMPErrorAboutICMPErrorsOrFragments(t *testing.T) {
	r := nftest.New(t, Type, model(datapath.XDP, nil, nil))
	ph := r.Ctl.(cube.PuntHandler)
	// An ICMP time exceeded whose own TTL ran out: no error about it.
	eth := &layers.Ethernet{SrcMAC: nftest.MAC(macH0), DstMAC: nftest.MAC(macP0), EthernetType: layers.EthernetTypeIPv4}
	ip := &layers.IPv4{Version: 4, TTL: 1, Protocol: layers.IPProtocolICMPv4, SrcIP: net.ParseIP("198.18.0.10"), DstIP: net.ParseIP("198.18.1.20")}
	ic := &layers.ICMPv4{TypeCode: layers.CreateICMPv4TypeCode(11, 0)}
	ph.HandlePunt(r.Handle(), r.Model, puntOf(nftest.Serialize(eth, ip, ic, gopacket.Payload(make([]byte, 28))), 0, puntTTL, 0))
	// A non-first fragment.
	ip2 := &layers.IPv4{Version: 4, TTL: 1, Protocol: layers.IPProtocolUDP, FragOffset: 100, SrcIP: net.ParseIP("198.18.0.10"), DstIP: net.ParseIP("198.18.1.20")}
	ph.HandlePunt(r.Handle(), r.Model, puntOf(nftest.Serialize(eth, ip2, gopacket.Payload(make([]byte, 40))), 0, puntTTL, 0))
	if len(r.Transmitted) != 0 {
		t.Fatalf("%d ICMP errors sent, want none", len(r.Transmitted))
	}
	// An echo request with TTL 1 does get one.
	ip.Protocol = layers.IPProtocolICMPv4
	ic.TypeCode = layers.CreateICMPv4TypeCode(8, 0)
	ph.HandlePunt(r.Handle(), r.Model, puntOf(nftest.Serialize(eth, ip, ic), 0, puntTTL, 0))
	if len(r.Transmitted) != 1 {
		t.Fatal("no time exceeded for an echo request")
	}
}
