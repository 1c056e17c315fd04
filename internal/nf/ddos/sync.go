package ddos

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sort"

	"github.com/cilium/ebpf"
	"github.com/edgenf/edgenf/internal/bpfmap"
	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/datapath"
	"github.com/edgenf/edgenf/internal/ktime"
)

// Sync: making the maps hold exactly the model's blacklists, in batches.

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
	if err := bpfmap.Put(exact, newKeys, newVals); err != nil {
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
		e := entry4Val{entryVal: entryVal{Expires: v.Expires, Packets: v.Packets, Bytes: v.Bytes}, Len: uint32(k.bits())}
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
