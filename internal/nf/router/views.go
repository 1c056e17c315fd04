package router

import (
	"fmt"
	"net"
	"net/netip"
	"sort"
	"time"

	"github.com/edgenf/edgenf/internal/cube"
)

// RouteInfo is one row of the effective routing table.
type RouteInfo struct {
	Prefix  string `json:"prefix"`
	NextHop string `json:"next_hop,omitempty"`
	Port    string `json:"port"`
	Type    string `json:"type"` // connected or static
}

// ARPInfo is one row of the ARP table.
type ARPInfo struct {
	IP     string `json:"ip"`
	MAC    string `json:"mac,omitempty"`
	Port   string `json:"port"`
	Type   string `json:"type"`            // static, dynamic or incomplete
	State  string `json:"state,omitempty"` // reachable, probing; incomplete: resolving
	AgeSec int    `json:"age_sec,omitempty"`
	Queued int    `json:"queued,omitempty"` // incomplete: packets waiting
}

func portName(c *cube.Cube, idx int) string {
	if p := c.PortByIndex(idx); p != nil {
		return p.Name
	}
	return fmt.Sprint(idx)
}

func listRoutes(h cube.Handle, c *cube.Cube) (any, error) {
	m, err := h.Map("rt_routes")
	if err != nil {
		return nil, err
	}
	out := []RouteInfo{}
	var k kRouteKey
	var v kRoute
	it := m.Iterate()
	for it.Next(&k, &v) {
		ri := RouteInfo{Prefix: netip.PrefixFrom(netip.AddrFrom4(k.Addr), int(k.PrefixLen)).String(), Port: portName(c, int(v.Port)), Type: "static"}
		if v.Flags&routeConnected != 0 {
			ri.Type = "connected"
		}
		if v.NextHop != [4]byte{} {
			ri.NextHop = netip.AddrFrom4(v.NextHop).String()
		}
		out = append(out, ri)
	}
	if err := it.Err(); err != nil {
		return nil, err
	}
	r6, err := listRoutes6(h, c)
	if err != nil {
		return nil, err
	}
	out = append(out, r6...)
	sort.Slice(out, func(i, j int) bool {
		a, _ := netip.ParsePrefix(out[i].Prefix)
		b, _ := netip.ParsePrefix(out[j].Prefix)
		if c := a.Addr().Compare(b.Addr()); c != 0 {
			return c < 0
		}
		return a.Bits() < b.Bits()
	})
	return out, nil
}

func (ctl *controller) listARP(h cube.Handle, c *cube.Cube) (any, error) {
	ctl.mu.Lock()
	defer ctl.mu.Unlock()
	m, err := h.Map("rt_arp")
	if err != nil {
		return nil, err
	}
	now := ctl.now()
	out := []ARPInfo{}
	var k [4]byte
	var v kARP
	it := m.Iterate()
	for it.Next(&k, &v) {
		a := netip.AddrFrom4(k)
		ai := ARPInfo{IP: a.String(), MAC: net.HardwareAddr(v.MAC[:]).String(), Port: portName(c, int(v.Port)), Type: "static"}
		if v.Flags&arpStatic == 0 {
			ai.Type, ai.State = "dynamic", "reachable"
			if n := ctl.dyn[a]; n != nil {
				ai.AgeSec = int(now.Sub(n.updated) / time.Second)
				if n.probing {
					ai.State = "probing"
				}
			}
		}
		out = append(out, ai)
	}
	n6, err := ctl.listNeigh6(h, c)
	if err != nil {
		return nil, err
	}
	out = append(out, n6...)
	for a, p := range ctl.pending {
		out = append(out, ARPInfo{IP: a.WithZone("").String(), Port: portName(c, p.port), Type: "incomplete", State: "resolving", Queued: len(p.frames)})
	}
	sort.Slice(out, func(i, j int) bool {
		a, _ := netip.ParseAddr(out[i].IP)
		b, _ := netip.ParseAddr(out[j].IP)
		return a.Less(b)
	})
	return out, nil
}

// FlushArgs select what arp_flush removes.
type FlushArgs struct {
	// Port limits the flush to entries on this port.
	Port string `json:"port,omitempty" format:"name"`
}

func (ctl *controller) flushARP(h cube.Handle, c *cube.Cube, args any) (any, error) {
	port := -1
	if a, ok := args.(*FlushArgs); ok && a.Port != "" {
		p := c.Port(a.Port)
		if p == nil {
			return nil, cube.NotFound("port", "cube %s has no port %q", c.Name, a.Port)
		}
		port = p.Index
	}
	ctl.mu.Lock()
	defer ctl.mu.Unlock()
	m, err := h.Map("rt_arp")
	if err != nil {
		return nil, err
	}
	n := 0
	for a, ne := range ctl.dyn {
		if port >= 0 && ne.port != port {
			continue
		}
		ctl.forget(h, m, a, ne.port)
		n++
	}
	return map[string]int{"flushed": n}, nil
}

func (ctl *controller) counters() Counters {
	ctl.mu.Lock()
	defer ctl.mu.Unlock()
	return ctl.stats
}
