package model

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// Flow is an SDF filter's Flow Description parsed: an IPFilterRule (RFC 6733
// clause 4.3) as TS 29.212 clause 5.4.2 restricts it, "permit out <proto>
// from <remote> [ports] to <UE> [ports]". PFCP writes it in the downlink
// direction (TS 29.244 clause 5.2.1A.2A): "from" is the remote side, "to"
// the UE ("assigned" is its address); an uplink PDR applies it mirrored.
type Flow struct {
	Proto       uint8        // 0: any ("ip")
	Remote      netip.Prefix // invalid: any
	Local       netip.Prefix // invalid: any or "assigned"
	RemotePorts []PortRange  // empty: any
	LocalPorts  []PortRange
}

// PortRange is an inclusive range of ports.
type PortRange struct{ Lo, Hi uint16 }

// MaxPortRanges bounds the ranges of one side of a Flow Description: each
// combination becomes one filter in the kernel.
const MaxPortRanges = 8

var protoNames = map[string]uint8{
	"ip": 0, "icmp": 1, "igmp": 2, "tcp": 6, "udp": 17, "gre": 47, "esp": 50, "ah": 51,
	"icmpv6": 58, "ipv6-icmp": 58, "sctp": 132,
}

// ParseFlow parses a Flow Description.
func ParseFlow(s string) (Flow, error) {
	var f Flow
	tok := strings.Fields(s)
	next := func(what string) (string, error) {
		if len(tok) == 0 {
			return "", fmt.Errorf("%q ends before the %s", s, what)
		}
		t := tok[0]
		tok = tok[1:]
		return t, nil
	}
	t, err := next("action")
	if err != nil {
		return f, err
	}
	if t != "permit" {
		return f, fmt.Errorf("%q: the action must be \"permit\" (TS 29.212 5.4.2), not %q", s, t)
	}
	if t, err = next("direction"); err != nil {
		return f, err
	}
	if t != "out" {
		return f, fmt.Errorf("%q: the direction must be \"out\" (TS 29.212 5.4.2), not %q", s, t)
	}
	if t, err = next("protocol"); err != nil {
		return f, err
	}
	if p, ok := protoNames[strings.ToLower(t)]; ok {
		f.Proto = p
	} else if n, err := strconv.ParseUint(t, 10, 8); err == nil {
		f.Proto = uint8(n)
	} else {
		return f, fmt.Errorf("%q: unknown protocol %q (a number, or ip, tcp, udp, icmp, icmpv6, ...)", s, t)
	}
	if t, err = next(`"from"`); err != nil {
		return f, err
	}
	if t != "from" {
		return f, fmt.Errorf("%q: want \"from\" after the protocol, got %q", s, t)
	}
	src, srcPorts, err := flowSide(s, &tok)
	if err != nil {
		return f, err
	}
	if t, err = next(`"to"`); err != nil {
		return f, err
	}
	if t != "to" {
		return f, fmt.Errorf("%q: want \"to\", got %q", s, t)
	}
	dst, dstPorts, err := flowSide(s, &tok)
	if err != nil {
		return f, err
	}
	if len(tok) > 0 {
		return f, fmt.Errorf("%q: options (%s) are not supported in a Flow Description", s, strings.Join(tok, " "))
	}
	if src.assigned && dst.assigned {
		return f, fmt.Errorf("%q: both sides are \"assigned\"", s)
	}
	// The side written "assigned" is the UE's; otherwise "from" is remote.
	if src.assigned {
		src, dst = dst, src
		srcPorts, dstPorts = dstPorts, srcPorts
	}
	f.Remote, f.Local = src.prefix, dst.prefix
	f.RemotePorts, f.LocalPorts = srcPorts, dstPorts
	if f.Remote.IsValid() && f.Local.IsValid() && f.Remote.Addr().Is4() != f.Local.Addr().Is4() {
		return f, fmt.Errorf("%q mixes IPv4 and IPv6 addresses", s)
	}
	if (len(f.RemotePorts) > 0 || len(f.LocalPorts) > 0) && f.Proto != 0 && f.Proto != 6 && f.Proto != 17 && f.Proto != 132 {
		return f, fmt.Errorf("%q: ports only apply to TCP, UDP and SCTP", s)
	}
	return f, nil
}

type flowAddr struct {
	prefix   netip.Prefix
	assigned bool
}

// flowSide reads an address ("any", "assigned", an address or a prefix) and
// its optional port list.
func flowSide(s string, tok *[]string) (flowAddr, []PortRange, error) {
	var a flowAddr
	if len(*tok) == 0 {
		return a, nil, fmt.Errorf("%q ends before an address", s)
	}
	t := (*tok)[0]
	*tok = (*tok)[1:]
	switch {
	case t == "any":
	case t == "assigned":
		a.assigned = true
	case strings.HasPrefix(t, "!"):
		return a, nil, fmt.Errorf("%q: negated addresses are not supported", s)
	default:
		if p, err := netip.ParsePrefix(t); err == nil {
			a.prefix = p.Masked()
		} else if ad, err := netip.ParseAddr(t); err == nil {
			a.prefix = netip.PrefixFrom(ad.Unmap(), ad.Unmap().BitLen())
		} else {
			return a, nil, fmt.Errorf("%q: invalid address %q (any, assigned, an address or address/bits)", s, t)
		}
		if a.prefix.Addr().Is4In6() {
			a.prefix = netip.PrefixFrom(a.prefix.Addr().Unmap(), a.prefix.Bits()-96)
		}
	}
	if len(*tok) == 0 || !isPortList((*tok)[0]) {
		return a, nil, nil
	}
	t = (*tok)[0]
	*tok = (*tok)[1:]
	var ports []PortRange
	for _, part := range strings.Split(t, ",") {
		lo, hi, ok := strings.Cut(part, "-")
		l, err1 := strconv.ParseUint(lo, 10, 16)
		h := l
		var err2 error
		if ok {
			h, err2 = strconv.ParseUint(hi, 10, 16)
		}
		if err1 != nil || err2 != nil || h < l {
			return a, nil, fmt.Errorf("%q: invalid port range %q", s, part)
		}
		ports = append(ports, PortRange{uint16(l), uint16(h)})
	}
	if len(ports) > MaxPortRanges {
		return a, nil, fmt.Errorf("%q: %d port ranges on one side, at most %d", s, len(ports), MaxPortRanges)
	}
	return a, ports, nil
}

func isPortList(t string) bool {
	if t == "" {
		return false
	}
	for _, r := range t {
		if (r < '0' || r > '9') && r != ',' && r != '-' {
			return false
		}
	}
	return true
}
