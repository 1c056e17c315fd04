// Package nat is the NAT NF: a transparent cube attached to the
// outside-facing point of a network (a router port or a Linux interface). It
// does SNAT (inside prefix → external address or pool), masquerade (the
// address of the point it is attached to), static 1:1 NAT (dnat) and port
// forwarding, for IPv4 TCP, UDP and ICMP echo, with connection tracking.
package nat

import (
	"embed"
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/datapath"
	"github.com/edgenf/edgenf/internal/nf/conntrack"
	"github.com/edgenf/edgenf/internal/schema"
	"golang.org/x/sys/unix"
)

// objects are the fast path built for each hook (make bpf).
//
//go:embed bpf/*.o
var objects embed.FS

// Config is the NAT's settings.
type Config struct {
	// Masquerade translates every outbound flow that no snat or dnat rule
	// covers to the address of the point the NAT is attached to (a router
	// port's first IPv4 address, or the interface's).
	Masquerade bool `json:"masquerade,omitempty"`
	// PortRange is where external ports (and ICMP identifiers) are picked,
	// "lo-hi"; default 1024-65535. A flow keeps its own source port when it
	// is free.
	PortRange string `json:"port_range,omitempty" format:"port1-range" doc:"where external ports are picked, lo-hi; default 1024-65535"`
	// Timeouts are per-state idle timeouts of sessions, in seconds.
	Timeouts *conntrack.Timeouts `json:"timeouts,omitempty"`
}

// errInverted is a range whose bounds are inverted: the API's document
// cannot say so (422).
type errInverted struct{ error }

// Validate checks the settings.
func (c *Config) Validate(*cube.Cube) error {
	if _, _, err := c.ports(); err != nil {
		if errors.As(err, new(errInverted)) {
			return cube.Unprocessable("port_range", "%v", err)
		}
		return cube.Errorf("port_range", "%v", err)
	}
	if err := c.Timeouts.Validate(); err != nil {
		return cube.Errorf("timeouts", "%v", err)
	}
	return nil
}

func (c *Config) ports() (uint16, uint16, error) {
	if c.PortRange == "" {
		return 1024, 65535, nil
	}
	lo, hi, err := parseRange(c.PortRange)
	if err != nil {
		return 0, 0, err
	}
	if lo == 0 {
		return 0, 0, fmt.Errorf("port 0 cannot be allocated")
	}
	return lo, hi, nil
}

func parseRange(s string) (uint16, uint16, error) {
	a, b, isRange := strings.Cut(s, "-")
	lo, err := strconv.ParseUint(strings.TrimSpace(a), 10, 16)
	if err != nil {
		return 0, 0, fmt.Errorf("invalid port %q: want 0-65535", a)
	}
	hi := lo
	if isRange {
		if hi, err = strconv.ParseUint(strings.TrimSpace(b), 10, 16); err != nil {
			return 0, 0, fmt.Errorf("invalid port %q: want 0-65535", b)
		}
	}
	if hi < lo {
		return 0, 0, errInverted{fmt.Errorf("inverted range %q: %d > %d", s, lo, hi)}
	}
	return uint16(lo), uint16(hi), nil
}

// SNATRule translates flows from an inside prefix to an external address or
// a pool ("first-last"); a host keeps one address of the pool.
type SNATRule struct {
	ID       int    `json:"id" minimum:"1" maximum:"1073741824"`
	Internal string `json:"internal" format:"ipv4-host"`
	External string `json:"external" format:"ipv4-pool"`
}

// DNATRule is static 1:1 NAT: flows from outside to External go to Internal
// and flows Internal opens leave as External.
type DNATRule struct {
	ID       int    `json:"id" minimum:"1" maximum:"1073741824"`
	External string `json:"external" format:"ipv4"`
	Internal string `json:"internal" format:"ipv4"`
}

// PortForward sends flows to External:ExternalPort (External empty: the
// masquerade address) to Internal:InternalPort (default: the same port).
type PortForward struct {
	ID           int    `json:"id" minimum:"1" maximum:"1073741824"`
	Proto        string `json:"proto" format:"tcp-or-udp"`
	External     string `json:"external,omitempty" format:"ipv4" doc:"the external address; absent: the masquerade address"`
	ExternalPort int    `json:"external_port" minimum:"1" maximum:"65535"`
	Internal     string `json:"internal" format:"ipv4"`
	InternalPort int    `json:"internal_port,omitempty" minimum:"0" maximum:"65535" doc:"0 or absent: the external port"`
}

func init() {
	schema.Register("ipv4-pool", schema.Format{Pattern: schema.Anchored(schema.IPv4 + "(-" + schema.IPv4 + ")?"),
		Doc: "an IPv4 address, or a pool first-last of at most 65536 addresses (first <= last, 422 otherwise)"})
	schema.Register("tcp-or-udp", schema.Format{Pattern: schema.Anchored(schema.CaseFold("tcp") + "|" + schema.CaseFold("udp")),
		Doc: "tcp or udp"})
}

func checkID(id int) error {
	if id < 1 || id > 1<<30 {
		return cube.Errorf("id", "rule id %d out of range 1..%d", id, 1<<30)
	}
	return nil
}

func parseAddr4(field, s string) (netip.Addr, error) {
	if s == "" {
		return netip.Addr{}, cube.Errorf(field, "required: an IPv4 address")
	}
	a, err := netip.ParseAddr(s)
	if err != nil || !a.Is4() {
		return netip.Addr{}, cube.Errorf(field, "invalid IPv4 address %q", s)
	}
	return a, nil
}

func parsePrefix4(field, s string) (netip.Prefix, error) {
	if s == "" {
		return netip.Prefix{}, cube.Errorf(field, "required: an IPv4 prefix such as 198.18.1.0/24")
	}
	p, err := netip.ParsePrefix(s)
	if err != nil {
		if a, aerr := netip.ParseAddr(s); aerr == nil && a.Is4() {
			return netip.PrefixFrom(a, 32), nil
		}
		return netip.Prefix{}, cube.Errorf(field, "invalid prefix %q: want address/length, e.g. 198.18.1.0/24", s)
	}
	if !p.Addr().Is4() {
		return netip.Prefix{}, cube.Errorf(field, "%q is not IPv4: the NAT translates IPv4 only", s)
	}
	if p.Masked() != p {
		return netip.Prefix{}, cube.Unprocessable(field, "%q has host bits set (did you mean %s?)", s, p.Masked())
	}
	return p, nil
}

// pool parses "a" or "a-b" into first address and size.
func parsePool(field, s string) (netip.Addr, uint32, error) {
	a, b, isRange := strings.Cut(s, "-")
	lo, err := parseAddr4(field, strings.TrimSpace(a))
	if err != nil {
		return lo, 0, err
	}
	if !isRange {
		return lo, 1, nil
	}
	hi, err := parseAddr4(field, strings.TrimSpace(b))
	if err != nil {
		return lo, 0, err
	}
	l, h := be32(lo), be32(hi)
	if h < l {
		return lo, 0, cube.Unprocessable(field, "inverted pool %q", s)
	}
	if h-l >= 65536 {
		return lo, 0, cube.Unprocessable(field, "pool %q has more than 65536 addresses", s)
	}
	return lo, h - l + 1, nil
}

func be32(a netip.Addr) uint32 { b := a.As4(); return binary.BigEndian.Uint32(b[:]) }

// Validate checks one SNAT rule.
func (r *SNATRule) Validate(*cube.Cube) error {
	if err := checkID(r.ID); err != nil {
		return err
	}
	if _, err := parsePrefix4("internal", r.Internal); err != nil {
		return err
	}
	_, _, err := parsePool("external", r.External)
	return err
}

// Validate checks one DNAT rule.
func (r *DNATRule) Validate(*cube.Cube) error {
	if err := checkID(r.ID); err != nil {
		return err
	}
	if _, err := parseAddr4("external", r.External); err != nil {
		return err
	}
	_, err := parseAddr4("internal", r.Internal)
	return err
}

func parseProto(s string) (uint8, error) {
	switch strings.ToLower(s) {
	case "tcp":
		return unix.IPPROTO_TCP, nil
	case "udp":
		return unix.IPPROTO_UDP, nil
	case "":
		return 0, cube.Errorf("proto", "required: tcp or udp")
	}
	return 0, cube.Errorf("proto", "unknown protocol %q: want tcp or udp", s)
}

// Validate checks one port forwarding rule.
func (r *PortForward) Validate(*cube.Cube) error {
	if err := checkID(r.ID); err != nil {
		return err
	}
	if _, err := parseProto(r.Proto); err != nil {
		return err
	}
	if r.External != "" {
		if _, err := parseAddr4("external", r.External); err != nil {
			return err
		}
	}
	if r.ExternalPort < 1 || r.ExternalPort > 65535 {
		return cube.Errorf("external_port", "port %d out of range 1..65535", r.ExternalPort)
	}
	if _, err := parseAddr4("internal", r.Internal); err != nil {
		return err
	}
	if r.InternalPort < 0 || r.InternalPort > 65535 {
		return cube.Errorf("internal_port", "port %d out of range 1..65535", r.InternalPort)
	}
	return nil
}

var (
	snatTable = cube.Table{Name: "snat", Doc: "Source NAT: flows from an inside prefix leave with an external address (or one of a pool).",
		Item: &SNATRule{}, Key: func(v any) string { return strconv.Itoa(v.(*SNATRule).ID) }, Max: 1024}
	dnatTable = cube.Table{Name: "dnat", Doc: "Static 1:1 NAT between an external and an internal address, both ways.",
		Item: &DNATRule{}, Key: func(v any) string { return strconv.Itoa(v.(*DNATRule).ID) }, Max: 1024}
	pfTable = cube.Table{Name: "port_forwarding", Doc: "Port forwarding: external address:port to an inside address:port.",
		Item: &PortForward{}, Key: func(v any) string { return strconv.Itoa(v.(*PortForward).ID) }, Max: 4096}
)

// Type is the NAT NF type.
var Type = &cube.Type{
	Name:        "nat",
	Description: "Transparent: SNAT, masquerade, static 1:1 NAT and port forwarding for IPv4 TCP/UDP/ICMP echo, with connection tracking; NPTv6 prefix translation for IPv6. Attach it to the outside-facing router port or interface.",
	Transparent: true,
	Hooks:       []datapath.Hook{datapath.XDP, datapath.TC},
	Object:      cube.HookObjects(objects, "bpf/nat"),
	Config:      &Config{},
	Tables:      []cube.Table{snatTable, dnatTable, pfTable, nptTable},
	Views: []cube.View{
		{Name: "sessions", Doc: "Translated flows (connection tracking table).", Item: &Session{}, Unlocked: true,
			List: func(h cube.Handle, _ *cube.Cube) (any, error) { return sessions(h) }},
		{Name: "status", Doc: "Attachment point and masquerade address in use.", Item: &Status{}, Object: true,
			List: func(h cube.Handle, c *cube.Cube) (any, error) {
				ctl := cube.ControllerOf[*controller](h)
				ctl.mu.Lock()
				defer ctl.mu.Unlock()
				st := Status{AttachedTo: ctl.point, Masquerade: ctl.cfg.Masquerade}
				if ctl.masq.IsValid() {
					st.MasqueradeAddress = ctl.masq.String()
				}
				lo, hi, _ := ctl.cfg.ports()
				st.PortRange = fmt.Sprintf("%d-%d", lo, hi)
				return st, nil
			}},
		natCounters.View("Translated packets, sessions opened, drops for lack of a free port, packets passed untranslated, drops of packets that would have left untranslated with an inside source."),
	},
	Actions: []cube.Action{{Name: "flush", Doc: "Delete every session (flows start over with their next packet).",
		Do: func(h cube.Handle, _ *cube.Cube, _ any) (any, error) {
			n, err := cube.ControllerOf[*controller](h).age(h, true)
			if err != nil {
				return nil, err
			}
			return map[string]int{"flushed": n}, nil
		}}},
	New: func() cube.Controller { return &controller{} },
}

func init() { cube.Register(Type) }
