/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* ARP (RFC 826) for IPv4 over Ethernet in the fast path: answering a
 * request for one of an NF's addresses in place, as ndp.h does for IPv6. */
#pragma once

#include "ctx.h"
#include "icmp.h" /* ARPOP_* */

/* An ARP packet for IPv4 over Ethernet. */
struct enf_arp {
	__be16 htype;
	__be16 ptype;
	__u8 hlen;
	__u8 plen;
	__be16 op;
	__u8 sha[ETH_ALEN];
	__u8 spa[4];
	__u8 tha[ETH_ALEN];
	__u8 tpa[4];
} __attribute__((packed));

/* Is a an ARP packet about IPv4 addresses over Ethernet (the only kind the
 * fast path answers or learns from)? */
static __always_inline int enf_arp_ipv4(const struct enf_arp *a)
{
	return a->ptype == bpf_htons(ETH_P_IP) && a->hlen == ETH_ALEN && a->plen == 4;
}

/* The target protocol address of a (network order). */
static __always_inline __be32 enf_arp_target(const struct enf_arp *a)
{
	__be32 tpa;

	__builtin_memcpy(&tpa, a->tpa, 4);
	return tpa;
}

/* Turn the request a (in the frame after eth) into the reply that its
 * target address is at mac, addressed back to the requester. */
static __always_inline void enf_arp_reply(struct ethhdr *eth, struct enf_arp *a, const __u8 *mac)
{
	__be32 tpa = enf_arp_target(a);

	__builtin_memcpy(eth->h_dest, a->sha, ETH_ALEN);
	__builtin_memcpy(eth->h_source, mac, ETH_ALEN);
	a->op = bpf_htons(ARPOP_REPLY);
	__builtin_memcpy(a->tha, a->sha, ETH_ALEN);
	__builtin_memcpy(a->tpa, a->spa, 4);
	__builtin_memcpy(a->sha, mac, ETH_ALEN);
	__builtin_memcpy(a->spa, &tpa, 4);
}
