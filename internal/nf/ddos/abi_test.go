package ddos

import (
	"testing"

	"github.com/edgenf/edgenf/internal/btflayout"
	"github.com/edgenf/edgenf/internal/datapath"
	"github.com/edgenf/edgenf/internal/nftest"
)

// TestLayouts: every Go mirror of a struct of bpf/ddos.bpf.c has the C
// struct's layout in both objects (internal/btflayout; a field added on one
// side only fails here: internal/datapath's TestABICheckFailsOnOneSidedChange).
func TestLayouts(t *testing.T) {
	nftest.CheckLayouts(t, Type, map[string]any{
		"dd_lpm_key":   lpmKey{},
		"dd_entry":     entryVal{},
		"dd_block":     blockVal{},
		"dd_cfg":       cfgVal{},
		"dd_lpm4_key":  lpm4Key{},
		"dd_entry4":    entry4Val{},
		"dd_tab_len":   tabLenCfg{},
		"dd_tab_cfg":   tabCfg{},
		"dd_tab_entry": tabEntry{},
	})
}

// TestLayoutsCheckEmbedded: a Go embedded struct that mirrors a C struct
// member is still checked field by field: one that lacks a field, or a
// field renamed beside it, fails.
func TestLayoutsCheckEmbedded(t *testing.T) {
	type entryNoBytes struct{ Expires, Packets uint64 }
	type entry4Flat struct { // the C member e's fields split across Go's embedding
		entryNoBytes
		Bytes    uint64
		Len, Pad uint32
	}
	type entry4Renamed struct {
		entryVal
		Length, Pad uint32
	}
	obj, err := Type.Object(datapath.XDP)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []any{entry4Flat{}, entry4Renamed{}} {
		if err := btflayout.Check(obj, map[string]any{"dd_entry4": m}); err == nil {
			t.Errorf("%T passed as a mirror of struct dd_entry4", m)
		} else {
			t.Logf("as expected: %v", err)
		}
	}
}
