package scenarios

import (
	"fmt"

	"github.com/edgenf/edgenf/bench/scenario"
	"github.com/edgenf/edgenf/internal/datapath"
)

// The p4-selector group: what an action selector costs per packet.
// examples/p4/l3fwd.p4 routes DstNet with a plain LPM table (baseline);
// examples/p4/ecmp.p4 is the same program whose route points to a group
// of four next-hop members of an action selector: per packet, a CRC-16
// over the addresses and protocol (9 bytes, slicing-by-8), a group slot
// and a member slot (two inlined ARRAY lookups) and a division-free
// hash % 4.
// The four members forward alike out of b0 (the generator's flows spread
// over all four). Target (issue 17): at least 0.9.
func init() {
	route := func(p *scenario.Path) string {
		return fmt.Sprintf(`"action":"FwdIngress.forward","params":{"srcAddr":%q,"dstAddr":%q,"port":"1"}`, p.B0MAC, p.B1MAC)
	}
	scenario.Register(scenario.Scenario{Name: "p4-l3fwd-xdp", Group: "p4-selector", Baseline: true, Quick: true,
		Doc: "examples/p4/l3fwd.p4 at XDP: one LPM route with its action in the table (baseline)",
		Setup: func(e *scenario.Env) (*scenario.Topology, error) {
			return setupP4(e, "l3fwd.p4", nil, func(p *scenario.Path) []string {
				return []string{fmt.Sprintf(`{"table":"routes","match":{"hdr.ipv4.dstAddr":%q},%s}`, scenario.DstNet, route(p))}
			})
		}})
	scenario.Register(scenario.Scenario{Name: "p4-ecmp-xdp", Group: "p4-selector", Order: 10, Quick: true,
		Doc: "examples/p4/ecmp.p4 at XDP: the same route to a group of 4 members of an action selector (crc16 over src, dst, protocol)",
		Setup: func(e *scenario.Env) (*scenario.Topology, error) {
			return setupP4Rows(e, "ecmp.p4", datapath.XDP, nil, func(p *scenario.Path) []row {
				var rows []row
				for m := range 4 {
					rows = append(rows, row{"ap_members", fmt.Sprintf(`{"profile":"next_hops","member":%d,%s}`, m, route(p))})
				}
				rows = append(rows, row{"ap_groups", `{"profile":"next_hops","group":1,"members":[0,1,2,3]}`},
					row{"entries", fmt.Sprintf(`{"table":"routes","match":{"hdr.ipv4.dstAddr":%q},"group":1}`, scenario.DstNet)})
				return rows
			})
		}})
}
