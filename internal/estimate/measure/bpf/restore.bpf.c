// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* measure_restore: the entry of a measured run. BPF_PROG_TEST_RUN repeats
 * one buffer, so whatever a program writes into the frame (a TTL, MACs, a
 * NAT rewrite, an encapsulation) would be the next run's input. This
 * program puts the frame of the slot being measured back first (its length,
 * then its bytes, from measure_frames) and tail-calls the slot's program in
 * measure_targets: every repetition sees the same frame. measure_cur[0]
 * names the slot: the one map write between runs.
 *
 * The tail call's index is read from a map, so the JIT emits an indirect
 * tail call: changing the targets patches no code.
 *
 * At TC a program may leave state outside the frame's bytes: a VLAN tag
 * pushed goes into the skb (vlan_present), where the next repetition would
 * find it (see clear_tag).
 *
 * measure_null: returns the pass verdict; the reference for the restore's
 * own cost. */
#include <edgenf/ctx.h>

char _license[] SEC("license") = "Dual BSD/GPL";

#define MEASURE_FRAME_MAX 256
#define MEASURE_SLOTS 1024

struct measure_frame {
	__u32 len;
	__u8 b[MEASURE_FRAME_MAX];
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, MEASURE_SLOTS);
	__type(key, __u32);
	__type(value, struct measure_frame);
} measure_frames SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PROG_ARRAY);
	__uint(max_entries, MEASURE_SLOTS);
	__type(key, __u32);
	__type(value, __u32);
} measure_targets SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} measure_cur SEC(".maps");

/* Give the frame back its length: at XDP at the head (a program that grew
 * the head would otherwise eat the headroom one run at a time), at TC at the
 * tail (always possible there; the bytes are all rewritten anyway). */
static __always_inline int restore_len(ctx_t *ctx, __u32 cur, __u32 len)
{
#if defined(EDGENF_HOOK_XDP)
	return bpf_xdp_adjust_head(ctx, (int)cur - (int)len);
#else
	if (cur < len)
		return bpf_skb_change_head(ctx, len - cur, 0);
	return bpf_skb_adjust_room(ctx, -(int)(cur - len), BPF_ADJ_ROOM_MAC, 0);
#endif
}

/* At TC, take off a VLAN tag the last repetition pushed into the skb's
 * metadata (bpf_skb_vlan_push puts it there, not in the frame). Left
 * there, the next push would first move it into the frame and make the
 * skb's protocol 802.1Q, and the length restore (bpf_skb_adjust_room
 * takes IPv4 and IPv6 only) would then fail: every later repetition ended
 * in the restore, unmeasured. A test run's skb starts without one, as a
 * frame from a veth or a NIC without VLAN offload does. */
static __always_inline int clear_tag(ctx_t *ctx)
{
#if defined(EDGENF_HOOK_TC)
	if (ctx->vlan_present)
		return bpf_skb_vlan_pop(ctx);
#endif
	(void)ctx;
	return 0;
}

static __always_inline int store_frame(ctx_t *ctx, struct measure_frame *f, __u32 len)
{
#if defined(EDGENF_HOOK_XDP)
	return bpf_xdp_store_bytes(ctx, 0, f->b, len);
#else
	return bpf_skb_store_bytes(ctx, 0, f->b, len, 0);
#endif
}

SEC(EDGENF_SEC) int measure_restore(ctx_t *ctx)
{
	__u32 zero = 0, slot, len, cur;
	__u32 *sp = bpf_map_lookup_elem(&measure_cur, &zero);
	struct measure_frame *f;

	if (!sp)
		return CTX_DROP;
	slot = *sp;
	f = bpf_map_lookup_elem(&measure_frames, &slot);
	if (!f)
		return CTX_DROP;
	len = f->len;
	if (len < 14 || len > MEASURE_FRAME_MAX)
		return CTX_DROP;
	if (clear_tag(ctx))
		return CTX_DROP;
	cur = ctx_len(ctx);
	if (cur != len && restore_len(ctx, cur, len))
		return CTX_DROP;
	if (store_frame(ctx, f, len))
		return CTX_DROP;
	bpf_tail_call(ctx, &measure_targets, slot);
	return CTX_DROP;
}

SEC(EDGENF_SEC) int measure_null(ctx_t *ctx)
{
	(void)ctx;
	return CTX_PASS;
}
