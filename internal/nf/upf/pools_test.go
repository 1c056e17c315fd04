package upf

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"net/netip"
	"strings"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/datapath"
	"github.com/edgenf/edgenf/internal/nf/upf/model"
)

// A downlink packet to a UE address in one of the cube's UE pools finds
// its list through an array indexed by the address's offset in the pool
// (testCube's pools: 198.19.0.0/16 and 2001:db8:100::/48); other addresses
// keep the hash maps.

// ueKey is the list key of a UE address (an IPv6 address: its /64).
func ueKey(ue string) listKey {
	a := netip.MustParseAddr(ue)
	if a.Is4() {
		b := a.As4()
		return listKey{keyUE4, uint64(binary.NativeEndian.Uint32(b[:]))}
	}
	b := a.As16()
	return listKey{keyUE6, binary.NativeEndian.Uint64(b[:8])}
}

// where says where the kernel has a UE address's list: "slot", "hash",
// "none" or "both".
func (r *rig) where(ue string) string {
	r.t.Helper()
	k := ueKey(ue)
	inSlot := false
	if i, ok := r.ctl.pools.slot(k); ok {
		var li uint32
		var l kUEList
		if err := r.ctl.maps.ueSlots.Lookup(i, &li); err != nil {
			r.t.Fatal(err)
		}
		if err := r.ctl.maps.ueLists.Lookup(li, &l); err != nil {
			r.t.Fatal(err)
		}
		inSlot = li != 0 && l.UE == k.K
	}
	var v kHList
	err := r.ctl.listMap(k).Lookup(listMapKey(k), &v)
	if err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
		r.t.Fatal(err)
	}
	switch inHash := err == nil; {
	case inSlot && inHash:
		return "both"
	case inSlot:
		return "slot"
	case inHash:
		return "hash"
	}
	return "none"
}

// downlinkTEID sends a downlink packet to ue and returns the TEID it was
// tunnelled with (0: not forwarded).
func (r *rig) downlinkTEID(ue string) uint32 {
	r.t.Helper()
	res := r.Run("n6", fromDN(udpPkt(map[bool]string{true: "198.51.100.7", false: "2001:db8:ff::7"}[netip.MustParseAddr(ue).Is4()], ue, 53, 4000, []byte("down"))))
	if res.Port != 0 {
		return 0
	}
	return parseGTP(r.t, res.Data).teid
}

func poolCube(hook datapath.Hook, pools string, sessions ...*model.Session) *cube.Cube {
	c := testCube(hook, sessions...)
	c.Config = json.RawMessage(`{"ue_pools":` + pools + `}`)
	return c
}

func TestPooledUEsTakeTheArray(t *testing.T) {
	for _, hook := range hooks {
		t.Run(string(hook), func(t *testing.T) {
			pooled := basicSession(1, 0x100, "198.19.3.5", "2001:db8:100:7::/64", 0x9001)
			outside := basicSession(2, 0x200, "198.18.200.9", "2001:db8:200:1::/64", 0x9002)
			r := newRig(t, hook, pooled, outside)
			for _, c := range []struct {
				ue    string
				teid  uint32
				where string
			}{
				{"198.19.3.5", 0x9001, "slot"}, {"2001:db8:100:7::1", 0x9001, "slot"},
				{"198.18.200.9", 0x9002, "hash"}, {"2001:db8:200:1::9", 0x9002, "hash"},
			} {
				if got := r.downlinkTEID(c.ue); got != c.teid {
					t.Fatalf("downlink to %s: TEID %#x, want %#x; counters %v", c.ue, got, c.teid, r.nonZero())
				}
				if w := r.where(c.ue); w != c.where {
					t.Fatalf("the list of %s is in %s, want %s", c.ue, w, c.where)
				}
			}
			// An address of the pool no session has: no session.
			before := r.stat("drop_no_session")
			if got := r.downlinkTEID("198.19.3.6"); got != 0 || r.stat("drop_no_session") != before+1 {
				t.Fatalf("downlink to a free pool address: TEID %#x, drop_no_session %d", got, r.stat("drop_no_session")-before)
			}
			r.checkHeads()
		})
	}
}

// A slot is checked: one that leads to another address's list (a stale
// pool table, a half-written slot) or to none is a miss, and the hash maps
// answer.
func TestPoolSlotOfAnotherAddressIsAMiss(t *testing.T) {
	for _, hook := range hooks {
		t.Run(string(hook), func(t *testing.T) {
			a := basicSession(1, 0x100, "198.19.3.5", "", 0x9001)
			b := basicSession(2, 0x200, "198.19.3.6", "", 0x9002)
			r := newRig(t, hook, a, b)
			ka, kb := ueKey("198.19.3.5"), ueKey("198.19.3.6")
			sb, _ := r.ctl.pools.slot(kb)
			la, lb := r.ctl.sessions[1].pooled[ka], r.ctl.sessions[2].pooled[kb]
			var listB kUEList
			if err := r.ctl.maps.ueLists.Lookup(lb, &listB); err != nil {
				t.Fatal(err)
			}
			// b's list in the hash map, and its slot leading to a's.
			if err := r.ctl.maps.ue4.Put(uint32(kb.K), &kHList{List: listB.List}); err != nil {
				t.Fatal(err)
			}
			if err := r.ctl.maps.ueSlots.Put(sb, la); err != nil {
				t.Fatal(err)
			}
			if got := r.downlinkTEID("198.19.3.6"); got != 0x9002 {
				t.Fatalf("downlink to b through a slot leading to a's list: TEID %#x, want b's 0x9002", got)
			}
			// b's slot empty.
			if err := r.ctl.maps.ueSlots.Put(sb, uint32(0)); err != nil {
				t.Fatal(err)
			}
			if got := r.downlinkTEID("198.19.3.6"); got != 0x9002 {
				t.Fatalf("downlink to b through an empty slot: TEID %#x, want 0x9002", got)
			}
			if got := r.downlinkTEID("198.19.3.5"); got != 0x9001 {
				t.Fatalf("downlink to a: TEID %#x, want 0x9001", got)
			}
		})
	}
}

// Sessions come and go in their slots: a modification switches the slot
// to a new list, a duplicate address is refused, a deletion empties the
// slot, and a restarted daemon adopts the slots.
func TestPoolSlotsFollowSessions(t *testing.T) {
	for _, hook := range hooks {
		t.Run(string(hook), func(t *testing.T) { poolSlotsFollowSessions(t, hook) })
	}
}

func poolSlotsFollowSessions(t *testing.T, hook datapath.Hook) {
	s := basicSession(1, 0x100, "198.19.3.5", "2001:db8:100:7::/64", 0x9001)
	r := newRig(t, hook, s)
	k := ueKey("198.19.3.5")
	first := r.ctl.sessions[1].pooled[k]
	s.FARs[1].OuterHeader.TEID = 0x9011
	if err := r.Update(testCube(hook, s)); err != nil {
		t.Fatal(err)
	}
	if got := r.downlinkTEID("198.19.3.5"); got != 0x9011 {
		t.Fatalf("after the gNB's TEID changed: downlink TEID %#x, want 0x9011", got)
	}
	if next := r.ctl.sessions[1].pooled[k]; next == first || next == 0 {
		t.Fatalf("the changed list was written in place (index %d, was %d)", next, first)
	}
	r.checkHeads()

	dup := basicSession(2, 0x200, "198.19.3.5", "", 0x9002)
	err := r.Update(testCube(hook, s, dup))
	if err == nil || !strings.Contains(err.Error(), "UE address 198.19.3.5 is already used by session 1") {
		t.Fatalf("a second session with the same UE address: %v", err)
	}
	if got := r.downlinkTEID("198.19.3.5"); got != 0x9011 {
		t.Fatalf("after the refused duplicate: downlink TEID %#x, want 0x9011", got)
	}
	// (the engine puts the cube back as it was)
	if err := r.Update(testCube(hook, s)); err != nil {
		t.Fatal(err)
	}

	r.restart()
	if r.ctl.sessions[1].pooled[k] == 0 {
		t.Fatal("the restarted controller did not adopt the slot")
	}
	if got := r.downlinkTEID("198.19.3.5"); got != 0x9011 {
		t.Fatalf("after a restart: downlink TEID %#x, want 0x9011", got)
	}
	if got := r.downlinkTEID("2001:db8:100:7::1"); got != 0x9011 {
		t.Fatalf("after a restart: IPv6 downlink TEID %#x, want 0x9011", got)
	}

	if err := r.Update(testCube(hook)); err != nil {
		t.Fatal(err)
	}
	for _, ue := range []string{"198.19.3.5", "2001:db8:100:7::1"} {
		if w := r.where(ue); w != "none" {
			t.Fatalf("after the deletion the list of %s is in %s", ue, w)
		}
		if got := r.downlinkTEID(ue); got != 0 {
			t.Fatalf("after the deletion: downlink to %s tunnelled with TEID %#x", ue, got)
		}
	}
	if r.ctl.ueLists.used != 0 {
		t.Fatalf("%d list indexes still in use", r.ctl.ueLists.used)
	}
}

// Pools that would move a session's list out of its slot are refused with
// the address and session, and nothing changes; pools that only add slots
// are taken, and a session's list in a hash map moves into its new slot.
func TestPoolChangesKeepSessionsInTheirSlots(t *testing.T) {
	for _, hook := range hooks {
		t.Run(string(hook), func(t *testing.T) { poolChangesKeepSessionsInTheirSlots(t, hook) })
	}
}

func poolChangesKeepSessionsInTheirSlots(t *testing.T, hook datapath.Hook) {
	v4 := basicSession(1, 0x100, "198.19.3.5", "", 0x9001)
	v6 := basicSession(2, 0x200, "", "2001:db8:100:7::/64", 0x9002)
	outside := basicSession(3, 0x300, "198.18.200.9", "", 0x9003)
	const pools = `[{"prefix":"198.19.0.0/17"},{"prefix":"2001:db8:100::/48"}]`
	r := newRigOf(t, poolCube(hook, pools, v4, v6, outside))
	table := r.ctl.pools
	for _, c := range []struct{ pools, want string }{
		{`[{"prefix":"198.19.0.0/24"},{"prefix":"2001:db8:100::/48"}]`, "UE address 198.19.3.5 of session 1 is in a pool"},
		{`[{"prefix":"198.19.0.0/17"}]`, "UE prefix 2001:db8:100:7::/64 of session 2 is in a pool"},
		// the IPv4 pool grows: the IPv6 pool's slots would move
		{`[{"prefix":"198.19.0.0/16"},{"prefix":"2001:db8:100::/48"}]`, "UE prefix 2001:db8:100:7::/64 of session 2"},
		{`[{"prefix":"2001:db8:100::/48"},{"prefix":"198.19.0.0/17"}]`, "of session"},
	} {
		err := r.Update(poolCube(hook, c.pools, v4, v6, outside))
		var ce *cube.FieldError
		if err == nil || !strings.Contains(err.Error(), c.want) || !errors.As(err, &ce) || ce.Field != "ue_pools" || !errors.Is(ce.Kind, cube.ErrConflict) {
			t.Fatalf("pools %s: %v, want a conflict on ue_pools naming %q", c.pools, err, c.want)
		}
		var k kPools
		if r.ctl.pools != table || r.ctl.maps.pools.Lookup(uint32(0), &k) != nil || k != table {
			t.Fatalf("pools %s: the refused pools were taken", c.pools)
		}
		if r.downlinkTEID("198.19.3.5") != 0x9001 || r.downlinkTEID("2001:db8:100:7::1") != 0x9002 {
			t.Fatalf("pools %s: downlink broken after the refusal", c.pools)
		}
		if err := r.Update(poolCube(hook, pools, v4, v6, outside)); err != nil {
			t.Fatal(err)
		}
	}
	// A new pool after the others holds the hashed session's address.
	grown := `[{"prefix":"198.19.0.0/17"},{"prefix":"2001:db8:100::/48"},{"prefix":"198.18.200.0/24"}]`
	if err := r.Update(poolCube(hook, grown, v4, v6, outside)); err != nil {
		t.Fatal(err)
	}
	if w := r.where("198.18.200.9"); w != "slot" {
		t.Fatalf("after its pool came, the list of 198.18.200.9 is in %s", w)
	}
	for ue, teid := range map[string]uint32{"198.19.3.5": 0x9001, "2001:db8:100:7::1": 0x9002, "198.18.200.9": 0x9003} {
		if got := r.downlinkTEID(ue); got != teid {
			t.Fatalf("after the new pool: downlink to %s TEID %#x, want %#x", ue, got, teid)
		}
	}
	// and is now a pool with a session in it
	if err := r.Update(poolCube(hook, pools, v4, v6, outside)); err == nil || !strings.Contains(err.Error(), "UE address 198.18.200.9 of session 3") {
		t.Fatalf("removing the pool of session 3: %v", err)
	}
}

func TestPoolLayout(t *testing.T) {
	pl := func(s ...string) []model.UEPool {
		var out []model.UEPool
		for _, p := range s {
			out = append(out, model.UEPool{Prefix: p})
		}
		return out
	}
	k := poolLayout(pl("198.19.0.0/16", "2001:db8:100::/48", "10.0.0.0/8"), model.DefaultMaxSessions)
	if k.N4 != 1 || k.N6 != 1 || k.V4[0] != (kPool{Base: 0xc6130000, Size: 65536, First: 0}) ||
		k.V6[0] != (kPool{Base: 0x20010db801000000, Size: 65536, First: 65536}) {
		t.Fatalf("two pools that fill the slots and one more: %+v", k)
	}
	// a pool larger than the slots is indexed up to them
	k = poolLayout(pl("10.0.0.0/8", "2001:db8::/32"), model.DefaultMaxSessions)
	if k.N4 != 1 || k.V4[0].Size != model.DefaultMaxSessions || k.N6 != 0 {
		t.Fatalf("a /8 then a /32: %+v", k)
	}
	if i, ok := k.slot(ueKey("10.1.255.255")); !ok || i != 131071 {
		t.Fatalf("the last indexed address: slot %d %v", i, ok)
	}
	if _, ok := k.slot(ueKey("10.2.0.0")); ok {
		t.Fatal("an address past the indexed part has a slot")
	}
	// at most poolsMax pools per family
	var many []string
	for i := range poolsMax + 1 {
		many = append(many, netip.AddrFrom4([4]byte{10, byte(i), 0, 0}).String()+"/24")
	}
	k = poolLayout(pl(many...), model.DefaultMaxSessions)
	if k.N4 != poolsMax {
		t.Fatalf("%d pools indexed, want %d", k.N4, poolsMax)
	}
	if _, ok := k.slot(ueKey("10.8.0.1")); ok {
		t.Fatal("the ninth pool is indexed")
	}
}
