package upf

import (
	"encoding/binary"
	"net/netip"
)

// Frames the slow path sends: GTP-U path management (Echo Response, Error
// Indication, End Marker, TS 29.281 clause 7) and neighbour discovery.

const (
	gtpPort        = 2152
	gtpEchoResp    = 2
	gtpErrorInd    = 26
	gtpEndMarkerT  = 254
	ieRecovery     = 14
	ieTEIDDataI    = 16
	ieGTPUPeerAddr = 133
)

// frame is a parsed punted frame: what the replies need of it.
type frame struct {
	srcMAC, dstMAC [6]byte
	src, dst       netip.Addr
	sport, dport   uint16
	l4             []byte // UDP payload (GTP-U)
}

func parseUDPFrame(b []byte) (frame, bool) {
	var f frame
	if len(b) < 14 {
		return f, false
	}
	copy(f.dstMAC[:], b[0:6])
	copy(f.srcMAC[:], b[6:12])
	var udp []byte
	switch binary.BigEndian.Uint16(b[12:]) {
	case 0x0800:
		if len(b) < 14+20 || b[14]>>4 != 4 || b[23] != 17 {
			return f, false
		}
		ihl := int(b[14]&0x0f) * 4
		if len(b) < 14+ihl+8 {
			return f, false
		}
		f.src = netip.AddrFrom4([4]byte(b[26:30]))
		f.dst = netip.AddrFrom4([4]byte(b[30:34]))
		udp = b[14+ihl:]
	case 0x86dd:
		if len(b) < 14+40+8 || b[20] != 17 {
			return f, false
		}
		f.src = netip.AddrFrom16([16]byte(b[22:38]))
		f.dst = netip.AddrFrom16([16]byte(b[38:54]))
		udp = b[54:]
	default:
		return f, false
	}
	f.sport = binary.BigEndian.Uint16(udp)
	f.dport = binary.BigEndian.Uint16(udp[2:])
	n := int(binary.BigEndian.Uint16(udp[4:]))
	if n < 8 || n > len(udp) {
		return f, false
	}
	f.l4 = udp[8:n]
	return f, true
}

func csumAdd(sum uint32, b []byte) uint32 {
	for i := 0; i+1 < len(b); i += 2 {
		sum += uint32(binary.BigEndian.Uint16(b[i:]))
	}
	if len(b)%2 == 1 {
		sum += uint32(b[len(b)-1]) << 8
	}
	return sum
}

func csumFold(sum uint32) uint16 {
	for sum>>16 != 0 {
		sum = sum&0xffff + sum>>16
	}
	return ^uint16(sum)
}

// ipFrame builds Ethernet + IP (v4 or v6, by src) + a transport payload
// with its checksum computed (proto 17: UDP, whose header the payload
// starts with; 58: ICMPv6).
func ipFrame(srcMAC, dstMAC [6]byte, src, dst netip.Addr, proto uint8, ttl uint8, l4 []byte, csumOff int) []byte {
	b := make([]byte, 0, 14+40+len(l4))
	b = append(b, dstMAC[:]...)
	b = append(b, srcMAC[:]...)
	var pseudo uint32
	if src.Is4() {
		b = binary.BigEndian.AppendUint16(b, 0x0800)
		h := make([]byte, 20)
		h[0] = 0x45
		binary.BigEndian.PutUint16(h[2:], uint16(20+len(l4)))
		binary.BigEndian.PutUint16(h[6:], 0x4000)
		h[8], h[9] = ttl, proto
		s4, d4 := src.As4(), dst.As4()
		copy(h[12:], s4[:])
		copy(h[16:], d4[:])
		binary.BigEndian.PutUint16(h[10:], csumFold(csumAdd(0, h)))
		b = append(b, h...)
		pseudo = csumAdd(csumAdd(0, s4[:]), d4[:])
	} else {
		b = binary.BigEndian.AppendUint16(b, 0x86dd)
		h := make([]byte, 40)
		h[0] = 0x60
		binary.BigEndian.PutUint16(h[4:], uint16(len(l4)))
		h[6], h[7] = proto, ttl
		s6, d6 := src.As16(), dst.As16()
		copy(h[8:], s6[:])
		copy(h[24:], d6[:])
		b = append(b, h...)
		pseudo = csumAdd(csumAdd(0, s6[:]), d6[:])
	}
	pseudo += uint32(proto) + uint32(len(l4))
	start := len(b)
	b = append(b, l4...)
	binary.BigEndian.PutUint16(b[start+csumOff:], 0)
	c := csumFold(csumAdd(pseudo, b[start:]))
	if c == 0 && proto == 17 {
		c = 0xffff
	}
	binary.BigEndian.PutUint16(b[start+csumOff:], c)
	return b
}

// udpFrame builds a UDP datagram frame.
func udpFrame(srcMAC, dstMAC [6]byte, src, dst netip.AddrPort, payload []byte) []byte {
	l4 := make([]byte, 8, 8+len(payload))
	binary.BigEndian.PutUint16(l4, src.Port())
	binary.BigEndian.PutUint16(l4[2:], dst.Port())
	binary.BigEndian.PutUint16(l4[4:], uint16(8+len(payload)))
	l4 = append(l4, payload...)
	return ipFrame(srcMAC, dstMAC, src.Addr(), dst.Addr(), 17, 64, l4, 6)
}

// gtpEchoResponse answers an Echo Request (its GTP-U header and sequence
// number in req): the Recovery IE has a restart counter of 0 (TS 29.281
// clause 7.2.2).
func gtpEchoResponse(req []byte) []byte {
	var seq [2]byte
	if len(req) >= 10 && req[0]&0x02 != 0 {
		copy(seq[:], req[8:10])
	}
	return []byte{0x32, gtpEchoResp, 0, 6, 0, 0, 0, 0, seq[0], seq[1], 0, 0, ieRecovery, 0}
}

// gtpErrorIndication tells a peer there is no context for teid (TS 29.281
// clause 7.3.1): TEID Data I and GTP-U Peer Address (our address).
func gtpErrorIndication(teid uint32, self netip.Addr) []byte {
	addr := self.AsSlice()
	b := []byte{0x32, gtpErrorInd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}
	b = append(b, ieTEIDDataI)
	b = binary.BigEndian.AppendUint32(b, teid)
	b = append(b, ieGTPUPeerAddr)
	b = binary.BigEndian.AppendUint16(b, uint16(len(addr)))
	b = append(b, addr...)
	binary.BigEndian.PutUint16(b[2:], uint16(len(b)-8))
	return b
}

// gtpEndMarker marks the end of a tunnel's packets (TS 29.281 clause 7.3.2).
func gtpEndMarker(teid uint32) []byte {
	b := []byte{0x30, gtpEndMarkerT, 0, 0, 0, 0, 0, 0}
	binary.BigEndian.PutUint32(b[4:], teid)
	return b
}

// parseErrorIndication reads the TEID and peer address of an Error
// Indication (the GTP-U message, after UDP).
func parseErrorIndication(g []byte) (uint32, netip.Addr, bool) {
	if len(g) < 8 || g[1] != gtpErrorInd {
		return 0, netip.Addr{}, false
	}
	n := int(binary.BigEndian.Uint16(g[2:]))
	if 8+n > len(g) {
		return 0, netip.Addr{}, false
	}
	ies := g[8 : 8+n]
	if g[0]&0x07 != 0 {
		if len(ies) < 4 {
			return 0, netip.Addr{}, false
		}
		ies = ies[4:] // sequence, N-PDU, next extension (none expected)
	}
	var teid uint32
	var peer netip.Addr
	var haveTEID bool
	for len(ies) > 0 {
		switch t := ies[0]; {
		case t == ieRecovery:
			if len(ies) < 2 {
				return 0, netip.Addr{}, false
			}
			ies = ies[2:]
		case t == ieTEIDDataI:
			if len(ies) < 5 {
				return 0, netip.Addr{}, false
			}
			teid, haveTEID = binary.BigEndian.Uint32(ies[1:]), true
			ies = ies[5:]
		case t >= 128: // TLV
			if len(ies) < 3 {
				return 0, netip.Addr{}, false
			}
			l := int(binary.BigEndian.Uint16(ies[1:]))
			if 3+l > len(ies) {
				return 0, netip.Addr{}, false
			}
			if t == ieGTPUPeerAddr {
				if a, ok := netip.AddrFromSlice(ies[3 : 3+l]); ok {
					peer = a.Unmap()
				}
			}
			ies = ies[3+l:]
		default:
			return 0, netip.Addr{}, false
		}
	}
	return teid, peer, haveTEID && peer.IsValid()
}

var broadcastMAC = [6]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}

// arpRequest asks who has target.
func arpRequest(mac [6]byte, self, target netip.Addr) []byte {
	b := make([]byte, 0, 42)
	b = append(b, broadcastMAC[:]...)
	b = append(b, mac[:]...)
	b = append(b, 0x08, 0x06, 0, 1, 0x08, 0, 6, 4, 0, 1)
	s, t := self.As4(), target.As4()
	b = append(b, mac[:]...)
	b = append(b, s[:]...)
	b = append(b, 0, 0, 0, 0, 0, 0)
	b = append(b, t[:]...)
	return b
}

// neighbourSolicitation asks for target's link-layer address (RFC 4861
// 4.3), to its solicited-node multicast address.
func neighbourSolicitation(mac [6]byte, self, target netip.Addr) []byte {
	t := target.As16()
	dst := netip.AddrFrom16([16]byte{0xff, 0x02, 10: 0, 11: 0x01, 12: 0xff, 13: t[13], 14: t[14], 15: t[15]})
	dmac := [6]byte{0x33, 0x33, 0xff, t[13], t[14], t[15]}
	l4 := make([]byte, 0, 32)
	l4 = append(l4, 135, 0, 0, 0, 0, 0, 0, 0)
	l4 = append(l4, t[:]...)
	l4 = append(l4, 1, 1) // source link-layer address option
	l4 = append(l4, mac[:]...)
	return ipFrame(mac, dmac, self, dst, 58, 255, l4, 2)
}
