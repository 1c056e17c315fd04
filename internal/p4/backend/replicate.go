package backend

import (
	"fmt"
	"sort"
	"strings"

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

// replicates reports whether the program replicates packets.
func (g *gen) replicates() bool { return g.p.Replicates }

// recirculates reports whether the program recirculates packets. Such
// programs keep the slow path for their copies at XDP: a recirculated
// packet is parsed again, so the payload the recorded copies of its
// earlier pass share would no longer be the frame's (copy.h).
func (g *gen) recirculates() bool { return g.p.Recirculates }

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
	g.state = append(g.state, "struct p4_rq rq")
	g.replKeep(nil)
	for i, stage := range []string{"VERIFY", "INGRESS", "EGRESS", "COMPUTE"} {
		g.line("#define P4_%s(ctx) %s", stage, ctlCallExpr(blocks, i+1))
	}
	g.replRun()
}

// keepCase is a field list of the architecture's own: its number and the
// state members it copies.
type keepCase struct {
	fl      int
	members []string
}

// replKeep generates p4_keep: the program's field lists, then the
// architecture's (PSA: its bridged metadata).
func (g *gen) replKeep(arch []keepCase) {
	g.line("/* Copy the fields of field list fl from src to d (resubmit, recirculate, clones). */")
	g.line("static __always_inline void p4_keep(struct p4_state *d, const struct p4_state *src, __u32 fl)")
	g.line("{")
	g.line("\tswitch (fl) {")
	cp := func(p string) {
		g.line("\t\t__builtin_memcpy(&d->%s, &src->%s, sizeof(d->%s));", p, p, p)
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
		g.line("\tcase %d: /* @field_list(%d) */", i+1, i)
		for _, p := range lists[i] {
			cp(p)
		}
		g.line("\t\tbreak;")
	}
	for k, l := range g.replLists {
		g.line("\tcase 0x%x:", 0x100+k)
		for _, p := range l {
			cp(p)
		}
		g.line("\t\tbreak;")
	}
	for _, c := range arch {
		g.line("\tcase 0x%x:", c.fl)
		for _, p := range c.members {
			cp(p)
		}
		g.line("\t\tbreak;")
	}
	g.line("\tdefault:")
	g.line("\t\tbreak;")
	g.line("\t}")
	g.line("}")
	g.line("")
}

// replRun includes the replication runtime, a template over this program
// (its stages defined first as P4_VERIFY, ...), and generates the
// pipeline function that runs it.
func (g *gen) replRun() {
	flag := func(b bool) int {
		if b {
			return 1
		}
		return 0
	}
	g.line("#define P4_PROGRAM 1")
	g.line("#define P4_COPY_RECORD %d", flag(!g.recirculates()))
	g.line("#define P4_EGRESS_TIMESTAMP %d", flag(g.usesField("egress_global_timestamp")))
	g.line("#define P4_TRUNCATE %d", flag(g.hasTruncState()))
	g.line("#include <edgenf/p4/replicate_run.h>")
	g.line("")
	g.line("/* With replication: the parser and ingress, then per copy egress and the deparser (replicate_run.h). */")
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
