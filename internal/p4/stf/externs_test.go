package stf

import (
	"encoding/binary"
	"strings"
	"testing"

	"github.com/edgenf/edgenf/internal/p4"
	"github.com/edgenf/edgenf/internal/p4/tableruntime"
)

func loadExterns(t *testing.T, debug bool, hook string) *Runner {
	t.Helper()
	res := compileFile(t, "../testdata/externs.p4", func(o *p4.Options) { o.Debug = debug })
	if debug != strings.Contains(res.C, "#define P4_DEBUG 1\n") {
		t.Fatalf("debug %v not reflected in the C", debug)
	}
	return load(t, res, hook)
}

func externsPkt(op, r byte) []byte {
	return []byte{0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 2, 0xff, 0xff, op, r, 0, 0, 0xaa, 0xbb, 0xcc, 0xdd}
}

// TestRandomRange: random(r, 10, 12) stays in range and hits every value.
func TestRandomRange(t *testing.T) {
	for _, hook := range []string{"xdp", "tc"} {
		r := loadExterns(t, false, hook)
		seen := map[byte]int{}
		wides := map[uint16]bool{}
		for i := 0; i < 300; i++ {
			out, err := r.Send(0, externsPkt(1, 0))
			if err != nil || out == nil {
				t.Fatalf("%s: %v %v", hook, out, err)
			}
			v := out.Data[15]
			if v < 10 || v > 12 {
				t.Fatalf("%s: random out of range: %d", hook, v)
			}
			seen[v]++
			wides[uint16(out.Data[16])<<8|uint16(out.Data[17])] = true
		}
		if len(seen) != 3 || len(wides) < 250 {
			t.Errorf("%s: values seen %v, %d distinct 16-bit values", hook, seen, len(wides))
		}
	}
}

// TestAssertDebug: with Debug, a false assert/assume drops the packet and
// counts in p4_assert_fail; a true one passes.
func TestAssertDebug(t *testing.T) {
	for _, hook := range []string{"xdp", "tc"} {
		r := loadExterns(t, true, hook)
		for _, c := range []struct {
			op, r byte
			pass  bool
		}{{3, 0, true}, {3, 1, false}, {4, 0, true}, {4, 2, false}, {4, 3, false}, {2, 9, true}} {
			out, err := r.Send(0, externsPkt(c.op, c.r))
			if err != nil {
				t.Fatal(err)
			}
			if (out != nil) != c.pass {
				t.Errorf("%s: op %d r %d: output %v, want pass %v", hook, c.op, c.r, out, c.pass)
			}
		}
		m := r.Coll.Maps["p4_assert_fail"]
		if m == nil {
			t.Fatal("no p4_assert_fail map")
		}
		var a, b uint64
		if err := m.Lookup(uint32(0), &a); err != nil {
			t.Fatal(err)
		}
		if err := m.Lookup(uint32(1), &b); err != nil {
			t.Fatal(err)
		}
		if a != 1 || b != 2 {
			t.Errorf("%s: assert failures %d, assume failures %d; want 1, 2", hook, a, b)
		}
	}
}

// TestAtomicConcurrent: @atomic read-modify-writes from every CPU at once
// lose no update.
func TestAtomicConcurrent(t *testing.T) {
	res := compileFile(t, "../testdata/atomic.p4")
	r := load(t, res, "xdp")
	if _, err := r.Send(0, []byte{0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 2, 0xff, 0xff, 1, 0, 0, 0, 0, 0, 0, 0, 0}); err != nil {
		t.Fatal(err)
	}
	const repeat = 50000
	pkt := []byte{0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 2, 0xff, 0xff, 1, 0, 0, 0, 0, 0, 0, 0, 0}
	n := runOnEveryCPU(t, r, pkt, repeat)
	// ingress_port is 0 in the scratch metadata of every CPU after Send
	got, err := r.RT.ReadRegister("Ig.counts", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	sums, _ := r.RT.ReadRegister("Ig.sums", 0, 0)
	if want := uint64(1 + n*repeat); got[0] != want || sums[0] != want {
		t.Errorf("counts[0] = %d, sums[0] = %d after %d packets", got[0], sums[0], want)
	}
}

// TestMeterConcurrent: packets from every CPU at once through one meter
// cell; every packet's debit is kept (the cell's update is serialised).
func TestMeterConcurrent(t *testing.T) {
	res := compileFile(t, "../testdata/meters.p4")
	r := load(t, res, "xdp")
	pkt := []byte{0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 2, 0xff, 0xff, 0x99, 0x99}
	if _, err := r.Send(0, pkt); err != nil { // scratch metadata: port 0 on every CPU
		t.Fatal(err)
	}
	const burst = 1 << 30
	if err := r.RT.SetMeter("Ig.pkt_meter", 0, 0, &tableruntime.MeterConfig{CBurst: burst, PBurst: burst}); err != nil {
		t.Fatal(err)
	}
	const repeat = 50000
	n := runOnEveryCPU(t, r, pkt, repeat)
	m := r.Coll.Maps[r.RT.Model.Meter("Ig.pkt_meter").Map]
	v := make([]byte, 64)
	if err := m.Lookup(uint32(0), &v); err != nil {
		t.Fatal(err)
	}
	tc := binary.NativeEndian.Uint64(v[32:]) / 1e9
	used := uint64(burst) - tc
	want := uint64(n * repeat)
	lost := int64(want) - int64(used)
	t.Logf("%d packets from %d CPUs, %d debits lost", want, n, lost)
	// an update goes ahead unlocked only when the holder was interrupted
	// for 16 tries (test runs are preemptible: on a loaded machine about
	// 0.1% are); without the flag about 30% are lost
	if lost < 0 || lost > int64(want/100) {
		t.Errorf("committed tokens used %d, want %d", used, want)
	}
}
