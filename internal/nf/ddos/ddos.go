// Package ddos is the ddos NF: a transparent cube that drops traffic from
// blacklisted sources and to blacklisted destinations (addresses and
// prefixes, up to 1M entries each, with expiry and per-entry drop counters),
// blocks sources whose packet rate crosses a threshold, and detects port
// scans (many distinct destination ports, or an incremental port run, from
// one source within a window): the scanner is blocked for a while, reported
// as an event (view, log) and its packets are mirrored to a monitor
// interface.
package ddos

import (
	"embed"
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/datapath"
	"github.com/edgenf/edgenf/internal/schema"
)

// objects are the fast path built for each hook (make bpf).
//
//go:embed bpf/*.o
var objects embed.FS

// Limits of the fast path (ddos.bpf.c).
const (
	MaxEntries   = 1 << 20 // per blacklist
	MaxSources   = 32768   // tracked and blocked sources (LRU)
	scanBits     = 2048
	MaxScanPorts = 1024 // distinct-port threshold bound (bitmap accuracy)
)

// Config is the cube's settings.
type Config struct {
	// Directions inspected by rate and scan detection: both (default),
	// ingress or egress. Blacklists apply in both.
	Directions string `json:"directions,omitempty" enum:"both|ingress|egress"`
	// Rate: block a source sending more than Threshold packets within
	// WindowMs. Absent: no rate detection.
	Rate *RateConfig `json:"rate,omitempty"`
	// Scan: port-scan detection. Absent: none.
	Scan *ScanConfig `json:"scan,omitempty"`
	// MirrorInterface is a Linux interface that receives the packets of
	// sources blocked for scanning (instead of dropping them), for a
	// monitor to analyse. Empty: they are dropped.
	MirrorInterface string `json:"mirror_interface,omitempty" format:"ifname" doc:"a Linux interface (the tenant's) that receives the packets of sources blocked for scanning; needs scan"`
}

// RefineSchema: only scanners are mirrored.
func (*Config) RefineSchema(s *schema.Schema) {
	scan := *s.Properties["scan"]
	scan.Nullable = false
	s.AnyOf = []*schema.Schema{
		schema.Branch(nil, map[string]*schema.Schema{"mirror_interface": schema.Absent()}),
		schema.Branch([]string{"scan"}, map[string]*schema.Schema{"scan": &scan}),
	}
}

// RateConfig configures rate-based blocking.
type RateConfig struct {
	Threshold    uint32 `json:"threshold" minimum:"1"`                     // packets per window; required
	WindowMs     uint32 `json:"window_ms,omitempty" maximum:"3600000"`     // default 1000
	BlockSeconds uint32 `json:"block_seconds,omitempty" maximum:"2592000"` // default 60
}

// ScanConfig configures port-scan detection. A probe is a TCP SYN without
// ACK or a UDP packet.
type ScanConfig struct {
	// DistinctPorts: block a source probing more than this many distinct
	// destination ports within the window (0: off; at most 1024).
	DistinctPorts uint32 `json:"distinct_ports,omitempty" maximum:"1024"`
	// SequentialPorts: block a source probing this many consecutive
	// ports in increasing order (p, p+1, p+2, ...) (0: off).
	SequentialPorts uint32 `json:"sequential_ports,omitempty"`
	WindowMs        uint32 `json:"window_ms,omitempty" maximum:"3600000"`     // default 10000
	BlockSeconds    uint32 `json:"block_seconds,omitempty" maximum:"2592000"` // default 300
}

// RefineSchema: sequential_ports is 0 (off) or 2..65535, and one of the
// two detections is on.
func (*ScanConfig) RefineSchema(s *schema.Schema) {
	s.Properties["sequential_ports"] = &schema.Schema{Description: "0 (off) or 2..65535", OneOf: []*schema.Schema{
		{Type: "integer", Minimum: schema.Num(0), Maximum: schema.Num(0)},
		{Type: "integer", Minimum: schema.Num(2), Maximum: schema.Num(65535)}}}
	s.AnyOf = []*schema.Schema{
		schema.Branch([]string{"distinct_ports"}, map[string]*schema.Schema{"distinct_ports": {Type: "integer", Minimum: schema.Num(1), Maximum: schema.Num(MaxScanPorts)}}),
		schema.Branch([]string{"sequential_ports"}, map[string]*schema.Schema{"sequential_ports": {Type: "integer", Minimum: schema.Num(2), Maximum: schema.Num(65535)}}),
	}
}

var directions = map[string]uint32{"both": fDirIngress | fDirEgress, "ingress": fDirIngress, "egress": fDirEgress}

// Validate checks the settings and fills in defaults.
func (c *Config) Validate(*cube.Cube) error {
	if c.Directions == "" {
		c.Directions = "both"
	}
	if _, ok := directions[c.Directions]; !ok {
		return cube.Errorf("directions", "unknown value %q (want both, ingress or egress)", c.Directions)
	}
	if r := c.Rate; r != nil {
		if r.Threshold == 0 {
			return cube.Errorf("rate.threshold", "required: packets per window above which a source is blocked (1 or more)")
		}
		if r.WindowMs == 0 {
			r.WindowMs = 1000
		}
		if r.WindowMs > 3600_000 {
			return cube.Errorf("rate.window_ms", "%d ms is more than an hour", r.WindowMs)
		}
		if r.BlockSeconds == 0 {
			r.BlockSeconds = 60
		}
		if r.BlockSeconds > 30*86400 {
			return cube.Errorf("rate.block_seconds", "%d s is more than 30 days", r.BlockSeconds)
		}
	}
	if s := c.Scan; s != nil {
		if s.DistinctPorts == 0 && s.SequentialPorts == 0 {
			return cube.Errorf("scan", "set distinct_ports or sequential_ports (or both)")
		}
		if s.DistinctPorts > MaxScanPorts {
			return cube.Errorf("scan.distinct_ports", "%d is more than %d", s.DistinctPorts, MaxScanPorts)
		}
		if s.SequentialPorts == 1 || s.SequentialPorts > 65535 {
			return cube.Errorf("scan.sequential_ports", "%d: want 2..65535 (or 0 for off)", s.SequentialPorts)
		}
		if s.WindowMs == 0 {
			s.WindowMs = 10_000
		}
		if s.WindowMs > 3600_000 {
			return cube.Errorf("scan.window_ms", "%d ms is more than an hour", s.WindowMs)
		}
		if s.BlockSeconds == 0 {
			s.BlockSeconds = 300
		}
		if s.BlockSeconds > 30*86400 {
			return cube.Errorf("scan.block_seconds", "%d s is more than 30 days", s.BlockSeconds)
		}
	}
	if c.MirrorInterface != "" {
		if len(c.MirrorInterface) > 15 || strings.ContainsAny(c.MirrorInterface, "/ \t:") {
			return cube.Errorf("mirror_interface", "invalid interface name %q", c.MirrorInterface)
		}
		if c.Scan == nil {
			return cube.Errorf("mirror_interface", "only scanners are mirrored: set scan too")
		}
	}
	return nil
}

// Interfaces names the mirror interface: a tenant's cube may mirror only to
// an interface the tenant was given (cube.InterfaceUser).
func (c *Config) Interfaces() []string {
	if c.MirrorInterface == "" {
		return nil
	}
	return []string{c.MirrorInterface}
}

// Entry is one blacklist entry: an address or a prefix.
type Entry struct {
	// Prefix is an IPv4/IPv6 address or prefix: "198.18.0.7",
	// "198.18.0.0/16", "2001:db8::/32". Stored in canonical form.
	Prefix string `json:"prefix" format:"ip-host"`
	// Expires is when the entry stops matching (RFC 3339); absent: never.
	Expires *time.Time `json:"expires,omitempty"`
	// TTLSeconds is a shorthand for Expires = now + TTLSeconds; it is
	// turned into Expires when the entry is stored.
	TTLSeconds uint32 `json:"ttl_seconds,omitempty"`
	Comment    string `json:"comment,omitempty" maxLength:"256"`
}

// RefineSchema: an entry expires at a time or after a time, not both.
func (*Entry) RefineSchema(s *schema.Schema) {
	s.AnyOf = []*schema.Schema{
		schema.Branch(nil, map[string]*schema.Schema{"expires": schema.Absent()}),
		schema.Branch(nil, map[string]*schema.Schema{"ttl_seconds": schema.Absent()}),
	}
}

// Validate checks and canonicalises the entry.
func (e *Entry) Validate(*cube.Cube) error {
	p, err := ParsePrefix(e.Prefix)
	if errors.As(err, new(errHostBits)) {
		return cube.Unprocessable("prefix", "%v", err)
	}
	if err != nil {
		return cube.Errorf("prefix", "%v", err)
	}
	e.Prefix = p.String()
	if e.TTLSeconds > 0 {
		if e.Expires != nil {
			return cube.Errorf("ttl_seconds", "give expires or ttl_seconds, not both")
		}
		t := time.Now().Add(time.Duration(e.TTLSeconds) * time.Second).UTC().Truncate(time.Second)
		e.Expires = &t
		e.TTLSeconds = 0
	}
	if utf8.RuneCountInString(e.Comment) > 256 {
		return cube.Errorf("comment", "longer than 256 characters")
	}
	return nil
}

// errHostBits is a prefix with bits set after its length: the API's
// document cannot say so (422).
type errHostBits struct{ error }

// ParsePrefix reads an address ("/32" or "/128" implied) or a prefix, and
// refuses host bits set beyond the prefix length.
func ParsePrefix(s string) (netip.Prefix, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return netip.Prefix{}, errors.New("required: an address or prefix such as 198.18.0.7 or 198.18.0.0/16")
	}
	if !strings.Contains(s, "/") {
		a, err := netip.ParseAddr(s)
		if err != nil {
			return netip.Prefix{}, fmt.Errorf("invalid address %q", s)
		}
		a = a.Unmap()
		return netip.PrefixFrom(a, a.BitLen()), nil
	}
	p, err := netip.ParsePrefix(s)
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("invalid prefix %q: want address/length, e.g. 198.18.0.0/16", s)
	}
	if p.Addr().Is4In6() {
		return netip.Prefix{}, fmt.Errorf("invalid prefix %q: write IPv4 prefixes in IPv4 form", s)
	}
	if p.Masked() != p {
		return netip.Prefix{}, errHostBits{fmt.Errorf("prefix %q has bits set after the first %d; did you mean %s?", s, p.Bits(), p.Masked())}
	}
	return p, nil
}

func blacklistTable(name, doc string) cube.Table {
	return cube.Table{Name: name, Doc: doc, Item: &Entry{}, Max: MaxEntries,
		Key: func(v any) string { return v.(*Entry).Prefix }}
}

var (
	srcTable = blacklistTable("blacklist_src", "Sources to drop: addresses or prefixes, optional expiry.")
	dstTable = blacklistTable("blacklist_dst", "Destinations to drop: addresses or prefixes, optional expiry.")
)

func tableOf(name string) *cube.Table {
	if name == dstTable.Name {
		return &dstTable
	}
	return &srcTable
}

// Type is the ddos NF type.
var Type = &cube.Type{
	Name: "ddos",
	Description: "Transparent DDoS mitigator: source/destination blacklists (1M prefixes each, expiry, per-entry counters), " +
		"rate-based blocking, port-scan detection with events and mirroring of the scanner's packets.",
	Transparent: true,
	Hooks:       []datapath.Hook{datapath.XDP, datapath.TC},
	Object:      cube.HookObjects(objects, "bpf/ddos"),
	Config:      &Config{},
	Tables:      []cube.Table{srcTable, dstTable},
	Views: []cube.View{
		{Name: "events", Doc: "Detections (port scans, rate), oldest first; the last 1024.", Item: &Event{},
			List: func(h cube.Handle, _ *cube.Cube) (any, error) { return cube.ControllerOf[*controller](h).Events(), nil }},
		{Name: "blocked", Doc: "Sources blocked by detection now, with what they sent since.", Item: &Blocked{}, List: listBlocked, Unlocked: true},
		{Name: "hits", Doc: "Blacklist entries that dropped packets, with their counters.", Item: &Hit{}, List: listHits},
		ddCounters.View("Packets passed, dropped per cause, mirrored; events and blocks."),
	},
	Actions: []cube.Action{
		{Name: "unblock", Doc: "Release a source blocked by detection.", Args: &UnblockArgs{}, Do: unblock},
		{Name: "flush_blocked", Doc: "Release every blocked source and forget tracking state.", Do: flushBlocked},
		{Name: "clear_events", Doc: "Forget the recorded events.", Do: clearEvents},
		ddCounters.ResetAction("Zero the cube's counters.", nil),
	},
	New: newController,
}

func init() { cube.Register(Type) }
