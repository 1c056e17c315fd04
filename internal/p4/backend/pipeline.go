package backend

import (
	"fmt"

	"github.com/edgenf/edgenf/internal/p4/ir"
)

// The program's maps and the parts of the pipeline function every
// architecture shares (its start and how it sends the frame); each
// architecture's pipeline is in its file (v1model.go, psa.go).

// ---------- maps ----------

func (g *gen) emitMaps() {
	w := &g.maps
	for _, t := range g.p.Tables {
		fmt.Fprintf(w, "/* table %s (%s), id 0x%08x */\n", comment(t.Name), t.Kind, t.ID)
		vs := fmt.Sprintf("tv_%s", ir.Sanitize(t.Name))
		g.valueStruct(w, vs, 0, t.ValueBytes, t)
		switch t.Kind {
		case ir.KindHash:
			fmt.Fprintf(w, "struct tk_%s { __u8 b[%d]; };\n", ir.Sanitize(t.Name), t.KeyBytes)
			fmt.Fprintf(w, "struct {\n\t__uint(type, BPF_MAP_TYPE_HASH);\n\t__uint(max_entries, %d);\n\t__type(key, struct tk_%s);\n\t__type(value, struct %s);\n} %s SEC(\".maps\");\n", t.Size, ir.Sanitize(t.Name), vs, t.MapName)
			g.bufs = append(g.bufs, fmt.Sprintf("__u8 k_%s[%d]", ir.Sanitize(t.Name), t.KeyBytes))
		case ir.KindLPM:
			fmt.Fprintf(w, "struct tk_%s { __u32 prefixlen; __u8 b[%d]; } __attribute__((packed));\n", ir.Sanitize(t.Name), t.KeyBytes)
			fmt.Fprintf(w, "struct {\n\t__uint(type, BPF_MAP_TYPE_LPM_TRIE);\n\t__uint(max_entries, %d);\n\t__uint(map_flags, BPF_F_NO_PREALLOC);\n\t__type(key, struct tk_%s);\n\t__type(value, struct %s);\n} %s SEC(\".maps\");\n", t.Size, ir.Sanitize(t.Name), vs, t.MapName)
			g.bufs = append(g.bufs, fmt.Sprintf("__u8 k_%s[%d] __attribute__((aligned(8)))", ir.Sanitize(t.Name), 4+t.KeyBytes))
		case ir.KindScan:
			g.valueStruct(w, "te_"+ir.Sanitize(t.Name), t.EntryValueOff, t.EntryBytes, t)
			fmt.Fprintf(w, "struct {\n\t__uint(type, BPF_MAP_TYPE_ARRAY);\n\t__uint(max_entries, %d);\n\t__type(key, __u32);\n\t__type(value, struct te_%s);\n} %s SEC(\".maps\");\n", t.Size, ir.Sanitize(t.Name), t.MapName)
			fmt.Fprintf(w, "/* number of slots of %s to scan (the control plane keeps it at the highest used slot + 1) */\n", t.MapName)
			fmt.Fprintf(w, "struct {\n\t__uint(type, BPF_MAP_TYPE_ARRAY);\n\t__uint(max_entries, 1);\n\t__type(key, __u32);\n\t__type(value, __u32);\n} %s SEC(\".maps\");\n", t.CountMapName)
			g.bufs = append(g.bufs, fmt.Sprintf("__u8 k_%s[%d]", ir.Sanitize(t.Name), t.KeyBytes))
		case ir.KindConst:
		}
		fmt.Fprintf(w, "struct {\n\t__uint(type, BPF_MAP_TYPE_ARRAY);\n\t__uint(max_entries, 1);\n\t__type(key, __u32);\n\t__type(value, struct %s);\n} %s SEC(\".maps\");\n\n", vs, t.DefaultMapName)
	}
	g.emitProfileMaps(w) // selector.go
	for _, v := range g.p.ValueSets {
		sn := ir.Sanitize(v.Name)
		fmt.Fprintf(w, "/* value_set %s (bit<%d>), id 0x%08x */\n", comment(v.Name), v.Width, v.ID)
		fmt.Fprintf(w, "struct {\n\t__uint(type, BPF_MAP_TYPE_ARRAY);\n\t__uint(max_entries, %d);\n\t__type(key, __u32);\n\t__type(value, struct p4_vs_member);\n} %s SEC(\".maps\");\n\n", v.Size, v.MapName)
		fmt.Fprintf(w, "static __always_inline int vs_match_%s(__u64 k)\n{\n#pragma unroll\n\tfor (__u32 i = 0; i < %d; i++) {\n\t\t__u32 idx = i;\n\t\tstruct p4_vs_member *m = bpf_map_lookup_elem(&%s, &idx);\n\n\t\tif (m && m->valid && (k & m->mask) == m->value)\n\t\t\treturn 1;\n\t}\n\treturn 0;\n}\n\n", sn, v.Size, v.MapName)
	}
	for _, r := range g.p.Registers {
		fmt.Fprintf(w, "/* register %s (%d x %d bits), id 0x%08x: shared by all CPUs, not per-CPU */\n", comment(r.Name), r.Size, r.Width, r.ID)
		fmt.Fprintf(w, "struct {\n\t__uint(type, BPF_MAP_TYPE_ARRAY);\n\t__uint(max_entries, %d);\n\t__type(key, __u32);\n\t__type(value, __u64);\n} %s SEC(\".maps\");\n\n", r.Size, r.MapName)
	}
	for _, m := range g.p.Meters {
		fmt.Fprintf(w, "/* meter %s (%s, %d), id 0x%08x: RFC 2698 trTCM, shared by all CPUs */\n", comment(m.Name), m.Unit, m.Size, m.ID)
		fmt.Fprintf(w, "struct {\n\t__uint(type, BPF_MAP_TYPE_ARRAY);\n\t__uint(max_entries, %d);\n\t__type(key, __u32);\n\t__type(value, struct p4_meter);\n} %s SEC(\".maps\");\n\n", m.Size, m.MapName)
	}
	for _, c := range g.p.Counters {
		fmt.Fprintf(w, "/* counter %s (%s), id 0x%08x */\n", comment(c.Name), c.Unit, c.ID)
		fmt.Fprintf(w, "struct {\n\t__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);\n\t__uint(max_entries, %d);\n\t__type(key, __u32);\n\t__type(value, struct p4_ctr);\n} %s SEC(\".maps\");\n\n", c.Size, c.MapName)
	}
}

// ---------- pipeline ----------

// pipelineStart opens p4_pipeline: the per-CPU state (and, with extra, one
// more per-CPU map, a pointer checked like the state), reset for the packet,
// and the ingress standard metadata. portDecl declares the output port.
func (g *gen) pipelineStart(portDecl, extra string) {
	g.line("static __always_inline int p4_pipeline(ctx_t *ctx, struct edgenf_md *md)")
	g.line("{")
	g.indent++
	g.line("__u32 zero = 0;")
	g.line("struct p4_state *s = bpf_map_lookup_elem(&p4_state_map, &zero);")
	check := "!s"
	if extra != "" {
		g.line("%s", extra)
		check = "!s || !sn"
	}
	g.line("%s", portDecl)
	g.line("")
	g.line("if (%s)", check)
	g.line("\treturn enf_drop(ctx, md);")
	g.line("__builtin_memset(s, 0, __builtin_offsetof(struct p4_state, buf));")
	g.line("s->sm.f_ingress_port = md->in_port;")
	g.line("s->sm.f_packet_length = p4_plen(ctx);")
	if g.usesField("ingress_global_timestamp") {
		g.line("s->sm.f_ingress_global_timestamp = (bpf_ktime_get_ns() / 1000) & %s;", mask(48))
	}
}

// pipelineSend closes p4_pipeline: port, the egress port, leads to the
// slow path (CPU port) or out of a cube port.
func (g *gen) pipelineSend() {
	if g.usesField("priority") {
		// standard_metadata.priority (0..7, 7 most urgent, as BMv2's
		// priority queues) becomes skb->priority: the HTB class of
		// priority band 7-p on the egress interface's tree (the slicer's
		// ed00:8+band, see internal/nf/slicer; HTB takes skb->priority as
		// a class id before any filter). 0 leaves it alone. md->priority
		// carries it to the interface the frame leaves by; at XDP the
		// frame then takes the skb path to meet the qdisc there
		// (verdict.h: enf_out). A frame of a slice (md->tenant, the
		// slice id the slicer gave it) keeps its slice's class: the
		// program is a tenant's, and the slice's rate ceiling and
		// priority are the administrator's, so a band would let the
		// tenant's traffic jump ahead of other slices' at egress.
		g.line("if (s->sm.f_priority && !md->tenant) {")
		g.line("	md->priority = P4_PRIO_CLASS(s->sm.f_priority);")
		g.line("#if defined(EDGENF_HOOK_TC)")
		g.line("	ctx->priority = md->priority;")
		g.line("#endif")
		g.line("}")
	}
	g.line("if (port == P4_CPU_PORT || port == P4_CPU_PORT_CFG)")
	g.line("\treturn enf_punt(ctx, md, P4_PUNT_PACKET_IN, 0);")
	g.line("return enf_send(ctx, md, port);")
	g.indent--
	g.line("}")
	g.line("")
	g.line("EDGENF_CUBE(p4_pipeline)")
}
