package nat

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"strconv"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/datapath"
)

// NPTv6 (RFC 6296): stateless, checksum-neutral translation between an
// inside and an outside IPv6 prefix of the same length (see nat.bpf.c).

// NPTRule maps the inside prefix Internal to the outside prefix External.
type NPTRule struct {
	ID       int    `json:"id"`
	Internal string `json:"internal"`
	External string `json:"external"`
}

// maxNPTBits: the word after the first 48 bits carries the checksum
// adjustment (RFC 6296 3.2), so prefixes may not reach into it.
const maxNPTBits = 48

func parsePrefix6(field, s string) (netip.Prefix, error) {
	if s == "" {
		return netip.Prefix{}, cube.Errorf(field, "required: an IPv6 prefix such as 2001:db8:1::/48")
	}
	p, err := netip.ParsePrefix(s)
	if err != nil {
		return p, cube.Errorf(field, "invalid prefix %q: want address/length, e.g. 2001:db8:1::/48", s)
	}
	if !p.Addr().Is6() || p.Addr().Is4In6() {
		return p, cube.Errorf(field, "%q is not IPv6: NPTv6 translates IPv6 prefixes", s)
	}
	if p.Bits() > maxNPTBits {
		return p, cube.Errorf(field, "/%d is longer than /%d: the 16 bits after the first 48 carry the checksum adjustment (RFC 6296 3.2)", p.Bits(), maxNPTBits)
	}
	if p.Masked() != p {
		return p, cube.Errorf(field, "%q has host bits set (did you mean %s?)", s, p.Masked())
	}
	return p, nil
}

// Validate checks one NPTv6 rule.
func (r *NPTRule) Validate(*cube.Cube) error {
	if err := checkID(r.ID); err != nil {
		return err
	}
	in, err := parsePrefix6("internal", r.Internal)
	if err != nil {
		return err
	}
	ex, err := parsePrefix6("external", r.External)
	if err != nil {
		return err
	}
	if in.Bits() != ex.Bits() {
		return cube.Errorf("external", "/%d and internal /%d differ: NPTv6 maps prefixes of one length", ex.Bits(), in.Bits())
	}
	if in.Overlaps(ex) {
		return cube.Errorf("external", "%s overlaps internal %s", ex, in)
	}
	return nil
}

var nptTable = cube.Table{Name: "npt", Doc: "NPTv6 (RFC 6296): an inside IPv6 prefix (up to /48) maps to an outside one of the same length, statelessly and without changing checksums.",
	Item: &NPTRule{}, Key: func(v any) string { return strconv.Itoa(v.(*NPTRule).ID) }, Max: 1024}

// ---- kernel layouts (mirror nat.bpf.c) ----

type nptKey struct {
	PrefixLen uint32
	Dir       uint32 // datapath.Egress: inside prefixes; Ingress: outside ones
	Addr      [16]byte
}

type nptVal struct {
	Pfx  [6]byte // three words, network order
	Mask [6]byte
	Adj  uint16 // host order
	_    uint16
	Rule uint32
}

// sum1c is the one's complement sum of the first three words of a under
// mask (both network order).
func sum1c(a [16]byte, mask [6]byte) uint32 {
	var s uint32
	for i := 0; i < 6; i += 2 {
		s += uint32(binary.BigEndian.Uint16(a[i:]) & binary.BigEndian.Uint16(mask[i:]))
	}
	for s>>16 != 0 {
		s = s&0xffff + s>>16
	}
	return s
}

// nptEntry is what translates from one prefix to the other: the new
// prefix's bits and word 3's adjustment, which keeps the one's complement
// sum of the address: old prefix − new prefix.
func nptEntry(dir datapath.Direction, from, to netip.Prefix, rule int) (nptKey, nptVal) {
	var mask [6]byte
	for i := 0; i < from.Bits(); i++ {
		mask[i/8] |= 0x80 >> (i % 8)
	}
	f, t := from.Addr().As16(), to.Addr().As16()
	v := nptVal{Mask: mask, Rule: uint32(rule)}
	for i := 0; i < 6; i++ {
		v.Pfx[i] = t[i] & mask[i]
	}
	d := sum1c(f, mask) + (^sum1c(t, mask) & 0xffff)
	for d>>16 != 0 {
		d = d&0xffff + d>>16
	}
	v.Adj = uint16(d)
	return nptKey{PrefixLen: 32 + uint32(from.Bits()), Dir: uint32(dir), Addr: f}, v
}

// nptEntries computes both directions' entries, refusing rules whose
// prefixes collide with another rule's (a packet would not know its mapping).
func nptEntries(rules []any) (map[nptKey]nptVal, error) {
	out := map[nptKey]nptVal{}
	type seen struct {
		p  netip.Prefix
		id int
	}
	var ints, exts []seen
	for _, v := range rules {
		r := v.(*NPTRule)
		i, _ := parsePrefix6("internal", r.Internal)
		e, _ := parsePrefix6("external", r.External)
		for _, o := range ints {
			if o.p.Overlaps(i) {
				return nil, cube.Conflict(fmt.Sprintf("tables.npt[%d].internal", r.ID), "%s overlaps internal %s of rule %d", i, o.p, o.id)
			}
		}
		for _, o := range exts {
			if o.p.Overlaps(e) {
				return nil, cube.Conflict(fmt.Sprintf("tables.npt[%d].external", r.ID), "%s overlaps external %s of rule %d", e, o.p, o.id)
			}
		}
		for _, o := range append(append([]seen{}, ints...), exts...) {
			if o.p.Overlaps(i) || o.p.Overlaps(e) {
				return nil, cube.Conflict(fmt.Sprintf("tables.npt[%d]", r.ID), "its prefixes overlap %s of rule %d", o.p, o.id)
			}
		}
		ints, exts = append(ints, seen{i, r.ID}), append(exts, seen{e, r.ID})
		k, val := nptEntry(datapath.Egress, i, e, r.ID)
		out[k] = val
		k, val = nptEntry(datapath.Ingress, e, i, r.ID)
		out[k] = val
	}
	return out, nil
}
