package sema

import (
	"strings"
	"testing"
)

const psaBlocks = `#include <core.p4>
#include <psa.p4>
struct H { }
struct M { }
struct E { }
parser P(packet_in p, out H h, inout M m, in psa_ingress_parser_input_metadata_t i, in E a, in E b) { state start { transition accept; } }
control I(inout H h, inout M m, in psa_ingress_input_metadata_t i, inout psa_ingress_output_metadata_t o) { apply { } }
control D(packet_out p, out E c, out E r, out E n, inout H h, in M m, in psa_ingress_output_metadata_t o) { apply { } }
parser EP(packet_in p, out H h, inout M m, in psa_egress_parser_input_metadata_t i, in E n, in E c1, in E c2) { state start { transition accept; } }
control EC(inout H h, inout M m, in psa_egress_input_metadata_t i, inout psa_egress_output_metadata_t o) { apply { } }
control ED(packet_out p, out E c, out E r, inout H h, in M m, in psa_egress_output_metadata_t o, in psa_egress_deparser_input_metadata_t d) { apply { } }
`

func TestPSAMain(t *testing.T) {
	for _, main := range []string{
		"IngressPipeline(P(), I(), D()) ip;\nEgressPipeline(EP(), EC(), ED()) ep;\nPSA_Switch(ip, PacketReplicationEngine(), ep, BufferingQueueingEngine()) main;",
		"PSA_Switch(IngressPipeline(P(), I(), D()), PacketReplicationEngine(), EgressPipeline(EP(), EC(), ED()), BufferingQueueingEngine()) main;",
	} {
		info, err := checkSrc(t, "psa.p4", []byte(psaBlocks+main))
		if err != nil {
			t.Fatalf("%s: %v", main, err)
		}
		if info.Main.Arch != "psa" || len(info.Main.Blocks) != PSABlocks || info.Main.Blocks[PSAEgressDeparser].EntName() != "ED" {
			t.Fatalf("main: %+v", info.Main)
		}
	}
	bad := []struct{ main, want string }{
		{"EgressPipeline(EP(), EC(), ED()) ep;\nPSA_Switch(ep, PacketReplicationEngine(), ep, BufferingQueueingEngine()) main;", "ep is an EgressPipeline; PSA_Switch expects an IngressPipeline here"},
		{"PSA_Switch(ip, PacketReplicationEngine(), ep, BufferingQueueingEngine()) main;", "ip is not a pipeline declared before main"},
		{"IngressPipeline(P(), I(), D()) ip;\nEgressPipeline(EP(), EC(), ED()) ep;\nPSA_Switch(ip, ep, ep, BufferingQueueingEngine()) main;", "PSA_Switch expects PacketReplicationEngine() here"},
		{"IngressPipeline(I(), I(), D()) ip;\nEgressPipeline(EP(), EC(), ED()) ep;\nPSA_Switch(ip, PacketReplicationEngine(), ep, BufferingQueueingEngine()) main;", "I is a control, IngressPipeline expects a parser here"},
		{"IngressPipeline(P(), I(), D()) ip;\nIngressPipeline(P(), I(), D()) ip;", "ip is already declared"},
	}
	for _, b := range bad {
		_, err := checkSrc(t, "psa.p4", []byte(psaBlocks+b.main))
		if err == nil || !strings.Contains(err.Error(), b.want) || !strings.Contains(err.Error(), "psa.p4:") {
			t.Errorf("%s: %v, want %q", b.main, err, b.want)
		}
	}
}
