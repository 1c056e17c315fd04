/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* Copies of a frame for NFs that replicate (P4 clone and multicast):
 *   enf_copy(ctx, md, port, snap);   a copy out of port, the frame untouched
 * At TC the kernel clones the skb (bpf_clone_redirect) when the port leads
 * straight to an interface. XDP cannot copy an xdp_buff, and a clone cannot
 * enter another cube (a tail call consumes the frame), so those copies go
 * through the slow path: a perf-ring copy of the first snap bytes (at most
 * EDGENF_PUNT_SNAPLEN) that the daemon transmits out of the port. */
#pragma once

#include "verdict.h"

/* slow: force the slow path (test runs read copies from the punt ring). */
static __always_inline void enf_copy_slow(ctx_t *ctx, struct edgenf_md *md, __u32 port, __u32 snap)
{
	enf_count(enf_port_idx(port), ctx_len(ctx), ENF_TX);
	if (snap > EDGENF_PUNT_SNAPLEN)
		snap = EDGENF_PUNT_SNAPLEN;
	enf_report(ctx, md, md->cube, enf_port_idx(md->in_port), EDGENF_PUNT_TRANSMIT, port, snap);
}

/* Returns 1 if the copy was cloned in the kernel, 0 if it went to the slow
 * path, -1 if the port leads nowhere (no copy). */
static __always_inline int enf_copy(ctx_t *ctx, struct edgenf_md *md, __u32 port, __u32 snap, int slow)
{
	struct edgenf_hop *h;

	if (port >= EDGENF_MAX_PORTS)
		return -1;
	h = bpf_map_lookup_elem(&enf_ports, &port);
	if (!h || h->kind == EDGENF_DST_NONE)
		return -1;
#if defined(EDGENF_HOOK_TC)
	if (!slow && h->kind == EDGENF_DST_IFACE && h->nstack == 0 && snap >= ctx_len(ctx)) {
		enf_count(port, ctx_len(ctx), ENF_TX);
		bpf_clone_redirect(ctx, h->ifindex, 0);
		return 1;
	}
#endif
	enf_copy_slow(ctx, md, port, snap);
	return 0;
}
