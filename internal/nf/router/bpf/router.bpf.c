// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* router: an IPv4 and IPv6 router cube.
 *
 * Fast path: ARP replies for the router's own addresses, ICMP echo replies,
 * LPM route lookup, next-hop MAC from the ARP table, TTL decrement with an
 * incremental checksum update, MAC rewrite, send. Everything else is punted
 * to the slow path (router.go): ARP replies addressed to the router (learning),
 * packets whose next hop is not resolved yet (queued while the controller
 * resolves it), TTL expiry and missing routes (ICMP errors).
 *
 * IPv6 the same way with its own tables: neighbour solicitations for the
 * router's addresses (global and the link-local one of every port) are
 * answered in place, echo requests too; advertisements (learning), router
 * solicitations, hop-limit expiry, missing routes and unresolved next hops
 * go to the slow path (ndp.go). */
#include <edgenf/edgenf.h>
#include <edgenf/ndp.h>

/* Punt reasons; mirrored in router.go. */
#define RT_PUNT_ARP 1       /* ARP reply (or gratuitous) for the router */
#define RT_PUNT_ARP_MISS 2  /* next hop not resolved; arg = next hop (be32) */
#define RT_PUNT_TTL 3       /* TTL would reach 0: time exceeded */
#define RT_PUNT_NO_ROUTE 4  /* destination net unreachable */
#define RT_PUNT_ND 5        /* IPv6: neighbour advertisement for the router */
#define RT_PUNT_ND_MISS 6   /* IPv6: next hop not resolved; arg = out port */
#define RT_PUNT_RS 7        /* IPv6: router solicitation */
#define RT_PUNT_TOO_BIG 8   /* larger than the out port's MTU; arg = the MTU */

#define RT_MAX_ROUTES 131072
#define RT_MAX_ARP 65536
#define RT_MAX_ADDRS 1024
#define RT_CACHE_SIZE 65536

/* Mirrored by router.go. */
struct rt_port {
	__u8 mac[ETH_ALEN];
	__u16 valid;
	__u16 mtu; /* of the peer interface; 0: not checked (a cube peer) */
	__u16 flags; /* RT_PORT_* */
	__u16 pad[2];
};

/* The port accepts IP packets only from the sources in rt_src/rt_src6 for
 * it (its connected subnets, the routes out of it, its allowed sources):
 * a workload cannot claim another's address. */
#define RT_PORT_SRC_CHECK 1

/* Does a packet of l3 bytes (network header on) fit the MTU? A GSO skb (TC)
 * is judged by its segments: gso_size bytes of payload behind the network
 * and transport headers (l4hdr), as Linux's forwarding path does. */
static __always_inline int rt_fits(ctx_t *ctx, __u32 l3, __u32 mtu, __u32 nethdr, __u32 l4off, __u8 proto)
{
	if (!mtu || l3 <= mtu)
		return 1;
#if defined(EDGENF_HOOK_TC)
	if (ctx->gso_size) {
		__u32 l4hdr = 8;

		if (proto == IPPROTO_TCP) {
			__u8 doff;

			if (bpf_skb_load_bytes(ctx, l4off + 12, &doff, 1) < 0)
				return 0;
			l4hdr = (doff >> 4) * 4;
		}
		return ctx->gso_size + nethdr + l4hdr <= mtu;
	}
#endif
	(void)ctx;
	(void)nethdr;
	(void)l4off;
	(void)proto;
	return 0;
}

struct rt_route_key {
	__u32 prefixlen;
	__be32 addr;
};

#define RT_ROUTE_CONNECTED 1

struct rt_route {
	__u32 port;
	__be32 nexthop; /* 0: directly connected, the destination is the next hop */
	__u32 flags;
};

struct rt_arp {
	__u8 mac[ETH_ALEN];
	__u16 flags; /* 1: static */
	__u32 port;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, EDGENF_MAX_PORTS);
	__type(key, __u32);
	__type(value, struct rt_port);
} rt_ports SEC(".maps");

/* The router's own addresses → port they belong to. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, RT_MAX_ADDRS);
	__type(key, __be32);
	__type(value, __u32);
} rt_addrs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(max_entries, RT_MAX_ROUTES);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct rt_route_key);
	__type(value, struct rt_route);
} rt_routes SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, RT_MAX_ARP);
	__type(key, __be32);
	__type(value, struct rt_arp);
} rt_arp SEC(".maps");

/* Route cache: destination → (port, next hop) of its longest-prefix match,
 * valid while its generation equals rt_gen[0]; the control plane bumps the
 * generation on every route change, which invalidates the whole cache at
 * once. A hit costs one hash lookup whatever the size of the table. */
struct rt_cache_val {
	__u32 gen;
	__u32 port;
	__be32 nexthop;
	__u32 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, RT_CACHE_SIZE);
	__uint(map_flags, BPF_F_NO_COMMON_LRU);
	__type(key, __be32);
	__type(value, struct rt_cache_val);
} rt_cache SEC(".maps");

struct rt_gen {
	__u32 gen;
	__u32 off; /* 1: cache disabled (setting disable_route_cache) */
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct rt_gen);
} rt_gen SEC(".maps");

/* ---- IPv6 tables ---- */

/* The router's IPv6 addresses (global, and each port's link-local) → port. */
struct rt_addr6 {
	__be32 a[4];
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, RT_MAX_ADDRS + EDGENF_MAX_PORTS);
	__type(key, struct rt_addr6);
	__type(value, __u32);
} rt_addrs6 SEC(".maps");

struct rt_route6_key {
	__u32 prefixlen;
	__be32 addr[4];
};

struct rt_route6 {
	__u32 port;
	__u32 flags;
	__be32 nexthop[4]; /* ::: directly connected */
};

struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(max_entries, RT_MAX_ROUTES);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct rt_route6_key);
	__type(value, struct rt_route6);
} rt_routes6 SEC(".maps");

/* Neighbours by address and port (a link-local address is only unique on
 * its link). */
struct rt_neigh6_key {
	__be32 addr[4];
	__u32 port;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, RT_MAX_ARP);
	__type(key, struct rt_neigh6_key);
	__type(value, struct rt_arp);
} rt_neigh6 SEC(".maps");

/* Allowed sources per port: (port, prefix) → 1; the router's own addresses
 * → 0 (a packet from outside claiming them is refused, as Linux refuses a
 * martian source). The port is matched whole (prefixlen counts its 32
 * bits), then the longest prefix of the address. */
struct rt_src_key {
	__u32 prefixlen;
	__u32 port;
	__be32 addr;
};

struct rt_src6_key {
	__u32 prefixlen;
	__u32 port;
	__be32 addr[4];
};

struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(max_entries, RT_MAX_ROUTES);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct rt_src_key);
	__type(value, __u8);
} rt_src SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(max_entries, RT_MAX_ROUTES);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct rt_src6_key);
	__type(value, __u8);
} rt_src6 SEC(".maps");

/* Packets a port's source check dropped, per port. */
ENF_COUNTERS(rt_src_drops, EDGENF_MAX_PORTS);

/* The decision functions below return the port to send the frame out of,
 * or RT_DONE once they have dropped or punted it: the frame leaves through
 * one enf_send call site (router()), not one inlined copy of the
 * framework's send (its direct hops: a tail call per port) per path. */
#define RT_DONE (-1)

static __always_inline int rt_drop(ctx_t *ctx, struct edgenf_md *md)
{
	enf_drop(ctx, md);
	return RT_DONE;
}

static __always_inline int rt_punt(ctx_t *ctx, struct edgenf_md *md, __u32 reason, __u32 arg)
{
	enf_punt(ctx, md, reason, arg);
	return RT_DONE;
}

static __always_inline int rt_src_drop(ctx_t *ctx, struct edgenf_md *md)
{
	enf_counter_inc(&rt_src_drops, md->in_port);
	return rt_drop(ctx, md);
}

struct arp_eth {
	__be16 hrd;
	__be16 pro;
	__u8 hln;
	__u8 pln;
	__be16 op;
	__u8 sha[ETH_ALEN];
	__be32 sip;
	__u8 tha[ETH_ALEN];
	__be32 tip;
} __attribute__((packed));

static __always_inline int mac_is(const __u8 *a, const __u8 *b)
{
	return *(const __u32 *)a == *(const __u32 *)b && *(const __u16 *)(a + 4) == *(const __u16 *)(b + 4);
}

static __always_inline int mac_bcast(const __u8 *a)
{
	return *(const __u32 *)a == 0xffffffff && *(const __u16 *)(a + 4) == 0xffff;
}

static __always_inline int rt_arp_in(ctx_t *ctx, struct edgenf_md *md, struct rt_port *pp)
{
	struct ethhdr *eth = ctx_data(ctx);
	struct arp_eth *a = (void *)(eth + 1);
	__u32 *owner;
	__be32 tip, sip;

	if (!enf_in_bounds(ctx, a, sizeof(*a)))
		return rt_drop(ctx, md);
	if (a->hrd != bpf_htons(ARPHRD_ETHER) || a->pro != bpf_htons(ETH_P_IP) || a->hln != 6 || a->pln != 4)
		return rt_drop(ctx, md);
	tip = a->tip;
	owner = bpf_map_lookup_elem(&rt_addrs, &tip);
	if (!owner || *owner != md->in_port)
		return rt_drop(ctx, md); /* not for us (proxy ARP is not done) */
	if (a->op == bpf_htons(ARPOP_REPLY))
		return rt_punt(ctx, md, RT_PUNT_ARP, md->in_port);
	if (a->op != bpf_htons(ARPOP_REQUEST))
		return rt_drop(ctx, md);
	/* Answer in place: who-has tip tell sip → tip is-at our MAC. */
	sip = a->sip;
	__builtin_memcpy(a->tha, a->sha, ETH_ALEN);
	a->tip = sip;
	__builtin_memcpy(a->sha, pp->mac, ETH_ALEN);
	a->sip = tip;
	a->op = bpf_htons(ARPOP_REPLY);
	__builtin_memcpy(eth->h_dest, a->tha, ETH_ALEN);
	__builtin_memcpy(eth->h_source, pp->mac, ETH_ALEN);
	return md->in_port;
}

/* Echo request to one of our addresses: turn it into the reply in place. */
static __always_inline int rt_echo(ctx_t *ctx, struct edgenf_md *md, struct rt_port *pp, struct iphdr *ip, __u32 l4off)
{
	struct ethhdr *eth = ctx_data(ctx);
	struct icmphdr *ic;
	__be32 a;
	__u16 old, new;

	if (ip->ihl != 5 || (ip->frag_off & bpf_htons(0x3fff)))
		return rt_drop(ctx, md);
	ic = enf_ptr(ctx, l4off & 0xff);
	if (!enf_in_bounds(ctx, ic, sizeof(*ic)) || ic->type != ICMP_ECHO || ic->code != 0)
		return rt_drop(ctx, md);
	old = *(__u16 *)ic;
	ic->type = ICMP_ECHOREPLY;
	new = *(__u16 *)ic;
	enf_csum_replace2(&ic->checksum, old, new);
	a = ip->saddr;
	ip->saddr = ip->daddr;
	ip->daddr = a;
	old = bpf_htons(((__u16)ip->ttl << 8) | ip->protocol);
	ip->ttl = 64;
	new = bpf_htons(((__u16)ip->ttl << 8) | ip->protocol);
	enf_csum_replace2(&ip->check, old, new);
	__builtin_memcpy(eth->h_dest, eth->h_source, ETH_ALEN);
	__builtin_memcpy(eth->h_source, pp->mac, ETH_ALEN);
	return md->in_port;
}

static __always_inline int rt_ip6_own(ctx_t *ctx, struct edgenf_md *md, struct rt_port *pp, struct ipv6hdr *ip6)
{
	struct ethhdr *eth = ctx_data(ctx);
	struct icmphdr *ic = (void *)(ip6 + 1);
	__u16 old, new;

	if (ip6->nexthdr != IPPROTO_ICMPV6 || !enf_in_bounds(ctx, eth, sizeof(*eth)) || !enf_in_bounds(ctx, ic, sizeof(*ic)))
		return rt_drop(ctx, md);
	switch (ic->type) {
	case ENF_ND_NS: {
		struct enf_nd_msg *ns = (void *)ic;

		if (!enf_in_bounds(ctx, ns, sizeof(*ns)) || !enf_nd_solicitation(ip6, ns))
			return rt_drop(ctx, md);
		enf_nd_advertise(eth, ip6, ns, pp->mac, ENF_NA_ROUTER | ENF_NA_OVERRIDE);
		return md->in_port;
	}
	case ENF_ND_NA:
		return rt_punt(ctx, md, RT_PUNT_ND, md->in_port);
	case ENF_ND_RS:
		return rt_punt(ctx, md, RT_PUNT_RS, md->in_port);
	case 128: /* echo request: the reply in place (the address swap keeps the sum) */
		if (ic->code)
			return rt_drop(ctx, md);
		old = *(__u16 *)ic;
		ic->type = 129;
		new = *(__u16 *)ic;
		enf_csum_replace2(&ic->checksum, old, new);
		{
			struct in6_addr a = ip6->saddr;

			ip6->saddr = ip6->daddr;
			ip6->daddr = a;
		}
		ip6->hop_limit = 64;
		__builtin_memcpy(eth->h_dest, eth->h_source, ETH_ALEN);
		__builtin_memcpy(eth->h_source, pp->mac, ETH_ALEN);
		return md->in_port;
	}
	return rt_drop(ctx, md);
}

static __always_inline int rt_ip6(ctx_t *ctx, struct edgenf_md *md, struct rt_port *pp)
{
	struct ethhdr *eth = ctx_data(ctx);
	struct ipv6hdr *ip6 = (void *)(eth + 1);
	struct rt_route6_key key = {.prefixlen = 128};
	struct rt_neigh6_key nk = {};
	struct rt_route6 *rt;
	struct rt_port *op;
	struct rt_arp *nb;
	__u32 *own, in = md->in_port;
	__u8 d0;

	if (!enf_in_bounds(ctx, ip6, sizeof(*ip6)) || ip6->version != 6)
		return rt_drop(ctx, md);
	d0 = ip6->daddr.in6_u.u6_addr8[0];
	if (d0 == 0xff) {
		/* Multicast: neighbour solicitations (solicited-node group)
		 * and router solicitations for us; nothing is routed. */
		struct enf_nd_msg *ns = (void *)(ip6 + 1);

		if (ip6->nexthdr != IPPROTO_ICMPV6 || !enf_in_bounds(ctx, ns, 8))
			return rt_drop(ctx, md);
		if (ns->type == ENF_ND_RS)
			return rt_punt(ctx, md, RT_PUNT_RS, in);
		if (ns->type != ENF_ND_NS || !enf_in_bounds(ctx, ns, sizeof(*ns)))
			return rt_drop(ctx, md);
		own = bpf_map_lookup_elem(&rt_addrs6, ns->target);
		if (!own || *own != in)
			return rt_drop(ctx, md);
		return rt_ip6_own(ctx, md, pp, ip6);
	}
	if (!mac_is(eth->h_dest, pp->mac))
		return rt_drop(ctx, md);
	/* Link-local sources never leave their link (dropped below unless
	 * the router is the destination): neighbour discovery is not checked. */
	if ((pp->flags & RT_PORT_SRC_CHECK) &&
	    !(ip6->saddr.in6_u.u6_addr8[0] == 0xfe && (ip6->saddr.in6_u.u6_addr8[1] & 0xc0) == 0x80)) {
		struct rt_src6_key sk = {.prefixlen = 32 + 128, .port = in};

		__u8 *ok;

		__builtin_memcpy(sk.addr, &ip6->saddr, 16);
		ok = bpf_map_lookup_elem(&rt_src6, &sk);
		if (!ok || !*ok)
			return rt_src_drop(ctx, md);
	}
	own = bpf_map_lookup_elem(&rt_addrs6, &ip6->daddr);
	if (own) {
		if (*own != in && d0 == 0xfe)
			return rt_drop(ctx, md); /* another port's link-local address */
		return rt_ip6_own(ctx, md, pp, ip6);
	}
	/* Link-local destinations and sources stay on their link (RFC 4291
	 * 2.5.6); unspecified and loopback sources are never forwarded. */
	if ((d0 == 0xfe && (ip6->daddr.in6_u.u6_addr8[1] & 0xc0) == 0x80) ||
	    (ip6->saddr.in6_u.u6_addr8[0] == 0xfe && (ip6->saddr.in6_u.u6_addr8[1] & 0xc0) == 0x80) ||
	    ip6->saddr.in6_u.u6_addr8[0] == 0xff ||
	    !(ip6->saddr.in6_u.u6_addr32[0] | ip6->saddr.in6_u.u6_addr32[1] | ip6->saddr.in6_u.u6_addr32[2]))
		return rt_drop(ctx, md);
	if (ip6->hop_limit <= 1)
		return rt_punt(ctx, md, RT_PUNT_TTL, in);
	__builtin_memcpy(key.addr, &ip6->daddr, 16);
	rt = bpf_map_lookup_elem(&rt_routes6, &key);
	if (!rt)
		return rt_punt(ctx, md, RT_PUNT_NO_ROUTE, in);
	nk.port = rt->port;
	if (rt->nexthop[0] | rt->nexthop[1] | rt->nexthop[2] | rt->nexthop[3])
		__builtin_memcpy(nk.addr, rt->nexthop, 16);
	else
		__builtin_memcpy(nk.addr, &ip6->daddr, 16);
	nb = bpf_map_lookup_elem(&rt_neigh6, &nk);
	if (!nb)
		return rt_punt(ctx, md, RT_PUNT_ND_MISS, nk.port);
	op = bpf_map_lookup_elem(&rt_ports, &nk.port);
	if (!op || !op->valid)
		return rt_drop(ctx, md);
	/* An IPv6 router never fragments: packet too big (RFC 8200 5). */
	if (!rt_fits(ctx, bpf_ntohs(ip6->payload_len) + 40, op->mtu, 40, sizeof(*eth) + 40, ip6->nexthdr))
		return rt_punt(ctx, md, RT_PUNT_TOO_BIG, op->mtu);
	ip6->hop_limit--; /* no header checksum in IPv6 */
	__builtin_memcpy(eth->h_dest, nb->mac, ETH_ALEN);
	__builtin_memcpy(eth->h_source, op->mac, ETH_ALEN);
	return nk.port;
}

static __always_inline int rt_decide(ctx_t *ctx, struct edgenf_md *md)
{
	struct ethhdr *eth = ctx_data(ctx);
	__u32 in = md->in_port;
	struct rt_port *pp, *op;
	struct rt_route_key key;
	struct rt_route *rt;
	struct rt_cache_val *rc;
	struct rt_arp *nb;
	struct iphdr *ip;
	__u32 out, zero = 0, g;
	struct rt_gen *gen;
	__be32 nh, daddr;

	if (!enf_in_bounds(ctx, eth, sizeof(*eth)))
		return rt_drop(ctx, md);
	pp = bpf_map_lookup_elem(&rt_ports, &in);
	if (!pp || !pp->valid)
		return rt_drop(ctx, md);
	if (eth->h_proto == bpf_htons(ETH_P_ARP)) {
		if (!mac_bcast(eth->h_dest) && !mac_is(eth->h_dest, pp->mac))
			return rt_drop(ctx, md);
		return rt_arp_in(ctx, md, pp);
	}
	if (eth->h_proto == bpf_htons(ETH_P_IPV6))
		return rt_ip6(ctx, md, pp);
	if (eth->h_proto != bpf_htons(ETH_P_IP) || !mac_is(eth->h_dest, pp->mac))
		return rt_drop(ctx, md);
	ip = (void *)(eth + 1);
	if (!enf_in_bounds(ctx, ip, sizeof(*ip)) || ip->version != 4 || ip->ihl < 5)
		return rt_drop(ctx, md);
	if (pp->flags & RT_PORT_SRC_CHECK) {
		struct rt_src_key sk = {.prefixlen = 32 + 32, .port = in, .addr = ip->saddr};
		__u8 *ok = bpf_map_lookup_elem(&rt_src, &sk);

		if (!ok || !*ok)
			return rt_src_drop(ctx, md);
	}

	if (bpf_map_lookup_elem(&rt_addrs, &ip->daddr)) {
		if (ip->protocol == IPPROTO_ICMP)
			return rt_echo(ctx, md, pp, ip, sizeof(*eth) + sizeof(*ip));
		return rt_drop(ctx, md);
	}
	/* Multicast, class E and limited broadcast are not routed. */
	if (bpf_ntohl(ip->daddr) >= 0xe0000000)
		return rt_drop(ctx, md);
	if (ip->ttl <= 1)
		return rt_punt(ctx, md, RT_PUNT_TTL, in);

	/* Read the generation before the lookup: an entry cached from a
	 * table older than the generation it carries cannot exist. */
	gen = bpf_map_lookup_elem(&rt_gen, &zero);
	if (!gen)
		return rt_drop(ctx, md);
	g = gen->gen;
	daddr = ip->daddr;
	rc = gen->off ? NULL : bpf_map_lookup_elem(&rt_cache, &daddr);
	if (rc && rc->gen == g) {
		out = rc->port;
		nh = rc->nexthop;
	} else {
		struct rt_cache_val nv = {};

		key.prefixlen = 32;
		key.addr = daddr;
		rt = bpf_map_lookup_elem(&rt_routes, &key);
		if (!rt)
			return rt_punt(ctx, md, RT_PUNT_NO_ROUTE, in);
		out = rt->port;
		nh = rt->nexthop;
		nv.gen = g;
		nv.port = out;
		nv.nexthop = nh;
		if (!gen->off)
			bpf_map_update_elem(&rt_cache, &daddr, &nv, BPF_ANY);
	}
	if (!nh)
		nh = daddr;
	nb = bpf_map_lookup_elem(&rt_arp, &nh);
	if (!nb)
		return rt_punt(ctx, md, RT_PUNT_ARP_MISS, nh);
	op = bpf_map_lookup_elem(&rt_ports, &out);
	if (!op || !op->valid)
		return rt_drop(ctx, md);
	/* Too big for the out port: "fragmentation needed" with the MTU when
	 * the sender forbade fragmenting (path MTU discovery, RFC 1191);
	 * otherwise dropped and counted as a drop: the router does not
	 * fragment. */
	if (!rt_fits(ctx, bpf_ntohs(ip->tot_len), op->mtu, ip->ihl * 4, sizeof(*eth) + ip->ihl * 4, ip->protocol)) {
		if (ip->frag_off & bpf_htons(0x4000))
			return rt_punt(ctx, md, RT_PUNT_TOO_BIG, op->mtu);
		return rt_drop(ctx, md);
	}

	/* TTL is the high byte of the 16-bit word it shares with protocol. */
	{
		__be16 old = *(__be16 *)&ip->ttl;

		ip->ttl--;
		enf_csum_replace2(&ip->check, old, *(__be16 *)&ip->ttl);
	}
	__builtin_memcpy(eth->h_dest, nb->mac, ETH_ALEN);
	__builtin_memcpy(eth->h_source, op->mac, ETH_ALEN);
	return out;
}

static __always_inline int router(ctx_t *ctx, struct edgenf_md *md)
{
	int out = rt_decide(ctx, md);

	if (out < 0)
		return CTX_DROP;
	return enf_send(ctx, md, out);
}

EDGENF_CUBE(router)
