// Package model is the upf NF's model: the cube's settings and the PFCP
// session model (PDRs, FARs, QERs, URRs, BARs) that the PFCP agent writes
// and the REST API and CLI read and write, validated against the cube.
package model

import (
	"fmt"
	"net"
	"net/netip"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/schema"
)

// The model's kinds of strings, for the API's document: what matches is
// accepted, or refused with 422 for what the descriptions say.
const (
	teid    = `(0[xX][0-9A-Fa-f]{1,8}|[1-9][0-9]{0,9})`
	rfc3339 = `[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])T([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](\.[0-9]{1,9})?(Z|[+-]([01][0-9]|2[0-3]):[0-5][0-9])`
	fqdn    = `[A-Za-z0-9-]{1,63}(\.[A-Za-z0-9-]{1,63})*`
)

func init() {
	schema.Register("node-id", schema.Format{Pattern: schema.Anchored(schema.IPv4 + "|" + schema.IPv6 + "|" + fqdn),
		Doc: "a PFCP Node ID: an IPv4 or IPv6 address, or an FQDN (at most 253 characters)"})
	schema.Register("teid-range", schema.Format{Pattern: teidRange.String(),
		Doc: "TEIDs first-last, decimal or 0x hex, e.g. 0x10000-0x1ffff: 1 <= first <= last < 2^32 (422 otherwise)"})
	schema.Register("rfc3339", schema.Format{Pattern: timeRE.String(),
		Doc: "an RFC 3339 time, e.g. 2026-11-24T05:00:00Z (a day the month does not have: 422)"})
	schema.Register("ue-pool", schema.Format{Pattern: schema.Anchored(schema.IPv4 + "/" + schema.Len4 + "|" + schema.IPv6 + "/" + schema.Len6),
		Doc: "a prefix UE addresses come from: IPv4 at most /30, IPv6 at most /63 (UEs get /64s; 422 otherwise)"})
	schema.Register("addr-port", schema.Format{Pattern: schema.Anchored(schema.IPv4 + ":" + schema.Port + "|\\[" + schema.IPv6 + "\\]:" + schema.Port),
		Doc: "address:port, [IPv6]:port"})
}

// Port names of a upf cube: n3 faces the access network (gNBs, GTP-U), n6
// the data network (plain IP), n9 another UPF (GTP-U).
const (
	PortN3 = "n3"
	PortN6 = "n6"
	PortN9 = "n9"
)

// ReleasePort is the port index the daemon sends frames it releases from a
// buffer to; no port may have it.
const ReleasePort = 63

func isPortName(n string) bool { return n == PortN3 || n == PortN6 || n == PortN9 }

// Config is a upf cube's settings.
type Config struct {
	// PFCP is the cube's N4 endpoint. Without it the cube's sessions come
	// from the API only (static set-ups, tests).
	PFCP *PFCP `json:"pfcp,omitempty"`
	// NodeID is the UPF's PFCP Node ID: an FQDN or an address. Default:
	// the PFCP address.
	NodeID string `json:"node_id,omitempty" format:"node-id" maxLength:"253"`
	// TEIDRange bounds the TEIDs of the cube's sessions, "first-last"
	// (decimal or 0x hex). The UPF allocates TEIDs from it when an SMF
	// asks it to (F-TEID CHOOSE), from the range's upper half, and refuses
	// TEIDs outside it; an SMF's own TEIDs must be in the lower half.
	// Default: 1-0xffffffff.
	TEIDRange string `json:"teid_range,omitempty" format:"teid-range"`
	// UEPools are the prefixes the UPF allocates UE addresses from when an
	// SMF asks it to (UE IP Address CHOOSE).
	UEPools []UEPool `json:"ue_pools,omitempty" doc:"pools that do not overlap (409 otherwise)"`
	// MBRBurstMs is the burst a QER's maximum bit rate tolerates, as that
	// many milliseconds at the rate (at least 3000 bytes). Default 50.
	MBRBurstMs uint32 `json:"mbr_burst_ms,omitempty" maximum:"10000"`
	// BufferPackets bounds the downlink packets buffered per session while
	// a FAR says BUFF (a BAR's Suggested Buffering Packets Count may ask
	// for fewer). Default 64; at most 1024.
	BufferPackets uint32 `json:"buffer_packets,omitempty" maximum:"1024"`
	// ErrorIndicationRate bounds the GTP-U Error Indications sent for
	// packets to unknown TEIDs, per second. Default 10.
	ErrorIndicationRate uint32 `json:"error_indication_rate,omitempty"`
	// MaxSessions sizes the cube's maps: how many sessions it holds (a
	// power of two; default DefaultMaxSessions). The kernel memory the
	// cube preallocates, which its tenant's kernel_memory_bytes quota
	// counts, follows it (docs/nf/upf.md "Memory per session"). It is
	// fixed once the cube exists: its maps were made for it.
	MaxSessions uint32 `json:"max_sessions,omitempty" minimum:"1024" maximum:"1048576" doc:"a power of two, 1024..1048576 (422 otherwise); default 131072; set when the cube is created (409 on a change)"`
	// RecoveryTime is when the UPF's PFCP state began, sent to SMFs as
	// its Recovery Time Stamp. It is set when the cube is created and
	// kept across daemon restarts (the sessions are kept too); changing it
	// tells the SMFs the UPF lost its sessions.
	RecoveryTime string `json:"recovery_time,omitempty" format:"rfc3339"`
}

// PFCP is an N4 endpoint.
type PFCP struct {
	// Address is the host address the UPF listens on for PFCP (UDP): one
	// address, never the wildcard.
	Address string `json:"address" format:"ip" doc:"a loopback or host address, not a wildcard or multicast one (422 otherwise), that the machine holds, with the port free (409 otherwise)"`
	// Port defaults to 8805.
	Port uint16 `json:"port,omitempty"`
	// HeartbeatSeconds is how often the UPF sends Heartbeat Requests to
	// each associated SMF; 0: the default 10, -1 never.
	HeartbeatSeconds int `json:"heartbeat_seconds,omitempty" minimum:"-1" maximum:"3600"`
	// T1Ms and N1 are the retransmission timer and count of the requests
	// the UPF sends (TS 29.244 clause 6.4). Defaults 3000 and 3.
	T1Ms uint32 `json:"t1_ms,omitempty" maximum:"60000" doc:"0 (the default) or 100..60000"`
	N1   uint32 `json:"n1,omitempty" maximum:"10"`
	// Drain releases the UPF from its SMFs gracefully, before maintenance
	// or removal (TS 29.244 clause 5.18, 6.2.7.3): each associated SMF is
	// asked, with an Association Update Request, to release the
	// association, and no new association or session is accepted. An SMF
	// that supports the Enhanced PFCP Association Release (EPFAR) first
	// gets the final non-zero usage reports of its sessions, which the
	// UPF then deletes. Sessions keep forwarding until the SMF deletes
	// them or releases the association. Kept across daemon restarts.
	Drain bool `json:"drain,omitempty"`
	// GracefulReleaseSeconds is the Graceful Release Period a draining UPF
	// gives SMFs that do not support EPFAR; 0: none (release at once).
	GracefulReleaseSeconds uint32 `json:"graceful_release_seconds,omitempty" maximum:"86400"`
}

// UEPool is a prefix UE addresses are allocated from: IPv4 addresses, or
// IPv6 /64 prefixes out of a shorter IPv6 prefix.
type UEPool struct {
	Prefix string `json:"prefix" format:"ue-pool"`
	// NetworkInstance restricts the pool to sessions of that network
	// instance (DNN); empty: any.
	NetworkInstance string `json:"network_instance,omitempty"`
}

// Defaults.
const (
	DefaultMBRBurstMs    = 50
	DefaultBufferPackets = 64
	MaxBufferPackets     = 1024
	DefaultErrIndRate    = 10
	DefaultHeartbeat     = 10
	DefaultT1Ms          = 3000
	DefaultN1            = 3
	// DefaultMaxSessions gives a cube the maps every cube had before
	// max_sessions existed (a restarted daemon adopts them as they are).
	DefaultMaxSessions = 1 << 17
	MinMaxSessions     = 1 << 10
	MaxMaxSessions     = 1 << 20
)

// Validate checks the settings and fills in defaults.
// Keep carries the running cube's recovery time over when the settings
// leave it out: re-applying the same settings is not a restart of the UPF's
// PFCP state (SMFs would drop their sessions at a new recovery time).
func (cfg *Config) Keep(running any) {
	if r, ok := running.(*Config); ok && cfg.RecoveryTime == "" {
		cfg.RecoveryTime = r.RecoveryTime
	}
}

func (cfg *Config) Validate(c *cube.Cube) error {
	if c != nil {
		for _, p := range c.Ports {
			if !isPortName(p.Name) {
				return cube.Conflict("ports", "a upf cube's ports are n3, n6 and n9, not %q", p.Name)
			}
			if p.Index == ReleasePort {
				return cube.Conflict("ports", "port %s: index %d is reserved", p.Name, ReleasePort)
			}
		}
	}
	if cfg.PFCP != nil {
		p := cfg.PFCP
		a, err := netip.ParseAddr(strings.TrimSpace(p.Address))
		if err != nil {
			return cube.Errorf("pfcp.address", "invalid address %q", p.Address)
		}
		if a.IsUnspecified() || a.IsMulticast() {
			return cube.Unprocessable("pfcp.address", "%s: name the one address the N4 interface has (a loopback or host address), not a wildcard or multicast address", a)
		}
		p.Address = a.Unmap().String()
		if p.Port == 0 {
			p.Port = 8805
		}
		if p.HeartbeatSeconds < -1 || p.HeartbeatSeconds > 3600 {
			return cube.Errorf("pfcp.heartbeat_seconds", "%d: want 1..3600, 0 for the default (%d), -1 for none", p.HeartbeatSeconds, DefaultHeartbeat)
		}
		if p.HeartbeatSeconds == 0 {
			p.HeartbeatSeconds = DefaultHeartbeat
		}
		if p.T1Ms == 0 {
			p.T1Ms = DefaultT1Ms
		}
		if p.T1Ms < 100 || p.T1Ms > 60000 {
			return cube.Unprocessable("pfcp.t1_ms", "%d: want 100..60000", p.T1Ms)
		}
		if p.N1 == 0 {
			p.N1 = DefaultN1
		}
		if p.N1 > 10 {
			return cube.Errorf("pfcp.n1", "%d: want 1..10", p.N1)
		}
		if p.GracefulReleaseSeconds > 86400 {
			return cube.Errorf("pfcp.graceful_release_seconds", "%d: want 0..86400", p.GracefulReleaseSeconds)
		}
	}
	if cfg.NodeID != "" {
		if a, err := netip.ParseAddr(cfg.NodeID); err == nil {
			cfg.NodeID = a.Unmap().String()
		} else if !validFQDN(cfg.NodeID) {
			return cube.Errorf("node_id", "%q is neither an address nor an FQDN", cfg.NodeID)
		}
	}
	if cfg.TEIDRange == "" {
		cfg.TEIDRange = "1-0xffffffff"
	}
	lo, hi, err := ParseTEIDRange(cfg.TEIDRange)
	if err != nil {
		if teidRange.MatchString(cfg.TEIDRange) {
			return cube.Unprocessable("teid_range", "%v", err)
		}
		return cube.Errorf("teid_range", "%v", err)
	}
	cfg.TEIDRange = fmt.Sprintf("%#x-%#x", lo, hi)
	for i := range cfg.UEPools {
		p := &cfg.UEPools[i]
		pf, err := netip.ParsePrefix(strings.TrimSpace(p.Prefix))
		if err != nil {
			return cube.Errorf(fmt.Sprintf("ue_pools[%d].prefix", i), "invalid prefix %q", p.Prefix)
		}
		pf = pf.Masked()
		if pf.Addr().Is4() && pf.Bits() > 30 || pf.Addr().Is6() && pf.Bits() > 63 {
			return cube.Unprocessable(fmt.Sprintf("ue_pools[%d].prefix", i), "%s is too small (at most /30 for IPv4, /63 for IPv6: UEs get /64s)", pf)
		}
		p.Prefix = pf.String()
		for j := range i {
			if q := netip.MustParsePrefix(cfg.UEPools[j].Prefix); q.Overlaps(pf) {
				return cube.Conflict(fmt.Sprintf("ue_pools[%d].prefix", i), "%s overlaps pool %s", pf, q)
			}
		}
	}
	if cfg.MaxSessions == 0 {
		cfg.MaxSessions = DefaultMaxSessions
	}
	if n := cfg.MaxSessions; n < MinMaxSessions || n > MaxMaxSessions || n&(n-1) != 0 {
		return cube.Unprocessable("max_sessions", "%d: want a power of two from %d to %d", n, MinMaxSessions, MaxMaxSessions)
	}
	if cfg.MBRBurstMs == 0 {
		cfg.MBRBurstMs = DefaultMBRBurstMs
	}
	if cfg.MBRBurstMs > 10000 {
		return cube.Errorf("mbr_burst_ms", "%d: at most 10000", cfg.MBRBurstMs)
	}
	if cfg.BufferPackets == 0 {
		cfg.BufferPackets = DefaultBufferPackets
	}
	if cfg.BufferPackets > MaxBufferPackets {
		return cube.Errorf("buffer_packets", "%d: at most %d", cfg.BufferPackets, MaxBufferPackets)
	}
	if cfg.ErrorIndicationRate == 0 {
		cfg.ErrorIndicationRate = DefaultErrIndRate
	}
	if cfg.RecoveryTime == "" {
		cfg.RecoveryTime = time.Now().UTC().Truncate(time.Second).Format(time.RFC3339)
	}
	if err := checkTime("recovery_time", cfg.RecoveryTime); err != nil {
		return err
	}
	return nil
}

var (
	teidRange = regexp.MustCompile(schema.Anchored(teid + "-" + teid))
	timeRE    = regexp.MustCompile(schema.Anchored(rfc3339))
)

// checkTime checks an RFC 3339 time: 422 for one of the right form that is
// no time (February 30th).
func checkTime(field, v string) error {
	if _, err := time.Parse(time.RFC3339, v); err != nil {
		if timeRE.MatchString(v) {
			return cube.Unprocessable(field, "%q is not a time: %v", v, err)
		}
		return cube.Errorf(field, "%q is not an RFC 3339 time", v)
	}
	return nil
}

// Recovery is the recovery time as a time.
func (cfg *Config) Recovery() time.Time {
	t, _ := time.Parse(time.RFC3339, cfg.RecoveryTime)
	return t
}

// ParseTEIDRange reads "first-last".
func ParseTEIDRange(s string) (uint32, uint32, error) {
	a, b, ok := strings.Cut(s, "-")
	lo, err1 := strconv.ParseUint(strings.TrimSpace(a), 0, 32)
	hi, err2 := strconv.ParseUint(strings.TrimSpace(b), 0, 32)
	if !ok || err1 != nil || err2 != nil || lo == 0 || hi < lo {
		return 0, 0, fmt.Errorf("%q: want first-last, e.g. 0x10000-0x1ffff (TEID 0 is reserved)", s)
	}
	return uint32(lo), uint32(hi), nil
}

// Sessions is how many sessions the cube's maps are sized for.
func (cfg *Config) Sessions() uint32 {
	if cfg.MaxSessions == 0 {
		return DefaultMaxSessions
	}
	return cfg.MaxSessions
}

// TEIDSlots is how many TEIDs of the chosen range can be in use at once:
// the fast path finds their sessions by array index (upf_teid_slots, a
// slot per session), not by a hash.
func (cfg *Config) TEIDSlots() uint32 { return cfg.Sessions() }

// ChosenTEIDs is the upper half of the TEID range (n TEIDs from base): the
// TEIDs the UPF chooses when an SMF asks it to (F-TEID CHOOSE). A TEID's
// offset in it names an array slot (its low bits, below TEIDSlots) and a
// generation (the rest). The lower half is for TEIDs an SMF or the API
// gives.
func (cfg *Config) ChosenTEIDs() (base, n uint32) {
	lo, hi := cfg.TEIDs()
	n = uint32((uint64(hi) - uint64(lo) + 1) / 2)
	return hi - n + 1, n
}

// TEIDSlot is the array slot of a TEID of the chosen range (ok false for
// any other TEID).
func (cfg *Config) TEIDSlot(teid uint32) (slot uint32, ok bool) {
	base, n := cfg.ChosenTEIDs()
	i := teid - base
	return i & (cfg.TEIDSlots() - 1), i < n
}

// TEIDs returns the cube's TEID range.
func (cfg *Config) TEIDs() (uint32, uint32) {
	lo, hi, err := ParseTEIDRange(cfg.TEIDRange)
	if err != nil {
		return 1, 0xffffffff
	}
	return lo, hi
}

func validFQDN(s string) bool {
	if len(s) > 253 || s == "" {
		return false
	}
	for _, l := range strings.Split(s, ".") {
		if l == "" || len(l) > 63 {
			return false
		}
		for _, r := range l {
			if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-') {
				return false
			}
		}
	}
	return true
}

// PortConfig is a port's settings.
type PortConfig struct {
	// Gateway and Gateway6 are the next hops of the port (IPv4, IPv6):
	// packets leaving it go to their MAC address. Without one, a packet's
	// destination must be on a subnet of the port's addresses and is
	// resolved itself.
	Gateway  string `json:"gateway,omitempty" format:"ipv4"`
	Gateway6 string `json:"gateway6,omitempty" format:"ipv6" doc:"not an IPv4-mapped address (422)"`
}

// Validate checks a port's settings.
func (p *PortConfig) Validate(c *cube.Cube) error {
	for _, g := range []struct {
		field string
		v     *string
		v4    bool
	}{{"gateway", &p.Gateway, true}, {"gateway6", &p.Gateway6, false}} {
		if *g.v == "" {
			continue
		}
		fam := "IPv6"
		if g.v4 {
			fam = "IPv4"
		}
		a, err := netip.ParseAddr(*g.v)
		if err != nil || a.Is4() != g.v4 {
			return cube.Errorf(g.field, "invalid %s address %q", fam, *g.v)
		}
		if a.Unmap().Is4() != g.v4 {
			return cube.Unprocessable(g.field, "%s is an IPv4 address: want an IPv6 one", a)
		}
		*g.v = a.Unmap().String()
	}
	return nil
}

// DecodeConfig decodes and validates a upf cube's settings.
func DecodeConfig(c *cube.Cube) (*Config, error) {
	v, err := cube.Decode("config", c.Config, &Config{})
	if err != nil {
		return nil, err
	}
	cfg := v.(*Config)
	if err := cfg.Validate(c); err != nil {
		return nil, cube.Within("config", err)
	}
	return cfg, nil
}

// DecodePortConfig decodes a port's settings.
func DecodePortConfig(p *cube.Port) (*PortConfig, error) {
	v, err := cube.Decode("config", p.Config, &PortConfig{})
	if err != nil {
		return nil, err
	}
	pc := v.(*PortConfig)
	return pc, pc.Validate(nil)
}

// PortAddrs returns the first IPv4 and the first IPv6 address of a port,
// with their prefix lengths.
func PortAddrs(p *cube.Port) (v4, v6 netip.Prefix) {
	for _, s := range p.Addresses {
		pf, err := netip.ParsePrefix(s)
		if err != nil || pf.Addr().Is4In6() {
			continue
		}
		if pf.Addr().Is4() && !v4.IsValid() {
			v4 = pf
		} else if pf.Addr().Is6() && !v6.IsValid() {
			v6 = pf
		}
	}
	return v4, v6
}

// Interfaces names the host interface the N4 endpoint binds to: the one
// holding pfcp.address (lo for a loopback address). A tenant's upf may
// listen only on an interface the tenant was given (cube.InterfaceUser);
// an address no interface holds names none, and binding it fails.
func (cfg *Config) Interfaces() []string {
	if cfg.PFCP == nil {
		return nil
	}
	a, err := netip.ParseAddr(strings.TrimSpace(cfg.PFCP.Address))
	if err != nil {
		return nil
	}
	if name := interfaceOf(a.Unmap()); name != "" {
		return []string{name}
	}
	return nil
}

// interfaceOf is the interface holding address a in the daemon's network
// namespace (a loopback interface holds its whole prefix).
func interfaceOf(a netip.Addr) string {
	ifs, err := net.Interfaces()
	if err != nil {
		return ""
	}
	for _, i := range ifs {
		addrs, err := i.Addrs()
		if err != nil {
			continue
		}
		for _, ad := range addrs {
			n, ok := ad.(*net.IPNet)
			if !ok {
				continue
			}
			ip, ok := netip.AddrFromSlice(n.IP)
			if !ok {
				continue
			}
			if ip.Unmap() == a || (i.Flags&net.FlagLoopback != 0 && n.Contains(a.AsSlice())) {
				return i.Name
			}
		}
	}
	return ""
}
