package report

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
)

// AccuracyFile is the cost estimator's accuracy against measurements, and
// ExternCostFile the P4 extern cost table from the same run's calibration,
// both written by `go run ./bench/cmd/accuracy`; the report includes them
// as they are (micro-benchmarks with Program.Run, not traffic scenarios).
const (
	AccuracyFile   = "bench/results/estimate-accuracy.md"
	ExternCostFile = "bench/results/p4-extern-cost.md"
)

// PFCPFile is the PFCP session establishment benchmark written by
// `EDGENF_PFCP_BENCH_OUT=bench/results/upf-pfcp.md go test -run XXX -bench
// PFCPEstablishment -benchtime 1x ./internal/pfcp/agent` (the upf's control
// plane: establishments per second and memory per session).
const PFCPFile = "bench/results/upf-pfcp.md"

// UPFMemoryFile is a upf cube's kernel memory by its max_sessions (what the
// tenant's quota counts and what the kernel accounts), written by
// `EDGENF_UPF_MEMORY_OUT=bench/results/upf-memory.md go test -run XXX
// -bench UPFMemory -benchtime 1x ./internal/pfcp/agent`.
const UPFMemoryFile = "bench/results/upf-memory.md"

// IsolationFile is slice isolation under attack, written by `go run
// ./bench/cmd/isolation` (a victim's rate and p99 delay with an aggressor
// flooding, edgenf's slicer beside Linux tc htb classes and u32 filters).
const IsolationFile = "bench/results/slice-isolation.md"

// SliceCreateFile is slice creation time as a slicer fills to 1,000 slices,
// written by `EDGENF_SLICE_BENCH_OUT=bench/results/slice-create.md go test
// -run XXX -bench SliceCreate -benchtime 1x ./internal/nf/slicer`.
const SliceCreateFile = "bench/results/slice-create.md"

// EngineChangeFile is what one change costs the engine at 100, 1,000 and
// 3,000 cubes, written by `EDGENF_ENGINE_BENCH_OUT=bench/results/engine-change.md
// go test -run XXX -bench '^BenchmarkChange$' -benchtime 100x ./internal/engine`.
const EngineChangeFile = "bench/results/engine-change.md"

// AdmissionFile is what the admission check costs one change at 100, 1,000
// and 3,000 cubes with budgets set, written by
// `EDGENF_ADMIT_BENCH_OUT=bench/results/admission.md go test -run XXX
// -bench '^BenchmarkAdmission$' -benchtime 20x ./internal/estimate`.
const AdmissionFile = "bench/results/admission.md"

// PeeringFile is what peering 100 interfaces costs the caller, another
// change made meanwhile and a restart, written by
// `EDGENF_PEER_BENCH_OUT=bench/results/peering.md go test -run XXX -bench
// '^BenchmarkPeering$' -benchtime 1x ./internal/engine`.
const PeeringFile = "bench/results/peering.md"

func externCostSection() string {
	var out string
	for _, f := range []string{AccuracyFile, ExternCostFile, PFCPFile, UPFMemoryFile, IsolationFile, SliceCreateFile, EngineChangeFile, AdmissionFile, PeeringFile} {
		if b, err := os.ReadFile(f); err == nil {
			out += string(b) + "\n"
		}
	}
	return out
}

// accuracyHeadlineRows are the cost estimator's error figures, from the
// JSON beside AccuracyFile, as rows of the headline table (none when the
// accuracy was not measured).
func accuracyHeadlineRows() []string {
	b, err := os.ReadFile(strings.TrimSuffix(AccuracyFile, ".md") + ".json")
	if err != nil {
		return nil
	}
	var r struct {
		MAE       float64 `json:"mae"`
		Max       float64 `json:"max"`
		HeldOut   int     `json:"held_out"`
		TargetMAE float64 `json:"target_mae"`
		TargetMax float64 `json:"target_max"`
	}
	if json.Unmarshal(b, &r) != nil || r.HeldOut == 0 {
		return nil
	}
	met := func(ok bool) string {
		if ok {
			return "yes"
		}
		return "no"
	}
	return []string{
		fmt.Sprintf("| cost estimator (`edgenf estimate`) vs measured ns/packet: mean absolute error over %d held-out programs, NFs and chains ([table](#cost-estimator-accuracy)) | %.1f%% | ≤ %.0f%% | %s |",
			r.HeldOut, 100*r.MAE, 100*r.TargetMAE, met(r.MAE <= r.TargetMAE)),
		fmt.Sprintf("| cost estimator: maximum error | %.1f%% | ≤ %.0f%% | %s |", 100*r.Max, 100*r.TargetMax, met(r.Max <= r.TargetMax)),
	}
}
