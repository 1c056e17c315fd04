package engine

import (
	"net/netip"
	"strings"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/vishvananda/netlink"
)

// AttachPoint answers from the topology being applied (during a change) or
// the applied one.
func (h *handle) AttachPoint() (string, []netip.Prefix) {
	t := h.e.current()
	point := t.AttachedTo(h.l.dc.Name)
	if point == "" {
		return "", nil
	}
	ep, err := cube.ParseEndpoint(point)
	if err != nil {
		return point, nil
	}
	var out []netip.Prefix
	if ep.IsCube() {
		c := t.Cubes[ep.Cube]
		if c == nil {
			return point, nil
		}
		if p := c.Port(ep.Port); p != nil {
			for _, a := range p.Addresses {
				if pf, err := netip.ParsePrefix(a); err == nil {
					out = append(out, pf)
				}
			}
		}
		return point, out
	}
	return point, ifaceAddrs(ep.Iface)
}

func ifaceAddrs(name string) []netip.Prefix {
	lk, err := netlink.LinkByName(name)
	if err != nil {
		return nil
	}
	addrs, err := netlink.AddrList(lk, netlink.FAMILY_ALL)
	if err != nil {
		return nil
	}
	var out []netip.Prefix
	for _, a := range addrs {
		ip, ok := netip.AddrFromSlice(a.IP)
		if !ok {
			continue
		}
		ones, _ := a.Mask.Size()
		out = append(out, netip.PrefixFrom(ip.Unmap(), ones))
	}
	return out
}

// attachContext is what a transparent cube's controller may derive from its
// attachment (the point and, for a cube port, its addresses): when it
// changes, the cube is synced again.
func attachContext(t *cube.Topology, name string) string {
	point := t.AttachedTo(name)
	if ep, err := cube.ParseEndpoint(point); err == nil && ep.IsCube() {
		if c := t.Cubes[ep.Cube]; c != nil {
			if p := c.Port(ep.Port); p != nil {
				return point + " " + strings.Join(p.Addresses, ",")
			}
		}
	}
	return point
}
