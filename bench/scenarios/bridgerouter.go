package scenarios

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"time"

	"github.com/edgenf/edgenf/bench/scenario"
	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/datapath"
	_ "github.com/edgenf/edgenf/internal/nf/bridge" // registers the bridge type
)

// The bridging and routing groups: an edgenf bridge (a1 and b0 in VLAN 1, the
// sink's MAC learned behind b0) against the Linux bridge, and an edgenf
// router (a1 → b0, route to DstNet via NextHop = b1) against kernel IPv4
// forwarding, with 1 and 100k static routes.

func init() {
	// The kernel baselines, re-registered under their own names in these
	// groups (a name is also a selector of -run: reusing "bridge" or
	// "ip-forward" would pull these groups into runs that ask for the
	// baselines alone).
	for _, b := range []struct {
		from, name, group string
		base              bool
	}{
		{"bridge", "linux-bridge", "bridging", true}, {"bridge-nonf", "linux-bridge-nonf", "bridging", false},
		{"ip-forward", "kernel-forwarding", "routing", true},
	} {
		s, ok := scenario.Get("baselines/" + b.from)
		if !ok {
			continue
		}
		s.Name, s.Group, s.Baseline, s.Order, s.Quick = b.name, b.group, b.base, 0, true
		scenario.Register(s)
	}
	for _, hook := range []datapath.Hook{datapath.XDP, datapath.TC} {
		hook := hook
		scenario.Register(scenario.Scenario{
			Name: "bridge-" + string(hook), Group: "bridging", Order: 10, Quick: hook == datapath.XDP,
			Doc:   fmt.Sprintf("edgenf bridge at %s: two access ports, destination MAC in the FDB (unicast)", hook),
			Setup: func(e *scenario.Env) (*scenario.Topology, error) { return setupBridgeNF(e, hook) },
		})
		scenario.Register(scenario.Scenario{
			Name: "router1-" + string(hook), Group: "routing", Order: 10, Param: 1, Quick: hook == datapath.XDP,
			Doc:   fmt.Sprintf("edgenf router at %s: one static route, static next hop", hook),
			Setup: func(e *scenario.Env) (*scenario.Topology, error) { return setupRouter(e, hook, 1) },
		})
	}
	scenario.Register(scenario.Scenario{
		Name: "router100k-xdp", Group: "routing", Order: 20, Param: 100000,
		Doc:   "edgenf router at XDP with 100,000 static routes (/16../32 inside 198.18.0.0/15)",
		Setup: func(e *scenario.Env) (*scenario.Topology, error) { return setupRouter(e, datapath.XDP, 100000) },
	})
}

func setupBridgeNF(e *scenario.Env, hook datapath.Hook) (*scenario.Topology, error) {
	p, eng, root, err := enginePath(e, hook)
	if err != nil {
		return nil, err
	}
	name := "br" + e.ID()
	t, err := build(eng, p, p.B1MAC, func(tp *cube.Topology) error {
		if err := tp.AddCube(&cube.Cube{Name: name, Type: "bridge", Hook: hook, Ports: []cube.Port{
			{Name: "in", Index: 0, Peer: p.A1}, {Name: "out", Index: 1, Peer: p.B0}}}); err != nil {
			return err
		}
		// The sink never sends, so its MAC cannot be learned: a static
		// entry stands for "learned".
		_, err := tp.PutEntry(name, "fdb", json.RawMessage(fmt.Sprintf(`{"mac":%q,"port":"out"}`, p.B1MAC)))
		return err
	})
	if err != nil {
		return nil, err
	}
	t.Info["hook"] = string(hook)
	stubCost(e, t, root, p.A1, hook)
	return t, nil
}

func setupRouter(e *scenario.Env, hook datapath.Hook, routes int) (*scenario.Topology, error) {
	return setupRouterWith(e, hook, routes, nil)
}

// setupRouterWith is setupRouter with router settings (cfg may be nil).
func setupRouterWith(e *scenario.Env, hook datapath.Hook, routes int, cfg json.RawMessage) (*scenario.Topology, error) {
	p, eng, _, err := enginePath(e, hook)
	if err != nil {
		return nil, err
	}
	r := "r" + e.ID()
	t0 := time.Now()
	err = eng.Update(func(tp *cube.Topology) error {
		if err := addRouter(tp, r, hook, cfg, p); err != nil {
			return err
		}
		for _, pf := range benchPrefixes(routes) {
			if _, err := tp.PutEntry(r, "routes", json.RawMessage(fmt.Sprintf(`{"prefix":%q,"next_hop":%q}`, pf, scenario.NextHop))); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if err := freeSink(p); err != nil {
		return nil, err
	}
	t := p.Topology(mustMAC(routerInMAC))
	t.Info["hook"] = string(hook)
	t.Info["routes"] = fmt.Sprint(routes)
	t.Info["setup"] = time.Since(t0).Round(time.Millisecond).String()
	return t, nil
}

// benchPrefixes returns n distinct prefixes: DstNet first, then random ones
// inside 198.18.0.0/15 (/16../32, mostly /24../32), none equal to the
// connected subnets.
func benchPrefixes(n int) []string {
	seen := map[netip.Prefix]bool{
		netip.MustParsePrefix("198.18.0.0/24"): true, netip.MustParsePrefix("198.18.1.0/24"): true,
	}
	out := []string{scenario.DstNet}
	seen[netip.MustParsePrefix(scenario.DstNet)] = true
	rng := rand.New(rand.NewPCG(7, 9))
	for len(out) < n {
		v := 198<<24 | 18<<16 | rng.Uint32N(1<<17)
		bits := 16 + rng.IntN(17)
		if bits < 24 && rng.IntN(4) != 0 {
			bits += 8
		}
		pf := netip.PrefixFrom(netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}), bits).Masked()
		if seen[pf] {
			continue
		}
		seen[pf] = true
		out = append(out, pf.String())
	}
	return out
}
