package stf

import (
	"net"
	"testing"

	"github.com/edgenf/edgenf/internal/p4"
	"github.com/edgenf/edgenf/internal/p4/p4info"
	"github.com/edgenf/edgenf/internal/p4/tableruntime"
)

const vsProgram = `
#include <core.p4>
#include <v1model.p4>
header eth_t { bit<48> d; bit<48> s; bit<16> t; }
header x_t { bit<8> v; }
struct H { eth_t eth; x_t x; }
struct M { }
parser P(packet_in p, out H h, inout M m, inout standard_metadata_t sm) {
    value_set<bit<16>>(4) special;
    state start {
        p.extract(h.eth);
        transition select(h.eth.t) {
            special: parse_x;
            default: accept;
        }
    }
    state parse_x { p.extract(h.x); transition accept; }
}
control V(inout H h, inout M m) { apply { } }
control I(inout H h, inout M m, inout standard_metadata_t sm) {
    apply {
        if (h.x.isValid()) { sm.egress_spec = (bit<9>)h.x.v; } else { sm.egress_spec = 1; }
    }
}
control E(inout H h, inout M m, inout standard_metadata_t sm) { apply { } }
control C(inout H h, inout M m) { apply { } }
control D(packet_out p, in H h) { apply { p.emit(h); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
`

func TestValueSet(t *testing.T) {
	res := compile(t, p4.Options{Path: "vs.p4", Source: []byte(vsProgram)})
	if len(res.Info.ValueSets) != 1 || res.Info.ValueSets[0].Preamble.ID>>24 != 0x03 {
		t.Fatalf("value set model: %+v", res.Info.ValueSets)
	}
	r, err := Load(res.Object, res.Info)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	pkt := func(et uint16) []byte {
		b := make([]byte, 20)
		b[12], b[13], b[14] = byte(et>>8), byte(et), 5
		return b
	}
	send := func(et uint16) int {
		o, err := r.Send(0, pkt(et))
		if err != nil || o == nil {
			t.Fatalf("send: %v %v", o, err)
		}
		return o.Port
	}
	if p := send(0x88b5); p != 1 {
		t.Errorf("empty value set matched: port %d", p)
	}
	if err := r.RT.SetValueSet("special", []tableruntime.ValueSetMember{{Value: "0x88b5"}, {Value: "0x9000", Mask: "0xff00"}}); err != nil {
		t.Fatal(err)
	}
	if p := send(0x88b5); p != 5 {
		t.Errorf("0x88b5: port %d, want 5", p)
	}
	if p := send(0x90aa); p != 5 {
		t.Errorf("0x90aa (masked member): port %d, want 5", p)
	}
	if p := send(0x0800); p != 1 {
		t.Errorf("0x0800: port %d, want 1", p)
	}
}

func TestDirectCounterAndDelete(t *testing.T) {
	res := compileFile(t, "../../../examples/p4/l2switch.p4")
	r := load(t, res, "xdp")
	m := []p4info.Match{{Field: "vid", Value: "0"}, {Field: "dst", Value: "00:00:00:00:00:02"}}
	if err := r.RT.AddEntry("mac_table", m, "forward", []p4info.Arg{{Name: "port", Value: "2"}}, 0); err != nil {
		t.Fatal(err)
	}
	pkt := []byte{0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 1, 0x08, 0x00, 0x45, 0, 0, 0x14}
	for i := 0; i < 2; i++ {
		o, err := r.Send(1, pkt)
		if err != nil || o == nil || o.Port != 2 {
			t.Fatalf("send: %+v %v", o, err)
		}
	}
	ents, err := r.RT.Entries("mac_table")
	if err != nil || len(ents) != 1 || ents[0].Packets != 2 || len(ents[0].Matches) != 2 {
		t.Errorf("entries: %+v %v", ents, err)
	}
	pk, by, err := r.RT.DirectCounter("SwIngress.mac_table", m, 0)
	if err != nil || pk != 2 || by != 2*uint64(len(pkt)) {
		t.Errorf("direct counter: %d packets %d bytes %v", pk, by, err)
	}
	if err := r.RT.SetDefault("mac_table", "forward", []p4info.Arg{{Name: "port", Value: "3"}}); err == nil {
		t.Error("const default action changed")
	}
	if err := r.RT.DeleteEntry("mac_table", m, 0); err != nil {
		t.Fatal(err)
	}
	if o, err := r.Send(1, pkt); err != nil || o != nil {
		t.Errorf("after delete: %+v %v", o, err)
	}
}

func TestScanTableDelete(t *testing.T) {
	res := compileFile(t, "../../../examples/p4/acl.p4")
	r := load(t, res, "xdp")
	m := []p4info.Match{{Field: "hdr.ipv4.protocol", Value: "17"}}
	if err := r.RT.AddEntry("acl", m, "deny", nil, 5); err != nil {
		t.Fatal(err)
	}
	// same match and priority again: replaces, does not take a second slot
	if err := r.RT.AddEntry("acl", m, "deny", nil, 5); err != nil {
		t.Fatal(err)
	}
	udp := []byte{0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 1, 0x08, 0x00,
		0x45, 0, 0, 28, 0, 0, 0, 0, 64, 17, 0, 0, 198, 18, 0, 1, 198, 19, 0, 1,
		0x04, 0xd2, 0, 53, 0, 8, 0, 0}
	if o, err := r.Send(0, udp); err != nil || o != nil {
		t.Fatalf("denied UDP went out: %+v %v", o, err)
	}
	if ents, err := r.RT.Entries("acl"); err != nil || len(ents) != 1 || ents[0].Priority != 5 {
		t.Errorf("entries: %+v %v", ents, err)
	}
	if err := r.RT.DeleteEntry("acl", m, 5); err != nil {
		t.Fatal(err)
	}
	if o, err := r.Send(0, udp); err != nil || o == nil || o.Port != 1 {
		t.Fatalf("after delete: %+v %v", o, err)
	}
	// default action: change it, then restore the compiled one
	if err := r.RT.SetDefault("acl", "deny", nil); err != nil {
		t.Fatal(err)
	}
	if o, err := r.Send(0, udp); err != nil || o != nil {
		t.Fatalf("default deny: %+v %v", o, err)
	}
	if err := r.RT.ResetDefault("acl"); err != nil {
		t.Fatal(err)
	}
	if o, err := r.Send(0, udp); err != nil || o == nil {
		t.Fatalf("compiled default allow: %+v %v", o, err)
	}
	if err := r.RT.DeleteEntry("acl", m, 5); err == nil {
		t.Error("second delete succeeded")
	}
}

// TestKitchenSinkLoads compiles and loads (both hooks) a program using many
// expression and statement forms, and pushes a packet through it.
func TestKitchenSinkLoads(t *testing.T) {
	res := compileFile(t, "../testdata/kitchen.p4")
	for _, hook := range []string{"xdp", "tc"} {
		r := load(t, res, hook)
		pkt := make([]byte, 14+16+8+2+1+10)
		pkt[12], pkt[13] = 0x88, 0xb6
		if _, err := r.Send(0, pkt); err != nil {
			t.Errorf("%s: %v", hook, err)
		}
	}
}

// BenchmarkL3Router measures the per-packet cost of a routed packet
// (BPF_PROG_TEST_RUN with Repeat).
func BenchmarkL3Router(b *testing.B) {
	res := compileFile(b, "../../../examples/p4/l3router.p4")
	r := load(b, res, "xdp")
	if err := r.RT.AddEntry("ipv4_lpm", []p4info.Match{{Field: "hdr.ipv4.dstAddr", Value: "198.18.0.0/16"}}, "ipv4_forward",
		[]p4info.Arg{{Name: "dstAddr", Value: "0xa1"}, {Name: "port", Value: "1"}}, 0); err != nil {
		b.Fatal(err)
	}
	pkt := []byte{0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 2, 0x08, 0x00,
		0x45, 0x00, 0x00, 0x1c, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11, 0xad, 0xa9, 0xc6, 0x13, 0x00, 0x01, 0xc6, 0x12, 0x01, 0x01,
		0x04, 0xd2, 0x16, 0x2e, 0x00, 0x08, 0x00, 0x00}
	if o, err := r.Send(0, pkt); err != nil || o == nil || o.Port != 1 {
		b.Fatalf("not routed: %+v %v", o, err)
	}
	b.ResetTimer()
	_, d, err := r.Prog.Benchmark(pkt, b.N, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(d.Nanoseconds()), "ns/packet")
}

// BenchmarkPortfwd measures the fixed per-packet cost of the generated code
// (parse one header, one exact lookup, one counter, deparse).
func BenchmarkPortfwd(b *testing.B) {
	res := compileFile(b, "../../../examples/p4/portfwd.p4")
	r := load(b, res, "xdp")
	if err := r.RT.AddEntry("fwd", []p4info.Match{{Field: "standard_metadata.ingress_port", Value: "0"}}, "forward", []p4info.Arg{{Name: "port", Value: "1"}}, 0); err != nil {
		b.Fatal(err)
	}
	pkt := make([]byte, 64)
	if o, err := r.Send(0, pkt); err != nil || o == nil || o.Port != 1 {
		b.Fatalf("not forwarded: %+v %v", o, err)
	}
	b.ResetTimer()
	_, d, err := r.Prog.Benchmark(pkt, b.N, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(d.Nanoseconds()), "ns/packet")
}

const vrfProgram = `
#include <core.p4>
#include <v1model.p4>
header eth_t { bit<48> d; bit<48> s; bit<16> t; }
header ip6_t { bit<32> w; bit<16> len; bit<8> nh; bit<8> hl; bit<128> src; bit<128> dst; }
struct H { eth_t eth; ip6_t ip6; }
struct M { bit<8> vrf; }
parser P(packet_in p, out H h, inout M m, inout standard_metadata_t sm) {
    state start { p.extract(h.eth); p.extract(h.ip6); transition accept; }
}
control V(inout H h, inout M m) { apply { } }
control I(inout H h, inout M m, inout standard_metadata_t sm) {
    action vrf(bit<8> v) { m.vrf = v; }
    action fwd(bit<9> port) { sm.egress_spec = port; }
    action drop() { mark_to_drop(sm); }
    table classify { key = { h.ip6.src : ternary; } actions = { vrf; NoAction; } default_action = NoAction(); size = 16; }
    table route { key = { h.ip6.dst : lpm; m.vrf : exact; } actions = { fwd; drop; } default_action = drop(); }
    apply { classify.apply(); route.apply(); }
}
control E(inout H h, inout M m, inout standard_metadata_t sm) { apply { } }
control C(inout H h, inout M m) { apply { } }
control D(packet_out p, in H h) { apply { p.emit(h); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
`

// TestLPMWithExactAndWideTernary: an LPM trie keyed by an exact field plus
// an IPv6 prefix, fed by a ternary match on an IPv6 source.
func TestLPMWithExactAndWideTernary(t *testing.T) {
	res := compile(t, p4.Options{Path: "vrf.p4", Source: []byte(vrfProgram)})
	r := load(t, res, "xdp")
	add := func(table string, m []p4info.Match, action string, args []p4info.Arg, prio uint32) {
		t.Helper()
		if err := r.RT.AddEntry(table, m, action, args, prio); err != nil {
			t.Fatal(err)
		}
	}
	add("classify", []p4info.Match{{Field: "h.ip6.src", Value: "2001:db8:1::&&&ffff:ffff:ffff::"}}, "vrf", []p4info.Arg{{Name: "v", Value: "1"}}, 10)
	add("route", []p4info.Match{{Field: "h.ip6.dst", Value: "2001:db8::/32"}, {Field: "m.vrf", Value: "0"}}, "fwd", []p4info.Arg{{Name: "port", Value: "1"}}, 0)
	add("route", []p4info.Match{{Field: "h.ip6.dst", Value: "2001:db8::/32"}, {Field: "m.vrf", Value: "1"}}, "fwd", []p4info.Arg{{Name: "port", Value: "2"}}, 0)
	add("route", []p4info.Match{{Field: "h.ip6.dst", Value: "2001:db8:ff::/48"}, {Field: "m.vrf", Value: "1"}}, "fwd", []p4info.Arg{{Name: "port", Value: "3"}}, 0)
	pkt := func(src, dst string) []byte {
		b := make([]byte, 14+40)
		b[12], b[13] = 0x86, 0xdd
		copy(b[14+8:], net.ParseIP(src).To16())
		copy(b[14+24:], net.ParseIP(dst).To16())
		return b
	}
	for _, c := range []struct {
		src, dst string
		port     int
	}{
		{"2001:db8:2::1", "2001:db8:5::1", 1},  // vrf 0
		{"2001:db8:1::1", "2001:db8:5::1", 2},  // vrf 1 by the ternary match
		{"2001:db8:1::1", "2001:db8:ff::1", 3}, // vrf 1, longer prefix
		{"2001:db8:2::1", "2001:db8:ff::1", 1}, // vrf 0 has no /48
		{"2001:db8:1::1", "2001:db9::1", -1},   // no route
	} {
		o, err := r.Send(0, pkt(c.src, c.dst))
		if err != nil {
			t.Fatal(err)
		}
		got := -1
		if o != nil {
			got = o.Port
		}
		if got != c.port {
			t.Errorf("%s -> %s: port %d, want %d", c.src, c.dst, got, c.port)
		}
	}
}
