/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* Verdict helpers. A standard cube ends every path with one of them:
 *   return enf_send(ctx, md, port);   out of one of its ports
 *   return enf_drop(ctx, md);
 *   return enf_pass(ctx, md);         to the Linux stack
 *   return enf_punt(ctx, md, reason, arg);  a copy to the slow path, then drop
 * (enf_flood is in flood.h: include it only in NFs that flood.)
 * Each one does its own accounting and the tail calls it needs. A
 * transparent cube returns ENF_VERDICT_* instead, and the framework
 * (cube.h) continues the hop. */
#pragma once

#include "maps.h"

/* A chain longer than this is a forwarding loop between cubes. The kernel stops
 * at 33 tail calls anyway; we stop first and count a drop. */
#define EDGENF_MAX_HOPS 30

/* Per-port accounting in enf_stats (index idx: a port, or EDGENF_MAX_PORTS
 * for the cube as a whole; a transparent cube's direction): field is one of
 * ENF_RX, ENF_TX, ENF_DROP, ENF_PUNT. */
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

/* Enter cube port h->slot:h->port (a tail call), unless the frame has
 * crossed too many cubes already. */
static __always_inline int enf_to_cube(ctx_t *ctx, struct edgenf_md *md, const struct edgenf_hop *h)
{
	if (++md->hops > EDGENF_MAX_HOPS)
		return CTX_DROP;
	md->cube = h->slot;
	md->in_port = h->port;
	bpf_tail_call(ctx, &enf_panel, h->slot);
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

#if defined(EDGENF_HOOK_XDP)
/* enf_out with a priority at XDP: see enf_out. Out of line of the common
 * path, which so reads neither the interface nor the copy machines. */
static __always_inline int enf_out_prio(struct xdp_md *ctx, struct edgenf_md *md, __u32 ifindex)
{
	struct edgenf_prio_meta *m;
	__u32 in = ctx->ingress_ifindex, *ok;

	ok = bpf_map_lookup_elem(&enf_copy_devs, &in);
	if (ok && *ok && !bpf_xdp_adjust_meta(ctx, -(int)sizeof(*m))) {
		m = (void *)(long)ctx->data_meta;
		if ((void *)(m + 1) <= ctx_data(ctx)) {
			m->magic = EDGENF_PRIO_MAGIC;
			m->ifindex = ifindex;
			m->priority = md->priority;
			m->pad = 0;
			return XDP_PASS;
		}
	}
	return ctx_redirect(ctx, ifindex);
}
#endif

/* Out of interface ifindex, with md->priority as skb->priority when set. At
 * TC that is one store. XDP frames have no skb and never meet a qdisc, so a
 * frame with a priority leaves through the skb path instead: it goes up
 * with XDP_PASS and an edgenf_prio_meta in its data_meta, and the copy
 * machine at TC ingress of the interface it came in on (stub.bpf.c) sets
 * skb->priority and redirects it out of ifindex, through the qdisc there.
 * That costs what the TC path costs (an skb per frame) for these frames
 * only. Where no copy machine runs behind the interface (enf_copy_devs), or
 * the driver has no room for metadata, the frame is redirected at XDP
 * without its priority: never passed to a stack that would not forward it.
 * A frame without a priority pays one load and one branch. */
static __always_inline int enf_out(ctx_t *ctx, struct edgenf_md *md, __u32 ifindex)
{
#if defined(EDGENF_HOOK_XDP)
	if (enf_unlikely(md->priority))
		return enf_out_prio(ctx, md, ifindex);
#else
	if (enf_unlikely(md->priority))
		ctx->priority = md->priority;
#endif
	return ctx_redirect(ctx, ifindex);
}

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
		return enf_out(ctx, md, h->ifindex);
	case EDGENF_DST_CUBE:
		return enf_to_cube(ctx, md, h);
	case EDGENF_DST_STACK:
		return CTX_PASS;
	default:
		return CTX_DROP;
	}
}

/* Start the hop h (a map value): deliver straight from it when no
 * transparent cube runs on the way (the common ends first, tested in the
 * order that keeps them cheapest), else copy it into the metadata, where the
 * transparent cubes find it across tail calls. */
static __always_inline int enf_take_hop(ctx_t *ctx, struct edgenf_md *md, struct edgenf_hop *h)
{
	if (h->nstack == 0) {
		if (h->kind == EDGENF_DST_IFACE)
			return enf_out(ctx, md, h->ifindex);
		if (h->kind == EDGENF_DST_CUBE)
			return enf_to_cube(ctx, md, h);
	}
	__builtin_memcpy(&md->hop, h, sizeof(*h));
	md->pos = 0;
	return enf_deliver(ctx, md);
}

#define ENF_DIRECT_CASE(p)                                    \
	case p:                                               \
		bpf_tail_call_static(ctx, &enf_peers, p);     \
		break;

/* Jump to the program in enf_peers[port] through a constant index: one
 * call site per port, so the verifier sees each index as a constant and
 * the JIT makes each a direct jump (maps.h). Returns (falls through) when
 * the entry is empty. */
static __always_inline void enf_jump_peer(ctx_t *ctx, __u32 port)
{
	switch (port) {
		ENF_DIRECT_CASE(0)
		ENF_DIRECT_CASE(1)
		ENF_DIRECT_CASE(2)
		ENF_DIRECT_CASE(3)
		ENF_DIRECT_CASE(4)
		ENF_DIRECT_CASE(5)
		ENF_DIRECT_CASE(6)
		ENF_DIRECT_CASE(7)
		ENF_DIRECT_CASE(8)
		ENF_DIRECT_CASE(9)
		ENF_DIRECT_CASE(10)
		ENF_DIRECT_CASE(11)
		ENF_DIRECT_CASE(12)
		ENF_DIRECT_CASE(13)
		ENF_DIRECT_CASE(14)
		ENF_DIRECT_CASE(15)
	}
}

/* Enter the cube port h leads to from port of the running cube: directly
 * when enf_peers[port] holds the program its panel slot runs (maps.h),
 * else through the panel. */
static __always_inline int enf_to_peer(ctx_t *ctx, struct edgenf_md *md, const struct edgenf_hop *h, __u32 port)
{
	__u32 slot = h->slot, *id, *owner;

	if (++md->hops > EDGENF_MAX_HOPS)
		return CTX_DROP;
	md->cube = slot;
	md->in_port = h->port;
	id = bpf_map_lookup_elem(&enf_peer_ids, &port);
	owner = bpf_map_lookup_elem(&enf_owner, &slot);
	if (id && owner && *id && *id == *owner)
		enf_jump_peer(ctx, port);
	bpf_tail_call(ctx, &enf_panel, slot);
	return CTX_DROP;
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
#if !defined(EDGENF_PANEL_HOPS)
	if (h->nstack == 0 && h->kind == EDGENF_DST_CUBE && port < EDGENF_DIRECT_PORTS)
		return enf_to_peer(ctx, md, h, port);
#endif
	return enf_take_hop(ctx, md, h);
}

/* Slot of the transparent cube now running. */
static __always_inline __u32 enf_self(struct edgenf_md *md)
{
	__u32 pos = md->pos;

	return pos < EDGENF_MAX_STACK ? md->hop.stack[pos] : EDGENF_MAX_SLOTS;
}

/* Whether the running cube may send one more message to the slow path:
 * the punt ring and its reader are every cube's, so each cube has a
 * budget (maps.h: enf_punt_budget, GCRA: types.h), and a message over it
 * is not sent and is counted on idx as a punt_rate drop. Only the slow
 * path pays for it: no fast-path verdict reads the budget. A punt whose
 * compare and swap another CPU's punt won at the same moment is dropped
 * too: rare below the budget. The check is a call of its own, for every
 * NF: inlined at each punt site it grew the code around them (router XDP
 * 5,216 -> 6,598 instructions) for the slow path only, and kept the
 * caller's registers live across it (the UPF's chain of calls is near the
 * 512 bytes of stack: the call's 32-byte frame sits beside the caller's). */
static __noinline int enf_punt_allowed(__u32 *idx)
{
	struct edgenf_punt_budget *b = bpf_map_lookup_elem(&enf_punt_budget, &enf_zero);
	struct edgenf_stats *s;
	__u64 now, tat, next;

	if (!b || !b->interval)
		return 1;
	now = bpf_ktime_get_ns();
	tat = *(volatile __u64 *)&b->tat;
	next = (tat > now ? tat : now) + b->interval;
	if (next - now <= b->burst && __sync_val_compare_and_swap(&b->tat, tat, next) == tat)
		return 1;
	s = bpf_map_lookup_elem(&enf_stats, idx);
	if (s)
		s->punt_rate_drops++;
	return 0;
}

/* Send a copy of the frame (its first snap bytes) with its metadata to the
 * slow path, for the controller of cube slot, within the running cube's
 * punt budget; the frame and its verdict are untouched (events, logs).
 * Returns 0 when the budget held it back. */
static __always_inline int enf_report(ctx_t *ctx, struct edgenf_md *md, __u32 slot, __u32 in_port,
				       __u32 reason, __u32 arg, __u32 snap)
{
	__u32 len = ctx_len(ctx);
	__u64 cap = len < snap ? len : snap;
	struct edgenf_punt_hdr hdr = {
		.magic = EDGENF_PUNT_MAGIC,
		.cube = slot,
		.in_port = enf_port_idx(in_port),
		.reason = reason,
		.arg = arg,
		.pkt_len = len,
		.ifindex = md->ingress_ifindex,
		.hook = EDGENF_HOOK_ID,
	};

	/* last, and keyed by what is in memory already: only ctx and cap live
	 * across the check, no stack slot of its own (the UPF's call chain is
	 * near the 512 bytes of stack) */
	if (!enf_punt_allowed(&hdr.in_port))
		return 0;
	bpf_perf_event_output(ctx, &enf_punt_ring, BPF_F_CURRENT_CPU | (cap << 32), &hdr, sizeof(hdr));
	return 1;
}

/* Punt for cube slot, counting on its counter idx: a copy to the slow path
 * (counted as a punt, or as a punt_rate drop over the budget), then drop.
 * in_port is the port (standard cubes) or the direction (transparent
 * cubes). */
static __always_inline int enf_punt_from(ctx_t *ctx, struct edgenf_md *md, __u32 slot, __u32 idx, __u32 reason, __u32 arg)
{
	if (enf_report(ctx, md, slot, idx, reason, arg, EDGENF_PUNT_SNAPLEN))
		enf_count(idx, ctx_len(ctx), ENF_PUNT);
	return CTX_DROP;
}

/* Punt from a standard cube: a copy (headers + up to EDGENF_PUNT_SNAPLEN
 * bytes) to the slow path, counted on the in-port, and the original dropped;
 * the daemon re-injects what it wants forwarded. */
static __always_inline int enf_punt(ctx_t *ctx, struct edgenf_md *md, __u32 reason, __u32 arg)
{
	return enf_punt_from(ctx, md, md->cube, enf_port_idx(md->in_port), reason, arg);
}

/* Standard cube: hand the frame to the Linux stack of the interface it
 * arrived on. */
static __always_inline int enf_pass(ctx_t *ctx, struct edgenf_md *md)
{
	(void)ctx;
	(void)md;
	return CTX_PASS;
}

/* What a transparent cube's function returns. */
#define ENF_VERDICT_PASS 0 /* on along the hop */
#define ENF_VERDICT_DROP 1
#define ENF_VERDICT_PUNT 2 /* a copy to the slow path, then drop; md->mark holds the reason */
