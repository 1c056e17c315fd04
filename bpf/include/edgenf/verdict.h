/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* Verdict helpers. An NF ends every path with one of them:
 *   return enf_send(ctx, md, port);   out of one of its ports
 *   return enf_drop(ctx, md);
 *   return enf_pass(ctx, md);         standard cube: to the Linux stack;
 *                                     transparent cube: on along the hop
 *   return enf_punt(ctx, md, reason, arg);  a copy to the slow path, then drop
 * (enf_flood is in flood.h: include it only in NFs that flood.)
 * Each one does its own accounting and the tail calls it needs. */
#pragma once

#include "maps.h"

/* A chain longer than this is a forwarding loop between cubes. The kernel stops
 * at 33 tail calls anyway; we stop first and count a drop. */
#define EDGENF_MAX_HOPS 30

static __always_inline struct edgenf_md *enf_md(void)
{
	__u32 zero = 0;
	return bpf_map_lookup_elem(&enf_scratch, &zero);
}

static __always_inline void enf_count(__u32 idx, __u32 len, int field)
{
	struct edgenf_stats *s = bpf_map_lookup_elem(&enf_stats, &idx);

	if (!s)
		return;
	switch (field) {
	case 0:
		s->rx_packets++;
		s->rx_bytes += len;
		break;
	case 1:
		s->tx_packets++;
		s->tx_bytes += len;
		break;
	case 2:
		s->drop_packets++;
		s->drop_bytes += len;
		break;
	default:
		s->punt_packets++;
		break;
	}
}

#define ENF_RX 0
#define ENF_TX 1
#define ENF_DROP 2
#define ENF_PUNT 3

static __always_inline __u32 enf_port_idx(__u32 port)
{
	return port < EDGENF_MAX_PORTS ? port : EDGENF_MAX_PORTS;
}

static __always_inline int enf_drop(ctx_t *ctx, struct edgenf_md *md)
{
	enf_count(enf_port_idx(md->in_port), ctx_len(ctx), ENF_DROP);
	return CTX_DROP;
}

#if defined(EDGENF_HOOK_TC)
/* bpf_clone_redirect out of an interface (flags 0: its egress). The kernel
 * transmits the clone before the helper returns, and the interface's TC
 * egress programs run nested in this program, on this CPU: an edgenf stub
 * there starts a hop of its own in the per-CPU metadata. So the metadata is
 * kept across the call, for whatever the caller does next (more copies, a
 * punt, its own verdict): two copies of 76 bytes, next to a clone. (A clone
 * into the injector needs none: its near end runs no egress program and
 * the far end receives from its backlog, later.) */
static __always_inline long enf_clone_redirect(struct __sk_buff *ctx, struct edgenf_md *md, __u32 ifindex)
{
	struct edgenf_md saved = *md;
	long err = bpf_clone_redirect(ctx, ifindex, 0);

	*md = saved;
	return err;
}
#endif

/* Finish the hop held in md->hop: run the next transparent cube of its stack,
 * or deliver to the destination. Called again by each transparent cube. */
static __always_inline int enf_deliver(ctx_t *ctx, struct edgenf_md *md)
{
	struct edgenf_hop *h = &md->hop;
	__u32 pos = md->pos;

	if (pos < h->nstack && pos < EDGENF_MAX_STACK) {
		bpf_tail_call(ctx, &enf_panel, h->stack[pos]);
		return CTX_DROP; /* slot empty: the attachment is being torn down */
	}
	switch (h->kind) {
	case EDGENF_DST_IFACE:
		return ctx_redirect(ctx, h->ifindex);
	case EDGENF_DST_CUBE:
		if (++md->hops > EDGENF_MAX_HOPS)
			return CTX_DROP;
		md->cube = h->slot;
		md->in_port = h->port;
		bpf_tail_call(ctx, &enf_panel, h->slot);
		return CTX_DROP;
	case EDGENF_DST_STACK:
		return CTX_PASS;
	default:
		return CTX_DROP;
	}
}

/* Start the hop h (a map value): deliver straight from it when no
 * transparent cube runs on the way, else copy it into the metadata, where the
 * transparent cubes find it across tail calls. */
static __always_inline int enf_take_hop(ctx_t *ctx, struct edgenf_md *md, struct edgenf_hop *h)
{
	if (h->nstack == 0) {
		if (h->kind == EDGENF_DST_IFACE)
			return ctx_redirect(ctx, h->ifindex);
		if (h->kind == EDGENF_DST_CUBE) {
			if (++md->hops > EDGENF_MAX_HOPS)
				return CTX_DROP;
			md->cube = h->slot;
			md->in_port = h->port;
			bpf_tail_call(ctx, &enf_panel, h->slot);
			return CTX_DROP;
		}
	}
	__builtin_memcpy(&md->hop, h, sizeof(*h));
	md->pos = 0;
	return enf_deliver(ctx, md);
}

/* Send out of a port of the running standard cube. */
static __always_inline int enf_send(ctx_t *ctx, struct edgenf_md *md, __u32 port)
{
	struct edgenf_hop *h;

	if (port >= EDGENF_MAX_PORTS)
		return enf_drop(ctx, md);
	h = bpf_map_lookup_elem(&enf_ports, &port);
	if (!h || h->kind == EDGENF_DST_NONE)
		return enf_drop(ctx, md);
	enf_count(port, ctx_len(ctx), ENF_TX);
	return enf_take_hop(ctx, md, h);
}

/* Punt a copy (headers + up to EDGENF_PUNT_SNAPLEN bytes) to the slow path and
 * drop the original; the daemon re-injects what it wants forwarded. */
/* Slot of the transparent cube now running. */
static __always_inline __u32 enf_self(struct edgenf_md *md)
{
	__u32 pos = md->pos;

	return pos < EDGENF_MAX_STACK ? md->hop.stack[pos] : EDGENF_MAX_SLOTS;
}

/* Send a copy of the frame (its first snap bytes) with its metadata to the
 * slow path, for the controller of cube slot; the frame and its verdict are
 * untouched (events, logs). */
static __always_inline void enf_report(ctx_t *ctx, struct edgenf_md *md, __u32 slot, __u32 in_port,
				       __u32 reason, __u32 arg, __u32 snap)
{
	__u32 len = ctx_len(ctx);
	__u64 cap = len < snap ? len : snap;
	struct edgenf_punt_hdr hdr = {
		.magic = EDGENF_PUNT_MAGIC,
		.cube = slot,
		.in_port = in_port,
		.reason = reason,
		.arg = arg,
		.pkt_len = len,
		.ifindex = md->ingress_ifindex,
		.hook = EDGENF_HOOK_ID,
	};

	bpf_perf_event_output(ctx, &enf_punt_ring, BPF_F_CURRENT_CPU | (cap << 32), &hdr, sizeof(hdr));
}

/* Punt for cube slot, counting on its counter idx: a copy to the slow path,
 * then drop. in_port is the port (standard cubes) or the direction
 * (transparent cubes). */
static __always_inline int enf_punt_from(ctx_t *ctx, struct edgenf_md *md, __u32 slot, __u32 idx, __u32 reason, __u32 arg)
{
	enf_count(idx, ctx_len(ctx), ENF_PUNT);
	enf_report(ctx, md, slot, idx, reason, arg, EDGENF_PUNT_SNAPLEN);
	return CTX_DROP;
}

/* Punt from a standard cube (counted on the in-port). */
static __always_inline int enf_punt(ctx_t *ctx, struct edgenf_md *md, __u32 reason, __u32 arg)
{
	return enf_punt_from(ctx, md, md->cube, enf_port_idx(md->in_port), reason, arg);
}

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

/* Entry point of a transparent cube: fn(ctx, md, dir) returns ENF_VERDICT_*;
 * the framework continues the hop, drops or punts. Counters: index 0 counts
 * the ingress direction, 1 egress. */
#define ENF_VERDICT_PASS 0
#define ENF_VERDICT_DROP 1
#define ENF_VERDICT_PUNT 2 /* md->mark holds the reason */

static __always_inline __u32 enf_dir(struct edgenf_md *md)
{
	__u32 pos = md->pos;

	return pos < EDGENF_MAX_STACK ? md->hop.dir[pos] : EDGENF_DIR_INGRESS;
}


/* Entry point of a transparent cube. The direct entry serves hops whose
 * stack starts with it. */
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

/* Standard cube: hand the frame to the Linux stack of the interface it
 * arrived on. */
static __always_inline int enf_pass(ctx_t *ctx, struct edgenf_md *md)
{
	(void)ctx;
	(void)md;
	return CTX_PASS;
}
