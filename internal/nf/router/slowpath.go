package router

import (
	"encoding/binary"
	"net"
	"net/netip"
	"time"

	"github.com/edgenf/edgenf/internal/cube"
)

// HandlePunt is the router's slow path: ARP and neighbour discovery
// learning, next-hop resolution with a bounded queue, ICMP and ICMPv6
// errors, router advertisements.
func (ctl *controller) HandlePunt(h cube.Handle, c *cube.Cube, p cube.Punt) {
	ctl.mu.Lock()
	defer ctl.mu.Unlock()
	switch p.Reason {
	case puntARP:
		ctl.arpIn(h, p)
	case puntARPMiss:
		var b [4]byte
		binary.LittleEndian.PutUint32(b[:], p.Arg) // the kernel's be32, read as a host u32
		ctl.resolve(h, netip.AddrFrom4(b), p)
	case puntND:
		ctl.ndIn(h, p)
	case puntNDMiss:
		ctl.resolve6(h, int(p.Arg), p)
	case puntRS:
		ctl.rsIn(h, p)
	case puntTTL:
		if isIPv6(p.Frame) {
			ctl.icmp6Error(h, p, 3, 0, 0) // hop limit exceeded in transit
		} else {
			ctl.icmpError(h, p, 11, 0, 0) // time exceeded in transit
		}
	case puntNoRoute:
		if isIPv6(p.Frame) {
			ctl.icmp6Error(h, p, 1, 0, 0) // no route to destination
		} else {
			ctl.icmpError(h, p, 3, 0, 0) // net unreachable
		}
	case puntTooBig: // the out port's MTU in the arg
		if isIPv6(p.Frame) {
			ctl.icmp6Error(h, p, 2, 0, p.Arg) // packet too big (RFC 4443 3.2)
		} else {
			ctl.icmpError(h, p, 3, 4, p.Arg&0xffff) // fragmentation needed, next-hop MTU (RFC 1191)
		}
	}
}

func isIPv6(f []byte) bool { return len(f) >= 14 && binary.BigEndian.Uint16(f[12:]) == 0x86dd }

// unreachable answers a packet whose next hop could not be resolved.
func (ctl *controller) unreachable(h cube.Handle, q queued) {
	p := cube.Punt{InPort: q.inPort, Frame: q.frame, PktLen: len(q.frame)}
	if isIPv6(q.frame) {
		ctl.icmp6Error(h, p, 1, 3, 0) // address unreachable
	} else {
		ctl.icmpError(h, p, 3, 1, 0) // host unreachable
	}
}

// arpIn learns from an ARP reply addressed to the router.
func (ctl *controller) arpIn(h cube.Handle, p cube.Punt) {
	f := p.Frame
	if len(f) < 14+28 || binary.BigEndian.Uint16(f[12:]) != 0x0806 {
		return
	}
	a := f[14:]
	sha := net.HardwareAddr(append([]byte(nil), a[8:14]...))
	sip := netip.AddrFrom4([4]byte(a[14:18]))
	if sha[0]&1 != 0 || isZero(sha) {
		return
	}
	cn, ok := ctl.linkOf(sip)
	if !ok || cn.Port != p.InPort || cn.Addr == sip || ctl.static[sip] {
		return
	}
	if err := ctl.learn(h, sip, sha, cn.Port); err != nil {
		h.Logf("arp: learn %s: %v", sip, err)
		return
	}
	ctl.releaseLocked(h, sip)
}

func (ctl *controller) learn(h cube.Handle, ip netip.Addr, mac net.HardwareAddr, port int) error {
	v := kARP{Port: uint32(port)}
	copy(v.MAC[:], mac)
	if ip.Is6() {
		if err := ctl.putNeigh6(h, ip.WithZone(""), port, v); err != nil {
			return err
		}
	} else {
		m, err := h.Map("rt_arp")
		if err != nil {
			return err
		}
		if err := m.Put(addr4(ip), v); err != nil {
			return err
		}
	}
	if ctl.dyn[ip] == nil {
		ctl.stats.ARPLearned++
	}
	ctl.dyn[ip] = &neigh{mac: mac, port: port, updated: ctl.now()}
	return nil
}

// releaseLocked sends the packets that waited for ip back through the fast
// path, which now knows the next hop.
func (ctl *controller) releaseLocked(h cube.Handle, ip netip.Addr) {
	pd := ctl.pending[ip]
	if pd == nil {
		return
	}
	delete(ctl.pending, ip)
	for _, q := range pd.frames {
		if err := h.Inject(q.inPort, q.frame); err != nil {
			h.Logf("release queued packet: %v", err)
			continue
		}
		ctl.stats.ReleasedPackets++
	}
}

// resolve queues a packet whose next hop has no ARP entry and asks for it.
func (ctl *controller) resolve(h cube.Handle, nh netip.Addr, p cube.Punt) {
	cn, ok := ctl.linkOf(nh)
	if !ok {
		ctl.stats.QueueDrops++
		return
	}
	if cn.Prefix.Bits() <= 30 && (nh == cn.Prefix.Addr() || nh == lastAddr(cn.Prefix)) {
		return // directed broadcast or network address: not forwarded
	}
	ctl.queue(h, nh, cn.Port, p)
}

// queue holds a packet for next hop nh (out of port) and starts resolving
// it.
func (ctl *controller) queue(h cube.Handle, nh netip.Addr, port int, p cube.Punt) {
	pd := ctl.pending[nh]
	if pd == nil {
		if len(ctl.pending) >= maxPending {
			ctl.stats.QueueDrops++
			return
		}
		pd = &pending{port: port}
		ctl.pending[nh] = pd
	}
	if len(p.Frame) == p.PktLen && len(pd.frames) < ctl.cfg.queueLen() {
		pd.frames = append(pd.frames, queued{inPort: p.InPort, frame: p.Frame})
		ctl.stats.QueuedPackets++
	} else {
		ctl.stats.QueueDrops++
	}
	if pd.tries == 0 {
		ctl.solicit(h, nh, pd.port, nil)
		pd.tries = 1
		pd.lastReq = ctl.now()
	}
}

// solicit asks for ip's MAC on port: ARP or neighbour solicitation;
// broadcast, or unicast to dst when probing a known neighbour.
func (ctl *controller) solicit(h cube.Handle, ip netip.Addr, port int, dst net.HardwareAddr) {
	if ip.Is6() {
		ctl.sendNS(h, port, ip, dst)
		return
	}
	if cn, ok := ctl.linkOf(ip); ok {
		ctl.sendARPRequest(h, cn, ip, dst)
	}
}

// Tick retries and gives up resolutions, and ages learned entries.
func (ctl *controller) Tick(h cube.Handle, c *cube.Cube, now time.Time) {
	ctl.mu.Lock()
	defer ctl.mu.Unlock()
	for nh, pd := range ctl.pending {
		if now.Sub(pd.lastReq) < 900*time.Millisecond {
			continue
		}
		_, ok := ctl.linkOf(nh)
		ok = ok || nh.Is6() && nh.IsLinkLocalUnicast()
		if !ok || pd.tries >= arpRetries {
			// Unresolvable: host unreachable for what waited.
			delete(ctl.pending, nh)
			ctl.stats.ResolveFailures++
			for _, q := range pd.frames {
				ctl.unreachable(h, q)
			}
			continue
		}
		ctl.solicit(h, nh, pd.port, nil)
		pd.tries++
		pd.lastReq = now
	}
	timeout := time.Duration(ctl.cfg.arpTimeout()) * time.Second
	m, err := h.Map("rt_arp")
	if err != nil {
		return
	}
	for ip, n := range ctl.dyn {
		switch {
		case n.probing && now.Sub(n.probedAt) >= probeWait:
			ctl.forget(h, m, ip, n.port)
		case !n.probing && now.Sub(n.updated) >= timeout:
			// Still there? Ask it directly; the entry stays usable
			// meanwhile, so active flows are not interrupted.
			n.probing, n.probedAt = true, now
			ctl.solicit(h, ip, n.port, n.mac)
		}
	}
	ctl.tickRA(h, now)
	ctl.followMTUs(h, now)
}

// sendARPRequest asks who has ip on the port of cn: broadcast, or unicast
// to dst when probing a known neighbour.
func (ctl *controller) sendARPRequest(h cube.Handle, cn connected, ip netip.Addr, dst net.HardwareAddr) {
	mac := ctl.macs[cn.Port]
	if mac == nil {
		return
	}
	f := make([]byte, 42)
	if dst == nil {
		copy(f[0:6], []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
	} else {
		copy(f[0:6], dst)
	}
	copy(f[6:12], mac)
	binary.BigEndian.PutUint16(f[12:], 0x0806)
	a := f[14:]
	binary.BigEndian.PutUint16(a[0:], 1)      // Ethernet
	binary.BigEndian.PutUint16(a[2:], 0x0800) // IPv4
	a[4], a[5] = 6, 4
	binary.BigEndian.PutUint16(a[6:], 1) // request
	copy(a[8:14], mac)
	if cn.Addr.Is4() { // else an ARP probe, from 0.0.0.0: the link has no IPv4 address
		src := cn.Addr.As4()
		copy(a[14:18], src[:])
	}
	dip := ip.As4()
	copy(a[24:28], dip[:])
	if err := h.Transmit(cn.Port, f); err != nil {
		h.Logf("arp request for %s: %v", ip, err)
		return
	}
	ctl.stats.ARPRequests++
}

// allowICMP takes a token from the ICMP error bucket (rate per second,
// burst of one second's worth).
func (ctl *controller) allowICMP() bool {
	now := ctl.now()
	rate := float64(ctl.cfg.icmpRate())
	if ctl.lastFill.IsZero() {
		ctl.tokens = rate
	} else {
		ctl.tokens += now.Sub(ctl.lastFill).Seconds() * rate
		if ctl.tokens > rate {
			ctl.tokens = rate
		}
	}
	ctl.lastFill = now
	if ctl.tokens < 1 {
		return false
	}
	ctl.tokens--
	return true
}

// icmpError answers the packet in p.Frame (as received on p.InPort) with an
// ICMP error of type/code (rest: the header's last 4 bytes, the next-hop MTU
// of "fragmentation needed"), sent back out of the port it came in by, to
// the MAC it came from (RFC 1812 4.3.2).
func (ctl *controller) icmpError(h cube.Handle, p cube.Punt, typ, code byte, rest uint32) {
	f := p.Frame
	if len(f) < 14+20 || binary.BigEndian.Uint16(f[12:]) != 0x0800 {
		return
	}
	ip := f[14:]
	ihl := int(ip[0]&0x0f) * 4
	if ip[0]>>4 != 4 || ihl < 20 || len(ip) < ihl {
		return
	}
	src := netip.AddrFrom4([4]byte(ip[12:16]))
	dst := netip.AddrFrom4([4]byte(ip[16:20]))
	// Never about ICMP errors, non-first fragments, or to broadcast,
	// multicast, unspecified sources (RFC 1812 4.3.2.7).
	if binary.BigEndian.Uint16(ip[6:])&0x1fff != 0 || !src.IsGlobalUnicast() && !src.IsPrivate() && !isBenchmarkNet(src) ||
		dst.IsMulticast() || f[0]&1 != 0 {
		return
	}
	if ip[9] == 1 && len(ip) > ihl {
		switch ip[ihl] {
		case 3, 4, 5, 11, 12:
			return
		}
	}
	cn, ok := onLink(ctl.conn, src)
	if !ok || cn.Port != p.InPort {
		// Source not on the ingress link: answer from the ingress
		// port's first address.
		ok = false
		for _, x := range ctl.conn {
			if x.Port == p.InPort {
				cn, ok = x, true
				break
			}
		}
		if !ok {
			return
		}
	}
	mac := ctl.macs[p.InPort]
	if mac == nil {
		return
	}
	if !ctl.allowICMP() {
		ctl.stats.ICMPRateLimited++
		return
	}
	tot := int(binary.BigEndian.Uint16(ip[2:]))
	if tot > len(ip) || tot < ihl {
		tot = len(ip)
	}
	quote := ip[:min(tot, icmpQuoteMax)]
	out := make([]byte, 14+20+8+len(quote))
	copy(out[0:6], f[6:12])
	copy(out[6:12], mac)
	binary.BigEndian.PutUint16(out[12:], 0x0800)
	o := out[14:]
	o[0] = 0x45
	o[1] = 0xc0
	binary.BigEndian.PutUint16(o[2:], uint16(20+8+len(quote)))
	binary.BigEndian.PutUint16(o[4:], uint16(ctl.stats.ICMPSent))
	o[8] = 64
	o[9] = 1
	s4 := cn.Addr.As4()
	copy(o[12:16], s4[:])
	copy(o[16:20], ip[12:16])
	binary.BigEndian.PutUint16(o[10:], checksum(o[:20]))
	ic := o[20:]
	ic[0], ic[1] = typ, code
	binary.BigEndian.PutUint32(ic[4:], rest)
	copy(ic[8:], quote)
	binary.BigEndian.PutUint16(ic[2:], checksum(ic))
	if err := h.Transmit(p.InPort, out); err != nil {
		h.Logf("icmp error: %v", err)
		return
	}
	ctl.stats.ICMPSent++
}

func isBenchmarkNet(a netip.Addr) bool {
	return netip.MustParsePrefix("198.18.0.0/15").Contains(a)
}

func checksum(b []byte) uint16 {
	var s uint32
	for i := 0; i+1 < len(b); i += 2 {
		s += uint32(binary.BigEndian.Uint16(b[i:]))
	}
	if len(b)%2 == 1 {
		s += uint32(b[len(b)-1]) << 8
	}
	for s > 0xffff {
		s = (s & 0xffff) + (s >> 16)
	}
	return ^uint16(s)
}
