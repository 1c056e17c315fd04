package p4path

import (
	"strings"
	"testing"

	"github.com/edgenf/edgenf/internal/p4"
)

// psaProgram is a PSA program: Ethernet and IPv4 parsed by ingress, the
// given ingress declarations and body, and an egress parser, control body
// and deparser body ("" for each: an empty egress pipeline).
func psaProgram(t *testing.T, decls, body, egParser, egBody, egDeparser string) *Program {
	t.Helper()
	if egParser == "" {
		egParser = "state start { transition accept; }"
	}
	src := `#include <core.p4>
#include <psa.p4>
header eth_t { bit<48> dst; bit<48> src; bit<16> type; }
header ipv4_t { bit<8> vihl; bit<8> tos; bit<16> len; bit<32> idf; bit<8> ttl; bit<8> proto; bit<16> csum; bit<32> src; bit<32> dst; }
struct H { eth_t eth; ipv4_t ip; }
struct M { bit<16> h; }
struct E { }
parser IP(packet_in p, out H h, inout M m, in psa_ingress_parser_input_metadata_t i, in E r, in E c) {
    state start { p.extract(h.eth); transition select(h.eth.type) { 0x800: ip; default: accept; } }
    state ip { p.extract(h.ip); transition accept; }
}
control I(inout H h, inout M m, in psa_ingress_input_metadata_t i, inout psa_ingress_output_metadata_t o) {
    action fwd(PortId_t port) { send_to_port(o, port); }
    action drop() { ingress_drop(o); }
` + decls + `
    apply {
` + body + `
    }
}
control ID(packet_out p, out E c, out E r, out E n, inout H h, in M m, in psa_ingress_output_metadata_t o) {
    apply { p.emit(h); }
}
parser EP(packet_in p, out H h, inout M m, in psa_egress_parser_input_metadata_t i, in E n, in E c, in E c2) {
    ` + egParser + `
}
control EG(inout H h, inout M m, in psa_egress_input_metadata_t i, inout psa_egress_output_metadata_t o) { apply { ` + egBody + ` } }
control ED(packet_out p, out E c, out E r, inout H h, in M m, in psa_egress_output_metadata_t o, in psa_egress_deparser_input_metadata_t d) {
    apply { ` + egDeparser + ` }
}
IngressPipeline(IP(), I(), ID()) ip;
EgressPipeline(EP(), EG(), ED()) ep;
PSA_Switch(ip, PacketReplicationEngine(), ep, BufferingQueueingEngine()) main;
`
	prog, err := Check(p4.Options{Path: "psa.p4", Source: []byte(src)})
	if err != nil {
		t.Fatal(err)
	}
	pr, err := Enumerate(prog, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return pr
}

const psaRoutes = `table routes { key = { h.ip.dst: lpm; } actions = { fwd; drop; NoAction; } default_action = NoAction(); }`

// PSA drops unless ingress sends: a table miss to NoAction drops, as does
// ingress_drop; send_to_port sends, to PSA_PORT_CPU punts.
func TestPSAPathsAndVerdicts(t *testing.T) {
	pr := psaProgram(t, psaRoutes, `
        if (h.ip.isValid()) { routes.apply(); }
        else if (h.eth.dst == 0xffffffffffff) { send_to_port(o, PSA_PORT_CPU); }`, "", "", "")
	same(t, describe(pr), []string{
		"eth ip; routes hit → fwd; send",
		"eth ip; routes hit → drop; drop",
		"eth ip; routes hit → NoAction; drop",
		"eth ip; routes miss → NoAction; drop",
		"eth; (h.eth.dst == 281474976710655 @19) true; punt",
		"eth; (h.eth.dst == 281474976710655 @19) false; drop",
	})
	for _, p := range pr.Paths {
		n := termCounts(p)
		if n[TermPSA] != 1 || n[TermPSAEgress] != 0 {
			t.Errorf("%s: %v PSA pipelines, %v egress passes; want 1 and 0 (the egress pipeline is empty)", p.Describe(), n[TermPSA], n[TermPSAEgress])
		}
	}
	// ostd.drop and egress_port assigned directly
	pr = psaProgram(t, "", `o.drop = false; o.egress_port = (PortId_t)3;`, "", "", "")
	same(t, describe(pr), []string{"eth ip; send", "eth; send"})
}

// A non-empty egress pipeline parses the packet the ingress deparser
// wrote again and may drop it; only packets ingress sends reach it.
func TestPSAEgressPipeline(t *testing.T) {
	pr := psaProgram(t, psaRoutes, `if (h.ip.isValid()) { routes.apply(); }`,
		"state start { p.extract(h.eth); transition accept; }",
		"if (h.eth.src == 0) { egress_drop(o); }", "p.emit(h);")
	same(t, describe(pr), []string{
		"eth ip; routes hit → fwd; egress parser: eth; (h.eth.src == 0 @26) true; drop",
		"eth ip; routes hit → fwd; egress parser: eth; (h.eth.src == 0 @26) false; send",
		"eth ip; routes hit → drop; drop",
		"eth ip; routes hit → NoAction; drop",
		"eth ip; routes miss → NoAction; drop",
		"eth; drop",
	})
	send := onePath(t, pr, "eth,ip,routes=fwd,verdict=send")
	n := termCounts(send)
	// ingress parses 2 headers (34 bytes), egress 1 (14); each deparser
	// checks its 2 headers
	for term, want := range map[string]float64{TermPSA: 1, TermPSAEgress: 1, TermParseHeader: 3, TermParseByte: 48, TermDeparseCheck: 4, TermLPM: 1} {
		if n[term] != want {
			t.Errorf("%s: %v, want %v", term, n[term], want)
		}
	}
	if drop := termCounts(onePath(t, pr, "eth,ip,routes=drop")); drop[TermPSAEgress] != 0 || drop[TermDrop] != 1 {
		t.Errorf("dropped by ingress: %v egress passes, %v drops; want 0 and 1", drop[TermPSAEgress], drop[TermDrop])
	}
}

// PSA's externs are priced as the v1model externs they compile to, and
// Hash and InternetChecksum by their algorithm and bytes.
func TestPSAExterns(t *testing.T) {
	pr := psaProgram(t, `
    Counter<bit<32>, bit<8>>(256, PSA_CounterType_t.PACKETS) c;
    Register<bit<32>, bit<8>>(256) r;
    Hash<bit<16>>(PSA_HashAlgorithm_t.CRC16) hs;
    InternetChecksum() ck;`, `
        if (h.ip.isValid()) {
            c.count(h.ip.ttl);
            bit<32> v = r.read(h.ip.ttl);
            r.write(h.ip.ttl, v + 1);
            m.h = hs.get_hash({h.ip.src, h.ip.dst, h.ip.proto});
            ck.clear();
            ck.add({h.ip.src, h.ip.dst});
            h.ip.csum = ck.get();
            send_to_port(o, (PortId_t)1);
        }`, "", "", "")
	n := termCounts(onePath(t, pr, "eth,ip"))
	for term, want := range map[string]float64{TermCounter: 1, TermRegRead: 1, TermRegWrite: 1, TermCRC16: 1, TermHashBlock: 1, TermHashByte: 1, TermCsum: 1, TermCsumByte: 8} {
		if n[term] != want {
			t.Errorf("%s: %v, want %v", term, n[term], want)
		}
	}
	if p := onePath(t, pr, "eth,ip"); p.Verdict != "send" || !strings.Contains(p.Describe(), "send") {
		t.Errorf("verdict %s", p.Verdict)
	}
}

// PSA's DirectCounter and DirectMeter act at their calls in the table's
// actions, not on every hit (as v1model's do): an action that calls
// neither pays neither; count() called twice adds to the entry once; a
// colour-aware execute finds the entry again by the table's key, then runs
// the meter; a miss (the default action, no entry) pays neither.
func TestPSADirectExternsArePricedAtTheirCalls(t *testing.T) {
	pr := psaProgram(t, `
    DirectCounter<bit<32>>(PSA_CounterType_t.PACKETS_AND_BYTES) dc;
    DirectMeter(PSA_MeterType_t.PACKETS) dm;
    action counted(PortId_t port) { dc.count(); dc.count(); send_to_port(o, port); }
    action metered(PortId_t port) { if (dm.execute() == PSA_MeterColor_t.RED) { ingress_drop(o); } else { send_to_port(o, port); } }
    action plain(PortId_t port) { send_to_port(o, port); }
    action dflt() { dc.count(); ingress_drop(o); }
    table t { key = { h.ip.dst: exact; } actions = { counted; metered; plain; dflt; }
        default_action = dflt(); psa_direct_counter = dc; psa_direct_meter = dm; }`,
		`if (h.ip.isValid()) { t.apply(); }`, "", "", "")
	for _, c := range []struct {
		path                 string
		count, meter, lookup float64
	}{
		{"eth,ip,t=counted", 1, 0, 1},
		{"eth,ip,t=plain", 0, 0, 1},
		{"eth,ip,t=metered", 0, 1, 2},
		{"eth,ip,t=miss", 0, 0, 1},
	} {
		paths, err := pr.Select(c.path)
		if err != nil || len(paths) == 0 {
			t.Fatalf("%s: %v (%d paths)", c.path, err, len(paths))
		}
		for _, p := range paths {
			n := termCounts(p)
			if n[TermDirectCount] != c.count || n[TermMeter] != c.meter || n[TermHash] != c.lookup {
				t.Errorf("%s: direct counter %v, meter %v, exact lookups %v; want %v, %v, %v",
					p.Describe(), n[TermDirectCount], n[TermMeter], n[TermHash], c.count, c.meter, c.lookup)
			}
		}
	}
}
