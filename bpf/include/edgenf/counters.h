/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* An NF's own counters, per CPU so that the fast path never contends; the
 * daemon sums the CPUs (internal/nf/counters).
 *
 *   enum my_counter { MY_C_HITS, MY_C_MISSES, MY_C_MAX };
 *   ENF_COUNTERS(my_counters, MY_C_MAX);            event counts
 *   enf_counter_inc(&my_counters, MY_C_HITS);
 *
 *   ENF_TRAFFIC_COUNTERS(my_rules, N);              packets and bytes
 *   enf_traffic_add(&my_rules, rule, ctx_len(ctx));
 *
 * The Go side names the indexes in the order of the enum (counters.Named). */
#pragma once

#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

/* n event counters, indexed 0..n-1. */
#define ENF_COUNTERS(name, n)                          \
	struct {                                       \
		__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY); \
		__uint(max_entries, n);                \
		__type(key, __u32);                    \
		__type(value, __u64);                  \
	} name SEC(".maps")

static __always_inline void enf_counter_add(void *counters, __u32 idx, __u64 n)
{
	__u64 *v = bpf_map_lookup_elem(counters, &idx);

	if (v)
		*v += n;
}

static __always_inline void enf_counter_inc(void *counters, __u32 idx)
{
	enf_counter_add(counters, idx, 1);
}

/* What a traffic counter counts; mirrored by counters.Traffic. */
struct enf_traffic {
	__u64 packets;
	__u64 bytes;
};

/* n traffic counters, indexed 0..n-1. */
#define ENF_TRAFFIC_COUNTERS(name, n)                  \
	struct {                                       \
		__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY); \
		__uint(max_entries, n);                \
		__type(key, __u32);                    \
		__type(value, struct enf_traffic);     \
	} name SEC(".maps")

static __always_inline void enf_traffic_add(void *counters, __u32 idx, __u32 len)
{
	struct enf_traffic *t = bpf_map_lookup_elem(counters, &idx);

	if (t) {
		t->packets++;
		t->bytes += len;
	}
}
