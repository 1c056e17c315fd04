/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* IPv6 neighbour discovery (RFC 4861) in the fast path: answering a
 * neighbour solicitation with an advertisement in place. */
#pragma once

#include "ctx.h"
#include "parse.h"
#include "csum.h"

#define ENF_ND_RS 133
#define ENF_ND_RA 134
#define ENF_ND_NS 135
#define ENF_ND_NA 136

/* A neighbour solicitation with a source link-layer address option (as
 * hosts send it to resolve an address), or the advertisement it becomes:
 * the same size. */
struct enf_nd_msg {
	__u8 type;
	__u8 code;
	__sum16 csum;
	__be32 flags; /* NA: router, solicited, override */
	__be32 target[4];
	__u8 opt_type; /* 1: source, 2: target link-layer address */
	__u8 opt_len;  /* 1 (8 octets) */
	__u8 mac[ETH_ALEN];
} __attribute__((packed));

#define ENF_NA_ROUTER 0x80000000
#define ENF_NA_SOLICITED 0x40000000
#define ENF_NA_OVERRIDE 0x20000000

/* The ICMPv6 checksum of msg (len bytes) between the addresses of ip6. */
static __always_inline __sum16 enf_icmp6_csum(struct ipv6hdr *ip6, void *msg, __u32 len)
{
	__be32 pseudo[2] = {bpf_htonl(len), bpf_htonl(58)};
	__u32 sum;

	sum = bpf_csum_diff(0, 0, (__be32 *)&ip6->saddr, 32, 0);
	sum = bpf_csum_diff(0, 0, pseudo, sizeof(pseudo), sum);
	sum = bpf_csum_diff(0, 0, msg, len, sum);
	return ~enf_csum_fold(sum);
}

/* Is this an answerable solicitation: hop limit 255, code 0, one source
 * link-layer option, a source that is not :: (duplicate address detection
 * is not answered)? */
static __always_inline int enf_nd_solicitation(struct ipv6hdr *ip6, struct enf_nd_msg *ns)
{
	return ns->type == ENF_ND_NS && !ns->code && ip6->hop_limit == 255 && ns->opt_type == 1 && ns->opt_len == 1 &&
	       bpf_ntohs(ip6->payload_len) == sizeof(*ns) &&
	       (ip6->saddr.in6_u.u6_addr32[0] | ip6->saddr.in6_u.u6_addr32[1] | ip6->saddr.in6_u.u6_addr32[2] |
		ip6->saddr.in6_u.u6_addr32[3]);
}

/* Turn the solicitation into the advertisement of its target with mac,
 * addressed back to the solicitor. */
static __always_inline void enf_nd_advertise(struct ethhdr *eth, struct ipv6hdr *ip6, struct enf_nd_msg *ns,
					     const __u8 *mac, __u32 flags)
{
	__builtin_memcpy(eth->h_dest, ns->mac, ETH_ALEN);
	__builtin_memcpy(eth->h_source, mac, ETH_ALEN);
	ip6->daddr = ip6->saddr;
	__builtin_memcpy(&ip6->saddr, ns->target, 16);
	ns->type = ENF_ND_NA;
	ns->flags = bpf_htonl(ENF_NA_SOLICITED | flags);
	ns->opt_type = 2;
	__builtin_memcpy(ns->mac, mac, ETH_ALEN);
	ns->csum = 0;
	ns->csum = enf_icmp6_csum(ip6, ns, sizeof(*ns));
}
