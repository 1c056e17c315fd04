package upf

import (
	"fmt"

	"github.com/cilium/ebpf"
	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/nf/upf/model"
)

// A cube's map sizes follow its max_sessions setting (cube.Type.SizeMaps),
// so that a small UPF does not pay a large one's kernel memory in its
// tenant's kernel_memory_bytes quota, and a large one can be had. The
// object's compile-time sizes (upf.bpf.c UPF_MAX_*) are those of the
// default, DefaultMaxSessions; the fast path reads the two sizes it indexes
// by arithmetic from load-time constants (upf_rule_row, upf_teid_slot_mask),
// every other index is bounded by its array. The controller allocates
// indexes up to its maps' sizes (ctl.sizeIndexes), never these constants.

// Per session: two rules (uplink and downlink PDR) and FARs, one QER and
// URR, half an SDF filter set, two hash keys (a TEID and a UE address), a
// chosen TEID's slot and a pooled UE's slot and list, each with its entry
// of rules after the first.
var perSession = map[string]struct{ num, den uint32 }{
	"upf_rules": {2, 1}, "upf_fars": {2, 1}, "upf_qers": {1, 1}, "upf_urrs": {1, 1}, "upf_urr_rep": {1, 1},
	"upf_sdfs": {1, 2}, "upf_teid": {2, 1}, "upf_ue4": {2, 1}, "upf_ue6": {2, 1},
	"upf_teid_slots": {1, 1}, "upf_teid_more": {1, 1}, "upf_ue_slots": {1, 1}, "upf_ue_lists": {1, 1}, "upf_ue_more": {1, 1},
}

// The load-time constants of upf.bpf.c that bound its arithmetic indexes,
// and the counter row of the object as compiled.
const (
	constRuleRow   = "upf_rule_row"
	constSlotMask  = "upf_teid_slot_mask"
	defaultRuleRow = 2 * model.DefaultMaxSessions
)

// sizeMaps sizes the maps of a spec of the object for cube c's
// max_sessions, and gives upf_rule_count its row per possible CPU.
func sizeMaps(c *cube.Cube, spec *ebpf.CollectionSpec) error {
	cfg, err := model.DecodeConfig(c)
	if err != nil {
		return err
	}
	cpus, err := ebpf.PossibleCPU()
	if err != nil {
		return err
	}
	return sizeFor(spec, cfg.Sessions(), cpus)
}

// sizeFor sizes spec for sessions sessions on a machine of cpus possible
// CPUs.
func sizeFor(spec *ebpf.CollectionSpec, sessions uint32, cpus int) error {
	ms, ok := spec.Maps[mapRuleCount]
	if !ok {
		return fmt.Errorf("the object has no %s", mapRuleCount)
	}
	if ms.MaxEntries != defaultRuleRow {
		return fmt.Errorf("%s holds %d blocks, not one row of %d: sized already", mapRuleCount, ms.MaxEntries, defaultRuleRow)
	}
	row := 2 * sessions
	if cpus < 1 || uint64(cpus)*uint64(row) >= 1<<32 {
		return fmt.Errorf("%d possible CPUs: the counter rows of %d sessions need 1 to %d", cpus, sessions, (1<<32-1)/uint64(row))
	}
	for name, f := range perSession {
		m, ok := spec.Maps[name]
		if !ok {
			return fmt.Errorf("the object has no %s", name)
		}
		m.MaxEntries = sessions * f.num / f.den
	}
	ms.MaxEntries = uint32(cpus) * row
	for name, v := range map[string]uint32{constRuleRow: row, constSlotMask: sessions - 1} {
		vs, ok := spec.Variables[name]
		if !ok {
			return fmt.Errorf("the object has no constant %s", name)
		}
		if err := vs.Set(v); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
	return nil
}
