// Package conformance measures edgenf's P4 compiler against p4c's own test
// programs, read in place from a p4c checkout (never copied): the v1model
// and PSA STF samples of testdata/p4_16_samples run through `edgenf p4
// test`, and the PSA programs of backends/ebpf/tests/p4testdata through
// `edgenf p4 compile`. Each program runs in its own edgenf process, bounded
// in time, so a crash or a hang is one failure, not the end of the run.
// `make p4-conformance` drives it (cmd/p4conformance); the report is a
// table for the terminal and a generated section of docs/p4-guide.md.
package conformance

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"
)

// Suite names a group of programs and what is asked of them.
type Suite string

const (
	V1ModelSTF Suite = "v1model STF" // p4_16_samples with an .stf, v1model: the packets must match
	PSASTF     Suite = "PSA STF"     // p4_16_samples with an .stf, psa.p4: the packets must match
	PSACompile Suite = "PSA compile" // backends/ebpf/tests/p4testdata: the program must compile
)

// Suites in report order.
var Suites = []Suite{V1ModelSTF, PSACompile, PSASTF}

// Case is one program of a suite.
type Case struct {
	Suite Suite
	Name  string // the program's file name without .p4
	P4    string // path of the program
	STF   string // path of its STF test; "" for compile-only suites
}

// Layout of a p4c checkout, relative to its root.
const (
	SamplesDir = "testdata/p4_16_samples"
	EBPFTests  = "backends/ebpf/tests/p4testdata"
)

// #include <v1model.p4>, <psa.p4>, <bmv2/psa.p4> (p4c's BMv2 flavour of PSA)
var includeRE = regexp.MustCompile(`(?m)^\s*#\s*include\s*[<"](?:[\w.-]+/)*(v1model|psa)\.p4[>"]`)

// Architecture is the architecture a program includes: "v1model", "psa",
// or "" (another or none).
func Architecture(src []byte) string {
	m := includeRE.FindSubmatch(src)
	if m == nil {
		return ""
	}
	return string(m[1])
}

// Discover lists the cases of a p4c checkout, sorted by suite and name.
// It fails when the directory is not a p4c checkout.
func Discover(p4c string) ([]Case, error) {
	samples, ebpf := filepath.Join(p4c, SamplesDir), filepath.Join(p4c, EBPFTests)
	for _, d := range []string{samples, ebpf} {
		if st, err := os.Stat(d); err != nil || !st.IsDir() {
			return nil, fmt.Errorf("%s is not a p4c checkout: no directory %s", p4c, d)
		}
	}
	var cases []Case
	stfs, err := filepath.Glob(filepath.Join(samples, "*.stf"))
	if err != nil {
		return nil, err
	}
	for _, s := range stfs {
		p := strings.TrimSuffix(s, ".stf") + ".p4"
		src, err := os.ReadFile(p)
		if err != nil {
			continue // an .stf of a program in another dialect (.p4 absent)
		}
		name := strings.TrimSuffix(filepath.Base(p), ".p4")
		switch Architecture(src) {
		case "v1model":
			cases = append(cases, Case{Suite: V1ModelSTF, Name: name, P4: p, STF: s})
		case "psa":
			cases = append(cases, Case{Suite: PSASTF, Name: name, P4: p, STF: s})
		}
	}
	progs, err := filepath.Glob(filepath.Join(ebpf, "*.p4"))
	if err != nil {
		return nil, err
	}
	for _, p := range progs {
		src, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		if Architecture(src) == "psa" {
			cases = append(cases, Case{Suite: PSACompile, Name: strings.TrimSuffix(filepath.Base(p), ".p4"), P4: p})
		}
	}
	sort.Slice(cases, func(i, j int) bool {
		if cases[i].Suite != cases[j].Suite {
			return suiteIndex(cases[i].Suite) < suiteIndex(cases[j].Suite)
		}
		return cases[i].Name < cases[j].Name
	})
	return cases, nil
}

func suiteIndex(s Suite) int {
	for i, x := range Suites {
		if x == s {
			return i
		}
	}
	return len(Suites)
}

// Outcome is the result of one case.
type Outcome struct {
	Case
	Pass     bool
	Class    string // why it failed, as a class shared by similar failures
	First    string // the first error, one line
	Duration time.Duration
}

// Runner runs cases through an edgenf binary.
type Runner struct {
	Edgenf   string        // path of the edgenf CLI
	Timeout  time.Duration // per program
	Parallel int           // programs at once
}

// Args is the edgenf command line of a case, run in the program's
// directory (so that messages name files as p4c's tree does); out is a
// scratch directory for compile outputs.
func Args(c Case, out string) []string {
	arch := "v1model"
	if c.Suite != V1ModelSTF {
		arch = "psa"
	}
	if c.STF == "" {
		args := []string{"p4", "compile", filepath.Base(c.P4), "--arch", arch, "--out-dir", out}
		if c.Suite == PSACompile {
			// p4c's eBPF PSA tests name their ports PORT0..PORT5 and
			// PSA_RECIRC, defined by their harness (ptf/common.py)
			for i := range 6 {
				args = append(args, "-D", fmt.Sprintf("PORT%d=%d", i, i))
			}
			args = append(args, "-D", "PSA_RECIRC=PSA_PORT_RECIRCULATE")
		}
		return args
	}
	return []string{"p4", "test", filepath.Base(c.P4), filepath.Base(c.STF), "--arch", arch}
}

// Run runs every case, Parallel at a time, and calls done (serialised) as
// each finishes. Outcomes are in the order of cases.
func (r Runner) Run(ctx context.Context, cases []Case, done func(Outcome)) ([]Outcome, error) {
	scratch, err := os.MkdirTemp("", "p4-conformance-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(scratch)
	par := max(r.Parallel, 1)
	outs := make([]Outcome, len(cases))
	var (
		mu  sync.Mutex
		wg  sync.WaitGroup
		sem = make(chan struct{}, par)
	)
	for i, c := range cases {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			dir := filepath.Join(scratch, fmt.Sprint(i))
			o := r.one(ctx, c, dir)
			os.RemoveAll(dir)
			mu.Lock()
			outs[i] = o
			if done != nil {
				done(o)
			}
			mu.Unlock()
		}()
	}
	wg.Wait()
	return outs, ctx.Err()
}

func (r Runner) one(ctx context.Context, c Case, dir string) Outcome {
	start := time.Now()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return Outcome{Case: c, Class: ClassHarness, First: err.Error()}
	}
	cctx, cancel := context.WithTimeout(ctx, r.Timeout)
	defer cancel()
	cmd := exec.CommandContext(cctx, r.Edgenf, Args(c, dir)...)
	cmd.Dir = filepath.Dir(c.P4)
	cmd.Env = append(os.Environ(), "EDGENF_SOCKET=/nonexistent") // never a daemon: these verbs run locally
	cmd.WaitDelay = 5 * time.Second
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	err := cmd.Run()
	o := Outcome{Case: c, Duration: time.Since(start)}
	if err == nil {
		o.Pass = true
		return o
	}
	timedOut := errors.Is(cctx.Err(), context.DeadlineExceeded)
	o.Class, o.First = Classify(buf.String(), timedOut, r.Timeout)
	return o
}
