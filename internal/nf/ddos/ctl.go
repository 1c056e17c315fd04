package ddos

// The controller: the settings it writes, the blacklist entries it puts and
// removes one at a time.

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"time"

	"github.com/cilium/ebpf"
	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/ktime"
)

// entry reads the fast-path entry of a blacklist entry, wherever it is (the
// IPv4 table or fallback trie, the IPv6 hash or trie).
func (ctl *controller) entry(h mapper, s *side, p netip.Prefix) (entryVal, error) {
	var v entryVal
	if p.Addr().Is4() {
		t, err := ctl.table(h, s)
		if err != nil {
			return v, err
		}
		k := keyOf(p)
		if t.has(k) {
			return v, t.entry(h, k, &v)
		}
		m, err := h.Map(s.lpm4)
		if err != nil {
			return v, err
		}
		var v4 entry4Val
		if err := m.Lookup(k.lpm4(), &v4); err != nil {
			return v, err
		}
		if v4.Len != uint32(k.bits()) { // a shorter one that holds it
			return v, ebpf.ErrKeyNotExist
		}
		return v4.entry(), nil
	}
	name, k := s.lpm, any(lpmOf(p))
	if isExact(p) {
		name, k = s.exact, key16(p.Addr())
	}
	m, err := h.Map(name)
	if err != nil {
		return v, err
	}
	return v, m.Lookup(k, &v)
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
	if err := lpm4.Put(k.lpm4(), entry4Val{entryVal: entryVal{Expires: exp}, Len: uint32(k.bits())}); err != nil {
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
