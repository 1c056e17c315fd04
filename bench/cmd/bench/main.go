// Command bench runs the edgenf benchmarks and writes the report.
//
//	go run ./bench/cmd/bench -o docs/performance.md           # everything (make bench)
//	go run ./bench/cmd/bench -quick -o bench/results/quick.md # quick mode (make bench-quick)
//	go run ./bench/cmd/bench -run bridge,ip-forward -reps 3   # some scenarios or groups
//	go run ./bench/cmd/bench -list
//	go run ./bench/cmd/bench -from bench/results/performance.json -o docs/performance.md
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/edgenf/edgenf/bench"
	"github.com/edgenf/edgenf/bench/report"
	"github.com/edgenf/edgenf/bench/scenario"
	_ "github.com/edgenf/edgenf/bench/scenarios"
)

func main() {
	quick := flag.Bool("quick", false, "quick mode: fewer scenarios, short trials (< 2 min)")
	out := flag.String("o", "docs/performance.md", "markdown report path (plots go to <dir>/img, JSON beside the report unless -json)")
	jsonOut := flag.String("json", "", "JSON results path (default: bench/results/<report name>.json)")
	only := flag.String("run", "", "comma-separated scenario names or groups (default: all, or the quick set)")
	reps := flag.Int("reps", 0, "repetitions per scenario (default 5, quick 2)")
	window := flag.Duration("window", 0, "measured window per trial")
	size := flag.Int("size", 0, "frame size in bytes (default 64)")
	flows := flag.Int("flows", 0, "number of flows (default 16)")
	cpus := flag.Int("cpus", 0, "generator CPUs (default 1)")
	lat := flag.Int("lat", -1, "paced packets per latency measurement (0: off)")
	timeout := flag.Duration("timeout", 60*time.Minute, "bound for the whole run (every scenario at 5 repetitions: over 40 minutes since the upf groups; a run cut short says so and which groups it missed)")
	list := flag.Bool("list", false, "list scenarios and exit")
	from := flag.String("from", "", "re-render the report (-o) from this JSON results file, measuring nothing")
	flag.Parse()

	if *from != "" {
		b, err := os.ReadFile(*from)
		var res bench.Results
		if err == nil {
			err = json.Unmarshal(b, &res)
		}
		if err == nil {
			bench.AddSpread(&res) // results recorded before the spread was
			err = report.Write(&res, *out, *from)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
		return
	}

	if *list {
		for _, s := range scenario.All() {
			q := ""
			if s.Quick {
				q = " (quick)"
			}
			b := ""
			if s.Baseline {
				b = " [baseline]"
			}
			fmt.Printf("%-12s %-18s%s%s %s\n", s.Group, s.Name, b, q, s.Doc)
		}
		return
	}
	c := bench.DefaultConfig(*quick)
	if *only != "" {
		c.Only = strings.Split(*only, ",")
	}
	if *reps > 0 {
		c.Reps = *reps
	}
	if *window > 0 {
		c.Window = *window
	}
	if *size > 0 {
		c.FrameSize = *size
	}
	if *flows > 0 {
		c.Flows = *flows
	}
	if *cpus > 0 {
		c.CPUs = *cpus
	}
	if *lat >= 0 {
		c.LatPackets = *lat
	}
	c.Log = func(f string, a ...any) { fmt.Fprintf(os.Stderr, f+"\n", a...) }
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()

	res, err := bench.Run(ctx, c)
	if err != nil && res == nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
	if *jsonOut == "" {
		*jsonOut = filepath.Join("bench/results", strings.TrimSuffix(filepath.Base(*out), filepath.Ext(*out))+".json")
	}
	if werr := report.Write(res, *out, *jsonOut); werr != nil {
		fmt.Fprintln(os.Stderr, "bench: write report:", werr)
		os.Exit(1)
	}
	fmt.Fprintf(os.Stderr, "bench: wrote %s and %s\n", *out, *jsonOut)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}
