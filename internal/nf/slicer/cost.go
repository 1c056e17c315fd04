package slicer

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"strconv"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/estimate"
)

// The slicer's cost model, term by term as the code runs (slicer.bpf.c).
// A frame entering by an entry port is read (sl_fields): an untagged IPv4
// frame, when no rule kind in use needs the L4 header, by a shortcut that
// reads its IP header in place; any other frame (tagged, IPv6, or for
// rules on the protocol and port, TEID or UE pool) parsed in full. Then it
// is classified: one lookup per rule kind the slicer uses, in precedence
// order, until one hits. The lookups differ by map: VLAN, DSCP and in-port
// index arrays (the verifier inlines those: a bounds check and a load);
// protocol and port is a hash lookup of the L4 key, two when the port
// misses; TEID walks a longest-prefix trie.
// A prefix field (source, destination, UE pool) is looked up the way the
// control plane picked for it and the frame's family (prefixes.go): up to
// four IPv4 prefixes compared in place, one exact-match hash lookup per
// prefix length in use, or the field's trie, whose walk deepens with its
// prefixes (a level per distinguishing bit). The slice's rate limits are
// policed (mostly spending a per-CPU lease; a clock read and a
// compare-and-swap when one runs out); a VLAN slice's tag comes off. A
// frame coming back from a slice's chain is looked up by port, marked and
// sent out by the slice's entry, its tag put back.
const (
	termClassify  = "slicer.classify"
	termParse     = "slicer.parse"
	termArray     = "slicer.lookup.array"
	termL4        = "slicer.lookup.l4"
	termLPM       = "slicer.lookup.lpm"
	termLPMLevel  = "slicer.lookup.lpm.level"
	termPfxHash   = "slicer.lookup.prefix_hash"
	termPfxHash6  = "slicer.lookup.prefix_hash6"
	termPfxInline = "slicer.lookup.prefix_inline"
	termPolice    = "slicer.police"
	termVLAN      = "slicer.vlan"
	termReturn    = "slicer.return"
)

func init() {
	estimate.Register(&estimate.Model{Type: "slicer",
		Terms: []estimate.Term{
			{Name: termClassify, Doc: "a frame from an entry port read (an untagged IPv4 one by the shortcut), given its slice, counted, marked and sent"},
			{Name: termParse, Doc: "a frame parsed in full instead of by the shortcut: tagged, IPv6, or for rules that need its L4 header (protocol and port, TEID, UE pool)"},
			{Name: termArray, Doc: "one array lookup of a rule kind (VLAN, DSCP, in-port)"},
			{Name: termL4, Doc: "one hash lookup of the protocol and port kind (two when the port misses)"},
			{Name: termLPM, Doc: "one longest-prefix trie lookup: TEID, or a prefix field the control plane keeps in its trie"},
			{Name: termLPMLevel, Doc: "per level a trie lookup walks: log2(prefixes in the trie) + 1"},
			{Name: termPfxHash, Doc: "one exact-match hash lookup of an IPv4 prefix field, per prefix length tried (all of the field's lengths when it misses)"},
			{Name: termPfxHash6, Doc: "the same for an IPv6 prefix field (a key four times as long, the address masked word by word)"},
			{Name: termPfxInline, Doc: "per IPv4 prefix compared in place (a field of at most four IPv4 prefixes)"},
			{Name: termPolice, Doc: "one rate limit policed (packets/s or bits/s)"},
			{Name: termVLAN, Doc: "a VLAN slice's tag taken off or put back"},
			{Name: termReturn, Doc: "a frame back from a slice's chain, sent out by the slice's entry"},
		},
		Uses:  costUses,
		Via:   costVia,
		Cases: costCases,
	})
}

// ruleSet is what classifying depends on: the rule kinds in use, the
// prefix fields' rules (for the way each is looked up) and the TEID
// trie's size.
type ruleSet struct {
	kinds map[int]bool
	pfx   prefixRules
	teids int // blocks in sl_teid
}

func rulesOf(c *cube.Cube, list []*Slice) *ruleSet {
	rs := &ruleSet{kinds: map[int]bool{}}
	slicePorts := portsOf(list)
	for _, s := range list {
		for i := range s.Rules {
			r, err := s.Rules[i].parse(c, slicePorts)
			if err != nil {
				continue
			}
			rs.kinds[r.kind] = true
			switch r.kind {
			case kindSrc, kindDst, kindUE:
				rs.pfx.add(r.kind, r.prefix, uint32(s.ID))
			case kindTEID:
				rs.teids += len(teidBlocks(r.lo, r.hi))
			}
		}
	}
	return rs
}

// families are the address families of the prefix rules (0 IPv4, 1
// IPv6): a frame is of one, and its lookups differ by it. IPv4 alone when
// there are no prefix rules.
func (rs *ruleSet) families() []int {
	var fams []int
	for fam := range 2 {
		for f := range rs.pfx.lens {
			if len(rs.pfx.lens[f][fam]) > 0 {
				fams = append(fams, fam)
				break
			}
		}
	}
	if len(fams) == 0 {
		return []int{0}
	}
	return fams
}

// fullParse says whether a frame of family fam (tagged or not) is parsed
// in full: sl_fields reads by its shortcut only an untagged IPv4 frame,
// and only when no rule kind in use needs the L4 header.
func (rs *ruleSet) fullParse(fam int, tagged bool) bool {
	return fam == 1 || tagged || rs.kinds[kindL4] || rs.kinds[kindTEID] || rs.kinds[kindUE]
}

// lookups are what classifying a frame of family fam costs at most: every
// kind before the one it hits, each looked up once (protocol and port
// twice; a prefix field its way's lookups, every length of it tried or
// every listed prefix compared), and that one.
func (rs *ruleSet) lookups(fam int) []estimate.Use {
	var array, l4, trie, levels, hash, hash6, inline float64
	for k := range rs.kinds {
		switch k {
		case kindTEID:
			trie++
			levels += float64(trieLevels(rs.teids))
		case kindUE, kindSrc, kindDst:
			switch way, n, lens := rs.pfx.choice(int(pfxField[k]), fam); way {
			case wayTrie:
				trie++
				levels += float64(trieLevels(n))
			case wayInline:
				inline += float64(n)
			default:
				if fam == 1 {
					hash6 += float64(lens)
				} else {
					hash += float64(lens)
				}
			}
		case kindL4:
			l4 += 2
		default:
			array++
		}
	}
	var uses []estimate.Use
	add := func(term string, n float64, what string) {
		if n > 0 {
			uses = append(uses, estimate.Use{Term: term, N: n, What: what})
		}
	}
	add(termArray, array, "slicer: array rule lookups")
	add(termL4, l4, "slicer: protocol and port lookups")
	add(termLPM, trie, "slicer: trie lookups (TEID, prefix fields in their trie)")
	add(termLPMLevel, levels, "slicer: trie levels walked")
	add(termPfxHash, hash, "slicer: prefix hash lookups, one per length")
	add(termPfxHash6, hash6, "slicer: IPv6 prefix hash lookups, one per length")
	add(termPfxInline, inline, "slicer: IPv4 prefixes compared in place")
	return uses
}

// costUses prices a frame entering by in: from a slice's chain, the way
// back; from an entry port (or unknown), the dearest slice's frame.
func costUses(p *estimate.Profile, c *cube.Cube, in string) ([]estimate.Use, []string, error) {
	return costVia(p, c, in, "")
}

// costVia prices a frame entering by in and leaving by out: from a
// slice's chain, the way back; from an entry port into the slice whose
// port is out (any: the dearest), a frame classified by the last rule
// kind the slicer looks up, policed and untagged as that slice's.
func costVia(p *estimate.Profile, c *cube.Cube, in, out string) ([]estimate.Use, []string, error) {
	list := others(c, "")
	for _, s := range list {
		if s.way() == in {
			uses := []estimate.Use{{Term: termReturn, N: 1, What: "slicer: return to the entry"}}
			if s.vlan() != 0 {
				uses = append(uses, estimate.Use{Term: termVLAN, N: 1, What: "slicer: VLAN tag put back"})
			}
			return uses, nil, nil
		}
	}
	rs := rulesOf(c, list)
	price := func(uses []estimate.Use) float64 {
		if p == nil {
			return float64(len(uses))
		}
		return p.Price(uses).Total
	}
	// a frame of family fam, tagged or not, read and classified
	frame := func(fam int, tagged bool) []estimate.Use {
		uses := []estimate.Use{{Term: termClassify, N: 1, What: "slicer: classify, mark, send"}}
		if rs.fullParse(fam, tagged) {
			uses = append(uses, estimate.Use{Term: termParse, N: 1, What: "slicer: frame parsed in full"})
		}
		return append(uses, rs.lookups(fam)...)
	}
	// the dearest frame: of each family, into each slice it may go to
	fams := rs.families()
	var best []estimate.Use
	bestNS, bestName, bestFam := -1.0, "", fams[0]
	for _, fam := range fams {
		for _, s := range list {
			if out != "" && s.way() != out {
				continue
			}
			uses := frame(fam, s.vlan() != 0)
			if n := s.rates(); n > 0 {
				uses = append(uses, estimate.Use{Term: termPolice, N: float64(n), What: "slicer: policing"})
			}
			if s.vlan() != 0 {
				uses = append(uses, estimate.Use{Term: termVLAN, N: 1, What: "slicer: VLAN tag taken off"})
			}
			if ns := price(uses); ns > bestNS {
				best, bestNS, bestName, bestFam = uses, ns, s.Name, fam
			}
		}
	}
	if best == nil {
		for _, fam := range fams {
			if uses := frame(fam, false); price(uses) > bestNS {
				best, bestNS = uses, price(uses)
			}
		}
		return best, []string{"no slice leaves by this port: its frames are dropped"}, nil
	}
	family := ""
	if len(fams) > 1 {
		family = map[int]string{0: ", an IPv4 frame", 1: ", an IPv6 frame"}[bestFam]
	}
	note := "a frame of slice " + bestName + family + ", classified by the last rule kind looked up"
	if out == "" {
		note = "a frame of slice " + bestName + " (the dearest)" + family + ", classified by the last rule kind looked up"
	}
	return best, []string{note}, nil
}

// rates is how many rate limits the slice's frames are policed by at
// ingress.
// way is how frames pass between the slicer and the slice's chain, as the
// estimator names the slicer's hop: the slicer port leading into it, or the
// chain's entry (cube:port) for a slice that names one.
func (s *Slice) way() string {
	if s.Chain != "" {
		return s.Chain
	}
	return s.Port
}

func (s *Slice) rates() int {
	n := 0
	if s.RateBps > 0 {
		n++
	}
	if s.RatePps > 0 {
		n++
	}
	return n
}

// vlan is the VLAN the slice's rules name, 0 if none.
func (s *Slice) vlan() int {
	for _, r := range s.Rules {
		if r.VLAN != nil {
			return *r.VLAN
		}
	}
	return 0
}

// tagged is frame with an 802.1Q tag of vid after its MAC addresses.
func tagged(frame []byte, vid int) []byte {
	out := append([]byte(nil), frame[:12]...)
	out = append(out, 0x81, 0x00, byte(vid>>8), byte(vid))
	return append(out, frame[12:]...)
}

// costCases are the calibration cases, or with holdout others: one
// slicer with an entry port, three slice ports, and slices made of the
// rules each case needs.
func costCases(holdout bool) []estimate.Case {
	vid := func(n int) *int { return &n }
	udp := estimate.Frame(estimate.FrameSpec{Src: "198.18.0.10", Dst: "198.18.1.1", Sport: 1000, Dport: 2152})
	mk := func(name string, in string, frame []byte, slices ...Slice) estimate.Case {
		c := &cube.Cube{Name: "sl", Type: "slicer", Config: json.RawMessage(`{"uplink":"up"}`),
			Ports:  []cube.Port{{Name: "up", Index: 0}, {Name: "a", Index: 1}, {Name: "b", Index: 2}, {Name: "c", Index: 3}},
			Tables: map[string]map[string]json.RawMessage{"slices": {}}}
		for _, s := range slices {
			c.Tables["slices"][s.Name] = estimate.Row(s)
		}
		return estimate.Case{Name: name, Cube: c, InPort: in, Frame: frame}
	}
	udp6 := estimate.Frame(estimate.FrameSpec{Src: "2001:db8::10", Dst: "2001:db8:1::1", Sport: 1000, Dport: 2152})
	// fast enough that a calibration's frames always conform
	const bps, pps = 400_000_000_000, 1_000_000_000
	if holdout {
		return []estimate.Case{
			// 141 prefixes of 3 lengths: a hash lookup per length; the
			// frame's (198.18.1.1) is the shortest, tried last
			mk("destination prefixes by hash, three lengths", "up", udp,
				Slice{Name: "s1", ID: 1, Port: "a", Rules: append(dstRules(100, 24, "198.18.100.0"), dstRules(40, 26, "198.18.200.0")...)},
				Slice{Name: "s2", ID: 2, Port: "b", Rules: []Rule{{Dst: "198.18.0.0/16"}}}),
			// 30 prefixes of 3 lengths: the trie (6 levels)
			mk("source prefixes in the trie, three lengths", "up", udp,
				Slice{Name: "s1", ID: 1, Port: "a", Rules: append(srcRules(15, 24, "198.18.100.0"), srcRules(14, 26, "198.18.200.0")...)},
				Slice{Name: "s2", ID: 2, Port: "b", Rules: []Rule{{Src: "198.18.0.0/16"}}}),
			// IPv6: 40 /64s and the frame's /48 by hash, two lengths
			mk("IPv6 destination prefixes by hash, two lengths", "up", udp6,
				Slice{Name: "s1", ID: 1, Port: "a", Rules: dst6Rules(40)},
				Slice{Name: "s2", ID: 2, Port: "b", Rules: []Rule{{Dst: "2001:db8:1::/48"}}}),
			// three prefixes in place, the frame's compared last; DSCP
			// comes after them (its lookup priced, never reached)
			mk("three destination prefixes in place, DSCP", "up", udp,
				Slice{Name: "s1", ID: 1, Port: "a", Rules: []Rule{{Dst: "198.18.9.0/24"}, {Dst: "198.18.8.0/24"}, {DSCP: vid(63)}}},
				Slice{Name: "s2", ID: 2, Port: "b", Rules: []Rule{{Dst: "198.18.0.0/16"}}}),
			mk("source and destination prefixes, rate limit in bits/s", "up", udp,
				Slice{Name: "s1", ID: 1, Port: "a", Rules: []Rule{{Src: "198.18.0.0/24"}}, RateBps: bps},
				Slice{Name: "s2", ID: 2, Port: "b", Rules: []Rule{{Dst: "198.18.9.0/24"}}}),
			changesSkb(mk("return from a VLAN slice, its only one", "a", udp,
				Slice{Name: "s1", ID: 1, Port: "a", Rules: []Rule{{VLAN: vid(20)}}})),
			mk("protocol, port and DSCP, both rate limits", "up", udp,
				Slice{Name: "s1", ID: 1, Port: "a", Rules: []Rule{{Proto: "udp", DPort: 9}}},
				Slice{Name: "s2", ID: 2, Port: "b", Rules: []Rule{{DSCP: vid(0)}}, RateBps: bps, RatePps: pps}),
		}
	}
	return []estimate.Case{
		mk("in-port", "up", udp, Slice{Name: "s1", ID: 1, Port: "a", Rules: []Rule{{InPort: "up"}}}),
		mk("destination prefix", "up", udp, Slice{Name: "s1", ID: 1, Port: "a", Rules: []Rule{{Dst: "198.18.1.0/24"}}}),
		mk("source prefix, DSCP and in-port, rate limit in bits/s", "up", udp,
			Slice{Name: "s1", ID: 1, Port: "a", Rules: []Rule{{Src: "198.18.9.0/24"}}},
			Slice{Name: "s2", ID: 2, Port: "b", Rules: []Rule{{DSCP: vid(63)}}},
			Slice{Name: "s3", ID: 3, Port: "c", Rules: []Rule{{InPort: "up"}}, RateBps: bps}),
		// at TC a test run's frame keeps its tag in the frame (traffic's
		// is in the skb): the pop leaves skb state the next repetition
		// trips on (its runs of repetitions ended in a drop), so a run
		// per call there
		changesSkb(mk("VLAN, both rate limits", "up", tagged(udp, 10),
			Slice{Name: "s1", ID: 1, Port: "a", Rules: []Rule{{VLAN: vid(10)}}, RateBps: bps, RatePps: pps})),
		mk("DSCP", "up", udp, Slice{Name: "s1", ID: 1, Port: "a", Rules: []Rule{{DSCP: vid(0)}}}),
		mk("destination and source prefixes, rate limit in packets/s", "up", udp,
			Slice{Name: "s1", ID: 1, Port: "a", Rules: []Rule{{Dst: "198.18.7.0/24"}}},
			Slice{Name: "s2", ID: 2, Port: "b", Rules: []Rule{{Src: "198.18.0.0/16"}}, RatePps: pps}),
		mk("protocol and port missed, destination prefix", "up", udp,
			Slice{Name: "s1", ID: 1, Port: "a", Rules: []Rule{{Proto: "tcp", DPort: 80}}},
			Slice{Name: "s2", ID: 2, Port: "b", Rules: []Rule{{Dst: "198.18.1.0/24"}}}),
		mk("protocol missed, in-port, rate limit in packets/s", "up", udp,
			Slice{Name: "s1", ID: 1, Port: "a", Rules: []Rule{{Proto: "sctp"}}},
			Slice{Name: "s2", ID: 2, Port: "b", Rules: []Rule{{InPort: "up"}}, RatePps: pps}),
		// four IPv4 prefixes listed in place, the frame's the last compared
		mk("destination prefixes in place, four", "up", udp,
			Slice{Name: "s1", ID: 1, Port: "a", Rules: []Rule{{Dst: "198.18.9.0/28"}, {Dst: "198.18.9.64/27"}, {Dst: "198.18.9.128/26"}}},
			Slice{Name: "s2", ID: 2, Port: "b", Rules: []Rule{{Dst: "198.18.1.0/24"}}}),
		// six prefixes of one length: one hash lookup
		mk("destination prefixes by hash, one length", "up", udp,
			Slice{Name: "s1", ID: 1, Port: "a", Rules: dstRules(5, 24, "198.18.100.0")},
			Slice{Name: "s2", ID: 2, Port: "b", Rules: []Rule{{Dst: "198.18.1.0/24"}}}),
		// 100 prefixes of two lengths: two hash lookups, the frame's the
		// shorter one
		mk("destination prefixes by hash, two lengths", "up", udp,
			Slice{Name: "s1", ID: 1, Port: "a", Rules: dstRules(99, 24, "198.18.100.0")},
			Slice{Name: "s2", ID: 2, Port: "b", Rules: []Rule{{Dst: "198.18.0.0/16"}}}),
		// five prefixes of two lengths: the trie (4 levels)
		mk("destination prefixes in the trie, two lengths", "up", udp,
			Slice{Name: "s1", ID: 1, Port: "a", Rules: dstRules(4, 24, "198.18.100.0")},
			Slice{Name: "s2", ID: 2, Port: "b", Rules: []Rule{{Dst: "198.18.0.0/16"}}}),
		// 200 prefixes of nine lengths (more than a hash lookup per
		// length may take): the trie (9 levels)
		mk("source prefixes in the trie, nine lengths", "up", udp, Slice{Name: "s1", ID: 1, Port: "a", Rules: nineLengths()},
			Slice{Name: "s2", ID: 2, Port: "b", Rules: []Rule{{Src: "198.18.0.0/16"}}}),
		// 11 IPv6 prefixes of one length: one hash lookup
		mk("IPv6 destination prefixes by hash, one length", "up", udp6,
			Slice{Name: "s1", ID: 1, Port: "a", Rules: dst6Rules(10)},
			Slice{Name: "s2", ID: 2, Port: "b", Rules: []Rule{{Dst: "2001:db8:1::/64"}}}),
		// one IPv6 prefix: the trie (2 levels)
		mk("IPv6 source prefix", "up", udp6, Slice{Name: "s1", ID: 1, Port: "a", Rules: []Rule{{Src: "2001:db8::/32"}}}),
		// the full parse alone: rules on the in-port, an IPv6 frame (the
		// model, which has no prefix rules to tell the family by, prices
		// an IPv4 one)
		withUses(mk("in-port, an IPv6 frame", "up", udp6, Slice{Name: "s1", ID: 1, Port: "a", Rules: []Rule{{InPort: "up"}}}),
			termClassify, termParse, termArray),
		mk("return", "a", udp, Slice{Name: "s1", ID: 1, Port: "a", Rules: []Rule{{InPort: "up"}}}),
		changesSkb(mk("return from a VLAN slice", "b", udp,
			Slice{Name: "s1", ID: 1, Port: "a", Rules: []Rule{{InPort: "up"}}},
			Slice{Name: "s2", ID: 2, Port: "b", Rules: []Rule{{VLAN: vid(30)}}})),
	}
}

// changesSkb is c, whose frame leaves the skb changed at TC: the slice's
// VLAN tag put back (into the skb), or taken off.
func changesSkb(c estimate.Case) estimate.Case {
	c.ChangesSkb = true
	return c
}

// withUses is c measured as using each of terms once.
func withUses(c estimate.Case, terms ...string) estimate.Case {
	for _, t := range terms {
		c.Uses = append(c.Uses, estimate.Use{Term: t, N: 1, What: "slicer: " + t})
	}
	return c
}

// dstRules are n destination prefixes of length l from the address from
// up (a case's frame has destination 198.18.1.1, which none may hold).
func dstRules(n, l int, from string) []Rule {
	var rs []Rule
	for _, p := range prefixes4(n, l, from) {
		rs = append(rs, Rule{Dst: p})
	}
	return rs
}

// srcRules are the same as sources (a case frame's is 198.18.0.10).
func srcRules(n, l int, from string) []Rule {
	var rs []Rule
	for _, p := range prefixes4(n, l, from) {
		rs = append(rs, Rule{Src: p})
	}
	return rs
}

// prefixes4 are n adjacent IPv4 prefixes of length l from the address from
// up.
func prefixes4(n, l int, from string) []string {
	var out []string
	a := netip.MustParseAddr(from).As4()
	base := uint32(a[0])<<24 | uint32(a[1])<<16 | uint32(a[2])<<8 | uint32(a[3])
	for i := range n {
		v := base + uint32(i)<<(32-l)
		out = append(out, netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}).String()+"/"+strconv.Itoa(l))
	}
	return out
}

// dst6Rules are n IPv6 /64 destinations in 2001:db8:2::/48.
func dst6Rules(n int) []Rule {
	var rs []Rule
	for i := range n {
		rs = append(rs, Rule{Dst: fmt.Sprintf("2001:db8:2:%x::/64", i)})
	}
	return rs
}

// nineLengths are 198 source prefixes of nine lengths (/17 to /25), none
// holding a case frame's source (198.18.0.10): more lengths than a field's
// hash lookups may try, so the trie.
func nineLengths() []Rule {
	var rs []Rule
	for _, p := range prefixes4(190, 25, "198.18.128.0") {
		rs = append(rs, Rule{Src: p})
	}
	for l := 17; l <= 24; l++ { // 198.19.128.0/17, 198.19.64.0/18 ... 198.19.1.0/24
		rs = append(rs, Rule{Src: prefixes4(2, l, "198.19.0.0")[1]})
	}
	return rs
}
