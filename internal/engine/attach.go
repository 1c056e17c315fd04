package engine

import (
	"net/netip"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/vishvananda/netlink"
)

var _ cube.AttachmentInfo = (*handle)(nil)

// AttachPoint implements cube.AttachmentInfo from the applied topology (the
// one being applied while a change is in progress is not visible yet: callers
// that care, like NAT masquerade, re-check every tick).
func (h *handle) AttachPoint() (string, []netip.Prefix) {
	point := h.e.topo.AttachedTo(h.l.dc.Name)
	if point == "" {
		return "", nil
	}
	ep, err := cube.ParseEndpoint(point)
	if err != nil {
		return point, nil
	}
	var out []netip.Prefix
	if ep.IsCube() {
		c := h.e.topo.Cubes[ep.Cube]
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
	lk, err := netlink.LinkByName(ep.Iface)
	if err != nil {
		return point, nil
	}
	addrs, err := netlink.AddrList(lk, netlink.FAMILY_ALL)
	if err != nil {
		return point, nil
	}
	for _, a := range addrs {
		ip, ok := netip.AddrFromSlice(a.IP)
		if !ok {
			continue
		}
		ones, _ := a.Mask.Size()
		out = append(out, netip.PrefixFrom(ip.Unmap(), ones))
	}
	return point, out
}
