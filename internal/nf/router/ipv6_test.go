package router

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
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

// model6: the IPv4 model plus 2001:db8:0::1/64 on p0, 2001:db8:1::1/64 on
// p1, and router advertisements on p0.
func model6(hook datapath.Hook, routes []Route, nb []Neighbor) *cube.Cube {
	c := model(hook, routes, nb)
	c.Ports[0].Addresses = append(c.Ports[0].Addresses, "2001:db8:0::1/64")
	c.Ports[1].Addresses = append(c.Ports[1].Addresses, "2001:db8:1::1/64")
	c.Tables["ra"] = map[string]json.RawMessage{"p0": nftest.Entry(RA{Port: "p0", Interval: 30, DNS: []string{"2001:db8::53", "2001:db8:1::53"}, MTU: 1400})}
	return c
}

func udp6To(dstMAC, src, dst string, hop uint8) []byte {
	eth := &layers.Ethernet{SrcMAC: nftest.MAC(macH0), DstMAC: nftest.MAC(dstMAC), EthernetType: layers.EthernetTypeIPv6}
	ip := &layers.IPv6{Version: 6, HopLimit: hop, NextHeader: layers.IPProtocolUDP, SrcIP: net.ParseIP(src), DstIP: net.ParseIP(dst)}
	udp := &layers.UDP{SrcPort: 33434, DstPort: 33435}
	return nftest.Serialize(eth, ip, udp, gopacket.Payload([]byte("payload-bytes")))
}

func icmp6To(dstMAC, src, dst string, hop uint8, l ...gopacket.SerializableLayer) []byte {
	eth := &layers.Ethernet{SrcMAC: nftest.MAC(macH0), DstMAC: nftest.MAC(dstMAC), EthernetType: layers.EthernetTypeIPv6}
	ip := &layers.IPv6{Version: 6, HopLimit: hop, NextHeader: layers.IPProtocolICMPv6, SrcIP: net.ParseIP(src), DstIP: net.ParseIP(dst)}
	return nftest.Serialize(append([]gopacket.SerializableLayer{eth, ip}, l...)...)
}

func ns6(target, dst, dstMAC string) []byte {
	return icmp6To(dstMAC, "2001:db8::10", dst, 255,
		&layers.ICMPv6{TypeCode: layers.CreateICMPv6TypeCode(layers.ICMPv6TypeNeighborSolicitation, 0)},
		&layers.ICMPv6NeighborSolicitation{TargetAddress: net.ParseIP(target),
			Options: layers.ICMPv6Options{{Type: layers.ICMPv6OptSourceAddress, Data: nftest.MAC(macH0)}}})
}

// icmp6OK verifies the ICMPv6 checksum of a frame.
func icmp6OK(f []byte) bool {
	ip := f[14:]
	plen := int(binary.BigEndian.Uint16(ip[4:]))
	return icmp6Checksum([16]byte(ip[8:24]), [16]byte(ip[24:40]), ip[40:40+plen]) == binary.BigEndian.Uint16(ip[42:])
}

// TestIPv6Forwarding: connected and static routes (longest prefix wins),
// hop limit decremented, MACs rewritten from the neighbour table; packets
// that must not be routed (link-local, multicast, another port's MAC) are
// dropped; IPv4 forwarding is unchanged beside.
func TestIPv6Forwarding(t *testing.T) {
	for _, h := range hooks {
		t.Run(string(h.hook), func(t *testing.T) {
			r := nftest.New(t, Type, model6(h.hook,
				[]Route{{Prefix: "2001:db8:100::/48", NextHop: "2001:db8:1::20"}, {Prefix: "2001:db8:100:5::/64", NextHop: "2001:db8:1::21"}},
				[]Neighbor{{IP: "2001:db8:1::20", MAC: macN1}, {IP: "2001:db8:1::21", MAC: macN2}, {IP: "2001:db8:1::30", MAC: macN1},
					{IP: "198.18.1.30", MAC: macN2}}))
			for _, c := range []struct {
				dst string
				mac string
			}{{"2001:db8:1::30", macN1}, {"2001:db8:100:1::1", macN1}, {"2001:db8:100:5::1", macN2}} {
				in := udp6To(macP0, "2001:db8::10", c.dst, 64)
				res := r.Run("p0", in)
				if res.Verdict != h.sent || res.Port != 1 {
					t.Fatalf("%s: verdict %d port %d", c.dst, res.Verdict, res.Port)
				}
				out := res.Data
				if !bytes.Equal(out[0:6], nftest.MAC(c.mac)) || !bytes.Equal(out[6:12], nftest.MAC(macP1)) || out[14+7] != 63 ||
					!bytes.Equal(out[15:14+7], in[15:14+7]) || !bytes.Equal(out[14+8:], in[14+8:]) {
					t.Fatalf("%s: forwarded frame % x", c.dst, out[:62])
				}
			}
			for name, f := range map[string][]byte{
				"link-local destination": udp6To(macP0, "2001:db8::10", "fe80::99", 64),
				"link-local source":      udp6To(macP0, "fe80::10", "2001:db8:1::30", 64),
				"multicast destination":  udp6To(macP0, "2001:db8::10", "ff0e::1", 64),
				"another MAC":            udp6To(macP1, "2001:db8::10", "2001:db8:1::30", 64),
			} {
				if res := r.Run("p0", f); res.Verdict != h.drop {
					t.Errorf("%s: verdict %d, want drop", name, res.Verdict)
				}
			}
			if res := r.Run("p0", udpTo(macP0, "198.18.0.10", "198.18.1.30", 64)); res.Verdict != h.sent || res.Port != 1 ||
				!bytes.Equal(res.Data[0:6], nftest.MAC(macN2)) {
				t.Fatalf("IPv4 beside: verdict %d port %d", res.Verdict, res.Port)
			}
		})
	}
}

// TestIPv6NeighbourDiscoveryAndEcho: the router answers solicitations for
// its global and link-local addresses (router and override flags, valid
// checksum), not for others; echo requests to its addresses are answered.
func TestIPv6NeighbourDiscoveryAndEcho(t *testing.T) {
	for _, h := range hooks {
		t.Run(string(h.hook), func(t *testing.T) {
			r := nftest.New(t, Type, model6(h.hook, nil, nil))
			ll := linkLocal(nftest.MAC(macP0)).String()
			for _, target := range []string{"2001:db8::1", ll} {
				res := r.Run("p0", ns6(target, "ff02::1:ff00:1", "33:33:ff:00:00:01"))
				p := decode(t, res.Data)
				na, _ := p.Layer(layers.LayerTypeICMPv6NeighborAdvertisement).(*layers.ICMPv6NeighborAdvertisement)
				if res.Verdict != h.sent || res.Port != 0 || na == nil || !na.TargetAddress.Equal(net.ParseIP(target)) ||
					!na.Router() || !na.Solicited() || !na.Override() || !bytes.Equal(na.Options[0].Data, nftest.MAC(macP0)) || !icmp6OK(res.Data) {
					t.Fatalf("NS for %s: verdict %d %v", target, res.Verdict, p)
				}
			}
			// Not ours, or p1's address asked on p0: no answer.
			for _, target := range []string{"2001:db8::99", "2001:db8:1::1"} {
				if res := r.Run("p0", ns6(target, "ff02::1:ff00:1", "33:33:ff:00:00:01")); res.Verdict != h.drop {
					t.Errorf("NS for %s answered (verdict %d)", target, res.Verdict)
				}
			}
			echo := icmp6To(macP0, "2001:db8::10", "2001:db8::1", 64,
				&layers.ICMPv6{TypeCode: layers.CreateICMPv6TypeCode(layers.ICMPv6TypeEchoRequest, 0)},
				&layers.ICMPv6Echo{Identifier: 7, SeqNumber: 1}, gopacket.Payload("ping"))
			res := r.Run("p0", echo)
			if res.Verdict != h.sent || res.Port != 0 || res.Data[54] != 129 || !icmp6OK(res.Data) ||
				netip.AddrFrom16([16]byte(res.Data[22:38])).String() != "2001:db8::1" {
				t.Fatalf("echo: verdict %d % x", res.Verdict, res.Data[:62])
			}
		})
	}
}

// TestIPv6ResolutionQueueAndErrors: an unresolved next hop is solicited
// (to its solicited-node group, with the router's MAC), the packets wait and
// are released when the advertisement comes; hop-limit expiry and missing
// routes get ICMPv6 errors; an unresolvable next hop address unreachable.
func TestIPv6ResolutionQueueAndErrors(t *testing.T) {
	r := nftest.New(t, Type, model6(datapath.XDP, []Route{{Prefix: "2001:db8:100::/48", NextHop: "2001:db8:1::20"}}, nil))
	ctl := r.Ctl.(*controller)
	in := udp6To(macP0, "2001:db8::10", "2001:db8:100::1", 64)
	if res := r.Run("p0", in); res.Verdict == datapath.XDPRedirect {
		t.Fatalf("forwarded without a neighbour entry")
	}
	for i := 0; i < 2; i++ {
		ctl.HandlePunt(r.Handle(), r.Model, puntOf(in, 0, puntNDMiss, 1))
	}
	if len(r.Transmitted) != 1 || r.Transmitted[0].Port != 1 {
		t.Fatalf("transmitted %+v, want one solicitation on p1", r.Transmitted)
	}
	p := decode(t, r.Transmitted[0].Data)
	sol, _ := p.Layer(layers.LayerTypeICMPv6NeighborSolicitation).(*layers.ICMPv6NeighborSolicitation)
	ip, _ := p.Layer(layers.LayerTypeIPv6).(*layers.IPv6)
	if sol == nil || !sol.TargetAddress.Equal(net.ParseIP("2001:db8:1::20")) || ip.DstIP.String() != "ff02::1:ff00:20" ||
		ip.HopLimit != 255 || !icmp6OK(r.Transmitted[0].Data) {
		t.Fatalf("solicitation %v", p)
	}
	na := icmp6To(macP1, "2001:db8:1::20", "2001:db8:1::1", 255,
		&layers.ICMPv6{TypeCode: layers.CreateICMPv6TypeCode(layers.ICMPv6TypeNeighborAdvertisement, 0)},
		&layers.ICMPv6NeighborAdvertisement{Flags: 0x60, TargetAddress: net.ParseIP("2001:db8:1::20"),
			Options: layers.ICMPv6Options{{Type: layers.ICMPv6OptTargetAddress, Data: nftest.MAC(macN1)}}})
	copy(na[6:12], nftest.MAC(macN1))
	ctl.HandlePunt(r.Handle(), r.Model, puntOf(na, 1, puntND, 1))
	if len(r.Injected) != 2 {
		t.Fatalf("released %d frames, want 2", len(r.Injected))
	}
	if res := r.Run("p0", in); res.Verdict != datapath.XDPRedirect || res.Port != 1 || !bytes.Equal(res.Data[0:6], nftest.MAC(macN1)) {
		t.Fatalf("after learning: verdict %d port %d", res.Verdict, res.Port)
	}
	// Errors: hop limit, no route, unresolvable.
	r.Transmitted = nil
	ctl.HandlePunt(r.Handle(), r.Model, puntOf(udp6To(macP0, "2001:db8::10", "2001:db8:100::1", 1), 0, puntTTL, 0))
	ctl.HandlePunt(r.Handle(), r.Model, puntOf(udp6To(macP0, "2001:db8::10", "2001:db8:200::1", 64), 0, puntNoRoute, 0))
	ctl.HandlePunt(r.Handle(), r.Model, puntOf(udp6To(macP0, "2001:db8::10", "2001:db8:1::99", 64), 0, puntNDMiss, 1))
	now := time.Now()
	for i := 1; i <= 4; i++ {
		ctl.Tick(r.Handle(), r.Model, now.Add(time.Duration(i)*time.Second))
	}
	var got [][2]byte
	for _, f := range r.Transmitted {
		if f.Port == 0 && len(f.Data) > 54 && f.Data[14+6] == 58 && f.Data[54] < 128 {
			if !icmp6OK(f.Data) || netip.AddrFrom16([16]byte(f.Data[38:54])).String() != "2001:db8::10" {
				t.Fatalf("bad error % x", f.Data[:62])
			}
			got = append(got, [2]byte{f.Data[54], f.Data[55]})
		}
	}
	want := [][2]byte{{3, 0}, {1, 0}, {1, 3}}
	if len(got) != 3 || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
		t.Fatalf("ICMPv6 errors (type, code) %v, want %v", got, want)
	}
}

// TestRouterAdvertisements: a solicitation is answered at once, and the
// port advertises periodically: router lifetime, flags, its MAC, the port's
// /64 as an on-link, autonomous prefix, from its link-local address.
func TestRouterAdvertisements(t *testing.T) {
	r := nftest.New(t, Type, model6(datapath.XDP, nil, nil))
	ctl := r.Ctl.(*controller)
	rs := icmp6To("33:33:00:00:00:02", "fe80::10", "ff02::2", 255,
		&layers.ICMPv6{TypeCode: layers.CreateICMPv6TypeCode(layers.ICMPv6TypeRouterSolicitation, 0)},
		&layers.ICMPv6RouterSolicitation{Options: layers.ICMPv6Options{{Type: layers.ICMPv6OptSourceAddress, Data: nftest.MAC(macH0)}}})
	ctl.HandlePunt(r.Handle(), r.Model, puntOf(rs, 0, puntRS, 0))
	ctl.Tick(r.Handle(), r.Model, time.Now()) // periodic one for p0 too
	if len(r.Transmitted) < 1 {
		t.Fatal("no advertisement")
	}
	for _, f := range r.Transmitted {
		p := decode(t, f.Data)
		ra, _ := p.Layer(layers.LayerTypeICMPv6RouterAdvertisement).(*layers.ICMPv6RouterAdvertisement)
		ip, _ := p.Layer(layers.LayerTypeIPv6).(*layers.IPv6)
		if f.Port != 0 || ra == nil || ip.SrcIP.String() != linkLocal(nftest.MAC(macP0)).String() || ip.HopLimit != 255 ||
			ra.RouterLifetime != 90 || !icmp6OK(f.Data) {
			t.Fatalf("advertisement %v", p)
		}
		var prefix, lla, rdnss, mtu bool
		for _, o := range ra.Options {
			switch o.Type {
			case 25: // RDNSS (RFC 8106): reserved, lifetime, the servers
				rdnss = len(o.Data) == 6+32 && binary.BigEndian.Uint32(o.Data[2:]) == 90 &&
					net.IP(o.Data[6:22]).Equal(net.ParseIP("2001:db8::53")) && net.IP(o.Data[22:38]).Equal(net.ParseIP("2001:db8:1::53"))
			case layers.ICMPv6OptMTU:
				mtu = binary.BigEndian.Uint32(o.Data[2:]) == 1400
			case layers.ICMPv6OptPrefixInfo:
				prefix = o.Data[0] == 64 && o.Data[1]&0xc0 == 0xc0 && net.IP(o.Data[14:30]).Equal(net.ParseIP("2001:db8::"))
			case layers.ICMPv6OptSourceAddress:
				lla = bytes.Equal(o.Data, nftest.MAC(macP0))
			}
		}
		if !prefix || !lla || !rdnss || !mtu {
			t.Fatalf("advertisement options %v: prefix %v, source link-layer address %v, RDNSS %v, MTU %v", ra.Options, prefix, lla, rdnss, mtu)
		}
	}
}

// TestRAOptionsValidation: RDNSS servers and the MTU option are checked
// (field named, nothing changed); the DNS lifetime defaults to 3 × interval.
func TestRAOptionsValidation(t *testing.T) {
	c := model6(datapath.XDP, nil, nil)
	ok := RA{Port: "p0", Interval: 30, DNS: []string{"2001:db8:0:0::53"}}
	if err := ok.Validate(c); err != nil || *ok.DNSLifetime != 90 || ok.DNS[0] != "2001:db8::53" {
		t.Fatalf("valid RA: %v %+v", err, ok)
	}
	zero, short := 0, 10
	for _, x := range []struct {
		ra   RA
		want string
	}{
		{RA{Port: "p0", DNS: []string{"ff02::1"}}, "dns[0]: ff02::1 is not a unicast address"},
		{RA{Port: "p0", DNS: []string{"198.18.0.53"}}, `dns[0]: invalid IPv6 address "198.18.0.53"`},
		{RA{Port: "p0", DNS: []string{"2001:db8::1", "2001:db8::2", "2001:db8::3", "2001:db8::4"}}, "dns: 4 servers: at most 3"},
		{RA{Port: "p0", Interval: 30, DNS: []string{"2001:db8::53"}, DNSLifetime: &short}, "dns_lifetime: 10 s is shorter than the interval"},
		{RA{Port: "p0", DNSLifetime: &zero}, "dns_lifetime: set without dns servers"},
		{RA{Port: "p0", MTU: 1000}, "mtu: 1000: an IPv6 link MTU is 1280..65535"},
	} {
		if err := x.ra.Validate(c); err == nil || !strings.Contains(err.Error(), x.want) {
			t.Errorf("%+v: %v, want %q", x.ra, err, x.want)
		}
	}
}

// TestPacketTooBig: a packet larger than the out port's MTU (its peer
// interface's) is punted, and the slow path answers ICMPv6 packet too big
// or, for IPv4 with DF, fragmentation needed, with the MTU, from the
// router's address on the ingress link; IPv4 without DF is dropped (the
// router does not fragment); what fits is forwarded; the MTU follows the
// interface.
func TestPacketTooBig(t *testing.T) {
	for _, h := range hooks {
		t.Run(string(h.hook), func(t *testing.T) {
			c := model6(h.hook, nil, []Neighbor{{IP: "198.18.1.20", MAC: macN1}, {IP: "2001:db8:1::20", MAC: macN1}})
			c.Ports[1].Peer = "mtu-p1"
			r := nftest.New(t, Type, c)
			ctl := r.Ctl.(*controller)
			mtu := 1280
			ctl.linkMTU = func(name string) (int, error) {
				if name != "mtu-p1" {
					t.Errorf("MTU of %q read", name)
				}
				return mtu, nil
			}
			if err := ctl.Sync(r.Handle(), r.Model); err != nil {
				t.Fatal(err)
			}
			big := func(v6, df bool, size int) []byte {
				eth := &layers.Ethernet{SrcMAC: nftest.MAC(macH0), DstMAC: nftest.MAC(macP0), EthernetType: layers.EthernetTypeIPv4}
				var ip gopacket.SerializableLayer = &layers.IPv4{Version: 4, TTL: 64, Protocol: layers.IPProtocolUDP,
					SrcIP: net.ParseIP("198.18.0.10"), DstIP: net.ParseIP("198.18.1.20")}
				if df {
					ip.(*layers.IPv4).Flags = layers.IPv4DontFragment
				}
				hdr := 20
				if v6 {
					eth.EthernetType = layers.EthernetTypeIPv6
					ip = &layers.IPv6{Version: 6, HopLimit: 64, NextHeader: layers.IPProtocolUDP, SrcIP: net.ParseIP("2001:db8::10"), DstIP: net.ParseIP("2001:db8:1::20")}
					hdr = 40
				}
				return nftest.Serialize(eth, ip, &layers.UDP{SrcPort: 1, DstPort: 2}, gopacket.Payload(make([]byte, size-hdr-8)))
			}
			punts := func() uint64 { return r.Stats()[0].PuntPackets }
			for _, x := range []struct {
				v6, df bool
				size   int
				want   string // sent, punt, drop
			}{
				{false, true, 1280, "sent"}, {false, true, 1281, "punt"}, {false, false, 1400, "drop"},
				{true, false, 1280, "sent"}, {true, false, 1281, "punt"},
			} {
				before := punts()
				res := r.Run("p0", big(x.v6, x.df, x.size))
				got := "drop"
				if res.Sent() {
					got = "sent"
				} else if punts() > before {
					got = "punt"
				}
				if got != x.want || x.want == "sent" && res.Port != 1 {
					t.Fatalf("IPv6 %v DF %v %d bytes through MTU 1280: %s (port %d), want %s", x.v6, x.df, x.size, got, res.Port, x.want)
				}
			}
			ph := r.Ctl.(cube.PuntHandler)
			ph.HandlePunt(r.Handle(), r.Model, puntOf(big(false, true, 1400), 0, puntTooBig, 1280))
			ph.HandlePunt(r.Handle(), r.Model, puntOf(big(true, false, 1400), 0, puntTooBig, 1280))
			if len(r.Transmitted) != 2 {
				t.Fatalf("transmitted %d frames, want 2 errors", len(r.Transmitted))
			}
			p := decode(t, r.Transmitted[0].Data)
			ic, _ := p.Layer(layers.LayerTypeICMPv4).(*layers.ICMPv4)
			if ic == nil || ic.TypeCode != layers.CreateICMPv4TypeCode(3, 4) || ic.Seq != 1280 || r.Transmitted[0].Port != 0 {
				t.Fatalf("fragmentation needed: %v", p)
			}
			f6 := r.Transmitted[1].Data
			if f6[14+40] != 2 || binary.BigEndian.Uint32(f6[14+44:]) != 1280 || !icmp6OK(f6) ||
				net.IP(f6[14+8:14+24]).String() != "2001:db8::1" || net.IP(f6[14+24:14+40]).String() != "2001:db8::10" {
				t.Fatalf("packet too big: % x", f6[:14+48])
			}
			// The interface's MTU grows: the router follows within 5 s.
			mtu = 1500
			ctl.followMTUs(r.Handle(), ctl.now().Add(6*time.Second))
			if res := r.Run("p0", big(true, false, 1400)); !res.Sent() {
				t.Fatal("1400 bytes not forwarded after the MTU became 1500")
			}
		})
	}
}
