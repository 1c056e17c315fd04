// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* nat64: stateful NAT64 (RFC 6146) with RFC 6052 address mapping and RFC 7915
 * header translation. A transparent cube attached to the point that faces
 * the IPv6-only hosts (a router's inside port, or an interface):
 *
 *   ingress (from the hosts): IPv6 to <prefix>::a.b.c.d  ->  IPv4 from a pool
 *     address to a.b.c.d, before anything routes it (like a translator in
 *     PREROUTING): the router or kernel after it forwards an IPv4 packet.
 *   egress (toward the hosts): IPv4 to a pool address, of a flow the hosts
 *     opened  ->  IPv6 from <prefix>::<source> to the host, with the host's
 *     MAC address (learnt when it opened the mapping) as destination.
 *
 * State, as RFC 6146 names it: the BIB (binding information base), one
 * mapping per (host address, port, protocol) <-> (pool address, port,
 * protocol), endpoint-independent (a host's port keeps its outside port for
 * every destination), held twice for the lookup of each direction; and the
 * session table, one entry per (outside port, remote address:port), which
 * lets in only replies to what the hosts opened (address-and-port dependent
 * filtering) and carries the idle timer. The pool port is claimed with one
 * BPF_NOEXIST insertion into the IPv4 side of the BIB: two CPUs never hand
 * out the same port.
 *
 * Translated: TCP, UDP, ICMP echo, and ICMP errors (destination unreachable,
 * packet too big / fragmentation needed, time exceeded) about a translated
 * flow, whose quoted packet is translated too. Refused (dropped, counted):
 * fragments, IPv6 extension headers, IPv4 options, IPv4 UDP without a
 * checksum, parameter problems, frames with a VLAN tag in the frame.
 *
 * Hot path per packet (n64_out, n64_in): direct packet access, inline
 * checksums, one binding lookup and one session lookup. */
#include <edgenf/edgenf.h>

#define N64_TRIES 24
#define N64_ETH 14

/* Mirrored by nat64.go. */
struct n64_cfg {
	__u8 pfx[16];  /* the RFC 6052 prefix, masked */
	__u8 plen;     /* 32, 40, 48, 56, 64 or 96 */
	__u8 idx[4];   /* where the IPv4 address's bytes sit in the IPv6 one */
	__u8 pad[3];
	__be32 pool_lo; /* first pool address */
	__u32 pool_n;   /* pool size */
	__u16 port_lo;  /* host order */
	__u16 port_hi;
	__u32 to_udp;   /* idle timeouts, seconds */
	__u32 to_tcp_est;
	__u32 to_tcp_trans;
	__u32 to_icmp;
	__u32 max_host; /* bindings per host /64; 0: no limit */
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct n64_cfg);
} n64_cfg SEC(".maps");

struct n64_key6 {
	__u8 addr[16];
	__be16 port; /* ICMP echo: the identifier */
	__u8 proto;  /* IPPROTO_TCP, _UDP or _ICMP (echo, both families) */
	__u8 pad;
};

struct n64_key4 {
	__be32 addr;
	__be16 port;
	__u8 proto;
	__u8 pad;
};

struct n64_bib6 {
	__be32 addr;
	__be16 port;
	__u16 pad;
};

struct n64_bib4 {
	__u8 addr[16];
	__be16 port;
	__u8 mac[6]; /* the host's, for frames toward it */
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, struct n64_key6);
	__type(value, struct n64_bib6);
} n64_bib6 SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, struct n64_key4);
	__type(value, struct n64_bib4);
} n64_bib4 SEC(".maps");

/* A session, seen from the IPv4 side. */
struct n64_skey {
	__be32 addr;   /* pool address */
	__be32 remote; /* the IPv4 server */
	__be16 port;   /* pool port */
	__be16 rport;  /* the server's port (ICMP: 0) */
	__u8 proto;
	__u8 pad[3];
};

#define N64_S_OUT 1    /* the host sent */
#define N64_S_IN 2     /* the server answered */
#define N64_S_CLOSING 4 /* TCP FIN or RST seen */

struct n64_sess {
	__u64 seen; /* ns, bpf_ktime_get_coarse_ns */
	__u64 packets;
	__u64 bytes;
	__u8 state; /* N64_S_* */
	__u8 pad[7];
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 131072);
	__type(key, struct n64_skey);
	__type(value, struct n64_sess);
} n64_sess SEC(".maps");

/* Bindings per host, by /64 (a host picks any address of its /64): the
 * first 8 bytes of the address → count. The fast path adds, the daemon's
 * sweep recounts from the BIB. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, __u64);
	__type(value, __u32);
} n64_hosts SEC(".maps");

enum n64_counter {
	N64_C_OUT,      /* IPv6 -> IPv4 translated */
	N64_C_IN,       /* IPv4 -> IPv6 translated */
	N64_C_ICMPERR,  /* ICMP errors translated (either way) */
	N64_C_NEWBIB,   /* mappings opened */
	N64_C_NEWSESS,  /* sessions opened */
	N64_C_NOPORT,   /* dropped: no free pool port */
	N64_C_FILTERED, /* dropped: IPv4 to the pool that no session lets in */
	N64_C_UNXLATE,  /* dropped: cannot be translated (fragment, extension header, ...) */
	N64_C_UNTOUCHED, /* passed: not for the prefix or the pool */
	N64_C_HOSTLIMIT, /* dropped: the host's /64 holds max_host bindings */
	N64_C_MAX,
};

ENF_COUNTERS(n64_counters, N64_C_MAX);

static __always_inline int n64_drop(__u32 c)
{
	enf_counter_inc(&n64_counters, c);
	return ENF_VERDICT_DROP;
}

static __always_inline long n64_store(ctx_t *ctx, __u32 off, void *from, __u32 len)
{
#if defined(EDGENF_HOOK_XDP)
	return bpf_xdp_store_bytes(ctx, off, from, len);
#else
	return bpf_skb_store_bytes(ctx, off, from, len, 0);
#endif
}

static __always_inline __u16 n64_fold(__u64 s)
{
	s = (s & 0xffffffff) + (s >> 32);
	s = (s & 0xffffffff) + (s >> 32);
	s = (s & 0xffff) + (s >> 16);
	s = (s & 0xffff) + (s >> 16);
	return (__u16)s;
}

/* One's complement sum of len bytes (a multiple of 4) at p (the stack). */
static __always_inline __u64 n64_sum(void *p, __u32 len)
{
	return (__u32)bpf_csum_diff(0, 0, p, len, 0);
}

/* ---- RFC 6052 addresses ---------------------------------------------- */

/* Is a (16 bytes) inside the prefix? For prefixes shorter than /64 the
 * u-octet (bits 64..71) must be zero. */
static __always_inline int n64_in_prefix(struct n64_cfg *cfg, const __u8 *a)
{
#pragma unroll
	for (int i = 0; i < 12; i++)
		if (i * 8 < cfg->plen && a[i] != cfg->pfx[i])
			return 0;
	return cfg->plen == 96 || a[8] == 0;
}

static __always_inline int n64_same6(const __u8 *a, const __u8 *b)
{
	__u32 d = 0;

#pragma unroll
	for (int i = 0; i < 16; i++)
		d |= a[i] ^ b[i];
	return d == 0;
}

static __always_inline __be32 n64_extract(struct n64_cfg *cfg, const __u8 *a)
{
	__u8 b[4] __attribute__((aligned(4)));

#pragma unroll
	for (int i = 0; i < 4; i++)
		b[i] = a[cfg->idx[i] & 15];
	return *(__be32 *)b;
}

static __always_inline void n64_embed(struct n64_cfg *cfg, __be32 v4, __u8 *a)
{
	__u8 *b = (__u8 *)&v4;

	__builtin_memcpy(a, cfg->pfx, 16);
#pragma unroll
	for (int i = 0; i < 4; i++)
		a[cfg->idx[i] & 15] = b[i];
}

/* An IPv4 destination no host may reach through the translator: this
 * network, loopback, multicast, reserved, broadcast, and the pool itself (no
 * hairpinning). */
static __always_inline int n64_martian(struct n64_cfg *cfg, __be32 a)
{
	__u32 h = bpf_ntohl(a);

	if ((h >> 24) == 0 || (h >> 24) == 127 || (h >> 29) == 7)
		return 1;
	return h - bpf_ntohl(cfg->pool_lo) < cfg->pool_n;
}

static __always_inline int n64_in_pool(struct n64_cfg *cfg, __be32 a)
{
	return bpf_ntohl(a) - bpf_ntohl(cfg->pool_lo) < cfg->pool_n;
}

/* ---- sessions ----------------------------------------------------------- */

static __always_inline __u64 n64_timeout(struct n64_cfg *cfg, __u8 proto, __u8 state)
{
	__u32 s = cfg->to_icmp;

	if (proto == IPPROTO_UDP)
		s = cfg->to_udp;
	else if (proto == IPPROTO_TCP)
		s = (state & N64_S_CLOSING) || !(state & N64_S_IN) ? cfg->to_tcp_trans : cfg->to_tcp_est;
	return (__u64)s * 1000000000ull;
}

/* Record a packet of a session (out: from the host). The TCP flags decide
 * the state: a session is established once both sides have sent, transitory
 * after a FIN or RST. Returns the session, NULL when there is none and the
 * packet may not open one. */
static __always_inline struct n64_sess *n64_touch(struct n64_cfg *cfg, struct n64_skey *k, int out, __u8 tcpflags,
						  __u32 len)
{
	__u64 now = bpf_ktime_get_coarse_ns(); /* no clock read per packet: a tick is plenty for aging */
	struct n64_sess *s = bpf_map_lookup_elem(&n64_sess, k);
	__u8 st;

	if (s && now - s->seen > n64_timeout(cfg, k->proto, s->state)) {
		bpf_map_delete_elem(&n64_sess, k);
		s = 0;
	}
	if (!s) {
		struct n64_sess n = {.seen = now};

		if (!out)
			return 0;
		/* RFC 6146 3.5.2.2: only a SYN opens a TCP session from inside. */
		if (k->proto == IPPROTO_TCP && !(tcpflags & 0x02))
			return 0;
		bpf_map_update_elem(&n64_sess, k, &n, BPF_ANY);
		enf_counter_inc(&n64_counters, N64_C_NEWSESS);
		s = bpf_map_lookup_elem(&n64_sess, k);
		if (!s)
			return 0;
	}
	/* Written only when they change: the clock moves once a tick, the
	 * state a few times per connection; a store per packet would keep the
	 * entry's cache line bouncing between the CPUs of a flow's packets. */
	if (s->seen != now)
		s->seen = now;
	st = s->state | (out ? N64_S_OUT : N64_S_IN);
	if (tcpflags & 0x05) /* FIN, RST */
		st |= N64_S_CLOSING;
	else if ((tcpflags & 0x02) && out)
		st &= ~N64_S_CLOSING; /* a new connection on the same ports */
	if (st != s->state)
		s->state = st;
	__sync_fetch_and_add(&s->packets, 1);
	__sync_fetch_and_add(&s->bytes, len);
	return s;
}

static __always_inline __u32 n64_hash6(const __u8 *a)
{
	__u32 h = 2166136261u;

#pragma unroll
	for (int i = 0; i < 16; i++)
		h = (h ^ a[i]) * 16777619u;
	return h;
}

/* A new mapping for (addr, port, proto), which has none (the caller looked):
 * a pool address picked by a hash of the host's address (a host keeps one
 * address, RFC 4787 REQ-2), its own port if free there, else one of
 * N64_TRIES hashed candidates in the port range. */
static __noinline struct n64_bib6 *n64_map_new(struct n64_cfg *cfg, struct n64_key6 *k6, const __u8 *mac)
{
	struct n64_bib4 v4 = {};
	struct n64_bib6 v6 = {};
	struct n64_key4 k4 = {.proto = k6->proto};
	__u32 h, lo = cfg->port_lo, hi = cfg->port_hi, n;
	__u16 p = bpf_ntohs(k6->port);
	int i;

	__u64 hk;
	__u32 *cnt;

	if (!cfg->pool_n || lo == 0 || hi < lo) {
		enf_counter_inc(&n64_counters, N64_C_NOPORT);
		return 0;
	}
	__builtin_memcpy(&hk, k6->addr, 8);
	cnt = bpf_map_lookup_elem(&n64_hosts, &hk);
	if (cnt && cfg->max_host && *cnt >= cfg->max_host) {
		/* One host must not take every port of the pool. */
		enf_counter_inc(&n64_counters, N64_C_HOSTLIMIT);
		return 0;
	}
	n = hi - lo + 1;
	h = n64_hash6(k6->addr);
	k4.addr = bpf_htonl(bpf_ntohl(cfg->pool_lo) + h % cfg->pool_n);
	__builtin_memcpy(v4.addr, k6->addr, 16);
	v4.port = k6->port;
	__builtin_memcpy(v4.mac, mac, 6);
	h ^= (__u32)p * 2654435761u;
	for (i = 0; i < N64_TRIES + 1; i++) {
		__u16 cand = p;

		if (i > 0 || p < lo || p > hi)
			cand = (__u16)(lo + (h + (__u32)i * 7919u) % n);
		k4.port = bpf_htons(cand);
		if (bpf_map_update_elem(&n64_bib4, &k4, &v4, BPF_NOEXIST) == 0)
			break;
	}
	if (i == N64_TRIES + 1) {
		enf_counter_inc(&n64_counters, N64_C_NOPORT);
		return 0;
	}
	v6.addr = k4.addr;
	v6.port = k4.port;
	if (bpf_map_update_elem(&n64_bib6, k6, &v6, BPF_NOEXIST) != 0) {
		/* Another CPU mapped the same host port first: use its mapping. */
		bpf_map_delete_elem(&n64_bib4, &k4);
		return bpf_map_lookup_elem(&n64_bib6, k6);
	}
	enf_counter_inc(&n64_counters, N64_C_NEWBIB);
	if (cnt) {
		__sync_fetch_and_add(cnt, 1);
	} else {
		__u32 one = 1;

		if (bpf_map_update_elem(&n64_hosts, &hk, &one, BPF_NOEXIST) != 0) {
			cnt = bpf_map_lookup_elem(&n64_hosts, &hk);
			if (cnt)
				__sync_fetch_and_add(cnt, 1);
		}
	}
	return bpf_map_lookup_elem(&n64_bib6, k6);
}

/* ---- frame resizing ---------------------------------------------------- */

/* Turn the frame's IPv6 header into room for an IPv4 one (20 bytes less) or
 * the reverse; the Ethernet header stays in front, rewritten by the caller. */
static __always_inline int n64_to4(ctx_t *ctx)
{
#if defined(EDGENF_HOOK_XDP)
	return bpf_xdp_adjust_head(ctx, 20);
#else
	return bpf_skb_change_proto(ctx, bpf_htons(ETH_P_IP), 0);
#endif
}

static __always_inline int n64_to6(ctx_t *ctx)
{
#if defined(EDGENF_HOOK_XDP)
	return bpf_xdp_adjust_head(ctx, -20);
#else
	return bpf_skb_change_proto(ctx, bpf_htons(ETH_P_IPV6), 0);
#endif
}

struct n64_pseudo6 {
	__u8 src[16];
	__u8 dst[16];
	__be32 len;
	__u8 zero[3];
	__u8 nexthdr;
};

static __always_inline __sum16 n64_ip4_csum(struct iphdr *ip)
{
	return ~n64_fold(n64_sum(ip, 20));
}

/* ---- IPv6 -> IPv4 (ingress) ------------------------------------------- */


/* The ICMPv6 -> ICMP type and code of an error (RFC 7915 5.2); the MTU of a
 * packet too big goes in mtu. Returns -1 for what is not translated. */
static __always_inline int n64_err6to4(__u8 type, __u8 code, __u8 *t4, __u8 *c4)
{
	switch (type) {
	case 1: /* destination unreachable */
		*t4 = 3;
		if (code == 1)
			*c4 = 10; /* administratively prohibited */
		else if (code == 4)
			*c4 = 3; /* port unreachable */
		else if (code <= 3)
			*c4 = 1; /* host unreachable */
		else
			return -1;
		return 0;
	case 2: /* packet too big */
		*t4 = 3;
		*c4 = 4;
		return 0;
	case 3: /* time exceeded */
		*t4 = 11;
		*c4 = code;
		return 0;
	case 4: /* parameter problem: next header unrecognised */
		if (code != 1)
			return -1;
		*t4 = 3;
		*c4 = 2;
		return 0;
	}
	return -1;
}

/* An ICMPv6 error from a host about a packet it received from an IPv4
 * server: rebuilt as an ICMP error from the host's pool address, quoting the
 * packet as the server sent it (IPv4 header and 8 bytes of its payload). */
static __noinline int n64_err_out(ctx_t *ctx, struct n64_cfg *cfg, __u8 *eth)
{
	struct ipv6hdr hdr6, *ip6 = &hdr6;
	struct {
		struct iphdr ip;
		__u8 type, code;
		__sum16 csum;
		__be32 rest;
		struct iphdr in;
		__u8 l4[8];
	} m = {};
	struct ipv6hdr in6;
	__u8 hdr[8] __attribute__((aligned(4))), l4[8] __attribute__((aligned(4)));
	struct n64_key6 k6 = {};
	struct n64_bib6 *b;
	struct n64_skey sk = {};
	__u32 off = N64_ETH + 40;
	__be32 remote;

	if (ctx_load_bytes(ctx, N64_ETH, ip6, 40) < 0 || ctx_load_bytes(ctx, off, hdr, 8) < 0 ||
	    ctx_load_bytes(ctx, off + 8, &in6, 40) < 0 ||
	    ctx_load_bytes(ctx, off + 48, l4, 8) < 0)
		return n64_drop(N64_C_UNXLATE);
	if (!n64_in_prefix(cfg, ip6->daddr.in6_u.u6_addr8)) {
		enf_counter_inc(&n64_counters, N64_C_UNTOUCHED);
		return ENF_VERDICT_PASS;
	}
	if (n64_err6to4(hdr[0], hdr[1], &m.type, &m.code) < 0 || in6.version != 6 ||
	    !n64_in_prefix(cfg, in6.saddr.in6_u.u6_addr8))
		return n64_drop(N64_C_UNXLATE);
	/* The quoted packet came from the server to the host. */
	__builtin_memcpy(k6.addr, in6.daddr.in6_u.u6_addr8, 16);
	if (!n64_same6(k6.addr, ip6->saddr.in6_u.u6_addr8))
		return n64_drop(N64_C_UNXLATE); /* about someone else's packet */
	remote = n64_extract(cfg, in6.saddr.in6_u.u6_addr8);
	if (in6.nexthdr == IPPROTO_TCP || in6.nexthdr == IPPROTO_UDP) {
		k6.proto = in6.nexthdr;
		k6.port = *(__be16 *)&l4[2];
		sk.rport = *(__be16 *)&l4[0];
	} else if (in6.nexthdr == IPPROTO_ICMPV6 && l4[0] == 129) {
		k6.proto = IPPROTO_ICMP;
		k6.port = *(__be16 *)&l4[4];
	} else {
		return n64_drop(N64_C_UNXLATE);
	}
	b = bpf_map_lookup_elem(&n64_bib6, &k6);
	if (!b)
		return n64_drop(N64_C_UNXLATE);
	sk.addr = b->addr;
	sk.port = b->port;
	sk.remote = remote;
	sk.proto = k6.proto;
	if (!bpf_map_lookup_elem(&n64_sess, &sk))
		return n64_drop(N64_C_UNXLATE);

	/* The quoted packet as the server sent it. */
	m.in.version = 4;
	m.in.ihl = 5;
	m.in.tos = (in6.priority << 4) | (in6.flow_lbl[0] >> 4);
	m.in.tot_len = bpf_htons(bpf_ntohs(in6.payload_len) + 20);
	m.in.frag_off = bpf_htons(0x4000);
	m.in.ttl = in6.hop_limit;
	m.in.protocol = k6.proto;
	m.in.saddr = remote;
	m.in.daddr = b->addr;
	m.in.check = n64_ip4_csum(&m.in);
	__builtin_memcpy(m.l4, l4, 8);
	if (k6.proto == IPPROTO_ICMP) {
		struct n64_pseudo6 ph = {};
		__u8 o[4] __attribute__((aligned(4))) = {129, l4[1]}, n[4] __attribute__((aligned(4))) = {0, l4[1]};
		__u32 d;
		__u16 c = *(__u16 *)&l4[2];

		__builtin_memcpy(ph.src, in6.saddr.in6_u.u6_addr8, 16);
		__builtin_memcpy(ph.dst, in6.daddr.in6_u.u6_addr8, 16);
		ph.len = bpf_htonl(bpf_ntohs(in6.payload_len));
		ph.nexthdr = IPPROTO_ICMPV6;
		d = bpf_csum_diff((__be32 *)&ph, 40, 0, 0, 0);
		d = bpf_csum_diff((__be32 *)o, 4, (__be32 *)n, 4, d);
		{
			__u32 po = *(__u16 *)&l4[4], pn = b->port;

			d = bpf_csum_diff(&po, 4, &pn, 4, d);
		}
		m.l4[0] = 0;
		*(__be16 *)&m.l4[4] = b->port;
		c = ~n64_fold((__u64)(__u16)~c + d);
		*(__u16 *)&m.l4[2] = c;
	} else {
		*(__be16 *)&m.l4[2] = b->port;
		if (k6.proto == IPPROTO_UDP && *(__u16 *)&l4[6]) {
			/* The quoted UDP checksum: addresses and port as sent. */
			__be32 na[2] = {remote, b->addr};
			__u32 d = bpf_csum_diff((__be32 *)in6.saddr.in6_u.u6_addr8, 32, na, 8, 0);
			__u32 po = *(__u16 *)&l4[2], pn = b->port;
			__u16 c = *(__u16 *)&l4[6];

			d = bpf_csum_diff(&po, 4, &pn, 4, d);
			c = ~n64_fold((__u64)(__u16)~c + d);
			*(__u16 *)&m.l4[6] = c ? c : 0xffff;
		}
	}
	if (hdr[0] == 2) {
		/* Packet too big: the IPv4 MTU is 20 bytes less (RFC 7915 5.2). */
		__u32 mtu = bpf_ntohl(*(__be32 *)&hdr[4]);

		mtu = mtu > 0xffff + 20 ? 0xffff : mtu < 88 ? 68 : mtu - 20;
		m.rest = bpf_htonl(mtu & 0xffff);
	} else if (hdr[0] == 4) {
		m.rest = 0;
	}
	m.csum = ~n64_fold(n64_sum(&m.type, 8 + 28));

	m.ip.version = 4;
	m.ip.ihl = 5;
	m.ip.tos = (ip6->priority << 4) | (ip6->flow_lbl[0] >> 4);
	m.ip.tot_len = bpf_htons(sizeof(m));
	m.ip.ttl = ip6->hop_limit;
	m.ip.protocol = IPPROTO_ICMP;
	m.ip.saddr = b->addr;
	m.ip.daddr = n64_extract(cfg, ip6->daddr.in6_u.u6_addr8);
	m.ip.check = n64_ip4_csum(&m.ip);

	eth[12] = 0x08;
	eth[13] = 0x00;
	if (n64_to4(ctx) < 0 || ctx_change_tail(ctx, N64_ETH + sizeof(m)) < 0 || n64_store(ctx, 0, eth, N64_ETH) < 0 ||
	    n64_store(ctx, N64_ETH, &m, sizeof(m)) < 0)
		return ENF_VERDICT_DROP;
	enf_counter_inc(&n64_counters, N64_C_ICMPERR);
	return ENF_VERDICT_PASS;
}

/* The fast paths below read and write the frame in place (direct packet
 * access) and sum checksums inline: per packet one binding lookup, one
 * session lookup, one head adjustment, no load/store or csum_diff helper at
 * XDP. The L4 header does not move: the 20 bytes IPv6 and IPv4 headers
 * differ by come off (or go on) in front of it. At TC the L4 checksum goes
 * through bpf_l4_csum_replace, which keeps CHECKSUM_PARTIAL skbs right. */

/* One's complement sum of n 32-bit words (folded by n64_fold). */
static __always_inline __u64 n64_words(const __be32 *w, int n)
{
	__u64 s = 0;

#pragma unroll
	for (int i = 0; i < n; i++)
		s += w[i];
	return s;
}

/* Make off bytes of the frame directly accessible: 0 or -1. */
static __always_inline int n64_reach(ctx_t *ctx, __u32 off)
{
	if (ctx_data(ctx) + off <= ctx_data_end(ctx))
		return 0;
	if (ctx_pull(ctx, off) < 0)
		return -1;
	return ctx_data(ctx) + off <= ctx_data_end(ctx) ? 0 : -1;
}

/* Write the translated checksum at c (offset off): old + the pseudo header's
 * change + the data's (16-bit one's complement values). udp: a result of 0
 * is written 0xffff. */
static __always_inline int n64_fix(ctx_t *ctx, __u32 off, __sum16 *c, __u16 pdiff, __u16 ddiff, int udp)
{
#if defined(EDGENF_HOOK_TC)
	__u64 f = udp ? BPF_F_MARK_MANGLED_0 : 0;

	(void)c;
	if (bpf_l4_csum_replace(ctx, off, 0, pdiff, f | BPF_F_PSEUDO_HDR) < 0)
		return -1;
	return bpf_l4_csum_replace(ctx, off, 0, ddiff, f) < 0 ? -1 : 0;
#else
	__u16 v = ~n64_fold((__u64)(__u16)~*c + pdiff + ddiff);

	(void)ctx;
	(void)off;
	*c = udp && !v ? 0xffff : v;
	return 0;
#endif
}

static __noinline int n64_out(ctx_t *ctx, struct n64_cfg *cfg)
{
	void *data, *end;
	struct ipv6hdr *ip6;
	struct iphdr ip = {};
	struct n64_key6 k6 = {};
	struct n64_skey sk = {};
	struct n64_bib6 *b;
	__u8 *l4, mac[12] __attribute__((aligned(4)));
	__u32 len = ctx_len(ctx), hl = 8, csoff;
	__u16 pdiff, ddiff, type = 0;
	__be16 oldw, oldp;
	__be32 dst;
	__u8 proto, flags = 0;

	if (n64_reach(ctx, N64_ETH + 40) < 0)
		return ENF_VERDICT_PASS;
	data = ctx_data(ctx);
	end = ctx_data_end(ctx);
	ip6 = data + N64_ETH;
	if (ip6 + 1 > (struct ipv6hdr *)end || ip6->version != 6)
		return ENF_VERDICT_PASS;
	if (!n64_in_prefix(cfg, ip6->daddr.in6_u.u6_addr8)) {
		enf_counter_inc(&n64_counters, N64_C_UNTOUCHED);
		return ENF_VERDICT_PASS;
	}
	proto = ip6->nexthdr;
	if (proto != IPPROTO_TCP && proto != IPPROTO_UDP && proto != IPPROTO_ICMPV6)
		return n64_drop(N64_C_UNXLATE); /* extension headers, fragments, other protocols */
	if (proto == IPPROTO_TCP)
		hl = 20;
	/* The IPv4 total length is made from the payload length: one that
	 * claims more than the frame holds, or less than the L4 header,
	 * would go on as a malformed IPv4 packet. */
	if (bpf_ntohs(ip6->payload_len) < hl || N64_ETH + 40 + bpf_ntohs(ip6->payload_len) > len)
		return n64_drop(N64_C_UNXLATE);
	/* (a hop limit of 1 goes on as a TTL of 1: the router after the
	 * translator answers time exceeded, which comes back translated) */
	if (n64_reach(ctx, N64_ETH + 40 + hl) < 0)
		return n64_drop(N64_C_UNXLATE);
	data = ctx_data(ctx);
	end = ctx_data_end(ctx);
	ip6 = data + N64_ETH;
	l4 = data + N64_ETH + 40;
	if (l4 + 20 > (__u8 *)end && (proto == IPPROTO_TCP || l4 + 8 > (__u8 *)end))
		return n64_drop(N64_C_UNXLATE);
	{
		/* (on the stack: a variable offset into the packet loses the
		 * verifier's bounds) */
		__u8 da[16] __attribute__((aligned(4)));

		__builtin_memcpy(da, &ip6->daddr, 16);
		dst = n64_extract(cfg, da);
	}
	if (n64_martian(cfg, dst) || ip6->saddr.in6_u.u6_addr8[0] == 0xff)
		return n64_drop(N64_C_UNXLATE);
	if (proto == IPPROTO_ICMPV6) {
		if (l4[0] != 128)
			return n64_drop(N64_C_UNXLATE);
		k6.proto = IPPROTO_ICMP;
		k6.port = *(__be16 *)&l4[4]; /* the identifier */
	} else {
		if (proto == IPPROTO_TCP) {
			if (l4 + 20 > (__u8 *)end)
				return n64_drop(N64_C_UNXLATE);
			flags = l4[13];
		}
		k6.proto = proto;
		k6.port = *(__be16 *)&l4[0];
		sk.rport = *(__be16 *)&l4[2];
	}
	__builtin_memcpy(k6.addr, &ip6->saddr, 16);
	__builtin_memcpy(mac, (__u32 *)data, 12);
	b = bpf_map_lookup_elem(&n64_bib6, &k6);
	if (!b) {
		/* TCP: only a SYN opens a mapping (RFC 6146 3.5.2.2). */
		if (proto == IPPROTO_TCP && !(flags & 0x02))
			return n64_drop(N64_C_FILTERED);
		b = n64_map_new(cfg, &k6, mac + 6);
		if (!b)
			return ENF_VERDICT_DROP; /* (counted: no port, or the host's limit) */
	}
	sk.addr = b->addr;
	sk.port = b->port;
	sk.remote = dst;
	sk.proto = k6.proto;
	if (!n64_touch(cfg, &sk, 1, flags, len))
		return n64_drop(N64_C_FILTERED); /* TCP without a SYN and no session */

	/* Still the IPv6 frame: the packet pointers are valid until the head
	 * moves. */
	data = ctx_data(ctx);
	end = ctx_data_end(ctx);
	ip6 = data + N64_ETH;
	l4 = data + N64_ETH + 40;
	if (l4 + 8 > (__u8 *)end)
		return ENF_VERDICT_DROP;
	ip.version = 4;
	ip.ihl = 5;
	ip.tos = (ip6->priority << 4) | (ip6->flow_lbl[0] >> 4);
	ip.tot_len = bpf_htons(bpf_ntohs(ip6->payload_len) + 20);
	ip.id = (__be16)bpf_get_prandom_u32();
	ip.frag_off = bpf_htons(0x4000); /* DF (RFC 7915 5.1) */
	ip.ttl = ip6->hop_limit;
	ip.protocol = k6.proto;
	ip.saddr = b->addr;
	ip.daddr = dst;
	ip.check = ~n64_fold(n64_words((__be32 *)&ip, 5));

	if (proto == IPPROTO_ICMPV6) {
		/* ICMPv6's checksum covers a pseudo header, ICMP's does not:
		 * take it out; type 128 becomes 8, the identifier the pool
		 * port. */
		__be32 ph[2] = {bpf_htonl(bpf_ntohs(ip6->payload_len)), bpf_htonl(IPPROTO_ICMPV6)};

		pdiff = ~n64_fold(n64_words(ip6->saddr.in6_u.u6_addr32, 8) + n64_words(ph, 2));
		oldw = *(__be16 *)&l4[0];
		oldp = *(__be16 *)&l4[4];
		type = 1;
		csoff = 2;
	} else {
		/* Only the addresses differ between the two pseudo headers. */
		pdiff = n64_fold((__u64)(__u16)~n64_fold(n64_words(ip6->saddr.in6_u.u6_addr32, 8)) + b->addr + dst);
		oldw = 0;
		oldp = *(__be16 *)&l4[0];
		csoff = proto == IPPROTO_TCP ? 16 : 6;
	}
	if (type) {
		__be16 neww = (oldw & bpf_htons(0x00ff)) | bpf_htons(8 << 8);

		ddiff = n64_fold((__u64)(__u16)~oldw + neww + (__u16)~oldp + b->port);
	} else {
		ddiff = n64_fold((__u64)(__u16)~oldp + b->port);
	}

	if (n64_to4(ctx) < 0 || n64_reach(ctx, N64_ETH + 20 + 8) < 0)
		return ENF_VERDICT_DROP;
	data = ctx_data(ctx);
	end = ctx_data_end(ctx);
	if (data + N64_ETH + 20 + 8 > end)
		return ENF_VERDICT_DROP;
	__builtin_memcpy((__u32 *)data, mac, 12);
	*(__be16 *)(data + 12) = bpf_htons(ETH_P_IP);
	*(struct iphdr *)(data + N64_ETH) = ip;
	l4 = data + N64_ETH + 20;
	if (type) {
		l4[0] = 8;
		*(__be16 *)&l4[4] = b->port;
	} else {
		*(__be16 *)&l4[0] = b->port;
	}
	if (proto == IPPROTO_TCP) {
		if (n64_reach(ctx, N64_ETH + 20 + 18) < 0)
			return ENF_VERDICT_DROP;
		data = ctx_data(ctx);
		end = ctx_data_end(ctx);
		if (data + N64_ETH + 20 + 18 > end)
			return ENF_VERDICT_DROP;
		if (n64_fix(ctx, N64_ETH + 20 + 16, data + N64_ETH + 20 + 16, pdiff, ddiff, 0) < 0)
			return ENF_VERDICT_DROP;
	} else if (n64_fix(ctx, N64_ETH + 20 + csoff, (__sum16 *)(l4 + (proto == IPPROTO_UDP ? 6 : 2)), pdiff, ddiff,
			   proto == IPPROTO_UDP) < 0) {
		return ENF_VERDICT_DROP;
	}
	enf_counter_inc(&n64_counters, N64_C_OUT);
	return ENF_VERDICT_PASS;
}

/* ---- IPv4 -> IPv6 (egress) ---------------------------------------------- */

/* The ICMP -> ICMPv6 type and code of an error (RFC 7915 4.2). */
static __always_inline int n64_err4to6(__u8 type, __u8 code, __u8 *t6, __u8 *c6)
{
	if (type == 11) {
		*t6 = 3;
		*c6 = code;
		return 0;
	}
	if (type != 3)
		return -1;
	*t6 = 1;
	switch (code) {
	case 0: case 1: case 5: case 6: case 7: case 8: case 11: case 12:
		*c6 = 0; /* no route */
		return 0;
	case 2: /* protocol unreachable */
		*t6 = 4;
		*c6 = 1;
		return 0;
	case 3:
		*c6 = 4; /* port unreachable */
		return 0;
	case 4: /* fragmentation needed */
		*t6 = 2;
		*c6 = 0;
		return 0;
	case 9: case 10: case 13: case 15:
		*c6 = 1; /* administratively prohibited */
		return 0;
	}
	return -1;
}

/* An ICMP error about a packet a host sent (translated) to an IPv4 server:
 * rebuilt as an ICMPv6 error to the host, from <prefix>::<sender>, quoting
 * the packet as the host sent it (IPv6 header and 8 bytes of payload). */
static __noinline int n64_err_in(ctx_t *ctx, struct n64_cfg *cfg, __u8 *eth)
{
	struct iphdr hdr4, *ip = &hdr4;
	struct {
		struct ipv6hdr ip6;
		__u8 type, code;
		__sum16 csum;
		__be32 rest;
		struct ipv6hdr in;
		__u8 l4[8];
	} m = {};
	struct n64_pseudo6 ph = {};
	struct iphdr in;
	__u8 hdr[8] __attribute__((aligned(4))), l4[8] __attribute__((aligned(4)));
	struct n64_key4 k4 = {};
	struct n64_bib4 *b;
	struct n64_skey sk = {};
	__u32 off = N64_ETH + 20;

	if (ctx_load_bytes(ctx, N64_ETH, ip, 20) < 0 || ctx_load_bytes(ctx, off, hdr, 8) < 0 ||
	    ctx_load_bytes(ctx, off + 8, &in, 20) < 0 ||
	    ctx_load_bytes(ctx, off + 28, l4, 8) < 0)
		return n64_drop(N64_C_UNXLATE);
	if (n64_err4to6(hdr[0], hdr[1], &m.type, &m.code) < 0 || in.version != 4 || in.ihl != 5 ||
	    in.saddr != ip->daddr)
		return n64_drop(N64_C_UNXLATE);
	k4.addr = in.saddr;
	k4.proto = in.protocol;
	if (in.protocol == IPPROTO_TCP || in.protocol == IPPROTO_UDP) {
		k4.port = *(__be16 *)&l4[0];
		sk.rport = *(__be16 *)&l4[2];
	} else if (in.protocol == IPPROTO_ICMP && l4[0] == 8) {
		k4.port = *(__be16 *)&l4[4];
	} else {
		return n64_drop(N64_C_UNXLATE);
	}
	b = bpf_map_lookup_elem(&n64_bib4, &k4);
	if (!b)
		return n64_drop(N64_C_FILTERED);
	sk.addr = k4.addr;
	sk.port = k4.port;
	sk.remote = in.daddr;
	sk.proto = k4.proto;
	if (!bpf_map_lookup_elem(&n64_sess, &sk))
		return n64_drop(N64_C_FILTERED);

	/* The quoted packet as the host sent it. */
	m.in.version = 6;
	m.in.priority = in.tos >> 4;
	m.in.flow_lbl[0] = in.tos << 4;
	m.in.payload_len = bpf_htons(bpf_ntohs(in.tot_len) - 20);
	m.in.nexthdr = in.protocol == IPPROTO_ICMP ? IPPROTO_ICMPV6 : in.protocol;
	m.in.hop_limit = in.ttl;
	__builtin_memcpy(m.in.saddr.in6_u.u6_addr8, b->addr, 16);
	n64_embed(cfg, in.daddr, m.in.daddr.in6_u.u6_addr8);
	__builtin_memcpy(m.l4, l4, 8);
	if (in.protocol == IPPROTO_ICMP) {
		__u8 o[4] __attribute__((aligned(4))) = {8, l4[1]}, n[4] __attribute__((aligned(4))) = {128, l4[1]};
		__u32 d;
		__u16 c = *(__u16 *)&l4[2];

		__builtin_memcpy(ph.src, m.in.saddr.in6_u.u6_addr8, 16);
		__builtin_memcpy(ph.dst, m.in.daddr.in6_u.u6_addr8, 16);
		ph.len = bpf_htonl(bpf_ntohs(m.in.payload_len));
		ph.nexthdr = IPPROTO_ICMPV6;
		d = bpf_csum_diff(0, 0, (__be32 *)&ph, 40, 0);
		d = bpf_csum_diff((__be32 *)o, 4, (__be32 *)n, 4, d);
		{
			__u32 po = *(__u16 *)&l4[4], pn = b->port;

			d = bpf_csum_diff(&po, 4, &pn, 4, d);
		}
		m.l4[0] = 128;
		*(__be16 *)&m.l4[4] = b->port;
		c = ~n64_fold((__u64)(__u16)~c + d);
		*(__u16 *)&m.l4[2] = c;
	} else {
		*(__be16 *)&m.l4[0] = b->port;
		if (in.protocol == IPPROTO_UDP && *(__u16 *)&l4[6]) {
			__be32 oa[2] = {in.saddr, in.daddr};
			__u32 d = bpf_csum_diff(oa, 8, (__be32 *)m.in.saddr.in6_u.u6_addr8, 32, 0);
			__u32 po = *(__u16 *)&l4[0], pn = b->port;
			__u16 c = *(__u16 *)&l4[6];

			d = bpf_csum_diff(&po, 4, &pn, 4, d);
			c = ~n64_fold((__u64)(__u16)~c + d);
			*(__u16 *)&m.l4[6] = c ? c : 0xffff;
		}
	}
	if (m.type == 2) {
		/* Fragmentation needed -> packet too big: the IPv6 MTU is 20
		 * bytes more, at least 1280 (RFC 7915 4.2). */
		__u32 mtu = bpf_ntohs(*(__be16 *)&hdr[6]) + 20;

		m.rest = bpf_htonl(mtu < 1280 ? 1280 : mtu);
	} else if (m.type == 4) {
		m.rest = bpf_htonl(6); /* pointer: the next header field */
	}

	m.ip6.version = 6;
	m.ip6.priority = ip->tos >> 4;
	m.ip6.flow_lbl[0] = ip->tos << 4;
	m.ip6.payload_len = bpf_htons(sizeof(m) - 40);
	m.ip6.nexthdr = IPPROTO_ICMPV6;
	m.ip6.hop_limit = ip->ttl;
	n64_embed(cfg, ip->saddr, m.ip6.saddr.in6_u.u6_addr8);
	__builtin_memcpy(m.ip6.daddr.in6_u.u6_addr8, b->addr, 16);
	__builtin_memcpy(ph.src, m.ip6.saddr.in6_u.u6_addr8, 16);
	__builtin_memcpy(ph.dst, m.ip6.daddr.in6_u.u6_addr8, 16);
	ph.len = bpf_htonl(sizeof(m) - 40);
	ph.nexthdr = IPPROTO_ICMPV6;
	m.csum = ~n64_fold(n64_sum(&ph, 40) + n64_sum(&m.type, 8 + 48));

	__builtin_memcpy(eth, b->mac, 6);
	eth[12] = 0x86;
	eth[13] = 0xdd;
	if (n64_to6(ctx) < 0 || ctx_change_tail(ctx, N64_ETH + sizeof(m)) < 0 || n64_store(ctx, 0, eth, N64_ETH) < 0 ||
	    n64_store(ctx, N64_ETH, &m, sizeof(m)) < 0)
		return ENF_VERDICT_DROP;
	enf_counter_inc(&n64_counters, N64_C_ICMPERR);
	return ENF_VERDICT_PASS;
}

static __noinline int n64_in(ctx_t *ctx, struct n64_cfg *cfg)
{
	void *data, *end;
	struct iphdr *ip;
	struct ipv6hdr ip6 = {};
	struct n64_key4 k4 = {};
	struct n64_bib4 *b;
	struct n64_skey sk = {};
	__u8 *l4, mac[12] __attribute__((aligned(4)));
	__u32 len = ctx_len(ctx), hl = 8;
	__u16 pdiff, ddiff;
	__be16 oldw = 0, oldp;
	__u8 proto, flags = 0;

	if (n64_reach(ctx, N64_ETH + 20) < 0)
		return ENF_VERDICT_PASS;
	data = ctx_data(ctx);
	end = ctx_data_end(ctx);
	ip = data + N64_ETH;
	if (ip + 1 > (struct iphdr *)end || ip->version != 4)
		return ENF_VERDICT_PASS;
	if (!n64_in_pool(cfg, ip->daddr)) {
		enf_counter_inc(&n64_counters, N64_C_UNTOUCHED);
		return ENF_VERDICT_PASS;
	}
	proto = ip->protocol;
	/* Options, fragments, other protocols: refused. */
	if (ip->ihl != 5 || (ip->frag_off & bpf_htons(0x3fff)) ||
	    (proto != IPPROTO_TCP && proto != IPPROTO_UDP && proto != IPPROTO_ICMP))
		return n64_drop(N64_C_UNXLATE);
	if (proto == IPPROTO_TCP)
		hl = 20;
	/* (the same for the total length, which the payload length is made
	 * from) */
	if (bpf_ntohs(ip->tot_len) < 20 + hl || N64_ETH + bpf_ntohs(ip->tot_len) > len)
		return n64_drop(N64_C_UNXLATE);
	if (n64_reach(ctx, N64_ETH + 20 + hl) < 0)
		return n64_drop(N64_C_UNXLATE);
	data = ctx_data(ctx);
	end = ctx_data_end(ctx);
	ip = data + N64_ETH;
	l4 = data + N64_ETH + 20;
	if (l4 + 8 > (__u8 *)end)
		return n64_drop(N64_C_UNXLATE);
	if (proto == IPPROTO_ICMP) {
		if (l4[0] != 0)
			return n64_drop(N64_C_UNXLATE);
		k4.port = *(__be16 *)&l4[4]; /* the identifier */
	} else {
		if (proto == IPPROTO_TCP) {
			if (l4 + 20 > (__u8 *)end)
				return n64_drop(N64_C_UNXLATE);
			flags = l4[13];
		}
		if (proto == IPPROTO_UDP && !*(__be16 *)&l4[6])
			return n64_drop(N64_C_UNXLATE); /* no checksum to translate */
		k4.port = *(__be16 *)&l4[2];
		sk.rport = *(__be16 *)&l4[0];
	}
	k4.addr = ip->daddr;
	k4.proto = proto;
	b = bpf_map_lookup_elem(&n64_bib4, &k4);
	if (!b)
		return n64_drop(N64_C_FILTERED);
	sk.addr = ip->daddr;
	sk.port = k4.port;
	sk.remote = ip->saddr;
	sk.proto = proto;
	if (!n64_touch(cfg, &sk, 0, flags, len))
		return n64_drop(N64_C_FILTERED);

	data = ctx_data(ctx);
	end = ctx_data_end(ctx);
	ip = data + N64_ETH;
	l4 = data + N64_ETH + 20;
	if (l4 + 8 > (__u8 *)end)
		return ENF_VERDICT_DROP;
	ip6.version = 6;
	ip6.priority = ip->tos >> 4;
	ip6.flow_lbl[0] = ip->tos << 4;
	ip6.payload_len = bpf_htons(bpf_ntohs(ip->tot_len) - 20);
	ip6.nexthdr = proto == IPPROTO_ICMP ? IPPROTO_ICMPV6 : proto;
	ip6.hop_limit = ip->ttl;
	n64_embed(cfg, ip->saddr, ip6.saddr.in6_u.u6_addr8);
	__builtin_memcpy(&ip6.daddr, b->addr, 16);
	/* The frame goes to the host that opened the mapping, from the port
	 * (the router's MAC the frame carries as source). */
	__builtin_memcpy(mac, b->mac, 6);
	__builtin_memcpy(mac + 6, (__u8 *)data + 6, 6);

	if (proto == IPPROTO_ICMP) {
		/* ICMPv6's checksum covers a pseudo header: add it; type 0
		 * becomes 129, the identifier the host's. */
		__be32 ph[2] = {bpf_htonl(bpf_ntohs(ip6.payload_len)), bpf_htonl(IPPROTO_ICMPV6)};
		__be16 neww;

		pdiff = n64_fold(n64_words(ip6.saddr.in6_u.u6_addr32, 8) + n64_words(ph, 2));
		oldw = *(__be16 *)&l4[0];
		oldp = *(__be16 *)&l4[4];
		neww = (oldw & bpf_htons(0x00ff)) | bpf_htons(129 << 8);
		ddiff = n64_fold((__u64)(__u16)~oldw + neww + (__u16)~oldp + b->port);
	} else {
		pdiff = n64_fold((__u64)(__u16)~n64_fold((__u64)ip->saddr + ip->daddr) +
				 n64_words(ip6.saddr.in6_u.u6_addr32, 8));
		oldp = *(__be16 *)&l4[2];
		ddiff = n64_fold((__u64)(__u16)~oldp + b->port);
	}

	if (n64_to6(ctx) < 0 || n64_reach(ctx, N64_ETH + 40 + 8) < 0)
		return ENF_VERDICT_DROP;
	data = ctx_data(ctx);
	end = ctx_data_end(ctx);
	if (data + N64_ETH + 40 + 8 > end)
		return ENF_VERDICT_DROP;
	__builtin_memcpy((__u32 *)data, mac, 12);
	*(__be16 *)(data + 12) = bpf_htons(ETH_P_IPV6);
	*(struct ipv6hdr *)(data + N64_ETH) = ip6;
	l4 = data + N64_ETH + 40;
	if (proto == IPPROTO_ICMP) {
		l4[0] = 129;
		*(__be16 *)&l4[4] = b->port;
	} else {
		*(__be16 *)&l4[2] = b->port;
	}
	if (proto == IPPROTO_TCP) {
		if (n64_reach(ctx, N64_ETH + 40 + 18) < 0)
			return ENF_VERDICT_DROP;
		data = ctx_data(ctx);
		end = ctx_data_end(ctx);
		if (data + N64_ETH + 40 + 18 > end)
			return ENF_VERDICT_DROP;
		if (n64_fix(ctx, N64_ETH + 40 + 16, data + N64_ETH + 40 + 16, pdiff, ddiff, 0) < 0)
			return ENF_VERDICT_DROP;
	} else if (n64_fix(ctx, N64_ETH + 40 + (proto == IPPROTO_UDP ? 6 : 2),
			   (__sum16 *)(l4 + (proto == IPPROTO_UDP ? 6 : 2)), pdiff, ddiff, proto == IPPROTO_UDP) < 0) {
		return ENF_VERDICT_DROP;
	}
	enf_counter_inc(&n64_counters, N64_C_IN);
	return ENF_VERDICT_PASS;
}

/* An ICMP error (ICMPv6 types 1-4 from the hosts, ICMP destination
 * unreachable or time exceeded to the pool) takes its own, larger path. */
static __always_inline int n64_is_err(ctx_t *ctx, struct n64_cfg *cfg, int v6)
{
	__u8 *d;

	if (n64_reach(ctx, N64_ETH + (v6 ? 41 : 21)) < 0)
		return 0;
	d = ctx_data(ctx);
	if (v6)
		return (void *)(d + N64_ETH + 41) <= ctx_data_end(ctx) && d[N64_ETH + 6] == IPPROTO_ICMPV6 &&
		       d[N64_ETH + 40] >= 1 && d[N64_ETH + 40] <= 4;
	return (void *)(d + N64_ETH + 21) <= ctx_data_end(ctx) && d[N64_ETH + 9] == IPPROTO_ICMP &&
	       n64_in_pool(cfg, *(__be32 *)(d + N64_ETH + 16)) && (d[N64_ETH + 20] == 3 || d[N64_ETH + 20] == 11);
}

static __always_inline int nat64(ctx_t *ctx, struct edgenf_md *md, __u32 dir)
{
	struct n64_cfg *cfg;
	__u8 eth[16] __attribute__((aligned(4)));
	__u32 zero = 0;
	__be16 type;

	(void)md;
	cfg = bpf_map_lookup_elem(&n64_cfg, &zero);
	if (!cfg || !cfg->plen)
		return ENF_VERDICT_PASS; /* not configured yet */
	if (n64_reach(ctx, N64_ETH) < 0)
		return ENF_VERDICT_PASS;
	if (ctx_data(ctx) + N64_ETH > ctx_data_end(ctx))
		return ENF_VERDICT_PASS;
	type = *(__be16 *)(ctx_data(ctx) + 12);
	if (type == bpf_htons(ETH_P_IPV6) && dir == EDGENF_DIR_INGRESS) {
		if (!n64_is_err(ctx, cfg, 1))
			return n64_out(ctx, cfg);
		if (ctx_load_bytes(ctx, 0, eth, N64_ETH) < 0)
			return ENF_VERDICT_PASS;
		return n64_err_out(ctx, cfg, eth);
	}
	if (type == bpf_htons(ETH_P_IP) && dir == EDGENF_DIR_EGRESS) {
		if (!n64_is_err(ctx, cfg, 0))
			return n64_in(ctx, cfg);
		if (ctx_load_bytes(ctx, 0, eth, N64_ETH) < 0)
			return ENF_VERDICT_PASS;
		return n64_err_in(ctx, cfg, eth);
	}
	if (type == bpf_htons(ETH_P_8021Q))
		enf_counter_inc(&n64_counters, N64_C_UNTOUCHED); /* VLAN-tagged in the frame: not ours */
	return ENF_VERDICT_PASS;
}

EDGENF_TRANSPARENT(nat64)
