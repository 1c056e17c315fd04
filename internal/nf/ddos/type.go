package ddos

import (
	"net/netip"
	"sort"
	"time"

	"github.com/cilium/ebpf"
	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/datapath"
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
	Source string `json:"source"`
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

func clearEvents(h cube.Handle, _ *cube.Cube, _ any) (any, error) {
	ctl := cube.ControllerOf[*controller](h)
	ctl.mu.Lock()
	n := len(ctl.events)
	ctl.events = nil
	ctl.mu.Unlock()
	return map[string]int{"cleared": n}, nil
}

// Events returns the recorded detections, oldest first.
func (ctl *controller) Events() []Event {
	ctl.mu.Lock()
	defer ctl.mu.Unlock()
	return append([]Event{}, ctl.events...)
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
		{Name: "blocked", Doc: "Sources blocked by detection now, with what they sent since.", Item: &Blocked{}, List: listBlocked},
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
