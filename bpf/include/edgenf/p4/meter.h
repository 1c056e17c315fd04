/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* The two-rate three-colour marker (RFC 2698, colour-blind) of v1model
 * meters and direct meters. Tokens are kept in units x 1e9 so that refills
 * of less than one unit are not lost; rates are units per second, bursts
 * units. An unconfigured meter marks everything GREEN (as BMv2 does).
 * Colours: 0 GREEN, 1 YELLOW, 2 RED. struct p4_meter is mirrored in
 * internal/p4/tableruntime (the control plane configures cells). */
#pragma once

#include "../ctx.h"

struct p4_meter {
	__u64 cir, cbs, pir, pbs;
	__u64 tc, tp;
	__u64 last;
	__u32 configured;
	struct bpf_spin_lock lock;
};

static __always_inline __u64 p4_tb_fill(__u64 tok, __u64 el, __u64 rate, __u64 burst)
{
	__u64 cap = burst * 1000000000ULL;

	if (tok >= cap)
		return cap;
	if (!rate)
		return tok;
	/* el and rate below 2^32 (4.29 s since the last packet, 4.29 G units/s):
	 * the product cannot overflow, no division needed */
	if (((el | rate) >> 32) == 0) {
		__u64 add = el * rate;

		return add >= cap - tok ? cap : tok + add;
	}
	if (el > (cap - tok) / rate)
		return cap;
	return tok + el * rate;
}

/* The datapath serialises updates of a cell with bit 1 of 'configured'
 * (compare-and-swap), not with bpf_spin_lock: a helper pair that saves and
 * restores interrupts costs about three times as much. The control plane
 * writes cells whole (under 'lock'); a write racing a packet's update can
 * lose that packet's refill or debit, nothing more. After 16 failed tries
 * (the holder was interrupted) the update goes ahead unlocked, with the
 * same bounded effect. */
#define P4_METER_CONFIGURED 1U
#define P4_METER_BUSY 2U

/* p4_meter_cell_aware: RFC 2698's colour-aware mode, pre the colour the
 * packet comes with (0 GREEN, 1 YELLOW, 2 RED): never better than it.
 * p4_meter_cell is colour-blind (pre GREEN). An unconfigured meter leaves
 * the colour as it came. */
static __always_inline __u32 p4_meter_cell_aware(struct p4_meter *m, __u64 units, __u32 pre)
{
	__u64 now, el, b;
	__u32 color = pre, got = 0;

	/* unconfigured: the colour as it came, without the clock or the lock */
	if (!m || !(*(volatile __u32 *)&m->configured & P4_METER_CONFIGURED))
		return pre;
	now = bpf_ktime_get_ns();
	b = units * 1000000000ULL;
#pragma unroll
	for (int k = 0; k < 16; k++) {
		__u32 c = *(volatile __u32 *)&m->configured & ~P4_METER_BUSY;

		if (__sync_val_compare_and_swap(&m->configured, c, c | P4_METER_BUSY) == c) {
			got = 1;
			break;
		}
	}
	if (m->configured & P4_METER_CONFIGURED) {
		el = now > m->last ? now - m->last : 0;
		m->last = now;
		m->tc = p4_tb_fill(m->tc, el, m->cir, m->cbs);
		m->tp = p4_tb_fill(m->tp, el, m->pir, m->pbs);
		if (pre == 2 || m->tp < b) {
			color = 2;
		} else if (pre == 1 || m->tc < b) {
			color = 1;
			m->tp -= b;
		} else {
			m->tp -= b;
			m->tc -= b;
		}
	}
	if (got)
		__sync_fetch_and_and(&m->configured, ~P4_METER_BUSY);
	return color;
}

static __always_inline __u32 p4_meter_cell(struct p4_meter *m, __u64 units)
{
	return p4_meter_cell_aware(m, units, 0);
}

static __always_inline __u32 p4_meter_exec(void *map, __u32 idx, __u64 units)
{
	return p4_meter_cell(bpf_map_lookup_elem(map, &idx), units);
}

static __always_inline __u32 p4_meter_exec_aware(void *map, __u32 idx, __u64 units, __u32 pre)
{
	return p4_meter_cell_aware(bpf_map_lookup_elem(map, &idx), units, pre);
}
