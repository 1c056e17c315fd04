package slicer

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/nftest"
)

// BenchmarkSliceCreate reports what creating one slice costs through the
// engine (validate the change and the slice's chain entry, sync the
// slicer's maps, plan the entry's hops both ways, journal) as its slicer
// fills up to 1,000 slices, each leading straight into its own one-cube
// chain: the slice creation time at 1,000 slices. With
// EDGENF_SLICE_BENCH_OUT set, the figures are written there as markdown
// (make bench: bench/results/slice-create.md, in docs/performance.md).
func BenchmarkSliceCreate(b *testing.B) {
	const n, batch = 1000, 250
	// the edit check visits every cube: a benchmark measures without it
	b.Setenv("EDGENF_CHECK_EDITS", "0")
	for range b.N {
		e := nftest.Engine(b)
		for lo := 1; lo <= n; lo += batch {
			nftest.MustUpdate(b, e, func(tp *cube.Topology) error {
				for k := lo; k < lo+batch && k <= n; k++ {
					tp.Put(chainCube(k, "t", ""))
				}
				return nil
			})
		}
		nftest.MustUpdate(b, e, func(tp *cube.Topology) error {
			return tp.AddCube(&cube.Cube{Name: "sl", Type: "slicer", Hook: "tc", Config: json.RawMessage(`{"uplink":"up"}`),
				Tables: map[string]map[string]json.RawMessage{"slices": {}}, Ports: []cube.Port{{Name: "up", Index: 0}}})
		})
		took, cpu := make([]time.Duration, 0, n), make([]time.Duration, 0, n)
		for k := 1; k <= n; k++ {
			name := fmt.Sprintf("s%d", k)
			row := nftest.Entry(Slice{Name: name, ID: k, Tenant: "t", Chain: fmt.Sprintf("c%d:in", k),
				Rules: []Rule{{Dst: fmt.Sprintf("198.18.%d.%d", k>>8, k&0xff)}}})
			start, cpu0 := time.Now(), nftest.CPUTime()
			nftest.MustUpdate(b, e, func(tp *cube.Topology) error {
				sl, err := tp.Edit("sl")
				sl.SetRow("slices", name, row)
				return err
			})
			took, cpu = append(took, time.Since(start)), append(cpu, nftest.CPUTime()-cpu0)
		}
		var rows []string
		for _, span := range [][2]int{{0, 100}, {450, 550}, {900, 1000}} {
			d := slices.Clone(took[span[0]:span[1]])
			slices.Sort(d)
			ms := float64(d[len(d)/2].Microseconds()) / 1000
			var used time.Duration
			for _, c := range cpu[span[0]:span[1]] {
				used += c
			}
			cpuMs := float64(used.Microseconds()) / 1000 / float64(span[1]-span[0])
			b.ReportMetric(ms, fmt.Sprintf("ms/slice@%d", span[1]))
			b.ReportMetric(cpuMs, fmt.Sprintf("cpu-ms/slice@%d", span[1]))
			rows = append(rows, fmt.Sprintf("| %d–%d | %.2f ms | %.2f ms | %.2f ms |", span[0], span[1], ms, float64(d[len(d)*9/10].Microseconds())/1000, cpuMs))
		}
		b.ReportMetric(0, "ns/op")
		if out := os.Getenv("EDGENF_SLICE_BENCH_OUT"); out != "" {
			md := "## Slice creation at scale\n\n`EDGENF_SLICE_BENCH_OUT=… go test -run XXX -bench SliceCreate -benchtime 1x ./internal/nf/slicer` " +
				"(`make bench`): one slicer filled with 1,000 slices, one `Update` each through the engine, every slice leading " +
				"straight into its own one-cube chain (`chain`; the 1,000 portfwd cubes exist first). Wall time per slice " +
				"created, by how many the slicer held already, and the process's CPU time (user and system) per slice, " +
				"steadier on a shared machine:\n\n| slices already | median | 90th percentile | CPU, mean |\n|---|---:|---:|---:|\n" +
				strings.Join(rows, "\n") + "\n"
			if err := os.WriteFile(out, []byte(md), 0o644); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// BenchmarkSlicerSideChange is what one change of one slice costs the
// slicer itself, without the engine around it: check the slice against
// the others (Slice.Validate), the settings against the slices, list the
// chain entries (the engine's SliceChains, twice), and Sync the maps. Each
// operation adds or deletes one slice of a slicer holding held slices,
// each with its own chain entry and dst rule; the cube is copied for each
// change as the engine copies it (entries shared), outside the timing.
func BenchmarkSlicerSideChange(b *testing.B) {
	for _, held := range []int{100, 500, 1000} {
		b.Run(fmt.Sprintf("held=%d", held), func(b *testing.B) {
			slice := func(k int) Slice {
				return Slice{Name: fmt.Sprintf("s%d", k), ID: k, Tenant: "t", Chain: fmt.Sprintf("c%d:in", k),
					Rules: []Rule{{Dst: fmt.Sprintf("198.18.%d.%d", k>>8, k&0xff)}}}
			}
			c := &cube.Cube{Name: "sl", Type: "slicer", Hook: "tc", Config: json.RawMessage(`{"uplink":"up"}`),
				Ports: []cube.Port{{Name: "up", Index: 0}}, Tables: map[string]map[string]json.RawMessage{"slices": {}}}
			for k := 1; k < held; k++ {
				c.SetRow("slices", fmt.Sprintf("s%d", k), nftest.Entry(slice(k)))
			}
			r := nftest.New(b, Type, c)
			set := &Settings{Uplink: "up"}
			extra := slice(held)
			row := nftest.Entry(extra)
			b.ResetTimer()
			for i := range b.N {
				b.StopTimer()
				next := c.Clone()
				if i%2 == 0 {
					next.SetRow("slices", extra.Name, row)
				} else {
					next.SetRow("slices", extra.Name, nil)
				}
				b.StartTimer()
				if i%2 == 0 {
					if err := extra.Validate(next); err != nil {
						b.Fatal(err)
					}
				}
				if err := set.Validate(next); err != nil {
					b.Fatal(err)
				}
				chainsOf(next)
				chainsOf(next)
				if err := r.Ctl.Sync(r.Handle(), next); err != nil {
					b.Fatal(err)
				}
				c = next
			}
		})
	}
}
