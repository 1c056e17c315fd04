/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* Internet checksum helpers usable from XDP and TC alike (RFC 1071/1624). */
#pragma once

#include <linux/types.h>

static __always_inline __u16 enf_csum_fold(__u32 csum)
{
	csum = (csum & 0xffff) + (csum >> 16);
	csum = (csum & 0xffff) + (csum >> 16);
	return (__u16)csum;
}

/* Incremental update (RFC 1624, eqn. 3) of a checksum field when a 16-bit word
 * of the covered data changes from old to new. All values in network order. */
static __always_inline void enf_csum_replace2(__sum16 *sum, __be16 old, __be16 new)
{
	__u32 c = (__u16)~*sum;

	c += (__u16)~old;
	c += new;
	*sum = ~enf_csum_fold(c);
}

/* The same for a 32-bit word (an IPv4 address, say). */
static __always_inline void enf_csum_replace4(__sum16 *sum, __be32 old, __be32 new)
{
	enf_csum_replace2(sum, (__be16)(old >> 16), (__be16)(new >> 16));
	enf_csum_replace2(sum, (__be16)(old & 0xffff), (__be16)(new & 0xffff));
}

/* UDP: a zero checksum means "none" and must stay zero (IPv4). */
static __always_inline void enf_udp_csum_replace4(__sum16 *sum, __be32 old, __be32 new)
{
	if (!*sum)
		return;
	enf_csum_replace4(sum, old, new);
	if (!*sum)
		*sum = 0xffff;
}

/* Full checksum over an IPv4 header of ihl 5 (the common case). */
static __always_inline __sum16 enf_ipv4_csum(void *iph)
{
	__u16 *w = iph;
	__u32 c = 0;

#pragma unroll
	for (int i = 0; i < 10; i++)
		c += w[i];
	return ~enf_csum_fold(c);
}
