/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* Digests and log_msg: the message (a punt header, then the data the
 * generated code packed after it) goes to the slow path through the punt
 * ring; the packet is untouched. Sent and lost messages are counted per CPU
 * in p4_sp_stats; log_msg is rate-limited in the kernel.
 *
 * The daemon reads these (internal/p4/ir/slowpath.go mirrors them): the map
 * p4_sp_stats and its indexes, the rate. */
#pragma once

#include "../edgenf.h"

/* Indexes of p4_sp_stats (ir.SPDigestSent, ...). */
#define P4_SP_DIGEST_SENT 0
#define P4_SP_DIGEST_LOST 1 /* the punt ring was full, or the cube over its punt budget */
#define P4_SP_LOG_SENT 2
#define P4_SP_LOG_LOST 3 /* ring full or over the rate limit */
#define P4_SP_STATS 4
/* log_msg messages a CPU sends per second (ir.LogRatePerCPU) */
#define P4_LOG_RATE 64

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, P4_SP_STATS);
	__type(key, __u32);
	__type(value, __u64);
} p4_sp_stats SEC(".maps");

struct p4_log_rl {
	__u64 start;
	__u64 n;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct p4_log_rl);
} p4_log_rl SEC(".maps");

static __always_inline void p4_sp_count(__u32 i)
{
	__u64 *c = bpf_map_lookup_elem(&p4_sp_stats, &i);

	if (c)
		*c += 1;
}

/* Send buf (a punt header, then n bytes of data) to the slow path within
 * the cube's punt budget (verdict.h); count it at ctr (sent) or ctr + 1
 * (lost: ring full or over the budget). */
static __always_inline void p4_sp_out(ctx_t *ctx, __u8 *buf, __u32 reason, __u32 arg, __u32 n, __u32 ctr)
{
	struct edgenf_md *md = enf_md();
	struct edgenf_punt_hdr *h = (struct edgenf_punt_hdr *)buf;

	if (!md || !enf_punt_allowed(&md->in_port)) {
		p4_sp_count(ctr + 1);
		return;
	}
	h->magic = EDGENF_PUNT_MAGIC;
	h->cube = md->cube;
	h->in_port = md->in_port;
	h->reason = reason;
	h->arg = arg;
	h->pkt_len = n;
	h->ifindex = md->ingress_ifindex;
	h->hook = EDGENF_HOOK_ID;
	if (bpf_perf_event_output(ctx, &enf_punt_ring, BPF_F_CURRENT_CPU, buf, sizeof(*h) + n))
		p4_sp_count(ctr + 1);
	else
		p4_sp_count(ctr);
}

/* log_msg: at most P4_LOG_RATE messages per second per CPU. */
static __always_inline int p4_log_ok(void)
{
	__u32 zero = 0;
	struct p4_log_rl *r = bpf_map_lookup_elem(&p4_log_rl, &zero);
	__u64 now = bpf_ktime_get_ns();

	if (!r)
		return 0;
	if (now - r->start > 1000000000ULL) {
		r->start = now;
		r->n = 0;
	}
	if (r->n >= P4_LOG_RATE) {
		p4_sp_count(P4_SP_LOG_LOST);
		return 0;
	}
	r->n++;
	return 1;
}
