// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* down_transparent: down.bpf.c for a transparent cube. A transparent cube
 * that cannot be restored (a firewall, say) must not become a hole in the
 * hops it sits on: every frame is dropped, counted by direction. */
#include <edgenf/edgenf.h>

static __always_inline int down(ctx_t *ctx, struct edgenf_md *md, __u32 dir)
{
	(void)ctx;
	(void)md;
	(void)dir;
	return ENF_VERDICT_DROP;
}

EDGENF_TRANSPARENT(down)
