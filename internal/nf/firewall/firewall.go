package firewall

import (
	"embed"
	"fmt"
	"net/netip"
	"strconv"
	"strings"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/datapath"
	"github.com/edgenf/edgenf/internal/nf/conntrack"
)

// MaxRules is the number of rules a chain holds.
const MaxRules = 10240

// Config is the firewall's settings.
type Config struct {
	// IngressPolicy and EgressPolicy are what happens to a packet no rule
	// of the chain matches: accept (default) or drop.
	IngressPolicy string `json:"ingress_policy,omitempty"`
	EgressPolicy  string `json:"egress_policy,omitempty"`
	// AcceptEstablished accepts every packet of a tracked connection
	// (state established or related) before the rules are looked at.
	AcceptEstablished bool `json:"accept_established,omitempty"`
	// LogRate bounds the packets rules with log send to the slow path, per
	// second and CPU (default 100; 0 keeps the default, -1 disables).
	LogRate int `json:"log_rate,omitempty"`
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
// match every field given. Rules are tried by increasing id.
type Rule struct {
	ID int `json:"id"`
	// Src and Dst are IPv4 prefixes ("198.18.0.0/16") or addresses.
	Src string `json:"src,omitempty"`
	Dst string `json:"dst,omitempty"`
	// Proto is tcp, udp, icmp or an IP protocol number.
	Proto string `json:"proto,omitempty"`
	// Sport and Dport are a port or an inclusive range "lo-hi" (tcp/udp).
	Sport string `json:"sport,omitempty"`
	Dport string `json:"dport,omitempty"`
	// TCPFlags lists flags that must be set, and with '!' clear:
	// "SYN,!ACK" (FIN SYN RST PSH ACK URG ECE CWR; proto tcp).
	TCPFlags string `json:"tcp_flags,omitempty"`
	// State is a comma-separated set of connection-tracking states: new,
	// established, related, invalid.
	State string `json:"state,omitempty"`
	// Action is accept or drop.
	Action string `json:"action"`
	// Log sends matching packets (rate-limited) to the slow path's log.
	Log         bool   `json:"log,omitempty"`
	Description string `json:"description,omitempty"`
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
	if s == "" || s == "any" || s == "0.0.0.0/0" {
		return netip.Prefix{}, nil
	}
	p, err := netip.ParsePrefix(s)
	if err != nil {
		a, aerr := netip.ParseAddr(s)
		if aerr != nil {
			return p, cube.Errorf(field, "invalid prefix %q: want an IPv4 address or address/length, e.g. 198.18.0.0/16", s)
		}
		p = netip.PrefixFrom(a, a.BitLen())
	}
	if !p.Addr().Is4() {
		return p, cube.Errorf(field, "%q is not IPv4: the firewall classifies IPv4 (other traffic passes)", s)
	}
	if p.Masked() != p {
		return p, cube.Errorf(field, "%q has host bits set (did you mean %s?)", s, p.Masked())
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
		return [2]uint16{}, cube.Errorf(field, "inverted port range %q: %d > %d", s, lo, hi)
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
	default:
		n, err := strconv.ParseUint(p, 10, 8)
		if err != nil {
			return c, cube.Errorf("proto", "unknown protocol %q: want tcp, udp, icmp or a number 0-255", r.Proto)
		}
		c.proto = int(n)
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
				return c, cube.Errorf("tcp_flags", "flag %s given twice", strings.TrimPrefix(f, "!"))
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
