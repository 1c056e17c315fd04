package ddos

// Views and actions of a ddos cube.

import (
	"net/netip"
	"sort"
	"time"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/ktime"
)

// Blocked is a source blocked by detection.
type Blocked struct {
	Source  string    `json:"source"`
	Reason  string    `json:"reason"`
	Count   uint32    `json:"count"`
	Since   time.Time `json:"since"`
	Until   time.Time `json:"until"`
	Packets uint64    `json:"packets"` // dropped or mirrored since the block
	Bytes   uint64    `json:"bytes"`
}

// Hit is a blacklist entry that dropped packets.
type Hit struct {
	Table   string     `json:"table"`
	Prefix  string     `json:"prefix"`
	Packets uint64     `json:"packets"`
	Bytes   uint64     `json:"bytes"`
	Expires *time.Time `json:"expires,omitempty"`
	Active  bool       `json:"active"`
}

// UnblockArgs names a source to release.
type UnblockArgs struct {
	Source string `json:"source" format:"ip"`
}

func listBlocked(h cube.Handle, _ *cube.Cube) (any, error) {
	m, err := h.Map("dd_blocked")
	if err != nil {
		return nil, err
	}
	now := ktime.Now()
	base := ktime.Base()
	out := []Blocked{}
	var k addrKey
	var v blockVal
	it := m.Iterate()
	for it.Next(&k, &v) {
		if v.Until <= now {
			continue
		}
		out = append(out, Blocked{Source: netip.AddrFrom16(k).Unmap().String(), Reason: reasonNames[v.Reason], Count: v.Count,
			Since: ktime.Wall(base, v.Since), Until: ktime.Wall(base, v.Until), Packets: v.Packets, Bytes: v.Bytes})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Source < out[j].Source })
	return out, it.Err()
}

// listHits walks the tables (not the maps, which may hold 1M entries with
// no hits) and reports the entries that dropped something.
func listHits(h cube.Handle, c *cube.Cube) (any, error) {
	out := []Hit{}
	now := time.Now()
	ctl := cube.ControllerOf[*controller](h)
	ctl.mu.Lock()
	defer ctl.mu.Unlock()
	for i := range sides {
		s := &sides[i]
		tb := tableOf(s.table)
		rows, err := tb.Entries(c)
		if err != nil {
			return nil, err
		}
		for _, r := range rows {
			e := r.(*Entry)
			p, err := ParsePrefix(e.Prefix)
			if err != nil {
				continue
			}
			v, err := ctl.entry(h, s, p)
			if err != nil || v.Packets == 0 {
				continue
			}
			out = append(out, Hit{Table: s.table, Prefix: e.Prefix, Packets: v.Packets, Bytes: v.Bytes,
				Expires: e.Expires, Active: e.Expires == nil || e.Expires.After(now)})
		}
	}
	return out, nil
}

// Counters reads the cube's counters by name.
func Counters(h cube.Handle) (map[string]uint64, error) { return ddCounters.Values(h) }

func unblock(h cube.Handle, _ *cube.Cube, args any) (any, error) {
	a := args.(*UnblockArgs)
	ip, err := netip.ParseAddr(a.Source)
	if err != nil {
		return nil, cube.Errorf("source", "invalid address %q", a.Source)
	}
	ip = ip.Unmap()
	removed := false
	for _, name := range []string{"dd_blocked", "dd_track"} {
		m, err := h.Map(name)
		if err != nil {
			return nil, err
		}
		if m.Delete(key16(ip)) == nil && name == "dd_blocked" {
			removed = true
		}
	}
	if !removed {
		return nil, cube.NotFound("source", "%s is not blocked", ip)
	}
	h.Logf("ddos: %s unblocked by request", ip)
	return map[string]string{"result": ip.String() + " unblocked"}, nil
}

func flushBlocked(h cube.Handle, _ *cube.Cube, _ any) (any, error) {
	n, err := flushMap(h, "dd_blocked")
	if err != nil {
		return nil, err
	}
	if m, err := h.Map("dd_track"); err == nil {
		var keys []addrKey
		var k addrKey
		it := m.Iterate()
		buf := make([]byte, m.ValueSize())
		for it.Next(&k, &buf) {
			keys = append(keys, k)
		}
		for _, k := range keys {
			m.Delete(k)
		}
	}
	return map[string]int{"unblocked": n}, nil
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
