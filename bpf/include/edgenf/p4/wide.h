/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* Arithmetic on P4 values wider than 64 bits (bit<128> IPv6 addresses):
 * n-byte big-endian arrays, n a whole number of bytes. Each writes its
 * result to d, a scratch array distinct from the operands; n is a
 * compile-time constant, so the loops unroll. */
#pragma once

#include "bytes.h"

static __always_inline void p4_wand(__u8 *d, const __u8 *a, const __u8 *b, int n)
{
#pragma unroll
	for (int i = 0; i < n; i++)
		d[i] = a[i] & b[i];
}

static __always_inline void p4_wor(__u8 *d, const __u8 *a, const __u8 *b, int n)
{
#pragma unroll
	for (int i = 0; i < n; i++)
		d[i] = a[i] | b[i];
}

static __always_inline void p4_wxor(__u8 *d, const __u8 *a, const __u8 *b, int n)
{
#pragma unroll
	for (int i = 0; i < n; i++)
		d[i] = a[i] ^ b[i];
}

static __always_inline void p4_wnot(__u8 *d, const __u8 *a, int n)
{
#pragma unroll
	for (int i = 0; i < n; i++)
		d[i] = ~a[i];
}

/* d = a + b (mod 2^8n): the carry runs from the last (least significant)
 * byte. */
static __always_inline void p4_wadd(__u8 *d, const __u8 *a, const __u8 *b, int n)
{
	__u32 c = 0;
#pragma unroll
	for (int i = n - 1; i >= 0; i--) {
		c += (__u32)a[i] + b[i];
		d[i] = (__u8)c;
		c >>= 8;
	}
}

/* d = a - b (mod 2^8n). */
static __always_inline void p4_wsub(__u8 *d, const __u8 *a, const __u8 *b, int n)
{
	__s32 c = 0;
#pragma unroll
	for (int i = n - 1; i >= 0; i--) {
		c += (__s32)a[i] - b[i];
		d[i] = (__u8)c;
		c = c < 0 ? -1 : 0;
	}
}

/* d = -a (mod 2^8n). */
static __always_inline void p4_wneg(__u8 *d, const __u8 *a, int n)
{
	__s32 c = 0;
#pragma unroll
	for (int i = n - 1; i >= 0; i--) {
		c -= a[i];
		d[i] = (__u8)c;
		c = c < 0 ? -1 : 0;
	}
}

/* Compares a and b as unsigned numbers: <0, 0 or >0. */
static __always_inline int p4_wcmp(const __u8 *a, const __u8 *b, int n)
{
	int r = 0;
#pragma unroll
	for (int i = 0; i < n; i++)
		if (!r && a[i] != b[i])
			r = a[i] < b[i] ? -1 : 1;
	return r;
}

/* d = a << sh (bits shifted past the width are lost; sh >= 8n gives 0). */
static __always_inline void p4_wshl(__u8 *d, const __u8 *a, __u64 sh, int n)
{
	__u32 bs = sh >= (__u64)8 * n ? n : (__u32)(sh >> 3), r = sh & 7;
#pragma unroll
	for (int i = 0; i < n; i++) {
		__u32 j = i + bs;
		__u8 hi = 0, lo = 0;

		if (j < (__u32)n)
			hi = a[j];
		if (j + 1 < (__u32)n)
			lo = a[j + 1];
		d[i] = r ? (__u8)((hi << r) | (lo >> (8 - r))) : hi;
	}
}

/* d = a >> sh (logical). */
static __always_inline void p4_wshr(__u8 *d, const __u8 *a, __u64 sh, int n)
{
	__u32 bs = sh >= (__u64)8 * n ? n : (__u32)(sh >> 3), r = sh & 7;
#pragma unroll
	for (int i = 0; i < n; i++) {
		__s32 j = i - (__s32)bs;
		__u8 lo = 0, hi = 0;

		if (j >= 0 && j < n)
			lo = a[j];
		if (j - 1 >= 0 && j - 1 < n)
			hi = a[j - 1];
		d[i] = r ? (__u8)((lo >> r) | (hi << (8 - r))) : lo;
	}
}

/* d = v widened to n bytes: the bytes above v's 8 are fill (0, or 0xff to
 * sign-extend). */
static __always_inline void p4_wfrom64(__u8 *d, __u64 v, __u8 fill, int n)
{
#pragma unroll
	for (int i = 0; i < n; i++)
		d[i] = i < n - 8 ? fill : (__u8)(v >> (8 * (n - 1 - i)));
}
