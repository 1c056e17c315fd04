package backend

import (
	"fmt"
	"sort"
	"strings"

	"github.com/edgenf/edgenf/internal/p4/ir"
	"github.com/edgenf/edgenf/internal/p4/sema"
	"github.com/edgenf/edgenf/internal/p4/syntax"
)

// This file: packet replication in v1model — clone/clone3/
// clone_preserving_field_list (I2E and E2E) with clone sessions,
// multicast groups (standard_metadata.mcast_grp), resubmit and recirculate
// (and their _preserving_field_list forms).
//
// A program that uses none of them gets the plain pipeline (backend.go).
// Otherwise the pipeline runs as p4_run: copies are made one after the
// other on the one packet buffer. Ingress does not change the packet, so
// after it the buffer still holds the packet as received; every copy
// restores the P4 state it starts egress with from a snapshot (after the
// parser for I2E clones, after ingress for multicast and unicast copies),
// runs egress, and its deparser rewrites the headers in front of the
// untouched payload. A copy is sent (enf_copy, bpf/include/edgenf/copy.h)
// only when the next copy is about to be deparsed; the last copy leaves as
// the packet itself (enf_send, any peer, no copy at all). Order: I2E clone
// copies first, then the multicast replicas or the unicast copy; an E2E
// clone right after the copy that asked for it.
//
// Where copies are made: at TC the kernel clones the skb, out of an
// interface or, for a cube, into the injector with a hop trailer. At XDP
// the copies are recorded (their header bytes, the payload length, their
// hop) in a per-CPU ring slot, and the packet, holding the last copy,
// leaves with XDP_PASS and the slot in its data_meta: the TC copy machine
// (edgenf_copier, stub.bpf.c) makes the copies from it. The slow path
// (perf ring, the daemon transmits) is left for copies to the CPU port,
// truncated copies (at XDP: but the last), copies over the ring's limits
// (EDGENF_COPY_MAX copies, EDGENF_COPY_HDR header bytes) and, at XDP, the
// copies of programs that recirculate (P4_COPY_RECORD 0: the recirculated
// packet is parsed again, the recorded copies' payload would no longer be
// the frame's). p4_copy_slowpath forces the slow path (STF test runs).

// Replication limits, also in the generated C and the docs.
const (
	// MaxReplicas is the number of (port, rid) replicas of a multicast group.
	MaxReplicas = 32
	// MaxPasses bounds resubmit + recirculate: a packet runs ingress at
	// most this many times; one more is dropped.
	MaxPasses = 4
	// MaxE2E bounds chains of E2E clones (a clone cloning itself).
	MaxE2E = 2
)

// Map names the control plane writes (internal/p4/rt).
const (
	McGroupsMap      = "p4_mc_groups"
	CloneSessionsMap = "p4_clone_sessions"
	CopySlowPathVar  = "p4_copy_slowpath"
)

// replicates reports whether the program replicates packets.
func (g *gen) replicates() bool {
	for _, cr := range g.info.Calls {
		if cr != nil && cr.Kind == sema.CallExternFunc && isReplExtern(cr.Method) {
			return true
		}
	}
	return g.usesField("mcast_grp")
}

// recirculates reports whether the program recirculates packets. Such
// programs keep the slow path for their copies at XDP: a recirculated
// packet is parsed again, so the payload the recorded copies of its
// earlier pass share would no longer be the frame's (copy.h).
func (g *gen) recirculates() bool {
	for _, cr := range g.info.Calls {
		if cr != nil && cr.Kind == sema.CallExternFunc && strings.HasPrefix(cr.Method, "recirculate") {
			return true
		}
	}
	return false
}

func isReplExtern(n string) bool {
	switch n {
	case "clone", "clone3", "clone_preserving_field_list", "resubmit", "resubmit_preserving_field_list",
		"recirculate", "recirculate_preserving_field_list":
		return true
	}
	return false
}

// replCall generates a replication extern: it only records the request in
// s->rq; the pipeline acts on it at the end of the stage (v1model: the
// last call of a stage wins). Field lists are numbered 1 + the
// @field_list index; the data argument of the older forms gets a number
// from 0x100 on.
func (g *gen) replCall(call *syntax.Call, cr *sema.CallRef) {
	args := call.Args
	fl := "0"
	switch cr.Method {
	case "clone_preserving_field_list":
		fl = fmt.Sprintf("((__u32)(%s) & 0xff) + 1", g.rv(args[2].Value))
	case "resubmit_preserving_field_list", "recirculate_preserving_field_list":
		fl = fmt.Sprintf("((__u32)(%s) & 0xff) + 1", g.rv(args[0].Value))
	case "clone3":
		fl = fmt.Sprintf("0x%x", g.dataList(args[2].Value))
	case "resubmit", "recirculate":
		fl = fmt.Sprintf("0x%x", g.dataList(args[0].Value))
	}
	switch cr.Method {
	case "clone", "clone3", "clone_preserving_field_list":
		// session 0 is "no clone", as in BMv2
		g.line("s->rq.clone_sess = (__u32)(%s);", g.rv(args[1].Value))
		g.line("s->rq.clone_fl = %s;", fl)
	case "resubmit", "resubmit_preserving_field_list":
		g.line("s->rq.resub = 1;")
		g.line("s->rq.resub_fl = %s;", fl)
	default:
		g.line("s->rq.recirc = 1;")
		g.line("s->rq.recirc_fl = %s;", fl)
	}
}

// dataList records the fields of the data argument of clone3, resubmit or
// recirculate ({meta.a, meta.b}, a metadata struct) as a field list and
// returns its number. Fields outside the user metadata are not preserved
// (standard_metadata is rebuilt for every pass and copy).
func (g *gen) dataList(e syntax.Expr) int {
	var lvs []string
	var add func(e syntax.Expr)
	add = func(e syntax.Expr) {
		switch x := e.(type) {
		case *syntax.List:
			for _, el := range x.Elems {
				add(el)
			}
			return
		case *syntax.IntLit:
			return
		}
		lv := g.lval(e)
		if strings.HasPrefix(lv, "s->meta") {
			lvs = append(lvs, strings.TrimPrefix(lv, "s->"))
		}
	}
	add(e)
	g.replLists = append(g.replLists, lvs)
	return 0x100 + len(g.replLists) - 1
}

// fieldLists returns the @field_list indexes of the user metadata fields:
// index -> C paths under the state (meta.f_x.f_y).
func (g *gen) fieldLists() map[int][]string {
	out := map[int][]string{}
	var walk func(st *sema.Struct, path string)
	walk = func(st *sema.Struct, path string) {
		for _, f := range st.Fields {
			p := path + ".f_" + f.Name
			if a := f.Annots.Get("field_list"); a != nil {
				for _, arg := range a.Args {
					if lit, ok := arg.(*syntax.IntLit); ok && lit.Val.IsInt64() {
						out[int(lit.Val.Int64())] = append(out[int(lit.Val.Int64())], p)
					}
				}
			}
			if sub, ok := f.Type.(*sema.Struct); ok && sub.Kind == "struct" {
				walk(sub, p)
			}
		}
	}
	if g.mTy != nil {
		walk(g.mTy, "meta")
	}
	return out
}

func (g *gen) replPipeline(blocks []sema.Entity) {
	// a control block's call, or nothing for an empty one (as ctlCall)
	name := func(i int) string {
		if c, ok := blocks[i].(*sema.Control); ok && c.Decl != nil && c.Decl.Body != nil && len(c.Decl.Body.Stmts) == 0 {
			return "/* " + c.Name + ": empty */"
		}
		return "ctl_" + ir.Sanitize(blocks[i].EntName()) + "(ctx);"
	}
	g.state = append(g.state, "struct p4_rq rq")
	g.types.WriteString("/* Replication requests of the running stage (clone, resubmit, recirculate). */\nstruct p4_rq {\n\t__u32 clone_sess, clone_fl;\n\t__u32 resub, resub_fl;\n\t__u32 recirc, recirc_fl;\n};\n\n")

	// preserved fields
	var keep strings.Builder
	keep.WriteString("/* Copy the fields of field list fl from src to d (resubmit, recirculate, clones). */\n")
	keep.WriteString("static __always_inline void p4_keep(struct p4_state *d, const struct p4_state *src, __u32 fl)\n{\n\tswitch (fl) {\n")
	cp := func(p string) {
		fmt.Fprintf(&keep, "\t\t__builtin_memcpy(&d->%s, &src->%s, sizeof(d->%s));\n", p, p, p)
	}
	lists := g.fieldLists()
	var idx []int
	for i := range lists {
		idx = append(idx, i)
	}
	sort.Ints(idx)
	for _, i := range idx {
		if i < 0 || i > 255 {
			continue
		}
		fmt.Fprintf(&keep, "\tcase %d: /* @field_list(%d) */\n", i+1, i)
		for _, p := range lists[i] {
			cp(p)
		}
		keep.WriteString("\t\tbreak;\n")
	}
	for k, l := range g.replLists {
		fmt.Fprintf(&keep, "\tcase 0x%x:\n", 0x100+k)
		for _, p := range l {
			cp(p)
		}
		keep.WriteString("\t\tbreak;\n")
	}
	keep.WriteString("\tdefault:\n\t\tbreak;\n\t}\n}\n\n")

	egTS := ""
	if g.usesField("egress_global_timestamp") {
		egTS = fmt.Sprintf("s->sm.f_egress_global_timestamp = (bpf_ktime_get_ns() / 1000) & %s;", mask(48))
	}
	userTrunc := "0xffffffffu"
	if g.hasTruncState() {
		userTrunc = "(s->trunc ? s->trunc_len : 0xffffffffu)"
	}
	record := "1"
	if g.recirculates() {
		record = "0"
	}
	r := strings.NewReplacer(
		"@KEEP@", keep.String(),
		"@VERIFY@", name(1), "@INGRESS@", name(2), "@EGRESS@", name(3), "@COMPUTE@", name(4),
		"@EGTS@", egTS, "@UTRUNC@", userTrunc,
		"@RECORD@", record,
		"@MAXREP@", fmt.Sprint(MaxReplicas), "@MAXPASS@", fmt.Sprint(MaxPasses), "@MAXE2E@", fmt.Sprint(MaxE2E),
	)
	g.w.WriteString(r.Replace(replC))
	g.line("/* V1Switch with replication: Parser, VerifyChecksum, Ingress, then per copy Egress, ComputeChecksum, Deparser. */")
	g.pipelineStart("int port;", "struct p4_snaps *sn = bpf_map_lookup_elem(&p4_snap_map, &zero);")
	g.line("port = p4_run(ctx);")
	g.line("if (port < 0)")
	g.line("\treturn enf_drop(ctx, md);")
	if g.hasTruncState() {
		g.line("if (s->dbg_fail) /* assert/assume in a debug build (externs.go) */")
		g.line("\treturn enf_drop(ctx, md);")
	}
	if !g.recirculates() {
		g.line("#if defined(EDGENF_HOOK_XDP)")
		g.line("/* copies recorded for the copy machine (copy.h): the frame goes to it */")
		g.line("if (enf_copy_pending() && enf_copy_meta(ctx) == 0) {")
		g.line("\tif (port == P4_CPU_PORT || port == P4_CPU_PORT_CFG) {")
		g.line("\t\tenf_count(enf_port_idx(md->in_port), ctx_len(ctx), ENF_PUNT);")
		g.line("\t\tenf_report(ctx, md, md->cube, enf_port_idx(md->in_port), P4_PUNT_PACKET_IN, 0, sn->pend_trunc < EDGENF_PUNT_SNAPLEN ? sn->pend_trunc : EDGENF_PUNT_SNAPLEN);")
		g.line("\t\treturn XDP_PASS;")
		g.line("\t}")
		g.line("\treturn enf_copy_last(ctx, md, port, sn->pend_trunc, ctx_len(ctx) - sn->plen);")
		g.line("}")
		g.line("#endif")
	}
	g.line("if (sn->pend_trunc < ctx_len(ctx) && ctx_change_tail(ctx, sn->pend_trunc))")
	g.line("\treturn enf_drop(ctx, md);")
	g.pipelineSend()
}

// replC is the replication runtime; @NAME@ are filled in by replPipeline.
const replC = `/* ---- replication: clone sessions, multicast groups, resubmit, recirculate ---- */
#include <edgenf/copy.h>

#ifndef P4_CPU_PORT_CFG
#define P4_CPU_PORT_CFG P4_CPU_PORT
#endif
#define P4_MAX_REPLICAS @MAXREP@
#define P4_MAX_PASSES @MAXPASS@
#define P4_MAX_E2E @MAXE2E@
/* 1: XDP records copies for the copy machine (copy.h); 0: programs that
 * recirculate, whose copies take the slow path at XDP */
#define P4_COPY_RECORD @RECORD@
/* standard_metadata.instance_type (BMv2) */
#define P4_INST_NORMAL 0
#define P4_INST_I2E 1
#define P4_INST_E2E 2
#define P4_INST_RECIRC 4
#define P4_INST_REPLICATION 5
#define P4_INST_RESUBMIT 6

struct p4_replica {
	__u16 port;
	__u16 rid;
};

/* A multicast group: n replicas (egress_port, egress_rid). */
struct p4_mc_group {
	__u32 n;
	__u32 pad;
	struct p4_replica r[P4_MAX_REPLICAS];
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, struct p4_mc_group);
} p4_mc_groups SEC(".maps");

#define P4_SESS_MC 1
/* A clone session: a port, or a multicast group (flags & P4_SESS_MC);
 * trunc: the copies' length at most (0: whole). */
struct p4_clone_session {
	__u32 port;
	__u32 mgrp;
	__u32 trunc;
	__u32 flags;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32);
	__type(value, struct p4_clone_session);
} p4_clone_sessions SEC(".maps");

/* Snapshots of the P4 state and the bookkeeping of the copies made. */
struct p4_snaps {
	struct p4_state parsed; /* after the parser: I2E clones start here */
	struct p4_state ing;    /* after ingress: multicast and unicast copies */
	struct p4_state src;    /* preserved fields of a new pass or an E2E clone */
	__u32 hlen;             /* bytes of headers now in front of the payload */
	__u32 plen;             /* payload bytes */
	__u32 dirty;            /* the state is no longer the ingress snapshot */
	__u32 abort;
	__u32 pend;             /* a deparsed copy not sent yet */
	__u32 pend_port;
	__u32 pend_trunc;
	__u32 pend_recirc;
	__u32 pend_fl;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct p4_snaps);
} p4_snap_map SEC(".maps");

/* 1: copies always go through the slow path (test runs read them there). */
volatile const __u32 p4_copy_slowpath = 0;

#define P4_ZWORDS ((__builtin_offsetof(struct p4_state, buf) + 7) / 8)

/* Copy the per-packet part of a state (and up to 7 bytes of buf). */
static __always_inline void p4_scopy(struct p4_state *d, const struct p4_state *src)
{
	__u64 *dd = (__u64 *)d;
	const __u64 *ss = (const __u64 *)src;

#pragma unroll
	for (int i = 0; i < P4_ZWORDS; i++) {
		dd[i] = ss[i];
		asm volatile("" ::: "memory"); /* no memcpy call: BPF has none */
	}
}

@KEEP@/* Send the pending copy: it is not the last one. Returns -1 when the
 * frame was damaged on the way (drop the packet). */
static __always_inline int p4_flush(ctx_t *ctx, struct p4_snaps *sn)
{
	struct edgenf_md *md = enf_md();
	__u32 port = sn->pend_port, snap;

	if (!sn->pend || !md)
		return 0;
	sn->pend = 0;
	if (sn->pend_recirc)
		return 0; /* only the last copy of a packet can recirculate */
	if (port == P4_CPU_PORT || port == P4_CPU_PORT_CFG) {
		snap = sn->pend_trunc < EDGENF_PUNT_SNAPLEN ? sn->pend_trunc : EDGENF_PUNT_SNAPLEN;
		enf_count(enf_port_idx(md->in_port), ctx_len(ctx), ENF_PUNT);
		enf_report(ctx, md, md->cube, enf_port_idx(md->in_port), P4_PUNT_PACKET_IN, 0, snap);
		return 0;
	}
	/* hlen 0: never recorded for the copy machine */
	return enf_copy(ctx, md, port, sn->pend_trunc, p4_copy_slowpath,
			P4_COPY_RECORD ? ctx_len(ctx) - sn->plen : 0) == -2 ? -1 : 0;
}

/* A new pass through ingress (resubmit, recirculate) with the fields of
 * field list fl of sn->src. */
static __always_inline void p4_restart(struct p4_state *s, struct p4_snaps *sn, __u32 inst, __u32 fl, __u32 in_port, __u32 len)
{
	__builtin_memset(s, 0, __builtin_offsetof(struct p4_state, buf));
	p4_keep(s, &sn->src, fl);
	s->sm.f_ingress_port = in_port;
	s->sm.f_instance_type = inst;
	s->sm.f_packet_length = len;
	s->sm.f_ingress_global_timestamp = sn->src.sm.f_ingress_global_timestamp;
}

/* Parser, VerifyChecksum, Ingress; the snapshots copies start from. */
P4_FN int p4_ingress(ctx_t *ctx)
{
	__u32 zero = 0;
	struct p4_state *s = bpf_map_lookup_elem(&p4_state_map, &zero);
	struct p4_snaps *sn = bpf_map_lookup_elem(&p4_snap_map, &zero);

	P4_KEEP(ctx);
	if (!s || !sn)
		return 0;
	p4_parser(ctx);
	@VERIFY@
	p4_scopy(&sn->parsed, s);
	@INGRESS@
	sn->hlen = s->off;
	sn->plen = ctx_len(ctx) - s->off;
	p4_scopy(&sn->ing, s);
	sn->dirty = 0;
	return 0;
}

/* One copy: kindfl = instance_type | field list << 8, pr = port | rid <<
 * 16. Runs Egress, ComputeChecksum and the deparser (sending the previous
 * copy first), then the E2E clones it asks for. */
P4_FN int p4_copy(ctx_t *ctx, __u32 kindfl, __u32 pr, __u32 trunc)
{
	__u32 zero = 0;
	struct p4_state *s = bpf_map_lookup_elem(&p4_state_map, &zero);
	struct p4_snaps *sn = bpf_map_lookup_elem(&p4_snap_map, &zero);
	__u32 kind = kindfl & 0xff, fl = kindfl >> 8;

	P4_KEEP(ctx);
	if (!s || !sn)
		return 0;
	if (kind == P4_INST_I2E) {
		p4_scopy(s, &sn->parsed);
		p4_keep(s, &sn->ing, fl);
	} else if (sn->dirty) {
		p4_scopy(s, &sn->ing);
	}
	sn->dirty = 1;
	if (kind != P4_INST_NORMAL) /* unicast keeps the pass's: 0, resubmit or recirculate */
		s->sm.f_instance_type = kind;
	s->sm.f_egress_port = pr & 0xffff;
	s->sm.f_egress_rid = pr >> 16;
#pragma unroll
	for (int d = 0; d <= P4_MAX_E2E; d++) {
		struct p4_clone_session *cs;
		__u32 sess, efl, t;

		s->rq.clone_sess = 0;
		s->rq.recirc = 0;
		s->off = sn->hlen;
		@EGTS@
		@EGRESS@
		if (s->sm.f_egress_spec != P4_DROP_PORT) {
			if (p4_flush(ctx, sn)) {
				sn->abort = 1;
				return 0;
			}
			@COMPUTE@
			s->off = sn->hlen;
			if (p4_deparse(ctx)) {
				sn->abort = 1;
				return 0;
			}
			sn->hlen = ctx_len(ctx) - sn->plen;
			t = @UTRUNC@;
			sn->pend = 1;
			sn->pend_port = s->sm.f_egress_port;
			sn->pend_trunc = t < trunc ? t : trunc;
			sn->pend_recirc = s->rq.recirc;
			if (s->rq.recirc) {
				sn->pend_fl = s->rq.recirc_fl;
				p4_scopy(&sn->src, s);
			}
		}
		sess = s->rq.clone_sess;
		if (!sess)
			break;
		cs = bpf_map_lookup_elem(&p4_clone_sessions, &sess);
		if (!cs || (cs->flags & P4_SESS_MC))
			break; /* unknown session: no copy (E2E to a group: not supported) */
		efl = s->rq.clone_fl;
		trunc = cs->trunc ? cs->trunc : 0xffffffffu;
		p4_scopy(&sn->src, s);
		__builtin_memset(s, 0, __builtin_offsetof(struct p4_state, buf));
		__builtin_memcpy(&s->hdr, &sn->src.hdr, sizeof(s->hdr));
		p4_keep(s, &sn->src, efl);
		s->sm.f_ingress_port = sn->src.sm.f_ingress_port;
		s->sm.f_ingress_global_timestamp = sn->src.sm.f_ingress_global_timestamp;
		s->sm.f_packet_length = ctx_len(ctx);
		s->sm.f_instance_type = P4_INST_E2E;
		s->sm.f_egress_port = cs->port;
	}
	return 0;
}

/* The copies for the replicas of multicast group grp. */
P4_FN int p4_mcast(ctx_t *ctx, __u32 kindfl, __u32 grp, __u32 trunc)
{
	__u32 zero = 0;
	struct p4_snaps *sn = bpf_map_lookup_elem(&p4_snap_map, &zero);
	struct p4_mc_group *g = bpf_map_lookup_elem(&p4_mc_groups, &grp);
	__u32 n;

	P4_KEEP(ctx);
	if (!g || !sn)
		return 0; /* unknown group: no copy */
	n = g->n;
#pragma unroll
	for (__u32 i = 0; i < P4_MAX_REPLICAS; i++) {
		if (i >= n || sn->abort)
			break;
		p4_copy(ctx, kindfl, (__u32)g->r[i].port | ((__u32)g->r[i].rid << 16), trunc);
	}
	return 0;
}

/* The whole pipeline with its copies; returns the port the last copy
 * leaves by (the packet itself), or -1: nothing left to send. Inlined in
 * the program: one call frame fewer for egress (the verifier allows 8). */
static __always_inline int p4_run(ctx_t *ctx)
{
	__u32 zero = 0;
	struct p4_state *s = bpf_map_lookup_elem(&p4_state_map, &zero);
	struct p4_snaps *sn = bpf_map_lookup_elem(&p4_snap_map, &zero);
	__u32 in_port;

	P4_KEEP(ctx);
	if (!s || !sn)
		return -1;
	in_port = s->sm.f_ingress_port;
	enf_copy_begin();
	sn->pend = 0;
	sn->abort = 0;
	sn->pend_trunc = 0xffffffffu;
#pragma unroll
	for (__u32 pass = 0; pass < P4_MAX_PASSES; pass++) {
		__u32 sess, cfl, mgrp, espec;
		struct p4_clone_session *cs;

		p4_ingress(ctx);
		if (s->rq.resub) {
			/* the packet is still as received; a clone asked for in
			 * the same pass is not made */
			if (pass + 1 >= P4_MAX_PASSES)
				return -1;
			p4_scopy(&sn->src, s);
			p4_restart(s, sn, P4_INST_RESUBMIT, s->rq.resub_fl, in_port, ctx_len(ctx));
			continue;
		}
		sess = s->rq.clone_sess;
		cfl = s->rq.clone_fl;
		mgrp = s->sm.f_mcast_grp;
		espec = s->sm.f_egress_spec;
		if (sess) {
			cs = bpf_map_lookup_elem(&p4_clone_sessions, &sess);
			if (cs) { /* unknown session: no copy */
				__u32 trunc = cs->trunc ? cs->trunc : 0xffffffffu;

				if (cs->flags & P4_SESS_MC)
					p4_mcast(ctx, P4_INST_I2E | (cfl << 8), cs->mgrp, trunc);
				else
					p4_copy(ctx, P4_INST_I2E | (cfl << 8), cs->port, trunc);
			}
		}
		if (sn->abort)
			return -1;
		if (mgrp)
			p4_mcast(ctx, P4_INST_REPLICATION, mgrp, 0xffffffffu);
		else if (espec != P4_DROP_PORT)
			p4_copy(ctx, P4_INST_NORMAL, espec, 0xffffffffu);
		if (sn->abort || !sn->pend)
			return -1;
		if (!sn->pend_recirc)
			return sn->pend_port;
		if (pass + 1 >= P4_MAX_PASSES)
			return -1;
		/* recirculate: the deparsed packet enters ingress again */
		sn->pend = 0;
		sn->pend_trunc = 0xffffffffu;
		p4_restart(s, sn, P4_INST_RECIRC, sn->pend_fl, in_port, ctx_len(ctx));
	}
	return -1;
}

`
