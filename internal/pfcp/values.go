package pfcp

// This file is long because it is a table: the typed value of every IE a
// UPF reads or writes (TS 29.244 clause 8.2), each beside its encoder and
// decoder, in the specification's order.

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"net/netip"
	"strings"
	"time"
)

// Typed contents of the IEs a UPF reads and writes (TS 29.244 clause 8.2).
// Each type has a Parse function for an IE's octets and an IE method that
// encodes it; Parse accepts the extra octets later releases may append
// ("extendable" IEs) and rejects what the fields cannot hold.

func errf(format string, args ...any) error { return fmt.Errorf(format, args...) }

func checkCause(b []byte) error {
	if b[0] == 0 {
		return errf("cause value 0 is reserved")
	}
	return nil
}

func checkInterface(b []byte) error {
	if v := b[0] & 0x0f; v > 15 {
		return errf("interface value %d", v)
	}
	return nil
}

// CauseIE makes a Cause IE.
func CauseIE(c Cause) *IE { return U8IE(IECause, uint8(c)) }

// OffendingIE makes an Offending IE naming type t.
func OffendingIE(t IEType) *IE { return U16IE(IEOffendingIE, uint16(t)) }

// --- times ---

// ntpEra0 is the offset of the Unix epoch in NTP seconds (RFC 5905).
const ntpEra0 = 2208988800

// NTPSeconds is t as the 32-bit NTP timestamp (seconds since 1900, wrapping
// in 2036 into era 1) of the Recovery Time Stamp, Start Time and the like.
func NTPSeconds(t time.Time) uint32 { return uint32(t.Unix() + ntpEra0) }

// FromNTPSeconds reads such a timestamp. Values with the top bit clear are
// era 1 (after February 2036): RFC 5905's rule of thumb for 32-bit seconds.
func FromNTPSeconds(v uint32) time.Time {
	s := int64(v)
	if v&0x80000000 == 0 {
		s += 1 << 32
	}
	return time.Unix(s-ntpEra0, 0)
}

// TimeIE makes a timestamp IE (Recovery Time Stamp, Start Time, ...).
func TimeIE(t IEType, at time.Time) *IE { return U32IE(t, NTPSeconds(at)) }

// Time reads a timestamp IE.
func (ie *IE) Time() (time.Time, error) {
	v, err := ie.U32()
	if err != nil {
		return time.Time{}, err
	}
	return FromNTPSeconds(v), nil
}

// --- Node ID (8.2.38) ---

// NodeID identifies a PFCP entity: an IPv4 or IPv6 address, or an FQDN.
type NodeID struct {
	Addr netip.Addr
	FQDN string
}

func (n NodeID) String() string {
	if n.FQDN != "" {
		return n.FQDN
	}
	return n.Addr.String()
}

// ParseNodeID reads a Node ID.
func ParseNodeID(b []byte) (NodeID, error) {
	if len(b) < 1 {
		return NodeID{}, errf("empty Node ID")
	}
	v := b[1:]
	switch b[0] & 0x0f {
	case 0:
		if len(v) < 4 {
			return NodeID{}, errf("IPv4 Node ID of %d octets", len(v))
		}
		return NodeID{Addr: netip.AddrFrom4([4]byte(v[:4]))}, nil
	case 1:
		if len(v) < 16 {
			return NodeID{}, errf("IPv6 Node ID of %d octets", len(v))
		}
		return NodeID{Addr: netip.AddrFrom16([16]byte(v[:16]))}, nil
	case 2:
		name, err := decodeFQDN(v)
		if err != nil {
			return NodeID{}, err
		}
		return NodeID{FQDN: name}, nil
	}
	return NodeID{}, errf("Node ID type %d", b[0]&0x0f)
}

// IE encodes the Node ID.
func (n NodeID) IE() *IE {
	switch {
	case n.FQDN != "":
		return NewIE(IENodeID, append([]byte{2}, encodeFQDN(n.FQDN)...))
	case n.Addr.Is4():
		a := n.Addr.As4()
		return NewIE(IENodeID, append([]byte{0}, a[:]...))
	default:
		a := n.Addr.As16()
		return NewIE(IENodeID, append([]byte{1}, a[:]...))
	}
}

// decodeFQDN reads a name in DNS label format (RFC 1035 clause 3.1, without
// the final zero octet, as TS 29.244 writes it; a final zero is accepted).
func decodeFQDN(b []byte) (string, error) {
	var labels []string
	for len(b) > 0 {
		n := int(b[0])
		if n == 0 && len(b) == 1 {
			break
		}
		if n == 0 || n > 63 || 1+n > len(b) || bytes.IndexByte(b[1:1+n], '.') >= 0 {
			return "", errf("malformed FQDN label")
		}
		labels = append(labels, string(b[1:1+n]))
		b = b[1+n:]
	}
	if len(labels) == 0 {
		return "", errf("empty FQDN")
	}
	return strings.Join(labels, "."), nil
}

func encodeFQDN(s string) []byte {
	var b []byte
	for _, l := range strings.Split(s, ".") {
		b = append(b, byte(len(l)))
		b = append(b, l...)
	}
	return b
}

// DecodeAPN reads a Network Instance or APN/DNN: DNS labels when the octets
// are well-formed labels (how SMFs encode a DNN), else the octets as text.
func DecodeAPN(b []byte) string {
	if s, err := decodeFQDN(b); err == nil && len(b) > 0 && int(b[0]) < len(b) {
		return s
	}
	return string(b)
}

// EncodeAPN writes a Network Instance or APN/DNN in DNS label format.
func EncodeAPN(s string) []byte { return encodeFQDN(s) }

// --- F-SEID (8.2.37) ---

// FSEID is a fully qualified SEID: the SEID and the address of the entity
// that allocated it.
type FSEID struct {
	SEID uint64
	IPv4 netip.Addr
	IPv6 netip.Addr
}

// ParseFSEID reads an F-SEID.
func ParseFSEID(b []byte) (FSEID, error) {
	var f FSEID
	if len(b) < 9 {
		return f, errf("F-SEID of %d octets", len(b))
	}
	flags := b[0]
	f.SEID = binary.BigEndian.Uint64(b[1:])
	rest := b[9:]
	if flags&0x02 != 0 {
		if len(rest) < 4 {
			return f, errf("F-SEID: V4 set, no IPv4 address")
		}
		f.IPv4 = netip.AddrFrom4([4]byte(rest[:4]))
		rest = rest[4:]
	}
	if flags&0x01 != 0 {
		if len(rest) < 16 {
			return f, errf("F-SEID: V6 set, no IPv6 address")
		}
		f.IPv6 = netip.AddrFrom16([16]byte(rest[:16]))
	}
	if flags&0x03 == 0 {
		return f, errf("F-SEID without an address (V4 and V6 clear)")
	}
	return f, nil
}

// IE encodes the F-SEID.
func (f FSEID) IE() *IE {
	b := []byte{0}
	b = binary.BigEndian.AppendUint64(b, f.SEID)
	if f.IPv4.IsValid() {
		b[0] |= 0x02
		a := f.IPv4.As4()
		b = append(b, a[:]...)
	}
	if f.IPv6.IsValid() {
		b[0] |= 0x01
		a := f.IPv6.As16()
		b = append(b, a[:]...)
	}
	return NewIE(IEFSEID, b)
}

// --- F-TEID (8.2.3) ---

// FTEID is a fully qualified TEID, or (Choose) a request that the UPF
// allocate one, for IPv4 and/or IPv6, shared by the PDRs of a session that
// give the same ChooseID.
type FTEID struct {
	TEID        uint32
	IPv4        netip.Addr
	IPv6        netip.Addr
	Choose      bool
	ChooseV4    bool // Choose: an IPv4 address is wanted
	ChooseV6    bool
	HasChooseID bool
	ChooseID    uint8
}

// ParseFTEID reads an F-TEID.
func ParseFTEID(b []byte) (FTEID, error) {
	var f FTEID
	if len(b) < 1 {
		return f, errf("empty F-TEID")
	}
	flags := b[0]
	v4, v6 := flags&0x01 != 0, flags&0x02 != 0
	f.Choose = flags&0x04 != 0
	f.HasChooseID = flags&0x08 != 0
	rest := b[1:]
	if f.Choose {
		if !v4 && !v6 {
			return f, errf("F-TEID: CH set but neither V4 nor V6")
		}
		f.ChooseV4, f.ChooseV6 = v4, v6
		if f.HasChooseID {
			if len(rest) < 1 {
				return f, errf("F-TEID: CHID set, no Choose ID")
			}
			f.ChooseID = rest[0]
		}
		return f, nil
	}
	if f.HasChooseID {
		return f, errf("F-TEID: CHID set without CH")
	}
	if len(rest) < 4 {
		return f, errf("F-TEID of %d octets has no TEID", len(b))
	}
	f.TEID = binary.BigEndian.Uint32(rest)
	rest = rest[4:]
	if v4 {
		if len(rest) < 4 {
			return f, errf("F-TEID: V4 set, no IPv4 address")
		}
		f.IPv4 = netip.AddrFrom4([4]byte(rest[:4]))
		rest = rest[4:]
	}
	if v6 {
		if len(rest) < 16 {
			return f, errf("F-TEID: V6 set, no IPv6 address")
		}
		f.IPv6 = netip.AddrFrom16([16]byte(rest[:16]))
	}
	if !v4 && !v6 {
		return f, errf("F-TEID without an address (V4 and V6 clear)")
	}
	return f, nil
}

// IE encodes the F-TEID (type t: F-TEID, or Remote F-TEID contexts).
func (f FTEID) IE() *IE {
	b := []byte{0}
	if f.Choose {
		b[0] |= 0x04
		if f.ChooseV4 {
			b[0] |= 0x01
		}
		if f.ChooseV6 {
			b[0] |= 0x02
		}
		if f.HasChooseID {
			b[0] |= 0x08
			b = append(b, f.ChooseID)
		}
		return NewIE(IEFTEID, b)
	}
	b = binary.BigEndian.AppendUint32(b, f.TEID)
	if f.IPv4.IsValid() {
		b[0] |= 0x01
		a := f.IPv4.As4()
		b = append(b, a[:]...)
	}
	if f.IPv6.IsValid() {
		b[0] |= 0x02
		a := f.IPv6.As16()
		b = append(b, a[:]...)
	}
	return NewIE(IEFTEID, b)
}

// --- UE IP Address (8.2.62) ---

// UEIPAddress is a UE's address (or prefix), or a request to allocate one.
type UEIPAddress struct {
	IPv4 netip.Addr
	IPv6 netip.Addr
	// Destination is the S/D flag: in a PDI, set means the address is the
	// packets' destination (downlink), clear their source (uplink).
	Destination bool
	// PrefixDelegationBits (IPv6D) and PrefixLength (IP6PL) of an IPv6
	// prefix; 0 when absent.
	HasPDBits    bool
	PDBits       uint8
	HasPrefixLen bool
	PrefixLen    uint8
	ChooseV4     bool // CHV4: the UPF allocates the IPv4 address
	ChooseV6     bool // CHV6: the UPF allocates the IPv6 prefix
}

// ParseUEIPAddress reads a UE IP Address.
func ParseUEIPAddress(b []byte) (UEIPAddress, error) {
	var u UEIPAddress
	if len(b) < 1 {
		return u, errf("empty UE IP Address")
	}
	flags := b[0]
	v6, v4 := flags&0x01 != 0, flags&0x02 != 0
	u.Destination = flags&0x04 != 0
	u.HasPDBits = flags&0x08 != 0
	u.ChooseV4 = flags&0x10 != 0
	u.ChooseV6 = flags&0x20 != 0
	u.HasPrefixLen = flags&0x40 != 0
	rest := b[1:]
	// CHV4 and CHV6 come without V4, V6 and the address (TS 29.244
	// 8.2.62); an address is read whenever V4 or V6 says it is there.
	if v4 {
		if len(rest) < 4 {
			return u, errf("UE IP Address: V4 set, no IPv4 address")
		}
		u.IPv4 = netip.AddrFrom4([4]byte(rest[:4]))
		rest = rest[4:]
		u.ChooseV4 = false
	}
	if v6 {
		if len(rest) < 16 {
			return u, errf("UE IP Address: V6 set, no IPv6 address")
		}
		u.IPv6 = netip.AddrFrom16([16]byte(rest[:16]))
		rest = rest[16:]
		u.ChooseV6 = false
	}
	if u.HasPDBits {
		if len(rest) < 1 {
			return u, errf("UE IP Address: IPv6D set, no prefix delegation bits")
		}
		u.PDBits = rest[0]
		rest = rest[1:]
	}
	if u.HasPrefixLen {
		if len(rest) < 1 {
			return u, errf("UE IP Address: IP6PL set, no prefix length")
		}
		u.PrefixLen = rest[0]
		if u.PrefixLen > 128 {
			return u, errf("UE IP Address: IPv6 prefix length %d", u.PrefixLen)
		}
	}
	if !v4 && !v6 && !u.ChooseV4 && !u.ChooseV6 {
		return u, errf("UE IP Address without an address or a request for one")
	}
	return u, nil
}

// IE encodes the UE IP Address.
func (u UEIPAddress) IE() *IE {
	b := []byte{0}
	if u.Destination {
		b[0] |= 0x04
	}
	if u.ChooseV4 {
		b[0] |= 0x10
	} else if u.IPv4.IsValid() {
		b[0] |= 0x02
		a := u.IPv4.As4()
		b = append(b, a[:]...)
	}
	if u.ChooseV6 {
		b[0] |= 0x20
	} else if u.IPv6.IsValid() {
		b[0] |= 0x01
		a := u.IPv6.As16()
		b = append(b, a[:]...)
	}
	if u.HasPDBits {
		b[0] |= 0x08
		b = append(b, u.PDBits)
	}
	if u.HasPrefixLen {
		b[0] |= 0x40
		b = append(b, u.PrefixLen)
	}
	return NewIE(IEUEIPAddress, b)
}

// --- SDF Filter (8.2.5) ---

// SDFFilter is a service data flow filter: a Flow Description (an IP
// filter rule, RFC 6733 IPFilterRule as TS 29.212 restricts it) and/or the
// ToS/traffic class, IPsec SPI and IPv6 flow label to match.
type SDFFilter struct {
	FlowDescription string
	HasToS          bool
	ToS, ToSMask    uint8
	HasSPI          bool
	SPI             uint32
	HasFlowLabel    bool
	FlowLabel       uint32 // 20 bits
	HasFilterID     bool
	FilterID        uint32
}

// ParseSDFFilter reads an SDF Filter.
func ParseSDFFilter(b []byte) (SDFFilter, error) {
	var s SDFFilter
	if len(b) < 2 {
		return s, errf("SDF Filter of %d octets", len(b))
	}
	flags := b[0]
	rest := b[2:]
	if flags&0x01 != 0 { // FD
		if len(rest) < 2 {
			return s, errf("SDF Filter: FD set, no flow description length")
		}
		n := int(binary.BigEndian.Uint16(rest))
		if 2+n > len(rest) {
			return s, errf("SDF Filter: flow description of %d octets overruns the IE", n)
		}
		s.FlowDescription = string(rest[2 : 2+n])
		rest = rest[2+n:]
	}
	if flags&0x02 != 0 { // TTC
		if len(rest) < 2 {
			return s, errf("SDF Filter: TTC set, no ToS")
		}
		s.HasToS, s.ToS, s.ToSMask = true, rest[0], rest[1]
		rest = rest[2:]
	}
	if flags&0x04 != 0 { // SPI
		if len(rest) < 4 {
			return s, errf("SDF Filter: SPI set, no SPI")
		}
		s.HasSPI, s.SPI = true, binary.BigEndian.Uint32(rest)
		rest = rest[4:]
	}
	if flags&0x08 != 0 { // FL
		if len(rest) < 3 {
			return s, errf("SDF Filter: FL set, no flow label")
		}
		s.HasFlowLabel = true
		s.FlowLabel = (uint32(rest[0])<<16 | uint32(rest[1])<<8 | uint32(rest[2])) & 0xfffff
		rest = rest[3:]
	}
	if flags&0x10 != 0 { // BID
		if len(rest) < 4 {
			return s, errf("SDF Filter: BID set, no SDF filter ID")
		}
		s.HasFilterID, s.FilterID = true, binary.BigEndian.Uint32(rest)
	}
	return s, nil
}

// IE encodes the SDF Filter.
func (s SDFFilter) IE() *IE {
	b := []byte{0, 0}
	if s.FlowDescription != "" {
		b[0] |= 0x01
		b = binary.BigEndian.AppendUint16(b, uint16(len(s.FlowDescription)))
		b = append(b, s.FlowDescription...)
	}
	if s.HasToS {
		b[0] |= 0x02
		b = append(b, s.ToS, s.ToSMask)
	}
	if s.HasSPI {
		b[0] |= 0x04
		b = binary.BigEndian.AppendUint32(b, s.SPI)
	}
	if s.HasFlowLabel {
		b[0] |= 0x08
		b = append(b, byte(s.FlowLabel>>16), byte(s.FlowLabel>>8), byte(s.FlowLabel))
	}
	if s.HasFilterID {
		b[0] |= 0x10
		b = binary.BigEndian.AppendUint32(b, s.FilterID)
	}
	return NewIE(IESDFFilter, b)
}

// --- Outer Header Creation (8.2.56) ---

// Outer Header Creation description bits (octet 5 and 6).
const (
	OHCGTPUUDPIPv4 uint16 = 0x0100
	OHCGTPUUDPIPv6 uint16 = 0x0200
	OHCUDPIPv4     uint16 = 0x0400
	OHCUDPIPv6     uint16 = 0x0800
	OHCIPv4        uint16 = 0x1000
	OHCIPv6        uint16 = 0x2000
	OHCCTag        uint16 = 0x4000
	OHCSTag        uint16 = 0x8000
	OHCN19         uint16 = 0x0001
	OHCN6          uint16 = 0x0002
)

// OuterHeaderCreation tells the UPF which outer header to put on packets.
type OuterHeaderCreation struct {
	Desc uint16
	TEID uint32
	IPv4 netip.Addr
	IPv6 netip.Addr
	Port uint16
	CTag uint32 // 3 octets
	STag uint32
}

// GTPU reports whether the description asks for a GTP-U header.
func (o OuterHeaderCreation) GTPU() bool { return o.Desc&(OHCGTPUUDPIPv4|OHCGTPUUDPIPv6) != 0 }

// ParseOuterHeaderCreation reads an Outer Header Creation.
func ParseOuterHeaderCreation(b []byte) (OuterHeaderCreation, error) {
	var o OuterHeaderCreation
	if len(b) < 2 {
		return o, errf("Outer Header Creation of %d octets", len(b))
	}
	o.Desc = binary.BigEndian.Uint16(b)
	rest := b[2:]
	if o.Desc&0xff00 == 0 {
		return o, errf("Outer Header Creation without a header type")
	}
	if o.GTPU() {
		if len(rest) < 4 {
			return o, errf("Outer Header Creation: GTP-U without a TEID")
		}
		o.TEID = binary.BigEndian.Uint32(rest)
		rest = rest[4:]
	}
	if o.Desc&(OHCGTPUUDPIPv4|OHCUDPIPv4|OHCIPv4) != 0 {
		if len(rest) < 4 {
			return o, errf("Outer Header Creation: no IPv4 address")
		}
		o.IPv4 = netip.AddrFrom4([4]byte(rest[:4]))
		rest = rest[4:]
	}
	if o.Desc&(OHCGTPUUDPIPv6|OHCUDPIPv6|OHCIPv6) != 0 {
		if len(rest) < 16 {
			return o, errf("Outer Header Creation: no IPv6 address")
		}
		o.IPv6 = netip.AddrFrom16([16]byte(rest[:16]))
		rest = rest[16:]
	}
	if o.Desc&(OHCUDPIPv4|OHCUDPIPv6) != 0 {
		if len(rest) < 2 {
			return o, errf("Outer Header Creation: UDP without a port number")
		}
		o.Port = binary.BigEndian.Uint16(rest)
		rest = rest[2:]
	}
	if o.Desc&OHCCTag != 0 {
		if len(rest) < 3 {
			return o, errf("Outer Header Creation: no C-TAG")
		}
		o.CTag = uint32(rest[0])<<16 | uint32(rest[1])<<8 | uint32(rest[2])
		rest = rest[3:]
	}
	if o.Desc&OHCSTag != 0 {
		if len(rest) < 3 {
			return o, errf("Outer Header Creation: no S-TAG")
		}
		o.STag = uint32(rest[0])<<16 | uint32(rest[1])<<8 | uint32(rest[2])
	}
	return o, nil
}

// IE encodes the Outer Header Creation.
func (o OuterHeaderCreation) IE() *IE {
	b := binary.BigEndian.AppendUint16(nil, o.Desc)
	if o.GTPU() {
		b = binary.BigEndian.AppendUint32(b, o.TEID)
	}
	if o.Desc&(OHCGTPUUDPIPv4|OHCUDPIPv4|OHCIPv4) != 0 {
		a := o.IPv4.As4()
		b = append(b, a[:]...)
	}
	if o.Desc&(OHCGTPUUDPIPv6|OHCUDPIPv6|OHCIPv6) != 0 {
		a := o.IPv6.As16()
		b = append(b, a[:]...)
	}
	if o.Desc&(OHCUDPIPv4|OHCUDPIPv6) != 0 {
		b = binary.BigEndian.AppendUint16(b, o.Port)
	}
	if o.Desc&OHCCTag != 0 {
		b = append(b, byte(o.CTag>>16), byte(o.CTag>>8), byte(o.CTag))
	}
	if o.Desc&OHCSTag != 0 {
		b = append(b, byte(o.STag>>16), byte(o.STag>>8), byte(o.STag))
	}
	return NewIE(IEOuterHeaderCreation, b)
}

// Outer Header Removal descriptions (8.2.64).
const (
	OHRGTPUUDPIPv4 uint8 = 0
	OHRGTPUUDPIPv6 uint8 = 1
	OHRUDPIPv4     uint8 = 2
	OHRUDPIPv6     uint8 = 3
	OHRIPv4        uint8 = 4
	OHRIPv6        uint8 = 5
	OHRGTPUUDPIP   uint8 = 6
	OHRVLANSTag    uint8 = 7
	OHRSTagCTag    uint8 = 8
)

// --- Volume Threshold, Volume Quota, Volume Measurement (8.2.13, 8.2.50, 8.2.44) ---

// Volume holds the volumes (octets) and, for measurements, packet counts
// of one of the volume IEs; the Has flags say which fields are present.
type Volume struct {
	HasTotal, HasUplink, HasDownlink             bool
	Total, Uplink, Downlink                      uint64
	HasTotalPkts, HasUplinkPkts, HasDownlinkPkts bool
	TotalPkts, UplinkPkts, DownlinkPkts          uint64
}

// ParseVolume reads a volume IE.
func ParseVolume(b []byte) (Volume, error) {
	var v Volume
	if len(b) < 1 {
		return v, errf("empty volume IE")
	}
	flags := b[0]
	rest := b[1:]
	fields := []struct {
		bit  byte
		has  *bool
		dest *uint64
	}{
		{0x01, &v.HasTotal, &v.Total}, {0x02, &v.HasUplink, &v.Uplink}, {0x04, &v.HasDownlink, &v.Downlink},
		{0x08, &v.HasTotalPkts, &v.TotalPkts}, {0x10, &v.HasUplinkPkts, &v.UplinkPkts}, {0x20, &v.HasDownlinkPkts, &v.DownlinkPkts},
	}
	for _, f := range fields {
		if flags&f.bit == 0 {
			continue
		}
		if len(rest) < 8 {
			return v, errf("volume IE: flag 0x%02x set, value missing", f.bit)
		}
		*f.has, *f.dest = true, binary.BigEndian.Uint64(rest)
		rest = rest[8:]
	}
	return v, nil
}

// IE encodes the volumes as an IE of type t.
func (v Volume) IE(t IEType) *IE {
	b := []byte{0}
	for _, f := range []struct {
		bit byte
		has bool
		val uint64
	}{
		{0x01, v.HasTotal, v.Total}, {0x02, v.HasUplink, v.Uplink}, {0x04, v.HasDownlink, v.Downlink},
		{0x08, v.HasTotalPkts, v.TotalPkts}, {0x10, v.HasUplinkPkts, v.UplinkPkts}, {0x20, v.HasDownlinkPkts, v.DownlinkPkts},
	} {
		if f.has {
			b[0] |= f.bit
			b = binary.BigEndian.AppendUint64(b, f.val)
		}
	}
	return NewIE(t, b)
}

// --- bit rates (MBR, GBR: 8.2.8, 8.2.9) ---

// BitRate is an uplink and a downlink rate in kbit/s (40 bits each).
type BitRate struct{ Uplink, Downlink uint64 }

// ParseBitRate reads an MBR or GBR.
func ParseBitRate(b []byte) (BitRate, error) {
	if len(b) < 10 {
		return BitRate{}, errf("bit rate IE of %d octets", len(b))
	}
	get := func(p []byte) uint64 {
		return uint64(p[0])<<32 | uint64(binary.BigEndian.Uint32(p[1:]))
	}
	return BitRate{Uplink: get(b), Downlink: get(b[5:])}, nil
}

// IE encodes the rates as an IE of type t (MBR or GBR).
func (r BitRate) IE(t IEType) *IE {
	put := func(b []byte, v uint64) []byte {
		return binary.BigEndian.AppendUint32(append(b, byte(v>>32)), uint32(v))
	}
	return NewIE(t, put(put(nil, r.Uplink), r.Downlink))
}

// --- flags ---

// Apply Action bits (8.2.26), octet 5 in the low byte, octet 6 above.
const (
	ActionDROP uint16 = 0x0001
	ActionFORW uint16 = 0x0002
	ActionBUFF uint16 = 0x0004
	ActionNOCP uint16 = 0x0008
	ActionDUPL uint16 = 0x0010
	ActionIPMA uint16 = 0x0020
	ActionIPMD uint16 = 0x0040
	ActionDFRT uint16 = 0x0080
	ActionEDRT uint16 = 0x0100
	ActionBDPN uint16 = 0x0200
	ActionDDPN uint16 = 0x0400
)

// Flags reads a flags IE of up to 4 octets: octet 5 in the low byte
// (Apply Action, Reporting Triggers, UP Function Features, ...).
func (ie *IE) Flags() uint32 {
	var v uint32
	for i := 0; i < len(ie.Value) && i < 4; i++ {
		v |= uint32(ie.Value[i]) << (8 * i)
	}
	return v
}

// FlagsIE encodes flags as n octets, octet 5 from the low byte.
func FlagsIE(t IEType, v uint32, n int) *IE {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(v >> (8 * i))
	}
	return NewIE(t, b)
}

// Reporting Triggers (8.2.19) and Usage Report Trigger (8.2.41) bits, octet
// 5 in the low byte. The two IEs share octet 5 but differ after it.
const (
	TriggerPERIO uint32 = 1 << 0
	TriggerVOLTH uint32 = 1 << 1
	TriggerTIMTH uint32 = 1 << 2
	TriggerQUHTI uint32 = 1 << 3
	TriggerSTART uint32 = 1 << 4
	TriggerSTOPT uint32 = 1 << 5
	TriggerDROTH uint32 = 1 << 6
	TriggerLIUSA uint32 = 1 << 7 // Reporting Triggers only; IMMER in a Usage Report Trigger
	TriggerVOLQU uint32 = 1 << 8
	TriggerTIMQU uint32 = 1 << 9

	// Usage Report Trigger only.
	UsageIMMER uint32 = 1 << 7
	UsageLIUSA uint32 = 1 << 10
	UsageTERMR uint32 = 1 << 11
)

// Report Type bits (8.2.21).
const (
	ReportDLDR uint8 = 0x01
	ReportUSAR uint8 = 0x02
	ReportERIR uint8 = 0x04
	ReportUPIR uint8 = 0x08
)

// Measurement Method bits (8.2.40).
const (
	MeasureDURAT uint8 = 0x01
	MeasureVOLUM uint8 = 0x02
	MeasureEVENT uint8 = 0x04
)

// UP Function Features bits (8.2.25), octet 5 in the low byte.
const (
	FeatureBUCP  uint64 = 1 << 0
	FeatureDDND  uint64 = 1 << 1
	FeatureDLBD  uint64 = 1 << 2
	FeatureTRST  uint64 = 1 << 3
	FeatureFTUP  uint64 = 1 << 4
	FeaturePFDM  uint64 = 1 << 5
	FeatureHEEU  uint64 = 1 << 6
	FeatureTREU  uint64 = 1 << 7
	FeatureEMPU  uint64 = 1 << 8
	FeaturePDIU  uint64 = 1 << 9
	FeatureUDBC  uint64 = 1 << 10
	FeatureQUOAC uint64 = 1 << 11
	FeatureTRACE uint64 = 1 << 12
	FeatureFRRT  uint64 = 1 << 13
	FeaturePFDE  uint64 = 1 << 14
	FeatureEPFAR uint64 = 1 << 15
	FeatureDPDRA uint64 = 1 << 16
	FeatureADPDP uint64 = 1 << 17
	FeatureUEIP  uint64 = 1 << 18
	FeatureSSET  uint64 = 1 << 19
	FeatureMNOP  uint64 = 1 << 20
	FeatureMTE   uint64 = 1 << 21
	FeatureBUNDL uint64 = 1 << 22
	FeatureGCOM  uint64 = 1 << 23
	FeatureMPAS  uint64 = 1 << 24
	FeatureRTTL  uint64 = 1 << 25
	FeatureVTIME uint64 = 1 << 26
	FeatureNORP  uint64 = 1 << 27
	FeatureIPTV  uint64 = 1 << 28
	FeatureIP6PL uint64 = 1 << 29
	FeatureTSCU  uint64 = 1 << 30
	FeatureMPTCP uint64 = 1 << 31
)

// FeaturesIE encodes UP Function Features in as many octet pairs as the
// highest bit set needs (at least 2 octets).
func FeaturesIE(f uint64) *IE {
	n := 2
	for f>>(8*n) != 0 {
		n += 2
	}
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(f >> (8 * i))
	}
	return NewIE(IEUPFunctionFeatures, b)
}

// Failed Rule ID types (8.2.80).
const (
	RulePDR uint8 = 0
	RuleFAR uint8 = 1
	RuleQER uint8 = 2
	RuleURR uint8 = 3
	RuleBAR uint8 = 4
)

// FailedRuleIE names the rule a request failed on.
func FailedRuleIE(kind uint8, id uint32) *IE {
	b := []byte{kind & 0x0f}
	switch kind {
	case RulePDR:
		b = binary.BigEndian.AppendUint16(b, uint16(id))
	case RuleBAR:
		b = append(b, byte(id))
	default:
		b = binary.BigEndian.AppendUint32(b, id)
	}
	return NewIE(IEFailedRuleID, b)
}

// Interface values of Source and Destination Interface (8.2.2, 8.2.24).
const (
	InterfaceAccess     uint8 = 0
	InterfaceCore       uint8 = 1
	InterfaceSGiLAN     uint8 = 2 // SGi-LAN / N6-LAN
	InterfaceCPFunction uint8 = 3
	InterfaceLI         uint8 = 4 // destination only
	Interface5GVN       uint8 = 5
)
