package stf

import (
	"context"
	"encoding/binary"
	"fmt"
	"strings"
	"testing"

	"github.com/edgenf/edgenf/internal/p4"
	"github.com/edgenf/edgenf/internal/p4/p4info"
)

// selProgram forwards by an action selector hashing the source MAC
// (crc16), and by an action profile without selector.
const selProgram = `
#include <core.p4>
#include <v1model.p4>
header eth_t { bit<48> d; bit<48> s; bit<16> t; }
struct H { eth_t eth; }
struct M { }
parser P(packet_in p, out H h, inout M m, inout standard_metadata_t sm) {
    state start { p.extract(h.eth); transition accept; }
}
control V(inout H h, inout M m) { apply { } }
control I(inout H h, inout M m, inout standard_metadata_t sm) {
    action fwd(bit<9> port) { sm.egress_spec = port; }
    action drop() { mark_to_drop(sm); }
    @max_group_size(4)
    action_selector(HashAlgorithm.crc16, 32w64, 32w16) sel;
    table lb {
        key = { h.eth.t : exact; h.eth.s : selector; }
        actions = { fwd; drop; }
        default_action = drop();
        implementation = sel;
    }
    table byDst {
        key = { h.eth.d : exact; }
        actions = { fwd; drop; }
        default_action = drop();
        implementation = action_profile(32w16);
    }
    apply {
        if (h.eth.t == 0x0800) { lb.apply(); } else { byDst.apply(); }
    }
}
control E(inout H h, inout M m, inout standard_metadata_t sm) { apply { } }
control C(inout H h, inout M m) { apply { } }
control D(packet_out p, in H h) { apply { p.emit(h); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
`

// crc16 is CRC-16/ARC, v1model's HashAlgorithm.crc16, written out here
// to check the data path against.
func crc16(b []byte) uint16 {
	var c uint16
	for _, x := range b {
		c ^= uint16(x)
		for range 8 {
			if c&1 != 0 {
				c = c>>1 ^ 0xa001
			} else {
				c >>= 1
			}
		}
	}
	return c
}

func ethFrame(dst, src uint64, et uint16) []byte {
	b := make([]byte, 60)
	var x [8]byte
	binary.BigEndian.PutUint64(x[:], dst)
	copy(b[0:6], x[2:])
	binary.BigEndian.PutUint64(x[:], src)
	copy(b[6:12], x[2:])
	binary.BigEndian.PutUint16(b[12:], et)
	return b
}

// TestActionSelectorSpread: a group's member is members[crc16(selector
// keys) % n] for every flow, flows spread over all members, and a flow
// sticks to its member; at both hooks.
func TestActionSelectorSpread(t *testing.T) {
	res := compile(t, p4.Options{Path: "sel.p4", Source: []byte(selProgram)})
	if n := len(res.Info.ActionProfiles); n != 2 {
		t.Fatalf("P4Info action profiles: %d, want 2", n)
	}
	for _, hook := range []string{"xdp", "tc"} {
		t.Run(hook, func(t *testing.T) {
			r := load(t, res, hook)
			members := []uint32{11, 12, 13, 14}
			for i, m := range members {
				if err := r.RT.SetMember("sel", m, "fwd", []p4info.Arg{{Name: "port", Value: fmt.Sprint(i + 1)}}); err != nil {
					t.Fatal(err)
				}
			}
			if err := r.RT.SetGroup("sel", 7, members); err != nil {
				t.Fatal(err)
			}
			if err := r.RT.AddRefEntry("I.lb", []p4info.Match{{Field: "h.eth.t", Value: "0x0800"}}, p4info.Ref{Group: true, ID: 7}, 0); err != nil {
				t.Fatal(err)
			}
			const flows = 400
			got := map[int]int{}
			first := make([]int, flows)
			for i := range flows {
				src := uint64(0x020000000000) + uint64(i)*7919
				o, err := r.Send(0, ethFrame(1, src, 0x0800))
				if err != nil || o == nil {
					t.Fatalf("flow %d: %v %v", i, o, err)
				}
				var k [8]byte
				binary.BigEndian.PutUint64(k[:], src)
				want := int(crc16(k[2:])%4) + 1
				if o.Port != want {
					t.Fatalf("flow %d (src %012x): port %d, want %d (crc16 %% 4 + 1)", i, src, o.Port, want)
				}
				got[o.Port]++
				first[i] = o.Port
			}
			for p := 1; p <= 4; p++ {
				if got[p] < flows/4/2 {
					t.Errorf("member of port %d took %d of %d flows: %v", p, got[p], flows, got)
				}
			}
			for i := range 50 {
				src := uint64(0x020000000000) + uint64(i)*7919
				if o, err := r.Send(0, ethFrame(1, src, 0x0800)); err != nil || o == nil || o.Port != first[i] {
					t.Fatalf("flow %d again: %v %v, want port %d", i, o, err, first[i])
				}
			}
			// a member changes: the flows it took follow it
			if err := r.RT.SetMember("sel", 11, "fwd", []p4info.Arg{{Name: "port", Value: "9"}}); err != nil {
				t.Fatal(err)
			}
			for i := range 50 {
				src := uint64(0x020000000000) + uint64(i)*7919
				want := first[i]
				if want == 1 {
					want = 9
				}
				if o, err := r.Send(0, ethFrame(1, src, 0x0800)); err != nil || o == nil || o.Port != want {
					t.Fatalf("flow %d after the member changed: %v %v, want port %d", i, o, err, want)
				}
			}
			// an empty group, a group or member deleted under an entry: a miss (the default action drops)
			if err := r.RT.SetGroup("sel", 8, nil); err != nil {
				t.Fatal(err)
			}
			if err := r.RT.AddRefEntry("I.lb", []p4info.Match{{Field: "h.eth.t", Value: "0x0800"}}, p4info.Ref{Group: true, ID: 8}, 0); err != nil {
				t.Fatal(err)
			}
			if o, err := r.Send(0, ethFrame(1, 2, 0x0800)); err != nil || o != nil {
				t.Fatalf("empty group: %v %v, want a drop (the default action)", o, err)
			}
			// the default action may be a member too
			if err := r.RT.SetDefaultRef("I.lb", p4info.Ref{ID: 12}); err != nil {
				t.Fatal(err)
			}
			if o, err := r.Send(0, ethFrame(1, 2, 0x0800)); err != nil || o == nil || o.Port != 2 {
				t.Fatalf("empty group, default member 12: %v %v, want port 2", o, err)
			}
			// the action profile without selector (constructed in place, named after its table): entries name members
			if err := r.RT.SetMember("I.byDst", 1, "fwd", []p4info.Arg{{Name: "port", Value: "3"}}); err != nil {
				t.Fatal(err)
			}
			if err := r.RT.AddRefEntry("I.byDst", []p4info.Match{{Field: "h.eth.d", Value: "5"}}, p4info.Ref{ID: 1}, 0); err != nil {
				t.Fatal(err)
			}
			if o, err := r.Send(0, ethFrame(5, 1, 0x86dd)); err != nil || o == nil || o.Port != 3 {
				t.Fatalf("byDst member 1: %v %v, want port 3", o, err)
			}
			if err := r.RT.DeleteMember("I.byDst", 1); err != nil {
				t.Fatal(err)
			}
			if o, err := r.Send(0, ethFrame(5, 1, 0x86dd)); err != nil || o != nil {
				t.Fatalf("byDst, member deleted: %v %v, want a drop (the default action)", o, err)
			}
			if o, err := r.Send(0, ethFrame(6, 1, 0x86dd)); err != nil || o != nil {
				t.Fatalf("byDst miss: %v %v, want a drop (default action)", o, err)
			}
		})
	}
}

// TestActionProfileErrors: bad members, groups and entries are refused
// with a precise error and leave the maps as they were.
func TestActionProfileErrors(t *testing.T) {
	res := compile(t, p4.Options{Path: "sel.p4", Source: []byte(selProgram)})
	r := load(t, res, "xdp")
	if err := r.RT.SetMember("sel", 1, "fwd", []p4info.Arg{{Name: "port", Value: "1"}}); err != nil {
		t.Fatal(err)
	}
	if err := r.RT.SetGroup("sel", 1, []uint32{1}); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		do   func() error
		want string
	}{
		{"group over max_group_size", func() error { return r.RT.SetGroup("sel", 1, []uint32{1, 2, 3, 4, 5}) }, "at most 4 members"},
		{"member twice", func() error { return r.RT.SetGroup("sel", 1, []uint32{1, 1}) }, "listed twice"},
		{"unknown profile", func() error { return r.RT.SetMember("nope", 1, "fwd", nil) }, `no action profile "nope"`},
		{"unknown action", func() error { return r.RT.SetMember("sel", 1, "jump", nil) }, `has no action "jump"`},
		{"missing parameter", func() error { return r.RT.SetMember("sel", 1, "fwd", nil) }, "missing parameter port"},
		{"direct action in an indirect table", func() error {
			return r.RT.AddEntry("I.lb", []p4info.Match{{Field: "h.eth.t", Value: "1"}}, "fwd", []p4info.Arg{{Name: "port", Value: "1"}}, 0)
		}, "name a member or a group"},
		{"direct default in an indirect table", func() error { return r.RT.SetDefault("I.lb", "drop", nil) }, "name a member or a group"},
	}
	for _, c := range cases {
		err := c.do()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error with %q", c.name, err, c.want)
		}
	}
	g, err := r.RT.Groups("sel")
	if err != nil || len(g) != 1 || len(g[1]) != 1 || g[1][0] != 1 {
		t.Errorf("groups after refused changes: %v %v, want {1: [1]}", g, err)
	}
	m, err := r.RT.Members("sel")
	if err != nil || len(m) != 1 {
		t.Errorf("members after refused changes: %v %v, want one", m, err)
	}
}

// TestActionProfileCompileErrors: programs misusing profiles get
// positioned errors.
func TestActionProfileCompileErrors(t *testing.T) {
	cases := []struct{ from, to, want string }{
		{"implementation = sel;", "implementation = action_profile(32w4);", "selector key h.eth.s: the table's implementation must be an action_selector"},
		{"key = { h.eth.t : exact; h.eth.s : selector; }", "key = { h.eth.t : exact; }", "has no selector key"},
		{"implementation = sel;", "implementation = drop;", "implementation must be an action_profile or action_selector"},
		{"HashAlgorithm.crc16, 32w64", "HashAlgorithm.crc32_custom, 32w64", `hash algorithm "crc32_custom"`},
		{"@max_group_size(4)", `@selector_size_semantics("sum_of_weights")`, "sum_of_weights"},
		{"@max_group_size(4)", `@max_group_size(5000)`, "@max_group_size 5000 out of range"},
	}
	for _, c := range cases {
		src := strings.Replace(selProgram, c.from, c.to, 1)
		_, err := p4.Compile(context.Background(), p4.Options{Path: "sel.p4", Source: []byte(src)})
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "sel.p4:") {
			t.Errorf("%s -> %s: %v, want a positioned error with %q", c.from, c.to, err, c.want)
		}
	}
}
