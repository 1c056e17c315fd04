package engine_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/engine"
	"github.com/edgenf/edgenf/internal/netlab"
	_ "github.com/edgenf/edgenf/internal/nf/ddos"
	_ "github.com/edgenf/edgenf/internal/nf/portfwd"
	"github.com/edgenf/edgenf/internal/nftest"
	"github.com/edgenf/edgenf/internal/tenant"
)

// tenantChain is one tenant's two-cube chain, as the scale scenarios build it.
func tenantChain(i int) []*cube.Cube {
	a, b := fmt.Sprintf("t%da", i), fmt.Sprintf("t%db", i)
	rules := map[string]map[string]json.RawMessage{"rules": {
		"p0": json.RawMessage(`{"in_port":"p0","out_port":"p1"}`),
		"p1": json.RawMessage(`{"in_port":"p1","out_port":"p0"}`),
	}}
	return []*cube.Cube{
		{Name: a, Type: "portfwd", Ports: []cube.Port{{Name: "p0", Index: 0}, {Name: "p1", Index: 1, Peer: b + ":p0"}}, Tables: rules},
		{Name: b, Type: "portfwd", Ports: []cube.Port{{Name: "p0", Index: 0, Peer: a + ":p1"}, {Name: "p1", Index: 1}}, Tables: rules},
	}
}

// scaleEngine is an engine holding n cubes (n/2 tenant chains), added in
// batches so that building 3,000 cubes costs loads, not n changes.
func scaleEngine(b testing.TB, n int) *engine.Engine {
	// the edit check visits every cube: a benchmark measures without it
	b.Setenv("EDGENF_CHECK_EDITS", "0")
	e := nftest.Engine(b)
	for lo := 0; lo < n/2; lo += 250 {
		nftest.MustUpdate(b, e, func(tp *cube.Topology) error {
			for i := lo; i < min(lo+250, n/2); i++ {
				for _, c := range tenantChain(i) {
					tp.Put(c)
				}
			}
			return nil
		})
	}
	return e
}

// TestChangeWalksNoCubes: a change of one rule or one peering, an
// administrator's or a tenant's (on a cube peered with an interface),
// through Update or ChangeEntries, walks the cubes of no topology (cube.CubeWalks counts every walk): what it costs
// the engine does not grow with the number of cubes (issue 15). Only the
// first change after start may count the topology once (its working copy,
// the tenants' holdings). The edit check is off, as in a daemon: it walks
// every cube by design.
func TestChangeWalksNoCubes(t *testing.T) {
	e := scaleEngine(t, 200)
	lab, err := netlab.New(netlab.UniquePrefix())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lab.Close() })
	iface, _, err := lab.RootVeth("a", "b")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.SetTenant(tenant.Tenant{Name: "red", Interfaces: []string{iface}}); err != nil {
		t.Fatal(err)
	}
	ctx, red := context.Background(), tenant.Of("red")
	update := func(who tenant.Actor, fn func(tp *cube.Topology) error) error {
		return e.UpdateAs(ctx, who, func(tp *cube.Topology, _ tenant.Scope) error { return fn(tp) })
	}
	if err := update(red, func(tp *cube.Topology) error {
		for _, c := range tenantChain(9000) {
			c.Tenant = "red"
			tp.Put(c)
		}
		return tp.SetPeer("t9000a:p0", iface)
	}); err != nil {
		t.Fatal(err)
	}
	rule := func(i int) json.RawMessage {
		return json.RawMessage(fmt.Sprintf(`{"in_port":"p0","out_port":%q}`, []string{"p0", "p1"}[i%2]))
	}
	changes := []struct {
		what string
		run  func(i int) error
	}{
		{"the administrator's rule", func(i int) error {
			return update(tenant.Admin, func(tp *cube.Topology) error { _, err := tp.PutEntry("t0a", "rules", rule(i)); return err })
		}},
		{"the administrator's peering", func(i int) error {
			return update(tenant.Admin, func(tp *cube.Topology) error {
				if i%2 == 0 {
					return tp.Unpeer("t0a:p1")
				}
				return tp.SetPeer("t0a:p1", "t0b:p0")
			})
		}},
		{"a tenant's rule", func(i int) error {
			return update(red, func(tp *cube.Topology) error { _, err := tp.PutEntry("t9000a", "rules", rule(i)); return err })
		}},
		{"a tenant's rule through ChangeEntries", func(i int) error {
			return e.ChangeEntries(red, "t9000b", "rules", func(tx *engine.EntryTx) error { _, err := tx.Put(rule(i + 1)); return err })
		}},
	}
	for i := range 4 {
		for _, c := range changes {
			before := cube.CubeWalks()
			if err := c.run(i); err != nil {
				t.Fatalf("%s: %v", c.what, err)
			}
			if walks := cube.CubeWalks() - before; i > 0 && walks != 0 {
				t.Errorf("%s (change %d): %d walks over every cube, want none", c.what, i, walks)
			}
		}
	}
}

// BenchmarkChange reports what one change costs the engine when the
// topology already holds N cubes; it must not grow with N (only the
// changed cubes, their peers and their stubs are validated, planned,
// written and journalled: dirty.go). Three changes:
//   - rewire: unpeer, then peer again, two cubes of one chain (no program
//     is loaded: the engine's own cost, the ≤ 2 ms target);
//   - entry: one rule of one cube replaced through a topology update;
//   - add: a new two-cube chain (includes the kernel loading and
//     verifying two programs, a cost of its own that N does not change);
//   - remove: one of the chains add made taken out again.
//
// ms/change is wall time (median-ms/change its median); cpu-ms/change the
// process's CPU time (user and system), steadier on a shared machine.
// With EDGENF_ENGINE_BENCH_OUT set, the figures and their growth from 100
// to 3,000 cubes are written there as markdown (make bench: bench/results/engine-change.md, in
// docs/performance.md).
func BenchmarkChange(b *testing.B) {
	sizes, kinds := []int{100, 1000, 3000}, []string{"rewire", "entry", "add", "remove"}
	type cost struct{ wall, cpu, median float64 }
	got := map[string]cost{} // by n/kind: the last run's
	for _, n := range sizes {
		b.Run(fmt.Sprintf("cubes=%d", n), func(b *testing.B) {
			e := scaleEngine(b, n)
			seq := 0
			var added []int // the chains "add" made, which "remove" takes out
			changes := map[string]func(i int) func(tp *cube.Topology) error{
				"rewire": func(i int) func(tp *cube.Topology) error {
					return func(tp *cube.Topology) error {
						if i%2 == 0 {
							return tp.Unpeer("t0a:p1")
						}
						return tp.SetPeer("t0a:p1", "t0b:p0")
					}
				},
				"entry": func(i int) func(tp *cube.Topology) error {
					raw := json.RawMessage(fmt.Sprintf(`{"in_port":"p0","out_port":%q}`, []string{"p0", "p1"}[i%2]))
					return func(tp *cube.Topology) error {
						_, err := tp.PutEntry("t1a", "rules", raw)
						return err
					}
				},
				"add": func(i int) func(tp *cube.Topology) error {
					added = append(added, 100000+i)
					return func(tp *cube.Topology) error {
						for _, c := range tenantChain(100000 + i) {
							tp.Put(c)
						}
						return nil
					}
				},
				"remove": func(int) func(tp *cube.Topology) error {
					if len(added) == 0 {
						b.Fatal("no chain left to remove: remove runs more often than add")
					}
					i := added[len(added)-1]
					added = added[:len(added)-1]
					return func(tp *cube.Topology) error {
						for _, c := range tenantChain(i) {
							tp.Remove(c.Name)
						}
						return nil
					}
				},
			}
			for _, kind := range kinds {
				b.Run(kind, func(b *testing.B) {
					start, cpu := time.Now(), nftest.CPUTime()
					walls := make([]time.Duration, b.N)
					for i := 0; i < b.N; i++ {
						seq++ // b.Run runs this more than once: no change twice
						fn := changes[kind](seq)
						at := time.Now()
						nftest.MustUpdate(b, e, fn)
						walls[i] = time.Since(at)
					}
					slices.Sort(walls)
					c := cost{float64(time.Since(start).Microseconds()) / 1000 / float64(b.N), float64((nftest.CPUTime() - cpu).Microseconds()) / 1000 / float64(b.N),
						float64(walls[b.N/2].Microseconds()) / 1000}
					got[fmt.Sprintf("%d/%s", n, kind)] = c
					b.ReportMetric(c.wall, "ms/change")
					b.ReportMetric(c.median, "median-ms/change")
					b.ReportMetric(c.cpu, "cpu-ms/change")
					b.ReportMetric(0, "ns/op")
				})
			}
		})
	}
	out := os.Getenv("EDGENF_ENGINE_BENCH_OUT")
	if out == "" || len(got) != len(sizes)*len(kinds) {
		return
	}
	md := "## Engine cost per change\n\n`EDGENF_ENGINE_BENCH_OUT=… go test -run XXX -bench '^BenchmarkChange$' -benchtime 100x ./internal/engine` " +
		"(`make bench`): one change through `Engine.Update` when the topology already holds N cubes (N/2 two-cube portfwd chains). " +
		"*rewire* unpeers or re-peers two cubes of one chain (no program is loaded: the engine's own cost); *entry* replaces one rule " +
		"of one cube; *add* adds a two-cube chain (includes the kernel loading and verifying two programs); *remove* removes one of those chains. CPU is the process's " +
		"user and system time per change; wall time is what the caller waits, until the change is live and its journal record flushed " +
		"(fdatasync). A direct hop that stops entering a cube is overwritten with a vacant program, not deleted: a delete from a " +
		"tail-call map waits for an RCU grace period (5–20 ms) inside the syscall. A change costs what it changes: the growth column " +
		"is the cost at 3,000 cubes over the cost at 100. Wall time is the mean and, less sensitive to other load on the machine, the median.\n\n" +
		"| change | CPU ms at 100 | at 1,000 | at 3,000 | growth 100→3,000 | wall ms at 100 | at 3,000 | median at 3,000 |\n|---|---:|---:|---:|---:|---:|---:|---:|\n"
	for _, kind := range kinds {
		lo, mid, hi := got["100/"+kind], got["1000/"+kind], got["3000/"+kind]
		md += fmt.Sprintf("| %s | %.2f | %.2f | %.2f | %.2f× | %.2f | %.2f | %.2f |\n", kind, lo.cpu, mid.cpu, hi.cpu, hi.cpu/lo.cpu, lo.wall, hi.wall, hi.median)
	}
	if err := os.WriteFile(out, []byte(md), 0o644); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkEntryChange reports what adding one table entry costs when the
// cube already has N entries, through ChangeEntries (the API's path: it
// should not grow with N) and through a whole-topology Update.
func BenchmarkEntryChange(b *testing.B) {
	for _, n := range []int{1000, 100000} {
		for _, path := range []string{"entries", "update"} {
			b.Run(fmt.Sprintf("entries=%d/%s", n, path), func(b *testing.B) {
				e := nftest.Engine(b)
				nftest.MustUpdate(b, e, func(tp *cube.Topology) error {
					c := &cube.Cube{Name: "dd", Type: "ddos", Tables: map[string]map[string]json.RawMessage{"blacklist_src": {}}}
					for i := range n {
						p := fmt.Sprintf("198.%d.%d.%d/32", 18+i>>16, i>>8&0xff, i&0xff)
						c.Tables["blacklist_src"][p] = json.RawMessage(fmt.Sprintf(`{"prefix":%q}`, p))
					}
					return tp.AddCube(c)
				})
				b.ResetTimer()
				start := time.Now()
				for i := 0; i < b.N; i++ {
					raw := json.RawMessage(fmt.Sprintf(`{"prefix":"2001:db8:ffff::%x/128"}`, i+1))
					if path == "update" {
						nftest.MustUpdate(b, e, func(tp *cube.Topology) error {
							_, err := tp.PutEntry("dd", "blacklist_src", raw)
							return err
						})
						continue
					}
					if err := e.ChangeEntries(tenant.Admin, "dd", "blacklist_src", func(tx *engine.EntryTx) error {
						_, err := tx.Put(raw)
						return err
					}); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(time.Since(start).Microseconds())/1000/float64(b.N), "ms/change")
				b.ReportMetric(0, "ns/op")
			})
		}
	}
}
