package accuracy

import (
	"fmt"
	"math"
	"sort"
	"strings"
)

// Markdown renders the report's section.
func (r *Results) Markdown() string {
	var b strings.Builder
	w := func(f string, a ...any) { fmt.Fprintf(&b, f, a...) }
	w("## Cost estimator accuracy\n\n")
	w("`edgenf estimate` against `BPF_PROG_TEST_RUN` (ns per packet, XDP): every example P4 program (the packet of its `.stf` named in the notes, on the path the estimate prices), every built-in NF type in configurations its model was not fitted on, and chains of 2 to 5 cubes deployed by the engine on veths. ")
	w("The profile was made in this run (%s). Rows marked *calibration* repeat a configuration the calibration measured: they are shown, not counted. ", r.Profile)
	w("Measured: mean of the middle half of interleaved rounds, each frame restored before every run (`internal/estimate/measure`); in brackets the middle half's range. Load average %s; %s, took %s.\n\n", r.Load, r.Host, r.Duration)
	met := func(ok bool) string {
		if ok {
			return "yes"
		}
		return "**no**"
	}
	w("| figure | value | target | met |\n|---|---:|---:|---|\n")
	w("| held-out programs and chains | %d | ≥ 12 | %s |\n", r.HeldOut, met(r.HeldOut >= 12))
	w("| mean absolute error | %.1f%% | ≤ %.0f%% | %s |\n", 100*r.MAE, 100*TargetMAE, met(r.MAE <= TargetMAE))
	w("| maximum error | %.1f%% | ≤ %.0f%% | %s |\n", 100*r.Max, 100*TargetMax, met(r.Max <= TargetMax))
	if r.NotMeasured > 0 {
		w("| held-out cases not measured (see the table) | %d | 0 | %s |\n", r.NotMeasured, met(false))
	}
	w("\n")
	w("| case | kind | measured ns | estimated ns | error | notes |\n|---|---|---:|---:|---:|---|\n")
	rows := append([]Row(nil), r.Rows...)
	sort.SliceStable(rows, func(i, j int) bool { return kindRank(rows[i].Kind) < kindRank(rows[j].Kind) })
	for _, x := range rows {
		if x.Failed != "" {
			w("| %s | %s | – | – | – | not measured: %s |\n", x.Name, x.Kind, esc(x.Failed))
			continue
		}
		note := x.Detail
		if x.Calibration {
			note = "*calibration*; " + note
		}
		w("| %s | %s | %.1f (%.1f–%.1f) | %.1f | %+.1f%% | %s |\n", x.Name, x.Kind, x.Measured, x.Lo, x.Hi, x.Estimated, 100*x.Error, esc(note))
	}
	w("\n### The seed's two network functions\n\n")
	w("Seed 003 estimated the latency of two network functions on a Netronome SmartNIC from tables of measured constructs (parsed and modified headers, tables). The same functions, written in P4 for edgenf (`examples/p4/l3fwd.p4`, `examples/p4/l3fwd_firewall.p4`), estimated by edgenf's model on this machine:\n\n")
	w("| function | seed: measured / estimated | seed: error | edgenf: measured / estimated | edgenf: error |\n|---|---:|---:|---:|---:|\n")
	for _, x := range r.Rows {
		if x.Seed == nil {
			continue
		}
		s := x.Seed
		if x.Failed != "" {
			w("| %s | %.0f / %.0f ns | %.0f ns (%.1f%%) | – | not measured |\n", s.Function, s.Measured, s.Estimated, s.ErrNS(), 100*s.ErrNS()/s.Measured)
			continue
		}
		w("| %s | %.0f / %.0f ns | %.0f ns (%.1f%%) | %.1f / %.1f ns | %.1f ns (%.1f%%) |\n", s.Function, s.Measured, s.Estimated, s.ErrNS(), 100*s.ErrNS()/s.Measured,
			x.Measured, x.Estimated, math.Abs(x.Estimated-x.Measured), 100*math.Abs(x.Error))
	}
	w("\nThe seed's latencies are end to end through a SmartNIC (µs); edgenf's are the eBPF processing of one packet in the kernel (ns): the relative errors compare, the absolute ones do not.\n")
	return b.String()
}

func kindRank(k string) int {
	return map[string]int{"P4 program": 0, "NF": 1, "chain": 2}[k]
}

func esc(s string) string { return strings.NewReplacer("|", "\\|", "\n", " ").Replace(s) }
