package engine_test

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/datapath"
	"github.com/edgenf/edgenf/internal/engine"
	"github.com/edgenf/edgenf/internal/netlab"
	"github.com/edgenf/edgenf/internal/tenant"
)

// BenchmarkPeering: what peering costs the caller and everyone else, with
// 100 interfaces at each hook. Each of 100 portfwd cubes is peered with a
// veth of its own through Engine.Update while, 2 ms in, a one-rule change
// of another cube is made (how long it waits: the peering's hold on the
// engine); the restart is a Close and Open over the 100 peered interfaces
// (median of three); unpeer takes each port off its interface again.
// With EDGENF_PEER_BENCH_OUT set, the figures are written there as markdown
// (bench/results/peering.md, in docs/performance.md). Run with -benchtime 1x.
func BenchmarkPeering(b *testing.B) {
	const n = 100
	rows := []string{}
	for _, hook := range []datapath.Hook{datapath.XDP, datapath.TC} {
		b.Run(string(hook), func(b *testing.B) {
			lab := netlab.NewT(b)
			var ifs []string
			for i := range n {
				a, _, err := lab.RootVeth(fmt.Sprintf("bp%d%sa", i, hook[:1]), fmt.Sprintf("bp%d%sb", i, hook[:1]))
				if err != nil {
					b.Fatal(err)
				}
				ifs = append(ifs, a)
			}
			cfg := restartable(b)
			e := openAt(b, cfg)
			ports := []cube.Port{{Name: "p0", Index: 0}, {Name: "p1", Index: 1}}
			update(b, e, func(tp *cube.Topology) error {
				for i := range n {
					tp.Put(&cube.Cube{Name: fmt.Sprintf("c%d", i), Type: "portfwd", Hook: hook, Ports: slices.Clone(ports)})
				}
				tp.Put(&cube.Cube{Name: "other", Type: "portfwd", Hook: hook, Ports: slices.Clone(ports)})
				return nil
			})
			var peer, rule, unpeer, restart []time.Duration
			for i := range n {
				done := make(chan time.Duration, 1)
				go func() {
					t0 := time.Now()
					if err := e.Update(func(tp *cube.Topology) error { return tp.SetPeer(fmt.Sprintf("c%d:p0", i), ifs[i]) }); err != nil {
						b.Error(err)
					}
					done <- time.Since(t0)
				}()
				time.Sleep(2 * time.Millisecond)
				t0 := time.Now()
				if err := e.ChangeEntries(tenant.Admin, "other", "rules", func(tx *engine.EntryTx) error {
					_, err := tx.Put(json.RawMessage(fmt.Sprintf(`{"in_port":"p%d","out_port":"p%d"}`, i%2, 1-i%2)))
					return err
				}); err != nil {
					b.Fatal(err)
				}
				rule = append(rule, time.Since(t0))
				peer = append(peer, <-done)
			}
			adopted := 0
			for range 3 {
				e.Close()
				t0 := time.Now()
				e = openAt(b, cfg)
				restart = append(restart, time.Since(t0))
				adopted = e.Started().InterfacesAdopted
			}
			for i := range n {
				t0 := time.Now()
				update(b, e, func(tp *cube.Topology) error { return tp.Unpeer(fmt.Sprintf("c%d:p0", i)) })
				unpeer = append(unpeer, time.Since(t0))
			}
			e.Close()
			rows = append(rows, fmt.Sprintf("| %s | %s | %s | %s | %s | %d of %d |", hook, spread(peer), spread(rule), spread(unpeer), spread(restart), adopted, n))
		})
	}
	if out := os.Getenv("EDGENF_PEER_BENCH_OUT"); out != "" && len(rows) == 2 {
		md := "## Peering\n\n`EDGENF_PEER_BENCH_OUT=… go test -run XXX -bench '^BenchmarkPeering$' -benchtime 1x ./internal/engine`: " +
			"100 portfwd cubes each peered with a veth of its own through `Engine.Update` (wall time, the interface's program loaded, linked and its hop written); " +
			"a one-rule change of another cube started 2 ms into each peering (how long the peering holds everyone else up); " +
			"taking each port off its interface again; a restart (Close, Open) over the 100 peered interfaces (three), and how many interface programs it kept as they were. " +
			"Median (minimum–maximum).\n\n| hook | peer | one-rule change during a peering | unpeer | restart, 100 peered interfaces | interface programs adopted |\n|---|---|---|---|---|---|\n" +
			strings.Join(rows, "\n") + "\n"
		if err := os.WriteFile(out, []byte(md), 0o644); err != nil {
			b.Fatal(err)
		}
	}
}

// spread is the median (minimum–maximum) of d, sorted in place.
func spread(d []time.Duration) string {
	slices.Sort(d)
	r := func(x time.Duration) string { return x.Round(10 * time.Microsecond).String() }
	return fmt.Sprintf("%s (%s–%s)", r(d[len(d)/2]), r(d[0]), r(d[len(d)-1]))
}
