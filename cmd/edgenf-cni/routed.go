package main

// A pod on a router cube is on a point-to-point link of its own (as the ptp
// reference plugin, Calico and Cilium make them): its addresses are /32
// and /128, its gateways the router port's link-local addresses (an IPv4
// 169.254.0.0/16 one, reached by an on-link route, and the port's IPv6
// link-local one), and every route it has goes through them. The router
// reaches it by host routes edgenfd added with the port.

import (
	"fmt"
	"net"
	"net/netip"
	"slices"

	"github.com/containernetworking/cni/pkg/types"
	current "github.com/containernetworking/cni/pkg/types/100"
	"github.com/containernetworking/plugins/pkg/ns"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// routeVia rewrites an IPAM result for a pod on a router port with
// gateways: host addresses, the gateway of their family, the IPAM's routes
// (its gateways are the subnet's, which the pod is not on) through it, and
// a default route per family when the IPAM gives none.
func routeVia(res *current.Result, gateways []string) error {
	gw := map[bool]net.IP{} // IPv4? → gateway
	for _, g := range gateways {
		a, err := netip.ParseAddr(g)
		if err != nil {
			return types.NewError(types.ErrInternal, fmt.Sprintf("edgenfd gave the gateway %q", g), "")
		}
		gw[a.Is4()] = net.IP(a.AsSlice())
	}
	has := map[bool]bool{}
	for _, ipc := range res.IPs {
		v4 := ipc.Address.IP.To4() != nil
		if gw[v4] == nil {
			return types.NewError(types.ErrInternal, fmt.Sprintf("edgenfd gave no gateway for %s", ipc.Address.IP), "")
		}
		bits := 128
		if v4 {
			bits = 32
		}
		ipc.Address.Mask = net.CIDRMask(bits, bits)
		ipc.Gateway = gw[v4]
		has[v4] = true
	}
	var routes []*types.Route
	routed := map[bool]bool{}
	for _, r := range res.Routes {
		v4 := r.Dst.IP.To4() != nil
		if !has[v4] {
			continue // no address of that family: no route
		}
		rr := *r
		rr.GW = gw[v4]
		routes = append(routes, &rr)
		routed[v4] = true
	}
	for _, v4 := range []bool{true, false} {
		if has[v4] && !routed[v4] {
			dst := net.IPNet{IP: net.IPv6zero, Mask: net.CIDRMask(0, 128)}
			if v4 {
				dst = net.IPNet{IP: net.IPv4zero.To4(), Mask: net.CIDRMask(0, 32)}
			}
			routes = append(routes, &types.Route{Dst: dst, GW: gw[v4]})
		}
	}
	res.Routes = routes
	return nil
}

// configureRouted gives the pod's interface its host addresses, the
// on-link route to its IPv4 gateway and its routes through the gateways.
func configureRouted(netns ns.NetNS, ifName string, res *current.Result) error {
	err := netns.Do(func(ns.NetNS) error {
		l, err := netlink.LinkByName(ifName)
		if err != nil {
			return err
		}
		idx := l.Attrs().Index
		for _, ipc := range res.IPs {
			a := &netlink.Addr{IPNet: &ipc.Address}
			if ipc.Address.IP.To4() == nil {
				a.Flags = unix.IFA_F_NODAD // addresses from IPAM are unique
			}
			if err := netlink.AddrAdd(l, a); err != nil {
				return fmt.Errorf("address %s: %w", &ipc.Address, err)
			}
			if ipc.Address.IP.To4() != nil {
				on := &netlink.Route{LinkIndex: idx, Scope: netlink.SCOPE_LINK, Dst: &net.IPNet{IP: ipc.Gateway, Mask: net.CIDRMask(32, 32)}}
				if err := netlink.RouteReplace(on); err != nil {
					return fmt.Errorf("route to the gateway %s: %w", ipc.Gateway, err)
				}
			}
		}
		for _, r := range res.Routes {
			dst := r.Dst
			if err := netlink.RouteAdd(&netlink.Route{LinkIndex: idx, Dst: &dst, Gw: r.GW, Priority: r.Priority}); err != nil {
				return fmt.Errorf("route %s via %s: %w", &dst, r.GW, err)
			}
		}
		return nil
	})
	if err != nil {
		return types.NewError(types.ErrInternal, fmt.Sprintf("configure %s: %v", ifName, err), "")
	}
	return nil
}

// validateRoutedIPs checks that a routed pod's interface has its host
// addresses and the on-link routes to its IPv4 gateways (CHECK; the
// reference plugins' check looks for the route of the address's subnet,
// which a host address has none of).
func validateRoutedIPs(ifName string, ips []*current.IPConfig) error {
	l, err := netlink.LinkByName(ifName)
	if err != nil {
		return err
	}
	have, err := netlink.AddrList(l, netlink.FAMILY_ALL)
	if err != nil {
		return err
	}
	for _, ipc := range ips {
		if !slices.ContainsFunc(have, func(a netlink.Addr) bool { return a.IPNet.String() == ipc.Address.String() }) {
			return fmt.Errorf("interface %s lacks the address %s", ifName, &ipc.Address)
		}
		if ipc.Address.IP.To4() == nil || ipc.Gateway == nil {
			continue
		}
		gw := &net.IPNet{IP: ipc.Gateway, Mask: net.CIDRMask(32, 32)}
		rs, err := netlink.RouteListFiltered(netlink.FAMILY_V4, &netlink.Route{Dst: gw, LinkIndex: l.Attrs().Index}, netlink.RT_FILTER_DST|netlink.RT_FILTER_OIF)
		if err != nil {
			return err
		}
		if len(rs) == 0 {
			return fmt.Errorf("interface %s has no route to its gateway %s", ifName, ipc.Gateway)
		}
	}
	return nil
}
