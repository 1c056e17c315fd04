package nat

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/edgenf/edgenf/internal/datapath"
	"github.com/edgenf/edgenf/internal/nftest"
	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
)

// reassemble joins translated fragments (in order, no options) into one
// Ethernet/IPv4 frame, to check the datagram's checksums as its receiver
// would.
func reassemble(t *testing.T, frags [][]byte) []byte {
	t.Helper()
	first := frags[0]
	out := append([]byte(nil), first[:14+20]...)
	for i, f := range frags {
		ip := f[14:]
		if !bytes.Equal(ip[12:20], first[14+12:14+20]) {
			t.Fatalf("fragment %d has addresses %v, the first one %v", i, parse(f), parse(first))
		}
		off := int(binary.BigEndian.Uint16(ip[6:])&0x1fff) * 8
		tot := int(binary.BigEndian.Uint16(ip[2:]))
		if off != len(out)-14-20 {
			t.Fatalf("fragment %d at offset %d, want %d", i, off, len(out)-14-20)
		}
		out = append(out, ip[20:tot]...)
	}
	ip := out[14:]
	ip[6], ip[7] = 0, 0
	nftest.SetIPv4TotLen(out, len(out)-14)
	return out
}

// TestNATNeverLeaksInsideSources: on the way out, what the NAT cannot
// translate is dropped and counted when its source is one the NAT covers:
// later fragments of an unknown datagram, other protocols, ICMP messages
// that are neither echo nor about a known flow, frames it cannot parse.
// Later fragments of a translated datagram are translated like its first
// one, both ways; the reassembled datagram's checksums are right.
func TestNATNeverLeaksInsideSources(t *testing.T) {
	for _, h := range hooks {
		t.Run(string(h.hook), func(t *testing.T) {
			r := nftest.New(t, Type, natModel(h.hook, nil, tables{"snat": {SNATRule{ID: 1, Internal: "198.18.1.0/24", External: ext}}}))
			payload := bytes.Repeat([]byte("0123456789abcdef"), 200) // 3,200 bytes
			dgram := udp4(in1, server, 4000, 9000, payload)
			frags := nftest.Fragments4(dgram, 0x4242, 1480)
			var outFrags [][]byte
			for _, f := range frags {
				res := r.RunTransparent(datapath.Egress, f)
				if res.Verdict != h.pass {
					t.Fatalf("fragment %v: verdict %d, want pass", parse(f), res.Verdict)
				}
				outFrags = append(outFrags, res.Data[:len(f)])
			}
			whole := reassemble(t, outFrags)
			if got := parse(whole); got.Src.String() != ext || got.Dst.String() != server || got.Dport != 9000 {
				t.Fatalf("datagram left as %v", got)
			}
			if err := checksums(whole); err != nil {
				t.Fatalf("reassembled datagram: %v", err)
			}
			extPort := parse(whole).Sport
			// The reply, fragmented too, comes back to the inside host.
			reply := udp4(server, ext, 9000, extPort, payload)
			var inFrags [][]byte
			for _, f := range nftest.Fragments4(reply, 0x4343, 1480) {
				res := r.RunTransparent(datapath.Ingress, f)
				if res.Verdict != h.pass {
					t.Fatalf("reply fragment: verdict %d, want pass", res.Verdict)
				}
				inFrags = append(inFrags, res.Data[:len(f)])
			}
			back := reassemble(t, inFrags)
			if got := parse(back); got.Dst.String() != in1 || got.Dport != 4000 {
				t.Fatalf("reply reached %v", got)
			}
			if err := checksums(back); err != nil {
				t.Fatalf("reassembled reply: %v", err)
			}
			before := counter(t, r, "untranslatable_drops")

			leaks := []struct {
				name  string
				frame []byte
			}{
				{"a later fragment of a datagram never seen", nftest.Fragments4(udp4(in1, server, 4001, 9000, payload), 0x4444, 1480)[1]},
				{"GRE", nftest.Serialize(eth4(), ip4(in1, server, layers.IPProtocolGRE), gopacket.Payload([]byte{0, 0, 8, 0, 1, 2, 3, 4}))},
				{"ICMP timestamp request", icmp4(in1, server, 13, 1, 1)},
				{"ICMP error about no known flow", icmpErr4(in1, server, 3, 3, udp4(server, in1, 53, 4002, nil), 8)},
				{"IHL 4", mangle4(udp4(in1, server, 4003, 9000, nil), func(ip []byte) { ip[0] = 0x44 })},
				{"total length past the frame", mangle4(udp4(in1, server, 4004, 9000, nil), func(ip []byte) { ip[2], ip[3] = 5, 0xdc })},
				{"three VLAN tags", nftest.VLANTagged(udp4(in1, server, 4005, 9000, nil), 3)},
				{"a tiny first fragment", mangle4(udp4(in1, server, 4006, 9000, payload)[:14+24], func(ip []byte) {
					ip[2], ip[3], ip[6] = 0, 24, 0x20
				})},
			}
			for _, l := range leaks {
				if res := r.RunTransparent(datapath.Egress, l.frame); res.Verdict != h.drop {
					t.Errorf("%s from an inside host: verdict %d, want drop", l.name, res.Verdict)
				}
			}
			if n := counter(t, r, "untranslatable_drops") - before; n != uint64(len(leaks)) {
				t.Errorf("untranslatable_drops grew by %d, want %d", n, len(leaks))
			}
			// Sources the NAT does not cover, and the way in, are not its
			// business: they pass as they are.
			for _, f := range [][]byte{
				nftest.Serialize(eth4(), ip4("198.19.0.254", server, layers.IPProtocolGRE), gopacket.Payload([]byte{0, 0, 8, 0})),
				icmpErr4("198.19.0.254", server, 3, 3, udp4(server, "198.19.0.254", 53, 4007, nil), 8),
			} {
				if res := r.RunTransparent(datapath.Egress, f); res.Verdict != h.pass || !bytes.Equal(res.Data[:len(f)], f) {
					t.Errorf("%v from the outside address: verdict %d, want pass unchanged", parse(f), res.Verdict)
				}
			}
			if res := r.RunTransparent(datapath.Ingress, leaks[4].frame); res.Verdict != h.pass {
				t.Errorf("a malformed frame coming in: verdict %d, want pass", res.Verdict)
			}
		})
	}
}

func mangle4(frame []byte, fn func(ip []byte)) []byte {
	f := append([]byte(nil), frame...)
	fn(f[14:])
	nftest.FixIPv4Checksum(f)
	return f
}
