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

/* The payload's ones' complement sum, for *_with_payload checksums, is
 * summed in chunks: each is copied from the packet by one helper call (the
 * bytes may lie outside TC's linear part or in an XDP fragment) into
 * scratch space in map memory, and summed by bpf_csum_diff, the kernel's
 * csum_partial. A chunk is at most 512 bytes, bpf_csum_diff's limit; 128
 * chunks cover 64 KiB, the largest IP packet. */
#define P4_PAYLOAD_CHUNK 512
#define P4_PAYLOAD_CHUNKS 128

/* The big-endian 16-bit ones' complement sum of a csum_partial result
 * summed in host order: folded to 16 bits, then byte-swapped on a
 * little-endian host (RFC 1071 2.B: the sum does not depend on byte order
 * but for that swap). */
static __always_inline __u32 p4_csum_be16(__s64 c)
{
	__u32 x = (__u32)c;

	x = (x & 0xffff) + (x >> 16);
	x = (x & 0xffff) + (x >> 16);
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	x = ((x & 0xff) << 8) | (x >> 8);
#endif
	return x;
}

/* Ones' complement sum of the payload: the bytes from *offp (after the
 * parsed headers) to the packet's end, as big-endian 16-bit words, an odd
 * last byte padded with a zero byte. buf is P4_PAYLOAD_CHUNK bytes of
 * scratch space in map memory. */
static __always_inline __u64 p4_payload_sum(ctx_t *ctx, const __u32 *offp, __u8 *buf)
{
	__u32 len = p4_plen(ctx), off = *offp;
	__u64 sum = 0;

#pragma clang loop unroll(disable)
	for (int i = 0; i < P4_PAYLOAD_CHUNKS && off < len; i++) {
		__u32 n = len - off;

		if (n >= P4_PAYLOAD_CHUNK) {
			if (p4_load_h(ctx, off, buf, P4_PAYLOAD_CHUNK))
				break;
			sum += p4_csum_be16(bpf_csum_diff(0, 0, (__be32 *)buf, P4_PAYLOAD_CHUNK, 0));
			off += P4_PAYLOAD_CHUNK;
			continue;
		}
		/* the tail, 1..511 bytes, summed as whole 32-bit words: the
		 * word holding its end is zeroed first, so the bytes after it
		 * add nothing */
		n = ((n - 1) & (P4_PAYLOAD_CHUNK - 1)) + 1;
		*(__u32 *)(buf + (n & (P4_PAYLOAD_CHUNK - 4))) = 0;
		if (!p4_load_h(ctx, off, buf, n))
			sum += p4_csum_be16(bpf_csum_diff(0, 0, (__be32 *)buf, (n + 3) & ~3U, 0));
		break;
	}
	return sum;
}
