package slicer

import (
	"testing"

	"github.com/edgenf/edgenf/internal/nftest"
)

// TestLayouts: every Go mirror of a struct of bpf/slicer.bpf.c has the C
// struct's layout in both objects (internal/btflayout; a field added on one
// side only fails here: internal/datapath's TestABICheckFailsOnOneSidedChange).
func TestLayouts(t *testing.T) {
	nftest.CheckLayouts(t, Type, map[string]any{
		"sl_cfg":      cfgVal{},
		"sl_slice":    sliceVal{},
		"sl_counters": counters{},
		"sl_policy":   policyVal{},
		"sl_lpm_key":  lpmKey{},
		"sl_teid_key": teidKey{},
		"sl_pfx4_key": pfx4Key{},
		"sl_pfx6_key": pfx6Key{},
	})
}
