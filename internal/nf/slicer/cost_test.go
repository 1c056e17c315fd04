package slicer

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/estimate"
)

// costSlicer is a slicer whose slices s1 (port a) and s2 (port b) have
// the rules given.
func costSlicer(s1, s2 []Rule) *cube.Cube {
	c := &cube.Cube{Name: "sl", Type: "slicer", Config: json.RawMessage(`{"uplink":"up"}`),
		Ports:  []cube.Port{{Name: "up", Index: 0}, {Name: "a", Index: 1}, {Name: "b", Index: 2}},
		Tables: map[string]map[string]json.RawMessage{"slices": {}}}
	for _, s := range []Slice{{Name: "s1", ID: 1, Port: "a", Rules: s1}, {Name: "s2", ID: 2, Port: "b", Rules: s2}} {
		if len(s.Rules) > 0 {
			c.Tables["slices"][s.Name] = estimate.Row(s)
		}
	}
	return c
}

// lookupCounts are the lookup terms a frame from the uplink uses.
func lookupCounts(t *testing.T, p *estimate.Profile, c *cube.Cube) (map[string]float64, []string) {
	t.Helper()
	uses, notes, err := costUses(p, c, "up")
	if err != nil {
		t.Fatal(err)
	}
	n := map[string]float64{}
	for _, u := range uses {
		if strings.HasPrefix(u.Term, "slicer.lookup.") {
			n[u.Term] += u.N
		}
	}
	return n, notes
}

// A prefix field is priced the way the control plane looks it up
// (prefixes.go picks it): the IPv4 prefixes listed in place compared one
// each; one hash lookup per length in use; or the trie, deeper with more
// prefixes. TEID is always its trie.
func TestCostPricesThePrefixWayPicked(t *testing.T) {
	for _, c := range []struct {
		name   string
		s1, s2 []Rule
		want   map[string]float64
	}{
		{"three IPv4 prefixes: in place", dstRules(2, 24, "198.18.100.0"), []Rule{{Dst: "198.18.0.0/16"}},
			map[string]float64{termPfxInline: 3}},
		{"100 IPv4 prefixes of 2 lengths: by hash", dstRules(99, 24, "198.18.100.0"), []Rule{{Dst: "198.18.0.0/16"}},
			map[string]float64{termPfxHash: 2}},
		{"5 IPv4 prefixes of 2 lengths: the trie", dstRules(4, 24, "198.18.100.0"), []Rule{{Dst: "198.18.0.0/16"}},
			map[string]float64{termLPM: 1, termLPMLevel: 4}},
		{"198 prefixes of 9 lengths: the trie", nineLengths(), nil,
			map[string]float64{termLPM: 1, termLPMLevel: 9}},
		{"source and destination, two ways", dstRules(99, 24, "198.18.100.0"), []Rule{{Dst: "198.18.0.0/16"}, {Src: "198.18.0.0/24"}},
			map[string]float64{termPfxHash: 2, termPfxInline: 1}},
		{"TEID and DSCP", []Rule{{TEID: "100-103"}}, []Rule{{DSCP: new(int)}},
			map[string]float64{termLPM: 1, termLPMLevel: 2, termArray: 1}},
	} {
		got, _ := lookupCounts(t, nil, costSlicer(c.s1, c.s2))
		if !mapsEqual(got, c.want) {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
	// the way priced follows the control plane's pick
	force(t, wayTrie)
	if got, _ := lookupCounts(t, nil, costSlicer(dstRules(2, 24, "198.18.100.0"), nil)); !mapsEqual(got, map[string]float64{termLPM: 1, termLPMLevel: 3}) {
		t.Errorf("two prefixes, the trie forced: %v", got)
	}
}

// A slicer with IPv4 and IPv6 prefixes prices the dearer family's frame
// and says which.
func TestCostPricesTheDearerFamily(t *testing.T) {
	p := &estimate.Profile{Costs: map[string]float64{termClassify: 30, termPfxInline: 1, termPfxHash: 14, termPfxHash6: 20, termLPM: 5, termLPMLevel: 5}}
	// IPv4: one prefix in place (1 ns); IPv6: 40 /64s and a /48 by hash (40 ns)
	c := costSlicer(append(dst6Rules(40), Rule{Dst: "2001:db8:1::/48"}), []Rule{{Dst: "198.18.0.0/16"}})
	got, notes := lookupCounts(t, p, c)
	if !mapsEqual(got, map[string]float64{termPfxHash6: 2}) || len(notes) != 1 || !strings.Contains(notes[0], "an IPv6 frame") {
		t.Errorf("%v %q, want two hash lookups of an IPv6 frame", got, notes)
	}
	// IPv4 dearer: 4 prefixes in place, one IPv6 prefix in its trie
	p.Costs[termPfxInline] = 20
	c = costSlicer(dstRules(4, 24, "198.18.100.0"), []Rule{{Dst: "2001:db8:1::/48"}})
	if got, notes = lookupCounts(t, p, c); !mapsEqual(got, map[string]float64{termPfxInline: 4}) || !strings.Contains(notes[0], "an IPv4 frame") {
		t.Errorf("%v %q, want four compares of an IPv4 frame", got, notes)
	}
}

func mapsEqual(a, b map[string]float64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// A frame is priced as the slicer reads it: by the shortcut (no
// slicer.parse) an untagged IPv4 frame when no rule kind needs the L4
// header; parsed in full once otherwise, however many lookups follow. An
// IPv6 frame's two hash lookups were priced as two full parses before:
// the held-out case with two lengths was 17.7% over.
func TestCostParsesAsTheSlicerReadsTheFrame(t *testing.T) {
	vid := 20
	for _, c := range []struct {
		name   string
		s1, s2 []Rule
		out    string // "": the dearest slice
		parses float64
	}{
		{"in-port and DSCP", []Rule{{InPort: "up"}}, []Rule{{DSCP: new(int)}}, "", 0},
		{"IPv4 prefixes by hash", dstRules(99, 24, "198.18.100.0"), []Rule{{Dst: "198.18.0.0/16"}}, "", 0},
		{"protocol and port", []Rule{{Proto: "udp", DPort: 9}}, nil, "", 1},
		{"TEID", []Rule{{TEID: "100-103"}}, nil, "", 1},
		{"IPv6 prefixes by hash, two lengths", append(dst6Rules(40), Rule{Dst: "2001:db8:1::/48"}), nil, "", 1},
		{"into a VLAN slice (a tagged frame)", []Rule{{VLAN: &vid}}, []Rule{{DSCP: new(int)}}, "a", 1},
		{"into the other slice (untagged)", []Rule{{VLAN: &vid}}, []Rule{{DSCP: new(int)}}, "b", 0},
	} {
		uses, _, err := costVia(nil, costSlicer(c.s1, c.s2), "up", c.out)
		if err != nil {
			t.Fatal(err)
		}
		n := map[string]float64{}
		for _, u := range uses {
			n[u.Term] += u.N
		}
		if n[termClassify] != 1 || n[termParse] != c.parses {
			t.Errorf("%s: %v classify, %v full parses; want 1 and %v", c.name, n[termClassify], n[termParse], c.parses)
		}
	}
}
