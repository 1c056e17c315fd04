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

/* Interface programs are shared: one stub per hook and direction, attached
 * to every interface that takes frames into the framework, and one direct
 * entry per cube and direction (below). Each finds its interface's hop by
 * the interface: enf_if_slot maps an ifindex (below EDGENF_MAX_IFINDEX; a
 * larger one is in enf_if_slot_hi, one hash lookup more, allocated as used)
 * to the interface's slot, whose enf_if_hops entry holds the hop and
 * enf_if_stats the counters. Slot 0 is never given out: an interface no slot was written for
 * reads slot 0, whose hop is empty, and its frames go on to Linux. Peering
 * an interface is therefore a map write and a link, not a program load. */
#define EDGENF_MAX_IFINDEX 65536
#define EDGENF_MAX_IFACES 2048

/* An interface's slot: its hop, and the ifindex it was written for. A
 * frame whose ifindex is not the slot's (a stale enf_if_slot entry, the
 * slot given to another interface since) takes no hop. */
struct edgenf_iface {
	struct edgenf_hop hop;
	__u32 ifindex;
};

#define EDGENF_IFACE_MAPS                                         \
	struct {                                                  \
		__uint(type, BPF_MAP_TYPE_ARRAY);                 \
		__uint(max_entries, EDGENF_MAX_IFINDEX);          \
		__type(key, __u32);                               \
		__type(value, __u32);                             \
	} enf_if_slot SEC(".maps");                               \
	struct {                                                  \
		__uint(type, BPF_MAP_TYPE_HASH);                  \
		__uint(map_flags, BPF_F_NO_PREALLOC);             \
		__uint(max_entries, EDGENF_MAX_IFACES);           \
		__type(key, __u32);                               \
		__type(value, __u32);                             \
	} enf_if_slot_hi SEC(".maps");                            \
	struct {                                                  \
		__uint(type, BPF_MAP_TYPE_ARRAY);                 \
		__uint(max_entries, EDGENF_MAX_IFACES);           \
		__type(key, __u32);                               \
		__type(value, struct edgenf_iface);               \
	} enf_if_hops SEC(".maps");                               \
	struct {                                                  \
		__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);          \
		__uint(max_entries, EDGENF_MAX_IFACES);           \
		__type(key, __u32);                               \
		__type(value, struct edgenf_stats);               \
	} enf_if_stats SEC(".maps")

/* The interface a frame is on: where it arrived (XDP, TC ingress) or
 * leaves (TC egress). */
static __always_inline __u32 enf_iface_of(ctx_t *ctx)
{
#if defined(EDGENF_HOOK_XDP)
	return ctx->ingress_ifindex;
#else
	return ctx->ifindex;
#endif
}

/* Start of the hop of a frame entering (or leaving) a Linux interface: the
 * stub's work, shared with direct entries. Returns the hop, or NULL when
 * the frame belongs to the Linux stack. */
#define enf_enter(ctx, md)                                                   \
	enf_enter_from(ctx, md, &enf_if_slot, &enf_if_slot_hi, &enf_if_hops, &enf_if_stats)

static __always_inline struct edgenf_hop *enf_enter_from(ctx_t *ctx, struct edgenf_md *md, void *slots, void *slots_hi,
							 void *hops, void *stats)
{
	__u32 ifindex = enf_iface_of(ctx), *slot, key;
	struct edgenf_stats *s;
	struct edgenf_iface *e;

	/* An array lookup past the end finds nothing. One call site per
	 * map: a call clang merged from two branches would take either map,
	 * and the verifier inlines only a lookup whose map it knows (the
	 * merged call cost ~20 ns a frame here, a helper call and its return
	 * thunk). */
	slot = bpf_map_lookup_elem(slots, &ifindex);
	if (!slot) {
		slot = bpf_map_lookup_elem(slots_hi, &ifindex);
		if (!slot)
			return NULL;
	}
	key = *slot;
	e = bpf_map_lookup_elem(hops, &key);
	if (!e || e->hop.kind == EDGENF_DST_NONE || e->ifindex != ifindex)
		return NULL;
	s = bpf_map_lookup_elem(stats, &key);
	if (s) {
		s->rx_packets++;
		s->rx_bytes += ctx_len(ctx);
	}
	enf_md_start(ctx, md);
	return &e->hop;
}

/* Direct entry. When the hop of an interface starts with a cube, the
 * framework attaches that cube's program entered at edgenf_entry (loaded
 * once per cube and direction, shared by the interfaces whose hop starts
 * with it) in place of the stub: the same work, one tail call fewer (a
 * retpolined indirect jump on many CPUs). The loader replaces the
 * interface maps with the stub's, so the hops and the interface counters
 * stay the stub's and the engine changes them as before. Ordinary loads
 * leave the entry out. */
#define EDGENF_ENTRY_MAPS EDGENF_IFACE_MAPS

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
		h = enf_enter(ctx, md);                                      \
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
