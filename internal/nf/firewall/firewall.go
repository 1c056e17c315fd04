package firewall

import (
	"embed"
	"fmt"
	"net/netip"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/datapath"
	"github.com/edgenf/edgenf/internal/nf/conntrack"
	"github.com/edgenf/edgenf/internal/schema"
)

// MaxRules is the number of rules a chain holds.
const MaxRules = 10240

// Config is the firewall's settings.
type Config struct {
	// IngressPolicy and EgressPolicy are what happens to a packet no rule
	// of the chain matches: accept (default) or drop.
	IngressPolicy string `json:"ingress_policy,omitempty" format:"fw-action" doc:"accept (default) or drop"`
	EgressPolicy  string `json:"egress_policy,omitempty" format:"fw-action" doc:"accept (default) or drop"`
	// AcceptEstablished accepts every packet of a tracked connection
	// (state established or related) before the rules are looked at.
	AcceptEstablished bool `json:"accept_established,omitempty"`
	// LogRate bounds the packets rules with log send to the slow path, per
	// second and CPU (default 100; 0 keeps the default, -1 disables).
	LogRate int `json:"log_rate,omitempty" minimum:"-1" maximum:"1000000"`
	// Timeouts are per-state idle timeouts of tracked connections (s).
	Timeouts *conntrack.Timeouts `json:"timeouts,omitempty"`
}

// Validate checks the settings.
func (c *Config) Validate(*cube.Cube) error {
	for field, p := range map[string]string{"ingress_policy": c.IngressPolicy, "egress_policy": c.EgressPolicy} {
		if _, err := parsePolicy(p); err != nil {
			return cube.Errorf(field, "%v", err)
		}
	}
	if c.LogRate < -1 || c.LogRate > 1000000 {
		return cube.Errorf("log_rate", "%d out of range -1..1000000", c.LogRate)
	}
	if err := c.Timeouts.Validate(); err != nil {
		return cube.Errorf("timeouts", "%v", err)
	}
	return nil
}

func parsePolicy(s string) (uint8, error) {
	switch strings.ToLower(s) {
	case "", "accept":
		return actAccept, nil
	case "drop":
		return actDrop, nil
	}
	return 0, fmt.Errorf("unknown policy %q: want accept or drop", s)
}

const (
	actAccept = 0
	actDrop   = 1
)

// Rule is one rule of a chain. Empty fields match everything; a packet must
// match every field given. Rules are tried by increasing id. A rule without
// addresses and family matches IPv4 and IPv6 alike.
type Rule struct {
	ID int `json:"id" minimum:"1" maximum:"1073741824"`
	// Family restricts the rule to ipv4 or ipv6 (implied by addresses).
	Family string `json:"family,omitempty" enum:"ipv4|ipv6" doc:"ipv4 or ipv6 (absent: implied by src and dst, else both); one src or dst, or proto icmp or icmpv6, disagrees with: 422"`
	// Src and Dst are IPv4 or IPv6 prefixes ("198.18.0.0/16",
	// "2001:db8::/32") or addresses; 0.0.0.0/0 is every IPv4 address, ::/0
	// every IPv6 one.
	Src string `json:"src,omitempty" format:"ip-match"`
	Dst string `json:"dst,omitempty" format:"ip-match" doc:"an IPv4 or IPv6 address or prefix (no bits set after the length), or any; of src's family (422 otherwise)"`
	// Proto is tcp, udp, icmp, icmpv6 or an IP protocol number (the
	// upper-layer header, found past IPv6 extension headers).
	Proto string `json:"proto,omitempty" format:"ip-protocol"`
	// Sport and Dport are a port or an inclusive range "lo-hi" (tcp/udp).
	Sport string `json:"sport,omitempty" format:"port-range"`
	Dport string `json:"dport,omitempty" format:"port-range"`
	// ICMPType is an ICMP or ICMPv6 message type, by number or name
	// (echo-request, echo-reply, destination-unreachable, time-exceeded,
	// parameter-problem; ICMPv6 also packet-too-big and the neighbour
	// discovery types; proto icmp or icmpv6).
	ICMPType string `json:"icmp_type,omitempty" format:"icmp-type"`
	// TCPFlags lists flags that must be set, and with '!' clear:
	// "SYN,!ACK" (FIN SYN RST PSH ACK URG ECE CWR; proto tcp).
	TCPFlags string `json:"tcp_flags,omitempty" format:"tcp-flags"`
	// State is a comma-separated set of connection-tracking states: new,
	// established, related, invalid.
	State string `json:"state,omitempty" format:"ct-states"`
	// Action is accept or drop.
	Action string `json:"action" format:"fw-action"`
	// Log sends matching packets (rate-limited) to the slow path's log.
	Log         bool   `json:"log,omitempty"`
	Description string `json:"description,omitempty"`
}

func init() {
	flag := "!?(" + strings.Join(caseFolded(flagNames()), "|") + ")"
	state := "(" + strings.Join(caseFolded(conntrack.PktStateNames[:]), "|") + ")"
	schema.Register("fw-action", schema.Format{Pattern: schema.Anchored(schema.CaseFold("accept") + "|" + schema.CaseFold("drop")),
		Doc: "accept or drop"})
	schema.Register("ip-protocol", schema.Format{Pattern: schema.Anchored(strings.Join(caseFolded([]string{"tcp", "udp", "icmp", "icmpv6", "ipv6-icmp", "any"}), "|") + "|0*" + schema.Dec8),
		Doc: "tcp, udp, icmp, icmpv6, any, or an IP protocol number 0..255 (icmp in an IPv6 rule, icmpv6 in an IPv4 one: 422)"})
	schema.Register("icmp-type", schema.Format{Pattern: schema.Anchored(icmpTypePattern(icmpTypes, icmp6Types)),
		Doc: "an ICMP (proto icmp) or ICMPv6 (proto icmpv6) message type: 0..255 or its name, e.g. echo-request"})
	schema.Register("tcp-flags", schema.Format{Pattern: schema.Anchored(flag + "(," + flag + ")*"),
		Doc: "TCP flags that must be set, and with '!' clear, each once (422 otherwise): SYN,!ACK (FIN SYN RST PSH ACK URG ECE CWR)"})
	schema.Register("ct-states", schema.Format{Pattern: schema.Anchored(state + "(," + state + ")*"),
		Doc: "connection-tracking states: new, established, related, invalid, e.g. established,related"})
}

// icmpTypePattern matches the names of these tables' ICMP types, in any
// case, and the numbers 0..255 (as icmpType reads them).
func icmpTypePattern(tables ...map[string]int) string {
	var names []string
	for _, t := range tables {
		for n := range t {
			if !slices.Contains(names, n) {
				names = append(names, n)
			}
		}
	}
	sort.Strings(names)
	return strings.Join(caseFolded(names), "|") + "|0*" + schema.Dec8
}

func flagNames() []string {
	out := make([]string, 0, len(flagBits))
	for n := range flagBits {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

func caseFolded(words []string) []string {
	out := make([]string, len(words))
	for i, w := range words {
		out[i] = schema.CaseFold(w)
	}
	return out
}

// RefineSchema: ports need protocol tcp or udp, TCP flags protocol tcp,
// an ICMP type protocol icmp or icmpv6 (and a type of its protocol).
func (*Rule) RefineSchema(s *schema.Schema) {
	s.AnyOf = []*schema.Schema{
		schema.Branch(nil, map[string]*schema.Schema{"sport": schema.Absent(), "dport": schema.Absent(), "tcp_flags": schema.Absent(), "icmp_type": schema.Absent()}),
		schema.Branch([]string{"proto"}, map[string]*schema.Schema{"proto": schema.Str(schema.Anchored(schema.CaseFold("udp") + "|0*17")), "tcp_flags": schema.Absent(), "icmp_type": schema.Absent()}),
		schema.Branch([]string{"proto"}, map[string]*schema.Schema{"proto": schema.Str(schema.Anchored(schema.CaseFold("tcp") + "|0*6")), "icmp_type": schema.Absent()}),
		schema.Branch([]string{"proto"}, map[string]*schema.Schema{"proto": schema.Str(schema.Anchored(schema.CaseFold("icmp") + "|0*1")),
			"sport": schema.Absent(), "dport": schema.Absent(), "tcp_flags": schema.Absent(), "icmp_type": schema.Str(schema.Anchored(icmpTypePattern(icmpTypes)))}),
		schema.Branch([]string{"proto"}, map[string]*schema.Schema{"proto": schema.Str(schema.Anchored(schema.CaseFold("icmpv6") + "|" + schema.CaseFold("ipv6-icmp") + "|0*58")),
			"sport": schema.Absent(), "dport": schema.Absent(), "tcp_flags": schema.Absent(), "icmp_type": schema.Str(schema.Anchored(icmpTypePattern(icmp6Types)))}),
	}
}

// compiled is a validated rule in the form the compiler uses.
type compiled struct {
	id             int
	src, dst       netip.Prefix // zero: any
	proto          int          // -1: any
	sport, dport   [2]uint16    // inclusive range
	hasSp, hasDp   bool
	flagMask, flag uint8
	states         uint8 // bit per conntrack packet state; 0: any
	action         uint8
	log            bool
}

var flagBits = map[string]uint8{"FIN": 0x01, "SYN": 0x02, "RST": 0x04, "PSH": 0x08, "ACK": 0x10, "URG": 0x20, "ECE": 0x40, "CWR": 0x80}

// Validate checks one rule on its own.
func (r *Rule) Validate(*cube.Cube) error {
	_, err := r.compile()
	return err
}

func prefix(field, s string) (netip.Prefix, error) {
	if s == "" || s == "any" {
		return netip.Prefix{}, nil
	}
	p, err := netip.ParsePrefix(s)
	if err != nil {
		a, aerr := netip.ParseAddr(s)
		if aerr != nil || a.Zone() != "" {
			return p, cube.Errorf(field, "invalid prefix %q: want an IPv4 or IPv6 address or address/length, e.g. 198.18.0.0/16 or 2001:db8::/32", s)
		}
		p = netip.PrefixFrom(a, a.BitLen())
	}
	if p.Addr().Is4In6() {
		return p, cube.Errorf(field, "%q is an IPv4-mapped IPv6 address: write the IPv4 prefix (%s)", s,
			netip.PrefixFrom(p.Addr().Unmap(), max(p.Bits()-96, 0)).Masked())
	}
	if p.Masked() != p {
		return p, cube.Unprocessable(field, "%q has host bits set (did you mean %s?)", s, p.Masked())
	}
	return p, nil
}

func portRange(field, s string) ([2]uint16, error) {
	a, b, isRange := strings.Cut(s, "-")
	lo, err := strconv.ParseUint(strings.TrimSpace(a), 10, 16)
	if err != nil {
		return [2]uint16{}, cube.Errorf(field, "invalid port %q: want 0-65535 or lo-hi", s)
	}
	hi := lo
	if isRange {
		if hi, err = strconv.ParseUint(strings.TrimSpace(b), 10, 16); err != nil {
			return [2]uint16{}, cube.Errorf(field, "invalid port %q: want 0-65535 or lo-hi", s)
		}
	}
	if hi < lo {
		return [2]uint16{}, cube.Unprocessable(field, "inverted port range %q: %d > %d", s, lo, hi)
	}
	return [2]uint16{uint16(lo), uint16(hi)}, nil
}

func (r *Rule) compile() (compiled, error) {
	c := compiled{id: r.ID, proto: -1}
	var err error
	if r.ID < 1 || r.ID > 1<<30 {
		return c, cube.Errorf("id", "rule id %d out of range 1..%d", r.ID, 1<<30)
	}
	if c.src, err = prefix("src", r.Src); err != nil {
		return c, err
	}
	if c.dst, err = prefix("dst", r.Dst); err != nil {
		return c, err
	}
	switch p := strings.ToLower(r.Proto); p {
	case "", "any":
	case "tcp":
		c.proto = 6
	case "udp":
		c.proto = 17
	case "icmp":
		c.proto = 1
	case "icmpv6", "ipv6-icmp":
		c.proto = 58
	default:
		n, err := strconv.ParseUint(p, 10, 8)
		if err != nil {
			return c, cube.Errorf("proto", "unknown protocol %q: want tcp, udp, icmp, icmpv6 or a number 0-255", r.Proto)
		}
		c.proto = int(n)
	}
	if err := c.family(r.Family); err != nil {
		return c, err
	}
	if r.Sport != "" || r.Dport != "" {
		if c.proto != 6 && c.proto != 17 {
			f := "sport"
			if r.Sport == "" {
				f = "dport"
			}
			return c, cube.Errorf(f, "ports need proto tcp or udp")
		}
	}
	if r.Sport != "" {
		if c.sport, err = portRange("sport", r.Sport); err != nil {
			return c, err
		}
		c.hasSp = true
	}
	if r.Dport != "" {
		if c.dport, err = portRange("dport", r.Dport); err != nil {
			return c, err
		}
		c.hasDp = true
	}
	if r.ICMPType != "" {
		// The classifier looks ICMP types up as destination ports.
		t, err := icmpType(c.proto, r.ICMPType)
		if err != nil {
			return c, err
		}
		c.dport, c.hasDp = [2]uint16{uint16(t), uint16(t)}, true
	}
	if r.TCPFlags != "" {
		if c.proto != 6 {
			return c, cube.Errorf("tcp_flags", "tcp_flags need proto tcp")
		}
		for _, f := range strings.Split(r.TCPFlags, ",") {
			f = strings.ToUpper(strings.TrimSpace(f))
			neg := strings.HasPrefix(f, "!")
			bit, ok := flagBits[strings.TrimPrefix(f, "!")]
			if !ok {
				return c, cube.Errorf("tcp_flags", "unknown TCP flag %q: want FIN, SYN, RST, PSH, ACK, URG, ECE, CWR, optionally with '!'", f)
			}
			if c.flagMask&bit != 0 {
				return c, cube.Unprocessable("tcp_flags", "flag %s given twice", strings.TrimPrefix(f, "!"))
			}
			c.flagMask |= bit
			if !neg {
				c.flag |= bit
			}
		}
	}
	if r.State != "" {
		for _, s := range strings.Split(r.State, ",") {
			s = strings.ToLower(strings.TrimSpace(s))
			found := false
			for i, n := range conntrack.PktStateNames {
				if n == s {
					c.states |= 1 << i
					found = true
				}
			}
			if !found {
				return c, cube.Errorf("state", "unknown state %q: want new, established, related or invalid", s)
			}
		}
	}
	switch strings.ToLower(r.Action) {
	case "accept":
		c.action = actAccept
	case "drop":
		c.action = actDrop
	case "":
		return c, cube.Errorf("action", "required: accept or drop")
	default:
		return c, cube.Errorf("action", "unknown action %q: want accept or drop", r.Action)
	}
	c.log = r.Log
	return c, nil
}

// objects are the fast path built for each hook (make bpf).
//
//go:embed bpf/*.o
var objects embed.FS

// Chains, as the direction index.
var chainNames = [2]string{"ingress", "egress"}

func ruleTable(chain string) cube.Table {
	return cube.Table{
		Name: chain,
		Doc:  fmt.Sprintf("Rules of the %s chain, tried by increasing id; the first match decides.", chain),
		Item: &Rule{},
		Key:  func(v any) string { return strconv.Itoa(v.(*Rule).ID) },
		Max:  MaxRules,
	}
}

var tables = []cube.Table{ruleTable("ingress"), ruleTable("egress")}

// Type is the firewall NF type.
var Type = &cube.Type{
	Name:        "firewall",
	Description: "Transparent: ingress/egress chains of IPv4 rules (prefixes, protocol, ports, TCP flags, conntrack state), accept/drop/log, default policies, per-rule counters; bit-vector classification, atomic rule-set replacement.",
	Transparent: true,
	Hooks:       []datapath.Hook{datapath.XDP, datapath.TC},
	Object:      cube.HookObjects(objects, "bpf/firewall"),
	Config:      &Config{},
	Tables:      tables,
	Views: []cube.View{
		{Name: "counters", Doc: "Packets and bytes per rule; id 0 is the chain's default policy, -1 the accept_established shortcut, -2 frames that could not be parsed (judged by the policy), -3 fragments dropped for hiding or rewriting their L4 header.",
			Item: &RuleCounter{}, List: func(h cube.Handle, c *cube.Cube) (any, error) { return ruleCounters(h, c) }},
		{Name: "connections", Doc: "Tracked connections (originator first; at most 10,000 listed).", Item: &Connection{}, Unlocked: true,
			List: func(h cube.Handle, _ *cube.Cube) (any, error) { return connections(h) }},
		{Name: "log", Doc: "The last packets matched by rules with log (rate-limited).", Item: &LogEntry{},
			List: func(h cube.Handle, _ *cube.Cube) (any, error) {
				ctl := cube.ControllerOf[*controller](h)
				ctl.mu.Lock()
				defer ctl.mu.Unlock()
				return append([]LogEntry{}, ctl.log...), nil
			}},
	},
	Actions: []cube.Action{
		{Name: "flush-connections", Doc: "Forget every tracked connection.", Do: func(h cube.Handle, _ *cube.Cube, _ any) (any, error) {
			n, err := cube.ControllerOf[*controller](h).ageConns(h, true)
			if err != nil {
				return nil, err
			}
			return map[string]int{"flushed": n}, nil
		}},
	},
	New: func() cube.Controller { return &controller{} },
}

func init() { cube.Register(Type) }

// family checks that addresses, family and protocol agree, and makes a
// family-specific rule without addresses match its whole family.
func (c *compiled) family(fam string) error {
	is4 := func(p netip.Prefix) bool { return p.Addr().Is4() }
	switch {
	case c.src.IsValid() && c.dst.IsValid() && is4(c.src) != is4(c.dst):
		return cube.Unprocessable("dst", "%s and src %s are of different address families", c.dst, c.src)
	}
	v := 0 // 4, 6 or 0: either
	for _, p := range []netip.Prefix{c.src, c.dst} {
		if p.IsValid() {
			v = 6
			if is4(p) {
				v = 4
			}
		}
	}
	switch strings.ToLower(fam) {
	case "":
	case "ipv4", "ip4", "inet":
		if v == 6 {
			return cube.Unprocessable("family", "ipv4, but the rule's addresses are IPv6")
		}
		v = 4
	case "ipv6", "ip6", "inet6":
		if v == 4 {
			return cube.Unprocessable("family", "ipv6, but the rule's addresses are IPv4")
		}
		v = 6
	default:
		return cube.Errorf("family", "unknown family %q: want ipv4 or ipv6", fam)
	}
	switch {
	case c.proto == 1 && v == 6:
		return cube.Unprocessable("proto", "icmp is IPv4's: IPv6 rules want icmpv6")
	case c.proto == 58 && v == 4:
		return cube.Unprocessable("proto", "icmpv6 is IPv6's: IPv4 rules want icmp")
	}
	if v == 4 && !c.src.IsValid() {
		c.src = netip.PrefixFrom(netip.IPv4Unspecified(), 0)
	}
	if v == 6 && !c.src.IsValid() {
		c.src = netip.PrefixFrom(netip.IPv6Unspecified(), 0)
	}
	return nil
}

var icmpTypes = map[string]int{"echo-reply": 0, "destination-unreachable": 3, "echo-request": 8, "time-exceeded": 11, "parameter-problem": 12}

var icmp6Types = map[string]int{"destination-unreachable": 1, "packet-too-big": 2, "time-exceeded": 3, "parameter-problem": 4,
	"echo-request": 128, "echo-reply": 129, "router-solicitation": 133, "router-advertisement": 134,
	"neighbor-solicitation": 135, "neighbor-advertisement": 136, "redirect": 137}

func icmpType(proto int, s string) (int, error) {
	names := icmpTypes
	switch proto {
	case 1:
	case 58:
		names = icmp6Types
	default:
		return 0, cube.Errorf("icmp_type", "icmp_type needs proto icmp or icmpv6")
	}
	if t, ok := names[strings.ToLower(s)]; ok {
		return t, nil
	}
	n, err := strconv.ParseUint(s, 10, 8)
	if err != nil {
		known := make([]string, 0, len(names))
		for k := range names {
			known = append(known, k)
		}
		sort.Strings(known)
		return 0, cube.Errorf("icmp_type", "unknown type %q: want 0-255 or one of %s", s, strings.Join(known, ", "))
	}
	return int(n), nil
}
