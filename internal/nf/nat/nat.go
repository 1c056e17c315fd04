// Package nat is the NAT NF: a transparent cube attached to the
// outside-facing point of a network (a router port or a Linux interface). It
// does SNAT (inside prefix → external address or pool), masquerade (the
// address of the point it is attached to), static 1:1 NAT (dnat) and port
// forwarding, for IPv4 TCP, UDP and ICMP echo, with connection tracking.
package nat

import (
	"embed"
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/cilium/ebpf"
	"github.com/edgenf/edgenf/internal/bpfmap"
	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/datapath"
	"github.com/edgenf/edgenf/internal/ktime"
	"github.com/edgenf/edgenf/internal/nf/conntrack"
	"github.com/edgenf/edgenf/internal/nf/counters"
	"golang.org/x/sys/unix"
)

// objects are the fast path built for each hook (make bpf).
//
//go:embed bpf/*.o
var objects embed.FS

// Config is the NAT's settings.
type Config struct {
	// Masquerade translates every outbound flow that no snat or dnat rule
	// covers to the address of the point the NAT is attached to (a router
	// port's first IPv4 address, or the interface's).
	Masquerade bool `json:"masquerade,omitempty"`
	// PortRange is where external ports (and ICMP identifiers) are picked,
	// "lo-hi"; default 1024-65535. A flow keeps its own source port when it
	// is free.
	PortRange string `json:"port_range,omitempty"`
	// Timeouts are per-state idle timeouts of sessions, in seconds.
	Timeouts *conntrack.Timeouts `json:"timeouts,omitempty"`
}

// Validate checks the settings.
func (c *Config) Validate(*cube.Cube) error {
	if _, _, err := c.ports(); err != nil {
		return cube.Errorf("port_range", "%v", err)
	}
	if err := c.Timeouts.Validate(); err != nil {
		return cube.Errorf("timeouts", "%v", err)
	}
	return nil
}

func (c *Config) ports() (uint16, uint16, error) {
	if c.PortRange == "" {
		return 1024, 65535, nil
	}
	lo, hi, err := parseRange(c.PortRange)
	if err != nil {
		return 0, 0, err
	}
	if lo == 0 {
		return 0, 0, fmt.Errorf("port 0 cannot be allocated")
	}
	return lo, hi, nil
}

func parseRange(s string) (uint16, uint16, error) {
	a, b, isRange := strings.Cut(s, "-")
	lo, err := strconv.ParseUint(strings.TrimSpace(a), 10, 16)
	if err != nil {
		return 0, 0, fmt.Errorf("invalid port %q: want 0-65535", a)
	}
	hi := lo
	if isRange {
		if hi, err = strconv.ParseUint(strings.TrimSpace(b), 10, 16); err != nil {
			return 0, 0, fmt.Errorf("invalid port %q: want 0-65535", b)
		}
	}
	if hi < lo {
		return 0, 0, fmt.Errorf("inverted range %q: %d > %d", s, lo, hi)
	}
	return uint16(lo), uint16(hi), nil
}

// SNATRule translates flows from an inside prefix to an external address or
// a pool ("first-last"); a host keeps one address of the pool.
type SNATRule struct {
	ID       int    `json:"id"`
	Internal string `json:"internal"`
	External string `json:"external"`
}

// DNATRule is static 1:1 NAT: flows from outside to External go to Internal
// and flows Internal opens leave as External.
type DNATRule struct {
	ID       int    `json:"id"`
	External string `json:"external"`
	Internal string `json:"internal"`
}

// PortForward sends flows to External:ExternalPort (External empty: the
// masquerade address) to Internal:InternalPort (default: the same port).
type PortForward struct {
	ID           int    `json:"id"`
	Proto        string `json:"proto"`
	External     string `json:"external,omitempty"`
	ExternalPort int    `json:"external_port"`
	Internal     string `json:"internal"`
	InternalPort int    `json:"internal_port,omitempty"`
}

func checkID(id int) error {
	if id < 1 || id > 1<<30 {
		return cube.Errorf("id", "rule id %d out of range 1..%d", id, 1<<30)
	}
	return nil
}

func parseAddr4(field, s string) (netip.Addr, error) {
	if s == "" {
		return netip.Addr{}, cube.Errorf(field, "required: an IPv4 address")
	}
	a, err := netip.ParseAddr(s)
	if err != nil || !a.Is4() {
		return netip.Addr{}, cube.Errorf(field, "invalid IPv4 address %q", s)
	}
	return a, nil
}

func parsePrefix4(field, s string) (netip.Prefix, error) {
	if s == "" {
		return netip.Prefix{}, cube.Errorf(field, "required: an IPv4 prefix such as 198.18.1.0/24")
	}
	p, err := netip.ParsePrefix(s)
	if err != nil {
		if a, aerr := netip.ParseAddr(s); aerr == nil && a.Is4() {
			return netip.PrefixFrom(a, 32), nil
		}
		return netip.Prefix{}, cube.Errorf(field, "invalid prefix %q: want address/length, e.g. 198.18.1.0/24", s)
	}
	if !p.Addr().Is4() {
		return netip.Prefix{}, cube.Errorf(field, "%q is not IPv4: the NAT translates IPv4 only", s)
	}
	if p.Masked() != p {
		return netip.Prefix{}, cube.Errorf(field, "%q has host bits set (did you mean %s?)", s, p.Masked())
	}
	return p, nil
}

// pool parses "a" or "a-b" into first address and size.
func parsePool(field, s string) (netip.Addr, uint32, error) {
	a, b, isRange := strings.Cut(s, "-")
	lo, err := parseAddr4(field, strings.TrimSpace(a))
	if err != nil {
		return lo, 0, err
	}
	if !isRange {
		return lo, 1, nil
	}
	hi, err := parseAddr4(field, strings.TrimSpace(b))
	if err != nil {
		return lo, 0, err
	}
	l, h := be32(lo), be32(hi)
	if h < l {
		return lo, 0, cube.Errorf(field, "inverted pool %q", s)
	}
	if h-l >= 65536 {
		return lo, 0, cube.Errorf(field, "pool %q has more than 65536 addresses", s)
	}
	return lo, h - l + 1, nil
}

func be32(a netip.Addr) uint32 { b := a.As4(); return binary.BigEndian.Uint32(b[:]) }

// Validate checks one SNAT rule.
func (r *SNATRule) Validate(*cube.Cube) error {
	if err := checkID(r.ID); err != nil {
		return err
	}
	if _, err := parsePrefix4("internal", r.Internal); err != nil {
		return err
	}
	_, _, err := parsePool("external", r.External)
	return err
}

// Validate checks one DNAT rule.
func (r *DNATRule) Validate(*cube.Cube) error {
	if err := checkID(r.ID); err != nil {
		return err
	}
	if _, err := parseAddr4("external", r.External); err != nil {
		return err
	}
	_, err := parseAddr4("internal", r.Internal)
	return err
}

func parseProto(s string) (uint8, error) {
	switch strings.ToLower(s) {
	case "tcp":
		return unix.IPPROTO_TCP, nil
	case "udp":
		return unix.IPPROTO_UDP, nil
	case "":
		return 0, cube.Errorf("proto", "required: tcp or udp")
	}
	return 0, cube.Errorf("proto", "unknown protocol %q: want tcp or udp", s)
}

// Validate checks one port forwarding rule.
func (r *PortForward) Validate(*cube.Cube) error {
	if err := checkID(r.ID); err != nil {
		return err
	}
	if _, err := parseProto(r.Proto); err != nil {
		return err
	}
	if r.External != "" {
		if _, err := parseAddr4("external", r.External); err != nil {
			return err
		}
	}
	if r.ExternalPort < 1 || r.ExternalPort > 65535 {
		return cube.Errorf("external_port", "port %d out of range 1..65535", r.ExternalPort)
	}
	if _, err := parseAddr4("internal", r.Internal); err != nil {
		return err
	}
	if r.InternalPort < 0 || r.InternalPort > 65535 {
		return cube.Errorf("internal_port", "port %d out of range 1..65535", r.InternalPort)
	}
	return nil
}

// ---- kernel layouts (mirror nat.bpf.c) ----

type kcfg struct {
	MasqAddr [4]byte
	Masq     uint8
	_        [3]uint8
	PortLo   uint16
	PortHi   uint16
	_        uint32
	To       conntrack.KTimeouts
}

type lpmKey struct {
	PrefixLen uint32
	Addr      [4]byte
}

type snatVal struct {
	ExtLo [4]byte
	Count uint32
	Rule  uint32
	_     uint32
}

type addrVal struct {
	Addr [4]byte
	Rule uint32
}

type pfKey struct {
	Addr  [4]byte
	Port  [2]byte
	Proto uint8
	_     uint8
}

type pfVal struct {
	Addr [4]byte
	Port [2]byte
	_    uint16
	Rule uint32
}

// Session kinds, as NAT_K_*.
var kindNames = map[uint8]string{1: "snat", 2: "masquerade", 3: "dnat", 4: "port-forward", 5: "static"}

const flagOrig = 1

type sess struct {
	Conn    conntrack.Conn
	Other   conntrack.Tuple
	NewAddr [4]byte
	NewPort [2]byte
	Which   uint8
	Flags   uint8
	Kind    uint8
	_       [3]uint8
	Rule    uint32
	Packets uint64
	Bytes   uint64
}

// The cube's event counters, in the order of enum nat_counter.
var natCounters = counters.Named{Map: "nat_counters", Names: []string{
	"translated", "sessions_out", "sessions_in", "no_port_drops", "untranslated", "untranslatable_drops"}}

func a4(a netip.Addr) [4]byte { return a.As4() }

func port2(p uint16) [2]byte { var b [2]byte; binary.BigEndian.PutUint16(b[:], p); return b }

// ---- controller ----

type controller struct {
	mu       sync.Mutex
	masq     netip.Addr // address of the attachment point, if known
	point    string
	cfg      Config
	ticks    int
	lastSync *cube.Cube
}

var (
	snatTable = cube.Table{Name: "snat", Doc: "Source NAT: flows from an inside prefix leave with an external address (or one of a pool).",
		Item: &SNATRule{}, Key: func(v any) string { return strconv.Itoa(v.(*SNATRule).ID) }, Max: 1024}
	dnatTable = cube.Table{Name: "dnat", Doc: "Static 1:1 NAT between an external and an internal address, both ways.",
		Item: &DNATRule{}, Key: func(v any) string { return strconv.Itoa(v.(*DNATRule).ID) }, Max: 1024}
	pfTable = cube.Table{Name: "port_forwarding", Doc: "Port forwarding: external address:port to an inside address:port.",
		Item: &PortForward{}, Key: func(v any) string { return strconv.Itoa(v.(*PortForward).ID) }, Max: 4096}
)

func decodeConfig(c *cube.Cube) (*Config, error) {
	typ := Type
	v, err := typ.DecodeConfig(c)
	if err != nil {
		return nil, err
	}
	if v == nil {
		return &Config{}, nil
	}
	return v.(*Config), nil
}

// Sync writes settings and rules. Sessions (learned state) are kept; rules
// removed stop new flows, existing ones run until idle (or `flush`).
func (ctl *controller) Sync(h cube.Handle, c *cube.Cube) error {
	cfg, err := decodeConfig(c)
	if err != nil {
		return err
	}
	snats, err := snatTable.Entries(c)
	if err != nil {
		return err
	}
	dnats, err := dnatTable.Entries(c)
	if err != nil {
		return err
	}
	pfs, err := pfTable.Entries(c)
	if err != nil {
		return err
	}
	// Cross-rule checks first: nothing is written when they fail.
	wantSnat := map[lpmKey]snatVal{}
	for _, v := range snats {
		r := v.(*SNATRule)
		p, _ := parsePrefix4("internal", r.Internal)
		lo, n, _ := parsePool("external", r.External)
		k := lpmKey{PrefixLen: uint32(p.Bits()), Addr: a4(p.Addr())}
		if _, dup := wantSnat[k]; dup {
			return cube.Conflict(fmt.Sprintf("tables.snat[%d].internal", r.ID), "prefix %s is already translated by another snat rule", p)
		}
		wantSnat[k] = snatVal{ExtLo: a4(lo), Count: n, Rule: uint32(r.ID)}
	}
	wantDnat, wantRev := map[[4]byte]addrVal{}, map[[4]byte]addrVal{}
	for _, v := range dnats {
		r := v.(*DNATRule)
		e, _ := parseAddr4("external", r.External)
		i, _ := parseAddr4("internal", r.Internal)
		if _, dup := wantDnat[a4(e)]; dup {
			return cube.Conflict(fmt.Sprintf("tables.dnat[%d].external", r.ID), "external address %s is already used by another dnat rule", e)
		}
		if _, dup := wantRev[a4(i)]; dup {
			return cube.Conflict(fmt.Sprintf("tables.dnat[%d].internal", r.ID), "internal address %s is already used by another dnat rule", i)
		}
		wantDnat[a4(e)] = addrVal{Addr: a4(i), Rule: uint32(r.ID)}
		wantRev[a4(i)] = addrVal{Addr: a4(e), Rule: uint32(r.ID)}
	}
	wantPf := map[pfKey]pfVal{}
	for _, v := range pfs {
		r := v.(*PortForward)
		proto, _ := parseProto(r.Proto)
		k := pfKey{Port: port2(uint16(r.ExternalPort)), Proto: proto}
		if r.External != "" {
			e, _ := parseAddr4("external", r.External)
			k.Addr = a4(e)
		}
		if _, dup := wantPf[k]; dup {
			return cube.Conflict(fmt.Sprintf("tables.port_forwarding[%d]", r.ID), "%s port %d of %s is already forwarded by another rule", r.Proto, r.ExternalPort, orMasq(r.External))
		}
		in, _ := parseAddr4("internal", r.Internal)
		ip := r.InternalPort
		if ip == 0 {
			ip = r.ExternalPort
		}
		wantPf[k] = pfVal{Addr: a4(in), Port: port2(uint16(ip)), Rule: uint32(r.ID)}
	}

	ctl.mu.Lock()
	ctl.cfg = *cfg
	ctl.mu.Unlock()
	ctl.refreshPoint(h)
	if err := ctl.writeConfig(h); err != nil {
		return err
	}
	if err := syncMap(h, "nat_snat", wantSnat); err != nil {
		return err
	}
	if err := syncMap(h, "nat_dnat", wantDnat); err != nil {
		return err
	}
	if err := syncMap(h, "nat_dnat_rev", wantRev); err != nil {
		return err
	}
	return syncMap(h, "nat_pf", wantPf)
}

func orMasq(s string) string {
	if s == "" {
		return "the masquerade address"
	}
	return s
}

// syncMap makes a hash/LPM map hold exactly want.
func syncMap[K comparable, V comparable](h cube.Handle, name string, want map[K]V) error {
	m, err := h.Map(name)
	if err != nil {
		return err
	}
	var stale []K
	var k K
	var v V
	it := m.Iterate()
	for it.Next(&k, &v) {
		if w, ok := want[k]; !ok {
			stale = append(stale, k)
		} else if w == v {
			delete(want, k) // already there
		}
	}
	if err := it.Err(); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	for _, k := range stale {
		if err := m.Delete(k); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
	for k, v := range want {
		if err := m.Put(k, v); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
	return nil
}

// refreshPoint learns the attachment point and its IPv4 address; it reports
// whether the masquerade address changed.
func (ctl *controller) refreshPoint(h cube.Handle) bool {
	point, addrs := h.AttachPoint()
	var masq netip.Addr
	for _, p := range addrs {
		if p.Addr().Is4() {
			masq = p.Addr()
			break
		}
	}
	ctl.mu.Lock()
	defer ctl.mu.Unlock()
	changed := masq != ctl.masq
	ctl.point, ctl.masq = point, masq
	return changed
}

func (ctl *controller) writeConfig(h cube.Handle) error {
	m, err := h.Map("nat_cfg")
	if err != nil {
		return err
	}
	ctl.mu.Lock()
	cfg, masq := ctl.cfg, ctl.masq
	ctl.mu.Unlock()
	lo, hi, _ := cfg.ports()
	k := kcfg{PortLo: lo, PortHi: hi, To: cfg.Timeouts.Kernel()}
	if cfg.Masquerade {
		k.Masq = 1
	}
	if masq.Is4() {
		k.MasqAddr = a4(masq)
	}
	return m.Put(uint32(0), k)
}

// Tick follows the attachment point's address (masquerade) and ages
// sessions out every few seconds.
func (ctl *controller) Tick(h cube.Handle, c *cube.Cube, now time.Time) {
	if ctl.refreshPoint(h) {
		if err := ctl.writeConfig(h); err != nil {
			h.Logf("nat: write config: %v", err)
		}
	}
	ctl.ticks++
	if ctl.ticks%5 == 0 {
		if _, err := ctl.age(h, false); err != nil {
			h.Logf("nat: aging: %v", err)
		}
	}
}

// age deletes expired sessions (all with flushAll) and returns how many flows.
func (ctl *controller) age(h cube.Handle, flushAll bool) (int, error) {
	m, err := h.Map("nat_sess")
	if err != nil {
		return 0, err
	}
	ctl.mu.Lock()
	to := ctl.cfg.Timeouts.Kernel()
	ctl.mu.Unlock()
	now := ktime.Now()
	var dead []conntrack.Tuple
	flows := 0
	if err := bpfmap.Each(m, func(k conntrack.Tuple, s sess) bool {
		// flushAll: orphaned reply entries too
		if flushAll || s.Flags&flagOrig != 0 && s.Conn.Expired(to, now) {
			dead = append(dead, k)
			if s.Flags&flagOrig != 0 {
				dead = append(dead, s.Other)
				flows++
			}
		}
		return true
	}); err != nil {
		return 0, err
	}
	return flows, bpfmap.Delete(m, dead)
}

// Session is one translated flow.
type Session struct {
	Proto string `json:"proto"`
	Kind  string `json:"kind"` // snat, masquerade, dnat, port-forward, static
	State string `json:"state"`
	// Inside is the inside host's endpoint, Outside its translated one,
	// Remote the far end.
	Inside  string  `json:"inside"`
	Outside string  `json:"outside"`
	Remote  string  `json:"remote"`
	Rule    int     `json:"rule,omitempty"`
	Packets uint64  `json:"packets"`
	Bytes   uint64  `json:"bytes"`
	Idle    float64 `json:"idle_seconds"`
	Expired bool    `json:"expired,omitempty"`
}

func sessions(h cube.Handle) ([]Session, error) {
	m, err := h.Map("nat_sess")
	if err != nil {
		return nil, err
	}
	ctl := cube.ControllerOf[*controller](h)
	ctl.mu.Lock()
	to := ctl.cfg.Timeouts.Kernel()
	ctl.mu.Unlock()
	now := ktime.Now()
	all := map[conntrack.Tuple]sess{}
	if err := bpfmap.Each(m, func(k conntrack.Tuple, s sess) bool {
		all[k] = s
		return true
	}); err != nil {
		return nil, err
	}
	out := []Session{}
	for k, s := range all {
		if s.Flags&flagOrig == 0 {
			continue
		}
		x := Session{Proto: conntrack.ProtoName(k.Proto), Kind: kindNames[s.Kind], State: conntrack.StateName(s.Conn.State),
			Rule: int(s.Rule), Packets: s.Packets, Bytes: s.Bytes, Idle: s.Conn.IdleSeconds(now), Expired: s.Conn.Expired(to, now)}
		if r, ok := all[s.Other]; ok {
			x.Packets += r.Packets
			x.Bytes += r.Bytes
		}
		tr := conntrack.Tuple{Saddr: k.Saddr, Daddr: k.Daddr, Sport: k.Sport, Dport: k.Dport, Proto: k.Proto}
		if s.Which == 0 { // outbound: source rewritten
			tr.Saddr, tr.Sport = s.NewAddr, s.NewPort
			x.Inside, x.Outside, x.Remote = k.Src(), tr.Src(), k.Dst()
		} else { // inbound: destination rewritten
			tr.Daddr, tr.Dport = s.NewAddr, s.NewPort
			x.Remote, x.Outside, x.Inside = k.Src(), k.Dst(), tr.Dst()
			if k.Proto == unix.IPPROTO_ICMP {
				x.Outside, x.Inside = netip.AddrFrom4(k.Daddr).String(), netip.AddrFrom4(s.NewAddr).String()
			}
		}
		out = append(out, x)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Inside != out[j].Inside {
			return out[i].Inside < out[j].Inside
		}
		return out[i].Remote < out[j].Remote
	})
	return out, nil
}

// Status tells where the NAT sits and the masquerade address it uses.
type Status struct {
	AttachedTo        string `json:"attached_to"`
	Masquerade        bool   `json:"masquerade"`
	MasqueradeAddress string `json:"masquerade_address"`
	PortRange         string `json:"port_range"`
}

// Type is the NAT NF type.
var Type = &cube.Type{
	Name:        "nat",
	Description: "Transparent: SNAT, masquerade, static 1:1 NAT and port forwarding for IPv4 TCP/UDP/ICMP echo, with connection tracking. Attach it to the outside-facing router port or interface.",
	Transparent: true,
	Hooks:       []datapath.Hook{datapath.XDP, datapath.TC},
	Object:      cube.HookObjects(objects, "bpf/nat"),
	Config:      &Config{},
	Tables:      []cube.Table{snatTable, dnatTable, pfTable},
	Views: []cube.View{
		{Name: "sessions", Doc: "Translated flows (connection tracking table).", Item: &Session{},
			List: func(h cube.Handle, _ *cube.Cube) (any, error) { return sessions(h) }},
		{Name: "status", Doc: "Attachment point and masquerade address in use.", Item: &Status{}, Object: true,
			List: func(h cube.Handle, c *cube.Cube) (any, error) {
				ctl := cube.ControllerOf[*controller](h)
				ctl.mu.Lock()
				defer ctl.mu.Unlock()
				st := Status{AttachedTo: ctl.point, Masquerade: ctl.cfg.Masquerade}
				if ctl.masq.IsValid() {
					st.MasqueradeAddress = ctl.masq.String()
				}
				lo, hi, _ := ctl.cfg.ports()
				st.PortRange = fmt.Sprintf("%d-%d", lo, hi)
				return st, nil
			}},
		natCounters.View("Translated packets, sessions opened, drops for lack of a free port, packets passed untranslated, drops of packets that would have left untranslated with an inside source."),
	},
	Actions: []cube.Action{{Name: "flush", Doc: "Delete every session (flows start over with their next packet).",
		Do: func(h cube.Handle, _ *cube.Cube, _ any) (any, error) {
			n, err := cube.ControllerOf[*controller](h).age(h, true)
			if err != nil {
				return nil, err
			}
			return map[string]int{"flushed": n}, nil
		}}},
	New: func() cube.Controller { return &controller{} },
}

func init() { cube.Register(Type) }
