// Command accuracy checks the cost estimator against measurements on this
// machine and writes the section of docs/performance.md that reports it,
// and the P4 extern cost table from the same run's calibration (make bench
// runs it before the report):
//
//	go run ./bench/cmd/accuracy -o bench/results/estimate-accuracy.md
//	go run ./bench/cmd/accuracy -quick -o /tmp/acc.md   # short calibration, fewer rounds
//	go run ./bench/cmd/accuracy -profile /var/lib/edgenf/estimate/xdp.json
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/edgenf/edgenf/bench/accuracy"
	_ "github.com/edgenf/edgenf/internal/nf/all" // NF types and their cost models
)

func main() {
	out := flag.String("o", "bench/results/estimate-accuracy.md", "markdown section to write (JSON beside it)")
	externs := flag.String("externs", "bench/results/p4-extern-cost.md", "the P4 extern cost table, from the run's calibration (\"\": not written; nor with -profile)")
	quick := flag.Bool("quick", false, "short calibration, fewer rounds")
	profile := flag.String("profile", "", "use this profile instead of calibrating in the run")
	rounds := flag.Int("rounds", 0, "interleaved rounds (default 21, quick 5)")
	timeout := flag.Duration("timeout", 10*time.Minute, "bound for the whole run")
	flag.Parse()
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	res, err := accuracy.Run(ctx, accuracy.Config{Profile: *profile, Quick: *quick, Rounds: *rounds,
		Log: func(f string, a ...any) { fmt.Fprintf(os.Stderr, f+"\n", a...) }})
	if err != nil {
		fmt.Fprintln(os.Stderr, "accuracy:", err)
		os.Exit(1)
	}
	if err := os.WriteFile(*out, []byte(res.Markdown()), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "accuracy:", err)
		os.Exit(1)
	}
	if *externs != "" && *profile == "" {
		if err := os.WriteFile(*externs, []byte(accuracy.ExternTable(res.Costs)), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "accuracy:", err)
			os.Exit(1)
		}
	}
	b, _ := json.MarshalIndent(res, "", "  ")
	js := strings.TrimSuffix(*out, ".md") + ".json"
	if err := os.WriteFile(js, append(b, '\n'), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "accuracy:", err)
		os.Exit(1)
	}
	fmt.Fprintf(os.Stderr, "accuracy: %d held-out cases, mean absolute error %.1f%%, maximum %.1f%%; wrote %s and %s\n",
		res.HeldOut, 100*res.MAE, 100*res.Max, *out, js)
}
