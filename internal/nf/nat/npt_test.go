package nat

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"testing"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/datapath"
	"github.com/edgenf/edgenf/internal/nftest"
	"github.com/edgenf/edgenf/internal/schema/schematest"
	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
)

func eth6() *layers.Ethernet {
	return &layers.Ethernet{SrcMAC: nftest.MAC("02:00:00:00:00:01"), DstMAC: nftest.MAC("02:00:00:00:00:02"), EthernetType: layers.EthernetTypeIPv6}
}

func ip6(src, dst string, nh layers.IPProtocol) *layers.IPv6 {
	return &layers.IPv6{Version: 6, HopLimit: 64, NextHeader: nh, SrcIP: net.ParseIP(src), DstIP: net.ParseIP(dst)}
}

func udp6(src, dst string, sport, dport uint16) []byte {
	return nftest.Serialize(eth6(), ip6(src, dst, layers.IPProtocolUDP),
		&layers.UDP{SrcPort: layers.UDPPort(sport), DstPort: layers.UDPPort(dport)}, gopacket.Payload("npt"))
}

func tcp6(src, dst string, sport, dport uint16) []byte {
	return nftest.Serialize(eth6(), ip6(src, dst, layers.IPProtocolTCP),
		&layers.TCP{SrcPort: layers.TCPPort(sport), DstPort: layers.TCPPort(dport), SYN: true, Window: 1000})
}

// icmp6Err is a packet-too-big from router to dst quoting orig.
func icmp6Err(router, dst string, orig []byte) []byte {
	return nftest.Serialize(eth6(), ip6(router, dst, layers.IPProtocolICMPv6),
		&layers.ICMPv6{TypeCode: layers.CreateICMPv6TypeCode(layers.ICMPv6TypePacketTooBig, 0)},
		gopacket.Payload(append([]byte{0, 0, 5, 0}, orig[14:]...)))
}

// l4ok checks the upper-layer checksum of an IPv6 frame without extension
// headers (pseudo-header included): the one's complement sum is 0xffff.
func l4ok(frame []byte) error {
	ip := frame[14:]
	plen := int(binary.BigEndian.Uint16(ip[4:]))
	var s uint32
	add := func(b []byte) {
		for i := 0; i+1 < len(b); i += 2 {
			s += uint32(binary.BigEndian.Uint16(b[i:]))
		}
		if len(b)%2 == 1 {
			s += uint32(b[len(b)-1]) << 8
		}
	}
	add(ip[8:40])
	s += uint32(plen) + uint32(ip[6])
	add(ip[40 : 40+plen])
	for s>>16 != 0 {
		s = s&0xffff + s>>16
	}
	if s != 0xffff {
		return fmt.Errorf("L4 checksum wrong (sum %#04x)", s)
	}
	return nil
}

func addrAt(frame []byte, off int) string {
	return netip.AddrFrom16([16]byte(frame[off : off+16])).String()
}

// TestNPTv6: egress maps the inside prefix to the outside one and ingress
// back, keeping every checksum valid without touching it (the subnet word
// absorbs the difference); ICMPv6 errors get their quoted packet mapped
// too; what no rule covers passes as it is; IPv4 NAT works beside it.
func TestNPTv6(t *testing.T) {
	for _, h := range hooks {
		t.Run(string(h.hook), func(t *testing.T) {
			r := nftest.New(t, Type, natModel(h.hook, nil, tables{
				"npt": {NPTRule{ID: 1, Internal: "2001:db8:1::/48", External: "2001:db8:99::/48"},
					NPTRule{ID: 2, Internal: "2001:db8:20::/44", External: "2001:db8:a0::/44"}},
				"snat": {SNATRule{ID: 1, Internal: "198.18.1.0/24", External: ext}},
			}))
			const host, remote = "2001:db8:1:5::7", "2001:db8:ffff::1"
			for _, c := range []struct {
				frame []byte
				src   string
			}{
				{udp6(host, remote, 4000, 53), "2001:db8:99:"},
				{tcp6(host, remote, 4001, 80), "2001:db8:99:"},
				{udp6("2001:db8:2a:1::9", remote, 4002, 53), "2001:db8:aa:"},
			} {
				res := r.RunTransparent(datapath.Egress, c.frame)
				if res.Verdict != h.pass {
					t.Fatalf("egress verdict %d", res.Verdict)
				}
				out := res.Data
				if src := addrAt(out, 22); !strings.HasPrefix(src, c.src) || addrAt(out, 38) != remote {
					t.Fatalf("egress: %s -> %s, want source in %s", src, addrAt(out, 38), c.src)
				}
				if err := l4ok(out); err != nil {
					t.Fatalf("egress %s: %v", addrAt(out, 22), err)
				}
				if string(out[54:]) != string(c.frame[54:]) {
					t.Fatalf("egress changed the L4 header or payload")
				}
				// The reply comes back to the outside address.
				reply := append([]byte(nil), c.frame...)
				copy(reply[22:38], c.frame[38:54])
				copy(reply[38:54], out[22:38])
				reply[54], reply[55], reply[56], reply[57] = c.frame[56], c.frame[57], c.frame[54], c.frame[55]
				res = r.RunTransparent(datapath.Ingress, reply)
				if res.Verdict != h.pass || addrAt(res.Data, 38) != addrAt(c.frame, 22) {
					t.Fatalf("ingress: verdict %d, destination %s, want %s", res.Verdict, addrAt(res.Data, 38), addrAt(c.frame, 22))
				}
			}
			// Word 3 of 0xffff cannot be mapped (RFC 6296 3.5): dropped,
			// not leaked with an inside source.
			if res := r.RunTransparent(datapath.Egress, udp6("2001:db8:1:ffff::1", remote, 1, 2)); res.Verdict != h.drop {
				t.Fatalf("subnet 0xffff: verdict %d, want drop", res.Verdict)
			}
			// An error from outside about what the host sent: both the
			// destination and the quoted source go back inside.
			sent := r.RunTransparent(datapath.Egress, udp6(host, remote, 4000, 53)).Data
			res := r.RunTransparent(datapath.Ingress, icmp6Err("2001:db8:ffff::fe", addrAt(sent, 22), sent))
			if res.Verdict != h.pass || addrAt(res.Data, 38) != host || addrAt(res.Data, 62+8) != host {
				t.Fatalf("ICMPv6 error: verdict %d, to %s quoting %s", res.Verdict, addrAt(res.Data, 38), addrAt(res.Data, 62+8))
			}
			if err := l4ok(res.Data); err != nil {
				t.Fatalf("ICMPv6 error: %v", err)
			}
			// Not covered: untouched.
			other := udp6("2001:db8:3::1", remote, 1, 2)
			if res := r.RunTransparent(datapath.Egress, other); res.Verdict != h.pass || string(res.Data) != string(other) {
				t.Fatalf("uncovered source changed or dropped (verdict %d)", res.Verdict)
			}
			// IPv4 NAT beside it.
			got := run(t, r, h.pass, datapath.Egress, nftest.UDP4(in1, server, 5000, 53, []byte("x")))
			if got.Src.String() != ext {
				t.Fatalf("IPv4 SNAT: source %s", got.Src)
			}
			c := mustCounters(t, r)
			if c["translated"] < 8 || c["untranslatable_drops"] != 1 {
				t.Fatalf("counters %v", c)
			}
		})
	}
}

func TestNPTv6Validation(t *testing.T) {
	cases := []struct {
		rules []any
		want  string
	}{
		{[]any{NPTRule{ID: 1, Internal: "2001:db8:1::/56", External: "2001:db8:2::/56"}}, "internal: /56 is longer than /48"},
		{[]any{NPTRule{ID: 1, Internal: "2001:db8:1::/48", External: "2001:db8:200::/40"}}, "external: /40 and internal /48 differ"},
		{[]any{NPTRule{ID: 1, Internal: "198.18.0.0/16", External: "2001:db8:2::/48"}}, "internal: \"198.18.0.0/16\" is not IPv6"},
		{[]any{NPTRule{ID: 1, Internal: "2001:db8:1::1/48", External: "2001:db8:2::/48"}}, "has host bits set (did you mean 2001:db8:1::/48?)"},
		{[]any{NPTRule{ID: 1, Internal: "2001:db8:1::/48", External: "2001:db8:1::/48"}}, "external: 2001:db8:1::/48 overlaps internal"},
		{[]any{NPTRule{ID: 1, Internal: "2001:db8:1::/48"}}, "external: required"},
		{[]any{NPTRule{ID: 1, Internal: "2001:db8:1::/48", External: "2001:db8:2::/48"},
			NPTRule{ID: 2, Internal: "2001:db8:1::/48", External: "2001:db8:3::/48"}}, "tables.npt[2].internal: 2001:db8:1::/48 overlaps internal 2001:db8:1::/48 of rule 1"},
		{[]any{NPTRule{ID: 1, Internal: "2001:db8:1::/48", External: "2001:db8:2::/48"},
			NPTRule{ID: 2, Internal: "2001:db8:2::/48", External: "2001:db8:3::/48"}}, "tables.npt[2]: its prefixes overlap 2001:db8:2::/48 of rule 1"},
	}
	for _, c := range cases {
		topo := cube.NewTopology()
		topo.Put(natModel(datapath.XDP, nil, tables{"npt": c.rules}))
		err := topo.Validate(nil)
		if err == nil && len(c.rules) > 1 {
			// Cross-rule conflicts are found when the rules are written.
			r := nftest.New(t, Type, natModel(datapath.XDP, nil, tables{"npt": c.rules[:1]}))
			err = r.Update(natModel(datapath.XDP, nil, tables{"npt": c.rules}))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%+v: error %v, want %q", c.rules, err, c.want)
			}
			// The running rule is unchanged.
			res := r.RunTransparent(datapath.Egress, udp6("2001:db8:1::5", "2001:db8:ffff::1", 1, 2))
			if !strings.HasPrefix(addrAt(res.Data, 22), "2001:db8:2:") {
				t.Errorf("after a refused update, source %s", addrAt(res.Data, 22))
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: error %v, want %q", c.rules, err, c.want)
		}
	}
}

// TestNPTPrefixFormatAgreesWithParser: every string the nptv6-prefix format
// matches is read as an NPTv6 prefix, or refused for host bits (422, as the
// format says), never as malformed.
func TestNPTPrefixFormatAgreesWithParser(t *testing.T) {
	g := schematest.New(6)
	read := func(s string) bool {
		_, err := parsePrefix6("internal", s)
		return err == nil || errors.Is(err, cube.ErrUnprocessable)
	}
	if s, bad := g.Refuted("nptv6-prefix", 3000, read); bad {
		t.Errorf("%q matches nptv6-prefix but is refused as malformed", s)
	}
}
