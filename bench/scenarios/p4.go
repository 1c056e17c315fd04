package scenarios

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/edgenf/edgenf/bench/scenario"
	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/datapath"
	"github.com/edgenf/edgenf/internal/engine"
	_ "github.com/edgenf/edgenf/internal/nf/p4" // registers the p4 type
)

// The p4 groups: shipped P4 programs against the hand-written cubes doing the
// same work on the same path, in the same run (target: at least 0.9).
//
//	p4-l3: router, one route, static next hop, no route cache (an LPM lookup
//	       per packet, as the P4 program does)  vs  l3router.p4, one LPM route and a port MAC
//	p4-l2: bridge, unicast to a static FDB entry   vs  l2switch.p4, one MAC table entry
//
// and p4-mcast, the cost of copies made in the kernel: l2learn.p4 flooding
// each frame through a multicast group of two replicas out of the port to
// b0 (both copies reach the sink), against the same program forwarding
// each frame once; at XDP the copies are made by the TC copy machine.
func init() {
	for _, s := range []scenario.Scenario{
		{Name: "builtin-router-xdp", Group: "p4-l3", Baseline: true, Quick: true,
			Doc: "hand-written edgenf router at XDP: one static route, route cache off (baseline)",
			Setup: func(e *scenario.Env) (*scenario.Topology, error) {
				return setupRouterWith(e, datapath.XDP, 1, json.RawMessage(`{"disable_route_cache": true}`))
			}},
		{Name: "p4-l3router-xdp", Group: "p4-l3", Order: 10, Quick: true,
			Doc: "examples/p4/l3router.p4 compiled by edgenf, at XDP: one LPM route, port MAC rewrite",
			Setup: func(e *scenario.Env) (*scenario.Topology, error) {
				return setupP4(e, "l3router.p4", mustMAC(routerInMAC), func(p *scenario.Path) []string {
					return []string{
						fmt.Sprintf(`{"table":"ipv4_lpm","match":{"hdr.ipv4.dstAddr":%q},"action":"ipv4_forward","params":{"dstAddr":%q,"port":"1"}}`, scenario.DstNet, p.B1MAC),
						fmt.Sprintf(`{"table":"port_mac","match":{"standard_metadata.egress_spec":"1"},"action":"set_smac","params":{"smac":%q}}`, p.B0MAC),
					}
				})
			}},
		{Name: "builtin-bridge-xdp", Group: "p4-l2", Baseline: true,
			Doc:   "hand-written edgenf bridge at XDP: unicast to a static FDB entry (baseline)",
			Setup: func(e *scenario.Env) (*scenario.Topology, error) { return setupBridgeNF(e, datapath.XDP) }},
		{Name: "p4-l2switch-xdp", Group: "p4-l2", Order: 10,
			Doc: "examples/p4/l2switch.p4 compiled by edgenf, at XDP: one MAC table entry",
			Setup: func(e *scenario.Env) (*scenario.Topology, error) {
				return setupP4(e, "l2switch.p4", nil, func(p *scenario.Path) []string {
					return []string{fmt.Sprintf(`{"table":"mac_table","match":{"vid":"0","dst":%q},"action":"forward","params":{"port":"1"}}`, p.B1MAC)}
				})
			}},
	} {
		scenario.Register(s)
	}
	// What a P4 priority costs at XDP: its frames leave through the skb
	// path (verdict.h: enf_out) to meet the egress qdisc.
	fwd := func(p *scenario.Path) []string {
		return []string{`{"table":"fwd","match":{"standard_metadata.ingress_port":"0"},"action":"forward","params":{"port":"1"}}`}
	}
	scenario.Register(scenario.Scenario{Name: "p4-portfwd-xdp", Group: "p4-priority", Baseline: true,
		Doc: "examples/p4/portfwd.p4 at XDP: frames redirected at XDP (baseline)",
		Setup: func(e *scenario.Env) (*scenario.Topology, error) {
			return setupP4(e, "portfwd.p4", nil, fwd)
		}})
	scenario.Register(scenario.Scenario{Name: "p4-priority-xdp", Group: "p4-priority", Order: 10,
		Doc: "the same with standard_metadata.priority = 7: each frame passed up from XDP and sent out of b0 by TC (skb->priority set), as any frame with a priority at XDP",
		Setup: func(e *scenario.Env) (*scenario.Topology, error) {
			return setupP4(e, "portfwd.p4"+priority7, nil, fwd)
		}})
	scenario.Register(scenario.Scenario{Name: "p4-portfwd-tc", Group: "p4-priority", Order: 20,
		Doc: "examples/p4/portfwd.p4 at TC (reference: the whole path as skbs)",
		Setup: func(e *scenario.Env) (*scenario.Topology, error) {
			return setupP4On(e, "portfwd.p4", datapath.TC, nil, fwd, nil)
		}})
	for _, hook := range []datapath.Hook{datapath.XDP, datapath.TC} {
		order := 10
		if hook == datapath.TC {
			order = 20
		}
		scenario.Register(scenario.Scenario{Name: "p4-unicast-" + string(hook), Group: "p4-mcast", Baseline: hook == datapath.XDP, Order: order,
			Doc: fmt.Sprintf("examples/p4/l2learn.p4 at %s, destination known: each frame forwarded once", hook),
			Setup: func(e *scenario.Env) (*scenario.Topology, error) {
				return setupLearnSwitch(e, hook, false)
			}})
		scenario.Register(scenario.Scenario{Name: "p4-mcast2-" + string(hook), Group: "p4-mcast", Order: order + 1,
			Doc: fmt.Sprintf("examples/p4/l2learn.p4 at %s, destination unknown: each frame flooded through a group of two replicas to b0, "+
				"both counted by the sink (ratio 2 would make copies free)", hook),
			Setup: func(e *scenario.Env) (*scenario.Topology, error) {
				return setupLearnSwitch(e, hook, true)
			}})
	}
}

// setupLearnSwitch runs l2learn.p4 with the generator's source known (no
// digests): with flood, frames to b1 are flooded through group 1 = two
// replicas out of port 1 (rid 0 and 1); otherwise forwarded to port 1.
func setupLearnSwitch(e *scenario.Env, hook datapath.Hook, flood bool) (*scenario.Topology, error) {
	return setupP4On(e, "l2learn.p4", hook, nil, func(p *scenario.Path) []string {
		ents := []string{fmt.Sprintf(`{"table":"smac","match":{"hdr.ethernet.srcAddr":%q},"action":"NoAction"}`, p.A0MAC)}
		if !flood {
			ents = append(ents, fmt.Sprintf(`{"table":"dmac","match":{"hdr.ethernet.dstAddr":%q},"action":"forward","params":{"port":"1"}}`, p.B1MAC))
		}
		return ents
	}, []string{`{"group":1,"replicas":[{"port":1,"rid":0},{"port":1,"rid":1}]}`})
}

// exampleP4 is the path of a shipped P4 program (the harness runs in the tree).
// exampleP4 is the settings of a p4 cube running a shipped program (its
// source inline, as the CLI sends it).
// priority7, after a shipped program's name, makes it set
// standard_metadata.priority = 7 before its table fwd.
const priority7 = "+priority7"

func exampleP4(name string) (json.RawMessage, error) {
	_, file, _, _ := runtime.Caller(0)
	base, prio := strings.CutSuffix(name, priority7)
	src, err := os.ReadFile(filepath.Join(filepath.Dir(file), "..", "..", "examples", "p4", base))
	if err != nil {
		return nil, err
	}
	if prio {
		edited := strings.Replace(string(src), "fwd.apply();", "standard_metadata.priority = 7;\n        fwd.apply();", 1)
		if edited == string(src) {
			return nil, fmt.Errorf("%s has no fwd.apply() to set a priority before", base)
		}
		name, src = base, []byte(edited)
	}
	return json.Marshal(map[string]string{"program": name, "source": string(src)})
}

// setupP4 runs a shipped P4 program as a cube at XDP between a1 (port 0)
// and b0 (port 1) with the given entries; frames go to dstMAC (nil: b1's
// MAC).
func setupP4(e *scenario.Env, program string, dstMAC []byte, entries func(*scenario.Path) []string) (*scenario.Topology, error) {
	return setupP4On(e, program, datapath.XDP, dstMAC, entries, nil)
}

// setupP4On is setupP4 at a hook, with multicast groups.
func setupP4On(e *scenario.Env, program string, hook datapath.Hook, dstMAC []byte, entries func(*scenario.Path) []string, groups []string) (*scenario.Topology, error) {
	return setupP4Rows(e, program, hook, dstMAC, func(p *scenario.Path) []row {
		var rows []row
		for _, en := range entries(p) {
			rows = append(rows, row{"entries", en})
		}
		for _, g := range groups {
			rows = append(rows, row{"mcast_groups", g})
		}
		return rows
	})
}

// row is a row of one of a p4 cube's tables (entries, mcast_groups,
// ap_members, ...).
type row struct{ table, json string }

// setupP4Rows is setupP4On with the rows of any of the cube's tables, in order.
func setupP4Rows(e *scenario.Env, program string, hook datapath.Hook, dstMAC []byte, rows func(*scenario.Path) []row) (*scenario.Topology, error) {
	p, eng, root, err := enginePath(e, hook)
	if err != nil {
		return nil, err
	}
	name := "p4" + e.ID()
	cfg, err := exampleP4(program)
	if err != nil {
		return nil, err
	}
	rs := rows(p)
	copies := false
	for _, r := range rs {
		copies = copies || r.table == "mcast_groups"
	}
	err = eng.Update(func(tp *cube.Topology) error {
		if err := tp.AddCube(&cube.Cube{Name: name, Type: "p4", Hook: hook, Config: cfg, Ports: []cube.Port{
			{Name: "in", Index: 0, Peer: p.A1}, {Name: "out", Index: 1, Peer: p.B0}}}); err != nil {
			return err
		}
		for _, r := range rs {
			if _, err := tp.PutEntry(name, r.table, json.RawMessage(r.json)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	var loadTime time.Duration
	if program == "l3router.p4" {
		if loadTime, err = compileLoad(eng, "upf.p4"); err != nil {
			return nil, err
		}
	}
	if err := freeSink(p); err != nil { // after the last engine change
		return nil, err
	}
	if dstMAC == nil {
		dstMAC = p.B1MAC
	}
	t := p.Topology(dstMAC)
	t.Info["program"] = program
	t.Info["hook"] = string(hook)
	if loadTime > 0 {
		t.Info["compile+load of upf.p4 (211 lines, cold)"] = loadTime.Round(time.Millisecond).String()
	}
	if !copies {
		// (a program that makes copies would send them while measured)
		stubCost(e, t, root, p.A1, hook)
	}
	return t, nil
}

// compileLoad times turning a shipped program, compiled by nobody before in
// this process, into a running cube (front end, C, clang for both hooks,
// verifier, pins), then removes the cube.
func compileLoad(eng *engine.Engine, program string) (time.Duration, error) {
	cfg, err := exampleP4(program)
	if err != nil {
		return 0, err
	}
	t0 := time.Now()
	if err := eng.Update(func(tp *cube.Topology) error {
		return tp.AddCube(&cube.Cube{Name: "cl", Type: "p4", Hook: datapath.XDP, Config: cfg})
	}); err != nil {
		return 0, err
	}
	d := time.Since(t0)
	return d, eng.Update(func(tp *cube.Topology) error { return tp.DeleteCube("cl") })
}
