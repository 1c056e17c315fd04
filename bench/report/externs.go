package report

import "os"

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

func externCostSection() string {
	var out string
	for _, f := range []string{AccuracyFile, ExternCostFile, PFCPFile} {
		if b, err := os.ReadFile(f); err == nil {
			out += string(b) + "\n"
		}
	}
	return out
}
