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
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/cilium/ebpf"
	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/datapath"
	"github.com/edgenf/edgenf/internal/ktime"
	"github.com/edgenf/edgenf/internal/nf/counters"
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
	Directions string `json:"directions,omitempty"`
	// Rate: block a source sending more than Threshold packets within
	// WindowMs. Absent: no rate detection.
	Rate *RateConfig `json:"rate,omitempty"`
	// Scan: port-scan detection. Absent: none.
	Scan *ScanConfig `json:"scan,omitempty"`
	// MirrorInterface is a Linux interface that receives the packets of
	// sources blocked for scanning (instead of dropping them), for a
	// monitor to analyse. Empty: they are dropped.
	MirrorInterface string `json:"mirror_interface,omitempty"`
}

// RateConfig configures rate-based blocking.
type RateConfig struct {
	Threshold    uint32 `json:"threshold"`               // packets per window; required
	WindowMs     uint32 `json:"window_ms,omitempty"`     // default 1000
	BlockSeconds uint32 `json:"block_seconds,omitempty"` // default 60
}

// ScanConfig configures port-scan detection. A probe is a TCP SYN without
// ACK or a UDP packet.
type ScanConfig struct {
	// DistinctPorts: block a source probing more than this many distinct
	// destination ports within the window (0: off; at most 1024).
	DistinctPorts uint32 `json:"distinct_ports,omitempty"`
	// SequentialPorts: block a source probing this many consecutive
	// ports in increasing order (p, p+1, p+2, ...) (0: off).
	SequentialPorts uint32 `json:"sequential_ports,omitempty"`
	WindowMs        uint32 `json:"window_ms,omitempty"`     // default 10000
	BlockSeconds    uint32 `json:"block_seconds,omitempty"` // default 300
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
	Prefix string `json:"prefix"`
	// Expires is when the entry stops matching (RFC 3339); absent: never.
	Expires *time.Time `json:"expires,omitempty"`
	// TTLSeconds is a shorthand for Expires = now + TTLSeconds; it is
	// turned into Expires when the entry is stored.
	TTLSeconds uint32 `json:"ttl_seconds,omitempty"`
	Comment    string `json:"comment,omitempty"`
}

// Validate checks and canonicalises the entry.
func (e *Entry) Validate(*cube.Cube) error {
	p, err := ParsePrefix(e.Prefix)
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
	if len(e.Comment) > 256 {
		return cube.Errorf("comment", "longer than 256 bytes")
	}
	return nil
}

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
		return netip.Prefix{}, fmt.Errorf("prefix %q has bits set after the first %d; did you mean %s?", s, p.Bits(), p.Masked())
	}
	return p, nil
}

// --- kernel layouts (mirrors of ddos.bpf.c) ---

const (
	fSrcExact   = 1 << 0
	fSrcLPM     = 1 << 1
	fDstExact   = 1 << 2
	fDstLPM     = 1 << 3
	fRate       = 1 << 4
	fScan       = 1 << 5
	fDirIngress = 1 << 6
	fDirEgress  = 1 << 7
	fMirror     = 1 << 8
	fSrcLPM4    = 1 << 9
	fDstLPM4    = 1 << 10
)

// Block reasons.
const (
	ReasonScan = 1
	ReasonRate = 2
)

var reasonNames = map[uint32]string{ReasonScan: "port-scan", ReasonRate: "rate"}

type addrKey [16]byte

type lpmKey struct {
	Prefixlen uint32
	Addr      [16]byte
}

type entryVal struct {
	Expires uint64
	Packets uint64
	Bytes   uint64
}

type blockVal struct {
	Until   uint64
	Since   uint64
	Packets uint64
	Bytes   uint64
	Reason  uint32
	Count   uint32
}

type cfgVal struct {
	Flags          uint32
	RateThreshold  uint32
	RateWindowNs   uint64
	RateBlockNs    uint64
	ScanDistinct   uint32
	ScanSequential uint32
	ScanWindowNs   uint64
	ScanBlockNs    uint64
	MirrorIfindex  uint32
	Pad            uint32
	Src4, Dst4     tabCfg // the IPv4 tables' prefix lengths
}

// The cube's event counters, in the order of enum dd_stat.
var ddCounters = counters.Named{Map: "dd_stats", Names: []string{"passed", "dropped_src_blacklist",
	"dropped_dst_blacklist", "dropped_blocked", "mirrored", "events", "blocked_scan", "blocked_rate"}}

func key16(a netip.Addr) addrKey { return a.As16() }

// side is one blacklist: its table and maps. IPv6 entries go to the exact
// hash or the trie; IPv4 ones to the IPv4 table (slots, vals: table.go) or,
// when it has no place for them, to the IPv4 fallback trie (lpm4).
type side struct {
	table, exact, lpm   string
	slots, vals, lpm4   string
	fExact, fLPM, fLPM4 uint32
}

var sides = []side{
	{"blacklist_src", "dd_src_exact", "dd_src_lpm", "dd_src_t4", "dd_src_t4v", "dd_src_lpm4", fSrcExact, fSrcLPM, fSrcLPM4},
	{"blacklist_dst", "dd_dst_exact", "dd_dst_lpm", "dd_dst_t4", "dd_dst_t4v", "dd_dst_lpm4", fDstExact, fDstLPM, fDstLPM4},
}

func sideOf(table string) *side {
	for i := range sides {
		if sides[i].table == table {
			return &sides[i]
		}
	}
	return nil
}

func isExact(p netip.Prefix) bool { return p.Bits() == p.Addr().BitLen() }

func lpmOf(p netip.Prefix) lpmKey {
	k := lpmKey{Prefixlen: uint32(p.Bits()), Addr: p.Addr().As16()}
	if p.Addr().Is4() {
		k.Prefixlen += 96
	}
	return k
}

// --- controller ---

// Event is one detection.
type Event struct {
	Time      time.Time `json:"time"`
	Source    string    `json:"source"`
	Reason    string    `json:"reason"` // port-scan or rate
	Count     uint32    `json:"count"`  // distinct ports probed, or packets in the window
	Direction string    `json:"direction"`
	// BlockedUntil is when the block ends.
	BlockedUntil time.Time `json:"blocked_until"`
	Mirrored     bool      `json:"mirrored"`
	Packet       string    `json:"packet"` // the packet that tipped the detection
}

const keepEvents = 1024

type expiry struct {
	at    time.Time
	table string
	key   string
}

type controller struct {
	mu     sync.Mutex
	events []Event
	cfg    Config
	// counts of entries per map, to skip empty maps in the fast path
	n map[string]int
	// entries with a deadline, soonest first
	expiries []expiry
	lastScan time.Time
	// flags and lists of lengths last written to dd_cfg (single-entry
	// changes rewrite the settings only when a map becomes empty or
	// non-empty, or a table's lengths change)
	written    uint32
	writtenTab [2]tabCfg
	// tabs mirror the IPv4 tables (table.go), by blacklist; read back
	// from the maps on first use.
	tabs map[string]*table
}

// table returns the IPv4 table of a blacklist, reading it from the maps
// the first time.
func (ctl *controller) table(h mapper, s *side) (*table, error) {
	if t := ctl.tabs[s.table]; t != nil {
		return t, nil
	}
	t, err := loadTable(h, s.slots, s.vals)
	if err != nil {
		return nil, err
	}
	ctl.tabs[s.table] = t
	return t, nil
}

// forget drops the mirror of a table after a failed write: it is read back
// from the maps next time.
func (ctl *controller) forget(s *side) { delete(ctl.tabs, s.table) }

func newController() cube.Controller {
	return &controller{n: map[string]int{}, tabs: map[string]*table{}}
}

// tabCfgs are the lists of lengths of the tables for the settings.
func (ctl *controller) tabCfgs() [2]tabCfg {
	var c [2]tabCfg
	for i := range sides {
		if t := ctl.tabs[sides[i].table]; t != nil {
			c[i] = t.cfg()
		}
	}
	return c
}

func (ctl *controller) flags() uint32 {
	var f uint32
	for _, s := range sides {
		if ctl.n[s.exact] > 0 {
			f |= s.fExact
		}
		if ctl.n[s.lpm] > 0 {
			f |= s.fLPM
		}
		if ctl.n[s.lpm4] > 0 {
			f |= s.fLPM4
		}
	}
	c := ctl.cfg
	if c.Rate != nil {
		f |= fRate
	}
	if c.Scan != nil {
		f |= fScan
	}
	f |= directions[c.Directions]
	if c.MirrorInterface != "" {
		f |= fMirror
	}
	return f
}

func (ctl *controller) writeConfig(h cube.Handle) error {
	m, err := h.Map("dd_cfg")
	if err != nil {
		return err
	}
	// The fast path reads the tables' lengths and seeds from the settings.
	for i := range sides {
		if _, err := ctl.table(h, &sides[i]); err != nil {
			return err
		}
	}
	c := ctl.cfg
	tc := ctl.tabCfgs()
	v := cfgVal{Flags: ctl.flags(), Src4: tc[0], Dst4: tc[1]}
	if r := c.Rate; r != nil {
		v.RateThreshold = r.Threshold
		v.RateWindowNs = uint64(r.WindowMs) * 1e6
		v.RateBlockNs = uint64(r.BlockSeconds) * 1e9
	}
	if s := c.Scan; s != nil {
		v.ScanDistinct = s.DistinctPorts
		v.ScanSequential = s.SequentialPorts
		v.ScanWindowNs = uint64(s.WindowMs) * 1e6
		v.ScanBlockNs = uint64(s.BlockSeconds) * 1e9
	}
	if c.MirrorInterface != "" {
		ifi, err := net.InterfaceByName(c.MirrorInterface)
		if err != nil {
			return cube.NotFound("config.mirror_interface", "no Linux interface named %q", c.MirrorInterface)
		}
		v.MirrorIfindex = uint32(ifi.Index)
	}
	if err := m.Put(uint32(0), v); err != nil {
		return err
	}
	ctl.written, ctl.writtenTab = v.Flags, tc
	return nil
}

// flagsChanged rewrites the settings if the map flags or the tables'
// lengths changed.
func (ctl *controller) flagsChanged(h cube.Handle) error {
	if ctl.flags() == ctl.written && ctl.tabCfgs() == ctl.writtenTab {
		return nil
	}
	return ctl.writeConfig(h)
}

func decodeConfig(c *cube.Cube) (Config, error) {
	v, err := cube.Decode("config", c.Config, &Config{})
	if err != nil {
		return Config{}, err
	}
	cfg := v.(*Config)
	if err := cfg.Validate(c); err != nil {
		return Config{}, cube.Within("config", err)
	}
	return *cfg, nil
}

// Sync writes the settings and makes the blacklist maps hold exactly the
// tables' entries, keeping the counters of entries that stay.
func (ctl *controller) Sync(h cube.Handle, c *cube.Cube) error {
	ctl.mu.Lock()
	defer ctl.mu.Unlock()
	cfg, err := decodeConfig(c)
	if err != nil {
		return err
	}
	if cfg.MirrorInterface != "" && c.Hook == datapath.XDP {
		ifi, err := net.InterfaceByName(cfg.MirrorInterface)
		if err != nil {
			return cube.NotFound("config.mirror_interface", "no Linux interface named %q", cfg.MirrorInterface)
		}
		if err := h.PrepareRedirect(ifi.Index); err != nil {
			return cube.Errorf("config.mirror_interface", "%v", err)
		}
	}
	oldDetect := ctl.cfg.Rate != nil || ctl.cfg.Scan != nil
	ctl.cfg = cfg
	ctl.expiries = ctl.expiries[:0]
	for i := range sides {
		if err := ctl.syncSide(h, c, &sides[i]); err != nil {
			return err
		}
	}
	sort.Slice(ctl.expiries, func(i, j int) bool { return ctl.expiries[i].at.Before(ctl.expiries[j].at) })
	if oldDetect && cfg.Rate == nil && cfg.Scan == nil {
		flushMap(h, "dd_blocked")
	}
	return ctl.writeConfig(h)
}

func (ctl *controller) syncSide(h cube.Handle, c *cube.Cube, s *side) error {
	tb := tableOf(s.table)
	rows, err := tb.Entries(c)
	if err != nil {
		return err
	}
	exact, err := h.Map(s.exact)
	if err != nil {
		return err
	}
	lpm, err := h.Map(s.lpm)
	if err != nil {
		return err
	}
	wantExact := make(map[addrKey]uint64, len(rows))
	wantLPM := map[lpmKey]uint64{}
	want4 := map[tabKey]uint64{}
	for _, v := range rows {
		e := v.(*Entry)
		p, _ := ParsePrefix(e.Prefix)
		var exp uint64
		if e.Expires != nil {
			exp = ktime.At(*e.Expires)
			ctl.expiries = append(ctl.expiries, expiry{*e.Expires, s.table, e.Prefix})
		}
		switch {
		case p.Addr().Is4():
			want4[keyOf(p)] = exp
		case isExact(p):
			wantExact[key16(p.Addr())] = exp
		default:
			wantLPM[lpmOf(p)] = exp
		}
	}
	// Drop what is no longer wanted. IPv4 entries that earlier versions
	// kept in these maps move to the IPv4 table with their counters.
	moved := map[tabKey]entryVal{}
	var k addrKey
	var val entryVal
	var stale []addrKey
	it := exact.Iterate()
	for it.Next(&k, &val) {
		if _, ok := wantExact[k]; !ok {
			stale = append(stale, k)
			if a := netip.AddrFrom16(k); a.Is4In6() {
				moved[keyOf(netip.PrefixFrom(a.Unmap(), 32))] = val
			}
		}
	}
	var lk lpmKey
	var staleL []lpmKey
	itl := lpm.Iterate()
	for itl.Next(&lk, &val) {
		if _, ok := wantLPM[lk]; !ok {
			staleL = append(staleL, lk)
			if a := netip.AddrFrom16(lk.Addr); a.Is4In6() && lk.Prefixlen >= 96 && lk.Prefixlen <= 128 {
				if p, err := a.Unmap().Prefix(int(lk.Prefixlen) - 96); err == nil {
					moved[keyOf(p)] = val
				}
			}
		}
	}
	if err := ctl.syncTable(h, s, want4, moved); err != nil {
		return err
	}
	for _, k := range stale {
		exact.Delete(k)
	}
	for _, k := range staleL {
		lpm.Delete(k)
	}
	// Write what is wanted, keeping counters; new keys in batches.
	var newKeys []addrKey
	var newVals []entryVal
	for k, exp := range wantExact {
		var old entryVal
		if exact.Lookup(k, &old) == nil {
			if old.Expires != exp {
				old.Expires = exp
				if err := exact.Put(k, old); err != nil {
					return fmt.Errorf("%s: %w", s.exact, err)
				}
			}
			continue
		}
		newKeys = append(newKeys, k)
		newVals = append(newVals, entryVal{Expires: exp})
	}
	if err := putBatch(exact, newKeys, newVals); err != nil {
		return fmt.Errorf("%s: %w", s.exact, err)
	}
	for k, exp := range wantLPM {
		// A lookup finds the longest match, not only the key itself: try
		// to create the key first.
		err := lpm.Update(k, entryVal{Expires: exp}, ebpf.UpdateNoExist)
		if errors.Is(err, ebpf.ErrKeyExist) {
			var old entryVal
			if err = lpm.Lookup(k, &old); err == nil && old.Expires != exp {
				old.Expires = exp
				err = lpm.Put(k, old)
			}
		}
		if err != nil {
			return fmt.Errorf("%s: %w", s.lpm, err)
		}
	}
	ctl.n[s.exact] = len(wantExact)
	ctl.n[s.lpm] = len(wantLPM)
	return nil
}

// syncTable makes a blacklist's IPv4 table and fallback trie hold exactly
// want (key → deadline), keeping counters: entries in the table stay there;
// the others (new ones, those in the fallback trie, those moved from the
// IPv6 maps with their counters in moved) are put in the table if it has a
// place for them, in the fallback trie otherwise.
func (ctl *controller) syncTable(h cube.Handle, s *side, want map[tabKey]uint64, moved map[tabKey]entryVal) (err error) {
	t, err := ctl.table(h, s)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			ctl.forget(s) // read it back next time
		}
	}()
	lpm4, err := h.Map(s.lpm4)
	if err != nil {
		return err
	}
	var gone []tabKey
	for k := range t.where {
		if _, ok := want[k]; !ok {
			gone = append(gone, k)
		}
	}
	for _, k := range gone {
		if _, err := t.remove(h, k); err != nil {
			return err
		}
	}
	in4 := map[tabKey]entry4Val{}
	var lk lpm4Key
	var lv entry4Val
	it := lpm4.Iterate()
	for it.Next(&lk, &lv) {
		k := keyOf(netip.PrefixFrom(netip.AddrFrom4(lk.Addr), int(lk.Prefixlen)))
		if _, ok := want[k]; ok {
			in4[k] = lv
		} else if err := lpm4.Delete(lk); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
			return fmt.Errorf("%s: %w", s.lpm4, err)
		}
	}
	var ks []tabKey
	var vs []tabEntry
	for k, exp := range want {
		if t.has(k) {
			if err := t.setExpiry(h, k, exp); err != nil {
				return err
			}
			continue
		}
		v := tabEntry{Expires: exp}
		if old, ok := in4[k]; ok {
			v.Packets, v.Bytes = old.Packets, old.Bytes
		} else if old, ok := moved[k]; ok {
			v.Packets, v.Bytes = old.Packets, old.Bytes
		}
		ks, vs = append(ks, k), append(vs, v)
	}
	byLength(ks, vs)
	over, err := t.add(h, ks, vs)
	if err != nil {
		return err
	}
	// Those now in the table leave the fallback trie; the others go there.
	isOver := make(map[int]bool, len(over))
	for _, n := range over {
		isOver[n] = true
		k, v := ks[n], vs[n]
		if old, ok := in4[k]; ok && old.Expires == v.Expires {
			continue
		}
		e := entry4Val{Expires: v.Expires, Packets: v.Packets, Bytes: v.Bytes, Len: uint32(k.bits())}
		if err := lpm4.Put(k.lpm4(), e); err != nil {
			return fmt.Errorf("%s: %w", s.lpm4, err)
		}
	}
	var leave []tabKey
	for n, k := range ks {
		if _, ok := in4[k]; ok && !isOver[n] {
			leave = append(leave, k)
		}
	}
	if len(leave) > 0 {
		// The fast path must probe their lengths before they leave the
		// trie.
		ctl.n[s.lpm4] = len(over) + len(leave)
		if err := ctl.flagsChanged(h); err != nil {
			return err
		}
		for _, k := range leave {
			if err := lpm4.Delete(k.lpm4()); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
				return fmt.Errorf("%s: %w", s.lpm4, err)
			}
		}
	}
	ctl.n[s.lpm4] = len(over)
	return nil
}

func putBatch[K, V any](m *ebpf.Map, keys []K, vals []V) error {
	const chunk = 65536
	for len(keys) > 0 {
		n := min(chunk, len(keys))
		if _, err := m.BatchUpdate(keys[:n], vals[:n], nil); err != nil {
			// Kernels or map types without batch ops: one by one.
			for i := 0; i < n; i++ {
				if err := m.Put(keys[i], vals[i]); err != nil {
					return err
				}
			}
		}
		keys, vals = keys[n:], vals[n:]
	}
	return nil
}

// PutEntry writes one blacklist entry (the engine calls it instead of Sync
// when only entries changed: 1M-entry tables are not rewritten).
func (ctl *controller) PutEntry(h cube.Handle, c *cube.Cube, table string, item any) error {
	ctl.mu.Lock()
	defer ctl.mu.Unlock()
	s := sideOf(table)
	if s == nil {
		return cube.NotFound("table", "no table %q", table)
	}
	e := item.(*Entry)
	p, err := ParsePrefix(e.Prefix)
	if err != nil {
		return cube.Errorf("prefix", "%v", err)
	}
	var exp uint64
	if e.Expires != nil {
		exp = ktime.At(*e.Expires)
		ctl.addExpiry(expiry{*e.Expires, table, e.Prefix})
	}
	if p.Addr().Is4() {
		if err := ctl.put4(h, s, keyOf(p), exp); err != nil {
			return err
		}
		return ctl.flagsChanged(h)
	}
	var m *ebpf.Map
	var k any
	name := s.lpm
	if isExact(p) {
		name = s.exact
		k = key16(p.Addr())
	} else {
		k = lpmOf(p)
	}
	if m, err = h.Map(name); err != nil {
		return err
	}
	// New entry: one syscall. Existing one: keep its counters.
	err = m.Update(k, entryVal{Expires: exp}, ebpf.UpdateNoExist)
	switch {
	case err == nil:
		ctl.n[name]++
	case errors.Is(err, ebpf.ErrKeyExist):
		var v entryVal
		if err := m.Lookup(k, &v); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		v.Expires = exp
		if err := m.Put(k, v); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	default:
		return fmt.Errorf("%s: %w", name, err)
	}
	return ctl.flagsChanged(h)
}

// put4 writes an IPv4 entry: where it is (keeping its counters), else into
// the table, else into the fallback trie. The caller updates the settings.
func (ctl *controller) put4(h cube.Handle, s *side, k tabKey, exp uint64) error {
	t, err := ctl.table(h, s)
	if err != nil {
		return err
	}
	if t.has(k) {
		return t.setExpiry(h, k, exp)
	}
	lpm4, err := h.Map(s.lpm4)
	if err != nil {
		return err
	}
	// (A trie lookup finds the longest match: the entry itself only if
	// of its length.)
	var v entry4Val
	if lpm4.Lookup(k.lpm4(), &v) == nil && v.Len == uint32(k.bits()) {
		v.Expires = exp
		if err := lpm4.Put(k.lpm4(), v); err != nil {
			return fmt.Errorf("%s: %w", s.lpm4, err)
		}
		return nil
	}
	over, err := t.add(h, []tabKey{k}, []tabEntry{{Expires: exp}})
	if err != nil {
		ctl.forget(s)
		return err
	}
	if len(over) == 0 {
		return nil
	}
	if err := lpm4.Put(k.lpm4(), entry4Val{Expires: exp, Len: uint32(k.bits())}); err != nil {
		return fmt.Errorf("%s: %w", s.lpm4, err)
	}
	ctl.n[s.lpm4]++
	return nil
}

// remove deletes one entry from the maps; false when it was not there.
// The caller updates the settings.
func (ctl *controller) remove(h cube.Handle, s *side, p netip.Prefix) (bool, error) {
	if p.Addr().Is4() {
		t, err := ctl.table(h, s)
		if err != nil {
			return false, err
		}
		k := keyOf(p)
		if ok, err := t.remove(h, k); err != nil || ok {
			if err != nil {
				ctl.forget(s)
			}
			return ok, err
		}
		m, err := h.Map(s.lpm4)
		if err != nil {
			return false, err
		}
		err = m.Delete(k.lpm4())
		if err == nil {
			ctl.n[s.lpm4]--
			return true, nil
		}
		if errors.Is(err, ebpf.ErrKeyNotExist) {
			return false, nil
		}
		return false, fmt.Errorf("%s: %w", s.lpm4, err)
	}
	name := s.lpm
	var k any = lpmOf(p)
	if isExact(p) {
		name, k = s.exact, key16(p.Addr())
	}
	m, err := h.Map(name)
	if err != nil {
		return false, err
	}
	err = m.Delete(k)
	if err == nil {
		ctl.n[name]--
		return true, nil
	}
	if errors.Is(err, ebpf.ErrKeyNotExist) {
		return false, nil
	}
	return false, fmt.Errorf("%s: %w", name, err)
}

// DeleteEntry removes one blacklist entry.
func (ctl *controller) DeleteEntry(h cube.Handle, c *cube.Cube, table string, item any) error {
	ctl.mu.Lock()
	defer ctl.mu.Unlock()
	s := sideOf(table)
	if s == nil {
		return cube.NotFound("table", "no table %q", table)
	}
	p, err := ParsePrefix(item.(*Entry).Prefix)
	if err != nil {
		return cube.Errorf("prefix", "%v", err)
	}
	if _, err := ctl.remove(h, s, p); err != nil {
		return err
	}
	return ctl.flagsChanged(h)
}

func (ctl *controller) addExpiry(x expiry) {
	i := sort.Search(len(ctl.expiries), func(i int) bool { return ctl.expiries[i].at.After(x.at) })
	ctl.expiries = append(ctl.expiries, expiry{})
	copy(ctl.expiries[i+1:], ctl.expiries[i:])
	ctl.expiries[i] = x
}

// Tick removes expired blacklist entries from the maps (the fast path has
// ignored them since their deadline) and, every 10 s, ended blocks.
func (ctl *controller) Tick(h cube.Handle, c *cube.Cube, now time.Time) {
	ctl.mu.Lock()
	defer ctl.mu.Unlock()
	changed := false
	for len(ctl.expiries) > 0 && !ctl.expiries[0].at.After(now) {
		x := ctl.expiries[0]
		ctl.expiries = ctl.expiries[1:]
		// Still the entry's deadline? (it may have been replaced)
		raw, ok := c.Tables[x.table][x.key]
		if !ok {
			continue
		}
		v, err := cube.Decode("", raw, &Entry{})
		if err != nil {
			continue
		}
		e := v.(*Entry)
		if e.Expires == nil || e.Expires.After(now) {
			continue
		}
		p, err := ParsePrefix(e.Prefix)
		if err != nil {
			continue
		}
		if ok, _ := ctl.remove(h, sideOf(x.table), p); ok {
			changed = true
			h.Logf("blacklist entry %s in %s expired", e.Prefix, x.table)
		}
	}
	if changed {
		ctl.flagsChanged(h)
	}
	if now.Sub(ctl.lastScan) >= 10*time.Second {
		ctl.lastScan = now
		m, err := h.Map("dd_blocked")
		if err != nil {
			return
		}
		mnow := ktime.Now()
		var k addrKey
		var v blockVal
		var ended []addrKey
		it := m.Iterate()
		for it.Next(&k, &v) {
			if v.Until <= mnow {
				ended = append(ended, k)
			}
		}
		for _, k := range ended {
			m.Delete(k)
		}
	}
}

// HandlePunt records a detection event.
func (ctl *controller) HandlePunt(h cube.Handle, c *cube.Cube, p cube.Punt) {
	ev := Event{Time: time.Now().UTC(), Reason: reasonNames[p.Reason], Count: p.Arg,
		Direction: datapath.Direction(p.InPort).String()}
	if ev.Reason == "" {
		ev.Reason = fmt.Sprintf("reason-%d", p.Reason)
	}
	src, summary := describe(p.Frame)
	ev.Source, ev.Packet = src, summary
	ctl.mu.Lock()
	if a, err := netip.ParseAddr(src); err == nil {
		if m, err := h.Map("dd_blocked"); err == nil {
			var v blockVal
			if m.Lookup(key16(a), &v) == nil {
				ev.BlockedUntil = ktime.Wall(ktime.Base(), v.Until)
			}
		}
	}
	ev.Mirrored = p.Reason == ReasonScan && ctl.cfg.MirrorInterface != ""
	ctl.events = append(ctl.events, ev)
	if len(ctl.events) > keepEvents {
		ctl.events = ctl.events[len(ctl.events)-keepEvents:]
	}
	ctl.mu.Unlock()
	what := "packets in the window"
	if p.Reason == ReasonScan {
		what = "distinct ports probed"
	}
	h.Logf("ddos: blocked %s for %s (%d %s) until %s; packet %s", ev.Source, ev.Reason, ev.Count, what,
		ev.BlockedUntil.Format(time.RFC3339), ev.Packet)
}

// describe returns the source address of an Ethernet frame and a one-line
// summary.
func describe(f []byte) (string, string) {
	off := 14
	if len(f) < off {
		return "?", "short frame"
	}
	et := binary.BigEndian.Uint16(f[12:14])
	for (et == 0x8100 || et == 0x88a8) && len(f) >= off+4 {
		et = binary.BigEndian.Uint16(f[off+2 : off+4])
		off += 4
	}
	var src, dst netip.Addr
	var proto byte
	var l4 int
	switch {
	case et == 0x0800 && len(f) >= off+20:
		src = netip.AddrFrom4([4]byte(f[off+12 : off+16]))
		dst = netip.AddrFrom4([4]byte(f[off+16 : off+20]))
		proto = f[off+9]
		l4 = off + int(f[off]&0xf)*4
	case et == 0x86dd && len(f) >= off+40:
		src = netip.AddrFrom16([16]byte(f[off+8 : off+24]))
		dst = netip.AddrFrom16([16]byte(f[off+24 : off+40]))
		proto = f[off+6]
		l4 = off + 40
	default:
		return "?", fmt.Sprintf("ethertype %#04x", et)
	}
	names := map[byte]string{6: "TCP", 17: "UDP", 1: "ICMP", 58: "ICMPv6"}
	pn := names[proto]
	if pn == "" {
		pn = fmt.Sprintf("proto %d", proto)
	}
	if (proto == 6 || proto == 17) && len(f) >= l4+4 {
		sp := binary.BigEndian.Uint16(f[l4:])
		dp := binary.BigEndian.Uint16(f[l4+2:])
		s := fmt.Sprintf("%s %s → %s", pn, netip.AddrPortFrom(src, sp), netip.AddrPortFrom(dst, dp))
		if proto == 6 && len(f) >= l4+14 {
			s += tcpFlags(f[l4+13])
		}
		return src.String(), s
	}
	return src.String(), fmt.Sprintf("%s %s → %s", pn, src, dst)
}

func tcpFlags(b byte) string {
	var out []string
	for i, n := range []string{"FIN", "SYN", "RST", "PSH", "ACK", "URG"} {
		if b&(1<<i) != 0 {
			out = append(out, n)
		}
	}
	return " [" + strings.Join(out, ",") + "]"
}

func flushMap(h cube.Handle, name string) (int, error) {
	m, err := h.Map(name)
	if err != nil {
		return 0, err
	}
	var keys []addrKey
	var k addrKey
	it := m.Iterate()
	var v blockVal
	for it.Next(&k, &v) {
		keys = append(keys, k)
	}
	for _, k := range keys {
		m.Delete(k)
	}
	return len(keys), nil
}
