package lb

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"
	"testing"

	"github.com/edgenf/edgenf/internal/nftest"
	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
)

const (
	vip6    = "2001:db8:9::100"
	client6 = "2001:db8:1::2"
)

func backends6(weights ...uint32) []Backend {
	out := backends(weights...)
	for i := range out {
		out[i].Address = fmt.Sprintf("2001:db8:2::%x", 0x11+i)
	}
	return out
}

func frame6(src, dst string, srcMAC, dstMAC string, l4 gopacket.SerializableLayer, nh layers.IPProtocol) []byte {
	eth := &layers.Ethernet{SrcMAC: nftest.MAC(srcMAC), DstMAC: nftest.MAC(dstMAC), EthernetType: layers.EthernetTypeIPv6}
	ip := &layers.IPv6{Version: 6, HopLimit: 64, NextHeader: nh, SrcIP: net.ParseIP(src), DstIP: net.ParseIP(dst)}
	return nftest.Serialize(eth, ip, l4, nftestPayload("hello6"))
}

func tcp6(src, dst string, sport, dport uint16, srcMAC, dstMAC string) []byte {
	return frame6(src, dst, srcMAC, dstMAC, &layers.TCP{SrcPort: layers.TCPPort(sport), DstPort: layers.TCPPort(dport), SYN: true, Window: 1024}, layers.IPProtocolTCP)
}

func udp6(src, dst string, sport, dport uint16, srcMAC, dstMAC string) []byte {
	return frame6(src, dst, srcMAC, dstMAC, &layers.UDP{SrcPort: layers.UDPPort(sport), DstPort: layers.UDPPort(dport)}, layers.IPProtocolUDP)
}

// l4OK6 verifies the TCP/UDP/ICMPv6 checksum of an IPv6 frame.
func l4OK6(f []byte) bool {
	ip := f[14:]
	plen := int(binary.BigEndian.Uint16(ip[4:]))
	var ph uint32
	for i := 8; i < 40; i += 2 {
		ph += uint32(binary.BigEndian.Uint16(ip[i:]))
	}
	ph += uint32(plen) + uint32(ip[6])
	return csum16(ip[40:40+plen], ph) == 0xffff
}

func addr6(b []byte) string { return netip.AddrFrom16([16]byte(b)).String() }

// TestIPv6DSRAndNAT: an IPv6 VIP spreads flows over IPv6 backends by weight
// (Maglev as for IPv4) in DSR mode; in NAT mode the destination becomes the
// backend's and replies go back as the VIP, checksums valid.
func TestIPv6DSRAndNAT(t *testing.T) {
	for _, h := range hooks {
		t.Run(string(h.hook), func(t *testing.T) {
			natBE := backends6(1)
			natBE[0].TargetPort = 8080
			r := nftest.New(t, Type, model(h.hook,
				Service{VIP: vip6, Port: 80, TableSize: 4099, Backends: backends6(1, 2, 3, 4)},
				Service{VIP: vip6, Protocol: "udp", Port: 53, Mode: "nat", TableSize: 251, Backends: natBE},
				Service{VIP: vip, Port: 80, TableSize: 251, Backends: backends(1)}))
			per := map[int]int{}
			const flows = 2000
			for i := 0; i < flows; i++ {
				f := tcp6(client6, vip6, uint16(10000+i), 80, clientMAC, frontMAC)
				res := r.Run("front", f)
				if res.Verdict != h.sent || res.Port < 1 || res.Port > 4 {
					t.Fatalf("flow %d: verdict %d port %d", i, res.Verdict, res.Port)
				}
				if !bytes.Equal(res.Data[14:], f[14:]) || !bytes.Equal(res.Data[0:6], nftest.MAC(fmt.Sprintf("02:00:00:00:be:%02x", res.Port))) {
					t.Fatalf("DSR changed more than the MACs")
				}
				per[res.Port]++
			}
			for p := 1; p <= 4; p++ {
				want := flows * p / 10
				if per[p] < want*8/10 || per[p] > want*12/10 {
					t.Errorf("backend %d got %d flows, want about %d (%v)", p, per[p], want, per)
				}
			}
			// NAT: request to the backend's address and port 8080.
			res := r.Run("front", udp6(client6, vip6, 40001, 53, clientMAC, frontMAC))
			d := res.Data
			if res.Verdict != h.sent || res.Port != 1 || addr6(d[38:54]) != "2001:db8:2::11" || binary.BigEndian.Uint16(d[56:]) != 8080 ||
				addr6(d[22:38]) != client6 || !l4OK6(d) {
				t.Fatalf("NAT request: verdict %d port %d % x", res.Verdict, res.Port, d[14:60])
			}
			res = r.Run("b1", udp6("2001:db8:2::11", client6, 8080, 40001, "02:00:00:00:be:01", "02:00:00:00:00:99"))
			d = res.Data
			if res.Verdict != h.sent || res.Port != 0 || addr6(d[22:38]) != vip6 || binary.BigEndian.Uint16(d[54:]) != 53 ||
				!bytes.Equal(d[0:6], nftest.MAC(clientMAC)) || !l4OK6(d) {
				t.Fatalf("NAT reply: verdict %d port %d % x", res.Verdict, res.Port, d[14:60])
			}
			// The IPv4 service beside it still answers; an IPv6 packet to
			// the IPv4 VIP's port on another address is unknown.
			if res := r.Run("front", tcpFrame(client, vip, 1, 80, clientMAC, frontMAC, true)); res.Verdict != h.sent {
				t.Fatalf("IPv4 service: verdict %d", res.Verdict)
			}
			if res := r.Run("front", tcp6(client6, "2001:db8:9::101", 1, 80, clientMAC, frontMAC)); res.Verdict != h.drop {
				t.Fatalf("no service: verdict %d", res.Verdict)
			}
		})
	}
}

// TestNeighbourSolicitationForVIP: a neighbour solicitation for the VIP is
// answered with an advertisement (solicited, override, the port's MAC,
// valid checksum) that a host stack accepts, and so is one for the port's
// own IPv6 address (solicited, not override); others are not answered.
func TestNeighbourSolicitationForVIP(t *testing.T) {
	for _, h := range hooks {
		t.Run(string(h.hook), func(t *testing.T) {
			m := model(h.hook, Service{VIP: vip6, Port: 80, TableSize: 251, Backends: backends6(1)})
			m.Ports[0].Addresses = append(m.Ports[0].Addresses, "2001:db8:1::1/64")
			r := nftest.New(t, Type, m)
			ns := func(target string, hop uint8) []byte {
				eth := &layers.Ethernet{SrcMAC: nftest.MAC(clientMAC), DstMAC: nftest.MAC("33:33:ff:00:01:00"), EthernetType: layers.EthernetTypeIPv6}
				ip := &layers.IPv6{Version: 6, HopLimit: hop, NextHeader: layers.IPProtocolICMPv6, SrcIP: net.ParseIP(client6), DstIP: net.ParseIP("ff02::1:ff00:100")}
				icmp := &layers.ICMPv6{TypeCode: layers.CreateICMPv6TypeCode(layers.ICMPv6TypeNeighborSolicitation, 0)}
				sol := &layers.ICMPv6NeighborSolicitation{TargetAddress: net.ParseIP(target),
					Options: layers.ICMPv6Options{{Type: layers.ICMPv6OptSourceAddress, Data: nftest.MAC(clientMAC)}}}
				return nftest.Serialize(eth, ip, icmp, sol)
			}
			res := r.Run("front", ns(vip6, 255))
			if res.Verdict != h.sent || res.Port != 0 {
				t.Fatalf("NS for the VIP: verdict %d port %d", res.Verdict, res.Port)
			}
			p := gopacket.NewPacket(res.Data, layers.LayerTypeEthernet, gopacket.Default)
			ip, _ := p.Layer(layers.LayerTypeIPv6).(*layers.IPv6)
			na, _ := p.Layer(layers.LayerTypeICMPv6NeighborAdvertisement).(*layers.ICMPv6NeighborAdvertisement)
			if ip == nil || na == nil || !ip.SrcIP.Equal(net.ParseIP(vip6)) || !ip.DstIP.Equal(net.ParseIP(client6)) || ip.HopLimit != 255 ||
				!na.TargetAddress.Equal(net.ParseIP(vip6)) || !na.Solicited() || !na.Override() || len(na.Options) != 1 ||
				na.Options[0].Type != layers.ICMPv6OptTargetAddress || !bytes.Equal(na.Options[0].Data, nftest.MAC(frontMAC)) ||
				!bytes.Equal(res.Data[0:6], nftest.MAC(clientMAC)) || !l4OK6(res.Data) {
				t.Fatalf("not a valid advertisement: %v", p)
			}
			res = r.Run("front", ns("2001:db8:1::1", 255))
			p = gopacket.NewPacket(res.Data, layers.LayerTypeEthernet, gopacket.Default)
			na, _ = p.Layer(layers.LayerTypeICMPv6NeighborAdvertisement).(*layers.ICMPv6NeighborAdvertisement)
			if res.Verdict != h.sent || na == nil || !na.TargetAddress.Equal(net.ParseIP("2001:db8:1::1")) || !na.Solicited() || na.Override() || !l4OK6(res.Data) {
				t.Fatalf("NS for the port's address: verdict %d, %v", res.Verdict, p)
			}
			for _, bad := range [][]byte{ns("2001:db8:9::101", 255), ns(vip6, 64)} {
				if res := r.Run("front", bad); res.Verdict != h.drop {
					t.Errorf("answered an NS it must not: verdict %d", res.Verdict)
				}
			}
		})
	}
}
