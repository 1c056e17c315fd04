package ir

import (
	"math/bits"

	"github.com/edgenf/edgenf/internal/p4/sema"
	"github.com/edgenf/edgenf/internal/p4/syntax"
)

// ActionProfile is an action profile or action selector (v1model
// action_profile/action_selector; PSA ActionProfile/ActionSelector lower to
// the same thing). The tables it implements hold references, not actions:
//
// Members and groups live in ARRAY slots that the control plane allocates
// (tableruntime), so the data path resolves a reference with two inlined
// array lookups and no hashing of ids. An indirect table's value keeps the
// layout of Table, with [0:4] a reference: the kind in the top byte
// (RefMember or RefGroup) and the slot in the low RefSlotBits; [4:8] the
// member or group id, which the slot must still hold (a slot freed and
// reused by another member or group never runs for a stale reference).
//
// Each slot holds two halves after a live word, and a packet reads the
// live half: the control plane writes a member or group into the other
// half, then flips the live bit, so a packet sees the old value or the new
// one whole, never half of each. Before it writes a half that packets may
// still be reading (it was live before the last flip), the control plane
// waits for an RCU grace period, after which no packet that started before
// the flip is left (tableruntime/halves.go). A slot's value is [0:8] the
// live word (bit 0 the live half, the rest the CLOCK_MONOTONIC time of
// the last flip in ns, for the control plane), then half 0, then half 1.
// The profile's maps:
//
//	MemberMapName: ARRAY slot -> live word, two halves of MemberBytes: [0:4]
//	               action id (0: free slot), [4:8] member id,
//	               [MemberParamOff:] action parameters (big-endian, at the
//	               action's Param offsets)
//	GroupMapName:  ARRAY slot -> live word, two halves: [0:4] number of
//	               members n, [4:8] group id, [8:12] 1 when the slot is in
//	               use, [12:16] ceil(2^32/n) mod 2^32 (FastMod), then n
//	               (member slot u32, member id u32) pairs, at most
//	               MaxGroupSize
//	IndexMapName:  HASH (kind u32, id u32) -> slot u32, for the control
//	               plane only (the data path never reads it)
//
// A group picks member pair[hash % n], the hash (Algo over the table's
// selector keys packed as a field list, cut to OutputWidth bits) computed
// per packet: one flow always takes the same member while the group is
// unchanged.
type ActionProfile struct {
	Ent          *sema.Instance
	Name         string
	ID           uint32
	Selector     bool
	Algo         string // selectors: crc16, crc32, identity, csum16, xor16, random
	OutputWidth  int    // selectors: bits of the hash kept (1..64)
	Size         int    // members (and, separately, groups) the profile holds
	MaxGroupSize int
	Tables       []*Table
	Actions      []*TableAction // the actions members may use (the tables'; they must agree)
	MemberMap    string
	GroupMap     string
	IndexMap     string
	MemberBytes  int
}

// FastMod reports whether the data path takes hash % n as
// ((ceil(2^32/n) * hash mod 2^32) * n) >> 32, a multiplication instead of
// a division (Lemire, Kaser and Kurz, "Faster remainder by direct
// computation", 2019): exact when the hash's bits and those of the largest
// n fit in 32, as a 16-bit hash over groups of up to 1024 members does.
func (ap *ActionProfile) FastMod() bool {
	return ap.Selector && ap.OutputWidth+bits.Len(uint(ap.MaxGroupSize)) <= 32
}

// FastModMul is the multiplier FastMod takes for a group of n members.
func FastModMul(n uint32) uint32 {
	if n == 0 {
		return 0
	}
	return uint32((1<<32 + uint64(n) - 1) / uint64(n))
}

// Reference kinds, the top byte of an indirect table's value ([0:4]);
// action ids never take them (their top byte is PrefixAction). The low
// RefSlotBits bits are the slot.
const (
	RefMember   = 0xfe
	RefGroup    = 0xff
	RefSlotBits = 24
)

// Slot value layout: the live word, then two halves (member or group).
const SlotLiveBytes = 8

// Group value layout (a half of GroupMapName's value).
const (
	GroupHeaderBytes = 16
	GroupPairBytes   = 8
)

// MemberParamOff is where action parameters start in a member value.
const MemberParamOff = 8

// DefaultMaxGroupSize bounds a group without @max_group_size; MaxGroupSize
// bounds @max_group_size (a group is one map value).
const (
	DefaultMaxGroupSize = 128
	MaxGroupSize        = 1024
)

var selectorAlgos = map[string]bool{"crc16": true, "crc32": true, "identity": true, "csum16": true, "xor16": true, "random": true}

// actionProfiles lowers the profiles the live tables use.
func (p *Program) actionProfiles(src *syntax.Sources, ids *idAlloc, mapName func(prefix, full string) string) syntax.ErrorList {
	var errs syntax.ErrorList
	byInst := map[*sema.Instance]*ActionProfile{}
	for _, t := range p.Tables {
		in := t.Ent.Implementation
		if in == nil {
			continue
		}
		ap := byInst[in]
		if ap == nil {
			ap = &ActionProfile{Ent: in, Name: in.FullName, Selector: sema.IsActionSelector(in), MaxGroupSize: DefaultMaxGroupSize}
			ap.ID = ids.id(PrefixActionProfile, in.FullName, in.Annots)
			sizeArg := 0
			if ap.Selector {
				sizeArg = 1
				if len(in.Decl.Args) > 0 {
					if m, ok := in.Decl.Args[0].Value.(*syntax.Member); ok {
						ap.Algo = m.Name
						if a, psa := psaHashAlgos[m.Name]; psa {
							ap.Algo = a // PSA's ActionSelector(PSA_HashAlgorithm_t.CRC16, ...)
						}
					}
				}
				if !selectorAlgos[ap.Algo] {
					errs = append(errs, src.Errorf(in.Decl.Pos, "unsupported: action selector %s: hash algorithm %q (edgenf supports crc16, crc32, identity, csum16, xor16 and random)", in.Name, ap.Algo))
				}
				ap.OutputWidth = 64
				if len(in.Args) > 2 {
					ap.OutputWidth = int(in.Args[2].Int64())
				}
				if ap.OutputWidth < 1 || ap.OutputWidth > 64 {
					errs = append(errs, src.Errorf(in.Decl.Pos, "action selector %s: output width %d out of range (1..64)", in.Name, ap.OutputWidth))
				}
			}
			if sizeArg < len(in.Args) {
				ap.Size = int(in.Args[sizeArg].Int64())
			}
			if ap.Size <= 0 || ap.Size > 1<<20 {
				errs = append(errs, src.Errorf(in.Decl.Pos, "action profile %s: size %d out of range (1..%d)", in.Name, ap.Size, 1<<20))
			}
			if a := in.Annots.Get("max_group_size"); a != nil && len(a.Args) == 1 {
				if lit, ok := a.Args[0].(*syntax.IntLit); ok && lit.Val.IsInt64() {
					ap.MaxGroupSize = int(lit.Val.Int64())
				}
				if ap.MaxGroupSize < 1 || ap.MaxGroupSize > MaxGroupSize {
					errs = append(errs, src.Errorf(in.Decl.Pos, "action profile %s: @max_group_size %d out of range (1..%d)", in.Name, ap.MaxGroupSize, MaxGroupSize))
					ap.MaxGroupSize = DefaultMaxGroupSize
				}
			}
			if a := in.Annots.Get("selector_size_semantics"); a != nil && len(a.Args) == 1 {
				if s, ok := a.Args[0].(*syntax.StringLit); ok && s.Value == "sum_of_weights" {
					errs = append(errs, src.Errorf(in.Decl.Pos, "unsupported: action profile %s: @selector_size_semantics(\"sum_of_weights\") (members have no weights in edgenf; use \"sum_of_members\")", in.Name))
				}
			}
			ap.Actions = append([]*TableAction(nil), t.Actions...)
			ap.MemberMap = mapName("apm_", in.FullName)
			ap.GroupMap = mapName("apg_", in.FullName)
			ap.IndexMap = mapName("api_", in.FullName)
			byInst[in] = ap
			p.ActionProfiles = append(p.ActionProfiles, ap)
		} else {
			// tables sharing a profile may list different actions (PSA
			// allows it): members may use any of them; a table runs only
			// the members whose action it lists (backend/selector.go)
			ap.Actions = unionActions(ap.Actions, t.Actions)
		}
		if len(t.SelectorKeys) > 0 && !ap.Selector {
			errs = append(errs, src.Errorf(t.Ent.Decl.Pos, "table %s has selector keys but its implementation %s is an action_profile, not an action_selector", t.Ent.Name, ap.Name))
		}
		t.Profile = ap
		ap.Tables = append(ap.Tables, t)
		// the table's values hold a reference, the members the data
		t.ValueBytes = align8(t.ParamOff)
		if t.Kind == KindScan {
			t.EntryBytes = t.EntryValueOff + t.ValueBytes
		}
	}
	for _, ap := range p.ActionProfiles {
		maxp := 0
		for _, ta := range ap.Actions {
			maxp = max(maxp, ta.Action.ParamBytes)
		}
		ap.MemberBytes = align8(MemberParamOff + maxp)
	}
	return errs
}

// unionActions is a followed by the actions of b it lacks.
func unionActions(a, b []*TableAction) []*TableAction {
	in := map[*Action]bool{}
	for _, x := range a {
		in[x.Action] = true
	}
	for _, x := range b {
		if !in[x.Action] {
			a = append(a, x)
		}
	}
	return a
}

// psaHashAlgos names PSA_HashAlgorithm_t's members as v1model's
// HashAlgorithm (TARGET_DEFAULT: CRC32, as backend/psa_externs.go).
var psaHashAlgos = map[string]string{"IDENTITY": "identity", "CRC32": "crc32", "CRC16": "crc16", "ONES_COMPLEMENT16": "csum16", "TARGET_DEFAULT": "crc32"}
