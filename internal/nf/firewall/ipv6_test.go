package firewall

import (
	"encoding/binary"
	"net/netip"
	"strings"
	"testing"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/datapath"
	"github.com/edgenf/edgenf/internal/nftest"
)

// IPv6 frames are built byte by byte: the tests need extension header chains
// and fragments gopacket does not serialize, and malformed ones. The firewall
// does not check L4 checksums, so they are left zero.

const (
	nhHop  = 0
	nhTCP  = 6
	nhUDP  = 17
	nhRtg  = 43
	nhFrag = 44
	nhICMP = 58
	nhNone = 59
	nhDst  = 60
)

// ext is one extension header: its type and body after the next-header
// byte (length bytes are computed).
type ext struct {
	typ  byte
	body []byte
}

func opts(n int) ext { return ext{nhDst, make([]byte, 6+8*n)} } // destination options, PadN-free zeros (Pad1s)
func hbh() ext       { return ext{nhHop, make([]byte, 6)} }
func rtg() ext       { return ext{nhRtg, []byte{4, 0, 0, 0, 0, 0}} } // routing type 4, segments left 0
func frag(off8 uint16, more bool, id uint32) ext {
	b := make([]byte, 6)
	fo := off8 << 3
	if more {
		fo |= 1
	}
	binary.BigEndian.PutUint16(b[0:], fo)
	binary.BigEndian.PutUint32(b[2:], id)
	return ext{nhFrag, b}
}

// v6 builds Ethernet/IPv6/exts/upper, upper of protocol proto.
func v6(src, dst string, hop byte, exts []ext, proto byte, upper []byte) []byte {
	f := []byte{2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x86, 0xdd}
	var chain []byte
	for i, e := range exts {
		next := proto
		if i+1 < len(exts) {
			next = exts[i+1].typ
		}
		h := append([]byte{next, 0}, e.body...)
		if e.typ != nhFrag {
			h[1] = byte((len(h)+7)/8 - 1)
		}
		chain = append(chain, h...)
	}
	first := proto
	if len(exts) > 0 {
		first = exts[0].typ
	}
	hdr := make([]byte, 40)
	hdr[0] = 0x60
	binary.BigEndian.PutUint16(hdr[4:], uint16(len(chain)+len(upper)))
	hdr[6], hdr[7] = first, hop
	s, d := netip.MustParseAddr(src).As16(), netip.MustParseAddr(dst).As16()
	copy(hdr[8:], s[:])
	copy(hdr[24:], d[:])
	f = append(f, hdr...)
	f = append(f, chain...)
	return append(f, upper...)
}

func tcpHdr(sport, dport uint16, flags byte) []byte {
	b := make([]byte, 20)
	binary.BigEndian.PutUint16(b[0:], sport)
	binary.BigEndian.PutUint16(b[2:], dport)
	b[12], b[13] = 5<<4, flags
	return b
}

func udpHdr(sport, dport uint16, payload int) []byte {
	b := make([]byte, 8+payload)
	binary.BigEndian.PutUint16(b[0:], sport)
	binary.BigEndian.PutUint16(b[2:], dport)
	binary.BigEndian.PutUint16(b[4:], uint16(8+payload))
	return b
}

func icmp6Hdr(typ, code byte, id uint16) []byte {
	b := make([]byte, 8)
	b[0], b[1] = typ, code
	binary.BigEndian.PutUint16(b[4:], id)
	return b
}

const (
	fSYN = 0x02
	fACK = 0x10
	fFIN = 0x01
)

func tcp6(src, dst string, sport, dport uint16, flags byte, exts ...ext) []byte {
	return v6(src, dst, 64, exts, nhTCP, tcpHdr(sport, dport, flags))
}

func udp6(src, dst string, sport, dport uint16, exts ...ext) []byte {
	return v6(src, dst, 64, exts, nhUDP, udpHdr(sport, dport, 4))
}

func ping6(src, dst string, typ byte, id uint16) []byte {
	return v6(src, dst, 64, nil, nhICMP, icmp6Hdr(typ, 0, id))
}

// icmp6Err is an ICMPv6 error from router to dst quoting orig (a frame).
func icmp6Err(router, dst string, typ byte, orig []byte) []byte {
	return v6(router, dst, 64, nil, nhICMP, append(icmp6Hdr(typ, 0, 0), orig[14:]...))
}

// TestIPv6RuleFields: every field matches IPv6 packets; rules without
// addresses are family neutral, family-specific rules stay in their family.
func TestIPv6RuleFields(t *testing.T) {
	for _, hook := range []datapath.Hook{datapath.XDP, datapath.TC} {
		t.Run(string(hook), func(t *testing.T) {
			v := hookVerdicts[hook]
			rules := []Rule{
				{ID: 5, Family: "ipv4", Proto: "tcp", Dport: "8080", Action: "accept"},
				{ID: 10, Src: "2001:db8:5::/48", Action: "accept"},
				{ID: 20, Dst: "2001:db8:7::7", Action: "accept"},
				{ID: 30, Proto: "udp", Dport: "1000-2000", Action: "accept"},
				{ID: 40, Proto: "tcp", Sport: "443", Action: "accept"},
				{ID: 50, Proto: "tcp", TCPFlags: "SYN,!ACK", Dport: "22", Family: "ipv6", Action: "accept"},
				{ID: 60, Proto: "icmpv6", ICMPType: "echo-request", Action: "accept"},
				{ID: 61, Proto: "icmp", ICMPType: "echo-request", Action: "accept"},
				{ID: 70, Proto: "47", Family: "ipv6", Action: "accept"},
			}
			r := nftest.New(t, Type, fwModel(hook, &Config{IngressPolicy: "drop"}, rules, nil))
			runSteps(t, r, v, []step{
				{in, tcp6("2001:db8:6::9", "2001:db8:1::1", 9, 8080, fSYN), false},             // 5 is IPv4 only
				{in, tcp("198.18.6.9", "198.19.0.1", 9, 8080, "S"), true},                      // 5
				{in, udp6("2001:db8:5:ff::9", "2001:db8:1::1", 1, 1), true},                    // 10
				{in, udp6("2001:db8:6::9", "2001:db8:1::1", 1, 1), false},                      // policy
				{in, udp6("2001:db8:6::9", "2001:db8:7::7", 1, 1), true},                       // 20
				{in, udp6("2001:db8:6::9", "2001:db8:7::8", 9, 1500), true},                    // 30, neutral
				{in, udp("198.18.6.9", "198.19.7.8", 9, 1500), true},                           // 30, neutral
				{in, udp6("2001:db8:6::9", "2001:db8:7::8", 9, 2001), false},                   // policy
				{in, tcp6("2001:db8:6::9", "2001:db8:7::8", 443, 9, fSYN), true},               // 40
				{in, tcp6("2001:db8:6::9", "2001:db8:7::8", 444, 22, fSYN), true},              // 50
				{in, tcp6("2001:db8:6::9", "2001:db8:7::8", 445, 22, fSYN|fACK), false},        // 50 needs !ACK
				{in, tcp("198.18.6.9", "198.19.7.8", 444, 22, "S"), false},                     // 50 is IPv6 only
				{in, ping6("2001:db8:6::9", "2001:db8:7::8", 128, 1), true},                    // 60
				{in, ping6("2001:db8:6::9", "2001:db8:7::8", 129, 2), false},                   // echo reply: no rule
				{in, icmp("198.18.6.9", "198.19.7.8", 8, 0, 1), true},                          // 61
				{in, icmp("198.18.6.9", "198.19.7.8", 13, 0, 1), false},                        // timestamp: no rule
				{in, v6("2001:db8:6::9", "2001:db8:7::8", 64, nil, 47, make([]byte, 8)), true}, // 70
				{in, gre("198.18.6.9", "198.19.7.8"), false},                                   // 70 is IPv6 only
			})
			c := counts(t, r)
			for k, n := range map[string]uint64{"ingress/5": 1, "ingress/10": 1, "ingress/20": 1, "ingress/30": 2, "ingress/40": 1,
				"ingress/50": 1, "ingress/60": 1, "ingress/61": 1, "ingress/70": 1, "ingress/0": 8} {
				if c[k].Packets != n {
					t.Errorf("%s: %d packets, want %d (all %v)", k, c[k].Packets, n, c)
				}
			}
		})
	}
}

// TestIPv6ExtensionHeaders: the upper-layer header is found behind
// hop-by-hop, routing, fragment and destination options headers; chains the
// firewall cannot walk, and lying or cut headers, meet the policy.
func TestIPv6ExtensionHeaders(t *testing.T) {
	for _, hook := range []datapath.Hook{datapath.XDP, datapath.TC} {
		t.Run(string(hook), func(t *testing.T) {
			v := hookVerdicts[hook]
			// Drop policy; only UDP to 53 is allowed, and TCP to 22 is
			// dropped first even though "tcp any" is accepted later.
			rules := []Rule{
				{ID: 1, Proto: "tcp", Dport: "22", Action: "drop"},
				{ID: 2, Proto: "udp", Dport: "53", Action: "accept"},
				{ID: 3, Proto: "tcp", Action: "accept"},
			}
			r := nftest.New(t, Type, fwModel(hook, &Config{IngressPolicy: "drop"}, rules, nil))
			long := make([]ext, 9)
			for i := range long {
				long[i] = opts(0)
			}
			truncated := udp6("2001:db8::1", "2001:db8::2", 5, 53, opts(2))
			truncated = truncated[:14+40+4] // the options header cut short
			binary.BigEndian.PutUint16(truncated[14+4:], 4)
			lying := udp6("2001:db8::1", "2001:db8::2", 5, 53)
			binary.BigEndian.PutUint16(lying[14+4:], 1400) // payload length past the frame
			runSteps(t, r, v, []step{
				{in, udp6("2001:db8::1", "2001:db8::2", 5, 53, hbh(), rtg(), opts(1)), true},
				{in, tcp6("2001:db8::1", "2001:db8::2", 5, 22, fSYN, hbh(), rtg(), opts(1)), false}, // rule 1 behind the chain
				{in, tcp6("2001:db8::1", "2001:db8::2", 5, 22, fSYN, opts(0), opts(0), opts(30)), false},
				{in, tcp6("2001:db8::1", "2001:db8::2", 5, 80, fSYN, opts(0), opts(0), opts(30)), true},
				{in, udp6("2001:db8::1", "2001:db8::2", 5, 53, frag(0, false, 7)), true}, // atomic fragment
				{in, udp6("2001:db8::1", "2001:db8::2", 5, 53, long...), false},          // too long a chain: policy
				{in, udp6("2001:db8::1", "2001:db8::2", 5, 53, opts(0), hbh()), false},   // hop-by-hop not first
				{in, udp6("2001:db8::1", "2001:db8::2", 5, 53, opts(70)), false},         // past the walk's reach
				{in, truncated, false},
				{in, lying, false},
				{in, v6("2001:db8::1", "2001:db8::2", 64, []ext{opts(0)}, nhNone, nil), false}, // no upper layer: policy
			})
			c := counts(t, r)
			if c["ingress/-2"].Packets != 5 || c["ingress/1"].Packets != 2 {
				t.Fatalf("counters %v", c)
			}
		})
	}
}

// TestIPv6FragmentsCannotBypassRules: the first fragment's verdict is its
// datagram's; later fragments of unseen datagrams meet the policy; a first
// fragment that does not hold the whole header chain and L4 header (RFC
// 7112) is dropped with the rest of its datagram.
func TestIPv6FragmentsCannotBypassRules(t *testing.T) {
	for _, hook := range []datapath.Hook{datapath.XDP, datapath.TC} {
		t.Run(string(hook), func(t *testing.T) {
			v := hookVerdicts[hook]
			rules := []Rule{{ID: 1, Proto: "udp", Dport: "9", Action: "drop"}, {ID: 2, Proto: "udp", Action: "accept"}}
			r := nftest.New(t, Type, fwModel(hook, &Config{IngressPolicy: "drop"}, rules, nil))
			later := func(id uint32) []byte {
				return v6("2001:db8::1", "2001:db8::2", 64, []ext{frag(4, false, id)}, nhUDP, make([]byte, 64))
			}
			tiny := v6("2001:db8::1", "2001:db8::2", 64, []ext{frag(0, true, 300), opts(0)}, nhUDP, nil) // L4 in a later fragment
			runSteps(t, r, v, []step{
				{in, udp6("2001:db8::1", "2001:db8::2", 5, 9, frag(0, true, 100)), false},
				{in, later(100), false}, // its datagram was dropped
				{in, udp6("2001:db8::1", "2001:db8::2", 5, 10, frag(0, true, 200)), true},
				{in, later(200), true},  // its datagram was accepted
				{in, later(250), false}, // first fragment never seen: policy
				{in, tiny, false},
				{in, later(300), false},
				{in, v6("2001:db8::1", "2001:db8::2", 64, []ext{frag(1, false, 400)}, nhTCP, make([]byte, 12)), false}, // TCP at offset 8
			})
			c := counts(t, r)
			if c["ingress/-3"].Packets != 3 || c["ingress/1"].Packets != 2 || c["ingress/2"].Packets != 2 {
				t.Fatalf("counters %v", c)
			}
		})
	}
}

// TestIPv6NeighbourDiscoveryPasses: like ARP, neighbour discovery passes a
// drop policy (it never leaves the link: hop limit 255); ICMPv6 of the same
// types from further away is judged like any packet.
func TestIPv6NeighbourDiscoveryPasses(t *testing.T) {
	for _, hook := range []datapath.Hook{datapath.XDP, datapath.TC} {
		r := nftest.New(t, Type, fwModel(hook, &Config{IngressPolicy: "drop"}, []Rule{{ID: 1, Proto: "udp", Action: "accept"}}, nil))
		ns := func(hop byte) []byte { return v6("fe80::1", "ff02::1:ff00:2", hop, nil, nhICMP, icmp6Hdr(135, 0, 0)) }
		runSteps(t, r, hookVerdicts[hook], []step{
			{in, ns(255), true},
			{in, v6("fe80::1", "ff02::2", 255, nil, nhICMP, icmp6Hdr(133, 0, 0)), true}, // router solicitation
			{in, ns(64), false},
			{in, v6("fe80::1", "ff02::1", 255, []ext{frag(0, true, 9)}, nhICMP, icmp6Hdr(136, 0, 0)), false},
		})
	}
}

// TestIPv6Conntrack: connection tracking with the same states as IPv4:
// replies are established, ICMPv6 errors about a connection related, and
// connections are listed with IPv6 endpoints.
func TestIPv6Conntrack(t *testing.T) {
	for _, hook := range []datapath.Hook{datapath.XDP, datapath.TC} {
		t.Run(string(hook), func(t *testing.T) {
			v := hookVerdicts[hook]
			egress := []Rule{
				{ID: 1, State: "invalid", Action: "drop"},
				{ID: 2, Proto: "tcp", Dport: "80", State: "new", Action: "accept"},
				{ID: 3, Proto: "udp", State: "new", Action: "accept"},
				{ID: 4, Proto: "icmpv6", State: "new", Action: "accept"},
				{ID: 5, State: "established", Action: "accept"},
			}
			ingress := []Rule{{ID: 1, State: "established,related", Action: "accept"}}
			r := nftest.New(t, Type, fwModel(hook, &Config{IngressPolicy: "drop", EgressPolicy: "drop"}, ingress, egress))
			const h, s = "2001:db8:1::2", "2001:db8:2::1"
			syn := tcp6(h, s, 40000, 80, fSYN)
			runSteps(t, r, v, []step{
				{in, tcp6(s, h, 80, 40000, fSYN|fACK), false},
				{out, tcp6(h, s, 40000, 81, fSYN), false},
				{out, syn, true},
				{in, tcp6(s, h, 80, 40000, fSYN|fACK), true},
				{out, tcp6(h, s, 40000, 80, fACK), true},
				{in, tcp6(s, h, 80, 40000, fACK), true},
				{in, tcp6(s, h, 81, 40000, fACK), false},
				{in, icmp6Err("2001:db8:2::fe", h, 2, syn), true}, // packet too big: related
				{in, icmp6Err("2001:db8:2::fe", h, 1, udp6(h, "2001:db8:2::9", 5, 5)), false},
				{out, udp6(h, s, 5000, 53), true},
				{in, udp6(s, h, 53, 5000), true},
				{in, udp6(s, h, 53, 5001), false},
				{out, ping6(h, s, 128, 7), true},
				{in, ping6(s, h, 129, 7), true},
				{in, ping6(s, h, 129, 8), false},
				// The same tuple in IPv4 is another connection.
				{in, tcp("198.19.0.1", "198.18.1.2", 80, 40000, "A"), false},
			})
			conns, err := connections(r.Handle())
			if err != nil {
				t.Fatal(err)
			}
			states := map[string]string{}
			for _, c := range conns {
				states[c.Proto+" "+c.Src+" "+c.Dst] = c.State
			}
			if states["tcp [2001:db8:1::2]:40000 [2001:db8:2::1]:80"] != "established" ||
				states["udp [2001:db8:1::2]:5000 [2001:db8:2::1]:53"] != "udp-replied" ||
				states["icmpv6 2001:db8:1::2 id 7 2001:db8:2::1"] != "icmp" {
				t.Fatalf("connections %v", states)
			}
		})
	}
}

func TestIPv6Validation(t *testing.T) {
	cases := []struct {
		r    Rule
		want string
	}{
		{Rule{ID: 1, Src: "2001:db8::1/32", Action: "accept"}, `src: "2001:db8::1/32" has host bits set (did you mean 2001:db8::/32?)`},
		{Rule{ID: 1, Src: "2001:db8::/129", Action: "accept"}, "src: invalid prefix"},
		{Rule{ID: 1, Src: "fe80::1%eth0", Action: "accept"}, "src: invalid prefix"},
		{Rule{ID: 1, Src: "::ffff:198.18.0.0/112", Action: "accept"}, "IPv4-mapped IPv6 address: write the IPv4 prefix (198.18.0.0/16)"},
		{Rule{ID: 1, Src: "198.18.0.0/15", Dst: "2001:db8::/32", Action: "accept"}, "dst: 2001:db8::/32 and src 198.18.0.0/15 are of different address families"},
		{Rule{ID: 1, Family: "ipv4", Dst: "2001:db8::/32", Action: "accept"}, "family: ipv4, but the rule's addresses are IPv6"},
		{Rule{ID: 1, Family: "ipx", Action: "accept"}, `family: unknown family "ipx"`},
		{Rule{ID: 1, Proto: "icmp", Src: "2001:db8::/32", Action: "accept"}, "proto: icmp is IPv4's: IPv6 rules want icmpv6"},
		{Rule{ID: 1, Proto: "icmpv6", Family: "ipv4", Action: "accept"}, "proto: icmpv6 is IPv6's"},
		{Rule{ID: 1, Proto: "udp", ICMPType: "8", Action: "accept"}, "icmp_type: icmp_type needs proto icmp or icmpv6"},
		{Rule{ID: 1, Proto: "icmpv6", ICMPType: "ping", Action: "accept"}, `icmp_type: unknown type "ping": want 0-255 or one of`},
		{Rule{ID: 1, Proto: "icmpv6", ICMPType: "300", Action: "accept"}, "icmp_type: unknown type"},
	}
	for _, c := range cases {
		topo := cube.NewTopology()
		topo.Put(fwModel(datapath.XDP, nil, []Rule{c.r}, nil))
		err := topo.Validate(nil)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: error %v, want %q", c.r, err, c.want)
		}
	}
}
