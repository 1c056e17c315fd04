// Package nat64 is the NAT64 NF: stateful NAT64 (RFC 6146) with RFC 6052
// address mapping and RFC 7915 header translation, so IPv6-only hosts reach
// IPv4 servers. It is its own transparent NF type, not a mode of nat,
// because it sits at the other end of the network: attached to the point
// that faces the IPv6-only hosts (a router's inside port), it translates
// their packets as they come in, before the router routes them as IPv4, and
// the replies as they leave toward the hosts — so the router resolves the
// IPv4 next hop itself (ARP), and the translator never has to know an IPv4
// neighbour. nat sits at the outside point and rewrites within one family.
package nat64

import (
	"embed"
	"encoding/binary"
	"fmt"
	"net/netip"
	"strconv"
	"strings"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/datapath"
	"github.com/edgenf/edgenf/internal/schema"
)

// objects are the fast path built for each hook (make bpf).
//
//go:embed bpf/*.o
var objects embed.FS

// WellKnownPrefix is RFC 6052's 64:ff9b::/96.
var WellKnownPrefix = netip.MustParsePrefix("64:ff9b::/96")

// Config is the translator's settings.
type Config struct {
	// Prefix is where IPv4 addresses are embedded in IPv6 ones (RFC 6052).
	Prefix string `json:"prefix,omitempty" format:"nat64-prefix" doc:"the RFC 6052 prefix IPv4 addresses are embedded in: /32, /40, /48, /56, /64 or /96, no bits set after the length, not IPv4-mapped or multicast (422 otherwise); default 64:ff9b::/96"`
	// Pool is the IPv4 addresses the hosts' flows leave with.
	Pool string `json:"pool,omitempty" format:"nat64-pool" doc:"required (422 when absent): the IPv4 address, or first-last range of at most 65536 (first <= last, 422 otherwise), the hosts' flows leave with; no 0/8, 127/8, 224/3 addresses (422)"`
	// PortRange is where pool ports (and ICMP identifiers) are picked.
	PortRange string `json:"port_range,omitempty" format:"port1-range" doc:"where pool ports and ICMP identifiers are picked, lo-hi (lo <= hi, 422 otherwise); default 1024-65535"`
	// MaxPerHost bounds the bindings (pool ports) of one host, counted per
	// /64 since a host may use any address of its /64: no host can take
	// every port of the pool (RFC 6888 REQ-4).
	MaxPerHost int `json:"max_bindings_per_host,omitempty" minimum:"0" maximum:"65536" doc:"pool ports one host (its /64) may hold at once; 0 or absent: 4096"`
	// Timeouts are idle timeouts of sessions, in seconds (0: default).
	Timeouts *Timeouts `json:"timeouts,omitempty"`
}

const defaultMaxPerHost = 4096

func (c *Config) maxPerHost() int {
	if c.MaxPerHost > 0 {
		return c.MaxPerHost
	}
	return defaultMaxPerHost
}

// Timeouts are RFC 6146's session lifetimes; 0 means the RFC's default.
type Timeouts struct {
	UDP            int `json:"udp,omitempty" minimum:"0" maximum:"86400" doc:"UDP, default 300 (RFC 6146: at least 120)"`
	TCPEstablished int `json:"tcp_established,omitempty" minimum:"0" maximum:"604800" doc:"TCP once both sides have sent, default 7440"`
	TCPTransitory  int `json:"tcp_transitory,omitempty" minimum:"0" maximum:"86400" doc:"TCP opening (a SYN, no answer yet) or closing (FIN or RST seen), default 240"`
	ICMP           int `json:"icmp,omitempty" minimum:"0" maximum:"86400" doc:"ICMP echo, default 60"`
}

func (t *Timeouts) seconds() (udp, est, trans, icmp uint32) {
	udp, est, trans, icmp = 300, 7440, 240, 60
	if t == nil {
		return
	}
	pick := func(v int, d uint32) uint32 {
		if v > 0 {
			return uint32(v)
		}
		return d
	}
	return pick(t.UDP, udp), pick(t.TCPEstablished, est), pick(t.TCPTransitory, trans), pick(t.ICMP, icmp)
}

func init() {
	schema.Register("nat64-prefix", schema.Format{Pattern: schema.Anchored(schema.IPv6 + "/(32|40|48|56|64|96)"),
		Doc: "an IPv6 prefix of length 32, 40, 48, 56, 64 or 96 (RFC 6052), e.g. 64:ff9b::/96"})
	schema.Register("nat64-pool", schema.Format{Pattern: schema.Anchored(schema.IPv4 + "(-" + schema.IPv4 + ")?"),
		Doc: "an IPv4 address, or a range first-last of at most 65536 addresses"})
}

// Validate checks the settings.
func (c *Config) Validate(*cube.Cube) error {
	if _, err := c.prefix(); err != nil {
		return err
	}
	if _, _, err := c.pool(); err != nil {
		return err
	}
	if _, _, err := c.ports(); err != nil {
		return err
	}
	if c.MaxPerHost < 0 || c.MaxPerHost > 65536 {
		return cube.Errorf("max_bindings_per_host", "%d out of range 0..65536", c.MaxPerHost)
	}
	if t := c.Timeouts; t != nil {
		for name, v := range map[string]int{"udp": t.UDP, "tcp_established": t.TCPEstablished, "tcp_transitory": t.TCPTransitory, "icmp": t.ICMP} {
			if v < 0 || v > 604800 {
				return cube.Errorf("timeouts."+name, "%d out of range 0..604800 seconds", v)
			}
		}
	}
	return nil
}

func (c *Config) prefix() (netip.Prefix, error) {
	if c.Prefix == "" {
		return WellKnownPrefix, nil
	}
	p, err := netip.ParsePrefix(c.Prefix)
	if err != nil || !p.Addr().Is6() {
		return p, cube.Errorf("prefix", "invalid IPv6 prefix %q: want e.g. 64:ff9b::/96", c.Prefix)
	}
	if p.Addr().Is4In6() {
		return p, cube.Unprocessable("prefix", "%q is IPv4-mapped (::ffff:0:0/96): not a NAT64 prefix", c.Prefix)
	}
	switch p.Bits() {
	case 32, 40, 48, 56, 64, 96:
	default:
		return p, cube.Errorf("prefix", "/%d: RFC 6052 prefixes are /32, /40, /48, /56, /64 or /96", p.Bits())
	}
	if p.Masked() != p {
		return p, cube.Unprocessable("prefix", "%q has bits set after the length (did you mean %s?)", c.Prefix, p.Masked())
	}
	if p.Addr().IsMulticast() {
		return p, cube.Unprocessable("prefix", "%q is multicast", c.Prefix)
	}
	return p, nil
}

// pool returns the first address and the size.
func (c *Config) pool() (netip.Addr, uint32, error) {
	if c.Pool == "" {
		return netip.Addr{}, 0, cube.Unprocessable("pool", "required: the IPv4 address or range first-last the hosts' flows leave with, e.g. 198.19.64.1-198.19.64.8")
	}
	a, b, isRange := strings.Cut(c.Pool, "-")
	lo, err := parseAddr4(strings.TrimSpace(a))
	if err != nil {
		return lo, 0, err
	}
	hi := lo
	if isRange {
		if hi, err = parseAddr4(strings.TrimSpace(b)); err != nil {
			return lo, 0, err
		}
	}
	l, h := be32(lo), be32(hi)
	if h < l {
		return lo, 0, cube.Unprocessable("pool", "inverted range %q: %s > %s", c.Pool, lo, hi)
	}
	if h-l >= 65536 {
		return lo, 0, cube.Unprocessable("pool", "range %q has %d addresses: at most 65536", c.Pool, uint64(h-l)+1)
	}
	for _, m := range martians {
		if m.Contains(lo) || m.Contains(hi) || (l < be32(m.Addr()) && h >= be32(m.Addr())) {
			return lo, 0, cube.Unprocessable("pool", "%q includes %s addresses (%s)", c.Pool, martianName[m], m)
		}
	}
	return lo, h - l + 1, nil
}

// martians are IPv4 destinations the translator never maps to (n64_martian
// in the fast path): nor may the pool hold them.
var martians = []netip.Prefix{netip.MustParsePrefix("0.0.0.0/8"), netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("224.0.0.0/3")}

var martianName = map[netip.Prefix]string{martians[0]: "\"this network\"", martians[1]: "loopback", martians[2]: "multicast or reserved"}

func parseAddr4(s string) (netip.Addr, error) {
	a, err := netip.ParseAddr(s)
	if err != nil || !a.Is4() {
		return a, cube.Errorf("pool", "invalid IPv4 address %q", s)
	}
	return a, nil
}

func be32(a netip.Addr) uint32 { b := a.As4(); return binary.BigEndian.Uint32(b[:]) }

func (c *Config) ports() (uint16, uint16, error) {
	if c.PortRange == "" {
		return 1024, 65535, nil
	}
	a, b, isRange := strings.Cut(c.PortRange, "-")
	lo, err := strconv.ParseUint(strings.TrimSpace(a), 10, 16)
	if err != nil || lo == 0 {
		return 0, 0, cube.Errorf("port_range", "invalid port %q: want 1-65535", a)
	}
	hi := lo
	if isRange {
		if hi, err = strconv.ParseUint(strings.TrimSpace(b), 10, 16); err != nil {
			return 0, 0, cube.Errorf("port_range", "invalid port %q: want 1-65535", b)
		}
	}
	if hi < lo {
		return 0, 0, cube.Unprocessable("port_range", "inverted range %q: %d > %d", c.PortRange, lo, hi)
	}
	return uint16(lo), uint16(hi), nil
}

// positions returns where the four bytes of an IPv4 address sit in an IPv6
// address under a prefix of bits (RFC 6052 2.2): after the prefix, skipping
// byte 8 (bits 64..71, the "u" octet, always zero).
func positions(bits int) [4]uint8 {
	var idx [4]uint8
	i := bits / 8
	for n := 0; n < 4; n++ {
		if i == 8 {
			i++
		}
		idx[n] = uint8(i)
		i++
	}
	return idx
}

// Embed is the IPv6 address standing for a under prefix p (RFC 6052).
func Embed(p netip.Prefix, a netip.Addr) netip.Addr {
	b := p.Addr().As16()
	v4 := a.As4()
	for n, i := range positions(p.Bits()) {
		b[i] = v4[n]
	}
	return netip.AddrFrom16(b)
}

// Extract is the IPv4 address embedded in a under prefix p.
func Extract(p netip.Prefix, a netip.Addr) netip.Addr {
	b := a.As16()
	var v4 [4]byte
	for n, i := range positions(p.Bits()) {
		v4[n] = b[i]
	}
	return netip.AddrFrom4(v4)
}

// Type is the NAT64 NF type.
var Type = &cube.Type{
	Name: "nat64",
	Description: "Transparent: stateful NAT64 (RFC 6146, RFC 6052 prefixes, RFC 7915 translation) for TCP, UDP, ICMP echo and ICMP errors. " +
		"Attach it to the router port or interface facing the IPv6-only hosts.",
	Transparent: true,
	Hooks:       []datapath.Hook{datapath.XDP, datapath.TC},
	Object:      cube.HookObjects(objects, "bpf/nat64"),
	Config:      &Config{},
	Views: []cube.View{
		{Name: "sessions", Doc: "Sessions: host endpoint, its pool endpoint, the IPv4 server, state, packets, idle time.", Item: &Session{}, Unlocked: true,
			List: func(h cube.Handle, _ *cube.Cube) (any, error) { return sessions(h) }},
		{Name: "status", Doc: "Prefix, pool, port range and mappings in use.", Item: &Status{}, Object: true,
			List: func(h cube.Handle, _ *cube.Cube) (any, error) { return status(h) }},
		n64Counters.View("IPv6→IPv4 and IPv4→IPv6 packets translated, ICMP errors translated, mappings and sessions opened, drops for lack of a pool port, filtered inbound packets, untranslatable packets, packets passed untouched."),
	},
	Actions: []cube.Action{{Name: "flush", Doc: "Delete every mapping and session (flows start over with their next packet from a host).",
		Do: func(h cube.Handle, _ *cube.Cube, _ any) (any, error) {
			n, err := cube.ControllerOf[*controller](h).sweep(h, true)
			if err != nil {
				return nil, err
			}
			return map[string]int{"flushed": n}, nil
		}}},
	New: func() cube.Controller { return &controller{} },
}

func init() { cube.Register(Type) }

func portString(p [2]byte) string { return strconv.Itoa(int(binary.BigEndian.Uint16(p[:]))) }

func hostPort(a netip.Addr, p [2]byte, proto uint8) string {
	if proto == protoICMP {
		return fmt.Sprintf("%s id %s", a, portString(p))
	}
	return netip.AddrPortFrom(a, binary.BigEndian.Uint16(p[:])).String()
}
