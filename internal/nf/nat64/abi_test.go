package nat64

import (
	"testing"

	"github.com/edgenf/edgenf/internal/nftest"
)

// TestLayouts: every Go mirror of a struct of bpf/nat64.bpf.c has the C
// struct's layout in both objects.
func TestLayouts(t *testing.T) {
	nftest.CheckLayouts(t, Type, map[string]any{
		"n64_cfg":  kcfg{},
		"n64_key6": key6{},
		"n64_key4": key4{},
		"n64_bib6": bib6{},
		"n64_bib4": bib4{},
		"n64_skey": skey{},
		"n64_sess": sess{},
	})
}
