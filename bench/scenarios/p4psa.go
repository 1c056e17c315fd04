package scenarios

import (
	"fmt"

	"github.com/edgenf/edgenf/bench/scenario"
)

// The p4-psa groups: the same work written for PSA (psa.p4) and for
// v1model, compiled by edgenf, at XDP, in the same run (target: PSA at
// least 0.95 of v1model). PSA runs two pipelines where v1model runs one:
// the egress parser parses the packet again and the egress deparser
// emits it again (backend/psa.go).
//
//	p4-psa-l3: l3fwd.p4 (v1model)  vs  psa_l3fwd.p4: one LPM route, MAC rewrite,
//	           TTL decrement, IPv4 checksum recomputed
//	p4-psa-l2: l2switch.p4 (v1model)  vs  psa_l2switch.p4: one MAC table entry,
//	           a direct counter (the PSA program also parses Ethernet again in
//	           egress and compares the bridged ingress port)
func init() {
	route := func(p *scenario.Path) []string {
		return []string{fmt.Sprintf(`{"table":"routes","match":{"hdr.ipv4.dstAddr":%q},"action":"forward","params":{"srcAddr":%q,"dstAddr":%q,"port":"1"}}`,
			scenario.DstNet, p.B0MAC, p.B1MAC)}
	}
	for _, s := range []scenario.Scenario{
		{Name: "p4-l3fwd-xdp", Group: "p4-psa-l3", Baseline: true, Quick: true,
			Doc: "examples/p4/l3fwd.p4 (v1model) at XDP: one LPM route (baseline)",
			Setup: func(e *scenario.Env) (*scenario.Topology, error) {
				return setupP4(e, "l3fwd.p4", nil, route)
			}},
		{Name: "p4-psa-l3fwd-xdp", Group: "p4-psa-l3", Order: 10, Quick: true,
			Doc: "examples/p4/psa_l3fwd.p4 (PSA) at XDP: the same forwarding, checksum by InternetChecksum, a per-port Counter",
			Setup: func(e *scenario.Env) (*scenario.Topology, error) {
				return setupP4(e, "psa_l3fwd.p4", nil, route)
			}},
		{Name: "p4-l2switch-v1-xdp", Group: "p4-psa-l2", Baseline: true,
			Doc: "examples/p4/l2switch.p4 (v1model) at XDP: one MAC table entry (baseline)",
			Setup: func(e *scenario.Env) (*scenario.Topology, error) {
				return setupP4(e, "l2switch.p4", nil, func(p *scenario.Path) []string {
					return []string{fmt.Sprintf(`{"table":"mac_table","match":{"vid":"0","dst":%q},"action":"forward","params":{"port":"1"}}`, p.B1MAC)}
				})
			}},
		{Name: "p4-psa-l2switch-xdp", Group: "p4-psa-l2", Order: 10,
			Doc: "examples/p4/psa_l2switch.p4 (PSA) at XDP: one MAC table entry",
			Setup: func(e *scenario.Env) (*scenario.Topology, error) {
				return setupP4(e, "psa_l2switch.p4", nil, func(p *scenario.Path) []string {
					return []string{fmt.Sprintf(`{"table":"mac_table","match":{"vid":"0","dst":%q},"action":"forward","params":{"port":"1"}}`, p.B1MAC)}
				})
			}},
	} {
		scenario.Register(s)
	}
}
