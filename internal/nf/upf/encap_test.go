package upf

import (
	"bytes"
	"encoding/binary"
	"net"
	"testing"

	"github.com/edgenf/edgenf/internal/nf/upf/model"
	"github.com/edgenf/edgenf/internal/nftest"
)

// expectedGTP is the frame the UPF must send for a downlink packet pkt
// tunnelled by a FAR to gnb (IPv4 or IPv6) with teid, from the n3 address
// of the same family, with a PDU Session Container when qfi is set and the
// outer ToS / traffic class tos: built octet by octet from TS 29.281 and
// RFC 791 / 8200, independently of the datapath's code.
func expectedGTP(srcMAC []byte, gnb string, teid uint32, qfi, tos uint8, pkt []byte) []byte {
	var gtp []byte
	flags := byte(0x30) // version 1, PT
	if qfi != 0 {
		flags |= 0x04 // E
	}
	ext := 0
	if qfi != 0 {
		ext = 8 // sequence, N-PDU, next type; the container (4 octets)
	}
	gtp = append(gtp, flags, 0xff)
	gtp = binary.BigEndian.AppendUint16(gtp, uint16(ext+len(pkt)))
	gtp = binary.BigEndian.AppendUint32(gtp, teid)
	if qfi != 0 {
		// sequence 0, N-PDU 0, next: PDU Session Container; length 1,
		// PDU type 0 (downlink), the QFI, no next extension
		gtp = append(gtp, 0, 0, 0, 0x85, 1, 0x00, qfi, 0)
	}
	udpLen := 8 + len(gtp) + len(pkt)
	udp := binary.BigEndian.AppendUint16(nil, 2152)
	udp = binary.BigEndian.AppendUint16(udp, 2152)
	udp = binary.BigEndian.AppendUint16(udp, uint16(udpLen))
	udp = append(udp, 0, 0) // checksum: IPv4 outer 0 (none); IPv6 below
	dst := net.ParseIP(gnb)
	var ip []byte
	ethType := []byte{0x08, 0x00}
	if dst.To4() != nil {
		ip = []byte{0x45, tos}
		ip = binary.BigEndian.AppendUint16(ip, uint16(20+udpLen))
		ip = append(ip, 0, 0, 0x40, 0, 64, 17, 0, 0) // id 0, DF, TTL 64, UDP
		ip = append(ip, net.ParseIP("198.18.1.1").To4()...)
		ip = append(ip, dst.To4()...)
		binary.BigEndian.PutUint16(ip[10:], csumFold(csumAdd(0, ip)))
	} else {
		ethType = []byte{0x86, 0xdd}
		ip = binary.BigEndian.AppendUint32(nil, 6<<28|uint32(tos)<<20)
		ip = binary.BigEndian.AppendUint16(ip, uint16(udpLen))
		ip = append(ip, 17, 64)
		ip = append(ip, net.ParseIP("2001:db8:1::1").To16()...)
		ip = append(ip, dst.To16()...)
		seg := append(append(append([]byte{}, udp...), gtp...), pkt...)
		sum := csumAdd(csumAdd(0, ip[8:24]), ip[24:40]) + uint32(udpLen) + 17
		c := csumFold(csumAdd(sum, seg))
		if c == 0 {
			c = 0xffff
		}
		binary.BigEndian.PutUint16(udp[6:], c)
	}
	var f []byte
	f = append(f, nftest.MAC(gnbMAC)...)
	f = append(f, srcMAC...)
	f = append(f, ethType...)
	f = append(f, ip...)
	f = append(f, udp...)
	f = append(f, gtp...)
	return append(f, pkt...)
}

// The outer header the UPF writes is the one TS 29.281 and the IP RFCs
// define, octet for octet, at both hooks, over IPv4 and IPv6, with and
// without a QFI and a ToS; and when the SMF changes a FAR's Outer Header
// Creation (TEID, address family, ToS), the next packet carries the new
// header.
func TestOuterHeaderOctetForOctet(t *testing.T) {
	tos := uint8(0xb8)
	for _, hook := range hooks {
		t.Run(string(hook), func(t *testing.T) {
			s := basicSession(1, 0x100, "198.19.0.5", "2001:db8:100:5::/64", 0x9000)
			r := newRig(t, hook, s)
			n3mac := r.ctl.ports["n3"].mac
			n3 := n3mac[:]
			small := udpPkt("198.51.100.7", "198.19.0.5", 53, 4000, []byte("answer"))
			v6 := udpPkt("2001:db8:ff::7", "2001:db8:100:5::1", 53, 4000, bytes.Repeat([]byte("y"), 333))
			for _, tc := range []struct {
				name string
				oh   model.OuterHeader
				tos  *uint8
				qfi  uint8 // the session's QER: 0 for none
			}{
				{"IPv4 outer, QFI", model.OuterHeader{TEID: 0x9000, Address: "198.18.1.2"}, nil, 9},
				{"IPv4 outer, no QFI, ToS", model.OuterHeader{TEID: 0x9abc, Address: "198.18.1.2"}, &tos, 0},
				{"IPv6 outer, no QFI", model.OuterHeader{TEID: 0x9abd, Address: "2001:db8:1::2"}, nil, 0},
				{"IPv6 outer, QFI, ToS", model.OuterHeader{TEID: 0x9abe, Address: "2001:db8:1::2"}, &tos, 5},
				{"back to IPv4 outer, QFI", model.OuterHeader{TEID: 0x9001, Address: "198.18.1.2"}, nil, 7},
			} {
				// a modification of the FAR (and QER) of the running session
				oh := tc.oh
				s.FARs[1].OuterHeader, s.FARs[1].ToS = &oh, tc.tos
				s.QERs, s.PDRs[1].QERs = nil, nil
				if tc.qfi != 0 {
					s.QERs, s.PDRs[1].QERs = []model.QER{{ID: 1, QFI: tc.qfi}}, []uint32{1}
				}
				if err := r.Update(testCube(hook, s)); err != nil {
					t.Fatal(err)
				}
				var wantTOS uint8
				if tc.tos != nil {
					wantTOS = *tc.tos
				}
				for _, pkt := range [][]byte{small, v6} {
					res := r.Run("n6", fromDN(pkt))
					if res.Port != 0 {
						t.Fatalf("%s: verdict %d port %d, want out of n3; counters %v", tc.name, res.Verdict, res.Port, r.nonZero())
					}
					want := expectedGTP(n3, oh.Address, oh.TEID, tc.qfi, wantTOS, pkt)
					if !bytes.Equal(res.Data, want) {
						t.Fatalf("%s, inner IPv%d:\n got %x\nwant %x", tc.name, pkt[0]>>4, res.Data, want)
					}
				}
			}
		})
	}
}
