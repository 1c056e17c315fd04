package router

// Workloads (pods) plugged straight into a router: each one on a port of
// its own, a point-to-point link. The router's side of the link is a
// link-local gateway (an IPv4 169.254.0.0/16 address of the port's own, as
// a /32, and the port's IPv6 link-local address); the workload has its
// addresses as /32 and /128, an on-link route to the gateway and its
// default route through it (as Calico's and Cilium's pods and the ptp
// reference plugin do); the router reaches each of the workload's
// addresses by an on-link host route out of that port. The workload's
// subnet is nowhere: two pods of one router talk through it, routed.

import (
	"encoding/json"
	"net/netip"
	"slices"

	"github.com/edgenf/edgenf/internal/cube"
)

// plugGateways are where the ports' IPv4 gateways come from. 169.254.0.0/24
// and 169.254.255.0/24 are reserved (RFC 3927 2.1); Calico's gateway is
// 169.254.1.1 too.
var plugGateways = netip.MustParsePrefix("169.254.0.0/16")

// firstGateway is the first IPv4 gateway handed out.
var firstGateway = netip.MustParseAddr("169.254.1.1")

// plug readies a router port for a workload with addrs, its source check on;
// see cube.Type.Plug.
func plug(c *cube.Cube, port string, addrs []netip.Prefix, given []netip.Addr) ([]netip.Addr, error) {
	p := c.Port(port)
	if p == nil {
		return nil, cube.NotFound("port", "cube %s has no port %q", c.Name, port)
	}
	// The workload may send only from its own addresses (srccheck.go),
	// unless the port's check was turned off on purpose.
	pc, _, err := portConfig(p)
	if err != nil {
		return nil, err
	}
	if pc.SourceCheck == "" {
		pc.SourceCheck = "on"
		p.Config, _ = json.Marshal(pc)
	}
	var has4, has6 bool
	for _, a := range addrs {
		has4, has6 = has4 || a.Addr().Is4(), has6 || a.Addr().Is6()
	}
	if !has4 && !has6 {
		return nil, cube.Errorf("addresses", "a workload on router %s needs an address to be routed to (its IPAM gave none)", c.Name)
	}
	var gw4, gw6 netip.Addr
	for _, g := range given {
		switch {
		case g.Is4() && plugGateways.Contains(g):
			gw4 = g
		case g.Is6() && g.IsLinkLocalUnicast():
			gw6 = g
		default:
			return nil, cube.Errorf("gateways", "%s: a workload's gateway on a router is an IPv4 169.254.0.0/16 address or the port's IPv6 link-local address", g)
		}
	}
	var out []netip.Addr
	if has4 {
		if !gw4.IsValid() {
			var err error
			if gw4, err = freeGateway(c); err != nil {
				return nil, err
			}
		}
		gw := netip.PrefixFrom(gw4, 32).String()
		if !slices.Contains(p.Addresses, gw) {
			p.Addresses = append(p.Addresses, gw)
		}
		out = append(out, gw4)
	}
	if has6 {
		ll := linkLocal(PortMAC(c, p))
		if gw6.IsValid() && gw6 != ll {
			return nil, cube.Conflict("gateways", "%s is not port %s's link-local address (%s): its MAC changed", gw6, port, ll)
		}
		out = append(out, ll)
	}
	for _, a := range addrs {
		host := netip.PrefixFrom(a.Addr(), a.Addr().BitLen())
		key := host.String()
		if raw, ok := c.Tables[routesTable.Name][key]; ok {
			var r Route
			if json.Unmarshal(raw, &r) == nil && r.Port == port && r.NextHop == "" {
				continue // re-plugged: the route is there
			}
			return nil, cube.Conflict("addresses", "%s is routed by cube %s already (route %s): two workloads with one address? (check the IPAM configuration)", a.Addr(), c.Name, raw)
		}
		raw, _ := json.Marshal(Route{Prefix: key, Port: port})
		c.SetRow(routesTable.Name, key, raw)
	}
	return out, nil
}

// unplug removes the routes out of a workload's port (the port is the
// workload's: so is every route through it).
func unplug(c *cube.Cube, port string) {
	for key, raw := range c.Tables[routesTable.Name] {
		var r Route
		if json.Unmarshal(raw, &r) == nil && r.Port == port {
			c.SetRow(routesTable.Name, key, nil)
		}
	}
}

// freeGateway is the first IPv4 gateway address no port of c has.
func freeGateway(c *cube.Cube) (netip.Addr, error) {
	used := map[netip.Addr]bool{}
	for _, p := range c.Ports {
		for _, a := range p.Addresses {
			if pf, err := netip.ParsePrefix(a); err == nil {
				used[pf.Addr()] = true
			}
		}
	}
	for a := firstGateway; plugGateways.Contains(a); a = a.Next() {
		if !used[a] && a.As4()[3] != 0 && a.As4()[3] != 255 {
			return a, nil
		}
	}
	return netip.Addr{}, cube.Conflict("ports", "cube %s: no free gateway address left in %s", c.Name, plugGateways)
}
