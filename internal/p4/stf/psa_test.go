package stf

import (
	"context"
	"strings"
	"testing"

	"github.com/edgenf/edgenf/internal/p4"
	"github.com/edgenf/edgenf/internal/p4/ir"
	"github.com/edgenf/edgenf/internal/p4/p4info"
)

// A PSA Digest sends its data to the slow path, named after the instance
// in P4Info, at both hooks.
func TestPSADigest(t *testing.T) {
	res := compile(t, p4.Options{Path: "digest.p4", Source: []byte(psaProg(`
struct learn_t { bit<48> mac; PortId_t port; }`, `
	apply {
		send_to_port(ostd, (PortId_t)1);
		m.learn = h.eth.t == 0x0800;
	}`, `
	Digest<learn_t>() mac_learn;
	apply {
		if (m.learn) { mac_learn.pack({ h.eth.s, (PortId_t)7 }); }
		p.emit(h.eth);
	}`))})
	if len(res.Info.Digests) != 1 || res.Info.Digests[0].Preamble.Name != "D.mac_learn" || res.Info.Digests[0].Preamble.ID>>24 != ir.PrefixDigest {
		t.Fatalf("P4Info digests: %+v", res.Info.Digests)
	}
	sp := res.Info.Edgenf.SlowPath
	frame := func(et uint16) []byte {
		b := []byte{2, 0, 0, 0, 0, 0xb, 2, 0, 0, 0, 0, 0xa, byte(et >> 8), byte(et)}
		return append(b, make([]byte, 46)...)
	}
	for _, hook := range []string{"xdp", "tc"} {
		t.Run(hook, func(t *testing.T) {
			r := load(t, res, hook)
			read := spReader(t, r)
			out, err := r.Send(2, frame(0x0800))
			if err != nil || out == nil || out.Port != 1 {
				t.Fatalf("forward: %+v %v", out, err)
			}
			recs := read()
			if len(recs) != 1 || recs[0].reason != ir.PuntDigest {
				t.Fatalf("slow path: %+v", recs)
			}
			fv, err := sp.DigestAt(recs[0].arg).Decode(recs[0].data)
			if err != nil || fv[0].Value != "02:00:00:00:00:0a" || fv[1].Value != "7" {
				t.Fatalf("digest: %+v %v", fv, err)
			}
			// no digest when the program does not pack one
			if _, err := r.Send(2, frame(0x86dd)); err != nil {
				t.Fatal(err)
			}
			if recs := read(); len(recs) != 0 {
				t.Fatalf("unexpected slow path messages: %+v", recs)
			}
		})
	}
}

// psaProg is a PSA program with ingress body ig (and decls before it)
// and ingress deparser body dep; the egress pipeline passes the packet.
func psaProg(decls, ig, dep string) string {
	return `#include <core.p4>
#include <psa.p4>
header eth_t { bit<48> d; bit<48> s; bit<16> t; }
struct H { eth_t eth; }
struct M { bool learn; }
struct E { }
` + decls + `
parser P(packet_in p, out H h, inout M m, in psa_ingress_parser_input_metadata_t istd, in E r1, in E r2) {
	state start { p.extract(h.eth); transition accept; }
}
control I(inout H h, inout M m, in psa_ingress_input_metadata_t istd, inout psa_ingress_output_metadata_t ostd) {` + ig + `
}
control D(packet_out p, out E c, out E r, out E n, inout H h, in M m, in psa_ingress_output_metadata_t istd) {` + dep + `
}
parser EP(packet_in p, out H h, inout M m, in psa_egress_parser_input_metadata_t istd, in E n, in E c1, in E c2) {
	state start { transition accept; }
}
control EC(inout H h, inout M m, in psa_egress_input_metadata_t istd, inout psa_egress_output_metadata_t ostd) { apply { } }
control ED(packet_out p, out E c, out E r, inout H h, in M m, in psa_egress_output_metadata_t istd, in psa_egress_deparser_input_metadata_t e) { apply { } }
IngressPipeline(P(), I(), D()) ip;
EgressPipeline(EP(), EC(), ED()) ep;
PSA_Switch(ip, PacketReplicationEngine(), ep, BufferingQueueingEngine()) main;
`
}

// What edgenf's PSA pipeline does not do is refused where the program asks
// for it, never compiled into a program that loses packets.
func TestPSARefused(t *testing.T) {
	emit := `apply { p.emit(h.eth); }`
	cases := []struct{ decls, ig, dep, want string }{
		{``, `apply { ostd.clone = true; ostd.clone_session_id = PSA_CLONE_SESSION_TO_CPU; }`, emit, "bad.p4:11:165: error: unsupported: PSA_CLONE_SESSION_TO_CPU: clone session 0 is no session in edgenf"},
		{``, `Checksum<bit<16>>(PSA_HashAlgorithm_t.IDENTITY) c; apply { c.update(h.eth.t); }`, emit, "bad.p4:11:114: error: unsupported: Checksum c with PSA_HashAlgorithm_t.IDENTITY (edgenf's Checksum takes CRC16, CRC32"},
		{``, `Checksum<bit<16>>(PSA_HashAlgorithm_t.ONES_COMPLEMENT16) c; apply { h.eth.t = c.get(); }`, emit, "for ONES_COMPLEMENT16 use InternetChecksum"},
		{``, `action a() { } ActionProfile(4) ap; table t { key = { h.eth.t : exact; } actions = { a; } psa_implementation = ap; psa_empty_group_action = a; } apply { t.apply(); }`, emit,
			"psa_empty_group_action: table t is not implemented by an ActionSelector"},
		{``, `action a() { } action b() { } ActionSelector(PSA_HashAlgorithm_t.CRC16, 4, 16) as; table t { key = { h.eth.t : exact; h.eth.s : selector; } actions = { a; } psa_implementation = as; psa_empty_group_action = b; } apply { t.apply(); }`, emit,
			"psa_empty_group_action b is not in the table's actions list"},
		{``, `Hash<bit<16>>(PSA_HashAlgorithm_t.CRC16_CUSTOM) hh; apply { h.eth.t = hh.get_hash({h.eth.s}); }`, emit, "hash algorithm crc16_custom"},
	}
	for _, c := range cases {
		_, err := p4.Compile(context.Background(), p4.Options{Path: "bad.p4", Source: []byte(psaProg(c.decls, c.ig, c.dep)), NoObject: true})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.ig, err, c.want)
		}
	}
	// a sub-deparser may only emit
	src := strings.Replace(psaProg(``, `apply { }`, `X() x; apply { x.apply(p, h); }`), "control D(", "control X(packet_out q, inout H h) { apply { h.eth.t = 1; q.emit(h.eth); } }\ncontrol D(", 1)
	_, err := p4.Compile(context.Background(), p4.Options{Path: "bad.p4", Source: []byte(src), NoObject: true})
	if err == nil || !strings.Contains(err.Error(), "a statement other than emit in a sub-control taking packet_out (X)") {
		t.Errorf("sub-deparser that assigns: %v", err)
	}
	// a PSA program compiled for v1model and the other way round
	_, err = p4.Compile(context.Background(), p4.Options{Path: "bad.p4", Source: []byte(psaProg(``, `apply { }`, emit)), Arch: "v1model", NoObject: true})
	if err == nil || !strings.Contains(err.Error(), "PSA_Switch is a psa program; it was compiled for v1model") {
		t.Errorf("--arch v1model: %v", err)
	}
}

// A PSA DirectCounter counts once per count() call of its table's action
// on a hit, not on every hit (v1model's direct_counter does), and nothing
// on a miss, whose default action has no entry (psa_direct.p4), at both
// hooks.
func TestPSADirectCountsAtCalls(t *testing.T) {
	res := compileFile(t, "../testdata/psa_direct.p4")
	frame := func(src, op byte) []byte {
		return []byte{0, 0, 0, 0, 0, 9, 0, 0, 0, 0, 0, src, 0x88, 0xb5, op, 99}
	}
	for _, hook := range []string{"xdp", "tc"} {
		t.Run(hook, func(t *testing.T) {
			r := load(t, res, hook)
			for _, src := range []string{"0x000000000001", "0x000000000002"} {
				if err := r.RT.AddEntry("Ig.tc", []p4info.Match{{Field: "hdr.eth.src", Value: src}}, "Ig.maybe_count", nil, 0); err != nil {
					t.Fatal(err)
				}
			}
			// source 1: 2 hits without count(), 3 with one, 1 with two;
			// source 2: hits without count() only; source 3: misses
			// whose default action calls count()
			for _, p := range []struct{ src, op byte }{{1, 0}, {1, 3}, {1, 0}, {1, 3}, {1, 4}, {1, 3}, {2, 0}, {2, 0}, {3, 3}, {3, 4}} {
				if o, err := r.Send(0, frame(p.src, p.op)); err != nil || o == nil || o.Port != 1 {
					t.Fatalf("src %d op %d: %+v %v", p.src, p.op, o, err)
				}
			}
			for _, c := range []struct {
				src            string
				packets, bytes uint64
			}{{"0x000000000001", 5, 5 * 16}, {"0x000000000002", 0, 0}} {
				pk, by, err := r.RT.DirectCounter("Ig.tc", []p4info.Match{{Field: "hdr.eth.src", Value: c.src}}, 0)
				if err != nil || pk != c.packets || by != c.bytes {
					t.Errorf("entry src %s: %d packets, %d bytes (%v), want %d and %d", c.src, pk, by, err, c.packets, c.bytes)
				}
			}
		})
	}
}
