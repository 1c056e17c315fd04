package report

import "os"

// ExternCostFile is the P4 extern cost table written by
// `EDGENF_EXTERN_COST_OUT=bench/results/p4-extern-cost.md go test -run XXX
// -bench ExternCost -benchtime 1x ./internal/p4/stf`; the report includes
// it as it is (a micro-benchmark of generated code, not a traffic scenario).
const ExternCostFile = "bench/results/p4-extern-cost.md"

func externCostSection() string {
	b, err := os.ReadFile(ExternCostFile)
	if err != nil {
		return ""
	}
	return string(b) + "\n"
}
