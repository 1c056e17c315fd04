package upf

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/datapath"
	"github.com/edgenf/edgenf/internal/nf/upf/model"
)

// slotOf reads a upf_teid_slots entry.
func (r *rig) slotOf(sl uint32) kTEIDSlot {
	r.t.Helper()
	var v kTEIDSlot
	if err := r.ctl.maps.teidSlots.Lookup(sl, &v); err != nil {
		r.t.Fatal(err)
	}
	return v
}

func (r *rig) inHash(teid uint32) bool {
	var v kHList
	return r.ctl.maps.teid.Lookup(teidKey(teid), &v) == nil
}

// uplink sends one G-PDU of UE 198.19.0.5 to teid: the port it leaves by
// (-1: none).
func (r *rig) uplink(teid uint32) int {
	return r.Run("n3", gtp(false, teid, 9, udpPkt("198.19.0.5", "198.51.100.7", 4000, 53, []byte("up")))).Port
}

// TEIDs of the chosen range (the upper half of the cube's TEID range) are
// found by their slot in upf_teid_slots, which holds the full TEID: the
// same slot's TEID of another generation misses, a TEID below the range
// goes to the hash, a change of the session keeps it forwarding, a deletion
// closes the slot, and a restart adopts it.
func TestChosenTEIDsFoundByTheirSlot(t *testing.T) {
	for _, hook := range hooks {
		t.Run(string(hook), func(t *testing.T) {
			cfg := &model.Config{TEIDRange: "1-0xffffffff"}
			base, n := cfg.ChosenTEIDs()
			if base != 0x80000001 || n != 0x7fffffff {
				t.Fatalf("chosen range %#x+%#x", base, n)
			}
			chosen := base + 5
			stale := chosen + model.DefaultMaxSessions // slot 5, the next generation
			s := basicSession(1, chosen, "198.19.0.5", "", 0x9000)
			r := newRig(t, hook, s, basicSession(2, 0x100, "198.19.0.6", "", 0x9001))

			if v := r.slotOf(5); v.TEID != teidKey(chosen) || v.List.Head.N != 1 {
				t.Fatalf("slot 5 holds TEID %#x, %d rules", teidKey(v.TEID), v.List.Head.N)
			}
			if r.inHash(chosen) || !r.inHash(0x100) {
				t.Fatalf("hash: chosen TEID %v, TEID 0x100 %v", r.inHash(chosen), r.inHash(0x100))
			}
			if p := r.uplink(chosen); p != 1 {
				t.Fatalf("chosen TEID: port %d, want n6; %v", p, r.nonZero())
			}
			noTEID := r.stat("no_teid")
			if p := r.uplink(stale); p != -1 || r.stat("no_teid") != noTEID+1 {
				t.Fatalf("another generation of the slot: port %d, no_teid +%d", p, r.stat("no_teid")-noTEID)
			}
			if p := r.Run("n3", gtp(false, 0x100, 9, udpPkt("198.19.0.6", "198.51.100.7", 4000, 53, nil))).Port; p != 1 {
				t.Fatalf("TEID below the chosen range: port %d", p)
			}

			// Another session may not take the slot with another TEID.
			err := r.Update(testCube(hook, s, basicSession(3, stale, "198.19.0.7", "", 0x9002)))
			if !errors.Is(err, cube.ErrConflict) {
				t.Fatalf("a second TEID in slot 5: %v", err)
			}
			if v := r.slotOf(5); v.TEID != teidKey(chosen) {
				t.Fatalf("a refused session changed slot 5: TEID %#x", teidKey(v.TEID))
			}

			// A change of the uplink rule rewrites the slot (through the
			// hash) and leaves the hash as it was.
			s.PDRs[0].SDF = []model.SDF{{FlowDescription: "permit out 17 from any to assigned"}}
			if err := r.Update(testCube(hook, s)); err != nil {
				t.Fatal(err)
			}
			if v := r.slotOf(5); v.TEID != teidKey(chosen) || v.List.Head.SDF == 0 {
				t.Fatalf("changed session: slot TEID %#x, SDF %d", teidKey(v.TEID), v.List.Head.SDF)
			}
			if r.inHash(chosen) {
				t.Fatal("the chosen TEID stayed in the hash after the change")
			}
			if p := r.uplink(chosen); p != 1 {
				t.Fatalf("after the change: port %d", p)
			}

			// A restart adopts the slot: nothing rewritten, still
			// forwarding, the slot still taken.
			r.restart()
			if got := r.ctl.slotTEID[5]; got != chosen {
				t.Fatalf("restart: slot 5 owned by %#x", got)
			}
			if !r.ctl.TEIDInUse(stale) || r.ctl.TEIDInUse(chosen+1) {
				t.Fatalf("after the restart: slot 5 in use %v, slot 6 in use %v", r.ctl.TEIDInUse(stale), r.ctl.TEIDInUse(chosen+1))
			}
			if p := r.uplink(chosen); p != 1 {
				t.Fatalf("after the restart: port %d", p)
			}

			// With sessions, the chosen half may not move.
			moved := testCube(hook, s)
			moved.Config = json.RawMessage(`{"teid_range":"0x1000-0xffffffff"}`)
			if err := r.Update(moved); !errors.Is(err, cube.ErrConflict) || !strings.Contains(err.Error(), "moves the half") {
				t.Fatalf("teid_range moving the chosen half under a session: %v", err)
			}

			// Deleted: the slot is closed, the TEID unknown.
			if err := r.Update(testCube(hook)); err != nil {
				t.Fatal(err)
			}
			if v := r.slotOf(5); v.TEID != 0 {
				t.Fatalf("deleted session's slot has TEID %#x", teidKey(v.TEID))
			}
			noTEID = r.stat("no_teid")
			if p := r.uplink(chosen); p != -1 || r.stat("no_teid") != noTEID+1 {
				t.Fatalf("deleted chosen TEID: port %d", p)
			}
			if r.ctl.TEIDInUse(stale) {
				t.Fatal("slot 5 still in use after the deletion")
			}
		})
	}
}

// A daemon killed half-way through changing a chosen TEID's list leaves it
// in the hash too; the next one takes it out (else it would answer for the
// TEID once its slot is closed).
func TestRestartDropsAChosenTEIDLeftInTheHash(t *testing.T) {
	base, _ := (&model.Config{TEIDRange: "1-0xffffffff"}).ChosenTEIDs()
	s := basicSession(1, base+7, "198.19.0.5", "", 0x9000)
	r := newRig(t, datapath.XDP, s)
	v := kHList{List: r.slotOf(7).List}
	if err := r.ctl.maps.teid.Put(teidKey(base+7), &v); err != nil {
		t.Fatal(err)
	}
	r.restart()
	if r.inHash(base + 7) {
		t.Fatal("the chosen TEID is still in the hash")
	}
	if err := r.Update(testCube(datapath.XDP)); err != nil {
		t.Fatal(err)
	}
	if p := r.uplink(base + 7); p != -1 {
		t.Fatalf("deleted session's chosen TEID forwarded to port %d", p)
	}
}
