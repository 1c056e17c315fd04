package model

// This file is long because it is the session model (PDR, FAR, QER, URR,
// BAR) with the validation of each rule and of their references to one
// another: one job, as the PFCP agent and the REST API both write it.

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"sync"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/schema"
)

var ueIPv6 = regexp.MustCompile(schema.Anchored(schema.IPv6 + "(/(64|128))?"))

// QFIs is a list of QoS Flow Identifiers, written as a JSON array of
// numbers ([9, 5]), not as the base64 string encoding/json makes of a
// []uint8.
type QFIs []uint8

// MarshalJSON writes the QFIs as numbers.
func (q QFIs) MarshalJSON() ([]byte, error) {
	if q == nil {
		return []byte("null"), nil
	}
	n := make([]int, len(q))
	for i, v := range q {
		n[i] = int(v)
	}
	return json.Marshal(n)
}

// UnmarshalJSON reads an array of numbers, or the base64 string earlier
// versions saved sessions with (so their state still loads).
func (q *QFIs) UnmarshalJSON(b []byte) error {
	var n []uint8
	if err := json.Unmarshal(b, &n); err != nil {
		return err
	}
	*q = n
	return nil
}

func init() {
	schema.Special[reflect.TypeOf(QFIs{})] = func() *schema.Schema {
		return &schema.Schema{Type: "array", Items: &schema.Schema{Type: "integer", Minimum: schema.Num(0), Maximum: schema.Num(255)}, Nullable: true}
	}
	schema.Register("ue-ipv6", schema.Format{Pattern: ueIPv6.String(),
		Doc: "the UE's IPv6 /64: an address, or a /64 or /128 prefix (an IPv4-mapped one: 422)"})
}

// Session is one PFCP session: the rules the UPF applies to the traffic of
// one PDU session (TS 29.244 clause 5.2). Sessions are entries of the cube's
// sessions table, keyed by the UPF's SEID: the PFCP agent writes them, and
// the API can too (static set-ups, tests).
type Session struct {
	// SEID is the UPF's SEID of the session.
	SEID uint64 `json:"seid" minimum:"1"`
	// CPSEID and CPAddress are the SMF's F-SEID, Node its Node ID: set for
	// sessions an SMF established.
	CPSEID    uint64 `json:"cp_seid,omitempty"`
	CPAddress string `json:"cp_address,omitempty" format:"ip"`
	Node      string `json:"node,omitempty"`
	PDRs      []PDR  `json:"pdrs" minItems:"1" maxItems:"128" doc:"IDs unique (409 otherwise); more than 32 kernel rules (PDRs × SDF filters × QFIs × port ranges) on one TEID or UE address: 422"`
	FARs      []FAR  `json:"fars" minItems:"1" maxItems:"128" doc:"IDs unique (409 otherwise)"`
	QERs      []QER  `json:"qers,omitempty" maxItems:"64" doc:"IDs unique (409 otherwise)"`
	URRs      []URR  `json:"urrs,omitempty" maxItems:"64" doc:"IDs unique (409 otherwise)"`
	BARs      []BAR  `json:"bars,omitempty" maxItems:"8" doc:"IDs unique (409 otherwise)"`
}

// PDR is a packet detection rule.
type PDR struct {
	ID         uint16 `json:"id"`
	Precedence uint32 `json:"precedence"`
	// Source is where the packets come from: access (uplink, GTP-U on n3)
	// or core (downlink: plain IP on n6, or GTP-U on n9 when the PDR has
	// an F-TEID); sgi-lan is core's N6-LAN variant.
	Source string `json:"source" enum:"access|core|sgi-lan" doc:"access needs an f_teid (422 otherwise)"`
	// FTEID is the local tunnel the PDR matches GTP-U packets on.
	FTEID *FTEID `json:"f_teid,omitempty" doc:"the PDR has an f_teid, a UE address, or both (422 otherwise)"`
	// UEIPv4 and UEIPv6 (a /64) are the UE's addresses: the source of
	// uplink packets, the destination of downlink ones.
	UEIPv4          string `json:"ue_ipv4,omitempty" format:"ipv4"`
	UEIPv6          string `json:"ue_ipv6,omitempty" format:"ue-ipv6"`
	NetworkInstance string `json:"network_instance,omitempty"`
	// SDF filters: a packet matches the PDR if it matches any of them
	// (none: every packet).
	SDF []SDF `json:"sdf,omitempty" maxItems:"8"`
	// QFI: the QoS flows (GTP-U PDU Session Container) it matches.
	QFI QFIs `json:"qfi,omitempty" maxItems:"4" minimum:"1" maximum:"63"`
	// OuterHeaderRemoval removes the GTP-U/UDP/IP header ("gtp-u"), as
	// every PDR with an F-TEID must.
	OuterHeaderRemoval string   `json:"outer_header_removal,omitempty" enum:"gtp-u" doc:"gtp-u exactly when the PDR has an f_teid (422 otherwise)"`
	FAR                uint32   `json:"far" doc:"a FAR of the session (404 otherwise)"`
	QERs               []uint32 `json:"qers,omitempty" maxItems:"2" doc:"QERs of the session (404 otherwise), each once (422 otherwise)"`
	URRs               []uint32 `json:"urrs,omitempty" maxItems:"4" doc:"URRs of the session (404 otherwise), each once (422 otherwise)"`
}

// FTEID is a fully qualified TEID: the TEID and the address(es) the peer
// sends to. ChooseID records the CHOOSE ID an SMF asked for, so later PDRs
// of the session with the same ID share the TEID.
type FTEID struct {
	TEID     uint32 `json:"teid" doc:"in the cube's teid_range (409 otherwise)"`
	IPv4     string `json:"ipv4,omitempty" format:"ipv4" doc:"the tunnel port's address (409 otherwise)"`
	IPv6     string `json:"ipv6,omitempty" format:"ipv6" doc:"the tunnel port's address (409 otherwise)"`
	ChooseID *uint8 `json:"choose_id,omitempty"`
}

// SDF is a service data flow filter.
type SDF struct {
	// FlowDescription is an IP filter rule: "permit out 17 from
	// 198.51.100.0/24 5000-5100 to assigned" (see ParseFlow).
	FlowDescription string `json:"flow_description,omitempty" minLength:"1" doc:"an IP filter rule, e.g. permit out 17 from 198.51.100.0/24 5000-5100 to assigned (422 if it does not read as one)"`
	// ToS matches the IPv4 ToS or IPv6 traffic class under the mask.
	ToS *ToS `json:"tos,omitempty"`
	// SPI matches IPsec ESP packets' Security Parameter Index.
	SPI *uint32 `json:"spi,omitempty"`
	// FlowLabel matches IPv6 packets' flow label.
	FlowLabel *uint32 `json:"flow_label,omitempty" maximum:"1048575"`
	ID        uint32  `json:"id,omitempty"`
}

// RefineSchema: a filter matches on something.
func (*SDF) RefineSchema(s *schema.Schema) {
	for _, f := range []string{"flow_description", "tos", "spi", "flow_label"} {
		s.AnyOf = append(s.AnyOf, schema.Branch([]string{f}, nil))
	}
}

// ToS is a type of service / traffic class value and mask.
type ToS struct {
	Value uint8 `json:"value"`
	Mask  uint8 `json:"mask"`
}

// FAR is a forwarding action rule.
type FAR struct {
	ID uint32 `json:"id"`
	// Action: one of forw, drop, buff, and optionally nocp (notify the
	// SMF of the first downlink packet) and dupl (with forw: a copy of
	// every packet forwarded goes to Duplicate's destination).
	Action []string `json:"apply_action" minItems:"1" enum:"forw|drop|buff|nocp|dupl" doc:"exactly one of forw, drop, buff, and optionally nocp and dupl (dupl with forw and duplicate only): 422 otherwise"`
	// Destination: access (toward the gNB, n3), core (toward the data
	// network, n6, or another UPF on n9 with an outer header), sgi-lan.
	Destination     string       `json:"destination,omitempty" enum:"access|core|sgi-lan"`
	NetworkInstance string       `json:"network_instance,omitempty"`
	OuterHeader     *OuterHeader `json:"outer_header_creation,omitempty"`
	// ToS is the outer IP header's ToS / traffic class (Transport Level
	// Marking).
	ToS *uint8 `json:"tos,omitempty"`
	// Port is the cube port packets leave by: derived from the
	// destination and the outer header when not given.
	Port string `json:"port,omitempty" enum:"n3|n6|n9" doc:"n6 sends plain IP (no outer_header_creation), n3 and n9 GTP-U (outer_header_creation needed to forward): 422 otherwise; a port the cube has (404 otherwise)"`
	BAR  *uint8 `json:"bar,omitempty" doc:"a BAR of the session (404 otherwise)"`
	// Duplicate is where action dupl sends the copies (PFCP Duplicating
	// Parameters): e.g. a lawful-interception mediation function.
	Duplicate *Duplicate `json:"duplicate,omitempty"`
}

// Duplicate is the second destination of a FAR's packets: the copy is the
// packet as the FAR forwards it, less the FAR's outer header, with the
// copy's own (a GTP-U tunnel to the mediation function) or none.
type Duplicate struct {
	// Destination: access, core, sgi-lan or li-function.
	Destination string       `json:"destination" enum:"access|core|sgi-lan|li-function"`
	OuterHeader *OuterHeader `json:"outer_header_creation,omitempty"`
	// ToS is the copy's outer IP header's ToS (Transport Level Marking).
	ToS *uint8 `json:"tos,omitempty"`
	// Port is the cube port copies leave by. Default: n3 for access and
	// for li-function with an outer header, n9 for core with one, n6
	// without one.
	Port string `json:"port,omitempty" enum:"n3|n6|n9" doc:"n6 sends plain IP (no outer_header_creation), n3 and n9 GTP-U (outer_header_creation needed): 422 otherwise; a port the cube has (404 otherwise)"`
}

// OuterHeader is the GTP-U tunnel a FAR sends into: the peer's TEID and
// address (IPv4 or IPv6).
type OuterHeader struct {
	TEID    uint32 `json:"teid" minimum:"1"`
	Address string `json:"address" format:"ip"`
}

// QER is a QoS enforcement rule. Rates are in kbit/s, as PFCP gives them.
type QER struct {
	ID            uint32 `json:"id"`
	GateUL        string `json:"gate_ul,omitempty" enum:"open|closed"` // open (default) or closed
	GateDL        string `json:"gate_dl,omitempty" enum:"open|closed"`
	MBRUL         uint64 `json:"mbr_ul,omitempty" maximum:"1099511627775"`
	MBRDL         uint64 `json:"mbr_dl,omitempty" maximum:"1099511627775"`
	GBRUL         uint64 `json:"gbr_ul,omitempty" maximum:"1099511627775"` // recorded, not enforced
	GBRDL         uint64 `json:"gbr_dl,omitempty" maximum:"1099511627775"`
	QFI           uint8  `json:"qfi,omitempty" maximum:"63"`
	CorrelationID uint32 `json:"correlation_id,omitempty"`
}

// URR is a usage reporting rule.
type URR struct {
	ID uint32 `json:"id"`
	// Measure: volume and/or duration.
	Measure []string `json:"measurement_method" minItems:"1" enum:"volume|duration"`
	// Triggers: periodic, volume_threshold, time_threshold, volume_quota,
	// time_quota.
	Triggers        []string `json:"reporting_triggers,omitempty" enum:"periodic|volume_threshold|time_threshold|volume_quota|time_quota" doc:"periodic needs a measurement_period (422 otherwise)"`
	Period          uint32   `json:"measurement_period,omitempty"` // seconds
	VolumeThreshold *Volume  `json:"volume_threshold,omitempty"`
	VolumeQuota     *Volume  `json:"volume_quota,omitempty"`
	TimeThreshold   uint32   `json:"time_threshold,omitempty"` // seconds
	TimeQuota       uint32   `json:"time_quota,omitempty"`
}

// Volume is a volume threshold or quota in octets (total, uplink,
// downlink; absent: not set).
type Volume struct {
	Total    *uint64 `json:"total,omitempty"`
	Uplink   *uint64 `json:"uplink,omitempty"`
	Downlink *uint64 `json:"downlink,omitempty"`
}

// BAR is a buffering action rule.
type BAR struct {
	ID uint8 `json:"id"`
	// SuggestedPackets bounds the packets buffered (0: the cube's
	// buffer_packets).
	SuggestedPackets uint8 `json:"suggested_packets,omitempty"`
}

// Key is the session's key in the sessions table.
func (s *Session) Key() string { return SessionKey(s.SEID) }

// SessionKey formats a SEID as a sessions-table key.
func SessionKey(seid uint64) string { return strconv.FormatUint(seid, 10) }

// Limits of one session (the fast path's bounds are in the kernel maps).
const (
	MaxPDRs        = 128
	MaxFARs        = 128
	MaxQERs        = 64
	MaxURRs        = 64
	MaxBARs        = 8
	MaxPDRQERs     = 2 // QERs one PDR applies
	MaxPDRURRs     = 4 // URRs one PDR counts in
	MaxSDFs        = 8 // SDF filters of one PDR
	MaxQFIs        = 4
	MaxRulesPerKey = 32 // kernel rules (PDRs × SDF filters × QFIs × port ranges) on one TEID or UE address
)

// Interface names (Source and Destination Interface).
var interfaces = map[string]uint8{"access": 0, "core": 1, "sgi-lan": 2, "cp-function": 3, "li-function": 4}

// InterfaceName names a PFCP interface value.
func InterfaceName(v uint8) (string, bool) {
	for n, x := range interfaces {
		if x == v {
			return n, true
		}
	}
	return "", false
}

// Actions (Apply Action) a FAR may have.
var actions = []string{"forw", "drop", "buff", "nocp", "dupl"}

// Triggers a URR may have.
var triggers = []string{"periodic", "volume_threshold", "time_threshold", "volume_quota", "time_quota"}

// lastConfig caches the settings sessions were last checked against: a
// PFCP agent checks thousands of sessions a second against one cube's
// settings, which do not change between them.
var lastConfig struct {
	sync.Mutex
	raw string
	cfg *Config
}

// sessionConfig is DecodeConfig for sessions, which only read the settings.
func sessionConfig(c *cube.Cube) (*Config, error) {
	lastConfig.Lock()
	defer lastConfig.Unlock()
	if lastConfig.cfg != nil && lastConfig.raw == string(c.Config) {
		return lastConfig.cfg, nil
	}
	cfg, err := DecodeConfig(c)
	if err != nil {
		return nil, err
	}
	lastConfig.raw, lastConfig.cfg = string(c.Config), cfg
	return cfg, nil
}

// Validate checks a session against the cube it belongs to and puts it in
// canonical form (defaults filled in, addresses in standard notation).
// Conflicts with other sessions (a TEID or UE address already in use) are
// checked where the cube's index is: the controller.
func (s *Session) Validate(c *cube.Cube) error {
	cfg, err := sessionConfig(c)
	if err != nil {
		return err
	}
	if s.SEID == 0 {
		return cube.Errorf("seid", "SEID 0 is reserved")
	}
	if s.CPAddress != "" {
		a, err := netip.ParseAddr(s.CPAddress)
		if err != nil {
			return cube.Errorf("cp_address", "invalid address %q", s.CPAddress)
		}
		s.CPAddress = a.Unmap().String()
	}
	if len(s.PDRs) == 0 || len(s.FARs) == 0 {
		return cube.Errorf("pdrs", "a session needs at least one PDR and one FAR")
	}
	for _, l := range []struct {
		field  string
		n, max int
	}{{"pdrs", len(s.PDRs), MaxPDRs}, {"fars", len(s.FARs), MaxFARs}, {"qers", len(s.QERs), MaxQERs},
		{"urrs", len(s.URRs), MaxURRs}, {"bars", len(s.BARs), MaxBARs}} {
		if l.n > l.max {
			return cube.Errorf(l.field, "%d rules, at most %d per session", l.n, l.max)
		}
	}
	fars := map[uint32]bool{}
	for i := range s.FARs {
		f := &s.FARs[i]
		if fars[f.ID] {
			return cube.Conflict(fmt.Sprintf("fars[%d].id", i), "duplicate FAR ID %d", f.ID)
		}
		fars[f.ID] = true
	}
	qers := map[uint32]bool{}
	for i := range s.QERs {
		q := &s.QERs[i]
		if qers[q.ID] {
			return cube.Conflict(fmt.Sprintf("qers[%d].id", i), "duplicate QER ID %d", q.ID)
		}
		qers[q.ID] = true
		if err := q.validate(); err != nil {
			return cube.Within(fmt.Sprintf("qers[%d]", i), err)
		}
	}
	urrs := map[uint32]bool{}
	for i := range s.URRs {
		u := &s.URRs[i]
		if urrs[u.ID] {
			return cube.Conflict(fmt.Sprintf("urrs[%d].id", i), "duplicate URR ID %d", u.ID)
		}
		urrs[u.ID] = true
		if err := u.validate(); err != nil {
			return cube.Within(fmt.Sprintf("urrs[%d]", i), err)
		}
	}
	bars := map[uint8]bool{}
	for i, b := range s.BARs {
		if bars[b.ID] {
			return cube.Conflict(fmt.Sprintf("bars[%d].id", i), "duplicate BAR ID %d", b.ID)
		}
		bars[b.ID] = true
	}
	for i := range s.FARs {
		f := &s.FARs[i]
		if err := f.validate(c, bars); err != nil {
			return cube.Within(fmt.Sprintf("fars[%d]", i), err)
		}
	}
	pdrs := map[uint16]bool{}
	teids := map[uint32]string{} // TEID → the F-TEID's addresses, for sharing
	for i := range s.PDRs {
		p := &s.PDRs[i]
		field := fmt.Sprintf("pdrs[%d]", i)
		if pdrs[p.ID] {
			return cube.Conflict(field+".id", "duplicate PDR ID %d", p.ID)
		}
		pdrs[p.ID] = true
		if err := p.validate(c, cfg, fars, qers, urrs); err != nil {
			return cube.Within(field, err)
		}
		if p.FTEID != nil {
			addrs := p.FTEID.IPv4 + "," + p.FTEID.IPv6
			if prev, ok := teids[p.FTEID.TEID]; ok && prev != addrs {
				return cube.Conflict(field+".f_teid", "TEID %#x is used with two different addresses in the session", p.FTEID.TEID)
			}
			teids[p.FTEID.TEID] = addrs
		}
	}
	// The fast path tries at most MaxRulesPerKey rules per TEID or UE
	// address.
	perKey := map[string]int{}
	for i := range s.PDRs {
		p := &s.PDRs[i]
		n, err := p.KernelRules()
		if err != nil {
			return cube.Within(fmt.Sprintf("pdrs[%d]", i), err)
		}
		for _, k := range p.lookupKeys() {
			perKey[k] += n
			if perKey[k] > MaxRulesPerKey {
				return cube.Unprocessable(fmt.Sprintf("pdrs[%d]", i), "more than %d rules (PDRs × SDF filters × QFIs × port ranges) match %s", MaxRulesPerKey, k)
			}
		}
	}
	return nil
}

// lookupKeys names what the fast path finds a PDR by: its TEID, or its UE
// addresses (N6).
func (p *PDR) lookupKeys() []string {
	if p.FTEID != nil {
		return []string{fmt.Sprintf("TEID %#x", p.FTEID.TEID)}
	}
	var out []string
	if p.UEIPv4 != "" {
		out = append(out, "UE address "+p.UEIPv4)
	}
	if p.UEIPv6 != "" {
		out = append(out, "UE prefix "+p.UEIPv6)
	}
	return out
}

// KernelRules is how many fast-path rules the PDR becomes: one per
// combination of SDF filter (and its port ranges) and QFI.
func (p *PDR) KernelRules() (int, error) {
	n := 0
	for _, sdf := range p.SDF {
		k := 1
		if sdf.FlowDescription != "" {
			f, err := ParseFlow(sdf.FlowDescription)
			if err != nil {
				return 0, err
			}
			k = max(1, len(f.RemotePorts)) * max(1, len(f.LocalPorts))
		}
		n += k
	}
	return max(1, n) * max(1, len(p.QFI)), nil
}

// Uplink reports whether the PDR matches uplink traffic (from the access
// side).
func (p *PDR) Uplink() bool { return p.Source == "access" }

func (p *PDR) validate(c *cube.Cube, cfg *Config, fars, qers, urrs map[uint32]bool) error {
	if _, ok := interfaces[p.Source]; !ok || p.Source == "cp-function" {
		return cube.Errorf("source", "%q: want access, core or sgi-lan", p.Source)
	}
	if p.FTEID == nil && p.UEIPv4 == "" && p.UEIPv6 == "" {
		return cube.Unprocessable("f_teid", "a PDR matches GTP-U packets by a local F-TEID or N6 packets by a UE address: give one")
	}
	if p.Source == "access" && p.FTEID == nil {
		return cube.Unprocessable("f_teid", "an access PDR needs a local F-TEID (uplink traffic arrives in GTP-U)")
	}
	if p.FTEID != nil {
		if err := p.FTEID.validate(c, cfg, p.Source); err != nil {
			return cube.Within("f_teid", err)
		}
		if p.OuterHeaderRemoval != "gtp-u" {
			return cube.Unprocessable("outer_header_removal", "a PDR with an F-TEID must remove the GTP-U header: set \"gtp-u\"")
		}
	} else if p.OuterHeaderRemoval != "" {
		return cube.Unprocessable("outer_header_removal", "only a PDR with an F-TEID has an outer header to remove")
	}
	if p.UEIPv4 != "" {
		a, err := netip.ParseAddr(p.UEIPv4)
		if err != nil || !a.Unmap().Is4() {
			return cube.Errorf("ue_ipv4", "invalid IPv4 address %q", p.UEIPv4)
		}
		p.UEIPv4 = a.Unmap().String()
	}
	if p.UEIPv6 != "" {
		pf, err := ParseUEPrefix(p.UEIPv6)
		if err != nil {
			if ueIPv6.MatchString(p.UEIPv6) {
				return cube.Unprocessable("ue_ipv6", "%v", err)
			}
			return cube.Errorf("ue_ipv6", "%v", err)
		}
		p.UEIPv6 = pf.String()
	}
	if len(p.SDF) > MaxSDFs {
		return cube.Errorf("sdf", "%d SDF filters, at most %d", len(p.SDF), MaxSDFs)
	}
	for i := range p.SDF {
		if err := p.SDF[i].validate(); err != nil {
			return cube.Within(fmt.Sprintf("sdf[%d]", i), err)
		}
	}
	if len(p.QFI) > MaxQFIs {
		return cube.Errorf("qfi", "%d QFIs, at most %d", len(p.QFI), MaxQFIs)
	}
	for _, q := range p.QFI {
		if q == 0 || q > 63 {
			return cube.Errorf("qfi", "QFI %d: want 1..63", q)
		}
	}
	if !fars[p.FAR] {
		return cube.NotFound("far", "the session has no FAR %d", p.FAR)
	}
	if len(p.QERs) > MaxPDRQERs {
		return cube.Errorf("qers", "%d QERs, at most %d per PDR", len(p.QERs), MaxPDRQERs)
	}
	for _, id := range p.QERs {
		if !qers[id] {
			return cube.NotFound("qers", "the session has no QER %d", id)
		}
	}
	if len(p.URRs) > MaxPDRURRs {
		return cube.Errorf("urrs", "%d URRs, at most %d per PDR", len(p.URRs), MaxPDRURRs)
	}
	for _, id := range p.URRs {
		if !urrs[id] {
			return cube.NotFound("urrs", "the session has no URR %d", id)
		}
	}
	if hasDup(p.QERs) || hasDup(p.URRs) {
		return cube.Unprocessable("qers", "a QER or URR is listed twice")
	}
	return nil
}

func hasDup(ids []uint32) bool {
	s := slices.Clone(ids)
	slices.Sort(s)
	return len(slices.Compact(s)) != len(ids)
}

// ParseUEPrefix reads a UE's IPv6 prefix: a /64 (an address stands for
// the /64 it is in).
func ParseUEPrefix(s string) (netip.Prefix, error) {
	if a, err := netip.ParseAddr(s); err == nil && a.Is6() && !a.Is4In6() {
		return netip.PrefixFrom(a, 64).Masked(), nil
	}
	pf, err := netip.ParsePrefix(s)
	if err != nil || !pf.Addr().Is6() || pf.Addr().Is4In6() {
		return netip.Prefix{}, fmt.Errorf("invalid IPv6 prefix %q", s)
	}
	if pf.Bits() != 64 && pf.Bits() != 128 {
		return netip.Prefix{}, fmt.Errorf("%s: a UE's IPv6 prefix is a /64", pf)
	}
	return netip.PrefixFrom(pf.Addr(), 64).Masked(), nil
}

func (f *FTEID) validate(c *cube.Cube, cfg *Config, source string) error {
	lo, hi := cfg.TEIDs()
	if f.TEID < lo || f.TEID > hi {
		return cube.Conflict("teid", "TEID %#x is outside the cube's range %s", f.TEID, cfg.TEIDRange)
	}
	// The address is that of the port the tunnel ends on: n3 for access,
	// n9 (or n3 when there is no n9) for core.
	port := c.Port(PortN3)
	if source != "access" {
		if p := c.Port(PortN9); p != nil {
			port = p
		}
	}
	if port == nil {
		return cube.NotFound("teid", "cube %s has no %s port for GTP-U tunnels", c.Name, PortN3)
	}
	v4, v6 := PortAddrs(port)
	check := func(field string, s *string, own netip.Prefix) error {
		if *s == "" {
			return nil
		}
		a, err := netip.ParseAddr(*s)
		if err != nil {
			return cube.Errorf(field, "invalid address %q", *s)
		}
		a = a.Unmap()
		if !own.IsValid() || own.Addr() != a {
			return cube.Conflict(field, "%s is not an address of port %s", a, port.Name)
		}
		*s = a.String()
		return nil
	}
	if err := check("ipv4", &f.IPv4, v4); err != nil {
		return err
	}
	if err := check("ipv6", &f.IPv6, v6); err != nil {
		return err
	}
	if f.IPv4 == "" && f.IPv6 == "" {
		if !v4.IsValid() && !v6.IsValid() {
			return cube.Conflict("teid", "port %s has no address for the tunnel's end", port.Name)
		}
		if v4.IsValid() {
			f.IPv4 = v4.Addr().String()
		}
		if v6.IsValid() {
			f.IPv6 = v6.Addr().String()
		}
	}
	return nil
}

func (s *SDF) validate() error {
	if s.FlowDescription == "" && s.ToS == nil && s.SPI == nil && s.FlowLabel == nil {
		return cube.Errorf("flow_description", "an SDF filter needs a flow description, ToS, SPI or flow label")
	}
	if s.FlowDescription != "" {
		if _, err := ParseFlow(s.FlowDescription); err != nil {
			return cube.Unprocessable("flow_description", "%v", err)
		}
	}
	if s.FlowLabel != nil && *s.FlowLabel > 0xfffff {
		return cube.Errorf("flow_label", "%#x does not fit 20 bits", *s.FlowLabel)
	}
	return nil
}

// HasAction reports whether the FAR's Apply Action has a.
func (f *FAR) HasAction(a string) bool { return slices.Contains(f.Action, a) }

func (f *FAR) validate(c *cube.Cube, bars map[uint8]bool) error {
	main := 0
	for _, a := range f.Action {
		if !slices.Contains(actions, a) {
			return cube.Errorf("apply_action", "unknown action %q (want forw, drop or buff, and optionally nocp and dupl)", a)
		}
		if a != "nocp" && a != "dupl" {
			main++
		}
	}
	if main != 1 {
		return cube.Unprocessable("apply_action", "%v: want exactly one of forw, drop, buff (and optionally nocp and dupl)", f.Action)
	}
	slices.Sort(f.Action)
	f.Action = slices.Compact(f.Action)
	if f.Destination != "" {
		if _, ok := interfaces[f.Destination]; !ok {
			return cube.Errorf("destination", "%q: want access, core or sgi-lan", f.Destination)
		}
		if f.Destination == "cp-function" {
			return cube.Errorf("destination", "forwarding to the CP function is not supported")
		}
		if f.Destination == "li-function" {
			return cube.Unprocessable("destination", "the LI function gets copies (dupl, duplicate), not the packets")
		}
	}
	if f.OuterHeader != nil {
		a, err := netip.ParseAddr(f.OuterHeader.Address)
		if err != nil {
			return cube.Errorf("outer_header_creation.address", "invalid address %q", f.OuterHeader.Address)
		}
		f.OuterHeader.Address = a.Unmap().String()
		if f.OuterHeader.TEID == 0 {
			return cube.Errorf("outer_header_creation.teid", "TEID 0 is reserved")
		}
	}
	want := ""
	switch {
	case f.Destination == "access":
		want = PortN3
	case f.Destination != "" && f.OuterHeader != nil:
		want = PortN9
	case f.Destination != "":
		want = PortN6
	}
	if f.Port == "" {
		f.Port = want
	}
	if f.Port != "" {
		if !isPortName(f.Port) {
			return cube.Errorf("port", "%q: want n3, n6 or n9", f.Port)
		}
		if f.Port == PortN6 && f.OuterHeader != nil {
			return cube.Unprocessable("outer_header_creation", "packets out of n6 are plain IP: no outer header")
		}
		if f.Port != PortN6 && f.OuterHeader == nil && f.HasAction("forw") {
			return cube.Unprocessable("outer_header_creation", "packets out of %s are GTP-U: give the peer's TEID and address", f.Port)
		}
	}
	if f.HasAction("forw") {
		if f.Port == "" {
			return cube.Unprocessable("destination", "a FAR that forwards needs a destination")
		}
		if c.Port(f.Port) == nil {
			return cube.NotFound("port", "cube %s has no %s port", c.Name, f.Port)
		}
	}
	if f.BAR != nil && !bars[*f.BAR] {
		return cube.NotFound("bar", "the session has no BAR %d", *f.BAR)
	}
	switch {
	case f.HasAction("dupl") && !f.HasAction("forw"):
		return cube.Unprocessable("apply_action", "dupl copies what the FAR forwards: it needs forw")
	case f.HasAction("dupl") && f.Duplicate == nil:
		return cube.Unprocessable("duplicate", "action dupl needs the duplicate's destination")
	case f.Duplicate != nil && !f.HasAction("dupl"):
		return cube.Unprocessable("duplicate", "a duplicate destination without action dupl")
	case f.Duplicate != nil:
		return f.Duplicate.validate(c)
	}
	return nil
}

func (d *Duplicate) validate(c *cube.Cube) error {
	if _, ok := interfaces[d.Destination]; !ok || d.Destination == "cp-function" {
		return cube.Errorf("duplicate.destination", "%q: want access, core, sgi-lan or li-function", d.Destination)
	}
	if d.OuterHeader != nil {
		a, err := netip.ParseAddr(d.OuterHeader.Address)
		if err != nil {
			return cube.Errorf("duplicate.outer_header_creation.address", "invalid address %q", d.OuterHeader.Address)
		}
		d.OuterHeader.Address = a.Unmap().String()
		if d.OuterHeader.TEID == 0 {
			return cube.Errorf("duplicate.outer_header_creation.teid", "TEID 0 is reserved")
		}
	}
	if d.Port == "" {
		switch {
		case d.OuterHeader == nil:
			d.Port = PortN6
		case d.Destination == "core":
			d.Port = PortN9
		default:
			d.Port = PortN3
		}
	}
	if !isPortName(d.Port) {
		return cube.Errorf("duplicate.port", "%q: want n3, n6 or n9", d.Port)
	}
	if d.Port == PortN6 && d.OuterHeader != nil {
		return cube.Unprocessable("duplicate.outer_header_creation", "copies out of n6 are plain IP: no outer header")
	}
	if d.Port != PortN6 && d.OuterHeader == nil {
		return cube.Unprocessable("duplicate.outer_header_creation", "copies out of %s are GTP-U: give the mediation function's TEID and address", d.Port)
	}
	if c.Port(d.Port) == nil {
		return cube.NotFound("duplicate.port", "cube %s has no %s port", c.Name, d.Port)
	}
	return nil
}

func (q *QER) validate() error {
	for _, g := range []struct {
		field string
		v     *string
	}{{"gate_ul", &q.GateUL}, {"gate_dl", &q.GateDL}} {
		if *g.v == "" {
			*g.v = "open"
		}
		if *g.v != "open" && *g.v != "closed" {
			return cube.Errorf(g.field, "%q: want open or closed", *g.v)
		}
	}
	for _, r := range []struct {
		field string
		v     uint64
	}{{"mbr_ul", q.MBRUL}, {"mbr_dl", q.MBRDL}, {"gbr_ul", q.GBRUL}, {"gbr_dl", q.GBRDL}} {
		if r.v >= 1<<40 {
			return cube.Errorf(r.field, "%d kbit/s does not fit 40 bits", r.v)
		}
	}
	if q.QFI > 63 {
		return cube.Errorf("qfi", "QFI %d: want 1..63", q.QFI)
	}
	return nil
}

// HasTrigger reports whether the URR reports on trigger t.
func (u *URR) HasTrigger(t string) bool { return slices.Contains(u.Triggers, t) }

// Measures reports whether the URR measures m (volume, duration).
func (u *URR) Measures(m string) bool { return slices.Contains(u.Measure, m) }

func (u *URR) validate() error {
	if len(u.Measure) == 0 {
		return cube.Errorf("measurement_method", "give volume and/or duration")
	}
	for _, m := range u.Measure {
		if m != "volume" && m != "duration" {
			return cube.Errorf("measurement_method", "%q: want volume or duration (event measurement is not supported)", m)
		}
	}
	for _, t := range u.Triggers {
		if !slices.Contains(triggers, t) {
			return cube.Errorf("reporting_triggers", "%q: want periodic, volume_threshold, time_threshold, volume_quota or time_quota", t)
		}
	}
	slices.Sort(u.Measure)
	u.Measure = slices.Compact(u.Measure)
	slices.Sort(u.Triggers)
	u.Triggers = slices.Compact(u.Triggers)
	if u.HasTrigger("periodic") && u.Period == 0 {
		return cube.Unprocessable("measurement_period", "the periodic trigger needs a measurement period")
	}
	return nil
}

// Far returns the FAR with id, or nil.
func (s *Session) Far(id uint32) *FAR {
	for i := range s.FARs {
		if s.FARs[i].ID == id {
			return &s.FARs[i]
		}
	}
	return nil
}

// Qer returns the QER with id, or nil.
func (s *Session) Qer(id uint32) *QER {
	for i := range s.QERs {
		if s.QERs[i].ID == id {
			return &s.QERs[i]
		}
	}
	return nil
}

// Urr returns the URR with id, or nil.
func (s *Session) Urr(id uint32) *URR {
	for i := range s.URRs {
		if s.URRs[i].ID == id {
			return &s.URRs[i]
		}
	}
	return nil
}

// Pdr returns the PDR with id, or nil.
func (s *Session) Pdr(id uint16) *PDR {
	for i := range s.PDRs {
		if s.PDRs[i].ID == id {
			return &s.PDRs[i]
		}
	}
	return nil
}

// Bar returns the BAR with id, or nil.
func (s *Session) Bar(id uint8) *BAR {
	for i := range s.BARs {
		if s.BARs[i].ID == id {
			return &s.BARs[i]
		}
	}
	return nil
}
