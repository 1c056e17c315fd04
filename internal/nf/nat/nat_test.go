package nat

import (
	"encoding/binary"
	"encoding/json"
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/datapath"
	"github.com/edgenf/edgenf/internal/nftest"
	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
)

const (
	in1    = "198.18.1.2"
	in2    = "198.18.1.3"
	ext    = "198.19.0.10"
	server = "198.19.0.1"
)

type tables map[string][]any

func natModel(hook datapath.Hook, cfg *Config, t tables) *cube.Cube {
	c := &cube.Cube{Name: "nat", Type: "nat", Hook: hook, Tables: map[string]map[string]json.RawMessage{}}
	if cfg != nil {
		c.Config = nftest.Entry(cfg)
	}
	for name, rows := range t {
		c.Tables[name] = map[string]json.RawMessage{}
		for _, r := range rows {
			var key string
			switch r := r.(type) {
			case SNATRule:
				key = itoa(r.ID)
			case DNATRule:
				key = itoa(r.ID)
			case PortForward:
				key = itoa(r.ID)
			case NPTRule:
				key = itoa(r.ID)
			}
			c.Tables[name][key] = nftest.Entry(r)
		}
	}
	return c
}

func itoa(i int) string { return strconv.Itoa(i) }

var hooks = []struct {
	hook       datapath.Hook
	pass, drop uint32
}{
	{datapath.XDP, datapath.XDPRedirect, datapath.XDPDrop},
	{datapath.TC, datapath.TCActRedirect, datapath.TCActShot},
}

// run passes a frame through the NAT and checks it is passed with valid
// checksums; it returns the frame's fields after translation.
func run(t *testing.T, r *nftest.Rig, pass uint32, dir datapath.Direction, frame []byte) fields {
	t.Helper()
	res := r.RunTransparent(dir, frame)
	if res.Verdict != pass {
		t.Fatalf("%s %s: verdict %d, want pass (%d)", dir, parse(frame), res.Verdict, pass)
	}
	if len(res.Data) != len(frame) {
		t.Fatalf("length changed: %d -> %d", len(frame), len(res.Data))
	}
	if err := checksums(res.Data); err != nil {
		t.Fatalf("%s %s -> %s: %v", dir, parse(frame), parse(res.Data), err)
	}
	if string(res.Data[54:]) != string(frame[54:]) && len(frame) > 54 && parse(frame).Proto == 6 {
		t.Fatalf("TCP payload changed")
	}
	return parse(res.Data)
}

func want(t *testing.T, got fields, src string, sport uint16, dst string, dport uint16) {
	t.Helper()
	if got.Src != netip.MustParseAddr(src) || got.Dst != netip.MustParseAddr(dst) || got.Sport != sport || got.Dport != dport {
		t.Fatalf("got %s:%d > %s:%d, want %s:%d > %s:%d", got.Src, got.Sport, got.Dst, got.Dport, src, sport, dst, dport)
	}
}

func snatRig(t *testing.T, hook datapath.Hook) *nftest.Rig {
	return nftest.New(t, Type, natModel(hook, nil, tables{"snat": {SNATRule{ID: 1, Internal: "198.18.1.0/24", External: ext}}}))
}

// TestSNATRewritesBothWaysFirstPacket: the first packet of a UDP and a TCP
// flow is translated (source port kept when free), and replies come back to
// the inside host, with valid checksums every time.
func TestSNATRewritesBothWaysFirstPacket(t *testing.T) {
	for _, h := range hooks {
		t.Run(string(h.hook), func(t *testing.T) {
			r := snatRig(t, h.hook)
			got := run(t, r, h.pass, datapath.Egress, udp4(in1, server, 5000, 53, []byte("query")))
			want(t, got, ext, 5000, server, 53)
			got = run(t, r, h.pass, datapath.Ingress, udp4(server, ext, 53, 5000, []byte("answer")))
			want(t, got, server, 53, in1, 5000)

			// TCP: SYN, SYN-ACK, ACK, data.
			got = run(t, r, h.pass, datapath.Egress, tcp4(in1, server, 40000, 80, "S", nil))
			want(t, got, ext, 40000, server, 80)
			got = run(t, r, h.pass, datapath.Ingress, tcp4(server, ext, 80, 40000, "SA", nil))
			want(t, got, server, 80, in1, 40000)
			run(t, r, h.pass, datapath.Egress, tcp4(in1, server, 40000, 80, "A", nil))
			got = run(t, r, h.pass, datapath.Egress, tcp4(in1, server, 40000, 80, "PA", []byte("GET / HTTP/1.0\r\n\r\n")))
			want(t, got, ext, 40000, server, 80)

			ss := mustSessions(t, r)
			if len(ss) != 2 {
				t.Fatalf("sessions: %+v", ss)
			}
			for _, s := range ss {
				if s.Kind != "snat" || s.Inside == "" || !strings.HasPrefix(s.Outside, ext+":") {
					t.Errorf("session %+v", s)
				}
				if s.Proto == "tcp" && (s.State != "established" || s.Packets != 4) {
					t.Errorf("tcp session %+v, want established with 4 packets", s)
				}
				if s.Proto == "udp" && (s.State != "udp-replied" || s.Packets != 2) {
					t.Errorf("udp session %+v, want udp-replied with 2 packets", s)
				}
			}
			// An unrelated inbound packet is not translated.
			got = run(t, r, h.pass, datapath.Ingress, udp4(server, ext, 53, 5001, nil))
			want(t, got, server, 53, ext, 5001)
			// Nor is traffic no rule covers.
			got = run(t, r, h.pass, datapath.Egress, udp4("198.18.2.9", server, 7, 53, nil))
			want(t, got, "198.18.2.9", 7, server, 53)
			cs := mustCounters(t, r)
			if cs["sessions_out"] != 2 || cs["translated"] != 6 || cs["untranslated"] != 2 {
				t.Errorf("counters %v", cs)
			}
		})
	}
}

// TestSamePortTwoHosts: two inside hosts using the same source port towards
// the same server get distinct external ports; replies reach the right host.
// Likewise for ICMP echo identifiers.
func TestSamePortTwoHosts(t *testing.T) {
	for _, h := range hooks {
		t.Run(string(h.hook), func(t *testing.T) {
			r := snatRig(t, h.hook)
			a := run(t, r, h.pass, datapath.Egress, tcp4(in1, server, 33333, 80, "S", nil))
			b := run(t, r, h.pass, datapath.Egress, tcp4(in2, server, 33333, 80, "S", nil))
			if a.Src != b.Src || a.Sport == b.Sport {
				t.Fatalf("both hosts got %s:%d and %s:%d", a.Src, a.Sport, b.Src, b.Sport)
			}
			if a.Sport != 33333 {
				t.Errorf("first host's port %d, want it kept (33333)", a.Sport)
			}
			if b.Sport < 1024 {
				t.Errorf("second host's port %d outside the range", b.Sport)
			}
			got := run(t, r, h.pass, datapath.Ingress, tcp4(server, ext, 80, b.Sport, "SA", nil))
			want(t, got, server, 80, in2, 33333)
			got = run(t, r, h.pass, datapath.Ingress, tcp4(server, ext, 80, a.Sport, "SA", nil))
			want(t, got, server, 80, in1, 33333)
			// Retransmitted SYN keeps its mapping.
			again := run(t, r, h.pass, datapath.Egress, tcp4(in2, server, 33333, 80, "S", nil))
			if again != b {
				t.Fatalf("retransmission mapped to %s, first to %s", again, b)
			}

			// ICMP echo: same identifier from both hosts.
			ia := run(t, r, h.pass, datapath.Egress, icmp4(in1, server, 8, 77, 1))
			ib := run(t, r, h.pass, datapath.Egress, icmp4(in2, server, 8, 77, 1))
			if ia.Sport == ib.Sport || ia.Src.String() != ext || ib.Src.String() != ext {
				t.Fatalf("echo ids: %s and %s", ia, ib)
			}
			got = run(t, r, h.pass, datapath.Ingress, icmp4(server, ext, 0, ib.Sport, 1))
			if got.Dst.String() != in2 || got.Sport != 77 {
				t.Fatalf("echo reply went to %s", got)
			}
			got = run(t, r, h.pass, datapath.Ingress, icmp4(server, ext, 0, ia.Sport, 1))
			if got.Dst.String() != in1 || got.Sport != 77 {
				t.Fatalf("echo reply went to %s", got)
			}
		})
	}
}

func TestPortExhaustionDrops(t *testing.T) {
	r := nftest.New(t, Type, natModel(datapath.XDP, &Config{PortRange: "2000-2001"},
		tables{"snat": {SNATRule{ID: 1, Internal: "198.18.1.0/24", External: ext}}}))
	seen := map[uint16]bool{}
	for i := 0; i < 2; i++ {
		got := run(t, r, datapath.XDPRedirect, datapath.Egress, udp4("198.18.1."+itoa(10+i), server, 2000, 53, nil))
		seen[got.Sport] = true
	}
	if !seen[2000] || !seen[2001] {
		t.Fatalf("ports used: %v", seen)
	}
	if res := r.RunTransparent(datapath.Egress, udp4("198.18.1.20", server, 2000, 53, nil)); res.Verdict != datapath.XDPDrop {
		t.Fatalf("third flow: verdict %d, want drop", res.Verdict)
	}
	if cs := mustCounters(t, r); cs["no_port_drops"] != 1 {
		t.Fatalf("counters %v", cs)
	}
}

// TestPortForwardingAndDNAT: inbound flows to a forwarded port or a static
// address reach the inside server; its replies leave translated back.
func TestPortForwardingAndDNAT(t *testing.T) {
	for _, h := range hooks {
		t.Run(string(h.hook), func(t *testing.T) {
			r := nftest.New(t, Type, natModel(h.hook, nil, tables{
				"port_forwarding": {PortForward{ID: 1, Proto: "tcp", External: ext, ExternalPort: 8080, Internal: "198.18.1.5", InternalPort: 80}},
				"dnat":            {DNATRule{ID: 1, External: "198.19.0.50", Internal: "198.18.1.50"}},
			}))
			got := run(t, r, h.pass, datapath.Ingress, tcp4("198.19.0.77", ext, 50000, 8080, "S", nil))
			want(t, got, "198.19.0.77", 50000, "198.18.1.5", 80)
			got = run(t, r, h.pass, datapath.Egress, tcp4("198.18.1.5", "198.19.0.77", 80, 50000, "SA", nil))
			want(t, got, ext, 8080, "198.19.0.77", 50000)
			// Port forwarding covers only its port and protocol.
			got = run(t, r, h.pass, datapath.Ingress, udp4("198.19.0.77", ext, 50000, 8080, nil))
			want(t, got, "198.19.0.77", 50000, ext, 8080)

			// Static NAT both ways, ICMP included.
			got = run(t, r, h.pass, datapath.Ingress, icmp4("198.19.0.77", "198.19.0.50", 8, 9, 1))
			if got.Dst.String() != "198.18.1.50" || got.Sport != 9 {
				t.Fatalf("dnat echo: %s", got)
			}
			got = run(t, r, h.pass, datapath.Egress, icmp4("198.18.1.50", "198.19.0.77", 0, 9, 1))
			if got.Src.String() != "198.19.0.50" || got.Sport != 9 {
				t.Fatalf("dnat echo reply: %s", got)
			}
			got = run(t, r, h.pass, datapath.Egress, udp4("198.18.1.50", server, 6000, 53, nil))
			want(t, got, "198.19.0.50", 6000, server, 53)
			ss := mustSessions(t, r)
			kinds := map[string]int{}
			for _, s := range ss {
				kinds[s.Kind]++
			}
			if kinds["port-forward"] != 1 || kinds["dnat"] != 1 || kinds["static"] != 1 {
				t.Fatalf("sessions %+v", ss)
			}
		})
	}
}

// TestMasqueradeFollowsPointAddress: masquerade uses the attachment point's
// address, learned on sync and followed on tick; port forwarding without an
// external address uses it too.
func TestMasqueradeFollowsPointAddress(t *testing.T) {
	for _, h := range hooks {
		t.Run(string(h.hook), func(t *testing.T) {
			m := natModel(h.hook, &Config{Masquerade: true}, tables{
				"port_forwarding": {PortForward{ID: 2, Proto: "udp", ExternalPort: 5353, Internal: "198.18.1.9"}}})
			r := nftest.New(t, Type, m)
			// No address known yet: nothing can be translated, and
			// nothing leaves with an inside source.
			if res := r.RunTransparent(datapath.Egress, udp4(in1, server, 1111, 53, nil)); res.Verdict != h.drop {
				t.Fatalf("inside traffic before the address is known: verdict %d, want drop", res.Verdict)
			}
			if n := counter(t, r, "untranslatable_drops"); n != 1 {
				t.Fatalf("untranslatable_drops %d, want 1", n)
			}

			r.Point, r.PointAddrs = "r1:wan", []netip.Prefix{netip.MustParsePrefix("2001:db8::1/64"), netip.MustParsePrefix("198.19.0.254/24")}
			if err := r.Ctl.Sync(r.Handle(), m); err != nil {
				t.Fatal(err)
			}
			got := run(t, r, h.pass, datapath.Egress, udp4(in1, server, 1112, 53, nil))
			want(t, got, "198.19.0.254", 1112, server, 53)
			// the point's own traffic leaves as it is
			got = run(t, r, h.pass, datapath.Egress, udp4("198.19.0.254", server, 1114, 53, nil))
			want(t, got, "198.19.0.254", 1114, server, 53)
			got = run(t, r, h.pass, datapath.Ingress, udp4(server, "198.19.0.254", 7, 5353, nil))
			want(t, got, server, 7, "198.18.1.9", 5353)

			r.PointAddrs = []netip.Prefix{netip.MustParsePrefix("198.19.0.253/24")}
			r.Ctl.(*controller).Tick(r.Handle(), m, time.Now())
			got = run(t, r, h.pass, datapath.Egress, udp4(in1, server, 1113, 53, nil))
			want(t, got, "198.19.0.253", 1113, server, 53)
			st, err := Type.Views[1].List(r.Handle(), m)
			if err != nil {
				t.Fatal(err)
			}
			if s := st.(Status); s.MasqueradeAddress != "198.19.0.253" || s.AttachedTo != "r1:wan" {
				t.Fatalf("status %+v", s)
			}
		})
	}
}

// TestSessionTimeoutAndFlush: an idle session expires after its state's
// timeout (the next packet opens a fresh one) and flush empties the table.
func TestSessionTimeoutAndFlush(t *testing.T) {
	m := natModel(datapath.XDP, &Config{Timeouts: nil}, tables{"snat": {SNATRule{ID: 1, Internal: "198.18.1.0/24", External: ext}}})
	r := nftest.New(t, Type, m)
	run(t, r, datapath.XDPRedirect, datapath.Egress, udp4(in1, server, 5000, 53, nil))
	ss := mustSessions(t, r)
	if len(ss) != 1 || ss[0].Expired || ss[0].State != "udp-unreplied" {
		t.Fatalf("sessions %+v", ss)
	}
	// Age it artificially: set last_seen 31 s back (udp-unreplied: 30 s).
	sm, _ := r.Prog.Map("nat_sess")
	var k [16]byte
	var s sess
	it := sm.Iterate()
	var keys [][16]byte
	for it.Next(&k, &s) {
		keys = append(keys, k)
	}
	for _, k := range keys {
		sm.Lookup(k, &s)
		s.Conn.LastSeen -= 31e9
		sm.Put(k, s)
	}
	if ss := mustSessions(t, r); !ss[0].Expired {
		t.Fatalf("not expired: %+v", ss)
	}
	n, err := r.Ctl.(*controller).age(r.Handle(), false)
	if err != nil || n != 1 {
		t.Fatalf("aged %d, %v", n, err)
	}
	if ss := mustSessions(t, r); len(ss) != 0 {
		t.Fatalf("after aging: %+v", ss)
	}
	run(t, r, datapath.XDPRedirect, datapath.Egress, udp4(in1, server, 5000, 53, nil))
	res, err := Type.Actions[0].Do(r.Handle(), m, nil)
	if err != nil || res.(map[string]int)["flushed"] != 1 {
		t.Fatalf("flush: %v %v", res, err)
	}
	if ss := mustSessions(t, r); len(ss) != 0 {
		t.Fatalf("after flush: %+v", ss)
	}
}

func TestNATValidation(t *testing.T) {
	cases := []struct {
		cfg  *Config
		t    tables
		want string
	}{
		{nil, tables{"snat": {SNATRule{ID: 1, Internal: "198.18.1.0/24"}}}, "external: required"},
		{nil, tables{"snat": {SNATRule{ID: 1, Internal: "198.18.1.0/33", External: ext}}}, "internal: invalid prefix"},
		{nil, tables{"snat": {SNATRule{ID: 1, Internal: "198.18.1.1/24", External: ext}}}, "host bits set"},
		{nil, tables{"snat": {SNATRule{ID: 1, Internal: "2001:db8::/64", External: ext}}}, "not IPv4"},
		{nil, tables{"snat": {SNATRule{ID: 1, Internal: "198.18.1.0/24", External: "198.19.0.9-198.19.0.1"}}}, "inverted pool"},
		{nil, tables{"snat": {SNATRule{ID: 0, Internal: "198.18.1.0/24", External: ext}}}, "id: rule id 0 out of range"},
		{nil, tables{"dnat": {DNATRule{ID: 1, External: ext}}}, "internal: required"},
		{nil, tables{"port_forwarding": {PortForward{ID: 1, Proto: "sctp", ExternalPort: 1, Internal: in1}}}, "proto: unknown protocol"},
		{nil, tables{"port_forwarding": {PortForward{ID: 1, Proto: "tcp", ExternalPort: 70000, Internal: in1}}}, "external_port: port 70000"},
		{&Config{PortRange: "5000-4000"}, nil, "port_range: inverted range"},
		{&Config{Timeouts: nil, PortRange: "x"}, nil, "port_range: invalid port"},
	}
	for _, c := range cases {
		topo := cube.NewTopology()
		topo.Put(natModel(datapath.XDP, c.cfg, c.t))
		err := topo.Validate(nil)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v %+v: error %v, want %q", c.cfg, c.t, err, c.want)
		}
	}
}

// TestDuplicateRulesRejectedStateUnchanged: a rule set with two rules for one
// prefix is refused by Sync, and the maps keep the previous rules.
func TestDuplicateRulesRejectedStateUnchanged(t *testing.T) {
	r := snatRig(t, datapath.XDP)
	bad := natModel(datapath.XDP, nil, tables{"snat": {
		SNATRule{ID: 1, Internal: "198.18.1.0/24", External: "198.19.0.11"},
		SNATRule{ID: 2, Internal: "198.18.1.0/24", External: "198.19.0.12"}}})
	err := r.Update(bad)
	if err == nil || !strings.Contains(err.Error(), "tables.snat[2].internal") {
		t.Fatalf("error %v", err)
	}
	got := run(t, r, datapath.XDPRedirect, datapath.Egress, udp4(in1, server, 5000, 53, nil))
	want(t, got, ext, 5000, server, 53)
}

func mustSessions(t *testing.T, r *nftest.Rig) []Session {
	t.Helper()
	ss, err := sessions(r.Handle())
	if err != nil {
		t.Fatal(err)
	}
	return ss
}

func mustCounters(t testing.TB, r *nftest.Rig) map[string]uint64 {
	t.Helper()
	cs, err := natCounters.Values(r.Handle())
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// icmpErr4 builds an ICMP error (type/code) from src to dst quoting the IPv4
// packet of frame (its header and the first quote bytes after it).
func icmpErr4(src, dst string, typ, code uint8, frame []byte, quote int) []byte {
	inner := frame[14 : 14+20+quote]
	icmp := &layers.ICMPv4{TypeCode: layers.CreateICMPv4TypeCode(typ, code)}
	return nftest.Serialize(eth4(), ip4(src, dst, layers.IPProtocolICMPv4), icmp, gopacket.Payload(inner))
}

// quoted returns the fields and the L4 checksum of the packet an ICMP error
// quotes, and checks the quoted IPv4 header checksum.
func quoted(t *testing.T, b []byte) (fields, uint16) {
	t.Helper()
	q := b[14+20+8:]
	if fold(sum16(q[:20], 0)) != 0xffff {
		t.Fatalf("quoted IPv4 header checksum is wrong")
	}
	f := parse(append(make([]byte, 14), q...))
	var cs uint16
	switch f.Proto {
	case 17:
		cs = binary.BigEndian.Uint16(q[20+6:])
	case 6:
		cs = binary.BigEndian.Uint16(q[20+16:])
	}
	return f, cs
}

// TestICMPErrorsTranslated: errors about translated flows are translated
// back — outer address, quoted address and port, and the outer, ICMP,
// quoted IPv4 and quoted L4 checksums — in both directions.
func TestICMPErrorsTranslated(t *testing.T) {
	for _, h := range hooks {
		t.Run(string(h.hook), func(t *testing.T) {
			r := nftest.New(t, Type, natModel(h.hook, nil, tables{
				"snat":            {SNATRule{ID: 1, Internal: "198.18.1.0/24", External: ext}},
				"port_forwarding": {PortForward{ID: 1, Proto: "udp", External: ext, ExternalPort: 5353, Internal: "198.18.1.9"}},
			}))
			run(t, r, h.pass, datapath.Egress, udp4(in1, server, 5000, 53, []byte("q1")))
			orig := udp4(in2, server, 5000, 53, []byte("q2"))
			res := r.RunTransparent(datapath.Egress, orig)
			out := parse(res.Data)
			if out.Sport == 5000 {
				t.Fatal("second host kept port 5000")
			}
			// Port unreachable from the server, and time exceeded from a
			// router on the way, about the translated datagram.
			for _, from := range []string{server, "198.19.0.99"} {
				e := icmpErr4(from, ext, 3, 3, res.Data, 8)
				got := run(t, r, h.pass, datapath.Ingress, e)
				if got.Dst.String() != in2 || got.Src.String() != from {
					t.Fatalf("error delivered as %s", got)
				}
				q, cs := quoted(t, runData(t, r, datapath.Ingress, e))
				want(t, q, in2, 5000, server, 53)
				if cs != binary.BigEndian.Uint16(orig[14+20+6:]) {
					t.Fatalf("quoted UDP checksum %#x, want the original %#x", cs, binary.BigEndian.Uint16(orig[14+20+6:]))
				}
			}
			// Fragmentation needed about a TCP segment, full header quoted.
			syn := tcp4(in2, server, 40000, 80, "S", nil)
			run(t, r, h.pass, datapath.Egress, tcp4(in1, server, 40000, 80, "S", nil))
			tres := r.RunTransparent(datapath.Egress, syn)
			q, cs := quoted(t, runData(t, r, datapath.Ingress, icmpErr4("198.19.0.99", ext, 3, 4, tres.Data, 20)))
			want(t, q, in2, 40000, server, 80)
			if cs != binary.BigEndian.Uint16(syn[14+20+16:]) {
				t.Fatalf("quoted TCP checksum %#x, want %#x", cs, binary.BigEndian.Uint16(syn[14+20+16:]))
			}
			// Outbound: the forwarded server says port unreachable.
			in := udp4("198.19.0.77", ext, 7, 5353, []byte("x"))
			fwd := r.RunTransparent(datapath.Ingress, in)
			e := icmpErr4("198.18.1.9", "198.19.0.77", 3, 3, fwd.Data, 8)
			got := run(t, r, h.pass, datapath.Egress, e)
			if got.Src.String() != ext || got.Dst.String() != "198.19.0.77" {
				t.Fatalf("outbound error as %s", got)
			}
			q, cs = quoted(t, runData(t, r, datapath.Egress, e))
			want(t, q, "198.19.0.77", 7, ext, 5353)
			if cs != binary.BigEndian.Uint16(in[14+20+6:]) {
				t.Fatalf("quoted checksum %#x, want %#x", cs, binary.BigEndian.Uint16(in[14+20+6:]))
			}
		})
	}
}

func runData(t *testing.T, r *nftest.Rig, dir datapath.Direction, frame []byte) []byte {
	t.Helper()
	return r.RunTransparent(dir, frame).Data
}

// counter reads one of the NAT's counters by name.
func counter(t *testing.T, r *nftest.Rig, name string) uint64 {
	t.Helper()
	v, ok := mustCounters(t, r)[name]
	if !ok {
		t.Fatalf("no counter %q", name)
	}
	return v
}
