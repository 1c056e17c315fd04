// Package slicer is the slicer NF: the classifier at a tenant entry point
// that steers each frame into its slice's chain, polices the slice's rate
// and marks the frame (md->tenant, and at TC skb->priority = the slice's
// HTB class), and the owner of the egress qdiscs that keep the slices'
// guaranteed minimums and priorities. docs/nf/slicer.md is its reference.
package slicer

import (
	"embed"
	"encoding/json"
	"fmt"
	"net/netip"
	"sort"
	"strconv"
	"strings"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/datapath"
	"github.com/edgenf/edgenf/internal/nf/slicer/rate"
	"github.com/edgenf/edgenf/internal/nf/slicer/shaping"
	"github.com/edgenf/edgenf/internal/schema"
)

// MaxSliceID bounds slice ids (1..MaxSliceID): the size of the datapath's
// slice arrays less the unused id 0.
const MaxSliceID = 1023

// MaxSlices bounds the slices of one slicer: one per slice id. A slice
// that leads into its chain through a port of the slicer (port) takes one
// of its 64 ports; one that names its chain's entry (chain) takes none.
const MaxSlices = MaxSliceID

// MaxPortSlices bounds the slices that lead into their chains through
// ports of the slicer: its ports but the entry.
const MaxPortSlices = datapath.MaxPorts - 1

// Settings are a slicer's settings.
type Settings struct {
	// Uplink is the entry port slices' return traffic leaves by unless a
	// slice names another (its peer: the entry interface). Required once
	// the slicer has slices.
	Uplink string `json:"uplink,omitempty" format:"name" doc:"the entry port slices' return traffic leaves by unless a slice names another; required once the slicer has slices (409 otherwise), and not a slice's port (409)"`
	// Default is the slice unmatched traffic goes to; empty: it is dropped
	// (and counted as a policy drop).
	Default string `json:"default,omitempty" format:"name" doc:"the slice unmatched traffic goes to (one the slicer does not have: 404); absent: it is dropped"`
	// Egress lists the interfaces whose egress qdisc the slicer owns: an
	// HTB tree with one class per slice, so slices' guaranteed minimums,
	// ceilings and priorities hold where their traffic leaves.
	Egress []Egress `json:"egress,omitempty" doc:"the interfaces whose egress the slicer shapes, each once (409 otherwise); shaping needs hook tc (422 otherwise)"`
	// Shaping is the egress mechanism: "htb" (guaranteed minimums,
	// priorities, rate limits as ceilings) or "edt" (Earliest Departure
	// Time pacing of the rate limits under sch_fq, as Cilium's Bandwidth
	// Manager; no minimums or priorities; needs the fq qdisc). Absent:
	// picked by probing the kernel (edt where it has sch_fq and no slice
	// needs classes, else htb).
	Shaping string `json:"shaping,omitempty" enum:"htb|edt" doc:"htb (minimums, priorities, ceilings) or edt (rate limits only: a slice with min_bps or priority: 422); absent: picked by probing the kernel (edt where it has sch_fq and no slice has min_bps or priority, else htb)"`
}

// Egress mechanisms.
const (
	ShapingHTB = shaping.HTB
	ShapingEDT = shaping.EDT
)

// mechanism is the egress mechanism for the slices list, and why: the
// settings' choice, else what probing the kernel picks.
func (s *Settings) mechanism(list []*Slice) (mech, why string, err error) {
	if s.Shaping != "" {
		return s.Shaping, "set in the settings", nil
	}
	classes := false
	for _, sl := range list {
		classes = classes || sl.MinBps > 0 || sl.Priority != nil
	}
	return shaping.Probe().Pick(classes)
}

// Egress is one interface the slicer shapes at.
type Egress struct {
	Interface string `json:"interface" format:"ifname"`
	// RateBps is the link rate in bits/s the slices share there; their
	// guaranteed minimums must fit in it (admission control).
	RateBps uint64 `json:"rate_bps" minimum:"8000" doc:"the link rate, bits/s, at least 8000; the slices' guaranteed minimums must fit in it (409 otherwise)"`
}

// Interfaces names the egress interfaces: a tenant may name only its own
// (slicers are the administrator's in practice).
func (s *Settings) Interfaces() []string {
	var out []string
	for _, e := range s.Egress {
		out = append(out, e.Interface)
	}
	return out
}

// Slice is one slice: who owns it, what traffic is its, where that traffic
// goes and what it is promised.
type Slice struct {
	Name string `json:"name" format:"name"`
	// ID is the slice's number: md->tenant in the datapath, its HTB class
	// (ed00:ID+0x100) and its metrics label. 1..1023, unique in the slicer.
	ID     int    `json:"id" minimum:"1" maximum:"1023" doc:"the slice's number, 1..1023, unique in the slicer (409 otherwise)"`
	Tenant string `json:"tenant,omitempty" format:"name"`
	// Port is the slicer port peered with the slice's chain entry; or
	// Chain is that entry itself, a port of one of the tenant's cubes
	// that has no peer: the slicer enters it and it comes back to the
	// slicer without a port between (any number of slices).
	Port  string `json:"port,omitempty" format:"name" doc:"the slicer port peered with the slice's chain entry: one of the slicer's (404 otherwise), another slice's or the uplink: 409; give port or chain (422 otherwise)"`
	Chain string `json:"chain,omitempty" format:"slice-chain" doc:"the slice's chain entry, cube:port, entered with no slicer port between (a slicer serves up to 1023 such slices): a port of a cube of the slice's tenant (409 otherwise) at the slicer's hook (422), with no peer and no other slice's (409); no such cube or port: 404"`
	// Entry is the port its return traffic leaves by (default: the
	// settings' uplink).
	Entry string `json:"entry,omitempty" format:"name"`
	Rules []Rule `json:"rules,omitempty" doc:"what traffic is the slice's: at most one vlan rule (422 otherwise); a match another slice has: 409"`
	// Rate limit at ingress, policed in the kernel: bits/s and packets/s
	// with their bursts (bytes, packets). 0: no limit.
	RateBps      uint64 `json:"rate_bps,omitempty"`
	BurstBytes   uint64 `json:"burst_bytes,omitempty" minimum:"1600" doc:"bytes, at least one full frame (1600); needs rate_bps (422 otherwise)"`
	RatePps      uint64 `json:"rate_pps,omitempty"`
	BurstPackets uint64 `json:"burst_packets,omitempty" doc:"packets; needs rate_pps (422 otherwise)"`
	// MinBps is the guaranteed minimum under contention at every egress
	// interface (its HTB class rate).
	MinBps uint64 `json:"min_bps,omitempty" doc:"the guaranteed minimum, bits/s: at most rate_bps if that is given, and only with hook tc (422 otherwise); shaping htb"`
	// Priority is the class: 0 highest .. 7 lowest (default 4). Under
	// contention, spare capacity goes to the highest class first.
	Priority *int `json:"priority,omitempty" minimum:"0" maximum:"7"`
	// LatencyMs is a queueing-delay target; admission checks that the
	// slice's HTB class can meet it (see docs/nf/slicer.md).
	LatencyMs float64 `json:"latency_ms,omitempty" minimum:"0" doc:"a queueing-delay target, ms: needs min_bps, and a class burst at min_bps that drains within it (422 otherwise)"`
	// BudgetNS is the slice's own per-packet cost budget: a change that
	// would push the estimate of the slice's chain past it is refused
	// (internal/estimate; tighter than the daemon's -core-budget-ns).
	BudgetNS float64 `json:"budget_ns,omitempty" minimum:"0" doc:"the slice's per-packet cost budget, ns: a change that would push the estimate of the slice's chain (slicer, its cubes, back) past it is refused with the numbers (409); absent or 0: only the daemon's -core-budget-ns; only with port (422 with chain)"`
}

// Rule maps traffic at an entry port to a slice. A VLAN rule makes the slice
// that VLAN's VRF: the tag is taken off on the way into the slice's chain
// and put back on the return traffic. A rule has exactly one
// kind: in_port, vlan, src, dst, dscp, proto (with an optional port),
// teid or ue_pool.
type Rule struct {
	InPort string `json:"in_port,omitempty" format:"name" doc:"an entry port of the slicer (404 otherwise; a slice's port: 422)"`
	VLAN   *int   `json:"vlan,omitempty" minimum:"1" maximum:"4094"`
	Src    string `json:"src,omitempty" format:"ip-host"`
	Dst    string `json:"dst,omitempty" format:"ip-host"`
	DSCP   *int   `json:"dscp,omitempty" minimum:"0" maximum:"63"`
	Proto  string `json:"proto,omitempty" format:"slice-protocol"`
	// DPort is the destination port, with proto tcp, udp or sctp.
	DPort int `json:"port,omitempty" minimum:"1" maximum:"65535" doc:"a destination port, with proto tcp, udp or sctp (422 otherwise)"`
	// TEID is a GTP-U TEID or an inclusive range "first-last".
	TEID string `json:"teid,omitempty" format:"slicer-teid"`
	// UEPool is a UE address pool: the inner source of GTP-U G-PDUs.
	UEPool string `json:"ue_pool,omitempty" format:"ip-host"`
}

func init() {
	schema.Register("slice-protocol", schema.Format{
		Pattern: schema.Anchored(strings.Join([]string{schema.CaseFold("tcp"), schema.CaseFold("udp"), schema.CaseFold("sctp"),
			schema.CaseFold("icmp"), schema.CaseFold("icmpv6")}, "|") + "|0*(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9][0-9]?)"),
		Doc: "tcp, udp, sctp, icmp, icmpv6 or an IP protocol number 1..255"})
	// ParseUint with base 0 reads decimal without leading zeros and 0x hex.
	teid := `(0|[1-9][0-9]{0,8}|[1-3][0-9]{9}|4[01][0-9]{8}|42[0-8][0-9]{7}|429[0-3][0-9]{6}|4294[0-8][0-9]{5}|42949[0-5][0-9]{4}|429496[0-6][0-9]{3}|4294967[01][0-9]{2}|42949672[0-8][0-9]|429496729[0-5]|0[xX][0-9A-Fa-f]{1,8})`
	schema.Register("slice-chain", schema.Format{Pattern: schema.Anchored(schema.Name + ":" + schema.Name),
		Doc: `a cube's port, "cube:port"`})
	schema.Register("slicer-teid", schema.Format{Pattern: schema.Anchored(teid + "(-" + teid + ")?"),
		Doc: "a GTP-U TEID, 0..4294967295 (decimal or 0x hex), or a range first-last with first <= last (422 otherwise)"})
}

// RefineSchema: a rule matches on exactly one kind (proto with an
// optional port).
func (*Rule) RefineSchema(s *schema.Schema) {
	kinds := [][]string{{"in_port"}, {"vlan"}, {"src"}, {"dst"}, {"dscp"}, {"proto", "port"}, {"teid"}, {"ue_pool"}}
	for _, k := range kinds {
		props := map[string]*schema.Schema{}
		for _, o := range kinds {
			if o[0] != k[0] {
				for _, f := range o {
					props[f] = schema.Absent()
				}
			}
		}
		s.AnyOf = append(s.AnyOf, schema.Branch(k[:1], props))
	}
}

// DefaultPriority is the class of a slice that names none.
const DefaultPriority = 4

func (s *Slice) priority() int {
	if s.Priority == nil {
		return DefaultPriority
	}
	return *s.Priority
}

// rule kinds, in the datapath's precedence order (slicer.bpf.c)
const (
	kindTEID = iota
	kindUE
	kindVLAN
	kindL4
	kindDst
	kindSrc
	kindDSCP
	kindPort
)

var protos = map[string]uint8{"icmp": 1, "tcp": 6, "udp": 17, "icmpv6": 58, "sctp": 132}

// parsed is a rule in the datapath's terms.
type parsed struct {
	kind   int
	port   int          // kindPort: the port index
	num    uint32       // kindVLAN, kindDSCP
	proto  uint8        // kindL4
	dport  uint16       // kindL4
	prefix netip.Prefix // kindSrc, kindDst, kindUE
	lo, hi uint32       // kindTEID
}

// key identifies what a rule matches, to find two slices claiming the
// same traffic.
func (p parsed) key() string {
	switch p.kind {
	case kindPort:
		return fmt.Sprintf("in_port %d", p.port)
	case kindVLAN:
		return fmt.Sprintf("vlan %d", p.num)
	case kindDSCP:
		return fmt.Sprintf("dscp %d", p.num)
	case kindL4:
		return fmt.Sprintf("proto %d port %d", p.proto, p.dport)
	case kindSrc:
		return "src " + p.prefix.String()
	case kindDst:
		return "dst " + p.prefix.String()
	case kindUE:
		return "ue_pool " + p.prefix.String()
	}
	return fmt.Sprintf("teid %d-%d", p.lo, p.hi)
}

func parsePrefix(field, s string) (netip.Prefix, error) {
	p, err := netip.ParsePrefix(s)
	if err != nil {
		a, aerr := netip.ParseAddr(s)
		if aerr != nil {
			return p, cube.Errorf(field, "%q is not an IPv4 or IPv6 prefix (198.18.0.0/24, 2001:db8::/64) or address", s)
		}
		p = netip.PrefixFrom(a, a.BitLen())
	}
	if p.Addr().Zone() != "" {
		return p, cube.Errorf(field, "%q: a prefix takes no zone", s)
	}
	if p.Masked() != p {
		return p, cube.Unprocessable(field, "%q has host bits set (the prefix is %s)", s, p.Masked())
	}
	return p.Masked(), nil
}

func parseTEID(field, s string) (uint32, uint32, error) {
	lo, hi, isRange := strings.Cut(s, "-")
	a, err := strconv.ParseUint(strings.TrimSpace(lo), 0, 32)
	if err != nil {
		return 0, 0, cube.Errorf(field, "%q: a TEID is a 32-bit number, or a range first-last", s)
	}
	b := a
	if isRange {
		if b, err = strconv.ParseUint(strings.TrimSpace(hi), 0, 32); err != nil {
			return 0, 0, cube.Errorf(field, "%q: a TEID is a 32-bit number, or a range first-last", s)
		}
	}
	if b < a {
		return 0, 0, cube.Unprocessable(field, "%q: the range ends before it starts", s)
	}
	return uint32(a), uint32(b), nil
}

// parse checks a rule against the cube and gives its datapath form.
func (r *Rule) parse(c *cube.Cube, slicePorts map[string]bool) (parsed, error) {
	var p parsed
	n := 0
	set := func(k int) { p.kind = k; n++ }
	if r.InPort != "" {
		set(kindPort)
		port := c.Port(r.InPort)
		if port == nil {
			return p, cube.NotFound("in_port", "cube %s has no port %q", c.Name, r.InPort)
		}
		if slicePorts[r.InPort] {
			return p, cube.Unprocessable("in_port", "port %s leads into a slice's chain: rules match at entry ports", r.InPort)
		}
		p.port = port.Index
	}
	if r.VLAN != nil {
		set(kindVLAN)
		if *r.VLAN < 1 || *r.VLAN > 4094 {
			return p, cube.Errorf("vlan", "VLAN id %d out of range 1..4094", *r.VLAN)
		}
		p.num = uint32(*r.VLAN)
	}
	if r.DSCP != nil {
		set(kindDSCP)
		if *r.DSCP < 0 || *r.DSCP > 63 {
			return p, cube.Errorf("dscp", "DSCP %d out of range 0..63", *r.DSCP)
		}
		p.num = uint32(*r.DSCP)
	}
	if r.Proto != "" {
		set(kindL4)
		if v, ok := protos[strings.ToLower(r.Proto)]; ok {
			p.proto = v
		} else if v, err := strconv.ParseUint(r.Proto, 10, 8); err == nil && v > 0 {
			p.proto = uint8(v)
		} else {
			return p, cube.Errorf("proto", "unknown protocol %q (tcp, udp, sctp, icmp, icmpv6 or a number 1..255)", r.Proto)
		}
		if r.DPort != 0 {
			if p.proto != 6 && p.proto != 17 && p.proto != 132 {
				return p, cube.Unprocessable("port", "a port needs proto tcp, udp or sctp")
			}
			if r.DPort < 1 || r.DPort > 65535 {
				return p, cube.Errorf("port", "port %d out of range 1..65535", r.DPort)
			}
			p.dport = uint16(r.DPort)
		}
	} else if r.DPort != 0 {
		return p, cube.Errorf("port", "a port needs proto (tcp, udp or sctp)")
	}
	var err error
	if r.Src != "" {
		set(kindSrc)
		if p.prefix, err = parsePrefix("src", r.Src); err != nil {
			return p, err
		}
	}
	if r.Dst != "" {
		set(kindDst)
		if p.prefix, err = parsePrefix("dst", r.Dst); err != nil {
			return p, err
		}
	}
	if r.UEPool != "" {
		set(kindUE)
		if p.prefix, err = parsePrefix("ue_pool", r.UEPool); err != nil {
			return p, err
		}
	}
	if r.TEID != "" {
		set(kindTEID)
		if p.lo, p.hi, err = parseTEID("teid", r.TEID); err != nil {
			return p, err
		}
	}
	switch {
	case n == 0:
		return p, cube.Errorf("", "an empty rule: give one of in_port, vlan, src, dst, dscp, proto, teid, ue_pool")
	case n > 1:
		return p, cube.Errorf("", "a rule matches on one kind (in_port, vlan, src, dst, dscp, proto[+port], teid or ue_pool): give several rules for several")
	}
	return p, nil
}

// teidBlocks covers [lo, hi] with aligned power-of-two blocks: the prefixes
// an LPM trie matches a TEID against.
func teidBlocks(lo, hi uint32) []struct {
	Base uint32
	Len  int
} {
	var out []struct {
		Base uint32
		Len  int
	}
	for cur := uint64(lo); cur <= uint64(hi); {
		size := 0 // log2 of the block
		for size < 32 {
			next := size + 1
			if cur&((1<<next)-1) != 0 || cur+(1<<next)-1 > uint64(hi) {
				break
			}
			size = next
		}
		out = append(out, struct {
			Base uint32
			Len  int
		}{uint32(cur), 32 - size})
		cur += 1 << size
	}
	return out
}

// Validate checks one slice against the cube's ports.
func (s *Slice) Validate(c *cube.Cube) error {
	if err := cube.CheckName("name", s.Name); err != nil {
		return err
	}
	if s.ID < 1 || s.ID > MaxSliceID {
		return cube.Errorf("id", "slice id %d out of range 1..%d", s.ID, MaxSliceID)
	}
	if s.Tenant != "" {
		if err := cube.CheckName("tenant", s.Tenant); err != nil {
			return err
		}
	}
	switch {
	case s.Port == "" && s.Chain == "":
		return cube.Unprocessable("port", "required: port (the slicer port peered with the slice's chain entry) or chain (the entry, cube:port)")
	case s.Port != "" && s.Chain != "":
		return cube.Unprocessable("chain", "give port or chain, not both: a slice enters its chain one way")
	case s.Chain != "":
		ep, err := cube.ParseEndpoint(s.Chain)
		if err != nil || !ep.IsCube() {
			return cube.Errorf("chain", "%q is not a cube port (cube:port)", s.Chain)
		}
		if ep.Cube == c.Name {
			return cube.Unprocessable("chain", "%s is a port of the slicer itself: a chain entry is a port of the slice's first cube", s.Chain)
		}
	case c.Port(s.Port) == nil:
		return cube.NotFound("port", "cube %s has no port %q", c.Name, s.Port)
	}
	if s.Entry != "" && c.Port(s.Entry) == nil {
		return cube.NotFound("entry", "cube %s has no port %q", c.Name, s.Entry)
	}
	if s.Chain != "" && s.BudgetNS > 0 {
		return cube.Unprocessable("budget_ns", "a per-slice budget needs a slice with a port: the estimator walks a slice's chain from the slicer port leading into it")
	}
	vlans := 0
	for _, r := range s.Rules {
		if r.VLAN != nil {
			if vlans++; vlans > 1 {
				return cube.Unprocessable("rules", "a slice has at most one VLAN: its chain sees its frames untagged, and return traffic is tagged with it")
			}
		}
	}
	if s.Priority != nil && (*s.Priority < 0 || *s.Priority > 7) {
		return cube.Errorf("priority", "priority %d out of range 0 (highest)..7", *s.Priority)
	}
	if s.RateBps > 0 && s.MinBps > s.RateBps {
		return cube.Unprocessable("min_bps", "the guaranteed minimum %s exceeds the rate limit %s", Bits(s.MinBps), Bits(s.RateBps))
	}
	if s.BurstBytes > 0 && s.BurstBytes < 1600 {
		return cube.Errorf("burst_bytes", "a burst of %d bytes is smaller than one full frame: at least 1600", s.BurstBytes)
	}
	if s.BurstBytes > 0 && s.RateBps == 0 {
		return cube.Unprocessable("burst_bytes", "a burst needs rate_bps")
	}
	if s.BurstPackets > 0 && s.RatePps == 0 {
		return cube.Unprocessable("burst_packets", "a burst needs rate_pps")
	}
	if s.LatencyMs < 0 {
		return cube.Errorf("latency_ms", "a negative latency target")
	}
	if s.LatencyMs > 0 && s.MinBps == 0 {
		return cube.Unprocessable("latency_ms", "a latency target needs a guaranteed minimum (min_bps): without one the slice has no class bandwidth to bound its queue")
	}
	if d := s.worstDelayMs(); s.LatencyMs > 0 && d > s.LatencyMs {
		return cube.Unprocessable("latency_ms", "target %.3g ms cannot be met: a full HTB burst of the class (%d bytes) drains in %.3g ms at its guaranteed %s; raise min_bps or the target", s.LatencyMs, classBurst(s.MinBps), d, Bits(s.MinBps))
	}
	return s.crossCheck(c)
}

// classBurst is the bytes an HTB class may send at once at rate bps: what
// vishvananda/netlink derives (rate/HZ + MTU), the head-of-line delay bound
// of a frame of the class once it is at the front of the class's queue.
func classBurst(bps uint64) uint64 { return bps/8/250 + 1600 }

// worstDelayMs bounds the wait of a frame at the head of the slice's class
// queue behind a full burst at its guaranteed rate.
func (s *Slice) worstDelayMs() float64 {
	if s.MinBps == 0 {
		return 0
	}
	return float64(classBurst(s.MinBps)*8) / float64(s.MinBps) * 1000
}

// others decodes the slices of c other than the one named skip; entries
// that do not decode are left to their own validation.
func others(c *cube.Cube, skip string) []*Slice {
	var out []*Slice
	for key, raw := range c.Tables["slices"] {
		if key == skip {
			continue
		}
		var sl Slice
		if json.Unmarshal(raw, &sl) == nil {
			out = append(out, &sl)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// admission checks that the guaranteed minimums fit every egress link.
func admission(set *Settings, list []*Slice) (int, error) {
	var sum uint64
	var parts []string
	for _, sl := range list {
		if sl.MinBps > 0 {
			sum += sl.MinBps
			parts = append(parts, fmt.Sprintf("%s %s", sl.Name, Bits(sl.MinBps)))
		}
	}
	if sum > 0 && len(set.Egress) == 0 {
		return -1, cube.Conflict("", "slices have guaranteed minimums but the slicer shapes at no interface: list the egress interfaces and their rates in its settings")
	}
	for i, e := range set.Egress {
		if sum > e.RateBps {
			return i, cube.Conflict("", "admission refused: the slices' guaranteed minimums sum to %s (%s), more than %s's %s",
				Bits(sum), strings.Join(parts, ", "), e.Interface, Bits(e.RateBps))
		}
	}
	return 0, nil
}

// crossCheck checks s against the cube's other slices: ids and ports used
// once, no two slices claiming the same traffic, admission control.
func (s *Slice) crossCheck(c *cube.Cube) error {
	set := &Settings{}
	if cube.DecodeInto("config", c.Config, set) != nil {
		return nil // the settings' own validation reports it
	}
	list := others(c, s.Name)
	slicePorts := portsOf(append(list, s))
	for _, o := range list {
		if o.ID == s.ID {
			return cube.Conflict("id", "slice id %d is also slice %s's", s.ID, o.Name)
		}
		if s.Port != "" && o.Port == s.Port {
			return cube.Conflict("port", "port %s already leads into slice %s's chain: a port serves one slice", s.Port, o.Name)
		}
		if s.Chain != "" && o.Chain == s.Chain {
			return cube.Conflict("chain", "%s is already slice %s's chain entry: an entry serves one slice", s.Chain, o.Name)
		}
	}
	if s.Port != "" && s.Port == set.Uplink {
		return cube.Conflict("port", "port %s is the uplink, an entry port: a slice's port leads into its chain", s.Port)
	}
	if s.Entry != "" && slicePorts[s.Entry] {
		return cube.Conflict("entry", "port %s leads into a slice's chain; the entry is an entry port", s.Entry)
	}
	claims := map[string]string{}
	type span struct {
		lo, hi uint32
		slice  string
	}
	var teids []span
	for _, o := range list {
		for _, r := range o.Rules {
			p, err := r.parse(c, slicePorts)
			if err != nil {
				continue
			}
			if p.kind == kindTEID {
				teids = append(teids, span{p.lo, p.hi, o.Name})
			} else {
				claims[p.key()] = o.Name
			}
		}
	}
	for i, r := range s.Rules {
		field := fmt.Sprintf("rules[%d]", i)
		p, err := r.parse(c, slicePorts)
		if err != nil {
			return cube.Within(field, err)
		}
		if p.kind == kindTEID {
			for _, t := range teids {
				if p.lo <= t.hi && t.lo <= p.hi {
					return cube.Conflict(field+".teid", "TEIDs %d-%d overlap %d-%d of slice %s", p.lo, p.hi, t.lo, t.hi, t.slice)
				}
			}
			continue
		}
		if other, dup := claims[p.key()]; dup {
			return cube.Conflict(field, "%s is already slice %s's: each match belongs to one slice", p.key(), other)
		}
	}
	if s.MinBps > 0 {
		if _, err := admission(set, append(list, s)); err != nil {
			return cube.Within("min_bps", err)
		}
	}
	if s.MinBps > 0 && c.Hook != "tc" {
		return cube.Unprocessable("min_bps", "a guaranteed minimum needs hook tc: frames XDP redirects never meet a qdisc")
	}
	return nil
}

// Validate checks the settings, and those checks on the slices that the
// settings can break: the uplink, the default slice, admission control.
func (s *Settings) Validate(c *cube.Cube) error {
	list := others(c, "")
	if s.Uplink == "" {
		if len(list) > 0 {
			return cube.Conflict("uplink", "required once the slicer has slices: the entry port their return traffic leaves by")
		}
	} else if c.Port(s.Uplink) == nil {
		return cube.NotFound("uplink", "cube %s has no port %q", c.Name, s.Uplink)
	}
	seenIf := map[string]bool{}
	for i, e := range s.Egress {
		field := fmt.Sprintf("egress[%d]", i)
		if e.Interface == "" {
			return cube.Errorf(field+".interface", "required")
		}
		if seenIf[e.Interface] {
			return cube.Conflict(field+".interface", "interface %s listed twice", e.Interface)
		}
		seenIf[e.Interface] = true
		if e.RateBps < 8000 {
			return cube.Errorf(field+".rate_bps", "link rate %d bits/s: at least 8000", e.RateBps)
		}
	}
	if s.Shaping != "" && s.Shaping != ShapingHTB && s.Shaping != ShapingEDT {
		return cube.Errorf("shaping", "unknown mechanism %q (htb or edt)", s.Shaping)
	}
	if len(s.Egress) > 0 && c.Hook != "tc" {
		return cube.Unprocessable("egress", "shaping needs hook tc: frames XDP redirects never meet a qdisc (create the slicer and its slices' chains with --hook tc)")
	}
	found := s.Default == ""
	for _, sl := range list {
		if sl.Name == s.Default {
			found = true
		}
		if sl.Port != "" && sl.Port == s.Uplink {
			return cube.Conflict("uplink", "port %s leads into slice %s's chain; the uplink is an entry port", s.Uplink, sl.Name)
		}
	}
	if !found {
		return cube.NotFound("default", "no slice named %q", s.Default)
	}
	if s.Shaping == ShapingEDT {
		for _, sl := range list {
			if sl.MinBps > 0 || sl.Priority != nil {
				return cube.Unprocessable("shaping", "edt paces rate limits only: slice %s has a guaranteed minimum or a priority, which need htb", sl.Name)
			}
		}
	}
	if i, err := admission(s, list); err != nil {
		if i < 0 {
			return cube.Within("egress", err)
		}
		return cube.Within(fmt.Sprintf("egress[%d].rate_bps", i), err)
	}
	return nil
}

// Bits formats a rate in bits/s the way tc does.
func Bits(bps uint64) string { return rate.Bits(bps) }

// objects are the fast path built for each hook (make bpf).
//
//go:embed bpf/*.o
var objects embed.FS

var slicesTable = cube.Table{
	Name: "slices",
	Doc:  "Slices: owner, classification rules, chain entry port, rate limit, guaranteed minimum, priority, latency target.",
	Item: &Slice{},
	Key:  func(v any) string { return v.(*Slice).Name },
	Max:  MaxSlices,
}

// portsOf is the set of slicer ports the slices lead into.
func portsOf(list []*Slice) map[string]bool {
	out := map[string]bool{}
	for _, s := range list {
		if s.Port != "" {
			out[s.Port] = true
		}
	}
	return out
}

// chainsOf lists the slices of c that name their chain entry (cube.Type.SliceChains).
func chainsOf(c *cube.Cube) []cube.SliceChain {
	var out []cube.SliceChain
	for _, s := range others(c, "") {
		if s.Chain != "" {
			out = append(out, cube.SliceChain{Slice: s.Name, ID: s.ID, Tenant: s.Tenant, Entry: s.Chain})
		}
	}
	return out
}

// Type is the slicer NF type.
var Type = &cube.Type{
	Name:        "slicer",
	Description: "Network slicing at an entry point: classify into per-tenant slices, police their rate, and shape their egress with guaranteed minimums and priorities (HTB).",
	Hooks:       []datapath.Hook{datapath.TC, datapath.XDP},
	Object:      cube.HookObjects(objects, "bpf/slicer"),
	Config:      &Settings{},
	Tables:      []cube.Table{slicesTable},
	Slices: func(c *cube.Cube) map[string]string {
		out := map[string]string{}
		for _, s := range others(c, "") {
			if s.Port != "" {
				out[s.Port] = s.Name
			}
		}
		return out
	},
	SliceChains: chainsOf,
	Views: []cube.View{{
		Name:   "status",
		Doc:    "The shaping mechanism, policy drops, and each slice's counters (in, return, policer drops) and egress HTB class counters.",
		Item:   &Status{},
		Object: true,
		List: func(h cube.Handle, c *cube.Cube) (any, error) {
			return status(h, c)
		},
	}},
	New: func() cube.Controller { return &controller{} },
}

func init() { cube.Register(Type) }
