package nat64

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"testing"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/datapath"
	"github.com/edgenf/edgenf/internal/nftest"
	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
)

const (
	host    = "2001:db8:1::10"
	host2   = "2001:db8:1::11"
	server4 = "198.18.0.1"
	server6 = "64:ff9b::c612:1" // 64:ff9b::198.18.0.1
	pool    = "198.19.64.1"
	hostMAC = "02:00:00:00:00:10"
	portMAC = "02:00:00:00:00:01"
)

var hooks = []struct {
	hook       datapath.Hook
	pass, drop uint32
}{
	{datapath.XDP, datapath.XDPRedirect, datapath.XDPDrop},
	{datapath.TC, datapath.TCActRedirect, datapath.TCActShot},
}

func rig(t *testing.T, hook datapath.Hook, cfg Config) *nftest.Rig {
	t.Helper()
	c := &cube.Cube{Name: "n64", Type: "nat64", Hook: hook, Config: nftest.Entry(cfg)}
	return nftest.New(t, Type, c)
}

// Frames from the host (toward the router port) and from the router toward
// the host: the router put its own MAC as source and some next hop's as
// destination, which the translator replaces by the host's.
func eth6() *layers.Ethernet {
	return &layers.Ethernet{SrcMAC: nftest.MAC(hostMAC), DstMAC: nftest.MAC(portMAC), EthernetType: layers.EthernetTypeIPv6}
}

func eth4() *layers.Ethernet {
	return &layers.Ethernet{SrcMAC: nftest.MAC(portMAC), DstMAC: nftest.MAC("02:00:00:00:64:64"), EthernetType: layers.EthernetTypeIPv4}
}

func ip6(src, dst string, nh layers.IPProtocol) *layers.IPv6 {
	return &layers.IPv6{Version: 6, HopLimit: 64, TrafficClass: 0x28, NextHeader: nh, SrcIP: net.ParseIP(src), DstIP: net.ParseIP(dst)}
}

func ip4(src, dst string, p layers.IPProtocol) *layers.IPv4 {
	return &layers.IPv4{Version: 4, IHL: 5, TTL: 60, TOS: 0x28, Protocol: p, Flags: layers.IPv4DontFragment, SrcIP: net.ParseIP(src), DstIP: net.ParseIP(dst)}
}

func ser(ls ...gopacket.SerializableLayer) []byte {
	for _, l := range ls {
		switch l := l.(type) {
		case *layers.UDP:
			l.SetNetworkLayerForChecksum(ls[1].(gopacket.NetworkLayer))
		case *layers.TCP:
			l.SetNetworkLayerForChecksum(ls[1].(gopacket.NetworkLayer))
		case *layers.ICMPv6:
			l.SetNetworkLayerForChecksum(ls[1].(gopacket.NetworkLayer))
		}
	}
	return nftest.Serialize(ls...)
}

func udp6(src, dst string, sport, dport uint16, payload string) []byte {
	return ser(eth6(), ip6(src, dst, layers.IPProtocolUDP), &layers.UDP{SrcPort: layers.UDPPort(sport), DstPort: layers.UDPPort(dport)}, gopacket.Payload(payload))
}

func udp4(src, dst string, sport, dport uint16, payload string) []byte {
	return ser(eth4(), ip4(src, dst, layers.IPProtocolUDP), &layers.UDP{SrcPort: layers.UDPPort(sport), DstPort: layers.UDPPort(dport)}, gopacket.Payload(payload))
}

func tcpFlags(l *layers.TCP, flags string) *layers.TCP {
	l.SYN, l.ACK, l.FIN, l.RST, l.PSH = strings.Contains(flags, "S"), strings.Contains(flags, "A"), strings.Contains(flags, "F"), strings.Contains(flags, "R"), strings.Contains(flags, "P")
	l.Window = 1000
	return l
}

func tcp6(src, dst string, sport, dport uint16, flags, payload string) []byte {
	return ser(eth6(), ip6(src, dst, layers.IPProtocolTCP), tcpFlags(&layers.TCP{SrcPort: layers.TCPPort(sport), DstPort: layers.TCPPort(dport), Seq: 1000}, flags), gopacket.Payload(payload))
}

func tcp4(src, dst string, sport, dport uint16, flags, payload string) []byte {
	return ser(eth4(), ip4(src, dst, layers.IPProtocolTCP), tcpFlags(&layers.TCP{SrcPort: layers.TCPPort(sport), DstPort: layers.TCPPort(dport), Seq: 5000}, flags), gopacket.Payload(payload))
}

func echo6(src, dst string, id, seq uint16) []byte {
	return ser(eth6(), ip6(src, dst, layers.IPProtocolICMPv6), &layers.ICMPv6{TypeCode: layers.CreateICMPv6TypeCode(layers.ICMPv6TypeEchoRequest, 0)},
		&layers.ICMPv6Echo{Identifier: id, SeqNumber: seq}, gopacket.Payload("ping6"))
}

func echoReply4(src, dst string, id, seq uint16) []byte {
	return ser(eth4(), ip4(src, dst, layers.IPProtocolICMPv4), &layers.ICMPv4{TypeCode: layers.CreateICMPv4TypeCode(layers.ICMPv4TypeEchoReply, 0), Id: id, Seq: seq}, gopacket.Payload("ping6"))
}

// err4 is an ICMP error from src to dst quoting the IPv4 packet in frame
// (its header and quote bytes of its payload); rest is the 4 bytes after the
// checksum (the MTU of "fragmentation needed").
func err4(src, dst string, typ, code uint8, rest uint32, frame []byte, quote int) []byte {
	return ser(eth4(), ip4(src, dst, layers.IPProtocolICMPv4),
		&layers.ICMPv4{TypeCode: layers.CreateICMPv4TypeCode(typ, code), Id: uint16(rest >> 16), Seq: uint16(rest)},
		gopacket.Payload(frame[14:14+20+quote]))
}

// err6 is an ICMPv6 error from src to dst quoting the IPv6 packet in frame.
func err6(src, dst string, typ, code uint8, frame []byte, quote int) []byte {
	b := append([]byte{0, 0, 0, 0}, frame[14:14+40+quote]...)
	return ser(eth6(), ip6(src, dst, layers.IPProtocolICMPv6), &layers.ICMPv6{TypeCode: layers.CreateICMPv6TypeCode(typ, code)}, gopacket.Payload(b))
}

// sum is the one's complement sum of b (16-bit big-endian words).
func sum(b []byte) uint32 {
	var s uint32
	for i := 0; i+1 < len(b); i += 2 {
		s += uint32(binary.BigEndian.Uint16(b[i:]))
	}
	if len(b)%2 == 1 {
		s += uint32(b[len(b)-1]) << 8
	}
	return s
}

func folds(s uint32) bool {
	for s>>16 != 0 {
		s = s&0xffff + s>>16
	}
	return s == 0xffff
}

// checksums verifies every checksum of a translated frame: IPv4 header and
// TCP/UDP/ICMP, or TCP/UDP/ICMPv6 with the IPv6 pseudo header.
func checksums(f []byte) error {
	switch binary.BigEndian.Uint16(f[12:]) {
	case 0x0800:
		ip := f[14:]
		if ip[0] != 0x45 {
			return fmt.Errorf("not an IPv4 header of 20 bytes: %#x", ip[0])
		}
		tot := int(binary.BigEndian.Uint16(ip[2:]))
		if tot != len(ip) && (tot > len(ip) || len(f) > 60) { // (or Ethernet padding)
			return fmt.Errorf("IPv4 total length %d, frame holds %d", tot, len(ip))
		}
		if !folds(sum(ip[:20])) {
			return errors.New("bad IPv4 header checksum")
		}
		l4 := ip[20:tot]
		s := sum(l4)
		if ip[9] != 1 {
			s += sum(ip[12:20]) + uint32(ip[9]) + uint32(len(l4))
		}
		if !folds(s) {
			return fmt.Errorf("bad protocol %d checksum", ip[9])
		}
	case 0x86dd:
		ip := f[14:]
		plen := int(binary.BigEndian.Uint16(ip[4:]))
		if plen+40 != len(ip) && (plen+40 > len(ip) || len(f)-20 > 60) { // (the IPv4 frame's padding, carried over)
			return fmt.Errorf("IPv6 payload length %d, frame holds %d", plen, len(ip)-40)
		}
		if !folds(sum(ip[8:40]) + uint32(ip[6]) + uint32(plen) + sum(ip[40:40+plen])) {
			return fmt.Errorf("bad next header %d checksum", ip[6])
		}
	default:
		return fmt.Errorf("ethertype %#x", f[12:14])
	}
	return nil
}

// pkt is what a test looks at in a translated frame.
type pkt struct {
	v6             bool
	src, dst       netip.Addr
	sport, dport   uint16 // ICMP echo: the identifier in sport
	proto          uint8
	ttl, tos       uint8
	df             bool
	ethSrc, ethDst string
	l4             []byte
}

func parse(f []byte) pkt {
	p := pkt{ethDst: net.HardwareAddr(f[0:6]).String(), ethSrc: net.HardwareAddr(f[6:12]).String()}
	var l4 []byte
	if binary.BigEndian.Uint16(f[12:]) == 0x86dd {
		ip := f[14:]
		p.v6, p.proto, p.ttl = true, ip[6], ip[7]
		p.tos = ip[0]<<4 | ip[1]>>4
		p.src, p.dst = netip.AddrFrom16([16]byte(ip[8:24])), netip.AddrFrom16([16]byte(ip[24:40]))
		l4 = ip[40:]
	} else {
		ip := f[14:]
		p.proto, p.ttl, p.tos, p.df = ip[9], ip[8], ip[1], ip[6]&0x40 != 0
		p.src, p.dst = netip.AddrFrom4([4]byte(ip[12:16])), netip.AddrFrom4([4]byte(ip[16:20]))
		l4 = ip[20:]
	}
	p.l4 = l4
	switch p.proto {
	case 6, 17:
		p.sport, p.dport = binary.BigEndian.Uint16(l4), binary.BigEndian.Uint16(l4[2:])
	case 1, 58:
		p.sport = binary.BigEndian.Uint16(l4[4:])
	}
	return p
}

// run passes frame through the translator in direction dir, wants it
// passed with every checksum valid, and returns it parsed.
func run(t *testing.T, r *nftest.Rig, pass uint32, dir datapath.Direction, frame []byte) (pkt, []byte) {
	t.Helper()
	res := r.RunTransparent(dir, frame)
	if res.Verdict != pass {
		t.Fatalf("%s %s: verdict %d, want pass (%d)", dir, describe(frame), res.Verdict, pass)
	}
	if err := checksums(res.Data); err != nil {
		t.Fatalf("%s %s -> %s: %v", dir, describe(frame), describe(res.Data), err)
	}
	return parse(res.Data), res.Data
}

func dropped(t *testing.T, r *nftest.Rig, drop uint32, dir datapath.Direction, frame []byte) {
	t.Helper()
	if res := r.RunTransparent(dir, frame); res.Verdict != drop {
		t.Fatalf("%s %s: verdict %d, want drop (%d)", dir, describe(frame), res.Verdict, drop)
	}
}

func describe(f []byte) string {
	p := parse(f)
	return fmt.Sprintf("proto %d %s:%d > %s:%d", p.proto, p.src, p.sport, p.dst, p.dport)
}

func want(t *testing.T, got pkt, src string, sport uint16, dst string, dport uint16) {
	t.Helper()
	if got.src != netip.MustParseAddr(src) || got.dst != netip.MustParseAddr(dst) || got.sport != sport || got.dport != dport {
		t.Fatalf("got %s:%d > %s:%d, want %s:%d > %s:%d", got.src, got.sport, got.dst, got.dport, src, sport, dst, dport)
	}
}

func counterValues(t *testing.T, r *nftest.Rig) map[string]uint64 {
	t.Helper()
	cs, err := n64Counters.Values(r.Handle())
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// TestTranslateUDPAndTCP: a host's first UDP datagram and TCP SYN to
// 64:ff9b::198.18.0.1 leave as IPv4 from the pool (the host's port kept),
// with traffic class, hop limit and payload carried over and DF set; the
// server's replies come back as IPv6 from 64:ff9b::198.18.0.1 to the host,
// addressed to the host's MAC; every checksum is valid both ways. What no
// session lets in, and what is not for the prefix or the pool, is not
// translated.
func TestTranslateUDPAndTCP(t *testing.T) {
	for _, h := range hooks {
		t.Run(string(h.hook), func(t *testing.T) {
			r := rig(t, h.hook, Config{Pool: pool})
			got, f := run(t, r, h.pass, datapath.Ingress, udp6(host, server6, 5000, 53, "query"))
			want(t, got, pool, 5000, server4, 53)
			if got.v6 || got.ttl != 64 || got.tos != 0x28 || !got.df || got.ethDst != portMAC || string(got.l4[8:]) != "query" {
				t.Fatalf("translated UDP: %+v", got)
			}
			if len(f) != len(udp6(host, server6, 5000, 53, "query"))-20 {
				t.Fatalf("length %d", len(f))
			}
			got, _ = run(t, r, h.pass, datapath.Egress, udp4(server4, pool, 53, 5000, "answer"))
			want(t, got, server6, 53, host, 5000)
			if !got.v6 || got.ttl != 60 || got.tos != 0x28 || got.ethDst != hostMAC || got.ethSrc != portMAC || !strings.HasPrefix(string(got.l4[8:]), "answer") {
				t.Fatalf("translated reply: %+v", got)
			}

			got, _ = run(t, r, h.pass, datapath.Ingress, tcp6(host, server6, 40000, 80, "S", ""))
			want(t, got, pool, 40000, server4, 80)
			got, _ = run(t, r, h.pass, datapath.Egress, tcp4(server4, pool, 80, 40000, "SA", ""))
			want(t, got, server6, 80, host, 40000)
			got, _ = run(t, r, h.pass, datapath.Ingress, tcp6(host, server6, 40000, 80, "PA", "GET / HTTP/1.0\r\n\r\n"))
			want(t, got, pool, 40000, server4, 80)
			if string(got.l4[20:]) != "GET / HTTP/1.0\r\n\r\n" {
				t.Fatalf("TCP payload %q", got.l4[20:])
			}

			// Not a reply: another server port, another server.
			dropped(t, r, h.drop, datapath.Egress, udp4(server4, pool, 54, 5000, "x"))
			dropped(t, r, h.drop, datapath.Egress, udp4("198.18.0.2", pool, 53, 5000, "x"))
			// TCP that does not start with a SYN opens nothing.
			dropped(t, r, h.drop, datapath.Ingress, tcp6(host, server6, 40001, 80, "A", ""))
			// Not for the prefix / the pool: untouched.
			plain6 := udp6(host, "2001:db8:2::1", 5000, 53, "x")
			got, f = run(t, r, h.pass, datapath.Ingress, plain6)
			if string(f) != string(plain6) {
				t.Fatalf("IPv6 outside the prefix changed: %s", describe(f))
			}
			plain4 := udp4(server4, "198.18.5.5", 53, 5000, "x")
			if _, f = run(t, r, h.pass, datapath.Egress, plain4); string(f) != string(plain4) {
				t.Fatalf("IPv4 outside the pool changed: %s", describe(f))
			}

			ss, err := sessions(r.Handle())
			if err != nil {
				t.Fatal(err)
			}
			if len(ss) != 2 {
				t.Fatalf("sessions %+v", ss)
			}
			for _, s := range ss {
				if s.Proto == "tcp" && (s.State != "established" || s.Host != "["+host+"]:40000" || s.Outside != pool+":40000" || s.Remote != server4+":80" || s.Packets != 3) {
					t.Errorf("tcp session %+v", s)
				}
				if s.Proto == "udp" && (s.State != "replied" || s.RemoteIPv6 != "["+server6+"]:53" || s.Packets != 2) {
					t.Errorf("udp session %+v", s)
				}
			}
			cs := counterValues(t, r)
			if cs["translated_6to4"] != 3 || cs["translated_4to6"] != 2 || cs["mappings_opened"] != 2 || cs["filtered_drops"] != 3 {
				t.Errorf("counters %v", cs)
			}
		})
	}
}

// TestEndpointIndependentMapping: a host port keeps its pool port for every
// destination (RFC 6146 3.5.1), and two hosts using the same source port
// get distinct pool ports.
func TestEndpointIndependentMapping(t *testing.T) {
	for _, h := range hooks {
		t.Run(string(h.hook), func(t *testing.T) {
			r := rig(t, h.hook, Config{Pool: pool})
			a, _ := run(t, r, h.pass, datapath.Ingress, udp6(host, server6, 6000, 53, "a"))
			b, _ := run(t, r, h.pass, datapath.Ingress, udp6(host, "64:ff9b::c612:2", 6000, 123, "b"))
			c, _ := run(t, r, h.pass, datapath.Ingress, udp6(host2, server6, 6000, 53, "c"))
			if a.sport != 6000 || b.sport != 6000 || c.sport == 6000 {
				t.Fatalf("pool ports %d %d %d: want 6000, 6000 and another", a.sport, b.sport, c.sport)
			}
			got, _ := run(t, r, h.pass, datapath.Egress, udp4(server4, pool, 53, c.sport, "to host2"))
			want(t, got, server6, 53, host2, 6000)
		})
	}
}

// TestICMPEcho: an echo request leaves as ICMP echo (type 8, identifier
// mapped like a port) and its reply comes back as ICMPv6 echo reply.
func TestICMPEcho(t *testing.T) {
	for _, h := range hooks {
		t.Run(string(h.hook), func(t *testing.T) {
			r := rig(t, h.hook, Config{Pool: pool})
			got, f := run(t, r, h.pass, datapath.Ingress, echo6(host, server6, 7777, 1))
			want(t, got, pool, 7777, server4, 0)
			if got.proto != 1 || f[34] != 8 || f[35] != 0 {
				t.Fatalf("echo request: proto %d type %d", got.proto, f[34])
			}
			got, f = run(t, r, h.pass, datapath.Egress, echoReply4(server4, pool, 7777, 1))
			want(t, got, server6, 7777, host, 0)
			if got.proto != 58 || f[54] != 129 || !strings.HasPrefix(string(got.l4[8:]), "ping6") {
				t.Fatalf("echo reply: proto %d type %d", got.proto, f[54])
			}
			// An echo request from outside opens nothing.
			dropped(t, r, h.drop, datapath.Egress, ser(eth4(), ip4(server4, pool, layers.IPProtocolICMPv4),
				&layers.ICMPv4{TypeCode: layers.CreateICMPv4TypeCode(layers.ICMPv4TypeEchoRequest, 0), Id: 7777}))
		})
	}
}

// TestICMPErrors: ICMP errors about a translated flow are translated with
// the packet they quote (RFC 7915 4.2, 5.2), every checksum valid,
// including the quoted UDP one: port unreachable from the server, and
// fragmentation needed from a router on the way (MTU + 20), toward the host;
// a host's port unreachable about a server's datagram, toward the server.
// Errors about no session are dropped.
func TestICMPErrors(t *testing.T) {
	for _, h := range hooks {
		t.Run(string(h.hook), func(t *testing.T) {
			r := rig(t, h.hook, Config{Pool: pool})
			orig := udp6(host, server6, 5000, 53, "query-with-some-bytes")
			_, sent := run(t, r, h.pass, datapath.Ingress, orig)

			got, f := run(t, r, h.pass, datapath.Egress, err4(server4, pool, 3, 3, 0, sent, 8+21))
			want(t, got, server6, 0, host, 0)
			if got.proto != 58 || f[54] != 1 || f[55] != 4 || got.ethDst != hostMAC {
				t.Fatalf("port unreachable -> type %d code %d", f[54], f[55])
			}
			q := parse(append(append([]byte{}, f[:14]...), f[62:]...)) // the quoted packet
			if !q.v6 || q.src != netip.MustParseAddr(host) || q.dst != netip.MustParseAddr(server6) || q.sport != 5000 || q.dport != 53 {
				t.Fatalf("quoted packet %+v", q)
			}
			if c := binary.BigEndian.Uint16(f[62+40+6:]); c != binary.BigEndian.Uint16(orig[14+40+6:]) {
				t.Fatalf("quoted UDP checksum %#x, the host sent %#x", c, binary.BigEndian.Uint16(orig[14+40+6:]))
			}

			got, f = run(t, r, h.pass, datapath.Egress, err4("198.18.9.9", pool, 3, 4, 1400, sent, 8))
			want(t, got, "64:ff9b::c612:909", 0, host, 0)
			if f[54] != 2 || binary.BigEndian.Uint32(f[58:]) != 1420 {
				t.Fatalf("fragmentation needed -> type %d mtu %d, want packet too big 1420", f[54], binary.BigEndian.Uint32(f[58:]))
			}
			got, f = run(t, r, h.pass, datapath.Egress, err4("198.18.9.9", pool, 11, 0, 0, sent, 8))
			if f[54] != 3 || f[55] != 0 {
				t.Fatalf("time exceeded -> type %d code %d", f[54], f[55])
			}

			// The host refuses a datagram of the server's.
			_, reply := run(t, r, h.pass, datapath.Egress, udp4(server4, pool, 53, 5000, "answer"))
			got, f = run(t, r, h.pass, datapath.Ingress, err6(host, server6, 1, 4, reply, 8+6))
			want(t, got, pool, 0, server4, 0)
			if got.proto != 1 || f[34] != 3 || f[35] != 3 {
				t.Fatalf("ICMPv6 port unreachable -> proto %d type %d code %d", got.proto, f[34], f[35])
			}
			q = parse(append(append([]byte{}, f[:14]...), f[42:]...))
			if q.src != netip.MustParseAddr(server4) || q.dst != netip.MustParseAddr(pool) || q.sport != 53 || q.dport != 5000 {
				t.Fatalf("quoted packet %+v", q)
			}

			// About a flow nobody opened.
			other := udp4(pool, "198.18.0.7", 5999, 53, "x")
			dropped(t, r, h.drop, datapath.Egress, err4(server4, pool, 3, 3, 0, other, 8))
			cs := counterValues(t, r)
			if cs["icmp_errors_translated"] != 4 {
				t.Errorf("counters %v", cs)
			}
		})
	}
}

// TestPoolExhaustion: with one pool address and two ports, two host ports
// are mapped (into the range) and a third is dropped and counted; a flush
// frees the ports.
func TestPoolExhaustion(t *testing.T) {
	for _, h := range hooks {
		t.Run(string(h.hook), func(t *testing.T) {
			r := rig(t, h.hook, Config{Pool: pool, PortRange: "2000-2001"})
			a, _ := run(t, r, h.pass, datapath.Ingress, udp6(host, server6, 5000, 53, "a"))
			b, _ := run(t, r, h.pass, datapath.Ingress, udp6(host2, server6, 5000, 53, "b"))
			if a.sport == b.sport || a.sport < 2000 || a.sport > 2001 || b.sport < 2000 || b.sport > 2001 {
				t.Fatalf("pool ports %d and %d", a.sport, b.sport)
			}
			dropped(t, r, h.drop, datapath.Ingress, udp6(host, server6, 5001, 53, "c"))
			if cs := counterValues(t, r); cs["no_port_drops"] != 1 {
				t.Fatalf("counters %v", cs)
			}
			if _, err := cube.ControllerOf[*controller](r.Handle()).sweep(r.Handle(), true); err != nil {
				t.Fatal(err)
			}
			run(t, r, h.pass, datapath.Ingress, udp6(host, server6, 5001, 53, "c"))
		})
	}
}

// TestNetworkSpecificPrefix: a /48 network-specific prefix (RFC 6052 2.2,
// the u octet skipped) both ways, and the RFC's table of examples.
func TestNetworkSpecificPrefix(t *testing.T) {
	for _, c := range []struct{ prefix, v6 string }{
		{"2001:db8::/32", "2001:db8:c000:221::"},
		{"2001:db8:100::/40", "2001:db8:1c0:2:21::"},
		{"2001:db8:122::/48", "2001:db8:122:c000:2:2100::"},
		{"2001:db8:122:300::/56", "2001:db8:122:3c0:0:221::"},
		{"2001:db8:122:344::/64", "2001:db8:122:344:c0:2:2100:0"},
		{"2001:db8:122:344::/96", "2001:db8:122:344::c000:221"},
	} {
		p := netip.MustParsePrefix(c.prefix)
		a := netip.MustParseAddr("192.0.2.33")
		if got := Embed(p, a); got != netip.MustParseAddr(c.v6) {
			t.Errorf("Embed(%s, %s) = %s, want %s (RFC 6052 2.4)", p, a, got, c.v6)
		}
		if got := Extract(p, netip.MustParseAddr(c.v6)); got != a {
			t.Errorf("Extract(%s, %s) = %s", p, c.v6, got)
		}
	}
	for _, h := range hooks {
		t.Run(string(h.hook), func(t *testing.T) {
			p := netip.MustParsePrefix("2001:db8:64::/48")
			r := rig(t, h.hook, Config{Prefix: p.String(), Pool: "198.19.64.1-198.19.64.4"})
			srv := Embed(p, netip.MustParseAddr(server4)).String()
			got, _ := run(t, r, h.pass, datapath.Ingress, tcp6(host, srv, 40000, 443, "S", ""))
			if got.dst != netip.MustParseAddr(server4) || got.src.As4()[0] != 198 {
				t.Fatalf("got %+v", got)
			}
			back, _ := run(t, r, h.pass, datapath.Egress, tcp4(server4, got.src.String(), 443, got.sport, "SA", ""))
			want(t, back, srv, 443, host, 40000)
			// The well-known prefix is not this cube's.
			plain := udp6(host, server6, 1, 2, "x")
			if _, f := run(t, r, h.pass, datapath.Ingress, plain); string(f) != string(plain) {
				t.Fatal("64:ff9b:: translated under another prefix")
			}
		})
	}
}

// TestRefusals: what the translator does not translate is dropped and
// counted, never passed half-translated: IPv6 fragments and extension
// headers toward the prefix, IPv4 fragments and options toward the pool,
// inbound UDP without a checksum, destinations it never maps to (loopback,
// multicast, its own pool), truncated TCP and UDP headers.
func TestRefusals(t *testing.T) {
	for _, h := range hooks {
		t.Run(string(h.hook), func(t *testing.T) {
			r := rig(t, h.hook, Config{Pool: pool})
			frag := ser(eth6(), ip6(host, server6, layers.IPProtocolIPv6Fragment),
				gopacket.Payload(append([]byte{17, 0, 0, 1, 0, 0, 0, 7}, make([]byte, 64)...))) // first fragment, M set
			dropped(t, r, h.drop, datapath.Ingress, frag)
			for _, dst := range []string{"64:ff9b::7f00:1", "64:ff9b::e000:1", "64:ff9b::c613:4001"} {
				dropped(t, r, h.drop, datapath.Ingress, udp6(host, dst, 1000, 53, "x"))
			}
			run(t, r, h.pass, datapath.Ingress, udp6(host, server6, 5000, 53, "open"))
			f4 := udp4(server4, pool, 53, 5000, "0123456789abcdef")
			for _, f := range nftest.Fragments4(f4, 99, 8) {
				dropped(t, r, h.drop, datapath.Egress, f)
			}
			noSum := udp4(server4, pool, 53, 5000, "x")
			noSum[14+20+6], noSum[14+20+7] = 0, 0
			dropped(t, r, h.drop, datapath.Egress, noSum)
			opts := ser(eth4(), &layers.IPv4{Version: 4, IHL: 6, TTL: 60, Protocol: layers.IPProtocolUDP, SrcIP: net.ParseIP(server4), DstIP: net.ParseIP(pool),
				Options: []layers.IPv4Option{{OptionType: 1}, {OptionType: 1}, {OptionType: 1}, {OptionType: 0}}},
				&layers.UDP{SrcPort: 53, DstPort: 5000})
			dropped(t, r, h.drop, datapath.Egress, opts)
			// Truncated L4 headers (the fast path reads them in place): a
			// TCP header cut after its ports, a UDP header cut in two,
			// either way; never translated, never passed.
			syn6 := tcp6(host, server6, 5001, 80, "S", "")
			dropped(t, r, h.drop, datapath.Ingress, syn6[:14+40+8])
			dropped(t, r, h.drop, datapath.Ingress, udp6(host, server6, 5002, 53, "")[:14+40+4])
			syn4 := tcp4(server4, pool, 80, 5000, "SA", "")
			dropped(t, r, h.drop, datapath.Egress, syn4[:14+20+8])
			dropped(t, r, h.drop, datapath.Egress, udp4(server4, pool, 53, 5000, "x")[:14+20+4])
			// IP lengths that lie: more than the frame holds (the
			// payload cut after the UDP header), or less than the L4
			// header; translated, they would go on malformed.
			payload := strings.Repeat("p", 64) // (past any padding to the minimum frame)
			long6 := udp6(host, server6, 5003, 53, payload)
			dropped(t, r, h.drop, datapath.Ingress, long6[:len(long6)-4])
			short6 := udp6(host, server6, 5004, 53, payload)
			binary.BigEndian.PutUint16(short6[14+4:], 4)
			dropped(t, r, h.drop, datapath.Ingress, short6)
			long4 := udp4(server4, pool, 53, 5000, payload)
			dropped(t, r, h.drop, datapath.Egress, long4[:len(long4)-4])
			if cs := counterValues(t, r); cs["untranslatable_drops"] < 15 {
				t.Errorf("counters %v", cs)
			}
		})
	}
}

// TestValidation: bad settings are refused with the field named.
func TestValidation(t *testing.T) {
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Config{}, "pool: required"},
		{Config{Pool: "198.19.64.9-198.19.64.1"}, "inverted range"},
		{Config{Pool: "198.19.0.0-198.20.0.0"}, "at most 65536"},
		{Config{Pool: "127.0.0.1"}, "loopback"},
		{Config{Pool: "2001:db8::1"}, "invalid IPv4 address"},
		{Config{Pool: pool, Prefix: "64:ff9b::/80"}, "/80: RFC 6052 prefixes are"},
		{Config{Pool: pool, Prefix: "64:ff9b::1/96"}, "bits set after the length (did you mean 64:ff9b::/96?)"},
		{Config{Pool: pool, Prefix: "::ffff:0:0/96"}, "IPv4-mapped"},
		{Config{Pool: pool, Prefix: "198.18.0.0/16"}, "invalid IPv6 prefix"},
		{Config{Pool: pool, PortRange: "3000-2000"}, "inverted range"},
		{Config{Pool: pool, PortRange: "0-10"}, "invalid port"},
		{Config{Pool: pool, MaxPerHost: -1}, "max_bindings_per_host: -1 out of range"},
	} {
		err := c.cfg.Validate(nil)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.cfg, err, c.want)
		}
	}
	if err := (&Config{Pool: "198.19.64.1-198.19.64.200", Prefix: "2001:db8:64::/64", PortRange: "1024-2047"}).Validate(nil); err != nil {
		t.Errorf("valid settings refused: %v", err)
	}
	raw, _ := json.Marshal(Config{Pool: pool})
	if _, err := Type.DecodeConfig(&cube.Cube{Name: "n", Type: "nat64", Config: raw}); err != nil {
		t.Errorf("decode: %v", err)
	}
}

// TestHostLimit: one host's /64 holds at most max_bindings_per_host
// bindings — another address of the same /64 counts with it, another /64
// does not — so no host takes every port of the pool; a sweep that ends
// bindings gives the room back.
func TestHostLimit(t *testing.T) {
	for _, h := range hooks {
		t.Run(string(h.hook), func(t *testing.T) {
			r := rig(t, h.hook, Config{Pool: pool, MaxPerHost: 2})
			run(t, r, h.pass, datapath.Ingress, udp6(host, server6, 5000, 53, "a"))
			run(t, r, h.pass, datapath.Ingress, udp6(host, server6, 5001, 53, "b"))
			dropped(t, r, h.drop, datapath.Ingress, udp6(host, server6, 5002, 53, "c"))
			dropped(t, r, h.drop, datapath.Ingress, udp6("2001:db8:1::99", server6, 5000, 53, "d"))
			run(t, r, h.pass, datapath.Ingress, udp6("2001:db8:2::10", server6, 5000, 53, "e"))
			// Known bindings go on.
			run(t, r, h.pass, datapath.Ingress, udp6(host, server6, 5000, 53, "again"))
			if cs := counterValues(t, r); cs["host_limit_drops"] != 2 || cs["mappings_opened"] != 3 {
				t.Fatalf("counters %v", cs)
			}
			if _, err := cube.ControllerOf[*controller](r.Handle()).sweep(r.Handle(), true); err != nil {
				t.Fatal(err)
			}
			run(t, r, h.pass, datapath.Ingress, udp6(host, server6, 5002, 53, "c"))
		})
	}
}
