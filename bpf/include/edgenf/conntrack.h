/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* Connection tracking library shared by the NAT and the firewall (and any NF
 * that needs to know connections): IPv4 tuple extraction (TCP, UDP, ICMP echo
 * and ICMP errors), a TCP state machine, per-state timeouts, packet states
 * (new / established / related / invalid), and NAT rewrite helpers that keep
 * every checksum right at both hooks.
 *
 * The library keeps no maps of its own: each NF stores struct ct_conn in its
 * own table (a per-cube connection table), keyed however it needs. Layouts
 * are mirrored in internal/nf/conntrack (Go). */
#pragma once

#include "ctx.h"
#include "parse.h"
#include "csum.h"

/* Connection states; index of struct ct_timeouts. */
enum ct_state {
	CT_NONE = 0,
	CT_TCP_SYN_SENT = 1,
	CT_TCP_SYN_RECV = 2,
	CT_TCP_ESTABLISHED = 3,
	CT_TCP_FIN_WAIT = 4, /* one side sent FIN */
	CT_TCP_TIME_WAIT = 5, /* both sides sent FIN */
	CT_TCP_CLOSE = 6,     /* RST seen */
	CT_UDP_UNREPLIED = 7,
	CT_UDP_REPLIED = 8,
	CT_ICMP = 9,
	CT_OTHER = 10,
	CT_NSTATES = 11,
};

/* What a packet is to the connection table (firewall match values, as bits:
 * rules match a set of them). */
enum ct_pkt_state {
	CT_PKT_NEW = 0,
	CT_PKT_ESTABLISHED = 1,
	CT_PKT_RELATED = 2,
	CT_PKT_INVALID = 3,
	CT_PKT_NSTATES = 4,
};

/* Idle timeout of each state, in seconds (0: the state's default). */
struct ct_timeouts {
	__u32 sec[CT_NSTATES];
	__u32 pad;
};

static const __u32 ct_default_timeout[CT_NSTATES] = {
	[CT_NONE] = 30,
	[CT_TCP_SYN_SENT] = 120,
	[CT_TCP_SYN_RECV] = 60,
	[CT_TCP_ESTABLISHED] = 7440,
	[CT_TCP_FIN_WAIT] = 120,
	[CT_TCP_TIME_WAIT] = 120,
	[CT_TCP_CLOSE] = 10,
	[CT_UDP_UNREPLIED] = 30,
	[CT_UDP_REPLIED] = 180,
	[CT_ICMP] = 30,
	[CT_OTHER] = 600,
};

/* A connection's identity as seen on the wire. For ICMP echo, sport holds the
 * identifier and dport is 0 (requests and replies then mirror each other). */
struct ct_tuple {
	__be32 saddr;
	__be32 daddr;
	__be16 sport;
	__be16 dport;
	__u8 proto;
	__u8 dir; /* free for the NF (NAT: direction of the key) */
	__u16 pad;
};

#define CT_F_REPLIED 1   /* a packet of the reply direction was seen */
#define CT_F_FIN_ORIG 2  /* FIN from the originator */
#define CT_F_FIN_REPLY 4 /* FIN from the responder */

/* The tracked state of one connection. */
struct ct_conn {
	__u64 last_seen; /* bpf_ktime_get_ns() of the last packet */
	__u8 state;      /* enum ct_state */
	__u8 flags;      /* CT_F_* */
	__u16 pad;
	__u32 pad2;
};

/* One parsed packet. */
struct ct_pkt {
	struct ct_tuple t; /* as on the wire */
	__u16 l3_off;
	__u16 l4_off;      /* 0: no L4 header (non-first fragment) */
	__u8 tcp_flags;    /* FIN 0x01 SYN 0x02 RST 0x04 PSH 0x08 ACK 0x10 URG 0x20 ECE 0x40 CWR 0x80 */
	__u8 icmp_type;
	__u8 icmp_err;     /* ICMP error: inner holds the offending packet's tuple, reversed */
	__u8 frag;         /* a fragment (first or later) */
	__be16 ip_id;      /* IPv4 identification: the fragments of one datagram share it */
	__u16 pad;
	struct ct_tuple inner;
};

#define CT_TCP_FIN 0x01
#define CT_TCP_SYN 0x02
#define CT_TCP_RST 0x04
#define CT_TCP_ACK 0x10

#define CT_ICMP_ECHOREPLY 0
#define CT_ICMP_DEST_UNREACH 3
#define CT_ICMP_ECHO 8
#define CT_ICMP_TIME_EXCEEDED 11
#define CT_ICMP_PARAMETERPROB 12

#ifndef IPPROTO_ICMPV6
#define IPPROTO_ICMPV6 58
#endif
#define CT_ICMP6_DEST_UNREACH 1
#define CT_ICMP6_PKT_TOOBIG 2
#define CT_ICMP6_TIME_EXCEEDED 3
#define CT_ICMP6_PARAMPROB 4
#define CT_ICMP6_ECHO 128
#define CT_ICMP6_ECHOREPLY 129
#define CT_ICMP6_ND_FIRST 133 /* router solicitation .. redirect (RFC 4861) */
#define CT_ICMP6_ND_LAST 137

/* The mask keeps offsets provably small for the verifier (VLAN tags + IPv4
 * options stay below 128 bytes). */
#define CT_OFF(x) ((x) & 0xff)

/* What ct_extract found. */
#define CT_X_IPV4 0   /* an IPv4 packet, in p */
#define CT_X_OTHER 1  /* a well-formed frame of another protocol (ARP, IPv6, ...) */
#define CT_X_BAD (-1) /* a frame that cannot be parsed (enf_parse), or an IPv4
		       * packet whose L4 header is cut short; with p->frag set,
		       * a fragment that hides or rewrites the L4 header of its
		       * datagram (a tiny first fragment, or a TCP fragment at
		       * offset 8 that overlaps the flags: RFC 1858) */

/* Bytes of L4 header the first fragment must hold for the packet to be
 * judged on its ports (and, TCP, its flags). */
static __always_inline __u32 ct_l4_min(__u8 proto)
{
	switch (proto) {
	case IPPROTO_TCP:
		return sizeof(struct tcphdr);
	case IPPROTO_UDP:
		return sizeof(struct udphdr);
	case IPPROTO_ICMP:
	case IPPROTO_ICMPV6:
		return 8;
	}
	return 0;
}

/* The IPv4 packet enf_parse found, into p. */
static __always_inline int ct_extract4(ctx_t *ctx, const struct enf_pkt *pkt, struct ct_pkt *p)
{
	struct iphdr *ip;
	__u32 tot, l4len;

	ip = enf_ptr(ctx, CT_OFF(pkt->l3_off));
	if (!enf_in_bounds(ctx, ip, sizeof(*ip)))
		return CT_X_BAD;
	p->l3_off = pkt->l3_off;
	p->l4_off = pkt->l4_off;
	p->t.saddr = ip->saddr;
	p->t.daddr = ip->daddr;
	p->t.proto = ip->protocol;
	p->ip_id = ip->id;
	p->frag = (ip->frag_off & bpf_htons(ENF_IP_MF | ENF_IP_OFFSET)) != 0;
	if (!pkt->l4_off) {
		/* A later fragment. At offset 8 a TCP fragment can only be
		 * there to rewrite the flags the first one was judged on. */
		if (ip->protocol == IPPROTO_TCP && (ip->frag_off & bpf_htons(ENF_IP_OFFSET)) == bpf_htons(1))
			return CT_X_BAD;
		return CT_X_IPV4;
	}
	/* The L4 header must lie inside the datagram, not merely inside the
	 * frame (Ethernet pads short frames). */
	tot = bpf_ntohs(ip->tot_len);
	l4len = tot - ip->ihl * 4;
	if (tot && l4len < ct_l4_min(ip->protocol))
		return CT_X_BAD;
	if (ip->protocol == IPPROTO_TCP) {
		struct tcphdr *th = enf_ptr(ctx, CT_OFF(pkt->l4_off));

		if (!enf_in_bounds(ctx, th, sizeof(*th)) || th->doff < 5 || (tot && th->doff * 4u > l4len))
			return CT_X_BAD;
		p->t.sport = th->source;
		p->t.dport = th->dest;
		p->tcp_flags = ((__u8 *)th)[13];
	} else if (ip->protocol == IPPROTO_UDP) {
		struct udphdr *uh = enf_ptr(ctx, CT_OFF(pkt->l4_off));

		if (!enf_in_bounds(ctx, uh, sizeof(*uh)))
			return CT_X_BAD;
		p->t.sport = uh->source;
		p->t.dport = uh->dest;
	} else if (ip->protocol == IPPROTO_ICMP) {
		struct icmphdr *ih = enf_ptr(ctx, CT_OFF(pkt->l4_off));

		if (!enf_in_bounds(ctx, ih, sizeof(*ih)))
			return CT_X_BAD;
		p->icmp_type = ih->type;
		if (ih->type == CT_ICMP_ECHO || ih->type == CT_ICMP_ECHOREPLY) {
			p->t.sport = ih->un.echo.id;
		} else if (ih->type == CT_ICMP_DEST_UNREACH || ih->type == CT_ICMP_TIME_EXCEEDED ||
			   ih->type == CT_ICMP_PARAMETERPROB) {
			/* The offending packet's IPv4 header (no options) and
			 * its first 8 bytes follow. */
			struct iphdr *in = (void *)(ih + 1);
			__be16 *ports = (void *)(in + 1);

			if (!enf_in_bounds(ctx, in, sizeof(*in) + 8) || in->ihl != 5)
				return CT_X_IPV4;
			p->icmp_err = 1;
			/* Reversed: the tuple of a packet that would answer it,
			 * i.e. one travelling like this error. */
			p->inner.saddr = in->daddr;
			p->inner.daddr = in->saddr;
			p->inner.proto = in->protocol;
			if (in->protocol == IPPROTO_TCP || in->protocol == IPPROTO_UDP) {
				p->inner.sport = ports[1];
				p->inner.dport = ports[0];
			} else if (in->protocol == IPPROTO_ICMP) {
				p->inner.sport = ports[2]; /* echo id */
			}
		}
	}
	return 0;
}

/* Headers in the linear part of a TC packet, where they can be read
 * directly. */
static __always_inline void ct_pull(ctx_t *ctx, __u32 n)
{
#if defined(EDGENF_HOOK_TC)
	ctx_pull(ctx, ctx->len < n ? ctx->len : n);
#endif
}

/* Parse an IPv4 packet into p. Returns CT_X_IPV4, CT_X_OTHER or CT_X_BAD. */
static __always_inline int ct_extract(ctx_t *ctx, struct ct_pkt *p)
{
	struct enf_pkt pkt;

	__builtin_memset(p, 0, sizeof(*p));
	ct_pull(ctx, 128);
	if (enf_parse(ctx, &pkt) < 0)
		return CT_X_BAD;
	if (pkt.l3_proto != ETH_P_IP)
		return CT_X_OTHER;
	return ct_extract4(ctx, &pkt, p);
}

/* The reverse of a tuple: what the other side sends. */
static __always_inline void ct_reverse(const struct ct_tuple *t, struct ct_tuple *r)
{
	r->saddr = t->daddr;
	r->daddr = t->saddr;
	r->proto = t->proto;
	r->dir = t->dir;
	r->pad = 0;
	if (t->proto == IPPROTO_ICMP) {
		r->sport = t->sport;
		r->dport = 0;
	} else {
		r->sport = t->dport;
		r->dport = t->sport;
	}
}

/* Can a packet open a connection? TCP: a SYN without ACK, RST or FIN; ICMP
 * and ICMPv6: an echo request; UDP and other protocols: always. has_l4: the
 * packet carries its L4 header (not a later fragment). */
static __always_inline int ct_can_start_l4(__u8 proto, int has_l4, __u8 tcp_flags, __u8 icmp_type)
{
	if (!has_l4 && proto != IPPROTO_TCP && proto != IPPROTO_UDP && proto != IPPROTO_ICMP && proto != IPPROTO_ICMPV6)
		return 1;
	switch (proto) {
	case IPPROTO_TCP:
		return has_l4 && (tcp_flags & (CT_TCP_SYN | CT_TCP_ACK | CT_TCP_RST | CT_TCP_FIN)) == CT_TCP_SYN;
	case IPPROTO_UDP:
		return has_l4;
	case IPPROTO_ICMP:
		return has_l4 && icmp_type == CT_ICMP_ECHO;
	case IPPROTO_ICMPV6:
		return has_l4 && icmp_type == CT_ICMP6_ECHO;
	}
	return 1;
}

static __always_inline int ct_can_start(const struct ct_pkt *p)
{
	return ct_can_start_l4(p->t.proto, p->l4_off != 0, p->tcp_flags, p->icmp_type);
}

/* Is the flag combination impossible (SYN+FIN, SYN+RST, none at all)? */
static __always_inline int ct_tcp_bad_flags(__u8 fl)
{
	if ((fl & (CT_TCP_SYN | CT_TCP_FIN)) == (CT_TCP_SYN | CT_TCP_FIN))
		return 1;
	if ((fl & (CT_TCP_SYN | CT_TCP_RST)) == (CT_TCP_SYN | CT_TCP_RST))
		return 1;
	return (fl & 0x3f) == 0;
}

/* The state a new connection starts in. */
static __always_inline __u8 ct_initial_state(__u8 proto)
{
	switch (proto) {
	case IPPROTO_TCP:
		return CT_TCP_SYN_SENT;
	case IPPROTO_UDP:
		return CT_UDP_UNREPLIED;
	case IPPROTO_ICMP:
	case IPPROTO_ICMPV6:
		return CT_ICMP;
	}
	return CT_OTHER;
}

static __always_inline __u64 ct_timeout_ns(const struct ct_timeouts *to, __u8 state)
{
	__u32 s = 0;

	if (state < CT_NSTATES) {
		if (to)
			s = to->sec[state];
		if (!s)
			s = ct_default_timeout[state];
	}
	if (!s)
		s = 30;
	return (__u64)s * 1000000000ull;
}

static __always_inline int ct_expired(const struct ct_conn *c, const struct ct_timeouts *to, __u64 now)
{
	return now > c->last_seen && now - c->last_seen > ct_timeout_ns(to, c->state);
}

/* Start a connection of protocol proto with its first packet. */
static __always_inline void ct_init_proto(struct ct_conn *c, __u8 proto, __u64 now)
{
	__builtin_memset(c, 0, sizeof(*c));
	c->last_seen = now;
	c->state = ct_initial_state(proto);
}

static __always_inline void ct_init(struct ct_conn *c, const struct ct_pkt *p, __u64 now)
{
	ct_init_proto(c, p->t.proto, now);
}

/* Advance connection c with a packet of direction reply (0: from the
 * originator). Returns the packet state: CT_PKT_ESTABLISHED, CT_PKT_NEW (an
 * originator packet before any reply) or CT_PKT_INVALID (c unchanged). */
static __always_inline int ct_update_l4(struct ct_conn *c, __u8 proto, int has_l4, __u8 fl, int reply, __u64 now)
{
	__u8 st = c->state;

	if (proto == IPPROTO_TCP && has_l4) {
		if (ct_tcp_bad_flags(fl))
			return CT_PKT_INVALID;
		if (fl & CT_TCP_RST) {
			st = CT_TCP_CLOSE;
		} else {
			switch (st) {
			case CT_TCP_SYN_SENT:
				if (reply && (fl & CT_TCP_SYN))
					st = CT_TCP_SYN_RECV; /* SYN-ACK, or simultaneous open */
				else if (reply || !(fl & CT_TCP_SYN) || (fl & CT_TCP_ACK))
					return CT_PKT_INVALID;
				break;
			case CT_TCP_SYN_RECV:
				if (!reply && (fl & CT_TCP_ACK) && !(fl & CT_TCP_SYN))
					st = CT_TCP_ESTABLISHED;
				if (fl & CT_TCP_FIN)
					st = CT_TCP_FIN_WAIT;
				break;
			case CT_TCP_TIME_WAIT:
			case CT_TCP_CLOSE:
				/* Port reuse: a fresh SYN reopens. */
				if (!reply && (fl & (CT_TCP_SYN | CT_TCP_ACK)) == CT_TCP_SYN) {
					c->flags = 0;
					c->state = CT_TCP_SYN_SENT;
					c->last_seen = now;
					return CT_PKT_NEW;
				}
				break;
			default:
				if ((fl & CT_TCP_SYN) && !(fl & CT_TCP_ACK))
					return CT_PKT_INVALID;
				break;
			}
			if (fl & CT_TCP_FIN) {
				c->flags |= reply ? CT_F_FIN_REPLY : CT_F_FIN_ORIG;
				if ((c->flags & (CT_F_FIN_ORIG | CT_F_FIN_REPLY)) == (CT_F_FIN_ORIG | CT_F_FIN_REPLY))
					st = CT_TCP_TIME_WAIT;
				else if (st == CT_TCP_ESTABLISHED || st == CT_TCP_SYN_RECV)
					st = CT_TCP_FIN_WAIT;
			}
		}
	} else if (proto == IPPROTO_UDP) {
		if (reply)
			st = CT_UDP_REPLIED;
	}
	if (reply)
		c->flags |= CT_F_REPLIED;
	c->state = st;
	c->last_seen = now;
	return (c->flags & CT_F_REPLIED) ? CT_PKT_ESTABLISHED : CT_PKT_NEW;
}

static __always_inline int ct_update(struct ct_conn *c, const struct ct_pkt *p, int reply, __u64 now)
{
	return ct_update_l4(c, p->t.proto, p->l4_off != 0, p->tcp_flags, reply, now);
}

/* ---- Both families -------------------------------------------------------
 * NFs that judge IPv4 and IPv6 alike (the firewall) track connections by
 * struct ct_tuple46: IPv4 addresses sit in the first word, the rest zero,
 * and the family tells the two apart. */

#define CT_X_IPV6 2 /* an IPv6 packet, in p (ct_extract46) */

struct ct_tuple46 {
	__be32 saddr[4];
	__be32 daddr[4];
	__be16 sport; /* ICMP and ICMPv6 echo: the identifier */
	__be16 dport;
	__u8 proto;
	__u8 family; /* 4 or 6 */
	__u16 pad;
};

struct ct_pkt46 {
	struct ct_tuple46 t;
	__u16 l3_off;
	__u16 l4_off; /* 0: no L4 header (a later fragment, or none at all) */
	__u8 tcp_flags;
	__u8 icmp_type; /* ICMP or ICMPv6 */
	__u8 icmp_err;  /* an ICMP(v6) error: inner holds the offending packet's tuple, reversed */
	__u8 frag;      /* a fragment (first or later) */
	__be32 frag_id; /* IPv4 identification, or the IPv6 fragment header's */
	__u8 hop_limit; /* IPv4 TTL or IPv6 hop limit */
	__u8 pad[3];
	struct ct_tuple46 inner;
};

static __always_inline void ct_tuple46_from4(const struct ct_tuple *t, struct ct_tuple46 *o)
{
	__builtin_memset(o, 0, sizeof(*o));
	o->saddr[0] = t->saddr;
	o->daddr[0] = t->daddr;
	o->sport = t->sport;
	o->dport = t->dport;
	o->proto = t->proto;
	o->family = 4;
}

/* The L4 part of an IPv6 packet whose header chain enf_ip6_walk found. end:
 * where the datagram ends in the frame (0: unknown, a GSO packet). */
static __always_inline int ct_extract6_l4(ctx_t *ctx, struct ct_pkt46 *p, __u32 end)
{
	__u32 off = p->l4_off & (ENF_IP6_MAX_HDR - 1);
	__u8 proto = p->t.proto;

	if (end && (end < off || end - off < ct_l4_min(proto)))
		return CT_X_BAD;
	if (proto == IPPROTO_TCP) {
		struct tcphdr *th = enf_ptr(ctx, off);

		if (!enf_in_bounds(ctx, th, sizeof(*th)) || th->doff < 5 || (end && th->doff * 4u > end - off))
			return CT_X_BAD;
		p->t.sport = th->source;
		p->t.dport = th->dest;
		p->tcp_flags = ((__u8 *)th)[13];
	} else if (proto == IPPROTO_UDP) {
		struct udphdr *uh = enf_ptr(ctx, off);

		if (!enf_in_bounds(ctx, uh, sizeof(*uh)))
			return CT_X_BAD;
		p->t.sport = uh->source;
		p->t.dport = uh->dest;
	} else if (proto == IPPROTO_ICMPV6) {
		struct icmphdr *ih = enf_ptr(ctx, off);
		struct ipv6hdr *in;
		__be16 *ports;

		if (!enf_in_bounds(ctx, ih, sizeof(*ih)))
			return CT_X_BAD;
		p->icmp_type = ih->type;
		if (ih->type == CT_ICMP6_ECHO || ih->type == CT_ICMP6_ECHOREPLY) {
			p->t.sport = ih->un.echo.id;
			return CT_X_IPV6;
		}
		if (ih->type < CT_ICMP6_DEST_UNREACH || ih->type > CT_ICMP6_PARAMPROB)
			return CT_X_IPV6;
		/* An error: as much of the offending packet as fits follows
		 * (RFC 4443 2.4); its fixed header and the first 8 bytes of
		 * an upper-layer header right behind it identify the flow. */
		in = (void *)(ih + 1);
		ports = (void *)(in + 1);
		if (!enf_in_bounds(ctx, in, sizeof(*in) + 8) || in->version != 6)
			return CT_X_IPV6;
		p->icmp_err = 1;
		__builtin_memcpy(p->inner.saddr, &in->daddr, 16);
		__builtin_memcpy(p->inner.daddr, &in->saddr, 16);
		p->inner.proto = in->nexthdr;
		p->inner.family = 6;
		if (in->nexthdr == IPPROTO_TCP || in->nexthdr == IPPROTO_UDP) {
			p->inner.sport = ports[1];
			p->inner.dport = ports[0];
		} else if (in->nexthdr == IPPROTO_ICMPV6) {
			p->inner.sport = ports[2]; /* echo id */
		}
	}
	return CT_X_IPV6;
}

static __always_inline int ct_extract6(ctx_t *ctx, const struct enf_pkt *pkt, struct ct_pkt46 *p)
{
	struct ipv6hdr *ip6 = enf_ptr(ctx, CT_OFF(pkt->l3_off));
	struct enf_ip6_info x;
	__u32 plen, end = 0;
	int ok;

	if (!enf_in_bounds(ctx, ip6, sizeof(*ip6)))
		return CT_X_BAD;
	__builtin_memcpy(p->t.saddr, &ip6->saddr, 16);
	__builtin_memcpy(p->t.daddr, &ip6->daddr, 16);
	p->t.family = 6;
	p->hop_limit = ip6->hop_limit;
	p->l3_off = pkt->l3_off;
	plen = bpf_ntohs(ip6->payload_len);
	if (plen) {
		end = pkt->l3_off + sizeof(*ip6) + plen;
		if (end > ctx_len(ctx))
			return CT_X_BAD; /* claims more than the frame holds */
	}
#if defined(EDGENF_HOOK_TC)
	else if (!ctx->gso_size) {
		return CT_X_BAD; /* a jumbogram (RFC 2675) outside GSO */
	}
#else
	else {
		return CT_X_BAD;
	}
#endif
	ok = enf_ip6_walk(ctx, pkt->l3_off, &x);
	p->frag = x.frag;
	p->frag_id = x.frag_id;
	p->t.proto = x.proto;
	if (ok < 0)
		return CT_X_BAD;
	if (!x.l4_off) {
		/* A later fragment. At offset 8 a TCP fragment can only be
		 * there to rewrite the flags the first one was judged on. */
		if (x.proto == IPPROTO_TCP && x.frag_off == 1)
			return CT_X_BAD;
		return CT_X_IPV6;
	}
	p->l4_off = x.l4_off;
	if (end && end < x.l4_off)
		return CT_X_BAD;
	return ct_extract6_l4(ctx, p, end);
}

/* Parse an IPv4 or IPv6 packet into p. Returns CT_X_IPV4, CT_X_IPV6,
 * CT_X_OTHER or CT_X_BAD (with p->frag set: a fragment that hides or
 * rewrites its datagram's L4 header, or whose header chain is cut). */
static __always_inline int ct_extract46(ctx_t *ctx, struct ct_pkt46 *p)
{
	struct enf_pkt pkt;
	struct ct_pkt p4;
	int r;

	__builtin_memset(p, 0, sizeof(*p));
	__builtin_memset(&p4, 0, sizeof(p4));
	ct_pull(ctx, 128);
	if (enf_parse(ctx, &pkt) < 0)
		return CT_X_BAD;
	if (pkt.l3_proto == ETH_P_IPV6) {
		/* Extension headers may reach further. */
		ct_pull(ctx, ENF_IP6_MAX_HDR);
		return ct_extract6(ctx, &pkt, p);
	}
	if (pkt.l3_proto != ETH_P_IP)
		return CT_X_OTHER;
	r = ct_extract4(ctx, &pkt, &p4);
	ct_tuple46_from4(&p4.t, &p->t);
	p->l3_off = p4.l3_off;
	p->l4_off = p4.l4_off;
	p->tcp_flags = p4.tcp_flags;
	p->icmp_type = p4.icmp_type;
	p->icmp_err = p4.icmp_err;
	p->frag = p4.frag;
	p->frag_id = p4.ip_id;
	if (p4.icmp_err)
		ct_tuple46_from4(&p4.inner, &p->inner);
	return r;
}

/* The reverse of a tuple: what the other side sends. */
static __always_inline void ct_reverse46(const struct ct_tuple46 *t, struct ct_tuple46 *r)
{
	__builtin_memcpy(r->saddr, t->daddr, 16);
	__builtin_memcpy(r->daddr, t->saddr, 16);
	r->proto = t->proto;
	r->family = t->family;
	r->pad = 0;
	if (t->proto == IPPROTO_ICMP || t->proto == IPPROTO_ICMPV6) {
		r->sport = t->sport;
		r->dport = 0;
	} else {
		r->sport = t->dport;
		r->dport = t->sport;
	}
}

static __always_inline int ct_can_start46(const struct ct_pkt46 *p)
{
	return ct_can_start_l4(p->t.proto, p->l4_off != 0, p->tcp_flags, p->icmp_type);
}

static __always_inline int ct_update46(struct ct_conn *c, const struct ct_pkt46 *p, int reply, __u64 now)
{
	return ct_update_l4(c, p->t.proto, p->l4_off != 0, p->tcp_flags, reply, now);
}

/* ---- NAT rewriting -------------------------------------------------------
 * Change the source or destination address and port (ICMP echo: the
 * identifier) of the parsed packet p, keeping the IPv4 and L4 checksums right.
 * TC uses the kernel's checksum helpers (they understand CHECKSUM_PARTIAL
 * skbs); XDP updates the fields incrementally. Returns 0 or -1. */

#define CT_SRC 0
#define CT_DST 1

static __always_inline __u32 ct_l4_csum_off(const struct ct_pkt *p)
{
	switch (p->t.proto) {
	case IPPROTO_TCP:
		return p->l4_off + 16;
	case IPPROTO_UDP:
		return p->l4_off + 6;
	case IPPROTO_ICMP:
		return p->l4_off + 2;
	}
	return 0;
}

#if defined(EDGENF_HOOK_TC)
static __always_inline int ct_nat_rewrite(ctx_t *ctx, const struct ct_pkt *p, int which, __be32 old_addr,
					  __be32 new_addr, __be16 old_port, __be16 new_port)
{
	__u32 aoff = p->l3_off + (which == CT_SRC ? 12 : 16);
	__u32 csoff = ct_l4_csum_off(p);
	__u64 mangled = p->t.proto == IPPROTO_UDP ? BPF_F_MARK_MANGLED_0 : 0;
	int l4 = p->l4_off && csoff;
	int udp_nocsum = 0;

	if (p->t.proto == IPPROTO_UDP && l4) {
		__sum16 cs = 0;

		if (bpf_skb_load_bytes(ctx, csoff, &cs, 2) < 0)
			return -1;
		udp_nocsum = cs == 0;
	}
	if (old_addr != new_addr) {
		if (l4 && p->t.proto != IPPROTO_ICMP && !udp_nocsum &&
		    bpf_l4_csum_replace(ctx, csoff, old_addr, new_addr, BPF_F_PSEUDO_HDR | mangled | 4) < 0)
			return -1;
		if (bpf_l3_csum_replace(ctx, p->l3_off + 10, old_addr, new_addr, 4) < 0)
			return -1;
		if (bpf_skb_store_bytes(ctx, aoff, &new_addr, 4, 0) < 0)
			return -1;
	}
	if (l4 && old_port != new_port) {
		__u32 poff;

		if (p->t.proto == IPPROTO_ICMP)
			poff = p->l4_off + 4;
		else
			poff = p->l4_off + (which == CT_SRC ? 0 : 2);
		if (!udp_nocsum && bpf_l4_csum_replace(ctx, csoff, old_port, new_port, mangled | 2) < 0)
			return -1;
		if (bpf_skb_store_bytes(ctx, poff, &new_port, 2, 0) < 0)
			return -1;
	}
	return 0;
}
#else
static __always_inline int ct_nat_rewrite(ctx_t *ctx, const struct ct_pkt *p, int which, __be32 old_addr,
					  __be32 new_addr, __be16 old_port, __be16 new_port)
{
	struct iphdr *ip = enf_ptr(ctx, CT_OFF(p->l3_off));
	__sum16 *cs = 0;
	int udp = p->t.proto == IPPROTO_UDP;

	if (!enf_in_bounds(ctx, ip, sizeof(*ip)))
		return -1;
	if (p->l4_off) {
		void *l4 = enf_ptr(ctx, CT_OFF(p->l4_off));
		__be16 *pp = 0;

		if (p->t.proto == IPPROTO_TCP) {
			if (!enf_in_bounds(ctx, l4, sizeof(struct tcphdr)))
				return -1;
			cs = &((struct tcphdr *)l4)->check;
			pp = (__be16 *)l4 + (which == CT_SRC ? 0 : 1);
		} else if (udp) {
			if (!enf_in_bounds(ctx, l4, sizeof(struct udphdr)))
				return -1;
			cs = &((struct udphdr *)l4)->check;
			pp = (__be16 *)l4 + (which == CT_SRC ? 0 : 1);
		} else if (p->t.proto == IPPROTO_ICMP) {
			if (!enf_in_bounds(ctx, l4, sizeof(struct icmphdr)))
				return -1;
			cs = &((struct icmphdr *)l4)->checksum;
			pp = &((struct icmphdr *)l4)->un.echo.id;
		}
		if (pp && old_port != new_port) {
			if (udp) {
				if (*cs) {
					enf_csum_replace2(cs, old_port, new_port);
					if (!*cs)
						*cs = 0xffff;
				}
			} else {
				enf_csum_replace2(cs, old_port, new_port);
			}
			*pp = new_port;
		}
		if (cs && old_addr != new_addr && p->t.proto != IPPROTO_ICMP) {
			if (udp)
				enf_udp_csum_replace4(cs, old_addr, new_addr);
			else
				enf_csum_replace4(cs, old_addr, new_addr);
		}
	}

	if (old_addr != new_addr) {
		enf_csum_replace4(&ip->check, old_addr, new_addr);
		if (which == CT_SRC)
			ip->saddr = new_addr;
		else
			ip->daddr = new_addr;
	}
	return 0;
}
#endif
