// Package router is the router NF: an IPv4 and IPv6 router cube with
// connected routes from its ports' addresses, static routes (LPM, > 100k),
// an ARP table and an IPv6 neighbour table with aging and static entries,
// next-hop resolution (ARP, neighbour discovery) through the slow path with a
// bounded queue of waiting packets, ICMP and ICMPv6 echo replies, time
// exceeded and destination unreachable, link-local addresses on every port
// and router advertisements.
package router

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"time"

	"github.com/cilium/ebpf"
	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/datapath"
	"github.com/vishvananda/netlink"
)

// Punt reasons, as in router.bpf.c.
const (
	puntARP     = 1
	puntARPMiss = 2
	puntTTL     = 3
	puntNoRoute = 4
	puntND      = 5
	puntNDMiss  = 6
	puntRS      = 7
	puntTooBig  = 8
)

// Kernel layouts (router.bpf.c).
type kPort struct {
	MAC   [6]byte
	Valid uint16
	MTU   uint16
	Flags uint16
	_     [2]uint16
}

type kRouteKey struct {
	PrefixLen uint32
	Addr      [4]byte
}

type kRoute struct {
	Port    uint32
	NextHop [4]byte
	Flags   uint32
}

const routeConnected = 1

type kARP struct {
	MAC   [6]byte
	Flags uint16
	Port  uint32
}

const arpStatic = 1

type kRoute6Key struct {
	PrefixLen uint32
	Addr      [16]byte
}

type kRoute6 struct {
	Port    uint32
	Flags   uint32
	NextHop [16]byte
}

type kNeigh6Key struct {
	Addr [16]byte
	Port uint32
}

// neigh is a learned ARP entry.
type neigh struct {
	mac      net.HardwareAddr
	port     int
	updated  time.Time
	probing  bool
	probedAt time.Time
}

// queued is a packet waiting for its next hop.
type queued struct {
	inPort int
	frame  []byte
}

// pending is a next hop being resolved.
type pending struct {
	port    int
	frames  []queued
	tries   int
	lastReq time.Time
	dropped int
}

const (
	arpRetries   = 3
	probeWait    = 3 * time.Second
	icmpQuoteMax = 520
)

type controller struct {
	mu      sync.Mutex
	cfg     Config
	conn    []connected
	macs    map[int]net.HardwareAddr
	dyn     map[netip.Addr]*neigh
	static  map[netip.Addr]bool
	pending map[netip.Addr]*pending
	// onlink are the static routes without a next hop (prefix → port).
	onlink map[netip.Prefix]int
	// the route maps and what was written to them.
	routes4 writtenMap[kRouteKey, kRoute]
	routes6 writtenMap[kRoute6Key, kRoute6]
	// the allowed sources of the ports whose source check is on.
	src4 writtenMap[kSrcKey, uint8]
	src6 writtenMap[kSrc6Key, uint8]
	// ra: the ports that send router advertisements, and when they last did.
	ra     map[int]*RA
	raSent map[int]time.Time
	// ICMP error token bucket.
	tokens   float64
	lastFill time.Time
	stats    Counters
	now      func() time.Time
	// ports as written to rt_ports, and the peer interfaces whose MTU
	// they carry (port index → interface), followed by Tick.
	ports    map[int]kPort
	ifPeers  map[int]string
	mtuCheck time.Time
	// linkMTU reads an interface's MTU (netlink; tests replace it).
	linkMTU func(ifname string) (int, error)
}

// Counters are the slow path's event counts.
type Counters struct {
	ARPRequests     uint64 `json:"arp_requests_sent"`
	ARPLearned      uint64 `json:"arp_learned"`
	QueuedPackets   uint64 `json:"queued_packets"`
	ReleasedPackets uint64 `json:"released_packets"`
	QueueDrops      uint64 `json:"queue_drops"`
	ResolveFailures uint64 `json:"resolve_failures"`
	NSSent          uint64 `json:"neighbor_solicitations_sent"`
	RASent          uint64 `json:"router_advertisements_sent"`
	ICMPSent        uint64 `json:"icmp_errors_sent"`
	ICMPRateLimited uint64 `json:"icmp_errors_rate_limited"`
}

func newController() cube.Controller {
	return &controller{
		dyn:     map[netip.Addr]*neigh{},
		static:  map[netip.Addr]bool{},
		onlink:  map[netip.Prefix]int{},
		pending: map[netip.Addr]*pending{},
		macs:    map[int]net.HardwareAddr{},
		now:     time.Now,
		routes4: writtenMap[kRouteKey, kRoute]{name: "rt_routes"},
		routes6: writtenMap[kRoute6Key, kRoute6]{name: "rt_routes6"},
		src4:    writtenMap[kSrcKey, uint8]{name: "rt_src"},
		src6:    writtenMap[kSrc6Key, uint8]{name: "rt_src6"},
	}
}

func (ctl *controller) maps(h cube.Handle) (ports, addrs, routes, arp *ebpf.Map, err error) {
	for _, x := range []struct {
		m    **ebpf.Map
		name string
	}{{&ports, "rt_ports"}, {&addrs, "rt_addrs"}, {&routes, "rt_routes"}, {&arp, "rt_arp"}} {
		if *x.m, err = h.Map(x.name); err != nil {
			return
		}
	}
	return
}

func addr4(a netip.Addr) [4]byte { return a.As4() }

func routeKey(p netip.Prefix) kRouteKey {
	return kRouteKey{PrefixLen: uint32(p.Bits()), Addr: p.Addr().As4()}
}

// staticRoute converts a validated route to its kernel form.
func staticRoute(c *cube.Cube, conn []connected, r *Route) (kRouteKey, kRoute, error) {
	pf, err := netip.ParsePrefix(r.Prefix)
	if err != nil {
		return kRouteKey{}, kRoute{}, err
	}
	v := kRoute{}
	if r.NextHop != "" {
		nh, _ := netip.ParseAddr(r.NextHop)
		cn, ok := onLink(conn, nh)
		if !ok {
			return kRouteKey{}, kRoute{}, fmt.Errorf("next hop %s not on link", nh)
		}
		v.Port = uint32(cn.Port)
		v.NextHop = nh.As4()
	} else {
		v.Port = uint32(c.Port(r.Port).Index)
	}
	return routeKey(pf), v, nil
}

// peerMTU is the MTU of a port's peer interface, which frames the router
// sends through the port must fit; 0 (unchecked) when it cannot be read.
func (ctl *controller) peerMTU(ifname string) uint16 {
	read := ctl.linkMTU
	if read == nil {
		read = func(name string) (int, error) {
			lk, err := netlink.LinkByName(name)
			if err != nil {
				return 0, err
			}
			return lk.Attrs().MTU, nil
		}
	}
	mtu, err := read(ifname)
	if err != nil || mtu <= 0 {
		return 0
	}
	return uint16(min(mtu, 65535))
}

// followMTUs rewrites the ports whose peer interface's MTU changed (`ip
// link set … mtu`), at most every 5 s.
func (ctl *controller) followMTUs(h cube.Handle, now time.Time) {
	if now.Sub(ctl.mtuCheck) < 5*time.Second {
		return
	}
	ctl.mtuCheck = now
	m, err := h.Map("rt_ports")
	if err != nil {
		return
	}
	for i, ifname := range ctl.ifPeers {
		kp := ctl.ports[i]
		if mtu := ctl.peerMTU(ifname); mtu != kp.MTU {
			kp.MTU = mtu
			if err := m.Put(uint32(i), kp); err != nil {
				h.Logf("rt_ports[%d]: %v", i, err)
				continue
			}
			ctl.ports[i] = kp
		}
	}
}

// Sync writes ports, own addresses, connected and static routes and static
// ARP entries; learned ARP entries stay.
func (ctl *controller) Sync(h cube.Handle, c *cube.Cube) error {
	ctl.mu.Lock()
	defer ctl.mu.Unlock()
	portsM, addrsM, routesM, arpM, err := ctl.maps(h)
	if err != nil {
		return err
	}
	cfg, err := Type.DecodeConfig(c)
	if err != nil {
		return err
	}
	ctl.cfg = *cfg.(*Config)
	conn, err := connectedOf(c)
	if err != nil {
		return err
	}
	ctl.conn = conn
	ctl.macs = map[int]net.HardwareAddr{}
	ctl.ports, ctl.ifPeers = map[int]kPort{}, map[int]string{}
	checked := checkedPorts(c)
	for i := 0; i < datapath.MaxPorts; i++ {
		var kp kPort
		if p := c.PortByIndex(i); p != nil {
			mac := PortMAC(c, p)
			ctl.macs[i] = mac
			copy(kp.MAC[:], mac)
			kp.Valid = 1
			if _, ok := checked[i]; ok {
				kp.Flags |= portSrcCheck
			}
			if ep, err := cube.ParseEndpoint(p.Peer); err == nil && !ep.IsCube() {
				ctl.ifPeers[i] = ep.Iface
				kp.MTU = ctl.peerMTU(ep.Iface)
			}
			ctl.ports[i] = kp
		}
		if err := portsM.Put(uint32(i), kp); err != nil {
			return fmt.Errorf("rt_ports[%d]: %w", i, err)
		}
	}
	ctl.mtuCheck = ctl.now()
	// Own addresses (IPv6: also every port's link-local one).
	wantAddr := map[[4]byte]uint32{}
	wantAddr6 := map[[16]byte]uint32{}
	for _, cn := range conn {
		if cn.Addr.Is4() {
			wantAddr[addr4(cn.Addr)] = uint32(cn.Port)
		} else {
			wantAddr6[cn.Addr.As16()] = uint32(cn.Port)
		}
	}
	for port, mac := range ctl.macs {
		wantAddr6[linkLocal(mac).As16()] = uint32(port)
	}
	addrs6M, err := h.Map("rt_addrs6")
	if err != nil {
		return err
	}
	if err := syncHash(addrsM, "rt_addrs", wantAddr); err != nil {
		return err
	}
	if err := syncHash(addrs6M, "rt_addrs6", wantAddr6); err != nil {
		return err
	}
	// Routes.
	want := map[kRouteKey]kRoute{}
	want6 := map[kRoute6Key]kRoute6{}
	for _, cn := range conn {
		if cn.Prefix.Bits() == cn.Addr.BitLen() {
			continue
		}
		if cn.Addr.Is4() {
			want[routeKey(cn.Prefix)] = kRoute{Port: uint32(cn.Port), Flags: routeConnected}
		} else {
			want6[route6Key(cn.Prefix)] = kRoute6{Port: uint32(cn.Port), Flags: routeConnected}
		}
	}
	routes, err := routesTable.Entries(c)
	if err != nil {
		return err
	}
	ctl.onlink = map[netip.Prefix]int{}
	for _, v := range routes {
		ctl.noteOnlink(c, v.(*Route), true)
		if pf, _ := netip.ParsePrefix(v.(*Route).Prefix); pf.Addr().Is6() {
			k, kv := staticRoute6(c, conn, v.(*Route))
			want6[k] = kv
			continue
		}
		k, kv, err := staticRoute(c, conn, v.(*Route))
		if err != nil {
			return err
		}
		want[k] = kv
	}
	routes6M, err := h.Map("rt_routes6")
	if err != nil {
		return err
	}
	if err := ctl.routes6.sync(routes6M, want6); err != nil {
		return err
	}
	if err := ctl.routes4.sync(routesM, want); err != nil {
		return err
	}
	if err := ctl.syncSources(h, wantSources(checked, conn, want, want6)); err != nil {
		return err
	}
	// A sync (route changes, the cache setting) invalidates the cache.
	off := ctl.cfg.DisableRouteCache
	if err := setGen(h, &off); err != nil {
		return err
	}
	// ARP: static entries from the table; learned ones stay while their
	// address is still on a connected subnet.
	statics, err := arpTable.Entries(c)
	if err != nil {
		return err
	}
	ctl.static = map[netip.Addr]bool{}
	for _, v := range statics {
		n := v.(*Neighbor)
		a, _ := netip.ParseAddr(n.IP)
		ctl.static[a] = true
		if err := ctl.putStatic(h, arpM, n); err != nil {
			return err
		}
		delete(ctl.dyn, a)
	}
	if err := ctl.syncNeigh6(h); err != nil {
		return err
	}
	if err := ctl.syncRA(c); err != nil {
		return err
	}
	var ak [4]byte
	var av kARP
	var stale [][4]byte
	it := arpM.Iterate()
	for it.Next(&ak, &av) {
		a := netip.AddrFrom4(ak)
		cn, on := ctl.linkOf(a)
		switch {
		case av.Flags&arpStatic != 0 && !ctl.static[a]:
			stale = append(stale, ak)
		case av.Flags&arpStatic == 0 && !on:
			stale = append(stale, ak)
			delete(ctl.dyn, a)
		case av.Flags&arpStatic == 0 && ctl.dyn[a] == nil:
			// Learned by an earlier daemon: adopt it, fresh.
			ctl.dyn[a] = &neigh{mac: append(net.HardwareAddr(nil), av.MAC[:]...), port: cn.Port, updated: ctl.now()}
		}
	}
	for _, k := range stale {
		arpM.Delete(k)
	}
	for a := range ctl.pending {
		if _, on := ctl.linkOf(a); !on {
			delete(ctl.pending, a)
		}
	}
	return nil
}

// noteOnlink keeps the Go-side list of on-link (port-only) routes, which the
// slow path needs to resolve their destinations.
func (ctl *controller) noteOnlink(c *cube.Cube, r *Route, add bool) {
	pf, err := netip.ParsePrefix(r.Prefix)
	if err != nil {
		return
	}
	delete(ctl.onlink, pf)
	if add && r.NextHop == "" {
		if p := c.Port(r.Port); p != nil {
			ctl.onlink[pf] = p.Index
		}
	}
}

// linkOf finds the link (port and the port's address to speak from) an
// address is reachable on directly: a connected subnet, or an on-link route.
func (ctl *controller) linkOf(a netip.Addr) (connected, bool) {
	if cn, ok := onLink(ctl.conn, a); ok {
		return cn, true
	}
	best, port := netip.Prefix{}, -1
	for pf, p := range ctl.onlink {
		if pf.Contains(a) && (port < 0 || pf.Bits() > best.Bits()) {
			best, port = pf, p
		}
	}
	if port < 0 {
		return connected{}, false
	}
	// speak from the port's address of a's family if it has one (a pod's
	// port has a /32 and reaches the pod's IPv6 address from its
	// link-local one); a link without addresses is still the route's.
	out := connected{Port: port, Prefix: best}
	for _, cn := range ctl.conn {
		if cn.Port == port && (!out.Addr.IsValid() || cn.Addr.Is4() == a.Is4() && out.Addr.Is4() != a.Is4()) {
			out.Name, out.Addr = cn.Name, cn.Addr
		}
	}
	return out, true
}

func (ctl *controller) putStatic(h cube.Handle, arpM *ebpf.Map, n *Neighbor) error {
	a, _ := netip.ParseAddr(n.IP)
	hw, _ := net.ParseMAC(n.MAC)
	cn, _ := onLink(ctl.conn, a)
	v := kARP{Flags: arpStatic, Port: uint32(cn.Port)}
	copy(v.MAC[:], hw)
	if a.Is6() {
		return ctl.putNeigh6(h, a, cn.Port, v)
	}
	if err := arpM.Put(addr4(a), v); err != nil {
		return fmt.Errorf("rt_arp %s: %w", a, err)
	}
	return nil
}

// kGen mirrors struct rt_gen.
type kGen struct {
	Gen uint32
	Off uint32
}

// bumpGen invalidates the fast path's route cache: call after the route
// table changed.
func bumpGen(h cube.Handle) error { return setGen(h, nil) }

// setGen bumps the cache generation and, if off is given, turns the cache
// off or on.
func setGen(h cube.Handle, off *bool) error {
	m, err := h.Map("rt_gen")
	if err != nil {
		return err
	}
	var g kGen
	if err := m.Lookup(uint32(0), &g); err != nil {
		return fmt.Errorf("rt_gen: %w", err)
	}
	g.Gen++
	if off != nil {
		g.Off = 0
		if *off {
			g.Off = 1
		}
	}
	if err := m.Put(uint32(0), g); err != nil {
		return fmt.Errorf("rt_gen: %w", err)
	}
	return nil
}

// PutEntry writes one static route or ARP entry (large tables change entry
// by entry, not through a full Sync).
func (ctl *controller) PutEntry(h cube.Handle, c *cube.Cube, table string, item any) error {
	ctl.mu.Lock()
	defer ctl.mu.Unlock()
	_, _, routesM, arpM, err := ctl.maps(h)
	if err != nil {
		return err
	}
	switch table {
	case routesTable.Name:
		ctl.noteOnlink(c, item.(*Route), true)
		pf, _ := netip.ParsePrefix(item.(*Route).Prefix)
		if err := ctl.movedRouteSource(h, c, item.(*Route), pf); err != nil {
			return err
		}
		if pf.Addr().Is6() {
			if err := ctl.putRoute6(h, c, item.(*Route)); err != nil {
				return err
			}
			_, v := staticRoute6(c, ctl.conn, item.(*Route))
			return ctl.routeSource(h, c, int(v.Port), pf, true)
		}
		k, v, err := staticRoute(c, ctl.conn, item.(*Route))
		if err != nil {
			return err
		}
		if err := ctl.routes4.put(routesM, k, v); err != nil {
			return err
		}
		if err := ctl.routeSource(h, c, int(v.Port), pf, true); err != nil {
			return err
		}
		return bumpGen(h)
	case arpTable.Name:
		n := item.(*Neighbor)
		a, _ := netip.ParseAddr(n.IP)
		ctl.static[a] = true
		delete(ctl.dyn, a)
		if err := ctl.putStatic(h, arpM, n); err != nil {
			return err
		}
		ctl.releaseLocked(h, a)
	}
	return nil
}

// DeleteEntry removes one static route or ARP entry.
func (ctl *controller) DeleteEntry(h cube.Handle, c *cube.Cube, table string, item any) error {
	ctl.mu.Lock()
	defer ctl.mu.Unlock()
	_, _, routesM, arpM, err := ctl.maps(h)
	if err != nil {
		return err
	}
	switch table {
	case routesTable.Name:
		pf, err := netip.ParsePrefix(item.(*Route).Prefix)
		if err != nil {
			return err
		}
		ctl.noteOnlink(c, item.(*Route), false)
		if err := ctl.dropRouteSource(h, c, pf); err != nil {
			return err
		}
		if pf.Addr().Is6() {
			return ctl.deleteRoute6(h, pf)
		}
		if err := ctl.routes4.delete(routesM, routeKey(pf)); err != nil {
			return err
		}
		return bumpGen(h)
	case arpTable.Name:
		a, _ := netip.ParseAddr(item.(*Neighbor).IP)
		delete(ctl.static, a)
		if a.Is6() {
			return ctl.deleteNeigh6(h, a)
		}
		if err := arpM.Delete(addr4(a)); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
			return fmt.Errorf("rt_arp: %w", err)
		}
	}
	return nil
}
