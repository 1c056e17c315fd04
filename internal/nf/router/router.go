package router

import (
	"embed"
	"fmt"
	"hash/fnv"
	"net"
	"net/netip"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/datapath"
	"github.com/edgenf/edgenf/internal/schema"
)

// Config holds the router's settings. Zero values mean the defaults.
type Config struct {
	// ARPTimeout is how long (seconds) a learned ARP entry is trusted before
	// the router re-probes it; an entry whose probe gets no answer within
	// 3 s is removed. Default 300.
	ARPTimeout int `json:"arp_timeout,omitempty" minimum:"0" maximum:"86400"`
	// ARPQueueLen bounds the packets held per unresolved next hop while the
	// router resolves it. Default 32.
	ARPQueueLen int `json:"arp_queue_len,omitempty" minimum:"0" maximum:"1024"`
	// ICMPRateLimit bounds the ICMP errors (time exceeded, unreachable)
	// the router sends per second, across all ports. Default 100.
	ICMPRateLimit int `json:"icmp_rate_limit,omitempty" minimum:"0" maximum:"100000"`
	// DisableRouteCache makes every packet look its route up in the LPM
	// table instead of the per-destination route cache.
	DisableRouteCache bool `json:"disable_route_cache,omitempty"`
}

const (
	defaultARPTimeout = 300
	defaultQueueLen   = 32
	defaultICMPRate   = 100
	maxQueueLen       = 1024
	maxPending        = 1024 // next hops being resolved at once
	maxAddrs          = 1024 // own addresses (kernel map size)
	// MaxRoutes is the capacity of the static route table.
	MaxRoutes = 131072 - 4096
	// MaxStaticARP is the capacity of the static ARP table.
	MaxStaticARP = 4096
)

func (c Config) arpTimeout() int { return or(c.ARPTimeout, defaultARPTimeout) }
func (c Config) queueLen() int   { return or(c.ARPQueueLen, defaultQueueLen) }
func (c Config) icmpRate() int   { return or(c.ICMPRateLimit, defaultICMPRate) }

func or(v, d int) int {
	if v == 0 {
		return d
	}
	return v
}

// Validate checks the settings and the ports' addresses, which are the
// router's connected routes.
func (cfg *Config) Validate(c *cube.Cube) error {
	if cfg.ARPTimeout < 0 || cfg.ARPTimeout > 86400 {
		return cube.Errorf("arp_timeout", "%d out of range 1..86400 seconds (0: default %d)", cfg.ARPTimeout, defaultARPTimeout)
	}
	if cfg.ARPQueueLen < 0 || cfg.ARPQueueLen > maxQueueLen {
		return cube.Errorf("arp_queue_len", "%d out of range 1..%d (0: default %d)", cfg.ARPQueueLen, maxQueueLen, defaultQueueLen)
	}
	if cfg.ICMPRateLimit < 0 || cfg.ICMPRateLimit > 100000 {
		return cube.Errorf("icmp_rate_limit", "%d out of range 1..100000 per second (0: default %d)", cfg.ICMPRateLimit, defaultICMPRate)
	}
	if _, err := connectedOf(c); err != nil {
		return err
	}
	return checkPorts(c)
}

// connected is one address of a port: a connected route.
type connected struct {
	Port   int
	Name   string
	Addr   netip.Addr
	Prefix netip.Prefix // masked
}

// connectedOf reads and checks the ports' addresses. Errors name the port
// (they surface under "config" because the framework validates the ports'
// generic fields before NF settings).
func connectedOf(c *cube.Cube) ([]connected, error) {
	var out []connected
	n := 0
	for _, p := range c.Ports {
		field := fmt.Sprintf("ports[%s]", p.Name) // (port MACs are checked for every cube: cube.checkPortAddrs)
		for _, a := range p.Addresses {
			pf, err := netip.ParsePrefix(a)
			if err != nil {
				return nil, cube.Errorf(field+".addresses", "invalid address %q: want address/prefix-length, e.g. 198.18.0.1/24", a)
			}
			addr := pf.Addr()
			if addr.Is4In6() {
				return nil, cube.Errorf(field+".addresses", "%s is an IPv4-mapped IPv6 address: give the IPv4 address", a)
			}
			if addr.Is4() && pf.Bits() < 8 {
				return nil, cube.Errorf(field+".addresses", "%s: prefix length %d is too short for an interface address (8..32)", a, pf.Bits())
			}
			if addr.Is6() && pf.Bits() < 16 {
				return nil, cube.Errorf(field+".addresses", "%s: prefix length %d is too short for an interface address (16..128)", a, pf.Bits())
			}
			m := pf.Masked()
			if addr.Is4() && pf.Bits() <= 30 && (addr == m.Addr() || addr == lastAddr(m)) {
				return nil, cube.Unprocessable(field+".addresses", "%s is the network or broadcast address of %s, not a host address", a, m)
			}
			if addr.Is6() && pf.Bits() <= 126 && addr == m.Addr() {
				return nil, cube.Unprocessable(field+".addresses", "%s is the subnet-router anycast address of %s, not a host address", a, m)
			}
			if addr.IsMulticast() || addr.IsLoopback() || addr.IsUnspecified() {
				return nil, cube.Errorf(field+".addresses", "%s is not a unicast host address", a)
			}
			if addr.IsLinkLocalUnicast() && addr.Is6() {
				return nil, cube.Unprocessable(field+".addresses", "%s: every port has its link-local address already (fe80:: and the EUI-64 of its MAC)", a)
			}
			for _, o := range out {
				if o.Addr == addr {
					return nil, cube.Conflict(field+".addresses", "%s is already an address of port %s", addr, o.Name)
				}
				if o.Port != p.Index && o.Prefix.Overlaps(m) {
					return nil, cube.Conflict(field+".addresses", "subnet %s overlaps %s of port %s: each subnet belongs to one port", m, o.Prefix, o.Name)
				}
			}
			out = append(out, connected{Port: p.Index, Name: p.Name, Addr: addr, Prefix: m})
			n++
		}
	}
	if n > maxAddrs {
		return nil, cube.Conflict("ports", "%d addresses, at most %d", n, maxAddrs)
	}
	return out, nil
}

func isZero(hw net.HardwareAddr) bool {
	for _, b := range hw {
		if b != 0 {
			return false
		}
	}
	return true
}

func lastAddr(p netip.Prefix) netip.Addr {
	b := p.Addr().As4()
	v := uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
	v |= ^uint32(0) >> p.Bits()
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
}

// onLink finds the connected subnet an address is on (the longest one).
func onLink(conn []connected, a netip.Addr) (connected, bool) {
	best, ok := connected{}, false
	for _, c := range conn {
		if c.Prefix.Contains(a) && (!ok || c.Prefix.Bits() > best.Prefix.Bits()) {
			best, ok = c, true
		}
	}
	return best, ok
}

// PortMAC is the MAC address of a router port: Port.MAC, or, when that is
// empty, a stable locally administered address derived from the cube and
// port names (02:72:74 followed by 3 bytes of their FNV-1a hash).
func PortMAC(c *cube.Cube, p *cube.Port) net.HardwareAddr {
	if hw, err := net.ParseMAC(p.MAC); err == nil && len(hw) == 6 {
		return hw
	}
	h := fnv.New32a()
	h.Write([]byte(c.Name + "/" + p.Name))
	s := h.Sum32()
	return net.HardwareAddr{0x02, 0x72, 0x74, byte(s >> 16), byte(s >> 8), byte(s)}
}

// Route is a static route: packets to Prefix go to NextHop (on a connected
// subnet), or, with only Port, straight to their destination out of Port.
type Route struct {
	Prefix  string `json:"prefix" format:"ip-prefix" doc:"the destinations, IPv4 or IPv6: no bits set after the length, not IPv4-mapped (422 otherwise)"`
	NextHop string `json:"next_hop,omitempty" format:"ip" doc:"the next hop: an address on a connected subnet (of port, if given; 409 otherwise) of the prefix's family (422 otherwise); a link-local IPv6 one needs port (422 otherwise)"`
	Port    string `json:"port,omitempty" format:"name" doc:"the port the route leaves by; alone, destinations are on its link"`
}

// RefineSchema: a route has a next hop, a port, or both.
func (*Route) RefineSchema(s *schema.Schema) {
	s.AnyOf = []*schema.Schema{schema.Branch([]string{"next_hop"}, nil), schema.Branch([]string{"port"}, nil)}
}

// Validate checks the route against the cube's connected subnets and puts
// the prefix in canonical form.
func (r *Route) Validate(c *cube.Cube) error {
	pf, err := netip.ParsePrefix(r.Prefix)
	if err != nil {
		return cube.Errorf("prefix", "invalid prefix %q: want address/length, e.g. 198.19.0.0/16", r.Prefix)
	}
	if pf.Addr().Is4In6() {
		return cube.Unprocessable("prefix", "%s is an IPv4-mapped IPv6 prefix: give the IPv4 prefix", r.Prefix)
	}
	if pf.Masked() != pf {
		return cube.Unprocessable("prefix", "%s has host bits set: did you mean %s?", r.Prefix, pf.Masked())
	}
	r.Prefix = pf.String()
	var nh netip.Addr
	switch {
	case r.NextHop != "":
		if nh, err = netip.ParseAddr(r.NextHop); err != nil || nh.Zone() != "" {
			return cube.Errorf("next_hop", "invalid address %q", r.NextHop)
		}
		if nh.Is4() != pf.Addr().Is4() {
			return cube.Unprocessable("next_hop", "%s and the prefix %s are of different address families", nh, pf)
		}
		r.NextHop = nh.String()
	case r.Port == "":
		return cube.Errorf("next_hop", "a route needs a next_hop, or a port for a destination on the link")
	}
	conn, err := connectedOf(c)
	if err != nil {
		return cube.Conflict("prefix", "the cube's port addresses are invalid: %v", err)
	}
	for _, cn := range conn {
		if cn.Prefix == pf {
			return cube.Conflict("prefix", "%s is the connected subnet of port %s", pf, cn.Name)
		}
	}
	var port *cube.Port
	if r.Port != "" {
		if port = c.Port(r.Port); port == nil {
			return cube.NotFound("port", "cube %s has no port %q", c.Name, r.Port)
		}
	}
	if r.NextHop == "" {
		return nil
	}
	if nh.Is6() && nh.IsLinkLocalUnicast() {
		// fe80::/64 is on every port's link: the port says which.
		if port == nil {
			return cube.Unprocessable("port", "required with the link-local next hop %s: the port whose link it is on", nh)
		}
		return nil
	}
	cn, ok := onLink(conn, nh)
	if !ok {
		return cube.Conflict("next_hop", "%s is not on a connected subnet of any port", nh)
	}
	if port != nil && cn.Port != port.Index {
		return cube.Conflict("next_hop", "%s is on the subnet %s of port %s, not of port %s", nh, cn.Prefix, cn.Name, r.Port)
	}
	for _, o := range conn {
		if o.Addr == nh {
			return cube.Conflict("next_hop", "%s is the router's own address", nh)
		}
	}
	if nh.Is4() && nh == lastAddr(cn.Prefix) && cn.Prefix.Bits() <= 30 {
		return cube.Conflict("next_hop", "%s is the broadcast address of %s", nh, cn.Prefix)
	}
	return nil
}

// Neighbor is a static ARP (IPv4) or neighbour (IPv6) entry.
type Neighbor struct {
	IP  string `json:"ip" format:"ip" doc:"an address on a connected subnet"`
	MAC string `json:"mac" format:"mac-unicast"`
}

// Validate checks the entry is a unicast MAC on a connected subnet.
func (n *Neighbor) Validate(c *cube.Cube) error {
	a, err := netip.ParseAddr(n.IP)
	if err != nil || a.Zone() != "" || a.Is4In6() {
		return cube.Errorf("ip", "invalid address %q", n.IP)
	}
	if a.Is6() && a.IsLinkLocalUnicast() {
		return cube.Errorf("ip", "%s is link-local: static neighbours are on a connected subnet (link-local ones are learned)", a)
	}
	n.IP = a.String()
	hw, err := net.ParseMAC(n.MAC)
	if err != nil || len(hw) != 6 {
		return cube.Errorf("mac", "invalid MAC address %q", n.MAC)
	}
	if hw[0]&1 != 0 || isZero(hw) {
		return cube.Errorf("mac", "%s is not a unicast MAC address", n.MAC)
	}
	n.MAC = hw.String()
	conn, err := connectedOf(c)
	if err != nil {
		return cube.Conflict("ip", "the cube's port addresses are invalid: %v", err)
	}
	cn, ok := onLink(conn, a)
	if !ok {
		return cube.Conflict("ip", "%s is not on a connected subnet of any port", a)
	}
	if cn.Addr == a {
		return cube.Conflict("ip", "%s is the router's own address", a)
	}
	for _, o := range conn {
		if o.Addr == a {
			return cube.Conflict("ip", "%s is the router's own address", a)
		}
	}
	return nil
}

// objects are the fast path built for each hook (make bpf).
//
//go:embed bpf/*.o
var objects embed.FS

var routesTable = cube.Table{
	Name: "routes",
	Doc:  "Static routes: prefix → next hop on a connected subnet (or a port, for on-link destinations). Longest prefix wins; connected subnets come from the ports' addresses.",
	Item: &Route{},
	Key:  func(v any) string { return v.(*Route).Prefix },
	Max:  MaxRoutes,
}

var arpTable = cube.Table{
	Name: "arp",
	Doc:  "Static neighbours: IPv4 (ARP) or IPv6 address on a connected subnet → MAC. They never age.",
	Item: &Neighbor{},
	Key:  func(v any) string { return v.(*Neighbor).IP },
	Max:  MaxStaticARP,
}

// Type is the router NF type.
var Type = &cube.Type{
	Name:          "router",
	Description:   "IPv4 and IPv6 router: connected and static routes (LPM), ARP and neighbour discovery with aging and a resolution queue, TTL and hop limit, ICMP/ICMPv6 echo and errors, link-local addresses, router advertisements.",
	Hooks:         []datapath.Hook{datapath.XDP, datapath.TC},
	Object:        cube.HookObjects(objects, "bpf/router"),
	Config:        &Config{},
	PortConfig:    &PortConfig{},
	PortAddresses: "ip-interface",
	Tables:        []cube.Table{routesTable, arpTable, raTable},
	Views: []cube.View{
		{Name: "routes", Doc: "The routing table in the kernel: connected and static routes.", Item: &RouteInfo{}, List: listRoutes},
		{Name: "arp", Doc: "The ARP and IPv6 neighbour table: static, learned (with age) and incomplete (being resolved) entries.", Item: &ARPInfo{},
			List: cube.ListOn((*controller).listARP)},
		{Name: "source_check", Doc: "Each port's source check: on or off, the source prefixes it accepts, the packets it dropped.", Item: &SourceCheck{},
			List: cube.ListOn((*controller).listSources)},
		{Name: "counters", Doc: "Slow-path counters: ARP, queue, ICMP errors.", Item: &Counters{}, Object: true,
			List: func(h cube.Handle, c *cube.Cube) (any, error) {
				return cube.ControllerOf[*controller](h).counters(), nil
			}},
	},
	Actions: []cube.Action{{
		Name: "arp_flush", Doc: "Remove learned ARP entries (all, or those of one port).", Args: &FlushArgs{},
		Do: cube.DoOn((*controller).flushARP),
	}},
	New:    newController,
	Plug:   plug,
	Unplug: unplug,
}

func init() { cube.Register(Type) }
