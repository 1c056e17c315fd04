package router

import (
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"
	"sort"
	"time"

	"github.com/edgenf/edgenf/internal/cube"
)

// Router advertisements (RFC 4861 6.2): the per-port settings, their
// validation, and the periodic and solicited advertisements the slow path
// sends. Neighbour discovery proper is in ndp.go.

// RA makes a port send router advertisements, so hosts on its link
// configure addresses (SLAAC) and a default route by themselves.
type RA struct {
	Port string `json:"port" format:"name"`
	// Prefixes advertised (on-link, autonomous); default: the port's
	// IPv6 subnets of length 64.
	Prefixes []string `json:"prefixes,omitempty" format:"ipv6-prefix" doc:"global IPv6 prefixes (link-local, multicast or IPv4-mapped: 422); absent: the port's IPv6 /64 subnets (none: 409)"`
	// Interval between unsolicited advertisements, seconds (4..1800,
	// default 200); solicitations are answered at once.
	Interval int `json:"interval,omitempty" minimum:"4" maximum:"1800"`
	// Lifetime as a default router, seconds (0..9000, default 3 ×
	// interval; 0: not a default router).
	Lifetime *int `json:"lifetime,omitempty" minimum:"0" maximum:"9000"`
	// Managed and Other are the M and O flags (addresses, other
	// configuration from DHCPv6).
	Managed bool `json:"managed,omitempty"`
	Other   bool `json:"other,omitempty"`
	// DNS servers advertised in an RDNSS option (RFC 8106), so hosts
	// find a resolver without DHCPv6.
	DNS []string `json:"dns,omitempty" format:"ipv6" maxItems:"3" doc:"recursive DNS servers (RFC 8106 RDNSS), at most 3 IPv6 addresses; not multicast, unspecified or IPv4-mapped (422 otherwise)"`
	// DNSLifetime is how long hosts may use them, seconds (default 3 ×
	// interval, RFC 8106 5.1: at least the interval; 0 withdraws them).
	DNSLifetime *int `json:"dns_lifetime,omitempty" minimum:"0" maximum:"86400" doc:"seconds the servers may be used: default 3 × interval; 0 withdraws them; else at least interval (422 otherwise)"`
	// MTU advertised in an MTU option (RFC 4861 4.6.4); 0: none.
	MTU int `json:"mtu,omitempty" minimum:"0" maximum:"65535" doc:"link MTU advertised to the hosts (RFC 4861 MTU option): 1280..65535, 0 or absent: none (422 for 1..1279)"`
}

const (
	defaultRAInterval = 200
	raValid           = 2592000 // prefix valid lifetime (RFC 4861 default)
	raPreferred       = 604800
)

// Validate checks the advertisement against the port's addresses.
func (r *RA) Validate(c *cube.Cube) error {
	p := c.Port(r.Port)
	if p == nil {
		return cube.NotFound("port", "cube %s has no port %q", c.Name, r.Port)
	}
	if r.Interval == 0 {
		r.Interval = defaultRAInterval
	}
	if r.Interval < 4 || r.Interval > 1800 {
		return cube.Errorf("interval", "%d out of range 4..1800 seconds", r.Interval)
	}
	if r.Lifetime == nil {
		l := min(3*r.Interval, 9000)
		r.Lifetime = &l
	}
	if *r.Lifetime < 0 || *r.Lifetime > 9000 {
		return cube.Errorf("lifetime", "%d out of range 0..9000 seconds", *r.Lifetime)
	}
	if err := r.validateOptions(); err != nil {
		return err
	}
	conn, err := connectedOf(c)
	if err != nil {
		return cube.Errorf("port", "the cube's port addresses are invalid: %v", err)
	}
	if len(r.Prefixes) == 0 {
		for _, cn := range conn {
			if cn.Port == p.Index && cn.Addr.Is6() && cn.Prefix.Bits() == 64 {
				r.Prefixes = append(r.Prefixes, cn.Prefix.String())
			}
		}
		if len(r.Prefixes) == 0 {
			return cube.Conflict("prefixes", "port %s has no IPv6 /64 subnet to advertise: give its address or the prefixes", r.Port)
		}
		return nil
	}
	for i, s := range r.Prefixes {
		pf, err := netip.ParsePrefix(s)
		if err != nil || !pf.Addr().Is6() {
			return cube.Errorf(fmt.Sprintf("prefixes[%d]", i), "invalid IPv6 prefix %q", s)
		}
		if pf.Masked() != pf {
			return cube.Unprocessable(fmt.Sprintf("prefixes[%d]", i), "%s has host bits set: did you mean %s?", s, pf.Masked())
		}
		if pf.Addr().IsLinkLocalUnicast() || pf.Addr().IsMulticast() || pf.Addr().Is4In6() {
			return cube.Unprocessable(fmt.Sprintf("prefixes[%d]", i), "%s is not a global prefix", s)
		}
		r.Prefixes[i] = pf.String()
	}
	return nil
}

// validateOptions checks the RDNSS and MTU options.
func (r *RA) validateOptions() error {
	if len(r.DNS) > 3 {
		return cube.Errorf("dns", "%d servers: at most 3", len(r.DNS))
	}
	for i, s := range r.DNS {
		a, err := netip.ParseAddr(s)
		if err != nil || !a.Is6() || a.Zone() != "" {
			return cube.Errorf(fmt.Sprintf("dns[%d]", i), "invalid IPv6 address %q", s)
		}
		if a.IsMulticast() || a.IsUnspecified() || a.Is4In6() {
			return cube.Unprocessable(fmt.Sprintf("dns[%d]", i), "%s is not a unicast address a host can query", s)
		}
		r.DNS[i] = a.String()
	}
	if r.DNSLifetime == nil && len(r.DNS) > 0 {
		l := 3 * r.Interval
		r.DNSLifetime = &l
	}
	if l := r.DNSLifetime; l != nil {
		if *l < 0 || *l > 86400 {
			return cube.Errorf("dns_lifetime", "%d out of range 0..86400 seconds", *l)
		}
		if *l != 0 && *l < r.Interval {
			return cube.Unprocessable("dns_lifetime", "%d s is shorter than the interval (%d s): hosts would drop the servers between advertisements (RFC 8106 5.1)", *l, r.Interval)
		}
		if len(r.DNS) == 0 {
			return cube.Unprocessable("dns_lifetime", "set without dns servers")
		}
	}
	if r.MTU != 0 && (r.MTU < 1280 || r.MTU > 65535) {
		return cube.Unprocessable("mtu", "%d: an IPv6 link MTU is 1280..65535", r.MTU)
	}
	return nil
}

var raTable = cube.Table{
	Name: "ra",
	Doc:  "Router advertisements per port (RFC 4861): prefixes for SLAAC, flags, lifetimes; solicitations are answered at once.",
	Item: &RA{},
	Key:  func(v any) string { return v.(*RA).Port },
	Max:  64,
}

func (ctl *controller) syncRA(c *cube.Cube) error {
	rows, err := raTable.Entries(c)
	if err != nil {
		return err
	}
	old := ctl.ra
	ctl.ra = map[int]*RA{}
	if ctl.raSent == nil {
		ctl.raSent = map[int]time.Time{}
	}
	for _, v := range rows {
		r := v.(*RA)
		idx := c.Port(r.Port).Index
		ctl.ra[idx] = r
		if o := old[idx]; o == nil || fmt.Sprint(*o) != fmt.Sprint(*r) {
			delete(ctl.raSent, idx) // changed: advertise at the next tick
		}
	}
	return nil
}

// sendRA advertises port's settings to dst (the all-nodes group, or the
// host that solicited).
func (ctl *controller) sendRA(h cube.Handle, port int, dst netip.Addr, dstMAC net.HardwareAddr) {
	r, mac := ctl.ra[port], ctl.macs[port]
	if r == nil || mac == nil {
		return
	}
	msg := make([]byte, 16, 16+8+32*len(r.Prefixes))
	msg[0] = 134
	msg[4] = 64 // cur hop limit
	if r.Managed {
		msg[5] |= 0x80
	}
	if r.Other {
		msg[5] |= 0x40
	}
	binary.BigEndian.PutUint16(msg[6:], uint16(*r.Lifetime))
	msg = append(msg, 1, 1) // source link-layer address
	msg = append(msg, mac...)
	for _, s := range r.Prefixes {
		pf := netip.MustParsePrefix(s)
		o := make([]byte, 32)
		o[0], o[1], o[2] = 3, 4, byte(pf.Bits())
		o[3] = 0x80 // on-link
		if pf.Bits() == 64 {
			o[3] |= 0x40 // autonomous: hosts form addresses from it
		}
		binary.BigEndian.PutUint32(o[4:], raValid)
		binary.BigEndian.PutUint32(o[8:], raPreferred)
		a := pf.Addr().As16()
		copy(o[16:], a[:])
		msg = append(msg, o...)
	}
	if r.MTU != 0 {
		o := make([]byte, 8)
		o[0], o[1] = 5, 1
		binary.BigEndian.PutUint32(o[4:], uint32(r.MTU))
		msg = append(msg, o...)
	}
	if len(r.DNS) > 0 {
		// RDNSS (RFC 8106 5.1): length in units of 8 bytes, 1 + 2 per server.
		o := make([]byte, 8, 8+16*len(r.DNS))
		o[0], o[1] = 25, byte(1+2*len(r.DNS))
		binary.BigEndian.PutUint32(o[4:], uint32(*r.DNSLifetime))
		for _, s := range r.DNS {
			a := netip.MustParseAddr(s).As16()
			o = append(o, a[:]...)
		}
		msg = append(msg, o...)
	}
	if err := h.Transmit(port, icmp6Frame(dstMAC, mac, linkLocal(mac), dst, 255, msg)); err != nil {
		h.Logf("router advertisement: %v", err)
		return
	}
	ctl.raSent[port] = ctl.now()
	ctl.stats.RASent++
}

// rsIn answers a router solicitation at once.
func (ctl *controller) rsIn(h cube.Handle, p cube.Punt) {
	f := p.Frame
	if len(f) < 14+40+8 || ctl.ra[p.InPort] == nil {
		return
	}
	src := netip.AddrFrom16([16]byte(f[14+8 : 14+24]))
	if src.IsUnspecified() {
		ctl.sendRA(h, p.InPort, allNodes, allNodesMAC)
		return
	}
	ctl.sendRA(h, p.InPort, src, net.HardwareAddr(f[6:12]))
}

var (
	allNodes    = netip.MustParseAddr("ff02::1")
	allNodesMAC = net.HardwareAddr{0x33, 0x33, 0, 0, 0, 1}
)

// tickRA sends the periodic advertisements that are due.
func (ctl *controller) tickRA(h cube.Handle, now time.Time) {
	ports := make([]int, 0, len(ctl.ra))
	for p := range ctl.ra {
		ports = append(ports, p)
	}
	sort.Ints(ports)
	for _, p := range ports {
		if last, ok := ctl.raSent[p]; !ok || now.Sub(last) >= time.Duration(ctl.ra[p].Interval)*time.Second {
			ctl.sendRA(h, p, allNodes, allNodesMAC)
		}
	}
}
