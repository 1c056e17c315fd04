/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* Checksums of P4 field lists (csum16 over packed fields, xor16) and of the
 * payload, for the verify_checksum and update_checksum externs. */
#pragma once

#include "../ctx.h"
#include "packet.h"

/* Ones' complement sum of n bytes, as 16-bit big-endian words. A bounded
 * loop, not unrolled: unrolled over a list with options (60 bytes of IPv4 or
 * TCP options, several lists per program) clang keeps the loaded bytes live
 * across the straight-line code and spills past the 512-byte BPF stack. */
static __always_inline __u32 p4_sum16(const __u8 *b, int n)
{
	__u32 c = 0;
#pragma clang loop unroll(disable)
	for (int i = 0; i + 1 < n; i += 2)
		c += ((__u32)b[i] << 8) | b[i + 1];
	if (n & 1)
		c += (__u32)b[n - 1] << 8;
	return c;
}

static __always_inline __u16 p4_fold16(__u64 c)
{
	c = (c & 0xffff) + (c >> 16);
	c = (c & 0xffff) + (c >> 16);
	c = (c & 0xffff) + (c >> 16);
	return (__u16)~c;
}

static __always_inline __u16 p4_csum16(const __u8 *b, int n)
{
	return p4_fold16(p4_sum16(b, n));
}

static __always_inline __u16 p4_xor16(const __u8 *b, int n)
{
	__u16 x = 0;
#pragma unroll
	for (int i = 0; i + 1 < n; i += 2)
		x ^= ((__u16)b[i] << 8) | b[i + 1];
	return x;
}

/* Ones' complement sum of the payload (the bytes from *offp, after the
 * parsed headers), up to 1500 bytes, for *_with_payload checksums; buf is
 * 2 bytes of scratch space in map memory. */
static __always_inline __u64 p4_payload_sum(ctx_t *ctx, const __u32 *offp, __u8 *buf)
{
	__u32 len = ctx_len(ctx), off = *offp;
	__u64 sum = 0;

	for (int i = 0; i < 750; i++) {
		if (off + 1 < len) {
			if (p4_load_h(ctx, off, buf, 2))
				break;
			sum += ((__u32)buf[0] << 8) | buf[1];
			off += 2;
		} else {
			if (off < len && !p4_load_h(ctx, off, buf, 1))
				sum += (__u32)buf[0] << 8;
			break;
		}
	}
	return sum;
}
