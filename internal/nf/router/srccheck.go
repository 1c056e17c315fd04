package router

// Per-port source check (strict reverse-path filtering, RFC 3704 2.2, with
// explicit extras): a port whose check is on accepts an IP packet only from
// a source the router itself would route out of that port (its connected
// subnets and the static routes leaving by it) or one of the port's
// allowed_sources. A workload plugged into a router (a pod) thus cannot
// send as another workload: its port's only routes are its own /32 and
// /128. Plugging turns the check on; an operator's ports have it off unless
// set. Link-local IPv6 sources (neighbour discovery, which never leaves the
// link) are not checked; ARP learning already keeps an address to the port
// it is routed out of.

import (
	"fmt"
	"net/netip"
	"slices"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/datapath"
)

// PortConfig is a router port's settings.
type PortConfig struct {
	// SourceCheck "on" drops packets entering the port from sources not
	// routed out of it (nor in AllowedSources); "off" or absent: any
	// source. Plugging a workload into the port turns it on unless it is
	// "off".
	SourceCheck string `json:"source_check,omitempty" enum:"on|off"`
	// AllowedSources are further prefixes the port accepts sources from
	// (asymmetric routing), with SourceCheck on.
	AllowedSources []string `json:"allowed_sources,omitempty" format:"ip-prefix" maxItems:"256"`
}

const (
	portSrcCheck = 1 // RT_PORT_SRC_CHECK
	maxAllowed   = 256
)

// Kernel layouts of rt_src and rt_src6: the port matched whole, then the
// prefix.
type kSrcKey struct {
	PrefixLen uint32
	Port      uint32
	Addr      [4]byte
}

type kSrc6Key struct {
	PrefixLen uint32
	Port      uint32
	Addr      [16]byte
}

// portConfig decodes and checks a port's settings (field names the port).
func portConfig(p *cube.Port) (*PortConfig, []netip.Prefix, error) {
	field := fmt.Sprintf("ports[%s].config", p.Name)
	v, err := cube.Decode(field, p.Config, &PortConfig{})
	if err != nil {
		return nil, nil, err
	}
	pc := v.(*PortConfig)
	if pc.SourceCheck != "" && pc.SourceCheck != "on" && pc.SourceCheck != "off" {
		return nil, nil, cube.Errorf(field+".source_check", "%q: want on or off", pc.SourceCheck)
	}
	if len(pc.AllowedSources) > 0 && pc.SourceCheck != "on" {
		return nil, nil, cube.Unprocessable(field+".allowed_sources", "allowed sources apply to a port whose source_check is on")
	}
	if len(pc.AllowedSources) > maxAllowed {
		return nil, nil, cube.Errorf(field+".allowed_sources", "%d prefixes, at most %d", len(pc.AllowedSources), maxAllowed)
	}
	var out []netip.Prefix
	for i, s := range pc.AllowedSources {
		f := fmt.Sprintf("%s.allowed_sources[%d]", field, i)
		pf, err := netip.ParsePrefix(s)
		if err != nil {
			return nil, nil, cube.Errorf(f, "invalid prefix %q: want address/length, e.g. 198.19.0.0/16", s)
		}
		if pf.Addr().Is4In6() {
			return nil, nil, cube.Unprocessable(f, "%s is an IPv4-mapped IPv6 prefix: give the IPv4 prefix", s)
		}
		if pf.Masked() != pf {
			return nil, nil, cube.Unprocessable(f, "%s has host bits set: did you mean %s?", s, pf.Masked())
		}
		pc.AllowedSources[i] = pf.String()
		out = append(out, pf)
	}
	return pc, out, nil
}

// checkPorts validates every port's settings.
func checkPorts(c *cube.Cube) error {
	for i := range c.Ports {
		if _, _, err := portConfig(&c.Ports[i]); err != nil {
			return err
		}
	}
	return nil
}

// srcSet is what rt_src and rt_src6 hold.
type srcSet struct {
	v4 map[kSrcKey]uint8
	v6 map[kSrc6Key]uint8
}

// add allows (ok) or refuses sources in pf on port.
func (s srcSet) add(port int, pf netip.Prefix, ok uint8) {
	if pf.Addr().Is4() {
		s.v4[kSrcKey{PrefixLen: 32 + uint32(pf.Bits()), Port: uint32(port), Addr: pf.Addr().As4()}] = ok
	} else {
		s.v6[kSrc6Key{PrefixLen: 32 + uint32(pf.Bits()), Port: uint32(port), Addr: pf.Addr().As16()}] = ok
	}
}

// checkedPorts are the indexes of the ports whose check is on, with their
// allowed sources.
func checkedPorts(c *cube.Cube) map[int][]netip.Prefix {
	out := map[int][]netip.Prefix{}
	for i := range c.Ports {
		pc, allowed, err := portConfig(&c.Ports[i])
		if err == nil && pc.SourceCheck == "on" {
			out[c.Ports[i].Index] = allowed
		}
	}
	return out
}

// wantSources is the whole content of rt_src and rt_src6: for each checked
// port, its connected subnets, the static routes out of it and its allowed
// sources; the router's own addresses refused (longer than any subnet of
// theirs, they win the lookup).
func wantSources(checked map[int][]netip.Prefix, conn []connected, v4 map[kRouteKey]kRoute, v6 map[kRoute6Key]kRoute6) srcSet {
	s := srcSet{v4: map[kSrcKey]uint8{}, v6: map[kSrc6Key]uint8{}}
	for port, allowed := range checked {
		for _, pf := range allowed {
			s.add(port, pf, 1)
		}
	}
	for _, cn := range conn {
		if _, ok := checked[cn.Port]; ok && cn.Prefix.Bits() < cn.Addr.BitLen() {
			s.add(cn.Port, cn.Prefix, 1)
		}
	}
	for port := range checked {
		for _, cn := range conn {
			s.add(port, netip.PrefixFrom(cn.Addr, cn.Addr.BitLen()), 0)
		}
	}
	for k, r := range v4 {
		if _, ok := checked[int(r.Port)]; ok && r.Flags&routeConnected == 0 {
			s.add(int(r.Port), netip.PrefixFrom(netip.AddrFrom4(k.Addr), int(k.PrefixLen)), 1)
		}
	}
	for k, r := range v6 {
		if _, ok := checked[int(r.Port)]; ok && r.Flags&routeConnected == 0 {
			s.add(int(r.Port), netip.PrefixFrom(netip.AddrFrom16(k.Addr), int(k.PrefixLen)), 1)
		}
	}
	return s
}

// syncSources writes the allowed sources (Sync: the whole set).
func (ctl *controller) syncSources(h cube.Handle, want srcSet) error {
	m4, err := h.Map("rt_src")
	if err != nil {
		return err
	}
	m6, err := h.Map("rt_src6")
	if err != nil {
		return err
	}
	if err := ctl.src4.sync(m4, want.v4); err != nil {
		return err
	}
	return ctl.src6.sync(m6, want.v6)
}

// routeSource keeps a route's source entry in step with the route (a route
// change between syncs): present while the route is, its port checked, and
// not also wanted for another reason (a connected subnet, an allowed source).
func (ctl *controller) routeSource(h cube.Handle, c *cube.Cube, port int, pf netip.Prefix, present bool) error {
	checked := checkedPorts(c)
	allowed, ok := checked[port]
	if !ok {
		return nil
	}
	if !present {
		for _, a := range allowed {
			if a == pf {
				return nil
			}
		}
		for _, cn := range ctl.conn {
			if cn.Port == port && cn.Prefix == pf {
				return nil
			}
		}
	}
	one := srcSet{v4: map[kSrcKey]uint8{}, v6: map[kSrc6Key]uint8{}}
	one.add(port, pf, 1)
	if pf.Addr().Is4() {
		return putOrDelete(h, "rt_src", &ctl.src4, one.v4, present)
	}
	return putOrDelete(h, "rt_src6", &ctl.src6, one.v6, present)
}

// putOrDelete writes (present) or removes the entries of one in map name.
func putOrDelete[K comparable](h cube.Handle, name string, w *writtenMap[K, uint8], one map[K]uint8, present bool) error {
	m, err := h.Map(name)
	if err != nil {
		return err
	}
	for k, v := range one {
		if present {
			err = w.put(m, k, v)
		} else {
			err = w.delete(m, k)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// SourceCheck is one port's source check, as the "source_check" view shows
// it.
type SourceCheck struct {
	Port    string   `json:"port"`
	Check   bool     `json:"check"`
	Allowed []string `json:"allowed,omitempty" doc:"the prefixes the port accepts sources from: connected subnets, routes out of it, allowed_sources"`
	Dropped uint64   `json:"dropped" doc:"packets dropped for their source"`
}

// listSources is the "source_check" view.
func (ctl *controller) listSources(h cube.Handle, c *cube.Cube) (any, error) {
	ctl.mu.Lock()
	defer ctl.mu.Unlock()
	drops, err := ctl.srcDrops(h)
	if err != nil {
		return nil, err
	}
	allowed := map[int][]string{}
	for k, ok := range ctl.src4.written {
		if ok == 0 {
			continue
		}
		allowed[int(k.Port)] = append(allowed[int(k.Port)], netip.PrefixFrom(netip.AddrFrom4(k.Addr), int(k.PrefixLen)-32).String())
	}
	for k, ok := range ctl.src6.written {
		if ok == 0 {
			continue
		}
		allowed[int(k.Port)] = append(allowed[int(k.Port)], netip.PrefixFrom(netip.AddrFrom16(k.Addr), int(k.PrefixLen)-32).String())
	}
	checked := checkedPorts(c)
	out := []SourceCheck{}
	for _, p := range c.Ports {
		_, on := checked[p.Index]
		a := allowed[p.Index]
		slices.Sort(a)
		out = append(out, SourceCheck{Port: p.Name, Check: on, Allowed: a, Dropped: drops[p.Index]})
	}
	return out, nil
}

// srcDrops sums rt_src_drops over the CPUs, per port index.
func (ctl *controller) srcDrops(h cube.Handle) (map[int]uint64, error) {
	m, err := h.Map("rt_src_drops")
	if err != nil {
		return nil, err
	}
	out := map[int]uint64{}
	var per []uint64
	for i := 0; i < datapath.MaxPorts; i++ {
		if err := m.Lookup(uint32(i), &per); err != nil {
			return nil, fmt.Errorf("rt_src_drops[%d]: %w", i, err)
		}
		for _, v := range per {
			out[i] += v
		}
	}
	return out, nil
}

// dropRouteSource removes the source entry of the route to pf about to be
// deleted (its port is the one written to the route map).
func (ctl *controller) dropRouteSource(h cube.Handle, c *cube.Cube, pf netip.Prefix) error {
	if pf.Addr().Is4() {
		if r, ok := ctl.routes4.written[routeKey(pf)]; ok {
			return ctl.routeSource(h, c, int(r.Port), pf, false)
		}
		return nil
	}
	if r, ok := ctl.routes6.written[route6Key(pf)]; ok {
		return ctl.routeSource(h, c, int(r.Port), pf, false)
	}
	return nil
}

// movedRouteSource removes the source entry a replaced route left on its
// old port when the new route leaves by another one.
func (ctl *controller) movedRouteSource(h cube.Handle, c *cube.Cube, r *Route, pf netip.Prefix) error {
	var old, now uint32
	var ok bool
	if pf.Addr().Is4() {
		var was kRoute
		if was, ok = ctl.routes4.written[routeKey(pf)]; !ok {
			return nil
		}
		_, v, err := staticRoute(c, ctl.conn, r)
		if err != nil {
			return err
		}
		old, now = was.Port, v.Port
	} else {
		var was kRoute6
		if was, ok = ctl.routes6.written[route6Key(pf)]; !ok {
			return nil
		}
		_, v := staticRoute6(c, ctl.conn, r)
		old, now = was.Port, v.Port
	}
	if old == now {
		return nil
	}
	return ctl.routeSource(h, c, int(old), pf, false)
}
