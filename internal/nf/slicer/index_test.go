package slicer

import (
	"encoding/json"
	"fmt"
	"math/rand"
	"testing"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/datapath"
	"github.com/edgenf/edgenf/internal/nftest"
)

// walkCheck is the check of s against the cube's other slices by a walk
// over all of them (crossCheck before the index): the reference the
// index must agree with.
func walkCheck(s *Slice, c *cube.Cube) error {
	set := &Settings{}
	if cube.DecodeInto("config", c.Config, set) != nil {
		return nil
	}
	list := others(c, s.Name)
	slicePorts := portsOf(append(list, s))
	for _, o := range list {
		if o.ID == s.ID {
			return cube.Conflict("id", "slice id %d is also slice %s's", s.ID, o.Name)
		}
		if s.Port != "" && o.Port == s.Port {
			return cube.Conflict("port", "port %s already leads into slice %s's chain: a port serves one slice", s.Port, o.Name)
		}
		if s.Chain != "" && o.Chain == s.Chain {
			return cube.Conflict("chain", "%s is already slice %s's chain entry: an entry serves one slice", s.Chain, o.Name)
		}
	}
	if s.Port != "" && s.Port == set.Uplink {
		return cube.Conflict("port", "port %s is the uplink, an entry port: a slice's port leads into its chain", s.Port)
	}
	if s.Entry != "" && slicePorts[s.Entry] {
		return cube.Conflict("entry", "port %s leads into a slice's chain; the entry is an entry port", s.Entry)
	}
	claims := map[string]string{}
	var teids []span
	for _, o := range list {
		for i, r := range o.Rules {
			p, err := r.parse(c, slicePorts)
			if err != nil {
				continue
			}
			if p.kind == kindTEID {
				teids = append(teids, span{p.lo, p.hi, i, &indexed{name: o.Name}})
			} else {
				claims[p.key()] = o.Name
			}
		}
	}
	for i, r := range s.Rules {
		field := fmt.Sprintf("rules[%d]", i)
		p, err := r.parse(c, slicePorts)
		if err != nil {
			return cube.Within(field, err)
		}
		if p.kind == kindTEID {
			for _, t := range teids {
				if p.lo <= t.hi && t.lo <= p.hi {
					return cube.Conflict(field+".teid", "TEIDs %d-%d overlap %d-%d of slice %s", p.lo, p.hi, t.lo, t.hi, t.x.name)
				}
			}
			continue
		}
		if other, dup := claims[p.key()]; dup {
			return cube.Conflict(field, "%s is already slice %s's: each match belongs to one slice", p.key(), other)
		}
	}
	if s.MinBps > 0 {
		if _, err := admission(set, append(list, s)); err != nil {
			return cube.Within("min_bps", err)
		}
	}
	if s.MinBps > 0 && c.Hook != "tc" {
		return cube.Unprocessable("min_bps", "a guaranteed minimum needs hook tc: frames XDP redirects never meet a qdisc")
	}
	return nil
}

// walkSettings is the settings' check against the slices by a walk over
// them (Settings.Validate before the index).
func walkSettings(s *Settings, c *cube.Cube) error {
	list := others(c, "")
	if s.Uplink == "" {
		if len(list) > 0 {
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
	found := s.Default == ""
	for _, sl := range list {
		if sl.Name == s.Default {
			found = true
		}
		if sl.Port != "" && sl.Port == s.Uplink {
			return cube.Conflict("uplink", "port %s leads into slice %s's chain; the uplink is an entry port", s.Uplink, sl.Name)
		}
	}
	if !found {
		return cube.NotFound("default", "no slice named %q", s.Default)
	}
	if s.Shaping == ShapingEDT {
		for _, sl := range list {
			if sl.MinBps > 0 || sl.Priority != nil {
				return cube.Unprocessable("shaping", "edt paces rate limits only: slice %s has a guaranteed minimum or a priority, which need htb", sl.Name)
			}
		}
	}
	if i, err := admission(s, list); err != nil {
		if i < 0 {
			return cube.Within("egress", err)
		}
		return cube.Within(fmt.Sprintf("egress[%d].rate_bps", i), err)
	}
	return nil
}

var (
	randPorts    = []string{"up", "up2", "s1", "s2", "s3"}
	randPrefixes = []string{"198.18.0.0/24", "198.18.1.0/24", "198.18.0.0/16", "2001:db8::/64", "2001:db8:1::/64"}
)

func randRule(rng *rand.Rand) Rule {
	switch rng.Intn(8) {
	case 0:
		return Rule{InPort: randPorts[rng.Intn(len(randPorts))]}
	case 1:
		return Rule{VLAN: intp(1 + rng.Intn(5))}
	case 2:
		return Rule{DSCP: intp(rng.Intn(5))}
	case 3:
		r := Rule{Proto: []string{"udp", "tcp", "icmp"}[rng.Intn(3)]}
		if r.Proto != "icmp" {
			r.DPort = rng.Intn(3)
		}
		return r
	case 4:
		return Rule{Src: randPrefixes[rng.Intn(len(randPrefixes))]}
	case 5:
		return Rule{Dst: randPrefixes[rng.Intn(len(randPrefixes))]}
	case 6:
		return Rule{UEPool: randPrefixes[rng.Intn(len(randPrefixes))]}
	}
	lo := rng.Intn(40)
	return Rule{TEID: fmt.Sprintf("%d-%d", lo, lo+rng.Intn(6))}
}

func randSlice(rng *rand.Rand, name string) *Slice {
	s := &Slice{Name: name, ID: 1 + rng.Intn(25)}
	if rng.Intn(2) == 0 {
		s.Port = fmt.Sprintf("s%d", 1+rng.Intn(8))
	} else {
		s.Chain = fmt.Sprintf("x%d:in", rng.Intn(15))
	}
	if rng.Intn(6) == 0 {
		s.Entry = randPorts[rng.Intn(len(randPorts))]
	}
	if rng.Intn(3) == 0 {
		s.MinBps = uint64(1+rng.Intn(4)) * 1e6
	}
	if rng.Intn(4) == 0 {
		s.Priority = intp(rng.Intn(8))
	}
	for range rng.Intn(4) {
		s.Rules = append(s.Rules, randRule(rng))
	}
	return s
}

func randSettings(rng *rand.Rand, hook datapath.Hook) Settings {
	set := Settings{Uplink: []string{"up", "up", "up", "s1", "", "up2"}[rng.Intn(6)]}
	if rng.Intn(3) == 0 {
		set.Default = fmt.Sprintf("n%d", rng.Intn(30))
	}
	if hook == datapath.TC && rng.Intn(2) == 0 {
		set.Egress = []Egress{{Interface: "eth9", RateBps: uint64(2+rng.Intn(12)) * 1e6}}
	}
	set.Shaping = []string{"", "", "htb", "edt"}[rng.Intn(4)]
	return set
}

// The index gives the walk's verdicts, errors word for word: slices
// checked against slicers built at random (each slice added if the walk
// let it in, replaced, or deleted), and random settings against them.
func TestIndexAgreesWithTheWalk(t *testing.T) {
	rng := rand.New(rand.NewSource(15))
	refused, checked := 0, 0
	for trial := range 150 {
		hook := []datapath.Hook{datapath.TC, datapath.XDP}[trial%2]
		set := randSettings(rng, hook)
		set.Default, set.Shaping = "", ""
		c := model(hook, set)
		for step := range 60 {
			name := fmt.Sprintf("n%d", rng.Intn(30))
			s := randSlice(rng, name)
			want, got := walkCheck(s, c), s.crossCheck(c)
			if fmt.Sprint(want) != fmt.Sprint(got) {
				t.Fatalf("trial %d step %d: %+v against %d slices: index says %v, the walk %v", trial, step, *s, len(c.Tables["slices"]), got, want)
			}
			checked++
			switch {
			case want != nil:
				refused++
			case rng.Intn(8) == 0:
				c.SetRow("slices", name, nil)
			default:
				c.SetRow("slices", name, nftest.Entry(s))
			}
			// a copy, as a change's (the index follows the slices set
			// between the two, both ways)
			other, c2 := randSettings(rng, hook), c.Clone()
			if want, got := walkSettings(&other, c2), other.Validate(c2); fmt.Sprint(want) != fmt.Sprint(got) {
				t.Fatalf("trial %d step %d: settings %+v: index says %v, the walk %v", trial, step, other, got, want)
			}
		}
	}
	if refused < checked/10 || refused > checked*9/10 {
		t.Fatalf("%d of %d slices refused: the random slicers test little", refused, checked)
	}
}

// The engine asks for the chain entries of a change's rows alone
// (cube.WithRows). That answer must not turn the slicer's index over to
// those rows: it did, and the next question about the whole slicer then
// re-read every slice, on every change (slice creation grew with the
// square of the slices). A change of many rows (40: more than the 16 a
// shallower fix read without the index) re-reads no slice either.
func TestChainsOfAChangesRowsKeepsTheIndex(t *testing.T) {
	c := &cube.Cube{Name: "sl-rows", Type: "slicer", Hook: "tc", Config: json.RawMessage(`{"uplink":"up"}`),
		Ports: []cube.Port{{Name: "up", Index: 0}}, Tables: map[string]map[string]json.RawMessage{"slices": {}}}
	for k := 1; k <= 100; k++ {
		c.SetRow("slices", fmt.Sprintf("s%d", k), nftest.Entry(Slice{Name: fmt.Sprintf("s%d", k), ID: k, Tenant: "t",
			Chain: fmt.Sprintf("c%d:in", k), Rules: []Rule{{Dst: fmt.Sprintf("198.18.0.%d", k)}}}))
	}
	if got := chainsOf(c); len(got) != 100 || got[0].ID != 1 || got[99].ID != 100 {
		t.Fatalf("chains of the whole slicer: %d, want 100 by id", len(got))
	}
	indexed := func() map[string]*indexed {
		indexes.Lock()
		defer indexes.Unlock()
		out := map[string]*indexed{}
		for name, r := range indexes.m["sl-rows"].rows {
			out[name] = r
		}
		return out
	}
	before := indexed()
	for _, n := range []int{1, 40} {
		var rows []cube.Row
		for k := 1; k <= n; k++ {
			rows = append(rows, cube.Row{Table: "slices", Key: fmt.Sprintf("s%d", k)})
		}
		got := chainsOf(c.WithRows(rows))
		if len(got) != n || got[0].Slice != "s1" || got[n-1].Entry != fmt.Sprintf("c%d:in", n) {
			t.Fatalf("chains of %d rows: %+v, want s1..s%d's", n, got, n)
		}
		if got := chainsOf(c); len(got) != 100 {
			t.Fatalf("chains of the whole slicer after a question about %d rows: %d, want 100", n, len(got))
		}
		reread := 0
		for name, r := range indexed() {
			if before[name] != r {
				reread++
			}
		}
		if reread > 0 {
			t.Fatalf("a question about %d rows, then one about the whole slicer, re-read %d of its 100 slices, want 0", n, reread)
		}
	}
}
