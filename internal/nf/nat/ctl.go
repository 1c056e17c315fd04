package nat

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"sync"
	"time"

	"github.com/cilium/ebpf"
	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/nf/conntrack"
	"github.com/edgenf/edgenf/internal/nf/counters"
)

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

type controller struct {
	mu       sync.Mutex
	masq     netip.Addr // address of the attachment point, if known
	point    string
	cfg      Config
	ticks    int
	lastSync *cube.Cube
}

func decodeConfig(c *cube.Cube) (*Config, error) { return cube.ConfigOf[Config](Type, c) }

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
	npts, err := nptTable.Entries(c)
	if err != nil {
		return err
	}
	wantNpt, err := nptEntries(npts)
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
	if err := syncMap(h, "nat_npt", wantNpt); err != nil {
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
}

// Sweep ages the sessions out every 5 s, off the engine's lock (a session
// table holds up to a million entries).
func (ctl *controller) Sweep(h cube.Handle, now time.Time) {
	ctl.ticks++ // only Sweep reads it: one sweep at a time
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
	// A flow is two entries, one per direction: the original's judges and
	// names the reply's.
	return conntrack.Sweep(m, to, flushAll, func(s sess) (conntrack.Conn, bool, conntrack.Tuple) {
		if s.Flags&flagOrig == 0 {
			return s.Conn, true, conntrack.Tuple{}
		}
		return s.Conn, false, s.Other
	})
}
