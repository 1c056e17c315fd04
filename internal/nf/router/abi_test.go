package router

import (
	"testing"

	"github.com/edgenf/edgenf/internal/nftest"
)

// TestLayouts: every Go mirror of a struct of bpf/router.bpf.c has the C
// struct's layout in both objects (internal/btflayout; a field added on one
// side only fails here: internal/datapath's TestABICheckFailsOnOneSidedChange).
func TestLayouts(t *testing.T) {
	nftest.CheckLayouts(t, Type, map[string]any{
		"rt_port":       kPort{},
		"rt_route_key":  kRouteKey{},
		"rt_route":      kRoute{},
		"rt_arp":        kARP{},
		"rt_gen":        kGen{},
		"rt_route6_key": kRoute6Key{},
		"rt_route6":     kRoute6{},
		"rt_neigh6_key": kNeigh6Key{},
		"rt_src_key":    kSrcKey{},
		"rt_src6_key":   kSrc6Key{},
	})
}
