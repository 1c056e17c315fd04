/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* Packet replication of v1model programs, the copies: the pipeline of a
 * program that clones, multicasts, resubmits or recirculates
 * (internal/p4/backend/replicate.go says how the copies are made, per
 * hook). p4_run runs Parser, VerifyChecksum and Ingress, then per copy
 * Egress, ComputeChecksum and the deparser, sending each copy but the last
 * (enf_copy, copy.h) just before the next one is deparsed.
 *
 * A template over the program: the generated C includes it after its
 * stages, having defined
 *   P4_PROGRAM                 (1)
 *   struct p4_state, p4_state_map  the per-packet state, with sm (the
 *                              standard metadata), rq (struct p4_rq), off,
 *                              hdr and buf (everything before buf is
 *                              reset per packet)
 *   p4_parser(ctx), p4_deparse(ctx)
 *   p4_keep(d, src, fl)        copies field list fl from src to d
 *   P4_VERIFY(ctx), P4_INGRESS(ctx), P4_EGRESS(ctx), P4_COMPUTE(ctx)
 *                              the control blocks (nothing for an empty one)
 *   P4_CPU_PORT_CFG            the program's CPU port
 *   P4_COPY_RECORD             1: XDP records copies for the copy machine
 *                              (copy.h); 0: programs that recirculate, whose
 *                              copies take the slow path at XDP (the
 *                              recirculated packet is parsed again)
 *   P4_EGRESS_TIMESTAMP        1: egress sees egress_global_timestamp
 *   P4_TRUNCATE                1: the state has trunc and trunc_len
 *                              (truncate, assert)
 *   P4_REPARSE                 (optional) 1: P4_EGRESS parses the packet
 *                              again and leaves s->off where its parser
 *                              stopped, the bytes the deparser replaces
 *                              (PSA, backend/psa_replicate.go); 0: the
 *                              deparser replaces the headers in front of
 *                              the payload (v1model)
 * bpf/check/p4_replicate.c is such a program, for the header's own check.
 */
#pragma once

#ifndef P4_PROGRAM
#error "edgenf/p4/replicate_run.h is a template over a generated P4 program: define P4_PROGRAM and what it lists first"
#endif

#include "p4.h"
#include "replicate.h"
#include "../copy.h"

#ifndef P4_REPARSE
#define P4_REPARSE 0
#endif

/* Snapshots of the P4 state and the bookkeeping of the copies made. */
struct p4_snaps {
	struct p4_state parsed; /* after the parser: I2E clones start here */
	struct p4_state ing;    /* after ingress: multicast and unicast copies */
	struct p4_state src;    /* preserved fields of a new pass or an E2E clone */
	struct p4_state e2e;    /* the copy whose E2E clones go to a group */
	__u32 e2e_grp;          /* that group (0: none), made by p4_e2e_mcast */
	__u32 e2e_fl;
	__u32 e2e_trunc;
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

/* Send the pending copy: it is not the last one. Returns -1 when the
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

/* The state an E2E clone of the copy in src starts egress from: its
 * headers, the fields of field list fl, fresh standard metadata. */
static __always_inline void p4_e2e_start(struct p4_state *s, const struct p4_state *src, __u32 fl, __u32 pr)
{
	__builtin_memset(s, 0, __builtin_offsetof(struct p4_state, buf));
	__builtin_memcpy(&s->hdr, &src->hdr, sizeof(s->hdr));
	p4_keep(s, src, fl);
	s->sm.f_ingress_port = src->sm.f_ingress_port;
	s->sm.f_ingress_global_timestamp = src->sm.f_ingress_global_timestamp;
	s->sm.f_instance_type = P4_INST_E2E;
	s->sm.f_egress_port = pr & 0xffff;
	s->sm.f_egress_rid = pr >> 16;
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
	P4_VERIFY(ctx);
	p4_scopy(&sn->parsed, s);
	P4_INGRESS(ctx);
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
	if (kind == P4_INST_E2E) { /* a replica of an E2E clone to a group */
		p4_e2e_start(s, &sn->e2e, fl, pr);
		s->sm.f_packet_length = ctx_len(ctx);
	} else {
		if (kind == P4_INST_I2E) {
			p4_scopy(s, &sn->parsed);
			p4_keep(s, &sn->ing, fl);
		} else if (sn->dirty) {
			p4_scopy(s, &sn->ing);
		}
		if (kind != P4_INST_NORMAL) /* unicast keeps the pass's: 0, resubmit or recirculate */
			s->sm.f_instance_type = kind;
		s->sm.f_egress_port = pr & 0xffff;
		s->sm.f_egress_rid = pr >> 16;
	}
	sn->dirty = 1;
#pragma unroll
	for (int d = 0; d <= P4_MAX_E2E; d++) {
		struct p4_clone_session *cs;
		__u32 sess, efl, t;

		s->rq.clone_sess = 0;
		s->rq.recirc = 0;
		s->off = sn->hlen;
#if P4_EGRESS_TIMESTAMP
		s->sm.f_egress_global_timestamp = (bpf_ktime_get_ns() / 1000) & 0xffffffffffffULL;
#endif
		P4_EGRESS(ctx);
		if (s->sm.f_egress_spec != P4_DROP_PORT) {
			if (p4_flush(ctx, sn)) {
				sn->abort = 1;
				return 0;
			}
			P4_COMPUTE(ctx);
#if !P4_REPARSE
			s->off = sn->hlen;
#endif
			if (p4_deparse(ctx)) {
				sn->abort = 1;
				return 0;
			}
			sn->hlen = ctx_len(ctx) - sn->plen;
#if P4_TRUNCATE
			t = s->trunc ? s->trunc_len : 0xffffffffu;
#else
			t = 0xffffffffu;
#endif
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
		if (!cs)
			break; /* unknown session: no copy */
		efl = s->rq.clone_fl;
		trunc = cs->trunc ? cs->trunc : 0xffffffffu;
		if (cs->flags & P4_SESS_MC) {
			/* to a group: the caller makes the replicas (p4_e2e_mcast;
			 * a BPF function cannot call itself); not for a replica
			 * of such a clone */
			if (kind != P4_INST_E2E) {
				p4_scopy(&sn->e2e, s);
				sn->e2e_grp = cs->mgrp;
				sn->e2e_fl = efl;
				sn->e2e_trunc = trunc;
			}
			break;
		}
		p4_scopy(&sn->src, s);
		p4_e2e_start(s, &sn->src, efl, cs->port);
		s->sm.f_packet_length = ctx_len(ctx);
	}
	return 0;
}

/* The replicas of the E2E clone to a group the last p4_copy asked for:
 * E2E clones of the copy in sn->e2e, one per replica. */
P4_FN int p4_e2e_mcast(ctx_t *ctx)
{
	__u32 zero = 0;
	struct p4_snaps *sn = bpf_map_lookup_elem(&p4_snap_map, &zero);
	struct p4_mc_group *g;
	__u32 n, grp;

	P4_KEEP(ctx);
	if (!sn || !sn->e2e_grp)
		return 0;
	grp = sn->e2e_grp;
	sn->e2e_grp = 0;
	g = bpf_map_lookup_elem(&p4_mc_groups, &grp);
	if (!g)
		return 0; /* unknown group: no copy */
	n = g->n;
	for (__u32 i = 0; i < P4_MAX_REPLICAS; i++) {
		if (i >= n || sn->abort)
			break;
		p4_copy(ctx, P4_INST_E2E | (sn->e2e_fl << 8), (__u32)g->r[i].port | ((__u32)g->r[i].rid << 16), sn->e2e_trunc);
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
	/* a loop: clang does not unroll it (p4_copy is a function) */
	for (__u32 i = 0; i < P4_MAX_REPLICAS; i++) {
		if (i >= n || sn->abort)
			break;
		p4_copy(ctx, kindfl, (__u32)g->r[i].port | ((__u32)g->r[i].rid << 16), trunc);
		p4_e2e_mcast(ctx);
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
	sn->e2e_grp = 0;
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

				if (cs->flags & P4_SESS_MC) {
					p4_mcast(ctx, P4_INST_I2E | (cfl << 8), cs->mgrp, trunc);
				} else {
					p4_copy(ctx, P4_INST_I2E | (cfl << 8), cs->port, trunc);
					p4_e2e_mcast(ctx);
				}
			}
		}
		if (sn->abort)
			return -1;
		if (mgrp)
			p4_mcast(ctx, P4_INST_REPLICATION, mgrp, 0xffffffffu);
		else if (espec != P4_DROP_PORT) {
			p4_copy(ctx, P4_INST_NORMAL, espec, 0xffffffffu);
			p4_e2e_mcast(ctx);
		}
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

