package firewall

import (
	"sort"

	"github.com/edgenf/edgenf/internal/bpfmap"
	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/ktime"
	"github.com/edgenf/edgenf/internal/nf/conntrack"
	"github.com/edgenf/edgenf/internal/nf/counters"
)

// RuleCounter is the traffic one rule (or a chain's default policy, id 0)
// matched.
type RuleCounter struct {
	Chain string `json:"chain"`
	// ID is the rule's; 0: the default policy; -1: the accept_established
	// shortcut; -2: frames that could not be parsed and later fragments
	// of datagrams whose first fragment was not seen (judged by the
	// policy); -3: fragments dropped for hiding or rewriting their
	// datagram's L4 header (tiny first fragments, TCP at offset 8).
	ID      int    `json:"id"`
	Action  string `json:"action"`
	Packets uint64 `json:"packets"`
	Bytes   uint64 `json:"bytes"`
}

func actName(a uint8) string {
	if a == actDrop {
		return "drop"
	}
	return "accept"
}

func ruleCounters(h cube.Handle, c *cube.Cube) ([]RuleCounter, error) {
	maps, err := openMaps(h)
	if err != nil {
		return nil, err
	}
	ctl := cube.ControllerOf[*controller](h)
	ctl.mu.Lock()
	defer ctl.mu.Unlock()
	var active uint32
	if err := maps.active.Lookup(uint32(0), &active); err != nil {
		return nil, err
	}
	gen := int(active & 1)
	out := []RuleCounter{}
	for ch := 0; ch < 2; ch++ {
		mi := gen*2 + ch
		var meta kmeta
		maps.meta.Lookup(uint32(mi), &meta)
		for bit, id := range ctl.ids[ch] {
			k, err := counters.ReadTraffic(maps.counters, uint32(mi*MaxRules+bit))
			if err != nil {
				return nil, err
			}
			var r krule
			maps.rules.Lookup(uint32(mi*MaxRules+bit), &r)
			b := ctl.base[ch][id]
			out = append(out, RuleCounter{chainNames[ch], id, actName(r.Action), k.Packets + b.Packets, k.Bytes + b.Bytes})
		}
		k, err := counters.ReadTraffic(maps.counters, uint32(cntPolicy+mi))
		if err != nil {
			return nil, err
		}
		b := ctl.base[ch][0]
		out = append(out, RuleCounter{chainNames[ch], rowPolicy, actName(meta.Policy), k.Packets + b.Packets, k.Bytes + b.Bytes})
		if meta.AcceptEstablished != 0 {
			k, _ := counters.ReadTraffic(maps.counters, uint32(cntEstab+ch))
			out = append(out, RuleCounter{chainNames[ch], rowEstablished, "accept", k.Packets, k.Bytes})
		}
		// rows for what the parser refused, when there was any
		if k, err := counters.ReadTraffic(maps.counters, uint32(cntUnparsed+ch)); err == nil && k.Packets > 0 {
			out = append(out, RuleCounter{chainNames[ch], rowUnparsed, actName(meta.Policy), k.Packets, k.Bytes})
		}
		if k, err := counters.ReadTraffic(maps.counters, uint32(cntBadFrag+ch)); err == nil && k.Packets > 0 {
			out = append(out, RuleCounter{chainNames[ch], rowBadFragment, "drop", k.Packets, k.Bytes})
		}
	}
	return out, nil
}

// Connection is one tracked connection.
type Connection struct {
	Proto string  `json:"proto"`
	Src   string  `json:"src"` // the originator
	Dst   string  `json:"dst"`
	State string  `json:"state"`
	Reply bool    `json:"replied"`
	Idle  float64 `json:"idle_seconds"`
}

const maxListed = 10000

func connections(h cube.Handle) ([]Connection, error) {
	m, err := h.Map("fw_conns")
	if err != nil {
		return nil, err
	}
	ctl := cube.ControllerOf[*controller](h)
	ctl.mu.Lock()
	to := ctl.cfg.Timeouts.Kernel()
	ctl.mu.Unlock()
	now := ktime.Now()
	out := []Connection{}
	err = bpfmap.Each(m, func(k conntrack.Tuple46, v kconn) bool {
		if v.C.Expired(to, now) {
			return true
		}
		t := k
		if v.OrigSwapped != 0 {
			t = k.Reverse()
		}
		out = append(out, Connection{Proto: conntrack.ProtoName(k.Proto), Src: t.Src(), Dst: t.Dst(),
			State: conntrack.StateName(v.C.State), Reply: v.C.Flags&conntrack.FlagReplied != 0, Idle: v.C.IdleSeconds(now)})
		return len(out) < maxListed
	})
	sort.Slice(out, func(i, j int) bool {
		return out[i].Src < out[j].Src || out[i].Src == out[j].Src && out[i].Dst < out[j].Dst
	})
	return out, err
}
