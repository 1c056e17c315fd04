/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* The runtime of P4 programs compiled by edgenf (internal/p4/backend): the
 * one header the generated C includes first, before anything else.
 *
 *   p4.h       constants, function attributes, what every program uses
 *   bytes.h    big-endian reads and writes of fields, byte copies
 *   wide.h     arithmetic on values wider than 64 bits
 *   packet.h   packet reads and writes (direct access at XDP)
 *   csum.h     checksums and hashes of field lists and of the payload
 *   crc.h      table-driven CRC-32 and CRC-16 (hash externs)
 *   table.h    table lookups, value sets, counters, idle timeouts
 *   meter.h    RFC 2698 meters (meters, direct_meters)
 *   digest.h   digests and log_msg (the punt ring, rate-limited logs)
 *   atomic.h   the locks of @atomic blocks
 *   replicate.h  clone, multicast, resubmit and recirculate: requests,
 *              multicast groups, clone sessions
 *   replicate_run.h  the replicating pipeline: a template over the program
 *              (needs P4_PROGRAM, see there; bpf/check/p4_replicate.c is
 *              its instance for `make bpf`)
 *
 * The generator includes the optional ones only for programs that use them.
 */
#pragma once

/* P4 parsers see VLAN tags in the frame at TC too (ctx_inline_vlan); this
 * must come before the framework's headers. */
#define EDGENF_INLINE_VLAN
/* Hops through the panel (verdict.h): a generated pipeline reaches its one
 * send in as many verifier states as it has paths, and the direct hop's
 * per-port jumps multiply them by 16, past the verifier's limit for
 * programs like varbit.p4 at TC. */
#define EDGENF_PANEL_HOPS
#include "../edgenf.h"

#include "bytes.h"
#include "packet.h"
#include "csum.h"
#include "wide.h"
#include "table.h"

/* Stages and tables are global BPF functions, verified once each. */
#define P4_FN __attribute__((noinline))
/* Pipeline stages inlined into the pipeline (backend.stageAttr). */
#define P4_STAGE static __always_inline
/* Make clang keep passing ctx to a global function that might not need it:
 * the verifier insists on a real context pointer. */
#define P4_KEEP(x) asm volatile("" : : "r"(x))

/* x becomes opaque to clang: code using it stays after the bounds check
 * the verifier has just seen on the same register (run-time stack indices) */
#define P4_OPAQUE(x) asm volatile("" : "+r"(x))
/* a header stack index the verifier can bound: i if i < n, else 0 (the
 * check stays even where clang knows an earlier one: the verifier does not) */
static __always_inline __u32 p4_idx(__u32 i, __u32 n)
{
	P4_OPAQUE(i);
	return i < n ? i : 0;
}
#define P4_IDX(i, n) p4_idx((__u32)(i), (__u32)(n))
/* x (w bits) sign-extended to 64 bits */
#define P4_SEXT(x, w) ((__s64)((__u64)(x) << (64 - (w))) >> (64 - (w)))

/* v1model's egress_spec that drops */
#define P4_DROP_PORT 511
/* The CPU port every program has; the program's own (cpu_port, 255 by
 * default) is P4_CPU_PORT_CFG, defined by the generated C. */
#define P4_CPU_PORT 510
/* skb->priority for standard_metadata.priority p (1..7): HTB class
 * ed00:8+(7-p), priority band 7-p of the egress tree (0 most urgent) */
#define P4_PRIO_CLASS(p) (0xed000008u + (7u - ((__u32)(p) & 7)))
/* Punt reasons of P4 cubes (ir.PuntPacketIn, ir.PuntDigest, ir.PuntLog). */
#define P4_PUNT_PACKET_IN 1
#define P4_PUNT_DIGEST 2
#define P4_PUNT_LOG 3

/* Saturating addition of a and b in a field whose largest value is m. */
static __always_inline __u64 p4_sat_add(__u64 a, __u64 b, __u64 m)
{
	__u64 r = a + b;
	if (r > m || r < a)
		r = m;
	return r;
}

/* Saturating a + b (sub: a - b) of int<w> values, sign-extended (P4_SEXT);
 * the result is w bits, two's complement. */
static __always_inline __u64 p4_sat_sadd(__s64 a, __s64 b, int sub, int w)
{
	__s64 max = (__s64)(~0ULL >> (65 - w)), min = -max - 1, r;
	int over = sub ? __builtin_sub_overflow(a, b, &r) : __builtin_add_overflow(a, b, &r);

	if (over)
		r = (sub ? b > 0 : b < 0) ? min : max;
	else if (r > max)
		r = max;
	else if (r < min)
		r = min;
	return (__u64)r & (~0ULL >> (64 - w));
}
