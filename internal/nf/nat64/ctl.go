package nat64

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"sort"
	"sync"
	"time"

	"github.com/cilium/ebpf"
	"github.com/edgenf/edgenf/internal/bpfmap"
	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/ktime"
	"github.com/edgenf/edgenf/internal/nf/counters"
	"golang.org/x/sys/unix"
)

// Go mirrors of the structs of bpf/nat64.bpf.c (checked by TestLayouts).
type kcfg struct {
	Pfx        [16]byte
	PLen       uint8
	Idx        [4]uint8
	_          [3]uint8
	PoolLo     [4]byte
	PoolN      uint32
	PortLo     uint16
	PortHi     uint16
	ToUDP      uint32
	ToTCPEst   uint32
	ToTCPTrans uint32
	ToICMP     uint32
	MaxHost    uint32
}

type key6 struct {
	Addr  [16]byte
	Port  [2]byte
	Proto uint8
	_     uint8
}

type key4 struct {
	Addr  [4]byte
	Port  [2]byte
	Proto uint8
	_     uint8
}

type bib6 struct {
	Addr [4]byte
	Port [2]byte
	_    uint16
}

type bib4 struct {
	Addr [16]byte
	Port [2]byte
	MAC  [6]byte
}

type skey struct {
	Addr   [4]byte
	Remote [4]byte
	Port   [2]byte
	RPort  [2]byte
	Proto  uint8
	_      [3]uint8
}

type sess struct {
	Seen    uint64
	Packets uint64
	Bytes   uint64
	State   uint8
	_       [7]uint8
}

// Session states, as N64_S_*.
const (
	stateOut     = 1
	stateIn      = 2
	stateClosing = 4
)

const protoICMP = unix.IPPROTO_ICMP

// The cube's event counters, in the order of enum n64_counter.
var n64Counters = counters.Named{Map: "n64_counters", Names: []string{
	"translated_6to4", "translated_4to6", "icmp_errors_translated", "mappings_opened", "sessions_opened",
	"no_port_drops", "filtered_drops", "untranslatable_drops", "untouched", "host_limit_drops"}}

type controller struct {
	mu  sync.Mutex
	cfg Config
	// unused are the mappings the last sweep found without a live session:
	// a mapping is deleted only when two sweeps in a row find it so, as a
	// host's first packet writes the mapping just before its session.
	unused map[key4]bool
	ticks  int
}

func decodeConfig(c *cube.Cube) (*Config, error) { return cube.ConfigOf[Config](Type, c) }

func (c *Config) kernel() (kcfg, error) {
	p, err := c.prefix()
	if err != nil {
		return kcfg{}, err
	}
	lo, n, err := c.pool()
	if err != nil {
		return kcfg{}, err
	}
	plo, phi, err := c.ports()
	if err != nil {
		return kcfg{}, err
	}
	k := kcfg{Pfx: p.Addr().As16(), PLen: uint8(p.Bits()), Idx: positions(p.Bits()), PoolLo: lo.As4(), PoolN: n, PortLo: plo, PortHi: phi}
	k.ToUDP, k.ToTCPEst, k.ToTCPTrans, k.ToICMP = c.Timeouts.seconds()
	k.MaxHost = uint32(c.maxPerHost())
	return k, nil
}

// Sync writes the settings. Mappings and sessions (learned state) are kept
// while the prefix and pool stay; a change of either flushes them, as they
// would name addresses no longer translated.
func (ctl *controller) Sync(h cube.Handle, c *cube.Cube) error {
	cfg, err := decodeConfig(c)
	if err != nil {
		return err
	}
	k, err := cfg.kernel()
	if err != nil {
		return err
	}
	m, err := h.Map("n64_cfg")
	if err != nil {
		return err
	}
	var old kcfg
	_ = m.Lookup(uint32(0), &old)
	if err := m.Put(uint32(0), k); err != nil {
		return err
	}
	ctl.mu.Lock()
	ctl.cfg = *cfg
	ctl.mu.Unlock()
	if old.PLen != 0 && (old.Pfx != k.Pfx || old.PLen != k.PLen || old.PoolLo != k.PoolLo || old.PoolN != k.PoolN ||
		old.PortLo != k.PortLo || old.PortHi != k.PortHi) {
		if _, err := ctl.sweep(h, true); err != nil {
			return err
		}
	}
	return nil
}

// Sweep ages sessions and unused mappings out every 5 s, off the engine's
// lock.
func (ctl *controller) Sweep(h cube.Handle, now time.Time) {
	ctl.ticks++
	if ctl.ticks%5 == 0 {
		if _, err := ctl.sweep(h, false); err != nil {
			h.Logf("nat64: aging: %v", err)
		}
	}
}

func (ctl *controller) timeout(proto uint8, state uint8) uint64 {
	ctl.mu.Lock()
	udp, est, trans, icmp := ctl.cfg.Timeouts.seconds()
	ctl.mu.Unlock()
	s := icmp
	switch proto {
	case unix.IPPROTO_UDP:
		s = udp
	case unix.IPPROTO_TCP:
		s = est
		if state&stateClosing != 0 || state&stateIn == 0 {
			s = trans
		}
	}
	return uint64(s) * 1e9
}

// sweep deletes expired sessions (every one with all) and the mappings no
// session uses; it returns how many sessions went.
func (ctl *controller) sweep(h cube.Handle, all bool) (int, error) {
	sm, err := h.Map("n64_sess")
	if err != nil {
		return 0, err
	}
	b4, err := h.Map("n64_bib4")
	if err != nil {
		return 0, err
	}
	b6, err := h.Map("n64_bib6")
	if err != nil {
		return 0, err
	}
	now := ktime.CoarseNow()
	live := map[key4]bool{}
	var dead []skey
	if err := bpfmap.Each(sm, func(k skey, s sess) bool {
		if all || now > s.Seen && now-s.Seen > ctl.timeout(k.Proto, s.State) {
			dead = append(dead, k)
		} else {
			live[key4{Addr: k.Addr, Port: k.Port, Proto: k.Proto}] = true
		}
		return true
	}); err != nil {
		return 0, err
	}
	for _, k := range dead {
		if err := sm.Delete(k); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
			return 0, fmt.Errorf("n64_sess: %w", err)
		}
	}
	ctl.mu.Lock()
	prev := ctl.unused
	ctl.mu.Unlock()
	unused := map[key4]bool{}
	var gone []key4
	var gone6 []key6
	if err := bpfmap.Each(b4, func(k key4, v bib4) bool {
		if live[k] {
			return true
		}
		if all || prev[k] {
			gone = append(gone, k)
			gone6 = append(gone6, key6{Addr: v.Addr, Port: v.Port, Proto: k.Proto})
		} else {
			unused[k] = true
		}
		return true
	}); err != nil {
		return 0, err
	}
	for i, k := range gone {
		if err := b6.Delete(gone6[i]); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
			return 0, fmt.Errorf("n64_bib6: %w", err)
		}
		if err := b4.Delete(k); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
			return 0, fmt.Errorf("n64_bib4: %w", err)
		}
	}
	ctl.mu.Lock()
	ctl.unused = unused
	ctl.mu.Unlock()
	return len(dead), recount(h, b6)
}

// recount sets the bindings per host /64 from the BIB: the fast path only
// adds to them.
func recount(h cube.Handle, b6 *ebpf.Map) error {
	hm, err := h.Map("n64_hosts")
	if err != nil {
		return err
	}
	want := map[uint64]uint32{}
	if err := bpfmap.Each(b6, func(k key6, _ bib6) bool {
		want[binary.NativeEndian.Uint64(k.Addr[:8])]++
		return true
	}); err != nil {
		return err
	}
	var k uint64
	var v uint32
	var stale []uint64
	it := hm.Iterate()
	for it.Next(&k, &v) {
		if _, ok := want[k]; !ok {
			stale = append(stale, k)
		}
	}
	for _, k := range stale {
		if err := hm.Delete(k); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
			return fmt.Errorf("n64_hosts: %w", err)
		}
	}
	for k, v := range want {
		if err := hm.Put(k, v); err != nil {
			return fmt.Errorf("n64_hosts: %w", err)
		}
	}
	return nil
}

// Session is one NAT64 session.
type Session struct {
	Proto string `json:"proto"`
	State string `json:"state"`
	// Host is the IPv6 host's endpoint, Outside its pool endpoint, Remote
	// the IPv4 server, and RemoteIPv6 the server as the host sees it.
	Host       string  `json:"host"`
	Outside    string  `json:"outside"`
	Remote     string  `json:"remote"`
	RemoteIPv6 string  `json:"remote_ipv6"`
	Packets    uint64  `json:"packets"`
	Bytes      uint64  `json:"bytes"`
	Idle       float64 `json:"idle_seconds"`
}

func stateName(proto, st uint8) string {
	switch {
	case proto != unix.IPPROTO_TCP && st&stateIn != 0:
		return "replied"
	case proto != unix.IPPROTO_TCP:
		return "unreplied"
	case st&stateClosing != 0:
		return "closing"
	case st&stateIn != 0:
		return "established"
	}
	return "opening"
}

var protoNames = map[uint8]string{unix.IPPROTO_TCP: "tcp", unix.IPPROTO_UDP: "udp", unix.IPPROTO_ICMP: "icmp"}

func sessions(h cube.Handle) ([]Session, error) {
	sm, err := h.Map("n64_sess")
	if err != nil {
		return nil, err
	}
	b4, err := h.Map("n64_bib4")
	if err != nil {
		return nil, err
	}
	ctl := cube.ControllerOf[*controller](h)
	ctl.mu.Lock()
	p, _ := ctl.cfg.prefix()
	ctl.mu.Unlock()
	now := ktime.CoarseNow()
	out := []Session{}
	if err := bpfmap.Each(sm, func(k skey, s sess) bool {
		if now > s.Seen && now-s.Seen > ctl.timeout(k.Proto, s.State) {
			return true // expired, the next sweep deletes it
		}
		x := Session{Proto: protoNames[k.Proto], State: stateName(k.Proto, s.State), Packets: s.Packets, Bytes: s.Bytes,
			Outside: hostPort(netip.AddrFrom4(k.Addr), k.Port, k.Proto)}
		if now > s.Seen {
			x.Idle = float64(now-s.Seen) / 1e9
		}
		remote := netip.AddrFrom4(k.Remote)
		x.Remote, x.RemoteIPv6 = remote.String(), Embed(p, remote).String()
		if k.Proto != protoICMP {
			x.Remote = hostPort(remote, k.RPort, k.Proto)
			x.RemoteIPv6 = hostPort(Embed(p, remote), k.RPort, k.Proto)
		}
		var b bib4
		if err := b4.Lookup(key4{Addr: k.Addr, Port: k.Port, Proto: k.Proto}, &b); err == nil {
			x.Host = hostPort(netip.AddrFrom16(b.Addr), b.Port, k.Proto)
		}
		out = append(out, x)
		return true
	}); err != nil {
		return nil, err
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Host != out[j].Host {
			return out[i].Host < out[j].Host
		}
		return out[i].Remote < out[j].Remote
	})
	return out, nil
}

// Status is the translator's settings in use and its mappings.
type Status struct {
	AttachedTo string `json:"attached_to"`
	Prefix     string `json:"prefix"`
	Pool       string `json:"pool"`
	PortRange  string `json:"port_range"`
	Mappings   int    `json:"mappings"`
}

func status(h cube.Handle) (Status, error) {
	ctl := cube.ControllerOf[*controller](h)
	ctl.mu.Lock()
	cfg := ctl.cfg
	ctl.mu.Unlock()
	p, _ := cfg.prefix()
	lo, hi, _ := cfg.ports()
	point, _ := h.AttachPoint()
	st := Status{AttachedTo: point, Prefix: p.String(), Pool: cfg.Pool, PortRange: fmt.Sprintf("%d-%d", lo, hi)}
	b4, err := h.Map("n64_bib4")
	if err != nil {
		return st, err
	}
	err = bpfmap.Each(b4, func(key4, bib4) bool { st.Mappings++; return true })
	return st, err
}
