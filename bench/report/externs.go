package report

import "os"

// ExternCostFile is the P4 extern cost table written by
// `EDGENF_EXTERN_COST_OUT=bench/results/p4-extern-cost.md go test -run XXX
// -bench ExternCost -benchtime 1x ./internal/p4/stf`; the report includes
// it as it is (a micro-benchmark of generated code, not a traffic scenario).
const ExternCostFile = "bench/results/p4-extern-cost.md"

// PFCPFile is the PFCP session establishment benchmark written by
// `EDGENF_PFCP_BENCH_OUT=bench/results/upf-pfcp.md go test -run XXX -bench
// PFCPEstablishment -benchtime 1x ./internal/pfcp/agent` (the upf's control
// plane: establishments per second and memory per session).
const PFCPFile = "bench/results/upf-pfcp.md"

func externCostSection() string {
	var out string
	for _, f := range []string{ExternCostFile, PFCPFile} {
		if b, err := os.ReadFile(f); err == nil {
			out += string(b) + "\n"
		}
	}
	return out
}
