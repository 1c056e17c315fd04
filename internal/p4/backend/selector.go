package backend

import (
	"fmt"
	"io"

	"github.com/edgenf/edgenf/internal/p4/ir"
	"github.com/edgenf/edgenf/internal/p4/syntax"
)

// Action profiles and selectors (ir/actprof.go for the layouts): an
// indirect table's value holds a reference to a member's or a group's
// slot; its runner resolves it to the member's value (two array lookups at
// most, which the verifier inlines), then runs the member's action as a
// direct table runs its own.

// emitProfileMaps declares each profile's member, group and index maps.
func (g *gen) emitProfileMaps(w io.Writer) {
	if len(g.p.ActionProfiles) > 0 {
		fmt.Fprintf(w, "/* an indirect table's runner: no member to run (empty group, stale or dangling reference); the table misses */\n#define P4_AP_MISS (-2)\n\n")
	}
	for _, ap := range g.p.ActionProfiles {
		sn := ir.Sanitize(ap.Name)
		kind := "action_profile"
		if ap.Selector {
			kind = fmt.Sprintf("action_selector %s/%d", ap.Algo, ap.OutputWidth)
		}
		fmt.Fprintf(w, "/* %s %s (%d), id 0x%08x: member slots, group slots of at most %d members (a live word, then two halves), and the control plane's id -> slot index */\n", kind, comment(ap.Name), ap.Size, ap.ID, ap.MaxGroupSize)
		fmt.Fprintf(w, "struct apm_%s { __u32 action; __u32 id; __u8 b[%d]; };\n", sn, ap.MemberBytes-ir.MemberParamOff)
		fmt.Fprintf(w, "struct apms_%s { __u64 live; struct apm_%s h[2]; };\n", sn, sn)
		fmt.Fprintf(w, "struct {\n\t__uint(type, BPF_MAP_TYPE_ARRAY);\n\t__uint(max_entries, %d);\n\t__type(key, __u32);\n\t__type(value, struct apms_%s);\n} %s SEC(\".maps\");\n", ap.Size, sn, ap.MemberMap)
		fmt.Fprintf(w, "struct apg_%s { __u32 n; __u32 id; __u32 live; __u32 mul; struct { __u32 slot; __u32 id; } m[%d]; };\n", sn, ap.MaxGroupSize)
		fmt.Fprintf(w, "struct apgs_%s { __u64 live; struct apg_%s h[2]; };\n", sn, sn)
		fmt.Fprintf(w, "struct {\n\t__uint(type, BPF_MAP_TYPE_ARRAY);\n\t__uint(max_entries, %d);\n\t__type(key, __u32);\n\t__type(value, struct apgs_%s);\n} %s SEC(\".maps\");\n", ap.Size, sn, ap.GroupMap)
		fmt.Fprintf(w, "struct {\n\t__uint(type, BPF_MAP_TYPE_HASH);\n\t__uint(max_entries, %d);\n\t__type(key, __u64);\n\t__type(value, __u32);\n} %s SEC(\".maps\");\n\n", 2*ap.Size, ap.IndexMap)
	}
}

// resolveMember emits, at the top of an indirect table's runner, the
// replacement of v (the entry's or default's reference) by the member's
// value: a member's slot directly, a group's member through the selector
// hash over the table's selector keys; of each slot, the live half (ir's
// slot layout: a change is written whole into the other half, then made
// live). A slot that no longer holds the
// referenced id (the control plane writes members before the references
// to them, so only a race with a deletion), a free slot or an empty group
// is a miss: the default action runs, unless the table has a
// psa_empty_group_action, which an empty group runs.
func (g *gen) resolveMember(t *ir.Table) {
	ap := t.Profile
	sn := ir.Sanitize(ap.Name)
	g.line("{")
	g.indent++
	g.line("__u32 ref = *(__u32 *)v, id = *(__u32 *)(v + 4), slot = ref & 0x%x;", 1<<ir.RefSlotBits-1)
	g.line("struct apms_%s *ms;", sn)
	g.line("struct apm_%s *mem;", sn)
	g.line("r->action = 0;")
	g.line("if (ref >> %d == 0x%02x) {", ir.RefSlotBits, ir.RefGroup)
	g.indent++
	g.line("struct apgs_%s *gs = bpf_map_lookup_elem(&%s, &slot);", sn, ap.GroupMap)
	g.line("struct apg_%s *grp = gs ? &gs->h[gs->live & 1] : 0;", sn)
	hashType := "__u32" // a 32-bit division when the hash fits
	if ap.Selector && ap.OutputWidth > 32 {
		hashType = "__u64"
	}
	g.line("%s h, i;", hashType)
	if eg := t.Ent.EmptyGroupAction; eg != nil {
		// PSA's psa_empty_group_action: a hit on an empty group runs it
		g.line("if (!grp || grp->id != id)")
		g.line("\treturn P4_AP_MISS;")
		g.line("if (!grp->n) {")
		g.indent++
		g.line("r->action = 0x%08x; /* psa_empty_group_action %s */", g.p.ActionOf[eg.Action].ID, comment(eg.Action.Name))
		g.tableAction(t, eg.Action, g.constData(eg))
		g.indent--
		g.line("}")
	} else {
		g.line("if (!grp || grp->id != id || !grp->n)")
		g.line("\treturn P4_AP_MISS;")
	}
	if ap.Selector {
		g.selectorHash(t, hashType)
	} else {
		g.line("h = 0; /* an action profile without selector: the group's first member */")
	}
	if ap.FastMod() {
		g.line("i = (__u32)(((__u64)(__u32)(grp->mul * h) * grp->n) >> 32); /* h %% n by direct computation (ir.ActionProfile.FastMod) */")
	} else {
		g.line("i = h %% grp->n;")
	}
	g.line("if (i >= %d)", ap.MaxGroupSize)
	g.line("\treturn P4_AP_MISS;")
	g.line("slot = grp->m[i].slot;")
	g.line("id = grp->m[i].id;")
	g.indent--
	g.line("} else if (ref >> %d != 0x%02x) {", ir.RefSlotBits, ir.RefMember)
	g.line("\treturn P4_AP_MISS;")
	g.line("}")
	g.line("ms = bpf_map_lookup_elem(&%s, &slot);", ap.MemberMap)
	g.line("if (!ms)")
	g.line("\treturn P4_AP_MISS;")
	g.line("mem = &ms->h[ms->live & 1];")
	g.line("if (!mem->action || mem->id != id)")
	g.line("\treturn P4_AP_MISS;")
	g.line("v = (__u8 *)mem;")
	g.indent--
	g.line("}")
}

// selectorHash sets h to the selector's hash of t's selector keys, packed
// as a field list (as hash() packs its data), cut to the output width.
func (g *gen) selectorHash(t *ir.Table, hashType string) {
	ap := t.Profile
	if ap.Algo == "random" {
		g.line("h = bpf_get_prandom_u32() & %s;", mask(ap.OutputWidth))
		return
	}
	var elems []syntax.Expr
	for _, k := range t.SelectorKeys {
		elems = append(elems, k.Ent.Elem.Expr)
	}
	pos := t.Ent.Decl.Pos
	bits := g.packList(&syntax.List{Pos: pos, Elems: elems})
	g.line("h = (%s)(%s & %s);", hashType, g.hashOf(ap.Algo, bits, pos, pos), mask(ap.OutputWidth))
}

// hashOf is the C expression of hash algorithm alg over the first bits
// bits of s->cbuf (packList).
func (g *gen) hashOf(alg string, bits int, pos, algPos syntax.Pos) string {
	nb := (bits + 7) / 8
	if c := g.slicedCRC(alg, nb); c != "" { // crcslice.go
		return c
	}
	switch alg {
	case "crc32":
		g.needCRC32 = true
		return fmt.Sprintf("p4_crc32(s->cbuf, %d)", nb)
	case "crc16":
		g.needCRC16 = true
		return fmt.Sprintf("p4_crc16(s->cbuf, %d)", nb)
	case "csum16":
		return fmt.Sprintf("p4_csum16(s->cbuf, %d)", nb)
	case "xor16":
		return fmt.Sprintf("p4_xor16(s->cbuf, %d)", nb)
	case "identity":
		if bits > 64 {
			g.unsupported(pos, "identity hash of more than 64 bits")
		}
		return unpack("s->cbuf", 0, max(bits, 1))
	}
	g.unsupported(algPos, "hash algorithm "+alg)
	return "0"
}
