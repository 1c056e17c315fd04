package slicer

// Classification rules: their model (one kind of match each), their parse
// into the datapath's terms, and the TEID ranges as LPM blocks.

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/schema"
)

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
