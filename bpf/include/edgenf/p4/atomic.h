/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* The locks of @atomic blocks that read and write registers: a block holds
 * lock (register index % P4_ATOMIC_LOCKS) while it runs (backend/atomic.go). */
#pragma once

#include "../ctx.h"

#define P4_ATOMIC_LOCKS 1024

struct p4_atomic_lock {
	struct bpf_spin_lock l;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, P4_ATOMIC_LOCKS);
	__type(key, __u32);
	__type(value, struct p4_atomic_lock);
} p4_atomic_locks SEC(".maps");
