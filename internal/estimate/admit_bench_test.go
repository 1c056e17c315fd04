package estimate_test

import (
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/estimate"
)

// BenchmarkAdmission reports what the admission check costs one change
// when the topology holds N cubes and every slice has a budget of its own
// (and the daemon one of its own): N/4 slices of two cubes behind one
// slicer, N/2 one-cube chains of no slice. Two changes, each a cube's
// cost up or down, both ways alternately: far (a chain of no slice) and
// slice (a cube of one slice: that slice's unit is walked again). Each is
// judged by the incremental check (CheckChange, the daemon's) and by
// Check (every chain priced before and after: the check before it).
// With EDGENF_ADMIT_BENCH_OUT set, the figures are written there as
// markdown (make bench: bench/results/admission.md, in
// docs/performance.md).
func BenchmarkAdmission(b *testing.B) {
	sizes, kinds := []int{100, 1000, 3000}, []string{"far", "slice"}
	got := map[string]float64{} // µs per change, by n/kind/check
	for _, n := range sizes {
		slices, chains := n/4, n/2
		budgets := make([]float64, slices)
		for i := range budgets {
			budgets[i] = 1000
		}
		for _, kind := range kinds {
			name := "x1"
			if kind == "slice" {
				name = "c2"
			}
			for _, check := range []string{"incremental", "full"} {
				b.Run(fmt.Sprintf("cubes=%d/%s/%s", n, kind, check), func(b *testing.B) {
					a := testAdmission(5000)
					tops := [2]*cube.Topology{slicedSite(slices, chains, nil, budgets), nil}
					tops[1] = slicedSite(slices, chains, map[string]float64{name: 30}, budgets)
					for c := range tops[1].Cubes() {
						if c != name {
							tops[1].ShareCube(c, tops[0])
						}
					}
					ch := func(i int) estimate.Change { return changeOf(uint64(i), tops[i%2], tops[(i+1)%2]) }
					if err := a.CheckChange(ch(0)); err != nil { // the first prices everything
						b.Fatal(err)
					}
					b.ResetTimer()
					start := time.Now()
					for i := 0; i < b.N; i++ {
						var err error
						if check == "full" {
							err = a.Check(tops[i%2], tops[(i+1)%2])
						} else {
							err = a.CheckChange(ch(i + 1))
						}
						if err != nil {
							b.Fatal(err)
						}
					}
					us := float64(time.Since(start).Microseconds()) / float64(b.N)
					got[fmt.Sprintf("%d/%s/%s", n, kind, check)] = us
					b.ReportMetric(us, "µs/change")
					b.ReportMetric(0, "ns/op")
				})
			}
		}
	}
	out := os.Getenv("EDGENF_ADMIT_BENCH_OUT")
	if out == "" || len(got) != len(sizes)*len(kinds)*2 {
		return
	}
	md := "## Admission check cost per change\n\n`EDGENF_ADMIT_BENCH_OUT=… go test -run XXX -bench '^BenchmarkAdmission$' -benchtime 20x ./internal/estimate` " +
		"(`make bench`): the estimator's admission check (`edgenfd -core-budget-ns`, slices' `budget_ns`) judging one change when the " +
		"topology holds N cubes, every slice with a budget: N/4 two-cube slices behind one slicer and N/2 one-cube chains. *far* changes " +
		"the cost of a cube of no slice, *slice* that of a cube in one slice (that slice's routes are walked again, each slice being a unit of the check). " +
		"*incremental* is the daemon's check (the starts whose walks read a changed cube, priced again); *full* prices every chain " +
		"before and after, as the check did before.\n\n" +
		"| change | N | incremental µs | full µs | full / incremental |\n|---|---:|---:|---:|---:|\n"
	for _, kind := range kinds {
		for _, n := range sizes {
			inc, full := got[fmt.Sprintf("%d/%s/incremental", n, kind)], got[fmt.Sprintf("%d/%s/full", n, kind)]
			md += fmt.Sprintf("| %s | %d | %.1f | %.1f | %.0f× |\n", kind, n, inc, full, full/inc)
		}
	}
	if err := os.WriteFile(out, []byte(md), 0o644); err != nil {
		b.Fatal(err)
	}
}
