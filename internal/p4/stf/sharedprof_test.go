package stf

import (
	"strings"
	"testing"

	"github.com/edgenf/edgenf/internal/p4"
	"github.com/edgenf/edgenf/internal/p4/p4info"
)

// Two tables share an ActionProfile but list different actions (PSA
// allows it, p4c's psa-example-dpdk-varbit-bmv2): members may use either
// action, and each table runs only the members whose action it lists.
func TestSharedProfileDifferentActions(t *testing.T) {
	src := psaProg(``, `
	action setSrc(bit<48> v) { h.eth.s = v; }
	action setType(bit<16> v) { h.eth.t = v; }
	ActionProfile(8) ap;
	table ts { key = { h.eth.d : exact; } actions = { setSrc; NoAction; } psa_implementation = ap; }
	table tt { key = { h.eth.d : exact; } actions = { setType; NoAction; } psa_implementation = ap; }
	apply { send_to_port(ostd, (PortId_t)1); ts.apply(); tt.apply(); }`, `apply { p.emit(h.eth); }`)
	res := compile(t, p4.Options{Path: "shared.p4", Source: []byte(src)})
	if n := len(res.Info.ActionProfiles); n != 1 || len(res.Info.ActionProfiles[0].TableIDs) != 2 {
		t.Fatalf("P4Info action profiles: %+v, want one for two tables", res.Info.ActionProfiles)
	}
	for _, hook := range []string{"xdp", "tc"} {
		t.Run(hook, func(t *testing.T) {
			r := load(t, res, hook)
			must := func(err error) {
				t.Helper()
				if err != nil {
					t.Fatal(err)
				}
			}
			must(r.RT.SetMember("ap", 1, "setSrc", []p4info.Arg{{Name: "v", Value: "0x0a0000000001"}}))
			must(r.RT.SetMember("ap", 2, "setType", []p4info.Arg{{Name: "v", Value: "0x1234"}}))
			must(r.RT.AddRefEntry("I.ts", []p4info.Match{{Field: "h.eth.d", Value: "1"}}, p4info.Ref{ID: 1}, 0))
			must(r.RT.AddRefEntry("I.tt", []p4info.Match{{Field: "h.eth.d", Value: "1"}}, p4info.Ref{ID: 2}, 0))
			// member 1 runs setSrc, which tt does not list: refused
			err := r.RT.AddRefEntry("I.tt", []p4info.Match{{Field: "h.eth.d", Value: "2"}}, p4info.Ref{ID: 1}, 0)
			if err == nil || !strings.Contains(err.Error(), "table I.tt: member 1 of I.ap runs an action the table does not list (its actions: I.setType, NoAction)") {
				t.Errorf("member with another table's action: %v", err)
			}
			if err := r.RT.SetDefaultRef("I.tt", p4info.Ref{ID: 1}); err == nil {
				t.Errorf("default naming a member with another table's action: accepted")
			}
			// a group holding it: the data path takes that member as a miss
			must(r.RT.SetGroup("ap", 9, []uint32{1}))
			must(r.RT.AddRefEntry("I.tt", []p4info.Match{{Field: "h.eth.d", Value: "3"}}, p4info.Ref{Group: true, ID: 9}, 0))
			must(r.RT.AddRefEntry("I.ts", []p4info.Match{{Field: "h.eth.d", Value: "3"}}, p4info.Ref{Group: true, ID: 9}, 0))
			for _, c := range []struct {
				dst     uint64
				src     uint64
				etype   uint16
				comment string
			}{
				{1, 0x0a0000000001, 0x1234, "each table its own member"},
				{3, 0x0a0000000001, 0x88b5, "group of member 1: ts runs it, tt misses"},
				{4, 0x020000000002, 0x88b5, "no entry"},
			} {
				o, err := r.Send(0, ethFrame(c.dst, 0x020000000002, 0x88b5))
				if err != nil || o == nil {
					t.Fatalf("%s: %v %v", c.comment, o, err)
				}
				want := ethFrame(c.dst, c.src, c.etype)
				if string(o.Data[:14]) != string(want[:14]) {
					t.Errorf("%s: %x, want %x", c.comment, o.Data[:14], want[:14])
				}
			}
		})
	}
}
