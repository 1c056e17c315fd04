package lb

import (
	"testing"

	"github.com/edgenf/edgenf/internal/nftest"
)

// TestLayouts: every Go mirror of a struct of bpf/lb.bpf.c has the C
// struct's layout in both objects (internal/btflayout; a field added on one
// side only fails here: internal/datapath's TestABICheckFailsOnOneSidedChange).
func TestLayouts(t *testing.T) {
	nftest.CheckLayouts(t, Type, map[string]any{
		"lb_port":     portVal{},
		"lb_svc_key":  svcKey{},
		"lb_svc":      svcVal{},
		"lb_backend":  beVal{},
		"lb_conn_key": connKey{},
		"lb_conn":     connVal{},
		"lb_be_stats": beStats{},
		"lb_vip":      vipKey{},
		"lb_nat":      natVal{},
		"lb_cfg":      cfgVal{},
	})
}
