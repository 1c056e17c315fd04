package firewall

import (
	"testing"

	"github.com/edgenf/edgenf/internal/nf/conntrack"
	"github.com/edgenf/edgenf/internal/nf/counters"
	"github.com/edgenf/edgenf/internal/nftest"
)

// TestLayouts: every Go mirror of a struct of bpf/firewall.bpf.c has the C
// struct's layout in both objects (internal/btflayout; a field added on one
// side only fails here: internal/datapath's TestABICheckFailsOnOneSidedChange).
func TestLayouts(t *testing.T) {
	nftest.CheckLayouts(t, Type, map[string]any{
		"fw_meta":     kmeta{},
		"fw_rule":     krule{},
		"fw_cfg":      kcfg{},
		"fw_lpm_key":  lpmKey{},
		"fw_cls_key":  clsKey{},
		"fw_conn":     kconn{},
		"enf_traffic": counters.Traffic{},
		"ct_tuple46":  conntrack.Tuple46{},
		"ct_conn":     conntrack.Conn{},
		"ct_timeouts": conntrack.KTimeouts{},
	})
}
