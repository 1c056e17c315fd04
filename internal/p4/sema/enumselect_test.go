package sema

import (
	"strings"
	"testing"
)

// A select on an enum without an underlying type (PSA's packet_path)
// matches its members or default; masks and ranges are refused.
func TestSelectOnPlainEnum(t *testing.T) {
	prog := func(cases string) string {
		return strings.Replace(psaBlocks,
			"parser P(packet_in p, out H h, inout M m, in psa_ingress_parser_input_metadata_t i, in E a, in E b) { state start { transition accept; } }",
			"parser P(packet_in p, out H h, inout M m, in psa_ingress_parser_input_metadata_t i, in E a, in E b) { state start { transition select(i.packet_path) { "+cases+" } } state again { transition accept; } }", 1) +
			"IngressPipeline(P(), I(), D()) ip;\nEgressPipeline(EP(), EC(), ED()) ep;\nPSA_Switch(ip, PacketReplicationEngine(), ep, BufferingQueueingEngine()) main;"
	}
	if _, err := checkSrc(t, "sel.p4", []byte(prog("PSA_PacketPath_t.RESUBMIT: again; PSA_PacketPath_t.RECIRCULATE: again; default: accept;"))); err != nil {
		t.Fatalf("select on packet_path: %v", err)
	}
	for _, c := range []struct{ cases, want string }{
		{"PSA_PacketPath_t.RESUBMIT &&& PSA_PacketPath_t.RESUBMIT: again; default: accept;", "a key of enum PSA_PacketPath_t matches its members or default, not a mask"},
		{"PSA_PacketPath_t.NORMAL .. PSA_PacketPath_t.RESUBMIT: again; default: accept;", "not a range"},
		{"1: again; default: accept;", "sel.p4:"},
	} {
		if _, err := checkSrc(t, "sel.p4", []byte(prog(c.cases))); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.cases, err, c.want)
		}
	}
}
