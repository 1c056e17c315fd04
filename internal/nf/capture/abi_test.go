package capture

import (
	"testing"

	"github.com/edgenf/edgenf/internal/nftest"
)

// TestLayouts: every Go mirror of a struct of bpf/capture.bpf.c has the C
// struct's layout in both objects (internal/btflayout; a field added on one
// side only fails here: internal/datapath's TestABICheckFailsOnOneSidedChange).
func TestLayouts(t *testing.T) {
	nftest.CheckLayouts(t, Type, map[string]any{
		"cap_config": kconfig{},
		"cap_insn":   kinsn{},
		"cap_stats":  kstats{},
	})
}
