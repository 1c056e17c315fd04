package scenarios

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"strings"

	"github.com/edgenf/edgenf/bench/scenario"
	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/datapath"
	"github.com/edgenf/edgenf/internal/nf/nat64"
)

// NAT64 in the nat group: IPv6 frames from 2001:db8:a::10-73 to
// 64:ff9b::198.19.0.1 (78 bytes, the generator's IPv6 template) enter an
// edgenf router through a nat64 cube on its in-port, leave as IPv4 from the
// pool and are routed to the sink like the IPv4 NAT scenarios' frames. The
// issue's yardstick is the IPv4 masquerade path of the same group
// (router-nat-*, ≥ 0.8×); the group's baseline is nftables masquerade.

const nat64Pool = "198.18.64.1-198.18.64.4"

func init() {
	for _, hook := range []datapath.Hook{datapath.XDP, datapath.TC} {
		hook := hook
		scenario.Register(scenario.Scenario{
			Name: "router-nat64-" + string(hook), Group: "nat", Order: 15, Quick: hook == datapath.XDP,
			Doc: fmt.Sprintf("edgenf nat64 (IPv6 → IPv4, binding and session per flow) on the in-port of an edgenf router at %s",
				strings.ToUpper(string(hook))),
			Setup: func(e *scenario.Env) (*scenario.Topology, error) { return setupRouterNAT64(e, hook) },
		})
	}
}

func setupRouterNAT64(e *scenario.Env, hook datapath.Hook) (*scenario.Topology, error) {
	p, eng, _, err := enginePath(e, hook)
	if err != nil {
		return nil, err
	}
	r, n := "r"+e.ID(), "n64"+e.ID()
	t, err := build(eng, p, mustMAC(routerInMAC), func(tp *cube.Topology) error {
		if err := tp.AddCube(&cube.Cube{Name: r, Type: "router", Hook: hook, Ports: []cube.Port{
			{Name: "in", Index: 0, Peer: p.A1, MAC: routerInMAC, Addresses: []string{scenario.A1IP, v6A1}},
			{Name: "out", Index: 1, Peer: p.B0, Addresses: []string{scenario.B0IP}},
		}}); err != nil {
			return err
		}
		if _, err := tp.PutEntry(r, "arp", json.RawMessage(fmt.Sprintf(`{"ip":%q,"mac":%q}`, scenario.NextHop, p.B1MAC))); err != nil {
			return err
		}
		if _, err := tp.PutEntry(r, "routes", json.RawMessage(fmt.Sprintf(`{"prefix":%q,"next_hop":%q}`, scenario.DstNet, scenario.NextHop))); err != nil {
			return err
		}
		if err := tp.AddCube(&cube.Cube{Name: n, Type: "nat64", Hook: hook, Config: json.RawMessage(fmt.Sprintf(`{"pool":%q}`, nat64Pool))}); err != nil {
			return err
		}
		return tp.Attach(n, r+":in", "last")
	})
	if err != nil {
		return nil, err
	}
	t.Info["hook"] = string(hook)
	t.Info["nat64"] = "64:ff9b::/96, pool " + nat64Pool
	if err := v6Frame(t, e); err != nil {
		return nil, err
	}
	dst, _ := netip.AddrFromSlice(scenario.DstIP.To4())
	t.Frame.DstIP = nat64.Embed(nat64.WellKnownPrefix, dst).AsSlice()
	t.Info["frame"] = "IPv6/UDP to 64:ff9b::" + dst.String() + ", 78 bytes"
	return t, nil
}
