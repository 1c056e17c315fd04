package stf

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"strings"
	"testing"

	"github.com/edgenf/edgenf/internal/p4"
	"github.com/edgenf/edgenf/internal/p4/p4info"
	"github.com/edgenf/edgenf/internal/p4/tableruntime"
)

// wideSelProgram hashes a 128-bit selector key with the source MAC (22
// bytes: the sliced CRCs and their byte-at-a-time tail) by crc16 over 16
// bits (the division-free remainder) and by crc32 over 32 bits (a
// division).
const wideSelProgram = `
#include <core.p4>
#include <v1model.p4>
header eth_t { bit<48> d; bit<48> s; bit<16> t; }
header w_t { bit<128> a; }
struct H { eth_t eth; w_t w; }
struct M { }
parser P(packet_in p, out H h, inout M m, inout standard_metadata_t sm) {
    state start { p.extract(h.eth); p.extract(h.w); transition accept; }
}
control V(inout H h, inout M m) { apply { } }
control I(inout H h, inout M m, inout standard_metadata_t sm) {
    action fwd(bit<9> port) { sm.egress_spec = port; }
    action drop() { mark_to_drop(sm); }
    action_selector(HashAlgorithm.crc16, 32w64, 32w16) s16;
    action_selector(HashAlgorithm.crc32, 32w64, 32w32) s32;
    table t16 {
        key = { h.eth.t : exact; h.w.a : selector; h.eth.s : selector; }
        actions = { fwd; drop; }
        default_action = drop();
        implementation = s16;
    }
    table t32 {
        key = { h.eth.t : exact; h.w.a : selector; h.eth.s : selector; }
        actions = { fwd; drop; }
        default_action = drop();
        implementation = s32;
    }
    apply {
        if (h.eth.t == 0x1616) { t16.apply(); } else { t32.apply(); }
    }
}
control E(inout H h, inout M m, inout standard_metadata_t sm) { apply { } }
control C(inout H h, inout M m) { apply { } }
control D(packet_out p, in H h) { apply { p.emit(h); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
`

// wideFrame is an Ethernet frame of type et from src carrying the 128-bit
// a (hi, lo); key is the selector's input: a then src, big-endian.
func wideFrame(src uint64, et uint16, hi, lo uint64) (frame, key []byte) {
	b := ethFrame(1, src, et)
	binary.BigEndian.PutUint64(b[14:], hi)
	binary.BigEndian.PutUint64(b[22:], lo)
	key = append(append([]byte{}, b[14:30]...), b[6:12]...)
	return b, key
}

// TestActionSelectorWideKeys: with a 128-bit selector key, a group's
// member is members[crc(keys) % n] for crc16 and crc32 and for group sizes
// that are not powers of two, at both hooks.
func TestActionSelectorWideKeys(t *testing.T) {
	res := compile(t, p4.Options{Path: "widesel.p4", Source: []byte(wideSelProgram)})
	for _, hook := range []string{"xdp", "tc"} {
		t.Run(hook, func(t *testing.T) {
			r := load(t, res, hook)
			for _, c := range []struct {
				profile, table string
				et             uint16
				hash           func([]byte) uint32
			}{
				{"s16", "I.t16", 0x1616, func(b []byte) uint32 { return uint32(crc16(b)) }},
				{"s32", "I.t32", 0x3232, crc32.ChecksumIEEE},
			} {
				for _, n := range []int{1, 3, 5, 7} {
					members := make([]uint32, n)
					for i := range members {
						members[i] = uint32(100*n + i)
						if err := r.RT.SetMember(c.profile, members[i], "fwd", []p4info.Arg{{Name: "port", Value: fmt.Sprint(i + 1)}}); err != nil {
							t.Fatal(err)
						}
					}
					if err := r.RT.SetGroup(c.profile, uint32(n), members); err != nil {
						t.Fatal(err)
					}
					if err := r.RT.AddRefEntry(c.table, []p4info.Match{{Field: "h.eth.t", Value: fmt.Sprint(c.et)}}, p4info.Ref{Group: true, ID: uint32(n)}, 0); err != nil {
						t.Fatal(err)
					}
					seen := map[int]bool{}
					for f := range 64 {
						frame, key := wideFrame(0x020000000000+uint64(f)*104729, c.et, 0x20010db800000000|uint64(f), uint64(f)*0x9e3779b97f4a7c15)
						want := int(c.hash(key)%uint32(n)) + 1
						o, err := r.Send(0, frame)
						if err != nil || o == nil || o.Port != want {
							t.Fatalf("%s, group of %d, flow %d: %+v %v, want port %d (%s(key) %% %d + 1)", c.profile, n, f, o, err, want, c.profile, n)
						}
						seen[o.Port] = true
					}
					if len(seen) != n {
						t.Errorf("%s, group of %d: 64 flows took %d members", c.profile, n, len(seen))
					}
				}
			}
		})
	}
}

// TestActionProfileSlots: members and groups live in array slots the
// control plane allocates; a slot freed and reused never runs for a
// reference to what it held before, a full profile refuses a member and
// keeps the others, and another runtime over the same maps (the daemon's
// after a restart) finds every member and group at its slot.
func TestActionProfileSlots(t *testing.T) {
	res := compile(t, p4.Options{Path: "sel.p4", Source: []byte(selProgram)})
	r := load(t, res, "xdp")
	fwd := func(port int) []p4info.Arg { return []p4info.Arg{{Name: "port", Value: fmt.Sprint(port)}} }
	send := func(what string, want int) {
		t.Helper()
		o, err := r.Send(0, ethFrame(1, 2, 0x0800))
		switch {
		case err != nil:
			t.Fatalf("%s: %v", what, err)
		case want == 0 && o != nil:
			t.Fatalf("%s: out of port %d, want a drop (the default action)", what, o.Port)
		case want != 0 && (o == nil || o.Port != want):
			t.Fatalf("%s: %+v, want port %d", what, o, want)
		}
	}
	if err := r.RT.SetMember("sel", 1, "fwd", fwd(1)); err != nil {
		t.Fatal(err)
	}
	if err := r.RT.SetGroup("sel", 5, []uint32{1}); err != nil {
		t.Fatal(err)
	}
	if err := r.RT.AddRefEntry("I.lb", []p4info.Match{{Field: "h.eth.t", Value: "0x0800"}}, p4info.Ref{Group: true, ID: 5}, 0); err != nil {
		t.Fatal(err)
	}
	send("group 5 of member 1", 1)
	// member 1 goes while group 5 still lists it; member 65 takes its slot
	// (the profile holds 64: 65 % 64 = 1)
	if err := r.RT.DeleteMember("sel", 1); err != nil {
		t.Fatal(err)
	}
	send("member 1 deleted", 0)
	if err := r.RT.SetMember("sel", 65, "fwd", fwd(7)); err != nil {
		t.Fatal(err)
	}
	send("member 65 in member 1's old slot", 0)
	if err := r.RT.SetMember("sel", 1, "fwd", fwd(3)); err != nil {
		t.Fatal(err)
	}
	send("member 1 back in another slot, group 5 not rewritten", 0)
	if err := r.RT.SetGroup("sel", 5, []uint32{1}); err != nil {
		t.Fatal(err)
	}
	send("group 5 rewritten", 3)
	// a reference to what does not exist is refused
	for _, c := range []struct {
		what string
		do   func() error
		want string
	}{
		{"group of a missing member", func() error { return r.RT.SetGroup("sel", 6, []uint32{1, 2}) }, "has no member 2"},
		{"entry to a missing group", func() error {
			return r.RT.AddRefEntry("I.lb", []p4info.Match{{Field: "h.eth.t", Value: "0x0800"}}, p4info.Ref{Group: true, ID: 9}, 0)
		}, "has no group 9"},
		{"default to a missing member", func() error { return r.RT.SetDefaultRef("I.lb", p4info.Ref{ID: 2}) }, "has no member 2"},
	} {
		if err := c.do(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error with %q", c.what, err, c.want)
		}
	}
	send("after refused references", 3)
	// fill the profile: the 65th member is refused, the 64 stay
	for id := uint32(1000); id < 1062; id++ {
		if err := r.RT.SetMember("sel", id, "fwd", fwd(int(id%500))); err != nil {
			t.Fatalf("member %d of 64: %v", id, err)
		}
	}
	if err := r.RT.SetMember("sel", 2000, "fwd", fwd(1)); err == nil || !strings.Contains(err.Error(), "is full") {
		t.Fatalf("a 65th member: %v, want the profile full", err)
	}
	// another runtime over the same maps
	rt2, err := tableruntime.New(res.Info, r.Coll.Maps)
	if err != nil {
		t.Fatal(err)
	}
	ms, err := rt2.Members("sel")
	if err != nil || len(ms) != 64 || ms[65] == 0 || ms[1] == 0 || ms[2000] != 0 {
		t.Fatalf("members read by another runtime: %d %v, want 64 with 1 and 65, without 2000", len(ms), err)
	}
	if gs, err := rt2.Groups("sel"); err != nil || len(gs) != 1 || len(gs[5]) != 1 || gs[5][0] != 1 {
		t.Fatalf("groups read by another runtime: %v %v, want {5: [1]}", gs, err)
	}
	if err := rt2.SetMember("sel", 1, "fwd", fwd(4)); err != nil {
		t.Fatal(err)
	}
	send("member 1 modified by another runtime", 4)
	// freeing one slot makes room again
	if err := rt2.DeleteMember("sel", 1061); err != nil {
		t.Fatal(err)
	}
	if err := rt2.SetMember("sel", 2000, "fwd", fwd(1)); err != nil {
		t.Fatalf("member 2000 after a slot was freed: %v", err)
	}
}
