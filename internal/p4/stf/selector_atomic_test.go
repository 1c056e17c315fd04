package stf

import (
	"encoding/binary"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/edgenf/edgenf/internal/p4"
	"github.com/edgenf/edgenf/internal/p4/ir"
	"github.com/edgenf/edgenf/internal/p4/p4info"
)

// tearProgram's member action copies two parameters into metadata at
// either end of a 64-byte action data block; the control counts (torn)
// every packet that saw the two differ: a member read half old, half new.
// Table t reaches members directly, table g through groups.
const tearProgram = `
#include <core.p4>
#include <v1model.p4>
header eth_t { bit<48> d; bit<48> s; bit<16> t; }
struct H { eth_t eth; }
struct M { bit<64> a; bit<64> b; }
parser P(packet_in p, out H h, inout M m, inout standard_metadata_t sm) {
    state start { p.extract(h.eth); transition accept; }
}
control V(inout H h, inout M m) { apply { } }
control I(inout H h, inout M m, inout standard_metadata_t sm) {
    counter(1, CounterType.packets) torn;
    action set(bit<64> a, bit<64> x1, bit<64> x2, bit<64> x3, bit<64> x4, bit<64> x5, bit<64> x6, bit<64> b) {
        m.a = a;
        h.eth.d = (bit<48>)(x1 ^ x2 ^ x3 ^ x4 ^ x5 ^ x6);
        m.b = b;
        h.eth.s = (bit<48>)b;
        sm.egress_spec = 1;
    }
    action_selector(HashAlgorithm.crc16, 32w16, 32w16) sel;
    table t {
        key = { h.eth.t : exact; h.eth.s : selector; }
        actions = { set; NoAction; }
        default_action = NoAction();
        implementation = sel;
    }
    apply {
        t.apply();
        if (m.a != m.b) { torn.count(0); }
    }
}
control E(inout H h, inout M m, inout standard_metadata_t sm) { apply { } }
control C(inout H h, inout M m) { apply { } }
control D(packet_out p, in H h) { apply { p.emit(h); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
`

// A member or a group changed while packets run is seen whole by every
// packet, the old value or the new one (tableruntime/halves.go), at both
// hooks: packets run back to back on one CPU while the member's
// parameters, always equal at both ends of the action data, change on
// another, and no packet sees them differ. Then the same through a group
// whose member list switches between two such members.
func TestSelectorChangesAreAtomic(t *testing.T) {
	res := compile(t, p4.Options{Path: "tear.p4", Source: []byte(tearProgram)})
	args := func(v uint64) []p4info.Arg {
		var out []p4info.Arg
		for _, n := range []string{"a", "x1", "x2", "x3", "x4", "x5", "x6", "b"} {
			out = append(out, p4info.Arg{Name: n, Value: fmt.Sprint(v)})
		}
		return out
	}
	key := []p4info.Match{{Field: "h.eth.t", Value: "0x88b5"}}
	for _, hook := range []string{"xdp", "tc"} {
		t.Run(hook, func(t *testing.T) {
			r := load(t, res, hook)
			if err := r.RT.SetMember("I.sel", 1, "I.set", args(1)); err != nil {
				t.Fatal(err)
			}
			if err := r.RT.SetMember("I.sel", 2, "I.set", args(2)); err != nil {
				t.Fatal(err)
			}
			// run packets on one CPU, in batches, while change is called
			// on another, until it has been called n times and 10
			// batches have run (bounded in time)
			race := func(n int, change func(i int) error) {
				t.Helper()
				done := make(chan struct{})
				var batches atomic.Int32
				var wg sync.WaitGroup
				wg.Add(1)
				go func() {
					defer wg.Done()
					for {
						select {
						case <-done:
							return
						default:
						}
						if _, _, err := r.Prog.Benchmark(ethFrame(1, 2, 0x88b5), 20000, nil); err != nil {
							t.Error(err)
							return
						}
						batches.Add(1)
					}
				}()
				deadline := time.Now().Add(20 * time.Second)
				for i := 0; (i < n || batches.Load() < 10) && time.Now().Before(deadline); i++ {
					if err := change(i); err != nil {
						t.Error(err)
						break
					}
				}
				close(done)
				wg.Wait()
				pk, _, err := r.RT.ReadCounter("I.torn", 0)
				if err != nil || pk != 0 {
					t.Fatalf("%d packets saw a member half changed (%v)", pk, err)
				}
			}
			if err := r.RT.AddRefEntry("I.t", key, p4info.Ref{ID: 1}, 0); err != nil {
				t.Fatal(err)
			}
			race(100, func(i int) error { return r.RT.SetMember("I.sel", 1, "I.set", args(uint64(i)<<32|uint64(i))) })
			if o, err := r.Send(0, ethFrame(1, 2, 0x88b5)); err != nil || o == nil || o.Port != 1 {
				t.Fatalf("member: %+v %v", o, err)
			}
			if err := r.RT.SetGroup("I.sel", 10, []uint32{1}); err != nil {
				t.Fatal(err)
			}
			if err := r.RT.AddRefEntry("I.t", key, p4info.Ref{Group: true, ID: 10}, 0); err != nil {
				t.Fatal(err)
			}
			race(100, func(i int) error {
				if err := r.RT.SetMember("I.sel", uint32(2-i%2), "I.set", args(uint64(i)<<32|uint64(i))); err != nil {
					return err
				}
				return r.RT.SetGroup("I.sel", 10, []uint32{uint32(1 + i%2)})
			})
		})
	}
}

// A member's or group's change is written into the half of its slot that
// packets do not read, then made live: the half packets were reading
// keeps the old value whole (a packet that started on it finishes on it),
// and the next packet sees the new value.
func TestSelectorChangeWritesTheOtherHalf(t *testing.T) {
	res := compile(t, p4.Options{Path: "tear.p4", Source: []byte(tearProgram)})
	r := load(t, res, "xdp")
	args := func(v uint64) []p4info.Arg {
		var out []p4info.Arg
		for _, n := range []string{"a", "x1", "x2", "x3", "x4", "x5", "x6", "b"} {
			out = append(out, p4info.Arg{Name: n, Value: fmt.Sprint(v)})
		}
		return out
	}
	ap := r.RT.Model.Profile("I.sel")
	members := r.Coll.Maps[ap.MemberMap]
	slot := func() []byte { // member 1's home slot: the live word, two halves
		v := make([]byte, ir.SlotLiveBytes+2*ap.MemberBytes)
		if err := members.Lookup(uint32(1), &v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	live := func() int { return int(binary.NativeEndian.Uint64(slot()) & 1) }
	half := func(h int) []byte { return slot()[ir.SlotLiveBytes+h*ap.MemberBytes:][:ap.MemberBytes] }
	if err := r.RT.AddRefEntry("I.t", []p4info.Match{{Field: "h.eth.t", Value: "0x88b5"}}, p4info.Ref{ID: 1}, 0); err == nil {
		t.Fatal("an entry naming a member that does not exist was accepted")
	}
	if err := r.RT.SetMember("I.sel", 1, "I.set", args(7)); err != nil {
		t.Fatal(err)
	}
	if err := r.RT.AddRefEntry("I.t", []p4info.Match{{Field: "h.eth.t", Value: "0x88b5"}}, p4info.Ref{ID: 1}, 0); err != nil {
		t.Fatal(err)
	}
	for v := uint64(8); v < 11; v++ {
		was, old := live(), half(live())
		if err := r.RT.SetMember("I.sel", 1, "I.set", args(v)); err != nil {
			t.Fatal(err)
		}
		if live() == was {
			t.Fatalf("value %d: the live half did not change", v)
		}
		if got := half(was); string(got) != string(old) {
			t.Fatalf("value %d: the half packets were reading changed:\n%x\nwas\n%x", v, got, old)
		}
		o, err := r.Send(0, ethFrame(1, 2, 0x88b5))
		if err != nil || o == nil || o.Port != 1 || o.Data[11] != byte(v) {
			t.Fatalf("value %d: %+v %v", v, o, err)
		}
	}
}
