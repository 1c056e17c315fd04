package bridge

import (
	"testing"

	"github.com/edgenf/edgenf/internal/nftest"
)

// TestLayouts: every Go mirror of a struct of bpf/bridge.bpf.c has the C
// struct's layout in both objects (internal/btflayout; a field added on one
// side only fails here: internal/datapath's TestABICheckFailsOnOneSidedChange).
func TestLayouts(t *testing.T) {
	nftest.CheckLayouts(t, Type, map[string]any{
		"br_config":  kConfig{},
		"br_port":    kPort{},
		"br_vlan":    kVLAN{},
		"br_fdb_key": kFDBKey{},
		"br_fdb_val": kFDBVal{},
	})
}
