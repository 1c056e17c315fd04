/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* A cube object's programs. An NF defines its per-packet function and names
 * it once:
 *   EDGENF_CUBE(fn)         standard cube: int fn(ctx_t *, struct edgenf_md *)
 *                           ends with a verdict helper (verdict.h)
 *   EDGENF_TRANSPARENT(fn)  transparent cube: int fn(ctx_t *, struct
 *                           edgenf_md *, __u32 dir) returns ENF_VERDICT_*
 * Each macro defines the object's two programs: edgenf_cube, which the patch
 * panel tail-calls, and edgenf_entry, its direct entry from an interface.
 * The stub (internal/datapath/bpf/stub.bpf.c) starts hops with the same
 * helpers. */
#pragma once

#include "verdict.h"

#if defined(EDGENF_INLINE_VLAN)
#define EDGENF_VLAN_INLINE 1
#else
#define EDGENF_VLAN_INLINE 0
#endif

/* Metadata of a frame that starts a hop from an interface (stub, direct
 * entry, injector): no cube, port, tenant, mark or hops behind it yet. */
static __always_inline void enf_md_start(ctx_t *ctx, struct edgenf_md *md)
{
	md->cube = EDGENF_MAX_SLOTS;
	md->in_port = 0;
	md->ingress_ifindex = ctx_ifindex(ctx);
	md->tenant = 0;
	md->mark = 0;
	md->hops = 0;
	md->priority = 0;
}

/* Start of the hop of a frame entering (or leaving) a Linux interface: the
 * stub's work, shared with direct entries. hops and stats are the stub's
 * maps; returns the hop, or NULL when the frame belongs to the Linux stack. */
static __always_inline struct edgenf_hop *enf_enter(ctx_t *ctx, struct edgenf_md *md, void *hops, void *stats)
{
	struct edgenf_stats *s;
	struct edgenf_hop *h;
	__u32 zero = 0;

	h = bpf_map_lookup_elem(hops, &zero);
	if (!h || h->kind == EDGENF_DST_NONE)
		return NULL;
	s = bpf_map_lookup_elem(stats, &zero);
	if (s) {
		s->rx_packets++;
		s->rx_bytes += ctx_len(ctx);
	}
	enf_md_start(ctx, md);
	return h;
}

/* Direct entry. When the hop of an interface starts with a cube, the
 * framework attaches a copy of that cube's program, entered at edgenf_entry,
 * in place of the stub: the same work, one tail call fewer (a retpolined
 * indirect jump on many CPUs). The loader replaces these two maps with the
 * stub's own, so the hop and the interface counters stay the stub's and the
 * engine changes them as before. Ordinary loads leave the entry out. */
#define EDGENF_ENTRY_MAPS                                         \
	struct {                                                  \
		__uint(type, BPF_MAP_TYPE_ARRAY);                 \
		__uint(max_entries, EDGENF_MAX_PORTS);            \
		__type(key, __u32);                               \
		__type(value, struct edgenf_hop);                 \
	} enf_entry_hop SEC(".maps");                             \
	struct {                                                  \
		__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);          \
		__uint(max_entries, EDGENF_MAX_PORTS + 1);        \
		__type(key, __u32);                               \
		__type(value, struct edgenf_stats);               \
	} enf_entry_stats SEC(".maps")

/* A hop that ends at a standard cube's port, taken without the tail call. */
static __always_inline void enf_enter_cube(struct edgenf_md *md, struct edgenf_hop *h)
{
	md->cube = h->slot;
	md->in_port = h->port;
	md->hops = 1;
}

/* A hop whose stack starts with the transparent cube entered. */
static __always_inline void enf_enter_stack(struct edgenf_md *md, struct edgenf_hop *h)
{
	__builtin_memcpy(&md->hop, h, sizeof(*h));
	md->pos = 0;
}

/* The two programs of a cube object, around its edgenf_cube_run: the panel's
 * (edgenf_cube) and the direct entry (edgenf_entry), which starts the hop
 * with start(md, hop) first. */
#define EDGENF_PROGRAMS(start)                                               \
	SEC(EDGENF_SEC) int edgenf_cube(ctx_t *ctx)                          \
	{                                                                    \
		struct edgenf_md *md = enf_md();                             \
		if (!md)                                                     \
			return CTX_DROP;                                     \
		return edgenf_cube_run(ctx, md);                             \
	}                                                                    \
	EDGENF_ENTRY_MAPS;                                                   \
	SEC(EDGENF_SEC) int edgenf_entry(ctx_t *ctx)                         \
	{                                                                    \
		struct edgenf_md *md = enf_md();                             \
		struct edgenf_hop *h;                                        \
		if (!md)                                                     \
			return CTX_PASS;                                     \
		h = enf_enter(ctx, md, &enf_entry_hop, &enf_entry_stats);    \
		if (!h)                                                      \
			return CTX_PASS;                                     \
		start(md, h);                                                \
		return edgenf_cube_run(ctx, md);                             \
	}

/* Entry point of a standard cube: counts rx, then runs fn(ctx, md). The
 * direct entry serves hops that end at one of its ports. */
#define EDGENF_CUBE(fn)                                                      \
	static __always_inline int edgenf_cube_run(ctx_t *ctx, struct edgenf_md *md) \
	{                                                                    \
		enf_count(enf_port_idx(md->in_port), ctx_len(ctx), ENF_RX);  \
		if (EDGENF_VLAN_INLINE && ctx_inline_vlan(ctx))              \
			return enf_drop(ctx, md);                            \
		return fn(ctx, md);                                          \
	}                                                                    \
	EDGENF_PROGRAMS(enf_enter_cube)

/* Direction the running transparent cube sees the frame in (enum
 * edgenf_dir). */
static __always_inline __u32 enf_dir(struct edgenf_md *md)
{
	__u32 pos = md->pos;

	return pos < EDGENF_MAX_STACK ? md->hop.dir[pos] : EDGENF_DIR_INGRESS;
}

/* Entry point of a transparent cube: fn(ctx, md, dir) returns ENF_VERDICT_*;
 * the framework continues the hop, drops or punts. Counters: index 0 counts
 * the ingress direction, 1 egress. The direct entry serves hops whose stack
 * starts with it. */
#define EDGENF_TRANSPARENT(fn)                                                \
	static __always_inline int edgenf_cube_run(ctx_t *ctx, struct edgenf_md *md) \
	{                                                                     \
		__u32 dir = enf_dir(md), len = ctx_len(ctx);                  \
		int v = fn(ctx, md, dir);                                     \
		if (v == ENF_VERDICT_DROP) {                                  \
			enf_count(dir, len, ENF_DROP);                        \
			return CTX_DROP;                                      \
		}                                                             \
		if (v == ENF_VERDICT_PUNT)                                    \
			return enf_punt_from(ctx, md, enf_self(md), dir,      \
					     md->mark, dir);                  \
		enf_count(dir, len, ENF_RX);                                  \
		md->pos++;                                                    \
		return enf_deliver(ctx, md);                                  \
	}                                                                     \
	EDGENF_PROGRAMS(enf_enter_stack)
