package upf

import (
	"bytes"
	"testing"
	"unsafe"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"

	"github.com/edgenf/edgenf/internal/nftest"
)

// TestLayouts: every Go mirror of a struct of bpf/upf.bpf.c has the C
// struct's layout in both objects (internal/btflayout; a field added on one
// side only fails here: internal/datapath's TestABICheckFailsOnOneSidedChange).
func TestLayouts(t *testing.T) {
	nftest.CheckLayouts(t, Type, map[string]any{
		"upf_port":      kPort{},
		"upf_list":      kList{},
		"upf_more":      kMore{},
		"upf_hlist":     kHList{},
		"upf_teid_slot": kTEIDSlot{},
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

// TestSlotsAreOneCacheLine: what a packet reads of a slot array (a chosen
// TEID's slot, a pooled UE address's list: the key, the head line, the first
// rule's index) is one 64-octet line; the arrays are memory-mappable, so
// their values start on a page and every slot on a line.
func TestSlotsAreOneCacheLine(t *testing.T) {
	for name, size := range map[string]uintptr{
		"upf_teid_slot": unsafe.Sizeof(kTEIDSlot{}),
		"upf_ue_list":   unsafe.Sizeof(kUEList{}),
	} {
		if size != 64 {
			t.Errorf("%s: %d octets, want 64", name, size)
		}
	}
	for _, h := range Type.Hooks {
		obj, err := Type.Object(h)
		if err != nil {
			t.Fatal(err)
		}
		spec, err := ebpf.LoadCollectionSpecFromReader(bytes.NewReader(obj))
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"upf_teid_slots", "upf_ue_lists"} {
			if m := spec.Maps[name]; m == nil || m.Flags&unix.BPF_F_MMAPABLE == 0 || m.ValueSize != 64 {
				t.Errorf("%s object: %s: %+v, want a memory-mappable array of 64-octet values", h, name, m)
			}
		}
	}
}
