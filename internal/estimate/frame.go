package estimate

import (
	"net"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
)

// FrameSpec describes an Ethernet/IPv4 or IPv6 frame of a calibration
// case.
type FrameSpec struct {
	SrcMAC, DstMAC string // default 02:00:00:00:00:01 and :02
	Src, Dst       string // IPv4 addresses, or IPv6 ones (both)
	Proto          string // "udp" (default) or "tcp"
	Sport, Dport   uint16
	TCPFlags       string // "S", "A", "SA", "PA"
	TTL            uint8  // default 64
	Size           int    // total bytes (padded with payload; default 64)
	// Payload, when set, is the L4 payload (Size then only pads).
	Payload []byte
}

// Frame builds the frame of spec with valid lengths and checksums.
func Frame(f FrameSpec) []byte {
	mac := func(s, def string) net.HardwareAddr {
		if s == "" {
			s = def
		}
		hw, err := net.ParseMAC(s)
		if err != nil {
			panic(err)
		}
		return hw
	}
	if f.TTL == 0 {
		f.TTL = 64
	}
	if f.Size == 0 {
		f.Size = 64
	}
	eth := &layers.Ethernet{SrcMAC: mac(f.SrcMAC, "02:00:00:00:00:01"), DstMAC: mac(f.DstMAC, "02:00:00:00:00:02"), EthernetType: layers.EthernetTypeIPv4}
	var ip interface {
		gopacket.NetworkLayer
		gopacket.SerializableLayer
	}
	v4 := &layers.IPv4{Version: 4, TTL: f.TTL, Id: 0x1234, Flags: layers.IPv4DontFragment, SrcIP: net.ParseIP(f.Src).To4(), DstIP: net.ParseIP(f.Dst).To4()}
	v6 := &layers.IPv6{Version: 6, HopLimit: f.TTL, SrcIP: net.ParseIP(f.Src), DstIP: net.ParseIP(f.Dst)}
	ip = v4
	hdr := 14 + 20
	if v4.SrcIP == nil {
		eth.EthernetType, ip, hdr = layers.EthernetTypeIPv6, v6, 14+40
	}
	proto := func(p layers.IPProtocol) { v4.Protocol, v6.NextHeader = p, p }
	var l4 gopacket.SerializableLayer
	if f.Proto == "tcp" {
		proto(layers.IPProtocolTCP)
		t := &layers.TCP{SrcPort: layers.TCPPort(f.Sport), DstPort: layers.TCPPort(f.Dport), Seq: 1000, Ack: 2000, Window: 1024}
		for _, c := range f.TCPFlags {
			switch c {
			case 'S':
				t.SYN = true
			case 'A':
				t.ACK = true
			case 'P':
				t.PSH = true
			case 'F':
				t.FIN = true
			case 'R':
				t.RST = true
			}
		}
		t.SetNetworkLayerForChecksum(ip)
		l4, hdr = t, hdr+20
	} else {
		proto(layers.IPProtocolUDP)
		u := &layers.UDP{SrcPort: layers.UDPPort(f.Sport), DstPort: layers.UDPPort(f.Dport)}
		u.SetNetworkLayerForChecksum(ip)
		l4, hdr = u, hdr+8
	}
	payload := f.Payload
	if pad := f.Size - hdr - len(payload); pad > 0 {
		for i := 0; i < pad; i++ {
			payload = append(payload, byte(i))
		}
	}
	buf := gopacket.NewSerializeBuffer()
	if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}, eth, ip, l4, gopacket.Payload(payload)); err != nil {
		panic(err)
	}
	return buf.Bytes()
}
