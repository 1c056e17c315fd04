// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* lb: L4 load balancer (standard cube), IPv4 and IPv6 TCP/UDP.
 *
 * A packet to a virtual service (VIP, protocol, port) picks a backend:
 *  - the connection table (LRU) first: a flow stays on its backend while
 *    that backend is active or draining;
 *  - else the service's Maglev table (computed by the controller, one inner
 *    array per service, swapped atomically) indexed by a hash of the 5-tuple.
 * DSR mode rewrites the MAC addresses only (the backend owns the VIP and
 * replies directly to the client); tunnel mode is DSR to backends beyond
 * the link: the packet goes inside an outer header of its own family
 * (IPv6-in-IPv6 or IPv4-in-IPv4, RFC 2473 / RFC 2003) from the out port's
 * address to the backend's, which decapsulates it; NAT mode also rewrites the destination
 * address (and port) to the backend's and remembers the flow, so replies from
 * the backend are translated back to the VIP and sent out of the port the
 * request came from. ARP requests and IPv6 neighbour solicitations for a
 * VIP or a port address are answered with the port's MAC.
 * Addresses are 16 bytes in every table, IPv4 ones in the first word, with
 * the family beside them. Layouts are mirrored by lb.go. */
/* offsetof without the C library's stddef.h */
#define offsetof(t, m) __builtin_offsetof(t, m)
#include <edgenf/edgenf.h>
#include <edgenf/arp.h>
#include <edgenf/ndp.h>

#define LB_MAX_SERVICES 256
#define LB_MAX_BACKENDS 4096
#define LB_MAX_CONNS (1 << 18)
#define LB_NO_BACKEND 0xffffffff

#define LB_BE_ACTIVE 1
#define LB_BE_DRAINING 2

#define LB_MODE_DSR 0
#define LB_MODE_NAT 1
#define LB_MODE_TUNNEL 2

#define LB_CFG_PASS_UNKNOWN 1

struct lb_port {
	__u8 mac[ETH_ALEN];
	__u16 pad;
	__be32 ip;     /* first IPv4 address, 0 if none */
	__be32 ip6[4]; /* first IPv6 address, :: if none */
};

struct lb_svc_key {
	__be32 vip[4];
	__be16 port;
	__u8 proto;
	__u8 family; /* 4 or 6 */
};

/* lb_vips key. */
struct lb_vip {
	__be32 addr[4];
	__u32 family;
};

struct lb_svc {
	__u32 id;   /* index of its Maglev table in lb_maglev */
	__u32 size; /* Maglev table size (prime) */
	__u32 mode;
	__u32 pad;
};

struct lb_backend {
	__be32 ip[4]; /* of the service's family */
	__be16 tport; /* NAT: destination port at the backend; 0 = unchanged */
	__u16 port;   /* cube port it is reached through */
	__u8 mac[ETH_ALEN];
	__u16 flags;
	__u32 svc; /* service id */
};

struct lb_conn_key {
	__be32 saddr[4];
	__be32 daddr[4];
	__be16 sport;
	__be16 dport;
	__u8 proto;
	__u8 family;
	__u8 pad[2];
};

struct lb_conn {
	__u32 backend;
	__be32 be_ip[4];
};

struct lb_nat {
	__be32 vip[4];
	__be16 vport;
	__u16 in_port;
	__u8 cmac[ETH_ALEN];
	__u16 pad;
};

struct lb_be_stats {
	__u64 packets;
	__u64 bytes;
	__u64 flows;
};

struct lb_cfg {
	__u32 flags;
};

/* lb_stats indexes */
enum {
	LB_ST_FORWARDED,
	LB_ST_REPLIES,
	LB_ST_ARP,
	LB_ST_NO_BACKEND,
	LB_ST_UNKNOWN,
	LB_ST_NO_TUNNEL, /* tunnel mode: no room, no port address, VLAN tag */
	LB_ST_N,
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct lb_cfg);
} lb_cfg SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, EDGENF_MAX_PORTS);
	__type(key, __u32);
	__type(value, struct lb_port);
} lb_ports SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, LB_MAX_SERVICES);
	__type(key, struct lb_vip);
	__type(value, __u32);
} lb_vips SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, LB_MAX_SERVICES);
	__type(key, struct lb_svc_key);
	__type(value, struct lb_svc);
} lb_services SEC(".maps");

struct lb_table {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__uint(map_flags, BPF_F_INNER_MAP);
	__type(key, __u32);
	__type(value, __u32);
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, LB_MAX_SERVICES);
	__type(key, __u32);
	__array(values, struct lb_table);
} lb_maglev SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, LB_MAX_BACKENDS);
	__type(key, __u32);
	__type(value, struct lb_backend);
} lb_backends SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, LB_MAX_BACKENDS);
	__type(key, __u32);
	__type(value, struct lb_be_stats);
} lb_be_stats SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, LB_MAX_CONNS);
	__type(key, struct lb_conn_key);
	__type(value, struct lb_conn);
} lb_conns SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, LB_MAX_CONNS);
	__type(key, struct lb_conn_key);
	__type(value, struct lb_nat);
} lb_nat SEC(".maps");

ENF_COUNTERS(lb_stats, LB_ST_N);

static __always_inline int lb_addr_eq(const __be32 *a, const __be32 *b)
{
	return a[0] == b[0] && a[1] == b[1] && a[2] == b[2] && a[3] == b[3];
}

static __always_inline __u32 lb_hash(struct lb_conn_key *k)
{
	__u64 h = ((__u64)(k->saddr[0] ^ k->saddr[1] ^ k->saddr[2] ^ k->saddr[3]) << 32) |
		  (k->daddr[0] ^ k->daddr[1] ^ k->daddr[2] ^ k->daddr[3]);

	h ^= (((__u64)k->sport << 32) | ((__u64)k->dport << 16) | k->proto) * 0x9e3779b97f4a7c15ULL;
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdULL;
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53ULL;
	h ^= h >> 33;
	return (__u32)h;
}

/* The decision functions below return the port to send the frame out of,
 * or LB_DROP or LB_PASS: lb_run turns each into its verdict at one place,
 * so the framework's send (its direct hops: a tail call per port) is
 * inlined once, not once per path. */
#define LB_DROP (-1)
#define LB_PASS (-2)

static __always_inline int lb_unknown(void)
{
	__u32 zero = 0;
	struct lb_cfg *cfg = bpf_map_lookup_elem(&lb_cfg, &zero);

	enf_counter_inc(&lb_stats, LB_ST_UNKNOWN);
	if (cfg && (cfg->flags & LB_CFG_PASS_UNKNOWN))
		return LB_PASS;
	return LB_DROP;
}

/* Answer ARP requests for a VIP or for the in-port's address. */
static __always_inline int lb_do_arp(ctx_t *ctx, struct edgenf_md *md, struct enf_pkt *pkt)
{
	struct ethhdr *eth = ctx_data(ctx);
	struct enf_arp *a = enf_ptr(ctx, pkt->l3_off & 0x1f);
	__u32 in = md->in_port;
	struct lb_port *p;
	__be32 tpa;

	if (!enf_in_bounds(ctx, eth, sizeof(*eth)) || !enf_in_bounds(ctx, a, sizeof(*a)))
		return lb_unknown();
	if (a->op != bpf_htons(ARPOP_REQUEST) || !enf_arp_ipv4(a))
		return lb_unknown();
	p = bpf_map_lookup_elem(&lb_ports, &in);
	if (!p)
		return lb_unknown();
	tpa = enf_arp_target(a);
	if (!(p->ip && p->ip == tpa)) {
		struct lb_vip vk = {.addr = {tpa}, .family = 4};

		if (!bpf_map_lookup_elem(&lb_vips, &vk))
			return lb_unknown();
	}
	enf_arp_reply(eth, a, p->mac);
	enf_counter_inc(&lb_stats, LB_ST_ARP);
	return in;
}

/* Rewrite one address and one port of a TCP/UDP packet, fixing the
 * checksums incrementally: IPv4's header checksum and the L4 checksum,
 * whose pseudo-header covers the address. which: 0 = destination, 1 =
 * source. addr holds 1 word (IPv4) or 4 (v6). v6 is a constant at every
 * call, so each call site compiles to one family's code. */
#if defined(EDGENF_HOOK_TC)
/* skb: the kernel helpers, which also handle checksums left to offload
 * (CHECKSUM_PARTIAL, where the field holds the pseudo-header sum). */
static __always_inline int lb_rewrite(ctx_t *ctx, struct enf_pkt *pkt, int which, const __be32 *addr, __be16 port, int v6)
{
	__u32 l3 = pkt->l3_off & 0x1f, l4 = pkt->l4_off & 0x1ff;
	__u32 aoff = l3 + (v6 ? (which ? offsetof(struct ipv6hdr, saddr) : offsetof(struct ipv6hdr, daddr))
			      : (which ? offsetof(struct iphdr, saddr) : offsetof(struct iphdr, daddr)));
	__u32 poff = l4 + (which ? 0 : 2);
	__u32 coff = pkt->l4_proto == IPPROTO_TCP ? l4 + 16 : l4 + 6;
	__u32 flags = pkt->l4_proto == IPPROTO_TCP ? 0 : BPF_F_MARK_MANGLED_0;
	__u32 words = v6 ? 4 : 1;
	__be32 old[4];
	__be16 oldp;

	if (bpf_skb_load_bytes(ctx, aoff, old, words * 4) || bpf_skb_load_bytes(ctx, poff, &oldp, 2))
		return -1;
#pragma unroll
	for (int i = 0; i < 4; i++)
		if (i < words && bpf_l4_csum_replace(ctx, coff, old[i], addr[i], flags | BPF_F_PSEUDO_HDR | 4))
			return -1;
	if (!v6 && bpf_l3_csum_replace(ctx, l3 + offsetof(struct iphdr, check), old[0], addr[0], 4))
		return -1;
	if (bpf_skb_store_bytes(ctx, aoff, addr, words * 4, 0))
		return -1;
	if (port && port != oldp) {
		if (bpf_l4_csum_replace(ctx, coff, oldp, port, flags | 2))
			return -1;
		if (bpf_skb_store_bytes(ctx, poff, &port, 2, 0))
			return -1;
	}
	return 0;
}
#else
static __always_inline int lb_rewrite(ctx_t *ctx, struct enf_pkt *pkt, int which, const __be32 *addr, __be16 port, int v6)
{
	void *l3 = enf_ptr(ctx, pkt->l3_off & 0x1f);
	struct iphdr *ip4 = l3;
	struct ipv6hdr *ip6 = l3;
	__u8 *l4 = enf_ptr(ctx, pkt->l4_off & 0x1ff);
	__u32 words = v6 ? 4 : 1;
	__be32 *pa;
	__be16 *pp;
	__sum16 *sum;
	int l4sum;

	if (!enf_in_bounds(ctx, l3, v6 ? sizeof(*ip6) : sizeof(*ip4)))
		return -1;
	if (pkt->l4_proto == IPPROTO_TCP) {
		if (!enf_in_bounds(ctx, l4, 20))
			return -1;
		sum = (__sum16 *)(l4 + 16);
	} else {
		if (!enf_in_bounds(ctx, l4, 8))
			return -1;
		sum = (__sum16 *)(l4 + 6);
	}
	if (v6)
		pa = which ? ip6->saddr.in6_u.u6_addr32 : ip6->daddr.in6_u.u6_addr32;
	else
		pa = which ? &ip4->saddr : &ip4->daddr;
	pp = (__be16 *)(l4 + (which ? 0 : 2));
	/* an IPv4 UDP checksum of 0 says there is none: it stays 0 */
	l4sum = v6 || pkt->l4_proto == IPPROTO_TCP || *sum;
#pragma unroll
	for (int i = 0; i < 4; i++) {
		if (i >= words)
			break;
		if (l4sum)
			enf_csum_replace4(sum, pa[i], addr[i]);
		if (!v6)
			enf_csum_replace4(&ip4->check, pa[i], addr[i]);
		pa[i] = addr[i];
	}
	if (port && port != *pp) {
		if (l4sum)
			enf_csum_replace2(sum, *pp, port);
		*pp = port;
	}
	if (pkt->l4_proto == IPPROTO_UDP && l4sum && !*sum)
		*sum = 0xffff; /* a computed 0 is sent as all ones (0: none) */
	return 0;
}
#endif

/* Answer a neighbour solicitation for a VIP or the port's address with an
 * advertisement, in place: solicited, override (not for the port's own
 * address, like a host), our port's MAC. */
static __always_inline int lb_do_ns(ctx_t *ctx, struct edgenf_md *md, struct enf_pkt *pkt)
{
	struct ethhdr *eth = ctx_data(ctx);
	struct ipv6hdr *ip = enf_ptr(ctx, pkt->l3_off & 0x1f);
	struct enf_nd_msg *ns = enf_ptr(ctx, pkt->l4_off & 0x1ff);
	struct lb_vip vk = {.family = 6};
	__u32 in = md->in_port;
	struct lb_port *p;
	int own;

	if (!enf_in_bounds(ctx, eth, sizeof(*eth)) || !enf_in_bounds(ctx, ip, sizeof(*ip)) ||
	    !enf_in_bounds(ctx, ns, sizeof(*ns)) || !enf_nd_solicitation(ip, ns))
		return lb_unknown();
	__builtin_memcpy(vk.addr, ns->target, 16);
	p = bpf_map_lookup_elem(&lb_ports, &in);
	if (!p)
		return lb_unknown();
	own = (p->ip6[0] | p->ip6[1] | p->ip6[2] | p->ip6[3]) && lb_addr_eq(p->ip6, vk.addr);
	if (!own && !bpf_map_lookup_elem(&lb_vips, &vk))
		return lb_unknown();
	enf_nd_advertise(eth, ip, ns, p->mac, own ? 0 : ENF_NA_OVERRIDE);
	enf_counter_inc(&lb_stats, LB_ST_ARP);
	return in;
}

static __always_inline int lb_set_macs(ctx_t *ctx, __u32 out, __u8 *dst)
{
	struct ethhdr *eth = ctx_data(ctx);
	struct lb_port *p = bpf_map_lookup_elem(&lb_ports, &out);

	if (!p || !enf_in_bounds(ctx, eth, sizeof(*eth)))
		return -1;
	__builtin_memcpy(eth->h_dest, dst, ETH_ALEN);
	__builtin_memcpy(eth->h_source, p->mac, ETH_ALEN);
	return 0;
}

/* Tunnel mode: push an outer header of the packet's family in front of its
 * IP header, from the address of the port the backend is reached through
 * (lb_ports) to the backend's. The outer header copies the inner traffic
 * class and (IPv4) DF bit; an IPv6 outer flow label carries the flow's
 * hash so the network's ECMP keeps a flow on one path and spreads flows.
 * Frames with a VLAN tag in the frame are not encapsulated. */
static __always_inline int lb_encap(ctx_t *ctx, struct enf_pkt *pkt, struct lb_backend *be, struct lb_conn_key *ck)
{
	__u32 out = be->port, inner = ctx_len(ctx) - ETH_HLEN, h = lb_hash(ck);
	struct lb_port *p = bpf_map_lookup_elem(&lb_ports, &out);
	int v6 = ck->family == 6;
	__u32 room = v6 ? sizeof(struct ipv6hdr) : sizeof(struct iphdr);
	struct ipv6hdr o6 = {};
	struct iphdr o4 = {};
	void *data;

	if (!p || pkt->l3_off != ETH_HLEN)
		return -1;
	data = ctx_data(ctx);
	if (v6) {
		struct ipv6hdr *in = data + ETH_HLEN;

		if (!(p->ip6[0] | p->ip6[1] | p->ip6[2] | p->ip6[3]) || !enf_in_bounds(ctx, in, sizeof(*in)))
			return -1;
		o6.version = 6;
		o6.priority = in->priority;
		o6.flow_lbl[0] = (in->flow_lbl[0] & 0xf0) | ((h >> 16) & 0x0f);
		o6.flow_lbl[1] = h >> 8;
		o6.flow_lbl[2] = h;
		o6.payload_len = bpf_htons(inner);
		o6.nexthdr = IPPROTO_IPV6;
		o6.hop_limit = 64;
		__builtin_memcpy(&o6.saddr, p->ip6, 16);
		__builtin_memcpy(&o6.daddr, be->ip, 16);
	} else {
		struct iphdr *in = data + ETH_HLEN;

		if (!p->ip || !enf_in_bounds(ctx, in, sizeof(*in)))
			return -1;
		o4.version = 4;
		o4.ihl = 5;
		o4.tos = in->tos;
		o4.tot_len = bpf_htons(inner + sizeof(o4));
		/* DF copied (RFC 2003 3.1); an atomic datagram needs no ID
		 * (RFC 6864), others get a fresh one. */
		o4.frag_off = in->frag_off & bpf_htons(0x4000) /* DF */;
		o4.id = o4.frag_off ? 0 : (__be16)bpf_get_prandom_u32();
		o4.ttl = 64;
		o4.protocol = IPPROTO_IPIP;
		o4.saddr = p->ip;
		o4.daddr = be->ip[0];
		o4.check = enf_ipv4_csum(&o4);
	}
#if defined(EDGENF_HOOK_XDP)
	if (bpf_xdp_adjust_head(ctx, -(int)room))
		return -1;
	data = ctx_data(ctx);
	if (data + room + ETH_HLEN > ctx_data_end(ctx))
		return -1;
	/* the Ethernet header to the new front (lb_set_macs rewrites its
	 * addresses; the type stays: same family outside) */
	__builtin_memmove(data, data + room, ETH_HLEN);
#else
	/* Room after the MAC header, the skb marked as encapsulated (GSO
	 * packets are segmented with the outer header repeated). */
	if (bpf_skb_adjust_room(ctx, room, BPF_ADJ_ROOM_MAC,
				v6 ? BPF_F_ADJ_ROOM_ENCAP_L3_IPV6 : BPF_F_ADJ_ROOM_ENCAP_L3_IPV4))
		return -1;
	data = ctx_data(ctx);
#endif
	if (v6) {
		if (data + ETH_HLEN + sizeof(o6) > ctx_data_end(ctx))
			return -1;
		*(struct ipv6hdr *)(data + ETH_HLEN) = o6;
	} else {
		if (data + ETH_HLEN + sizeof(o4) > ctx_data_end(ctx))
			return -1;
		*(struct iphdr *)(data + ETH_HLEN) = o4;
	}
	return 0;
}

static __always_inline int lb_forward(ctx_t *ctx, struct edgenf_md *md, struct enf_pkt *pkt,
				      struct lb_conn_key *ck, struct lb_svc *s)
{
	struct lb_backend *be = NULL;
	struct lb_conn *c = bpf_map_lookup_elem(&lb_conns, ck);
	__u32 id = LB_NO_BACKEND, len = ctx_len(ctx);
	struct lb_be_stats *st;
	int fresh = 0;

	if (c) {
		id = c->backend;
		be = bpf_map_lookup_elem(&lb_backends, &id);
		if (be && (!lb_addr_eq(be->ip, c->be_ip) || be->svc != s->id || !(be->flags & (LB_BE_ACTIVE | LB_BE_DRAINING))))
			be = NULL;
	}
	if (!be) {
		__u32 sid = s->id, idx, *slot;
		void *table = bpf_map_lookup_elem(&lb_maglev, &sid);

		if (!table || !s->size)
			goto none;
		idx = lb_hash(ck) % s->size;
		slot = bpf_map_lookup_elem(table, &idx);
		if (!slot)
			goto none;
		id = *slot;
		be = bpf_map_lookup_elem(&lb_backends, &id);
		if (!be || !(be->flags & LB_BE_ACTIVE))
			goto none;
		struct lb_conn nc = {.backend = id};

		__builtin_memcpy(nc.be_ip, be->ip, 16);
		bpf_map_update_elem(&lb_conns, ck, &nc, BPF_ANY);
		fresh = 1;
	}
	st = bpf_map_lookup_elem(&lb_be_stats, &id);
	if (st) {
		st->packets++;
		st->bytes += len;
		st->flows += fresh;
	}
	if (s->mode == LB_MODE_NAT) {
		__be16 tport = be->tport ? be->tport : ck->dport;

		if (fresh || !c) {
			struct ethhdr *eth = ctx_data(ctx);
			struct lb_nat n = {.vport = ck->dport, .in_port = md->in_port};
			struct lb_conn_key rk = {.sport = tport, .dport = ck->sport, .proto = ck->proto, .family = ck->family};

			if (!enf_in_bounds(ctx, eth, sizeof(*eth)))
				return LB_DROP;
			__builtin_memcpy(n.vip, ck->daddr, 16);
			__builtin_memcpy(rk.saddr, be->ip, 16);
			__builtin_memcpy(rk.daddr, ck->saddr, 16);
			__builtin_memcpy(n.cmac, eth->h_source, ETH_ALEN);
			bpf_map_update_elem(&lb_nat, &rk, &n, BPF_ANY);
		}
		if (ck->family == 6 ? lb_rewrite(ctx, pkt, 0, be->ip, be->tport, 1) : lb_rewrite(ctx, pkt, 0, be->ip, be->tport, 0))
			return LB_DROP;
	}
	if (s->mode == LB_MODE_TUNNEL && lb_encap(ctx, pkt, be, ck)) {
		enf_counter_inc(&lb_stats, LB_ST_NO_TUNNEL);
		return LB_DROP;
	}
	if (lb_set_macs(ctx, be->port, be->mac))
		return LB_DROP;
	enf_counter_inc(&lb_stats, LB_ST_FORWARDED);
	return be->port;
none:
	enf_counter_inc(&lb_stats, LB_ST_NO_BACKEND);
	return LB_DROP;
}

static __always_inline int lb(ctx_t *ctx, struct edgenf_md *md)
{
	struct lb_conn_key ck = {};
	struct enf_pkt pkt;
	struct lb_svc *s;
	struct lb_nat *n;
	__be16 *ports;

#if defined(EDGENF_HOOK_TC)
	if (ctx_data(ctx) + 128 > ctx_data_end(ctx))
		bpf_skb_pull_data(ctx, ctx->len < 128 ? ctx->len : 128);
#endif
	if (enf_parse(ctx, &pkt))
		return LB_DROP;
	if (pkt.l3_proto == ETH_P_ARP)
		return lb_do_arp(ctx, md, &pkt);
	/* IPv6: the upper-layer header right after the fixed one (enf_parse
	 * does not walk extension headers; such packets are not a service's). */
	if (pkt.l3_proto == ETH_P_IPV6 && pkt.l4_proto == IPPROTO_ICMPV6 && pkt.l4_off) {
		__u8 *t = enf_ptr(ctx, pkt.l4_off & 0x1ff);

		if (enf_in_bounds(ctx, t, 1) && *t == ENF_ND_NS)
			return lb_do_ns(ctx, md, &pkt);
	}
	if ((pkt.l3_proto != ETH_P_IP && pkt.l3_proto != ETH_P_IPV6) || !pkt.l4_off ||
	    (pkt.l4_proto != IPPROTO_TCP && pkt.l4_proto != IPPROTO_UDP))
		return lb_unknown();
	ports = enf_ptr(ctx, pkt.l4_off & 0x1ff);
	if (!enf_in_bounds(ctx, ports, 4))
		return LB_DROP;
	if (pkt.l3_proto == ETH_P_IP) {
		struct iphdr *ip = enf_ptr(ctx, pkt.l3_off & 0x1f);

		if (!enf_in_bounds(ctx, ip, sizeof(*ip)))
			return LB_DROP;
		ck.saddr[0] = ip->saddr;
		ck.daddr[0] = ip->daddr;
		ck.family = 4;
	} else {
		struct ipv6hdr *ip6 = enf_ptr(ctx, pkt.l3_off & 0x1f);

		if (!enf_in_bounds(ctx, ip6, sizeof(*ip6)))
			return LB_DROP;
		__builtin_memcpy(ck.saddr, &ip6->saddr, 16);
		__builtin_memcpy(ck.daddr, &ip6->daddr, 16);
		ck.family = 6;
	}
	ck.sport = ports[0];
	ck.dport = ports[1];
	ck.proto = pkt.l4_proto;

	struct lb_svc_key sk = {.port = ck.dport, .proto = ck.proto, .family = ck.family};

	__builtin_memcpy(sk.vip, ck.daddr, 16);
	s = bpf_map_lookup_elem(&lb_services, &sk);
	if (s)
		return lb_forward(ctx, md, &pkt, &ck, s);

	/* A reply from a NAT backend? */
	n = bpf_map_lookup_elem(&lb_nat, &ck);
	if (n) {
		__u32 out = n->in_port;
		__u8 cmac[ETH_ALEN];

		__be32 vip[4];
		__be16 vport = n->vport;

		__builtin_memcpy(cmac, n->cmac, ETH_ALEN);
		__builtin_memcpy(vip, n->vip, 16);
		if (ck.family == 6 ? lb_rewrite(ctx, &pkt, 1, vip, vport, 1) : lb_rewrite(ctx, &pkt, 1, vip, vport, 0))
			return LB_DROP;
		if (lb_set_macs(ctx, out, cmac))
			return LB_DROP;
		enf_counter_inc(&lb_stats, LB_ST_REPLIES);
		return out;
	}
	return lb_unknown();
}

static __always_inline int lb_run(ctx_t *ctx, struct edgenf_md *md)
{
	int out = lb(ctx, md);

	if (out >= 0)
		return enf_send(ctx, md, out);
	if (out == LB_PASS)
		return enf_pass(ctx, md);
	return enf_drop(ctx, md);
}

EDGENF_CUBE(lb_run)
