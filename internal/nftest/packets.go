package nftest

import (
	"net"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
)

// MAC parses a MAC address or panics (test constants).
func MAC(s string) net.HardwareAddr {
	hw, err := net.ParseMAC(s)
	if err != nil {
		panic(err)
	}
	return hw
}

// Serialize builds a frame from layers, fixing lengths and checksums.
func Serialize(ls ...gopacket.SerializableLayer) []byte {
	buf := gopacket.NewSerializeBuffer()
	opts := gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}
	for _, l := range ls {
		if n, ok := l.(gopacket.NetworkLayer); ok {
			for _, x := range ls {
				if t, ok := x.(interface {
					SetNetworkLayerForChecksum(gopacket.NetworkLayer) error
				}); ok {
					t.SetNetworkLayerForChecksum(n)
				}
			}
		}
	}
	if err := gopacket.SerializeLayers(buf, opts, ls...); err != nil {
		panic(err)
	}
	return buf.Bytes()
}

// UDP4 builds an Ethernet/IPv4/UDP frame.
func UDP4(src, dst string, sport, dport uint16, payload []byte) []byte {
	eth := &layers.Ethernet{SrcMAC: MAC("02:00:00:00:00:01"), DstMAC: MAC("02:00:00:00:00:02"), EthernetType: layers.EthernetTypeIPv4}
	ip := &layers.IPv4{Version: 4, TTL: 64, Protocol: layers.IPProtocolUDP, SrcIP: net.ParseIP(src), DstIP: net.ParseIP(dst)}
	udp := &layers.UDP{SrcPort: layers.UDPPort(sport), DstPort: layers.UDPPort(dport)}
	return Serialize(eth, ip, udp, gopacket.Payload(payload))
}

// TCP4 builds an Ethernet/IPv4/TCP frame with the SYN flag.
func TCP4(src, dst string, sport, dport uint16) []byte {
	eth := &layers.Ethernet{SrcMAC: MAC("02:00:00:00:00:01"), DstMAC: MAC("02:00:00:00:00:02"), EthernetType: layers.EthernetTypeIPv4}
	ip := &layers.IPv4{Version: 4, TTL: 64, Protocol: layers.IPProtocolTCP, SrcIP: net.ParseIP(src), DstIP: net.ParseIP(dst)}
	tcp := &layers.TCP{SrcPort: layers.TCPPort(sport), DstPort: layers.TCPPort(dport), SYN: true, Window: 1024}
	return Serialize(eth, ip, tcp)
}

// ICMP4Echo builds an Ethernet/IPv4/ICMP echo request.
func ICMP4Echo(src, dst string, id, seq uint16) []byte {
	eth := &layers.Ethernet{SrcMAC: MAC("02:00:00:00:00:01"), DstMAC: MAC("02:00:00:00:00:02"), EthernetType: layers.EthernetTypeIPv4}
	ip := &layers.IPv4{Version: 4, TTL: 64, Protocol: layers.IPProtocolICMPv4, SrcIP: net.ParseIP(src), DstIP: net.ParseIP(dst)}
	icmp := &layers.ICMPv4{TypeCode: layers.CreateICMPv4TypeCode(layers.ICMPv4TypeEchoRequest, 0), Id: id, Seq: seq}
	return Serialize(eth, ip, icmp, gopacket.Payload([]byte("ping")))
}

// UDP6 builds an Ethernet/IPv6/UDP frame.
func UDP6(src, dst string, sport, dport uint16, payload []byte) []byte {
	eth := &layers.Ethernet{SrcMAC: MAC("02:00:00:00:00:01"), DstMAC: MAC("02:00:00:00:00:02"), EthernetType: layers.EthernetTypeIPv6}
	ip := &layers.IPv6{Version: 6, HopLimit: 64, NextHeader: layers.IPProtocolUDP, SrcIP: net.ParseIP(src), DstIP: net.ParseIP(dst)}
	udp := &layers.UDP{SrcPort: layers.UDPPort(sport), DstPort: layers.UDPPort(dport)}
	return Serialize(eth, ip, udp, gopacket.Payload(payload))
}

// ARPRequest builds a broadcast ARP who-has.
func ARPRequest(srcMAC, srcIP, dstIP string) []byte {
	eth := &layers.Ethernet{SrcMAC: MAC(srcMAC), DstMAC: layers.EthernetBroadcast, EthernetType: layers.EthernetTypeARP}
	arp := &layers.ARP{AddrType: layers.LinkTypeEthernet, Protocol: layers.EthernetTypeIPv4, HwAddressSize: 6, ProtAddressSize: 4,
		Operation: layers.ARPRequest, SourceHwAddress: MAC(srcMAC), SourceProtAddress: net.ParseIP(srcIP).To4(),
		DstHwAddress: make([]byte, 6), DstProtAddress: net.ParseIP(dstIP).To4()}
	return Serialize(eth, arp)
}
