/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* Packet reads and writes of the P4 parser and deparser:
 *   p4_load(ctx, off, buf, n)    n (constant) bytes at off into buf: direct
 *                                packet access at XDP, the helper at TC
 *   p4_load_h(ctx, off, buf, n)  the same through the helper (variable n,
 *                                bytes outside TC's linear part)
 *   p4_store(ctx, off, buf, n)   n bytes of buf into the packet at off
 * Each returns 0, or non-zero when the packet is too short. */
#pragma once

#include "../ctx.h"
#include "bytes.h"

#if defined(EDGENF_HOOK_XDP)
#define p4_load_h(ctx, off, buf, len) bpf_xdp_load_bytes(ctx, off, buf, len)
#define p4_store(ctx, off, buf, len) bpf_xdp_store_bytes(ctx, off, buf, len)

/* Offsets are bounded for the verifier: headers start in the first 1 KiB. */
static __always_inline int p4_load(ctx_t *ctx, __u32 off, __u8 *buf, __u32 n)
{
	__u8 *p;

	if (off > 0x3ff)
		return -1;
	p = (__u8 *)ctx_data(ctx) + off;
	/* Opaque to clang: otherwise it may rebuild p from data + off for a
	 * copy loop it did not fully unroll, a pointer the verifier has not
	 * seen checked against data_end ("R5 offset is outside of the packet"). */
	asm volatile("" : "+r"(p));
	if ((void *)(p + n) > ctx_data_end(ctx))
		return -1;
	p4_memcpy(buf, p, n);
	return 0;
}
#else
#define p4_load(ctx, off, buf, len) bpf_skb_load_bytes(ctx, off, buf, len)
#define p4_load_h(ctx, off, buf, len) bpf_skb_load_bytes(ctx, off, buf, len)
#define p4_store(ctx, off, buf, len) bpf_skb_store_bytes(ctx, off, buf, len, 0)
#endif

/* Test runs of frames shorter than an Ethernet header (stf.Runner): the
 * kernel runs them padded, and the runner passes the frame's real length
 * in the run's context, at XDP as 4 bytes of metadata before the frame, at
 * TC in cb[0]. The runner sets p4_runt_test when it loads the program; in
 * a cube it stays 0 and the verifier drops every branch on it. */
volatile const __u32 p4_runt_test = 0;

/* The real length of a padded runt in a test run; ~0 otherwise. */
static __always_inline __u32 p4_runt_len(ctx_t *ctx)
{
#if defined(EDGENF_HOOK_XDP)
	__u32 *m = (void *)(long)ctx->data_meta;

	if ((void *)(m + 1) <= ctx_data(ctx) && *m)
		return *m;
#else
	if (ctx->cb[0])
		return ctx->cb[0];
#endif
	return ~0U;
}

/* The packet's length as the parser sees it: the frame's, or a test run's
 * real length of a padded runt. */
static __always_inline __u32 p4_plen(ctx_t *ctx)
{
	__u32 len = ctx_len(ctx);

	if (p4_runt_test && p4_runt_len(ctx) < len)
		len = p4_runt_len(ctx);
	return len;
}
