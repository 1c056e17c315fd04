/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* In-kernel flooding, for NFs that flood (bridges, P4 multicast):
 *   return enf_flood(ctx, md);   out of every interface port but the ingress
 * Opt-in because the XDP flood set is a devmap per cube, and creating a devmap
 * costs the kernel 10-30 ms: cubes that never flood should not pay it. The
 * daemon keeps the set in line with the cube's interface peers. */
#pragma once

#include "verdict.h"

#if defined(EDGENF_HOOK_XDP)
/* Per cube: the interface-peered ports, keyed by port index. */
struct {
	__uint(type, BPF_MAP_TYPE_DEVMAP_HASH);
	__uint(max_entries, EDGENF_MAX_PORTS);
	__type(key, __u32);
	__type(value, __u32);
} enf_flood_map SEC(".maps");

static __always_inline int enf_flood(ctx_t *ctx, struct edgenf_md *md)
{
	(void)md;
	return bpf_redirect_map(&enf_flood_map, 0, BPF_F_BROADCAST | BPF_F_EXCLUDE_INGRESS);
}
#else
/* TC: clone to every interface port except the one the frame came in by. */
static __always_inline int enf_flood(ctx_t *ctx, struct edgenf_md *md)
{
	__u32 in_if = md->ingress_ifindex;

	for (__u32 p = 0; p < EDGENF_MAX_PORTS; p++) {
		__u32 key = p;
		struct edgenf_hop *h = bpf_map_lookup_elem(&enf_ports, &key);

		if (!h || h->kind != EDGENF_DST_IFACE || h->ifindex == in_if || p == md->in_port)
			continue;
		enf_count(p, ctx_len(ctx), ENF_TX);
		enf_clone_redirect(ctx, md, h->ifindex);
	}
	return CTX_DROP;
}
#endif

