// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* Programs the framework attaches to Linux interfaces.
 *
 * edgenf_stub: ingress (XDP or TCX) or egress (TCX) of an interface that is
 * the peer of a cube port or carries transparent cubes. Its own enf_ports[0]
 * holds the hop the frame takes: the attachments, then the cube port (or the
 * Linux stack when no cube is peered). Counters: enf_stats[0].
 *
 * edgenf_xdp_pass: put on the far end of a veth that XDP redirects into; veth
 * only accepts redirected frames when its peer runs an XDP program. */
#include <edgenf/edgenf.h>

SEC(EDGENF_SEC) int edgenf_stub(ctx_t *ctx)
{
	struct edgenf_md *md = enf_md();
	struct edgenf_hop *h;

	if (!md)
		return CTX_PASS;
	h = enf_enter(ctx, md, &enf_ports, &enf_stats);
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
	md->cube = EDGENF_MAX_SLOTS;
	md->in_port = 0;
	md->ingress_ifindex = ctx_ifindex(ctx);
	md->tenant = 0;
	md->mark = 0;
	md->hops = 0;
	md->pos = 0;
	__builtin_memcpy(&md->hop, &tr.hop, sizeof(tr.hop));
	return enf_deliver(ctx, md);
}
