package nat

import (
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"

	"github.com/edgenf/edgenf/internal/nftest"
	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
)

// Packet helpers shared by the NAT tests.

func eth4() *layers.Ethernet {
	return &layers.Ethernet{SrcMAC: nftest.MAC("02:00:00:00:00:01"), DstMAC: nftest.MAC("02:00:00:00:00:02"), EthernetType: layers.EthernetTypeIPv4}
}

func ip4(src, dst string, proto layers.IPProtocol) *layers.IPv4 {
	return &layers.IPv4{Version: 4, TTL: 64, Id: 0x1234, Protocol: proto, SrcIP: net.ParseIP(src), DstIP: net.ParseIP(dst)}
}

// tcp4 builds a TCP segment; flags is a subset of "SAFRP".
func tcp4(src, dst string, sport, dport uint16, flags string, payload []byte) []byte {
	t := &layers.TCP{SrcPort: layers.TCPPort(sport), DstPort: layers.TCPPort(dport), Seq: 1000, Window: 1024}
	for _, f := range flags {
		switch f {
		case 'S':
			t.SYN = true
		case 'A':
			t.ACK = true
		case 'F':
			t.FIN = true
		case 'R':
			t.RST = true
		case 'P':
			t.PSH = true
		}
	}
	return nftest.Serialize(eth4(), ip4(src, dst, layers.IPProtocolTCP), t, gopacket.Payload(payload))
}

func udp4(src, dst string, sport, dport uint16, payload []byte) []byte {
	return nftest.UDP4(src, dst, sport, dport, payload)
}

func icmp4(src, dst string, typ uint8, id, seq uint16) []byte {
	icmp := &layers.ICMPv4{TypeCode: layers.CreateICMPv4TypeCode(typ, 0), Id: id, Seq: seq}
	return nftest.Serialize(eth4(), ip4(src, dst, layers.IPProtocolICMPv4), icmp, gopacket.Payload([]byte("ping-payload")))
}

// fields is what a NAT test looks at in a frame.
type fields struct {
	Src, Dst     netip.Addr
	Sport, Dport uint16 // ICMP: Sport is the echo identifier
	Proto        uint8
}

func (f fields) String() string {
	return fmt.Sprintf("%d %s:%d > %s:%d", f.Proto, f.Src, f.Sport, f.Dst, f.Dport)
}

func parse(b []byte) fields {
	ip := b[14:]
	ihl := int(ip[0]&0xf) * 4
	f := fields{Src: netip.AddrFrom4([4]byte(ip[12:16])), Dst: netip.AddrFrom4([4]byte(ip[16:20])), Proto: ip[9]}
	l4 := ip[ihl:]
	switch f.Proto {
	case 6, 17:
		f.Sport, f.Dport = binary.BigEndian.Uint16(l4), binary.BigEndian.Uint16(l4[2:])
	case 1:
		f.Sport = binary.BigEndian.Uint16(l4[4:])
	}
	return f
}

func sum16(b []byte, s uint32) uint32 {
	for i := 0; i+1 < len(b); i += 2 {
		s += uint32(binary.BigEndian.Uint16(b[i:]))
	}
	if len(b)%2 == 1 {
		s += uint32(b[len(b)-1]) << 8
	}
	return s
}

func fold(s uint32) uint16 {
	for s>>16 != 0 {
		s = s&0xffff + s>>16
	}
	return uint16(s)
}

// checksums verifies the IPv4 header checksum and the TCP/UDP/ICMP checksum
// of an Ethernet frame.
func checksums(b []byte) error {
	ip := b[14:]
	ihl := int(ip[0]&0xf) * 4
	if fold(sum16(ip[:ihl], 0)) != 0xffff {
		return fmt.Errorf("bad IPv4 header checksum")
	}
	tot := int(binary.BigEndian.Uint16(ip[2:]))
	l4 := ip[ihl:tot]
	switch ip[9] {
	case 6, 17:
		if ip[9] == 17 && binary.BigEndian.Uint16(l4[6:]) == 0 {
			return nil
		}
		ph := make([]byte, 12)
		copy(ph, ip[12:20])
		ph[9] = ip[9]
		binary.BigEndian.PutUint16(ph[10:], uint16(len(l4)))
		if fold(sum16(l4, sum16(ph, 0))) != 0xffff {
			return fmt.Errorf("bad L4 checksum (proto %d)", ip[9])
		}
	case 1:
		if fold(sum16(l4, 0)) != 0xffff {
			return fmt.Errorf("bad ICMP checksum")
		}
	}
	return nil
}
