package ddos

// Expiry: blacklist entries and blocks whose deadline passed leave the maps.

import (
	"sort"
	"time"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/ktime"
)

type expiry struct {
	at    time.Time
	table string
	key   string
}

func (ctl *controller) addExpiry(x expiry) {
	i := sort.Search(len(ctl.expiries), func(i int) bool { return ctl.expiries[i].at.After(x.at) })
	ctl.expiries = append(ctl.expiries, expiry{})
	copy(ctl.expiries[i+1:], ctl.expiries[i:])
	ctl.expiries[i] = x
}

// Tick removes expired blacklist entries from the maps (the fast path has
// ignored them since their deadline), in deadline order.
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
}

// Sweep removes ended blocks every 10 s, off the engine's lock (the table
// of tracked and blocked sources holds up to a million entries).
func (ctl *controller) Sweep(h cube.Handle, now time.Time) {
	ctl.mu.Lock()
	due := now.Sub(ctl.lastScan) >= 10*time.Second
	if due {
		ctl.lastScan = now
	}
	ctl.mu.Unlock()
	if !due {
		return
	}
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
