package stf

import (
	"context"
	"strings"
	"testing"

	"github.com/edgenf/edgenf/internal/p4/p4test"
	"github.com/edgenf/edgenf/internal/p4/tableruntime"
)

func replFrame(op byte) []byte {
	f := []byte{0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 1, 0x88, 0xb5, op, 0, 0, 0, 0, 0, 0, 0}
	return append(f, make([]byte, 64)...)
}

// Bad replication input never crashes or breaks the program: unknown
// sessions and groups make no copy (STF replicate.stf), and malformed
// configurations are refused before anything is written.
func TestReplicationConfigErrors(t *testing.T) {
	res := compileFile(t, "../testdata/replicate.p4")
	r := load(t, res, "xdp")
	for _, bad := range []func() error{
		func() error { return r.RT.SetCloneSession(0, tableruntime.CloneSession{Port: 1}) },
		func() error { return r.RT.SetCloneSession(32768, tableruntime.CloneSession{Port: 1}) },
		func() error { return r.RT.SetCloneSession(5, tableruntime.CloneSession{Port: 64}) },
		func() error { return r.RT.SetCloneSession(5, tableruntime.CloneSession{Port: 1, McastGroup: 2}) },
		func() error { return r.RT.SetCloneSession(5, tableruntime.CloneSession{Port: 1, Truncate: 13}) },
		func() error { return r.RT.SetMcastGroup(0, nil) },
		func() error { return r.RT.SetMcastGroup(65536, nil) },
		func() error { return r.RT.SetMcastGroup(3, make([]tableruntime.Replica, tableruntime.MaxReplicas+1)) },
		func() error { return r.RT.SetMcastGroup(3, []tableruntime.Replica{{Port: 1}, {Port: 1}}) },
		func() error { return r.RT.SetMcastGroup(3, []tableruntime.Replica{{Port: 100}}) },
	} {
		if err := bad(); err == nil {
			t.Fatal("a malformed configuration was accepted")
		}
	}
	ss, _ := r.RT.CloneSessions()
	gs, _ := r.RT.McastGroups()
	if len(ss) != 0 || len(gs) != 0 {
		t.Fatalf("refused configurations were written: %v %v", ss, gs)
	}
	// a full group: 32 copies of one packet
	var reps []tableruntime.Replica
	for i := 0; i < tableruntime.MaxReplicas; i++ {
		reps = append(reps, tableruntime.Replica{Port: uint16(i % 2 * 3), Rid: uint16(i)})
	}
	if err := r.RT.SetMcastGroup(5, reps); err != nil {
		t.Fatal(err)
	}
	outs, err := r.SendAll(0, replFrame(2))
	if err != nil {
		t.Fatal(err)
	}
	if len(outs) != tableruntime.MaxReplicas {
		t.Fatalf("%d copies, want %d", len(outs), tableruntime.MaxReplicas)
	}
	for i, o := range outs {
		if rid := int(o.Data[16])<<8 | int(o.Data[17]); rid != i {
			t.Fatalf("copy %d has rid %d", i, rid)
		}
	}
	// truncation: the copies of session 10 are cut to 20 bytes
	if err := r.RT.SetCloneSession(10, tableruntime.CloneSession{Port: 4, Truncate: 20}); err != nil {
		t.Fatal(err)
	}
	outs, err = r.SendAll(0, replFrame(3))
	if err != nil {
		t.Fatal(err)
	}
	if len(outs) != 2 || outs[0].Port != 4 || len(outs[0].Data) != 20 || outs[1].Port != 1 || len(outs[1].Data) != 86 {
		t.Fatalf("truncated clone: %+v", outs)
	}
}

// BenchmarkReplication is the per-packet cost of a copy (Program.Run with
// Repeat): unicast, unicast + an I2E clone, and a two-replica multicast. At
// XDP (and in these test runs at TC) the copies go to the punt ring.
//
//	go test -run XXX -bench Replication ./internal/p4/stf
func BenchmarkReplication(b *testing.B) {
	res := compileFile(b, "../testdata/replicate.p4")
	for _, hook := range []string{"xdp", "tc"} {
		r := load(b, res, hook)
		r.RT.SetCloneSession(10, tableruntime.CloneSession{Port: 4})
		r.RT.SetMcastGroup(5, []tableruntime.Replica{{Port: 1, Rid: 1}, {Port: 3, Rid: 2}})
		if _, err := r.SendAll(0, replFrame(1)); err != nil { // opens the punt ring
			b.Fatal(err)
		}
		for _, c := range []struct {
			name string
			op   byte
		}{{"unicast", 1}, {"clone", 3}, {"mcast2", 2}} {
			b.Run(hook+"/"+c.name, func(b *testing.B) {
				_, d, err := r.Prog.Benchmark(replFrame(c.op), b.N, nil)
				if err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(float64(d.Nanoseconds()), "ns/pkt")
			})
		}
	}
}

// The replication tests through real veths: at TC the copies are cloned in
// the kernel, at XDP they go through the slow path (here the runner plays
// the daemon).
func TestReplicationSTFLive(t *testing.T) {
	needRoot(t)
	if testing.Short() {
		t.Skip("namespaces and veths: the long tier")
	}
	for _, hook := range []string{"xdp", "tc"} {
		for _, f := range []string{"../../../examples/p4/portscan", "../../../examples/p4/int_telemetry", "../testdata/replicate", "../testdata/psa_replicate", "../testdata/psa_mirror"} {
			t.Run(hook+"/"+f[strings.LastIndex(f, "/")+1:], func(t *testing.T) {
				res, err := RunFileMode(context.Background(), p4test.File(t, f+".p4"), f+".stf", hook, true)
				if err != nil {
					t.Fatal(err)
				}
				if !res.OK() {
					t.Fatalf("live run failed:\n%s", res.Error())
				}
			})
		}
	}
}
