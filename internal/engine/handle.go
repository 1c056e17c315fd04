package engine

// The cube.Handle the engine gives a controller: its own cube's maps,
// packet I/O and attachment point, nothing of another cube's.

import (
	"fmt"
	"net"
	"net/netip"
	"strings"

	"github.com/cilium/ebpf"
	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/datapath"
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
		c := t.Lookup(ep.Cube)
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
		if c := t.Lookup(ep.Cube); c != nil {
			if p := c.Port(ep.Port); p != nil {
				return point + " " + strings.Join(p.Addresses, ",")
			}
		}
	}
	return point
}

// handle is what a controller gets: its own cube's objects and packet I/O.
type handle struct {
	e *Engine
	l *live
}

func (h *handle) Map(name string) (*ebpf.Map, error) { return h.l.dc.Map(name) }

func (h *handle) Inject(port int, frame []byte) error {
	hop := datapath.Hop{Kind: datapath.DstCube, Slot: h.l.dc.Slot, Port: uint32(port)}
	return h.e.pio.inject(h.l.dc.Hook, hop, frame)
}

func (h *handle) Transmit(port int, frame []byte) error {
	hop, ok := h.l.hops[port]
	if !ok || hop.Kind == datapath.DstNone {
		return fmt.Errorf("port %d of %s is not peered", port, h.l.dc.Name)
	}
	return h.e.pio.inject(h.l.dc.Hook, hop, frame)
}

func (h *handle) PortIface(port int) (*net.Interface, bool) {
	hop, ok := h.l.hops[port]
	if !ok || hop.Kind != datapath.DstIface {
		return nil, false
	}
	i, err := net.InterfaceByIndex(int(hop.Ifindex))
	return i, err == nil
}

func (h *handle) PrepareRedirect(ifindex int) error { return h.e.dp.EnsureRedirectTarget(ifindex) }

func (h *handle) Logf(format string, args ...any) {
	h.e.log.Info(fmt.Sprintf(format, args...), "cube", h.l.dc.Name)
}

// Controller exposes the cube's controller to its NF type's views and
// actions.
func (h *handle) Controller() cube.Controller { return h.l.ctl }
