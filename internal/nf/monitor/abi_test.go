package monitor

import (
	"testing"

	"github.com/edgenf/edgenf/internal/nf/counters"
	"github.com/edgenf/edgenf/internal/nftest"
)

// TestLayouts: every Go mirror of a struct of bpf/monitor.bpf.c has the C
// struct's layout in both objects (internal/btflayout; a field added on one
// side only fails here: internal/datapath's TestABICheckFailsOnOneSidedChange).
func TestLayouts(t *testing.T) {
	nftest.CheckLayouts(t, Type, map[string]any{
		"enf_traffic": counters.Traffic{},
	})
}
