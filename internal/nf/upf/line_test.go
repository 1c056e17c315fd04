package upf

import (
	"encoding/json"
	"maps"
	"slices"
	"testing"

	"github.com/edgenf/edgenf/internal/bpfmap"
	"github.com/edgenf/edgenf/internal/datapath"
	"github.com/edgenf/edgenf/internal/nf/upf/model"
)

// A list carries a copy of its first rule's line: a packet whose first
// rule matches never reads upf_rules. The copy must follow every change:
// a FAR's new outer header, a new first rule, the old one back.

// checkHeads fails unless every list in the kernel has, as its head, the
// line of its first rule and its length, and no rule index beyond its
// length.
func (r *rig) checkHeads() {
	r.t.Helper()
	m := &r.ctl.maps
	check := func(what string, v kHList) {
		if v.List.Head.N == 0 || v.List.Head.N > listMax {
			r.t.Fatalf("%s: list of %d rules", what, v.List.Head.N)
		}
		var rule kRule
		if err := m.rules.Lookup(v.List.Rule, &rule); err != nil {
			r.t.Fatalf("%s: rule %d: %v", what, v.List.Rule, err)
		}
		want := rule.kLine
		want.N = v.List.Head.N
		if v.List.Head != want || rule.N != 0 {
			r.t.Fatalf("%s: head %+v, first rule's line %+v", what, v.List.Head, rule.kLine)
		}
		for i := int(v.List.Head.N) - 1; i < len(v.More.Rule); i++ {
			if v.More.Rule[i] != 0 {
				r.t.Fatalf("%s: rule %d beyond the list's length %d", what, v.More.Rule[i], v.List.Head.N)
			}
		}
	}
	lists := 0
	if err := bpfmap.Each(m.teid, func(k uint32, v kHList) bool { lists++; check("TEID list", v); return true }); err != nil {
		r.t.Fatal(err)
	}
	if err := bpfmap.Each(m.ue4, func(k uint32, v kHList) bool { lists++; check("UE IPv4 list", v); return true }); err != nil {
		r.t.Fatal(err)
	}
	if err := bpfmap.Each(m.ue6, func(k uint64, v kHList) bool { lists++; check("UE IPv6 list", v); return true }); err != nil {
		r.t.Fatal(err)
	}
	if err := bpfmap.Each(m.ueSlots, func(i uint32, li uint32) bool {
		if li == 0 {
			return true
		}
		var v kUEList
		if err := m.ueLists.Lookup(li, &v); err != nil {
			r.t.Fatalf("slot %d: list %d: %v", i, li, err)
		}
		l, err := slotList(m.ueMore, li, v.List)
		if err != nil {
			r.t.Fatal(err)
		}
		lists++
		check("pooled UE list", l)
		return true
	}); err != nil {
		r.t.Fatal(err)
	}
	if lists == 0 {
		r.t.Fatal("no lists in the kernel")
	}
}

func TestListHeadFollowsItsFirstRule(t *testing.T) {
	for _, hook := range hooks {
		t.Run(string(hook), func(t *testing.T) {
			s := basicSession(1, 0x100, "198.19.0.5", "2001:db8:100:5::/64", 0x9000)
			r := newRig(t, hook, s)
			update := func() {
				t.Helper()
				if err := r.Update(testCube(hook, s)); err != nil {
					t.Fatal(err)
				}
				r.checkHeads()
			}
			video := udpPkt("198.51.100.20", "198.19.0.5", 5050, 3000, []byte("video"))
			other := udpPkt("198.51.100.7", "198.19.0.5", 53, 4000, []byte("answer"))
			dlTo := func(name string, pkt []byte, teid uint32, qfi uint8) {
				t.Helper()
				res := r.Run("n6", fromDN(pkt))
				if res.Port != 0 {
					t.Fatalf("%s: not forwarded; counters %v", name, r.nonZero())
				}
				if g := parseGTP(t, res.Data); g.teid != teid || g.qfi != qfi {
					t.Fatalf("%s: TEID %#x QFI %d, want %#x %d", name, g.teid, g.qfi, teid, qfi)
				}
			}
			r.checkHeads()
			dlTo("first", other, 0x9000, 9)

			// The gNB's TEID and the outer ToS change: a new rule slot,
			// and a list whose head carries the new outer header.
			tos := uint8(0xb8)
			s.FARs[1].OuterHeader.TEID = 0x9abc
			s.FARs[1].ToS = &tos
			update()
			res := r.Run("n6", fromDN(other))
			if res.Port != 0 || parseGTP(t, res.Data).teid != 0x9abc || res.Data[15] != tos {
				t.Fatalf("after the FAR's change: port %d, frame %x", res.Port, res.Data)
			}

			// A PDR of higher precedence on the same UE becomes the head;
			// packets it does not take go on to the old rule, now second.
			s.PDRs = append(s.PDRs, model.PDR{ID: 3, Precedence: 10, Source: "core", UEIPv4: "198.19.0.5", FAR: 3,
				SDF: []model.SDF{{FlowDescription: "permit out 17 from 198.51.100.0/24 5000-5100 to assigned"}}})
			s.FARs = append(s.FARs, model.FAR{ID: 3, Action: []string{"forw"}, Destination: "access",
				OuterHeader: &model.OuterHeader{TEID: 0x9555, Address: "198.18.1.2"}})
			update()
			dlTo("video, first rule", video, 0x9555, 0)
			dlTo("other, second rule", other, 0x9abc, 9)

			// Removed again: the old rule is the head once more.
			s.PDRs, s.FARs = s.PDRs[:2], s.FARs[:2]
			update()
			dlTo("video, one rule again", video, 0x9abc, 9)

			// Every downlink packet counted once, in URR 1 (the video
			// packet through PDR 3 has no URR).
			if u := r.used(1, 1); u.Pkts[1] != 4 {
				t.Fatalf("URR 1 counted %d downlink packets, want 4", u.Pkts[1])
			}
		})
	}
}

// A QER that neither gates nor polices (a QFI for the QoS flow, the common
// case) is not read per packet: the rule's line carries its QFI. Once it
// gates, the rule reads it again.
func TestQFIOnlyQERIsNotRead(t *testing.T) {
	for _, hook := range hooks {
		t.Run(string(hook), func(t *testing.T) {
			s := basicSession(1, 0x100, "198.19.0.5", "", 0x9000) // downlink QER 1: QFI 9
			r := newRig(t, hook, s)
			pkt := fromDN(udpPkt("198.51.100.7", "198.19.0.5", 53, 4000, []byte("answer")))
			update := func() {
				t.Helper()
				if err := r.Update(testCube(hook, s)); err != nil {
					t.Fatal(err)
				}
				r.checkHeads()
			}
			line := func(wantQERs int, mark uint8) {
				t.Helper()
				v := r.ctl.sessions[1].rules[ruleKey{PDR: 2}].v
				n := 0
				for _, q := range v.QER {
					if q != 0 {
						n++
					}
				}
				if n != wantQERs || v.Mark != mark {
					t.Fatalf("downlink rule reads %d QERs and marks QFI %d, want %d and %d", n, v.Mark, wantQERs, mark)
				}
			}
			marked := func(qfi uint8) {
				t.Helper()
				res := r.Run("n6", pkt)
				if res.Port != 0 {
					t.Fatalf("not forwarded; counters %v", r.nonZero())
				}
				if g := parseGTP(t, res.Data); g.qfi != qfi {
					t.Fatalf("QFI %d, want %d", g.qfi, qfi)
				}
			}
			line(0, 9)
			marked(9)

			// The gate closes: the rule reads the QER again.
			s.QERs[0].GateDL = "closed"
			update()
			line(1, 9)
			if res := r.Run("n6", pkt); res.Port != -1 || r.stat("drop_gate") != 1 {
				t.Fatalf("gate closed, packet forwarded (%d) or not counted", res.Port)
			}

			// Open again with another QFI: not read, the new QFI marked.
			s.QERs[0].GateDL = ""
			s.QERs[0].QFI = 5
			update()
			line(0, 5)
			marked(5)

			// A policing QER without a QFI before a QFI-only one: the
			// first is read, the second's QFI marks.
			s.QERs = []model.QER{{ID: 2, MBRDL: 1000000}, {ID: 1, QFI: 7}}
			s.PDRs[1].QERs = []uint32{2, 1}
			update()
			line(1, 7)
			marked(7)
		})
	}
}

// A list in a slot array (a chosen TEID's, a pooled UE address's) is one
// cache line: its head and first rule's index. Its rules after the first
// are in the array's side array at the same index, read only when the
// first does not match: the second rule (tried inline) and the ones after
// it (in bpf_loop) are found there, before and after a restart adopts the
// lists (reading the side arrays back).
func TestListsInSlotsKeepTheirOtherRulesBeside(t *testing.T) {
	for _, hook := range hooks {
		t.Run(string(hook), func(t *testing.T) {
			cfg := &model.Config{TEIDRange: "1-0xffffffff"}
			base, _ := cfg.ChosenTEIDs()
			chosen := base + 5 // slot 5
			s := basicSession(1, chosen, "198.19.3.5", "", 0x9000)
			// Uplink and downlink lists of four rules each: three drop
			// their port, in precedence order, the basic PDR takes the
			// rest. A one-rule list beside them: session 2.
			for i, port := range []string{"7777", "7778", "7779"} {
				prec := uint32(10 * (i + 1))
				s.PDRs = append(s.PDRs,
					model.PDR{ID: uint16(10 + i), Precedence: prec, Source: "access", FTEID: &model.FTEID{TEID: chosen},
						OuterHeaderRemoval: "gtp-u", UEIPv4: "198.19.3.5", FAR: 3,
						SDF: []model.SDF{{FlowDescription: "permit out 17 from any " + port + " to assigned"}}},
					model.PDR{ID: uint16(20 + i), Precedence: prec, Source: "core", UEIPv4: "198.19.3.5", FAR: 3,
						SDF: []model.SDF{{FlowDescription: "permit out 17 from any " + port + " to assigned"}}})
			}
			s.FARs = append(s.FARs, model.FAR{ID: 3, Action: []string{"drop"}})
			one := basicSession(2, chosen+1, "198.19.3.6", "", 0x9001)
			c := testCube(hook, s, one)
			c.Config = json.RawMessage(`{"teid_range":"1-0xffffffff","ue_pools":[{"prefix":"198.19.0.0/16"}]}`)
			r := newRigOf(t, c)

			sl := r.slotOf(5)
			var more kMore
			if err := r.ctl.maps.teidMore.Lookup(uint32(5), &more); err != nil {
				t.Fatal(err)
			}
			if sl.TEID != teidKey(chosen) || sl.List.Head.N != 4 || more.Rule[0] == 0 || more.Rule[2] == 0 || more.Rule[3] != 0 {
				t.Fatalf("slot 5: TEID %#x, %d rules, the others beside it %v", teidKey(sl.TEID), sl.List.Head.N, more.Rule[:4])
			}
			if w := r.where("198.19.3.5"); hook == datapath.XDP && w != "slot" {
				t.Fatalf("the pooled UE's list is in %s", w)
			}
			check := func(when string) {
				t.Helper()
				for _, c := range []struct {
					port    uint16
					forward bool
				}{{7777, false}, {7778, false}, {7779, false}, {53, true}} {
					drops := r.stat("drop_far")
					up := r.Run("n3", gtp(false, chosen, 0, udpPkt("198.19.3.5", "198.51.100.7", 4000, c.port, []byte("u")))).Port
					down := r.downlinkTEID("198.19.3.5") // from port 53: the last rule
					if c.forward {
						if up != 1 || down != 0x9000 {
							t.Fatalf("%s: port %d: uplink to port %d, downlink TEID %#x", when, c.port, up, down)
						}
						continue
					}
					if up != -1 || r.stat("drop_far") != drops+1 {
						t.Fatalf("%s: uplink to port %d: port %d, drop_far +%d", when, c.port, up, r.stat("drop_far")-drops)
					}
					drops = r.stat("drop_far")
					res := r.Run("n6", fromDN(udpPkt("198.51.100.7", "198.19.3.5", c.port, 4000, []byte("d"))))
					if res.Port != -1 || r.stat("drop_far") != drops+1 {
						t.Fatalf("%s: downlink from port %d: port %d, drop_far +%d", when, c.port, res.Port, r.stat("drop_far")-drops)
					}
				}
				if p := r.Run("n3", gtp(false, chosen+1, 0, udpPkt("198.19.3.6", "198.51.100.7", 4000, 53, []byte("u")))).Port; p != 1 {
					t.Fatalf("%s: the one-rule list's uplink: port %d", when, p)
				}
				if got := r.downlinkTEID("198.19.3.6"); got != 0x9001 {
					t.Fatalf("%s: the one-rule list's downlink: TEID %#x", when, got)
				}
				r.checkHeads()
			}
			check("written")
			lists := maps.Clone(r.ctl.sessions[1].lists)
			r.restart()
			if !maps.EqualFunc(lists, r.ctl.sessions[1].lists, slices.Equal) {
				t.Fatalf("restart adopted lists %v, want %v", r.ctl.sessions[1].lists, lists)
			}
			check("adopted")
		})
	}
}
