package upf

import (
	"testing"

	"github.com/edgenf/edgenf/internal/bpfmap"
	"github.com/edgenf/edgenf/internal/nf/upf/model"
)

// A list carries a copy of its first rule's line: a packet whose first
// rule matches never reads upf_rules. The copy must follow every change:
// a FAR's new outer header, a new first rule, the old one back.

// checkHeads fails unless every list in the kernel has, as its head, the
// line of its first rule and its length.
func (r *rig) checkHeads() {
	r.t.Helper()
	m := &r.ctl.maps
	check := func(what string, v kList) {
		if v.Head.N == 0 || v.Head.N > listMax {
			r.t.Fatalf("%s: list of %d rules", what, v.Head.N)
		}
		var rule kRule
		if err := m.rules.Lookup(v.Rule[0], &rule); err != nil {
			r.t.Fatalf("%s: rule %d: %v", what, v.Rule[0], err)
		}
		want := rule.kLine
		want.N = v.Head.N
		if v.Head != want || rule.N != 0 {
			r.t.Fatalf("%s: head %+v, first rule's line %+v", what, v.Head, rule.kLine)
		}
		for i := int(v.Head.N); i < listMax; i++ {
			if v.Rule[i] != 0 {
				r.t.Fatalf("%s: rule %d beyond the list's length %d", what, v.Rule[i], v.Head.N)
			}
		}
	}
	lists := 0
	if err := bpfmap.Each(m.teid, func(k uint32, v kList) bool { lists++; check("TEID list", v); return true }); err != nil {
		r.t.Fatal(err)
	}
	if err := bpfmap.Each(m.ue4, func(k uint32, v kList) bool { lists++; check("UE IPv4 list", v); return true }); err != nil {
		r.t.Fatal(err)
	}
	if err := bpfmap.Each(m.ue6, func(k uint64, v kList) bool { lists++; check("UE IPv6 list", v); return true }); err != nil {
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
		lists++
		check("pooled UE list", v.List)
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
