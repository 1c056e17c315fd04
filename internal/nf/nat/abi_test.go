package nat

import (
	"testing"

	"github.com/edgenf/edgenf/internal/nftest"
)

// TestLayouts: every Go mirror of a struct of bpf/nat.bpf.c has the C
// struct's layout in both objects (internal/btflayout; a field added on one
// side only fails here: internal/datapath's TestABICheckFailsOnOneSidedChange).
func TestLayouts(t *testing.T) {
	nftest.CheckLayouts(t, Type, map[string]any{
		"nat_cfg":      kcfg{},
		"nat_lpm_key":  lpmKey{},
		"nat_snat_val": snatVal{},
		"nat_addr_val": addrVal{},
		"nat_pf_key":   pfKey{},
		"nat_pf_val":   pfVal{},
		"nat_sess":     sess{},
	})
}
