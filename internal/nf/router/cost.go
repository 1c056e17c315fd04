package router

import (
	"encoding/json"
	"fmt"
	"net/netip"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/estimate"
)

// The router's cost model. With the route cache (the default) a packet's
// route is one hash lookup, whatever the table holds; without it, an LPM
// trie lookup whose walk grows with the routes (connected and static).
const (
	termCached = "router.cached"
	termLPM    = "router.lpm"
	termLog2   = "router.lpm.log2n"
)

func init() {
	estimate.Register(&estimate.Model{Type: "router",
		Terms: []estimate.Term{
			{Name: termCached, Doc: "a forwarded packet whose destination is in the route cache (TTL, MACs, checksum)"},
			{Name: termLPM, Doc: "a forwarded packet looked up in the LPM table (route cache off)"},
			{Name: termLog2, Doc: "per log2(routes+1) of that lookup"},
		},
		Uses:  costUses,
		Cases: costCases,
	})
}

func routeCount(c *cube.Cube) int {
	n := len(c.Tables["routes"])
	for _, p := range c.Ports {
		n += len(p.Addresses)
	}
	return n
}

func costUses(_ *estimate.Profile, c *cube.Cube, _ string) ([]estimate.Use, []string, error) {
	var cfg Config
	if err := cube.DecodeInto("config", c.Config, &cfg); err != nil {
		return nil, nil, err
	}
	n := routeCount(c)
	if cfg.DisableRouteCache {
		what := fmt.Sprintf("router: LPM lookup in %d routes", n)
		return []estimate.Use{{Term: termLPM, N: 1, What: what}, {Term: termLog2, N: estimate.Log2(n), What: what}},
			[]string{"route cache off: every packet walks the LPM table"}, nil
	}
	return []estimate.Use{{Term: termCached, N: 1, What: "router: route cache hit"}},
		[]string{fmt.Sprintf("route cache on: %d routes cost the first packet to each destination an LPM lookup, the others none", n)}, nil
}

// costCase is a router forwarding to 198.19.0.0/16 among routes routes.
func costCase(name string, routes int, noCache bool) estimate.Case {
	c := &cube.Cube{Name: "r1", Type: "router",
		Ports: []cube.Port{
			{Name: "p0", Index: 0, MAC: "02:00:00:00:aa:00", Addresses: []string{"198.18.0.1/24"}},
			{Name: "p1", Index: 1, MAC: "02:00:00:00:aa:01", Addresses: []string{"198.18.1.1/24"}},
		},
		Tables: map[string]map[string]json.RawMessage{"routes": {}, "arp": {}}}
	if noCache {
		c.Config = json.RawMessage(`{"disable_route_cache":true}`)
	}
	c.SetRow("arp", "198.18.1.2", estimate.Row(Neighbor{IP: "198.18.1.2", MAC: "02:00:00:00:00:11"}))
	c.SetRow("routes", "198.19.0.0/16", estimate.Row(Route{Prefix: "198.19.0.0/16", NextHop: "198.18.1.2"}))
	for i := 1; i < routes; i++ {
		p := netip.PrefixFrom(netip.AddrFrom4([4]byte{10, byte(i >> 8), byte(i), 0}), 24).String()
		c.SetRow("routes", p, estimate.Row(Route{Prefix: p, NextHop: "198.18.1.2"}))
	}
	return estimate.Case{Name: name, Cube: c, InPort: "p0",
		Frame: estimate.Frame(estimate.FrameSpec{DstMAC: "02:00:00:00:aa:00", Src: "198.18.0.10", Dst: "198.19.0.1", Sport: 1234, Dport: 5678})}
}

// costCases: one route and 1,000, with and without the route cache; held
// out, 10, 300 and 5,000.
func costCases(holdout bool) []estimate.Case {
	if holdout {
		return []estimate.Case{
			costCase("10 routes, route cache", 10, false),
			costCase("300 routes, no route cache", 300, true),
			costCase("5,000 routes, no route cache", 5000, true),
		}
	}
	return []estimate.Case{
		costCase("1 route, route cache", 1, false),
		costCase("1 route, no route cache", 1, true),
		costCase("64 routes, no route cache", 64, true),
		costCase("1,000 routes, no route cache", 1000, true),
		costCase("1,000 routes, route cache", 1000, false),
	}
}
