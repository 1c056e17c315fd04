/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* What the generated tables use: the result of an apply, the state of a
 * ternary/range scan, value set members, counter cells and the last-hit
 * time of entries with idle timeouts. Layouts of map values are mirrored
 * in internal/p4/p4info and internal/p4/tableruntime. */
#pragma once

#include "../ctx.h"

/* Result of a table application. */
struct p4_tres {
	__u32 hit;
	__u32 action;
};

/* Scan (ternary/range) lookup state, passed to bpf_loop. */
struct p4_scan {
	__u32 idx;
	__u32 prio;
};

/* A member of a parser value_set (the control plane writes them). */
struct p4_vs_member {
	__u64 value;
	__u64 mask;
	__u32 valid;
	__u32 pad;
};

/* A counter cell (per CPU), direct or indirect. */
struct p4_ctr {
	__u64 packets;
	__u64 bytes;
};

/* The last hit of an entry of a table with support_timeout, for the
 * daemon's idle timeouts. Written at most every 100 ms: a busy entry's cache
 * line is not dirtied by every packet, and timeouts are whole seconds. */
static __always_inline void p4_touch(__u64 *last)
{
	__u64 now = bpf_ktime_get_ns();

	if (now - *last > 100000000ull)
		*last = now;
}
