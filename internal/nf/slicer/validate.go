package slicer

// Checking slices and settings against the cube: each slice on its own,
// against the others (ids, ports, chain entries, claims on the same
// traffic), and admission control of the guaranteed minimums. (The engine
// checks a chain entry against the topology: internal/engine/slicechains.go.)

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/edgenf/edgenf/internal/cube"
)

// Validate checks one slice against the cube's ports.
func (s *Slice) Validate(c *cube.Cube) error {
	if err := cube.CheckName("name", s.Name); err != nil {
		return err
	}
	if s.ID < 1 || s.ID > MaxSliceID {
		return cube.Errorf("id", "slice id %d out of range 1..%d", s.ID, MaxSliceID)
	}
	if s.Tenant != "" {
		if err := cube.CheckName("tenant", s.Tenant); err != nil {
			return err
		}
	}
	switch {
	case s.Port == "" && s.Chain == "":
		return cube.Unprocessable("port", "required: port (the slicer port peered with the slice's chain entry) or chain (the entry, cube:port)")
	case s.Port != "" && s.Chain != "":
		return cube.Unprocessable("chain", "give port or chain, not both: a slice enters its chain one way")
	case s.Chain != "":
		ep, err := cube.ParseEndpoint(s.Chain)
		if err != nil || !ep.IsCube() {
			return cube.Errorf("chain", "%q is not a cube port (cube:port)", s.Chain)
		}
		if ep.Cube == c.Name {
			return cube.Unprocessable("chain", "%s is a port of the slicer itself: a chain entry is a port of the slice's first cube", s.Chain)
		}
	case c.Port(s.Port) == nil:
		return cube.NotFound("port", "cube %s has no port %q", c.Name, s.Port)
	}
	if s.Entry != "" && c.Port(s.Entry) == nil {
		return cube.NotFound("entry", "cube %s has no port %q", c.Name, s.Entry)
	}
	vlans := 0
	for _, r := range s.Rules {
		if r.VLAN != nil {
			if vlans++; vlans > 1 {
				return cube.Unprocessable("rules", "a slice has at most one VLAN: its chain sees its frames untagged, and return traffic is tagged with it")
			}
		}
	}
	if s.Priority != nil && (*s.Priority < 0 || *s.Priority > 7) {
		return cube.Errorf("priority", "priority %d out of range 0 (highest)..7", *s.Priority)
	}
	if s.RateBps > 0 && s.MinBps > s.RateBps {
		return cube.Unprocessable("min_bps", "the guaranteed minimum %s exceeds the rate limit %s", Bits(s.MinBps), Bits(s.RateBps))
	}
	if s.BurstBytes > 0 && s.BurstBytes < 1600 {
		return cube.Errorf("burst_bytes", "a burst of %d bytes is smaller than one full frame: at least 1600", s.BurstBytes)
	}
	if s.BurstBytes > 0 && s.RateBps == 0 {
		return cube.Unprocessable("burst_bytes", "a burst needs rate_bps")
	}
	if s.BurstPackets > 0 && s.RatePps == 0 {
		return cube.Unprocessable("burst_packets", "a burst needs rate_pps")
	}
	if s.LatencyMs < 0 {
		return cube.Errorf("latency_ms", "a negative latency target")
	}
	if s.LatencyMs > 0 && s.MinBps == 0 {
		return cube.Unprocessable("latency_ms", "a latency target needs a guaranteed minimum (min_bps): without one the slice has no class bandwidth to bound its queue")
	}
	if d := s.worstDelayMs(); s.LatencyMs > 0 && d > s.LatencyMs {
		return cube.Unprocessable("latency_ms", "target %.3g ms cannot be met: a full HTB burst of the class (%d bytes) drains in %.3g ms at its guaranteed %s; raise min_bps or the target", s.LatencyMs, classBurst(s.MinBps), d, Bits(s.MinBps))
	}
	return s.crossCheck(c)
}

// classBurst is the bytes an HTB class may send at once at rate bps: what
// vishvananda/netlink derives (rate/HZ + MTU), the head-of-line delay bound
// of a frame of the class once it is at the front of the class's queue.
func classBurst(bps uint64) uint64 { return bps/8/250 + 1600 }

// worstDelayMs bounds the wait of a frame at the head of the slice's class
// queue behind a full burst at its guaranteed rate.
func (s *Slice) worstDelayMs() float64 {
	if s.MinBps == 0 {
		return 0
	}
	return float64(classBurst(s.MinBps)*8) / float64(s.MinBps) * 1000
}

// others decodes the slices of c other than the one named skip; entries
// that do not decode are left to their own validation. The slices are
// shared with the decode cache: read them, never change them.
func others(c *cube.Cube, skip string) []*Slice {
	var out []*Slice
	for key, raw := range c.Tables["slices"] {
		if key == skip {
			continue
		}
		if sl := decoded.get(raw); sl != nil {
			out = append(out, sl)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// decoded caches slices by their JSON: every change of a slicer (and the
// engine's look at its chain entries) reads all its slices, and decoding
// 1,000 of them each time made creating the 1,000th slice cost more than
// everything else together. Entries are immutable JSON, so the text is
// the key; the cache is dropped whole when it grows past its bound.
var decoded = &sliceCache{m: map[string]*Slice{}}

type sliceCache struct {
	mu sync.Mutex
	m  map[string]*Slice
}

const sliceCacheMax = 1 << 16

// get returns the slice raw describes, nil if it does not decode.
func (sc *sliceCache) get(raw []byte) *Slice {
	sc.mu.Lock()
	sl, ok := sc.m[string(raw)]
	sc.mu.Unlock()
	if ok {
		return sl
	}
	sl = &Slice{}
	if json.Unmarshal(raw, sl) != nil {
		return nil
	}
	sc.mu.Lock()
	if len(sc.m) >= sliceCacheMax {
		clear(sc.m)
	}
	sc.m[string(raw)] = sl
	sc.mu.Unlock()
	return sl
}

// admission checks that the guaranteed minimums fit every egress link.
func admission(set *Settings, list []*Slice) (int, error) {
	var sum uint64
	var parts []string
	for _, sl := range list {
		if sl.MinBps > 0 {
			sum += sl.MinBps
			parts = append(parts, fmt.Sprintf("%s %s", sl.Name, Bits(sl.MinBps)))
		}
	}
	if sum > 0 && len(set.Egress) == 0 {
		return -1, cube.Conflict("", "slices have guaranteed minimums but the slicer shapes at no interface: list the egress interfaces and their rates in its settings")
	}
	for i, e := range set.Egress {
		if sum > e.RateBps {
			return i, cube.Conflict("", "admission refused: the slices' guaranteed minimums sum to %s (%s), more than %s's %s",
				Bits(sum), strings.Join(parts, ", "), e.Interface, Bits(e.RateBps))
		}
	}
	return 0, nil
}

// Validate checks the settings, and those checks on the slices that the
// settings can break: the uplink, the default slice, admission control.
func (s *Settings) Validate(c *cube.Cube) error {
	return withIndex(c, func(x *sliceIndex) error { return s.check(c, x) })
}

func (s *Settings) check(c *cube.Cube, x *sliceIndex) error {
	if s.Uplink == "" {
		if len(x.rows) > 0 {
			return cube.Conflict("uplink", "required once the slicer has slices: the entry port their return traffic leaves by")
		}
	} else if c.Port(s.Uplink) == nil {
		return cube.NotFound("uplink", "cube %s has no port %q", c.Name, s.Uplink)
	}
	seenIf := map[string]bool{}
	for i, e := range s.Egress {
		field := fmt.Sprintf("egress[%d]", i)
		if e.Interface == "" {
			return cube.Errorf(field+".interface", "required")
		}
		if seenIf[e.Interface] {
			return cube.Conflict(field+".interface", "interface %s listed twice", e.Interface)
		}
		seenIf[e.Interface] = true
		if e.RateBps < 8000 {
			return cube.Errorf(field+".rate_bps", "link rate %d bits/s: at least 8000", e.RateBps)
		}
	}
	if s.Shaping != "" && s.Shaping != ShapingHTB && s.Shaping != ShapingEDT {
		return cube.Errorf("shaping", "unknown mechanism %q (htb or edt)", s.Shaping)
	}
	if len(s.Egress) > 0 && c.Hook != "tc" {
		return cube.Unprocessable("egress", "shaping needs hook tc: frames XDP redirects never meet a qdisc (create the slicer and its slices' chains with --hook tc)")
	}
	if s.Uplink != "" {
		if on := x.byPort[s.Uplink]; len(on) > 0 {
			first := slices.MinFunc(on, func(a, b *indexed) int { return a.s.ID - b.s.ID })
			return cube.Conflict("uplink", "port %s leads into slice %s's chain; the uplink is an entry port", s.Uplink, first.name)
		}
	}
	if s.Default != "" && x.rows[s.Default] == nil {
		return cube.NotFound("default", "no slice named %q", s.Default)
	}
	if s.Shaping == ShapingEDT && x.classes > 0 {
		for _, sl := range others(c, "") { // the first one, by id
			if sl.MinBps > 0 || sl.Priority != nil {
				return cube.Unprocessable("shaping", "edt paces rate limits only: slice %s has a guaranteed minimum or a priority, which need htb", sl.Name)
			}
		}
	}
	if refused(s, x.minSum) {
		// the message lists every minimum: walk
		if i, err := admission(s, others(c, "")); err != nil {
			if i < 0 {
				return cube.Within("egress", err)
			}
			return cube.Within(fmt.Sprintf("egress[%d].rate_bps", i), err)
		}
	}
	return nil
}
