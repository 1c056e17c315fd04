/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* Big-endian reads and writes of P4 fields, and byte copies, for any memory
 * (the stack, maps, the packet). */
#pragma once

#include "../ctx.h"

/* Big-endian reads and writes of n (constant, at most 8) bytes, byte by
 * byte (any memory, the stack too). Unrolled by hand: clang leaves a
 * "#pragma unroll" loop over an inlined constant n rolled up. */
static __always_inline __u64 p4_be(const __u8 *p, int n)
{
	__u64 x = 0;

	if (n > 0) x = p[0];
	if (n > 1) x = (x << 8) | p[1];
	if (n > 2) x = (x << 8) | p[2];
	if (n > 3) x = (x << 8) | p[3];
	if (n > 4) x = (x << 8) | p[4];
	if (n > 5) x = (x << 8) | p[5];
	if (n > 6) x = (x << 8) | p[6];
	if (n > 7) x = (x << 8) | p[7];
	return x;
}

static __always_inline void p4_wbe(__u8 *p, __u64 x, int n)
{
	if (n > 7) p[n - 8] = (__u8)(x >> 56);
	if (n > 6) p[n - 7] = (__u8)(x >> 48);
	if (n > 5) p[n - 6] = (__u8)(x >> 40);
	if (n > 4) p[n - 5] = (__u8)(x >> 32);
	if (n > 3) p[n - 4] = (__u8)(x >> 24);
	if (n > 2) p[n - 3] = (__u8)(x >> 16);
	if (n > 1) p[n - 2] = (__u8)(x >> 8);
	if (n > 0) p[n - 1] = (__u8)x;
}

/* Big-endian loads and stores of n (constant, 1..8) bytes in packet or map
 * memory with the widest accesses (misaligned accesses are allowed there,
 * not on the stack). */
static __always_inline __u64 p4_ldbe(const __u8 *p, int n)
{
	switch (n) {
	case 1:
		return p[0];
	case 2:
		return bpf_ntohs(*(const __u16 *)p);
	case 3:
		return ((__u64)bpf_ntohs(*(const __u16 *)p) << 8) | p[2];
	case 4:
		return bpf_ntohl(*(const __u32 *)p);
	case 5:
		return ((__u64)bpf_ntohl(*(const __u32 *)p) << 8) | p[4];
	case 6:
		return ((__u64)bpf_ntohl(*(const __u32 *)p) << 16) | bpf_ntohs(*(const __u16 *)(p + 4));
	case 7:
		return ((__u64)bpf_ntohl(*(const __u32 *)p) << 24) | ((__u64)bpf_ntohs(*(const __u16 *)(p + 4)) << 8) | p[6];
	default:
		return bpf_be64_to_cpu(*(const __u64 *)p);
	}
}

static __always_inline void p4_stbe(__u8 *p, __u64 v, int n)
{
	switch (n) {
	case 1:
		p[0] = (__u8)v;
		break;
	case 2:
		*(__u16 *)p = bpf_htons((__u16)v);
		break;
	case 3:
		*(__u16 *)p = bpf_htons((__u16)(v >> 8));
		p[2] = (__u8)v;
		break;
	case 4:
		*(__u32 *)p = bpf_htonl((__u32)v);
		break;
	case 5:
		*(__u32 *)p = bpf_htonl((__u32)(v >> 8));
		p[4] = (__u8)v;
		break;
	case 6:
		*(__u32 *)p = bpf_htonl((__u32)(v >> 16));
		*(__u16 *)(p + 4) = bpf_htons((__u16)v);
		break;
	case 7:
		*(__u32 *)p = bpf_htonl((__u32)(v >> 24));
		*(__u16 *)(p + 4) = bpf_htons((__u16)(v >> 8));
		p[6] = (__u8)v;
		break;
	default:
		*(__u64 *)p = bpf_cpu_to_be64(v);
	}
}

static __always_inline int p4_memeq(const __u8 *a, const __u8 *b, int n)
{
	__u8 d = 0;
#pragma unroll
	for (int i = 0; i < n; i++)
		d |= a[i] ^ b[i];
	return d == 0;
}

/* Whether the first len of n bytes of a and b are equal (varbit values). */
static __always_inline int p4_vbeq(const __u8 *a, const __u8 *b, __u32 len, int n)
{
	__u8 d = 0;
#pragma unroll
	for (int i = 0; i < n; i++)
		d |= (__u32)i < len ? a[i] ^ b[i] : 0;
	return d == 0;
}

static __always_inline void p4_memcpy(__u8 *d, const __u8 *s, int n)
{
#pragma unroll
	for (int i = 0; i < n; i++)
		d[i] = s[i];
}
