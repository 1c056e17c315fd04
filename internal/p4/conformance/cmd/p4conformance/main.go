// Command p4conformance runs p4c's sample programs through edgenf's P4
// compiler and STF runner (package conformance): `make p4-conformance
// P4C_DIR=/path/to/p4c`. It prints a table of every program with the first
// error of each failure, and with -doc writes the summary into the
// generated section of docs/p4-guide.md. Run it as root (STF tests load
// BPF programs).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/edgenf/edgenf/internal/p4/conformance"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "p4-conformance:", err)
		os.Exit(2)
	}
}

func run() error {
	p4c := flag.String("p4c", os.Getenv("P4C_DIR"), "p4c checkout to read the programs from ($P4C_DIR)")
	edgenf := flag.String("edgenf", "bin/edgenf", "edgenf CLI to run")
	timeout := flag.Duration("timeout", 90*time.Second, "limit per program")
	parallel := flag.Int("j", runtime.NumCPU(), "programs run at once")
	doc := flag.String("doc", "", "write the summary into this document's generated section (docs/p4-guide.md)")
	match := flag.String("run", "", "only programs whose name contains this")
	suite := flag.String("suite", "", "only this suite: v1model, psa-compile or psa-stf")
	flag.Parse()
	if *p4c == "" {
		return errors.New("no p4c checkout: set P4C_DIR (make p4-conformance P4C_DIR=/path/to/p4c) or -p4c")
	}
	if os.Geteuid() != 0 {
		return errors.New("run as root: STF tests load eBPF programs (sudo make p4-conformance ...)")
	}
	if _, err := os.Stat(*edgenf); err != nil {
		return fmt.Errorf("no edgenf CLI at %s (make build)", *edgenf)
	}
	bin, err := filepath.Abs(*edgenf)
	if err != nil {
		return err
	}
	cases, err := conformance.Discover(*p4c)
	if err != nil {
		return err
	}
	suites := map[string]conformance.Suite{"v1model": conformance.V1ModelSTF, "psa-compile": conformance.PSACompile, "psa-stf": conformance.PSASTF}
	if *suite != "" && suites[*suite] == "" {
		return fmt.Errorf("unknown suite %q (v1model, psa-compile, psa-stf)", *suite)
	}
	var sel []conformance.Case
	for _, c := range cases {
		if strings.Contains(c.Name, *match) && (*suite == "" || c.Suite == suites[*suite]) {
			sel = append(sel, c)
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	r := conformance.Runner{Edgenf: bin, Timeout: *timeout, Parallel: *parallel}
	n := 0
	outs, err := r.Run(ctx, sel, func(o conformance.Outcome) {
		n++
		res := "pass"
		if !o.Pass {
			res = "FAIL " + o.First
		}
		fmt.Fprintf(os.Stderr, "[%d/%d] %s %s: %s\n", n, len(sel), o.Suite, o.Name, res)
	})
	if err != nil {
		return err
	}
	if err := conformance.WriteTable(os.Stdout, outs); err != nil {
		return err
	}
	if *doc != "" {
		if *match != "" || *suite != "" {
			return errors.New("-doc records whole runs only (drop -run and -suite)")
		}
		src := "p4c's `" + conformance.SamplesDir + "` and `" + conformance.EBPFTests + "`"
		if err := conformance.UpdateFile(*doc, conformance.Markdown(outs, src)); err != nil {
			return err
		}
		fmt.Printf("\nwrote the summary into %s\n", *doc)
	}
	return nil
}
