package router

import (
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"time"

	"github.com/cilium/ebpf"
	"github.com/edgenf/edgenf/internal/cube"
)

// IPv6: the tables (rt_addrs6, rt_routes6, rt_neigh6 in router.bpf.c), the
// neighbour discovery slow path (RFC 4861: resolution, learning, probing),
// ICMPv6 errors (RFC 4443). Router advertisements are in ra.go.

// linkLocal is a port's link-local address: fe80::/64 and the modified
// EUI-64 of its MAC (RFC 4291 2.5.1).
func linkLocal(mac net.HardwareAddr) netip.Addr {
	var b [16]byte
	b[0], b[1] = 0xfe, 0x80
	b[8], b[9], b[10] = mac[0]^0x02, mac[1], mac[2]
	b[11], b[12] = 0xff, 0xfe
	b[13], b[14], b[15] = mac[3], mac[4], mac[5]
	return netip.AddrFrom16(b)
}

// nkey is how the slow path names a neighbour: link-local addresses carry
// their port as zone (they are unique per link only).
func nkey(a netip.Addr, port int) netip.Addr {
	if a.Is6() && a.IsLinkLocalUnicast() {
		return a.WithZone(strconv.Itoa(port))
	}
	return a.WithZone("")
}

func route6Key(p netip.Prefix) kRoute6Key {
	return kRoute6Key{PrefixLen: uint32(p.Bits()), Addr: p.Addr().As16()}
}

// staticRoute6 converts a validated IPv6 route to its kernel form.
func staticRoute6(c *cube.Cube, conn []connected, r *Route) (kRoute6Key, kRoute6) {
	pf, _ := netip.ParsePrefix(r.Prefix)
	v := kRoute6{}
	if r.Port != "" {
		v.Port = uint32(c.Port(r.Port).Index)
	}
	if r.NextHop != "" {
		nh, _ := netip.ParseAddr(r.NextHop)
		if cn, ok := onLink(conn, nh); ok && !nh.IsLinkLocalUnicast() {
			v.Port = uint32(cn.Port)
		}
		v.NextHop = nh.As16()
	}
	return route6Key(pf), v
}

func (ctl *controller) putRoute6(h cube.Handle, c *cube.Cube, r *Route) error {
	m, err := h.Map("rt_routes6")
	if err != nil {
		return err
	}
	k, v := staticRoute6(c, ctl.conn, r)
	return ctl.routes6.put(m, k, v)
}

func (ctl *controller) deleteRoute6(h cube.Handle, pf netip.Prefix) error {
	m, err := h.Map("rt_routes6")
	if err != nil {
		return err
	}
	return ctl.routes6.delete(m, route6Key(pf))
}

func (ctl *controller) putNeigh6(h cube.Handle, a netip.Addr, port int, v kARP) error {
	m, err := h.Map("rt_neigh6")
	if err != nil {
		return err
	}
	if err := m.Put(kNeigh6Key{Addr: a.As16(), Port: uint32(port)}, v); err != nil {
		return fmt.Errorf("rt_neigh6 %s: %w", a, err)
	}
	return nil
}

func (ctl *controller) deleteNeigh6(h cube.Handle, a netip.Addr) error {
	m, err := h.Map("rt_neigh6")
	if err != nil {
		return err
	}
	var k kNeigh6Key
	var v kARP
	var del []kNeigh6Key
	it := m.Iterate()
	for it.Next(&k, &v) {
		if netip.AddrFrom16(k.Addr) == a.WithZone("") {
			del = append(del, k)
		}
	}
	for _, k := range del {
		m.Delete(k)
	}
	return nil
}

// syncNeigh6 drops kernel entries that are no longer wanted: static ones
// removed from the table, learned ones whose address left every connected
// subnet; learned entries of an earlier daemon are adopted.
func (ctl *controller) syncNeigh6(h cube.Handle) error {
	m, err := h.Map("rt_neigh6")
	if err != nil {
		return err
	}
	var k kNeigh6Key
	var v kARP
	var stale []kNeigh6Key
	it := m.Iterate()
	for it.Next(&k, &v) {
		a := netip.AddrFrom16(k.Addr)
		_, on := ctl.linkOf(a)
		on = on || a.IsLinkLocalUnicast() && ctl.macs[int(k.Port)] != nil
		key := nkey(a, int(k.Port))
		switch {
		case v.Flags&arpStatic != 0 && !ctl.static[a]:
			stale = append(stale, k)
		case v.Flags&arpStatic == 0 && !on:
			stale = append(stale, k)
			delete(ctl.dyn, key)
		case v.Flags&arpStatic == 0 && ctl.dyn[key] == nil:
			ctl.dyn[key] = &neigh{mac: append(net.HardwareAddr(nil), v.MAC[:]...), port: int(k.Port), updated: ctl.now()}
		}
	}
	for _, k := range stale {
		m.Delete(k)
	}
	return nil
}

// forget removes a learned neighbour of either family.
func (ctl *controller) forget(h cube.Handle, arp *ebpf.Map, a netip.Addr, port int) {
	if a.Is4() {
		arp.Delete(addr4(a))
	} else if m, err := h.Map("rt_neigh6"); err == nil {
		m.Delete(kNeigh6Key{Addr: a.WithZone("").As16(), Port: uint32(port)})
	}
	delete(ctl.dyn, a)
}

func listRoutes6(h cube.Handle, c *cube.Cube) ([]RouteInfo, error) {
	m, err := h.Map("rt_routes6")
	if err != nil {
		return nil, err
	}
	var out []RouteInfo
	var k kRoute6Key
	var v kRoute6
	it := m.Iterate()
	for it.Next(&k, &v) {
		ri := RouteInfo{Prefix: netip.PrefixFrom(netip.AddrFrom16(k.Addr), int(k.PrefixLen)).String(), Port: portName(c, int(v.Port)), Type: "static"}
		if v.Flags&routeConnected != 0 {
			ri.Type = "connected"
		}
		if v.NextHop != [16]byte{} {
			ri.NextHop = netip.AddrFrom16(v.NextHop).String()
		}
		out = append(out, ri)
	}
	return out, it.Err()
}

func (ctl *controller) listNeigh6(h cube.Handle, c *cube.Cube) ([]ARPInfo, error) {
	m, err := h.Map("rt_neigh6")
	if err != nil {
		return nil, err
	}
	now := ctl.now()
	var out []ARPInfo
	var k kNeigh6Key
	var v kARP
	it := m.Iterate()
	for it.Next(&k, &v) {
		a := netip.AddrFrom16(k.Addr)
		ai := ARPInfo{IP: a.String(), MAC: net.HardwareAddr(v.MAC[:]).String(), Port: portName(c, int(k.Port)), Type: "static"}
		if v.Flags&arpStatic == 0 {
			ai.Type, ai.State = "dynamic", "reachable"
			if n := ctl.dyn[nkey(a, int(k.Port))]; n != nil {
				ai.AgeSec = int(now.Sub(n.updated) / time.Second)
				if n.probing {
					ai.State = "probing"
				}
			}
		}
		out = append(out, ai)
	}
	return out, it.Err()
}

// ---- slow path ----

// ndIn learns from a neighbour advertisement addressed to the router.
func (ctl *controller) ndIn(h cube.Handle, p cube.Punt) {
	f := p.Frame
	if len(f) < 14+40+24 || binary.BigEndian.Uint16(f[12:]) != 0x86dd || f[14+6] != 58 || f[14+40] != 136 {
		return
	}
	na := f[14+40:]
	target := netip.AddrFrom16([16]byte(na[8:24]))
	mac := net.HardwareAddr(append([]byte(nil), f[6:12]...))
	for o := na[24:]; len(o) >= 8 && o[1] > 0 && int(o[1])*8 <= len(o); o = o[int(o[1])*8:] {
		if o[0] == 2 && o[1] == 1 { // target link-layer address
			mac = append(net.HardwareAddr(nil), o[2:8]...)
		}
	}
	if mac[0]&1 != 0 || isZero(mac) || ctl.static[target] {
		return
	}
	if !target.IsLinkLocalUnicast() {
		cn, ok := ctl.linkOf(target)
		if !ok || cn.Port != p.InPort || cn.Addr == target {
			return
		}
	}
	key := nkey(target, p.InPort)
	if err := ctl.learn(h, key, mac, p.InPort); err != nil {
		h.Logf("ndp: learn %s: %v", target, err)
		return
	}
	ctl.releaseLocked(h, key)
}

// resolve6 queues a packet whose IPv6 next hop (out of port) has no
// neighbour entry and solicits it.
func (ctl *controller) resolve6(h cube.Handle, port int, p cube.Punt) {
	f := p.Frame
	if len(f) < 14+40 {
		return
	}
	dst := netip.AddrFrom16([16]byte(f[14+24 : 14+40]))
	nh := dst
	if m, err := h.Map("rt_routes6"); err == nil {
		var v kRoute6
		if m.Lookup(kRoute6Key{PrefixLen: 128, Addr: dst.As16()}, &v) == nil && v.NextHop != [16]byte{} {
			nh = netip.AddrFrom16(v.NextHop)
		}
	}
	ctl.queue(h, nkey(nh, port), port, p)
}

// sendNS solicits ip on port: to its solicited-node group, or unicast to
// dst when probing a known neighbour.
func (ctl *controller) sendNS(h cube.Handle, port int, ip netip.Addr, dst net.HardwareAddr) {
	mac := ctl.macs[port]
	if mac == nil {
		return
	}
	src := linkLocal(mac)
	if cn, ok := ctl.linkOf(ip.WithZone("")); ok && cn.Addr.Is6() && !ip.IsLinkLocalUnicast() {
		src = cn.Addr
	}
	t := ip.WithZone("").As16()
	daddr := netip.AddrFrom16([16]byte{0xff, 0x02, 11: 1, 12: 0xff, 13: t[13], 14: t[14], 15: t[15]})
	emac := net.HardwareAddr{0x33, 0x33, 0xff, t[13], t[14], t[15]}
	if dst != nil {
		daddr, emac = ip.WithZone(""), dst
	}
	msg := make([]byte, 32)
	msg[0] = 135
	copy(msg[8:24], t[:])
	msg[24], msg[25] = 1, 1 // source link-layer address
	copy(msg[26:32], mac)
	if err := h.Transmit(port, icmp6Frame(emac, mac, src, daddr, 255, msg)); err != nil {
		h.Logf("neighbour solicitation for %s: %v", ip, err)
		return
	}
	ctl.stats.NSSent++
}

// icmp6Frame builds Ethernet/IPv6/ICMPv6 with msg (checksum filled in).
func icmp6Frame(dstMAC, srcMAC net.HardwareAddr, src, dst netip.Addr, hop byte, msg []byte) []byte {
	f := make([]byte, 14+40+len(msg))
	copy(f[0:6], dstMAC)
	copy(f[6:12], srcMAC)
	binary.BigEndian.PutUint16(f[12:], 0x86dd)
	ip := f[14:]
	ip[0] = 0x60
	binary.BigEndian.PutUint16(ip[4:], uint16(len(msg)))
	ip[6], ip[7] = 58, hop
	s, d := src.As16(), dst.As16()
	copy(ip[8:24], s[:])
	copy(ip[24:40], d[:])
	copy(ip[40:], msg)
	binary.BigEndian.PutUint16(ip[42:], icmp6Checksum(s, d, ip[40:]))
	return f
}

func icmp6Checksum(src, dst [16]byte, msg []byte) uint16 {
	ph := make([]byte, 40, 40+len(msg))
	copy(ph[0:16], src[:])
	copy(ph[16:32], dst[:])
	binary.BigEndian.PutUint32(ph[32:], uint32(len(msg)))
	ph[39] = 58
	m := append([]byte(nil), msg...)
	m[2], m[3] = 0, 0
	return checksum(append(ph, m...))
}

// icmp6Error answers the IPv6 packet in p.Frame with an ICMPv6 error (RFC
// 4443; rest: the header's last 4 bytes, a packet too big's MTU), sent back out of the port it came in by, from the router's address
// on that link (or its link-local one), quoting as much of the packet as
// fits in the minimum MTU.
func (ctl *controller) icmp6Error(h cube.Handle, p cube.Punt, typ, code byte, rest uint32) {
	f := p.Frame
	if len(f) < 14+40 {
		return
	}
	ip := f[14:]
	src := netip.AddrFrom16([16]byte(ip[8:24]))
	dst := netip.AddrFrom16([16]byte(ip[24:40]))
	// Never about ICMPv6 errors, to multicast or unspecified sources, or
	// for multicast destinations (RFC 4443 2.4 e).
	if src.IsMulticast() || src.IsUnspecified() || dst.IsMulticast() || f[0]&1 != 0 {
		return
	}
	if ip[6] == 58 && len(ip) > 40 && ip[40] < 128 {
		return
	}
	mac := ctl.macs[p.InPort]
	if mac == nil {
		return
	}
	from := linkLocal(mac)
	for _, cn := range ctl.conn {
		if cn.Port == p.InPort && cn.Addr.Is6() {
			from = cn.Addr
			if cn.Prefix.Contains(src) {
				break
			}
		}
	}
	if !ctl.allowICMP() {
		ctl.stats.ICMPRateLimited++
		return
	}
	quote := ip[:min(len(ip), 1280-40-8)]
	msg := make([]byte, 8+len(quote))
	msg[0], msg[1] = typ, code
	binary.BigEndian.PutUint32(msg[4:], rest)
	copy(msg[8:], quote)
	if err := h.Transmit(p.InPort, icmp6Frame(net.HardwareAddr(f[6:12]), mac, from, src, 64, msg)); err != nil {
		h.Logf("icmpv6 error: %v", err)
		return
	}
	ctl.stats.ICMPSent++
}
