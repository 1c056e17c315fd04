/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* One NF source, two hooks: build with -DEDGENF_HOOK_XDP or -DEDGENF_HOOK_TC
 * and write the NF against ctx_t and the ctx_* helpers below. */
#pragma once

#include <linux/bpf.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#if defined(EDGENF_HOOK_XDP)
typedef struct xdp_md ctx_t;
#define EDGENF_SEC "xdp"
#define EDGENF_HOOK_ID 0
#define CTX_DROP XDP_DROP
#define CTX_PASS XDP_PASS
#define CTX_TX XDP_TX
#elif defined(EDGENF_HOOK_TC)
typedef struct __sk_buff ctx_t;
#define EDGENF_SEC "tc"
#define EDGENF_HOOK_ID 1
#define CTX_DROP TC_ACT_SHOT
#define CTX_PASS TC_ACT_OK
#else
#error "define EDGENF_HOOK_XDP or EDGENF_HOOK_TC"
#endif

/* Branch hint for a per-packet test whose rare side belongs out of the
 * common path's line (verdict.h: enf_out, for frames with a priority). */
#define enf_unlikely(x) __builtin_expect(!!(x), 0)

static __always_inline void *ctx_data(ctx_t *ctx)
{
	return (void *)(long)ctx->data;
}

static __always_inline void *ctx_data_end(ctx_t *ctx)
{
	return (void *)(long)ctx->data_end;
}

static __always_inline __u32 ctx_len(ctx_t *ctx)
{
#if defined(EDGENF_HOOK_XDP)
	void *data = ctx_data(ctx), *end = ctx_data_end(ctx);

	/* Opaque to the optimiser: otherwise clang keeps only the low 32 bits
	 * of the packet pointers and spills them as such, which the verifier
	 * rejects ("invalid size of register spill"). */
	asm volatile("" : "+r"(data), "+r"(end));
	return (__u32)(end - data);
#else
	return ctx->len;
#endif
}

static __always_inline __u32 ctx_ifindex(ctx_t *ctx)
{
#if defined(EDGENF_HOOK_XDP)
	return ctx->ingress_ifindex;
#else
	return ctx->ingress_ifindex ? ctx->ingress_ifindex : ctx->ifindex;
#endif
}

/* Make the first len bytes directly accessible (TC only needs this for
 * non-linear skbs; XDP frames are always linear here). */
static __always_inline int ctx_pull(ctx_t *ctx, __u32 len)
{
#if defined(EDGENF_HOOK_TC)
	/* Through 64-bit pointers: 32-bit arithmetic on ctx->data is rejected
	 * by the verifier. */
	if (ctx_data(ctx) + len > ctx_data_end(ctx))
		return bpf_skb_pull_data(ctx, len);
#endif
	return 0;
}

#if defined(EDGENF_HOOK_TC)
#define EDGENF_SLIDE_MAX 9216
/* Shrink an skb by delta bytes at its head for any protocol: slide the
 * bytes after the first delta down and cut the tail. bpf_skb_adjust_room
 * only takes frames the kernel sees as IPv4/IPv6; this is the fallback for
 * the others (a P4Runtime packet_out header in front of the Ethernet
 * header, for one). The first bytes are the caller's to rewrite anyway. */
static __attribute__((noinline)) int ctx_skb_slide_down(struct __sk_buff *ctx, __u32 delta)
{
	__u8 buf[64];
	__u32 len = ctx->len;
	__u32 off, rest;

	if (delta == 0 || delta >= len || len > EDGENF_SLIDE_MAX)
		return -1;
	for (off = 0; off < EDGENF_SLIDE_MAX; off += 64) {
		if (off + delta + 64 > len)
			break;
		if (bpf_skb_load_bytes(ctx, off + delta, buf, 64) ||
		    bpf_skb_store_bytes(ctx, off, buf, 64, 0))
			return -1;
	}
	if (off < EDGENF_SLIDE_MAX && off + delta < len) {
		rest = (len - delta - off) & 63;
		if (rest &&
		    (bpf_skb_load_bytes(ctx, off + delta, buf, rest) ||
		     bpf_skb_store_bytes(ctx, off, buf, rest, 0)))
			return -1;
	}
	return bpf_skb_change_tail(ctx, len - delta, 0);
}
#endif

/* Grow (delta < 0) or shrink (delta > 0) the frame at its head. Invalidates
 * every packet pointer. */
static __always_inline int ctx_adjust_head(ctx_t *ctx, int delta)
{
#if defined(EDGENF_HOOK_XDP)
	return bpf_xdp_adjust_head(ctx, delta);
#else
	/* skb: room is added or removed right after the MAC header so the
	 * Ethernet header has to be rewritten by the caller anyway. */
	if (delta < 0)
		return bpf_skb_change_head(ctx, (__u32)(-delta), 0);
	if (bpf_skb_adjust_room(ctx, -delta, BPF_ADJ_ROOM_MAC, 0) == 0)
		return 0;
	return ctx_skb_slide_down(ctx, (__u32)delta);
#endif
}

/* Grow or shrink the tail to a new total length. */
static __always_inline int ctx_change_tail(ctx_t *ctx, __u32 new_len)
{
#if defined(EDGENF_HOOK_XDP)
	return bpf_xdp_adjust_tail(ctx, (int)new_len - (int)ctx_len(ctx));
#else
	return bpf_skb_change_tail(ctx, new_len, 0);
#endif
}

static __always_inline long ctx_redirect(ctx_t *ctx, __u32 ifindex)
{
	(void)ctx;
	return bpf_redirect(ifindex, 0);
}

/* Copy bytes from any offset of the frame (no direct-access bounds needed). */
static __always_inline long ctx_load_bytes(ctx_t *ctx, __u32 off, void *to, __u32 len)
{
#if defined(EDGENF_HOOK_XDP)
	return bpf_xdp_load_bytes(ctx, off, to, len);
#else
	return bpf_skb_load_bytes(ctx, off, to, len);
#endif
}

/* At TC the kernel has already moved an outer VLAN tag out of the frame into
 * skb metadata; XDP sees it in the frame. NFs that parse VLAN tags
 * themselves (P4 programs) define EDGENF_INLINE_VLAN before including
 * edgenf.h so their frames look the same at both hooks: the tag is put back
 * into the frame when the cube is entered. */
static __always_inline int ctx_inline_vlan(ctx_t *ctx)
{
#if defined(EDGENF_HOOK_TC)
	if (ctx->vlan_present) {
		__be16 tag[2] = {(__be16)ctx->vlan_proto, bpf_htons((__u16)ctx->vlan_tci)};
		__u8 macs[12];

		/* Take the tag out of the metadata, make 4 bytes of room at the
		 * head, slide the MAC addresses down and write the tag after
		 * them (any protocol, unlike adjust_room). */
		if (bpf_skb_vlan_pop(ctx) || bpf_skb_change_head(ctx, 4, 0))
			return -1;
		if (bpf_skb_load_bytes(ctx, 4, macs, sizeof(macs)) ||
		    bpf_skb_store_bytes(ctx, 0, macs, sizeof(macs), 0) ||
		    bpf_skb_store_bytes(ctx, 12, tag, sizeof(tag), 0))
			return -1;
	}
#endif
	(void)ctx;
	return 0;
}
