/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* Header parsing with the bounds checks the verifier wants, in one place. */
#pragma once

#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/in.h>
#include <linux/tcp.h>
#include <linux/udp.h>
#include "icmp.h"
#include "ctx.h"

#ifndef ETH_P_8021AD
#define ETH_P_8021AD 0x88A8
#endif

struct vlan_hdr {
	__be16 tci;
	__be16 proto;
};

/* Offsets and protocol numbers of one parsed frame. An offset of 0 means the
 * header is absent (a header never starts at byte 0 except Ethernet). */
struct enf_pkt {
	__u16 l3_proto; /* ethertype after VLAN tags, host order */
	__u16 vlan;     /* outer VLAN id, 0 if untagged */
	__u16 l3_off;
	__u16 l4_off;
	__u8 l4_proto; /* IPPROTO_*, 0 if none */
	__u8 vlan_depth;
	__u16 pad;
};

/* Is [p, p+len) inside the frame? */
#define enf_in_bounds(ctx, p, len) ((void *)(p) + (len) <= ctx_data_end(ctx))

static __always_inline void *enf_ptr(ctx_t *ctx, __u32 off)
{
	return ctx_data(ctx) + off;
}

/* IPv4 flags and fragment offset (frag_off, network order). */
#define ENF_IP_MF 0x2000
#define ENF_IP_OFFSET 0x1fff

/* Is the packet's IPv4 header one, and does the frame hold the whole
 * datagram it announces? Version 4, IHL >= 5, total length covering the
 * header and within the frame (len: the frame's bytes from the header on;
 * Ethernet padding may follow). A GSO packet above 64 KiB (BIG TCP) carries
 * total length 0. */
static __always_inline int enf_ip4_sane(ctx_t *ctx, struct iphdr *ip, __u32 len)
{
	__u32 tot = bpf_ntohs(ip->tot_len);

	if (ip->version != 4 || ip->ihl < 5)
		return 0;
#if defined(EDGENF_HOOK_TC)
	if (tot == 0 && ctx->gso_size)
		return 1;
#endif
	return tot >= ip->ihl * 4u && tot <= len;
}

/* Parse Ethernet, up to two VLAN tags, IPv4/IPv6 and the L4 header offset.
 * Returns 0 on success, -1 when the frame cannot be parsed: too short for
 * what it claims, more VLAN tags than two (what they carry is unknown), an
 * IPv4 header that is not one (enf_ip4_sane) or an IPv6 header of another
 * version. Callers that enforce a policy must not let such frames through
 * unjudged: that is how firewalls are bypassed. */
static __always_inline int enf_parse(ctx_t *ctx, struct enf_pkt *pkt)
{
	void *data = ctx_data(ctx);
	struct ethhdr *eth = data;
	__u32 off = sizeof(*eth);
	__u16 proto;

	__builtin_memset(pkt, 0, sizeof(*pkt));
	if (!enf_in_bounds(ctx, eth, sizeof(*eth)))
		return -1;
	proto = bpf_ntohs(eth->h_proto);
#pragma unroll
	for (int i = 0; i < 2; i++) {
		struct vlan_hdr *vh;

		if (proto != ETH_P_8021Q && proto != ETH_P_8021AD)
			break;
		vh = data + off;
		if (!enf_in_bounds(ctx, vh, sizeof(*vh)))
			return -1;
		if (i == 0)
			pkt->vlan = bpf_ntohs(vh->tci) & 0x0fff;
		pkt->vlan_depth++;
		proto = bpf_ntohs(vh->proto);
		off += sizeof(*vh);
	}
	if (proto == ETH_P_8021Q || proto == ETH_P_8021AD)
		return -1;
	pkt->l3_proto = proto;
	pkt->l3_off = off;
	if (proto == ETH_P_IP) {
		struct iphdr *ip = data + off;

		if (!enf_in_bounds(ctx, ip, sizeof(*ip)))
			return -1;
		if (!enf_ip4_sane(ctx, ip, ctx_len(ctx) - off))
			return -1;
		pkt->l4_proto = ip->protocol;
		/* Fragments after the first carry no L4 header. */
		if (ip->frag_off & bpf_htons(ENF_IP_OFFSET))
			return 0;
		pkt->l4_off = off + ip->ihl * 4;
	} else if (proto == ETH_P_IPV6) {
		struct ipv6hdr *ip6 = data + off;

		if (!enf_in_bounds(ctx, ip6, sizeof(*ip6)))
			return -1;
		if (ip6->version != 6)
			return -1;
		/* Extension headers are not walked: L4 is known only when it
		 * follows the fixed header directly. */
		pkt->l4_proto = ip6->nexthdr;
		pkt->l4_off = off + sizeof(*ip6);
	}
	return 0;
}

/* ---- IPv6 extension headers ---------------------------------------------
 * RFC 8200 section 4: hop-by-hop options (first only), routing, fragment and
 * destination options headers, and AH (RFC 4302), precede the upper-layer
 * header. enf_ip6_walk steps over at most ENF_IP6_MAX_EXT of them, within
 * the first ENF_IP6_MAX_HDR bytes of the frame; a chain longer than that,
 * truncated, with hop-by-hop elsewhere than first or with two fragment
 * headers cannot be judged (-1): policy-enforcing callers must not let it
 * through unjudged. */
#define ENF_IP6_MAX_EXT 8
#define ENF_IP6_MAX_HDR 512

#define ENF_NEXTHDR_HOP 0
#define ENF_NEXTHDR_ROUTING 43
#define ENF_NEXTHDR_FRAGMENT 44
#define ENF_NEXTHDR_AUTH 51
#define ENF_NEXTHDR_NONE 59
#define ENF_NEXTHDR_DEST 60

struct enf_ip6_info {
	__u16 l4_off;   /* offset of the upper-layer header; 0: a later fragment */
	__u8 proto;     /* upper-layer protocol (ENF_NEXTHDR_NONE: none) */
	__u8 frag;      /* a fragment (first or later); atomic fragments are not */
	__u16 frag_off; /* fragment offset, in 8-byte units */
	__u16 nexts;    /* extension headers walked */
	__be32 frag_id; /* identification of the fragment header */
};

/* Walk the header chain of the IPv6 header at off. Fills r as it goes (a
 * fragment's identity is known even when the walk then fails). */
static __always_inline int enf_ip6_walk(ctx_t *ctx, __u32 off, struct enf_ip6_info *r)
{
	struct ipv6hdr *ip6 = enf_ptr(ctx, off & 0xff);
	__u32 pos = off + sizeof(struct ipv6hdr);
	__u8 nh;

	__builtin_memset(r, 0, sizeof(*r));
	if (!enf_in_bounds(ctx, ip6, sizeof(*ip6)))
		return -1;
	nh = ip6->nexthdr;
	for (int i = 0; i < ENF_IP6_MAX_EXT; i++) {
		__u8 *h = enf_ptr(ctx, pos & (ENF_IP6_MAX_HDR - 1));

		switch (nh) {
		case ENF_NEXTHDR_HOP:
			if (i)
				return -1; /* RFC 8200 4.3: only right after the IPv6 header */
			/* fallthrough */
		case ENF_NEXTHDR_ROUTING:
		case ENF_NEXTHDR_DEST:
			if (!enf_in_bounds(ctx, h, 2))
				return -1;
			nh = h[0];
			pos += (h[1] + 1) * 8;
			break;
		case ENF_NEXTHDR_AUTH:
			if (!enf_in_bounds(ctx, h, 2))
				return -1;
			nh = h[0];
			pos += (h[1] + 2) * 4;
			break;
		case ENF_NEXTHDR_FRAGMENT: {
			__u16 fo;

			if (!enf_in_bounds(ctx, h, 8) || r->frag_id)
				return -1;
			fo = bpf_ntohs(*(__be16 *)(h + 2));
			nh = h[0];
			pos += 8;
			r->frag_id = *(__be32 *)(h + 4);
			if (!r->frag_id)
				r->frag_id = bpf_htonl(0x80000000); /* id 0 still marks "seen" */
			r->frag_off = fo >> 3;
			r->frag = (fo & 0xfff9) != 0; /* offset or M: not atomic (RFC 6946) */
			if (r->frag_off) {
				/* A later fragment: its bytes continue the first's. */
				r->proto = nh;
				r->nexts = i + 1;
				return 0;
			}
			break;
		}
		default:
			r->proto = nh;
			r->l4_off = pos;
			r->nexts = i;
			return pos < ENF_IP6_MAX_HDR ? 0 : -1;
		}
		if (pos >= ENF_IP6_MAX_HDR)
			return -1;
	}
	return -1; /* more extension headers than we walk */
}

/* The two L4 ports (TCP/UDP) in network order; zero for other protocols. */
static __always_inline int enf_l4_ports(ctx_t *ctx, struct enf_pkt *pkt, __be16 *sport, __be16 *dport)
{
	__be16 *p;

	*sport = 0;
	*dport = 0;
	if (!pkt->l4_off || (pkt->l4_proto != IPPROTO_TCP && pkt->l4_proto != IPPROTO_UDP))
		return 0;
	p = enf_ptr(ctx, pkt->l4_off & 0x1ff);
	if (!enf_in_bounds(ctx, p, 4))
		return -1;
	*sport = p[0];
	*dport = p[1];
	return 0;
}
