package datapath

import (
	"testing"

	"github.com/edgenf/edgenf/internal/btflayout"
)

// mirrors are the framework's Go types that mirror a C struct of
// bpf/include/edgenf (types.h, copy.h), by the struct they mirror.
var mirrors = map[string]any{
	"edgenf_hop":            Hop{},
	"edgenf_md":             Metadata{},
	"edgenf_stats":          Stats{},
	"edgenf_config":         Config{},
	"edgenf_punt_hdr":       PuntHeader{},
	"edgenf_punt_budget":    PuntBudget{},
	"edgenf_inject_trailer": injectTrailer{},
	"edgenf_copy_cpu":       copyCPU{},
	"edgenf_copy":           copyRec{},
	"edgenf_copy_slot":      copySlot{},
}

// TestABIMatchesBTF: every Go mirror has the layout of its C struct, as
// the stub objects of both hooks were built.
func TestABIMatchesBTF(t *testing.T) {
	for name, obj := range map[string][]byte{"stub_xdp.o": stubXDP, "stub_tc.o": stubTC} {
		if err := btflayout.Check(obj, mirrors); err != nil {
			t.Errorf("%s:\n%v", name, err)
		}
	}
}

// TestABICheckFailsOnOneSidedChange: the check is not vacuous. A field
// added to the Go side only (or present in C only) is reported, by name and
// offset, and so is a field renamed or resized on one side.
func TestABICheckFailsOnOneSidedChange(t *testing.T) {
	type statsPlusGo struct { // a field Go has and C has not
		Stats
		Extra uint64
	}
	type statsSpare struct { // one in the place of C's padding: same size
		RxPackets, RxBytes, TxPackets, TxBytes, DropPackets, DropBytes, PuntPackets uint64
		Spare                                                                       uint64
	}
	type puntHdrMissingIfindex struct { // C's ifindex missing in Go
		Magic, Cube, InPort, Reason, Arg, PktLen uint32
		_                                        uint32
		Hook                                     uint32
	}
	type configRenamed struct { // same layout, another name
		InjectIface uint32
		_           [3]uint32
	}
	type hopWiderKind struct { // a field resized, shifting the rest
		Kind    uint64
		Ifindex uint32
		Slot    uint32
		Port    uint32
		NStack  uint8
		_       [3]uint8
		Stack   [MaxStack]uint16
		Dir     [MaxStack]Direction
	}
	for _, c := range []struct {
		cname  string
		goType any
	}{
		{"edgenf_stats", statsPlusGo{}},
		{"edgenf_stats", statsSpare{}},
		{"edgenf_punt_hdr", puntHdrMissingIfindex{}},
		{"edgenf_config", configRenamed{}},
		{"edgenf_hop", hopWiderKind{}},
	} {
		if err := btflayout.Check(stubXDP, map[string]any{c.cname: c.goType}); err == nil {
			t.Errorf("%T passed as a mirror of struct %s", c.goType, c.cname)
		} else {
			t.Logf("as expected: %v", err)
		}
	}
}
