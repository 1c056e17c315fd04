/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* The framework's maps. Global ones (panel, scratch, punt) are loaded from
 * their pins and shared by every program of a hook; per-cube ones exist once
 * per loaded cube. */
#pragma once

#include "ctx.h"
#include "types.h"

/* The patch panel: one slot per cube. XDP and TC programs cannot tail-call
 * each other, so each hook has its own panel; the daemon swaps it in. */
struct {
	__uint(type, BPF_MAP_TYPE_PROG_ARRAY);
	__uint(max_entries, EDGENF_MAX_SLOTS);
	__type(key, __u32);
	__type(value, __u32);
} enf_panel SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct edgenf_md);
} enf_scratch SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERF_EVENT_ARRAY);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, sizeof(__u32));
} enf_punt_ring SEC(".maps");

/* Interfaces whose TCX ingress runs the copy machine (key: ifindex). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, __u32);
} enf_copy_devs SEC(".maps");

/* Per cube: where each port leads. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, EDGENF_MAX_PORTS);
	__type(key, __u32);
	__type(value, struct edgenf_hop);
} enf_ports SEC(".maps");

/* Direct hops (verdict.h: enf_send). A tail call whose index the verifier
 * knows is a direct jump the kernel patches when the entry changes; one
 * through a computed index, like a panel slot, is an indirect jump, which
 * retpolines make cost ~15 ns. So a cube keeps, per port below
 * EDGENF_DIRECT_PORTS, the program its peer cube runs, and jumps to it with
 * a constant index. enf_peer_ids holds that program's id; the hop is taken
 * directly only while the panel slot still runs it (enf_owner, shared: the
 * id of the program in each slot), otherwise through the panel as before:
 * a stale entry costs speed, never a wrong delivery. */
#define EDGENF_DIRECT_PORTS 16

struct {
	__uint(type, BPF_MAP_TYPE_PROG_ARRAY);
	__uint(max_entries, EDGENF_DIRECT_PORTS);
	__type(key, __u32);
	__type(value, __u32);
} enf_peers SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, EDGENF_DIRECT_PORTS);
	__type(key, __u32);
	__type(value, __u32);
} enf_peer_ids SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, EDGENF_MAX_SLOTS);
	__type(key, __u32);
	__type(value, __u32);
} enf_owner SEC(".maps");

/* Per cube: counters per port, plus one cube-wide entry. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, EDGENF_MAX_PORTS + 1);
	__type(key, __u32);
	__type(value, struct edgenf_stats);
} enf_stats SEC(".maps");

/* Per cube: its punt budget (verdict.h: enf_punt_allowed). One entry all
 * CPUs share, not one per CPU: the budget is a rate of the one reader's
 * time, however the cube's traffic spreads over CPUs, and per-CPU buckets
 * would let a cube punt the rate times the CPUs its traffic reaches. The
 * entry is written only by punts that pass, so at most at the budget's
 * rate: punts over it read a line that stays in every CPU's cache. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct edgenf_punt_budget);
} enf_punt_budget SEC(".maps");

/* Key 0 of the one-entry maps, in .rodata: a lookup with it needs no
 * stack slot. */
static const __u32 enf_zero = 0;

/* The metadata of the packet being processed (this CPU's scratch slot). */
static __always_inline struct edgenf_md *enf_md(void)
{
	__u32 zero = 0;
	return bpf_map_lookup_elem(&enf_scratch, &zero);
}
