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

// Fragments4 cuts an Ethernet/IPv4 frame (one datagram, no options) into
// IPv4 fragments carrying at most chunk bytes of its payload each (chunk is
// rounded down to a multiple of 8), all with identification id.
func Fragments4(frame []byte, id uint16, chunk int) [][]byte {
	hdr, payload := frame[:14+20], frame[14+20:]
	chunk &^= 7
	if chunk == 0 {
		panic("nftest.Fragments4: fragments carry multiples of 8 bytes")
	}
	var out [][]byte
	for off := 0; off < len(payload); off += chunk {
		end := min(off+chunk, len(payload))
		f := append(append([]byte(nil), hdr...), payload[off:end]...)
		ip := f[14:]
		ip[4], ip[5] = byte(id>>8), byte(id)
		fo := uint16(off / 8)
		if end < len(payload) {
			fo |= 0x2000 // more fragments
		}
		ip[6], ip[7] = byte(fo>>8), byte(fo)
		SetIPv4TotLen(f, 20+end-off)
		out = append(out, f)
	}
	return out
}

// SetIPv4TotLen rewrites the total length of an Ethernet/IPv4 frame's header
// (IPv4 right after Ethernet) and fixes its checksum.
func SetIPv4TotLen(frame []byte, n int) {
	frame[14+2], frame[14+3] = byte(n>>8), byte(n)
	FixIPv4Checksum(frame)
}

// FixIPv4Checksum recomputes the header checksum of an Ethernet/IPv4 frame
// whose header bytes a test changed.
func FixIPv4Checksum(frame []byte) {
	ip := frame[14:]
	hl := int(ip[0]&0x0f) * 4
	if hl < 20 {
		hl = 20
	}
	ip[10], ip[11] = 0, 0
	var sum uint32
	for i := 0; i+1 < hl && i+1 < len(ip); i += 2 {
		sum += uint32(ip[i])<<8 | uint32(ip[i+1])
	}
	for sum > 0xffff {
		sum = sum&0xffff + sum>>16
	}
	cs := ^uint16(sum)
	ip[10], ip[11] = byte(cs>>8), byte(cs)
}

// VLANTagged puts n 802.1Q tags (VLAN 10, 11, ...) between the Ethernet
// header and the payload of frame.
func VLANTagged(frame []byte, n int) []byte {
	out := append([]byte(nil), frame[:12]...)
	inner := frame[12:14]
	for i := 0; i < n; i++ {
		vid := 10 + i
		out = append(out, 0x81, 0x00, byte(vid>>8), byte(vid))
	}
	out = append(out, inner...)
	return append(out, frame[14:]...)
}
