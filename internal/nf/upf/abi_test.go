package upf

import (
	"testing"

	"github.com/edgenf/edgenf/internal/nftest"
)

// TestLayouts: every Go mirror of a struct of bpf/upf.bpf.c has the C
// struct's layout in both objects (internal/btflayout; a field added on one
// side only fails here: internal/datapath's TestABICheckFailsOnOneSidedChange).
func TestLayouts(t *testing.T) {
	nftest.CheckLayouts(t, Type, map[string]any{
		"upf_port":      kPort{},
		"upf_list":      kList{},
		"upf_rule":      kRule{},
		"upf_sdf":       kSDF{},
		"upf_far":       kFAR{},
		"upf_qer":       kQER{},
		"upf_urr":       kURR{},
		"upf_count":     kBlock{},
		"upf_neigh_key": kNeighKey{},
		"upf_neigh":     kNeigh{},
		"upf_cfg":       kCfg{},
		"upf_urr_rep":   kRep{},
		"upf_pool":      kPool{},
		"upf_pools":     kPools{},
		"upf_ue_list":   kUEList{},
	})
}
