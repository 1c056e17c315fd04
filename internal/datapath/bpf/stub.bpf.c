// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* Programs the framework attaches to Linux interfaces.
 *
 * edgenf_stub: ingress (XDP or TCX) or egress (TCX) of every interface that
 * is the peer of a cube port or carries transparent cubes, one program per
 * hook and direction. The interface's slot (cube.h: enf_enter) holds the hop
 * the frame takes: the attachments, then the cube port (or the Linux stack
 * when no cube is peered), and its counters.
 *
 * edgenf_xdp_pass: put on the far end of a veth that XDP redirects into; veth
 * only accepts redirected frames when its peer runs an XDP program.
 *
 * edgenf_copier (TC): the copy machine, first at TCX ingress of every
 * interface with an XDP stub or entry and of the injector: makes the copies
 * an XDP program recorded for the frame (copy.h), and sends frames XDP
 * passed up with a priority out through the skb path (verdict.h: enf_out). */
#include <edgenf/edgenf.h>
#include <edgenf/copy.h>

/* Mirrored by the daemon (internal/datapath/abi.go, inject.go). */
EDGENF_ABI(edgenf_punt_hdr);
EDGENF_ABI(edgenf_inject_trailer);

EDGENF_IFACE_MAPS;

SEC(EDGENF_SEC) int edgenf_stub(ctx_t *ctx)
{
	struct edgenf_md *md = enf_md();
	struct edgenf_hop *h;

	if (!md)
		return CTX_PASS;
	h = enf_enter(ctx, md);
	if (!h)
		return CTX_PASS;
	return enf_take_hop(ctx, md, h);
}

#if defined(EDGENF_HOOK_XDP)
SEC("xdp") int edgenf_xdp_pass(struct xdp_md *ctx)
{
	return XDP_PASS;
}
#endif

/* edgenf_inject: on the daemon's private injection veth. A frame the slow path
 * sends there carries a trailer naming its hop; strip it and deliver. Frames
 * for the other hook are passed on (XDP → the TC injector behind it). */
SEC(EDGENF_SEC) int edgenf_inject(ctx_t *ctx)
{
	struct edgenf_inject_trailer tr;
	struct edgenf_md *md = enf_md();
	__u32 len = ctx_len(ctx);

	if (!md || len < sizeof(tr) + 14)
		return CTX_DROP;
	if (ctx_load_bytes(ctx, len - sizeof(tr), &tr, sizeof(tr)))
		return CTX_DROP;
	if (tr.magic != EDGENF_INJECT_MAGIC)
		return CTX_DROP;
	if (tr.hook != EDGENF_HOOK_ID)
		return CTX_PASS;
	if (ctx_change_tail(ctx, len - sizeof(tr)))
		return CTX_DROP;
	enf_md_start(ctx, md);
	md->pos = 0;
	__builtin_memcpy(&md->hop, &tr.hop, sizeof(tr.hop));
	return enf_deliver(ctx, md);
}

#if defined(EDGENF_HOOK_TC)
/* Copy i of the slot idx of cpu's ring, made from the frame: its headers
 * put in front of the shared payload, then cloned out (or, the last one,
 * redirected). Returns 0 when a copy left, 1 when the last one was
 * redirected (return TC_ACT_REDIRECT), -1 on failure. A global function:
 * verified once, not once per copy. */
__attribute__((noinline)) int enf_copy_one(struct __sk_buff *ctx, __u32 idx, __u32 cpu, __u32 i, __u32 inj)
{
	struct edgenf_copy_slot *sl = bpf_map_lookup_percpu_elem(&enf_copy_ring, &idx, cpu);
	struct edgenf_copy *c;
	__u32 len, cur, hlen, trunc;
	int last;

	if (!ctx || !sl || i >= EDGENF_COPY_MAX)
		return -1;
	c = &sl->c[i];
	last = i + 1 >= sl->n;
	hlen = c->hlen;
	len = ctx->len;
	if (hlen < EDGENF_COPY_MIN || hlen > EDGENF_COPY_HDR || len < sl->plen)
		return -1;
	cur = len - sl->plen;
	if (hlen != cur && ctx_adjust_head(ctx, (int)cur - (int)hlen))
		return -1;
	if (bpf_skb_store_bytes(ctx, 0, c->hdr, hlen, 0))
		return -1;
	trunc = c->trunc;
	if (last && trunc && trunc < ctx->len && bpf_skb_change_tail(ctx, trunc, 0))
		return -1;
	if (c->hop.kind == EDGENF_DST_IFACE && c->hop.nstack == 0) {
		if (last)
			return bpf_redirect(c->hop.ifindex, 0) == TC_ACT_REDIRECT ? 1 : -1;
		return bpf_clone_redirect(ctx, c->hop.ifindex, 0) ? -1 : 0;
	}
	if (!inj)
		return -1;
	/* a cube (or transparent cubes first): through the injector, run by
	 * the XDP programs there, as the copy would have been */
	return enf_clone_inject(ctx, &c->hop, 0, inj) ? -1 : 0;
}

SEC("tc") int edgenf_copier(struct __sk_buff *ctx)
{
	struct edgenf_copy_meta *m = (void *)(long)ctx->data_meta;
	struct edgenf_copy_slot *sl;
	struct edgenf_copy_cpu *st;
	__u32 idx, seq, cpu, n, inj;
	int r;

	struct edgenf_prio_meta *pm = (void *)(long)ctx->data_meta;

	/* an XDP frame that leaves with a priority (verdict.h: enf_out) */
	if ((void *)(pm + 1) <= ctx_data(ctx) && pm->magic == EDGENF_PRIO_MAGIC) {
		pm->magic = 0;
		ctx->priority = pm->priority;
		return bpf_redirect(pm->ifindex, 0);
	}
	if ((void *)(m + 1) > ctx_data(ctx) || m->magic != EDGENF_COPY_MAGIC)
		return TC_ACT_UNSPEC; /* not ours: the next program */
	idx = m->slot;
	seq = m->seq;
	cpu = m->cpu;
	m->magic = 0; /* the copies and the frame carry no meta further */
	st = enf_copy_state();
	sl = bpf_map_lookup_percpu_elem(&enf_copy_ring, &idx, cpu);
	if (!sl || sl->seq != seq || sl->n == 0 || sl->n > EDGENF_COPY_MAX) {
		if (st)
			st->stale++; /* overwritten before this frame came */
		return TC_ACT_SHOT;
	}
	n = sl->n;
	inj = enf_injector();
	if (ctx_inline_vlan(ctx)) {
		if (st)
			st->failed += n;
		return TC_ACT_SHOT;
	}
	for (__u32 i = 0; i < EDGENF_COPY_MAX; i++) {
		if (i >= n)
			break;
		r = enf_copy_one(ctx, idx, cpu, i, inj);
		if (r == 1)
			return TC_ACT_REDIRECT;
		if (r < 0 && st)
			st->failed++;
	}
	return TC_ACT_SHOT;
}
#endif
