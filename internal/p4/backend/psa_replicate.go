package backend

import (
	"fmt"

	"github.com/edgenf/edgenf/internal/p4/sema"
	"github.com/edgenf/edgenf/internal/p4/syntax"
)

// PSA packet replication (PSA spec §6): multicast groups
// (ostd.multicast_group), clones through clone sessions (ostd.clone,
// clone_session_id; I2E after ingress, E2E after egress), resubmit
// (ostd.resubmit) and recirculate (PSA_PORT_RECIRCULATE). The copies are
// made by the same runtime as v1model's (replicate_run.h, replicate.go):
// the PSA blocks are its stages, the PSA metadata is mapped to and from
// the runtime's view of a pass and a copy (s->sm, s->rq), and the bridged
// metadata (resubmit_meta, recirculate_meta, clone_i2e_meta,
// clone_e2e_meta) are field lists of the architecture's own (p4_keep).
//
// What differs from v1model is that PSA's egress parses the packet again:
// per copy, the ingress deparser writes the packet from the state after
// ingress (the same bytes every time), the egress parser parses it with
// the copy's packet_path, egress_port and instance, and the egress
// deparser replaces what the egress parser read. An I2E clone is the
// packet as received: the first copy finds it so; a later one (a clone
// session to a group) gets its headers back from the ingress deparser run
// on the state the parser left. An E2E clone is the packet as the egress
// deparser wrote it. Resubmit runs the ingress again on the packet as
// received (the ingress deparser then only computes resubmit_meta, it
// writes nothing); recirculate runs it on the packet the egress deparser
// wrote. Both are bounded (P4_MAX_PASSES), as chained E2E clones
// (P4_MAX_E2E).
//
// Limit: with several copies, an egress parser must not read past the
// bytes the ingress deparser wrote (the next copy would find the previous
// copy's bytes there): such a packet is dropped when its second copy
// starts, before the first is sent (at both hooks, no copy at all).

// Internal ports the runtime's u16 ports carry for PSA's 32-bit ones.
const (
	psaPortRecirculate = 0xfffffffa
	psaRecircPort      = 509 // PSA_PORT_RECIRCULATE inside the runtime (cube ports are 0..63)
)

// The architecture's field lists (p4_keep): numbers above the program's
// (1..256) and the data lists (0x100 on).
const (
	psaKeepResubmit = 0x8001
	psaKeepRecirc   = 0x8002
	psaKeepCloneI2E = 0x8003
	psaKeepCloneE2E = 0x8004
)

// replPipeline generates the PSA pipeline over the replication
// runtime.
func (a psa) replPipeline(g *gen, blocks []sema.Entity) {
	ip := blocks[sema.PSAIngressParser].(*sema.Parser)
	ep := blocks[sema.PSAEgressParser].(*sema.Parser)
	id := blocks[sema.PSAIngressDeparser].(*sema.Control)
	emptyEgress := psaEgressEmpty(blocks)
	igPath := func(member string) int { return psaPacketPath(ip.Params[3].Type, member) }
	egPath := func(member string) int { return psaPacketPath(ep.Params[3].Type, member) }
	ehdr := "s->hdr"
	if ep.Params[1].Type != ip.Params[1].Type {
		ehdr = "s->ehdr"
	}
	g.state = append(g.state, "struct p4_rq rq")
	// an E2E clone starts from the cloned copy's egress headers (the
	// runtime copies hdr; separate egress headers are kept with the
	// clone's metadata)
	ce2e := []string{"psa_ce2e"}
	if ehdr != "s->hdr" {
		ce2e = append(ce2e, "ehdr")
	}

	// the ingress deparser without its emits: the bridged metadata
	g.deparserFn(id, "p4_deparse_ig_meta", true)

	g.line("/* PSA over the replication runtime (psa_replicate.go) */")
	g.line("#define P4_PSA_RECIRC_PORT %d /* PSA_PORT_RECIRCULATE */", psaRecircPort)
	g.line("/* per packet: the packet is no longer as received; an egress parser read past the ingress deparser's bytes */")
	g.line("struct p4_psa_pkt { __u32 rewritten; __u32 overread; };")
	g.line("struct {")
	g.line("\t__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);")
	g.line("\t__uint(max_entries, 1);")
	g.line("\t__type(key, __u32);")
	g.line("\t__type(value, struct p4_psa_pkt);")
	g.line("} p4_psa_pkt_map SEC(\".maps\");")
	g.line("")
	g.replKeep([]keepCase{
		{psaKeepResubmit, []string{"psa_resub"}},
		{psaKeepRecirc, []string{"psa_recirc"}},
		{psaKeepCloneI2E, []string{"psa_ci2e"}},
		{psaKeepCloneE2E, ce2e},
	})

	// the ingress parser with the pass's input metadata
	g.line("/* The ingress parser of a pass: packet_path from the runtime's instance type. */")
	g.line("static __always_inline void p4_parser(ctx_t *ctx)")
	g.line("{")
	g.indent++
	g.line("__u32 zero = 0;")
	g.line("struct p4_state *s = bpf_map_lookup_elem(&p4_state_map, &zero);")
	g.line("struct p4_psa_pkt *pk = bpf_map_lookup_elem(&p4_psa_pkt_map, &zero);")
	g.line("")
	g.line("if (!s || !pk)")
	g.line("\treturn;")
	g.line("pk->rewritten = pk->overread = 0;")
	g.line("/* a recirculated packet comes in from PSA_PORT_RECIRCULATE */")
	g.line("s->psa_ig_pin.f_ingress_port = s->psa_ig_in.f_ingress_port = s->sm.f_instance_type == P4_INST_RECIRC ? %#x : s->sm.f_ingress_port;", psaPortRecirculate)
	if igPath("NORMAL") >= 0 {
		g.line("switch (s->sm.f_instance_type) {")
		g.line("case P4_INST_RESUBMIT:")
		g.line("\ts->psa_ig_pin.f_packet_path = s->psa_ig_in.f_packet_path = %d; /* RESUBMIT */", igPath("RESUBMIT"))
		g.line("\tbreak;")
		g.line("case P4_INST_RECIRC:")
		g.line("\ts->psa_ig_pin.f_packet_path = s->psa_ig_in.f_packet_path = %d; /* RECIRCULATE */", igPath("RECIRCULATE"))
		g.line("\tbreak;")
		g.line("default:")
		g.line("\ts->psa_ig_pin.f_packet_path = s->psa_ig_in.f_packet_path = %d; /* NORMAL */", igPath("NORMAL"))
		g.line("}")
	}
	if g.usesField("ingress_timestamp") {
		g.line("s->psa_ig_in.f_ingress_timestamp = bpf_ktime_get_ns();")
	}
	g.line("s->psa_ig_out.f_drop = 1; /* psa.p4: ostd.drop starts true */")
	g.line("p4_parser_ig(ctx);")
	g.line("s->psa_ig_in.f_parser_error = s->sm.f_parser_error;")
	g.indent--
	g.line("}")
	g.line("")

	g.line("static __always_inline void p4_psa_ingress(ctx_t *ctx, struct p4_state *s);")
	g.line("struct p4_snaps;")
	g.line("static __always_inline int p4_psa_egress(ctx_t *ctx, struct p4_state *s, struct p4_snaps *sn);")
	g.line("#define P4_VERIFY(ctx) /* PSA: none */")
	g.line("#define P4_INGRESS(ctx) p4_psa_ingress(ctx, s)")
	g.line("#define P4_EGRESS(ctx) do { if (p4_psa_egress(ctx, s, sn)) { sn->abort = 1; return 0; } } while (0)")
	g.line("#define P4_COMPUTE(ctx) /* PSA: none */")
	if emptyEgress {
		g.line("#define p4_deparse(ctx) 0 /* the egress pipeline parses, does and emits nothing */")
	} else {
		g.line("#define p4_deparse(ctx) p4_deparse_eg(ctx)")
	}
	g.line("#define P4_REPARSE 1")
	g.replRun()

	// after ingress: the runtime's requests from psa_ingress_output_metadata_t
	g.line("/* Ingress, then its output metadata as the runtime's requests. */")
	g.line("static __always_inline void p4_psa_ingress(ctx_t *ctx, struct p4_state *s)")
	g.line("{")
	g.indent++
	g.line("__u32 drop, ep;")
	g.line("")
	g.ctlCall(blocks, sema.PSAIngress)
	g.line("p4_deparse_ig_meta(ctx); /* clone_i2e_meta, resubmit_meta, normal_meta */")
	g.line("drop = s->psa_ig_out.f_drop;")
	g.line("s->rq.clone_sess = s->psa_ig_out.f_clone ? s->psa_ig_out.f_clone_session_id : 0;")
	g.line("s->rq.clone_fl = %#x;", psaKeepCloneI2E)
	g.line("s->rq.resub = !drop && s->psa_ig_out.f_resubmit;")
	g.line("s->rq.resub_fl = %#x;", psaKeepResubmit)
	g.line("s->sm.f_mcast_grp = drop ? 0 : s->psa_ig_out.f_multicast_group;")
	g.line("ep = s->psa_ig_out.f_egress_port;")
	g.line("if (drop)")
	g.line("\ts->sm.f_egress_spec = P4_DROP_PORT;")
	g.line("else if (ep == %#x) /* PSA_PORT_CPU */", psaPortCPU)
	g.line("\ts->sm.f_egress_spec = P4_CPU_PORT;")
	g.line("else if (ep == %#x) /* PSA_PORT_RECIRCULATE: through egress, then again */", psaPortRecirculate)
	g.line("\ts->sm.f_egress_spec = P4_PSA_RECIRC_PORT;")
	g.line("else")
	g.line("\ts->sm.f_egress_spec = ep < P4_PSA_RECIRC_PORT ? ep : P4_DROP_PORT;")
	g.indent--
	g.line("}")
	g.line("")

	// per copy: the packet for the egress parser, the egress pipeline and
	// its output metadata as the runtime's requests
	g.line("/* One copy's egress: its packet, the egress parser and control, the requests. */")
	g.line("static __always_inline int p4_psa_egress(ctx_t *ctx, struct p4_state *s, struct p4_snaps *sn)")
	g.line("{")
	g.indent++
	g.line("__u32 zero = 0, kind = s->sm.f_instance_type, port = s->sm.f_egress_port, pp;")
	g.line("struct p4_psa_pkt *pk = bpf_map_lookup_elem(&p4_psa_pkt_map, &zero);")
	g.line("")
	g.line("if (!pk || (pk->overread && kind != P4_INST_E2E))")
	g.line("\treturn -1; /* an earlier copy's egress parser read past the ingress deparser's bytes */")
	g.line("/* the previous copy leaves before this one's packet is written */")
	g.line("if (p4_flush(ctx, sn))")
	g.line("\treturn -1;")
	g.line("if (kind == P4_INST_I2E) {")
	g.line("\tif (pk->rewritten) { /* the headers as received, from the parsed state */")
	g.line("\t\ts->off = sn->hlen;")
	g.line("\t\tif (p4_deparse_ig(ctx))")
	g.line("\t\t\treturn -1;")
	g.line("\t\tsn->hlen = ctx_len(ctx) - sn->plen;")
	g.line("\t\t__builtin_memcpy(&s->psa_ci2e, &sn->ing.psa_ci2e, sizeof(s->psa_ci2e));")
	g.line("\t}")
	g.line("} else if (kind != P4_INST_E2E) {")
	g.line("\ts->off = sn->hlen;")
	g.line("\tif (p4_deparse_ig(ctx))")
	g.line("\t\treturn -1;")
	g.line("\tsn->hlen = ctx_len(ctx) - sn->plen;")
	if !emptyEgress {
		g.line("} else { /* E2E: the packet as the cloned copy's egress deparser wrote it (again: a replica before may have rewritten it) */")
		g.line("\ts->off = sn->hlen;")
		g.line("\tif (p4_deparse_eg(ctx))")
		g.line("\t\treturn -1;")
		g.line("\tsn->hlen = ctx_len(ctx) - sn->plen;")
	}
	g.line("}")
	g.line("pk->rewritten = 1; /* by the ingress deparser above or the egress deparser after */")
	g.line("if (port == P4_CPU_PORT || port == P4_CPU_PORT_CFG)")
	g.line("\tpp = %#x; /* PSA_PORT_CPU */", psaPortCPU)
	g.line("else if (port == P4_PSA_RECIRC_PORT)")
	g.line("\tpp = %#x; /* PSA_PORT_RECIRCULATE */", psaPortRecirculate)
	g.line("else")
	g.line("\tpp = port;")
	if ehdr == "s->hdr" {
		g.line("__builtin_memset(&s->hdr, 0, sizeof(s->hdr)); /* the egress parser's headers start invalid */")
	} else {
		g.line("__builtin_memset(&s->ehdr, 0, sizeof(s->ehdr));")
	}
	g.line("__builtin_memset(&s->emeta, 0, sizeof(s->emeta));")
	g.line("__builtin_memset(&s->psa_eg_out, 0, sizeof(s->psa_eg_out));")
	g.line("s->psa_eg_pin.f_egress_port = s->psa_eg_in.f_egress_port = s->psa_eg_dp.f_egress_port = pp;")
	if egPath("NORMAL_UNICAST") >= 0 {
		g.line("switch (kind) {")
		for _, c := range []struct{ inst, path string }{
			{"P4_INST_I2E", "CLONE_I2E"}, {"P4_INST_E2E", "CLONE_E2E"}, {"P4_INST_REPLICATION", "NORMAL_MULTICAST"},
		} {
			g.line("case %s:", c.inst)
			g.line("\ts->psa_eg_pin.f_packet_path = s->psa_eg_in.f_packet_path = %d; /* %s */", egPath(c.path), c.path)
			g.line("\tbreak;")
		}
		g.line("default: /* unicast, in any pass */")
		g.line("\ts->psa_eg_pin.f_packet_path = s->psa_eg_in.f_packet_path = %d; /* NORMAL_UNICAST */", egPath("NORMAL_UNICAST"))
		g.line("}")
	}
	g.line("s->psa_eg_in.f_instance = s->sm.f_egress_rid;")
	g.line("s->psa_eg_in.f_class_of_service = kind == P4_INST_I2E || kind == P4_INST_E2E ? 0 : s->psa_ig_out.f_class_of_service;")
	if g.usesField("egress_timestamp") {
		g.line("s->psa_eg_in.f_egress_timestamp = bpf_ktime_get_ns();")
	}
	g.line("s->off = 0;")
	g.line("s->sm.f_parser_error = 0;")
	if !emptyEgress {
		g.line("p4_parser_eg(ctx);")
		g.line("if (s->off > sn->hlen) {")
		g.line("\tpk->overread = 1;")
		g.line("\tsn->plen = ctx_len(ctx) - s->off;")
		g.line("}")
	}
	g.line("s->psa_eg_in.f_parser_error = s->sm.f_parser_error;")
	g.ctlCall(blocks, sema.PSAEgress)
	g.line("s->sm.f_egress_spec = s->psa_eg_out.f_drop ? P4_DROP_PORT : port;")
	g.line("s->rq.clone_sess = s->psa_eg_out.f_clone ? s->psa_eg_out.f_clone_session_id : 0;")
	g.line("s->rq.clone_fl = %#x;", psaKeepCloneE2E)
	g.line("s->rq.recirc = !s->psa_eg_out.f_drop && port == P4_PSA_RECIRC_PORT;")
	g.line("s->rq.recirc_fl = %#x;", psaKeepRecirc)
	g.line("return 0;")
	g.indent--
	g.line("}")
	g.line("")
}

// psaPathFunc generates psa.p4's extern functions psa_clone_i2e,
// psa_resubmit, psa_normal, psa_clone_e2e and psa_recirculate (what a
// deparser asks before it fills the bridged metadata), as psa.p4 defines
// them on their output metadata; false for any other call.
func (g *gen) psaPathFunc(call *syntax.Call, cr *sema.CallRef) (string, bool) {
	if len(call.Args) == 0 {
		return "", false
	}
	md := g.lval(call.Args[0].Value)
	switch cr.Method {
	case "psa_clone_i2e", "psa_clone_e2e":
		return fmt.Sprintf("(%s.f_clone != 0)", md), true
	case "psa_resubmit":
		return fmt.Sprintf("(!%s.f_drop && %s.f_resubmit)", md, md), true
	case "psa_normal":
		return fmt.Sprintf("(!%s.f_drop && !%s.f_resubmit)", md, md), true
	case "psa_recirculate":
		if len(call.Args) != 2 {
			return "", false
		}
		return fmt.Sprintf("(!%s.f_drop && %s.f_egress_port == %#x)", md, g.lval(call.Args[1].Value), psaPortRecirculate), true
	}
	return "", false
}
