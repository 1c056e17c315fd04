// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* nat: transparent; attached to the outside-facing point (a router port or an
 * interface). Egress = inside -> outside: SNAT / masquerade, and the reverse of
 * DNAT and port forwarding. Ingress = outside -> inside: DNAT, port
 * forwarding, and the reverse of SNAT. IPv4 TCP, UDP and ICMP echo.
 * IPv6: NPTv6 (RFC 6296), stateless and checksum-neutral prefix translation.
 *
 * Every flow has two session entries, one per direction, created together by
 * the flow's first packet (which is translated at once): the originator's
 * ("orig", holding the connection state) and the reply's (pointing back at
 * it). The reply key is claimed with BPF_NOEXIST, which makes external port
 * allocation collision-free across CPUs. */
#include <edgenf/edgenf.h>
#include <edgenf/conntrack.h>

#define NAT_TRIES 24

/* Mirrored by nat.go. */
struct nat_cfg {
	__be32 masq_addr; /* 0: unknown / none */
	__u8 masq;        /* masquerade enabled */
	__u8 pad[3];
	__u16 port_lo; /* host order */
	__u16 port_hi;
	__u32 pad2;
	struct ct_timeouts to;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct nat_cfg);
} nat_cfg SEC(".maps");

struct nat_lpm_key {
	__u32 prefixlen;
	__be32 addr;
};

struct nat_snat_val {
	__be32 ext_lo; /* first external address of the pool */
	__u32 count;   /* pool size */
	__u32 rule;
	__u32 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(max_entries, 1024);
	__type(key, struct nat_lpm_key);
	__type(value, struct nat_snat_val);
	__uint(map_flags, BPF_F_NO_PREALLOC);
} nat_snat SEC(".maps");

struct nat_addr_val {
	__be32 addr;
	__u32 rule;
};

/* Static 1:1 NAT: external -> internal and back. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, __be32);
	__type(value, struct nat_addr_val);
} nat_dnat SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, __be32);
	__type(value, struct nat_addr_val);
} nat_dnat_rev SEC(".maps");

struct nat_pf_key {
	__be32 addr; /* 0: the masquerade address */
	__be16 port;
	__u8 proto;
	__u8 pad;
};

struct nat_pf_val {
	__be32 addr;
	__be16 port;
	__u16 pad;
	__u32 rule;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, struct nat_pf_key);
	__type(value, struct nat_pf_val);
} nat_pf SEC(".maps");

#define NAT_K_SNAT 1
#define NAT_K_MASQ 2
#define NAT_K_DNAT 3
#define NAT_K_PF 4
#define NAT_K_STATIC 5 /* outbound from a 1:1 NAT host */

#define NAT_F_ORIG 1

struct nat_sess {
	struct ct_conn conn;    /* valid in the orig entry */
	struct ct_tuple other;  /* key of the paired entry */
	__be32 new_addr;
	__be16 new_port;
	__u8 which; /* CT_SRC or CT_DST */
	__u8 flags; /* NAT_F_* */
	__u8 kind;  /* NAT_K_* */
	__u8 pad[3];
	__u32 rule;
	__u64 packets;
	__u64 bytes;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 131072);
	__type(key, struct ct_tuple);
	__type(value, struct nat_sess);
} nat_sess SEC(".maps");

enum nat_counter {
	NAT_C_XLATE,    /* packets translated */
	NAT_C_NEW_OUT,  /* sessions opened by inside hosts */
	NAT_C_NEW_IN,   /* sessions opened from outside (DNAT, port forwarding) */
	NAT_C_NOPORT,   /* dropped: no free external port */
	NAT_C_UNTOUCHED, /* passed without translation */
	NAT_C_UNXLATE,  /* dropped: would leave with an inside source, but cannot be translated */
	NAT_C_MAX,
};

ENF_COUNTERS(nat_counters, NAT_C_MAX);

/* Fragments after the first carry no ports: they are translated like their
 * datagram's first fragment, remembered by addresses, protocol, IPv4
 * identification and direction (as seen before translation) for as long as
 * Linux waits for a datagram's fragments. */
struct nat_frag_key {
	__be32 saddr;
	__be32 daddr;
	__be16 id;
	__u8 proto;
	__u8 dir;
};

struct nat_frag {
	__u64 seen;
	__be32 new_addr;
	__u8 which; /* CT_SRC or CT_DST */
	__u8 pad[3];
};

#define NAT_FRAG_TIMEOUT_NS (30ull * 1000000000ull) /* net.ipv4.ipfrag_time */

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, struct nat_frag_key);
	__type(value, struct nat_frag);
} nat_frags SEC(".maps");

static __always_inline void nat_frag_key(const struct ct_pkt *p, __u32 dir, struct nat_frag_key *k)
{
	k->saddr = p->t.saddr;
	k->daddr = p->t.daddr;
	k->id = p->ip_id;
	k->proto = p->t.proto;
	k->dir = dir;
}

static __always_inline __u32 nat_hash(const struct ct_tuple *t)
{
	__u32 h = t->saddr * 0x9e3779b1u;

	h ^= t->daddr * 0x85ebca6bu;
	h ^= (((__u32)t->sport << 16) | t->dport) * 0xc2b2ae35u;
	h ^= t->proto;
	h ^= h >> 15;
	h *= 0x2c1b3c6du;
	h ^= h >> 13;
	return h;
}

static __always_inline void nat_apply_stats(struct nat_sess *s, __u32 len)
{
	s->packets++;
	s->bytes += len;
}

/* Translate with an existing session entry; a first fragment leaves its
 * translation for the rest of its datagram. */
static __always_inline int nat_xlate(ctx_t *ctx, struct ct_pkt *p, struct nat_sess *s, __u32 dir)
{
	int r;

	if (p->frag) {
		struct nat_frag_key fk;
		struct nat_frag f = {.seen = bpf_ktime_get_ns(), .new_addr = s->new_addr, .which = s->which};

		nat_frag_key(p, dir, &fk);
		bpf_map_update_elem(&nat_frags, &fk, &f, BPF_ANY);
	}

	nat_apply_stats(s, ctx_len(ctx));
	/* ICMP echo: the identifier (in sport) changes whichever address does. */
	if (s->which == CT_SRC)
		r = ct_nat_rewrite(ctx, p, CT_SRC, p->t.saddr, s->new_addr, p->t.sport, s->new_port);
	else
		r = ct_nat_rewrite(ctx, p, CT_DST, p->t.daddr, s->new_addr,
				   p->t.proto == IPPROTO_ICMP ? p->t.sport : p->t.dport, s->new_port);
	if (r < 0)
		return ENF_VERDICT_DROP;
	enf_counter_inc(&nat_counters, NAT_C_XLATE);
	return ENF_VERDICT_PASS;
}

/* A flow's first packet: create both entries and translate. orig_which says
 * what this packet gets rewritten (CT_SRC outbound, CT_DST inbound). When
 * tries > 1 the new port is searched in [lo, hi] after trying port first. */
static __always_inline int nat_open(ctx_t *ctx, struct ct_pkt *p, __u32 dir, __u8 orig_which, __be32 new_addr,
				    __be16 port, __u16 lo, __u16 hi, int search, __u8 kind, __u32 rule, __u64 now)
{
	struct nat_sess o = {}, rv = {};
	struct ct_tuple ok = p->t, tr = p->t, rk;
	__u32 h = nat_hash(&p->t), n = (__u32)hi - lo + 1;
	__be16 chosen = 0;
	int found = 0, icmp = p->t.proto == IPPROTO_ICMP;

	ok.dir = dir;
	ok.pad = 0;
	for (int i = 0; i < NAT_TRIES; i++) {
		__be16 cand = port;

		if (i > 0) {
			if (!search)
				break;
			cand = bpf_htons((__u16)(lo + (h + (__u32)i * 7919u) % n));
		}
		if (orig_which == CT_SRC) {
			tr.saddr = new_addr;
			tr.sport = cand;
		} else {
			tr.daddr = new_addr;
			if (icmp)
				tr.sport = cand;
			else
				tr.dport = cand;
		}
		ct_reverse(&tr, &rk);
		rk.dir = !dir;
		rv.which = !orig_which;
		if (orig_which == CT_SRC) {
			rv.new_addr = p->t.saddr;
			rv.new_port = p->t.sport;
		} else {
			rv.new_addr = p->t.daddr;
			rv.new_port = icmp ? p->t.sport : p->t.dport;
		}
		rv.other = ok;
		rv.kind = kind;
		rv.rule = rule;
		if (bpf_map_update_elem(&nat_sess, &rk, &rv, search || orig_which == CT_SRC ? BPF_NOEXIST : BPF_ANY) == 0) {
			chosen = cand;
			found = 1;
			break;
		}
	}
	if (!found) {
		enf_counter_inc(&nat_counters, NAT_C_NOPORT);
		return ENF_VERDICT_DROP;
	}
	ct_init(&o.conn, p, now);
	if (p->t.proto == IPPROTO_TCP && !ct_can_start(p))
		o.conn.state = CT_TCP_ESTABLISHED; /* picked up mid-stream */
	o.other = rk;
	o.new_addr = new_addr;
	o.new_port = chosen;
	o.which = orig_which;
	o.flags = NAT_F_ORIG;
	o.kind = kind;
	o.rule = rule;
	if (bpf_map_update_elem(&nat_sess, &ok, &o, BPF_NOEXIST) != 0) {
		/* Another CPU opened the same flow first: use its mapping. */
		struct nat_sess *s;

		bpf_map_delete_elem(&nat_sess, &rk);
		s = bpf_map_lookup_elem(&nat_sess, &ok);
		if (!s)
			return ENF_VERDICT_DROP;
		return nat_xlate(ctx, p, s, dir);
	}
	enf_counter_inc(&nat_counters, dir == EDGENF_DIR_EGRESS ? NAT_C_NEW_OUT : NAT_C_NEW_IN);
	{
		struct nat_sess *s = bpf_map_lookup_elem(&nat_sess, &ok);

		if (!s)
			return ENF_VERDICT_DROP;
		return nat_xlate(ctx, p, s, dir);
	}
}

/* Would a packet from saddr leave translated (a dnat or snat rule covers
 * it, or masquerade is on and it is not already the outside address)? */
static __always_inline int nat_covers_out(struct nat_cfg *cfg, __be32 saddr)
{
	struct nat_lpm_key lk = {.prefixlen = 32, .addr = saddr};

	if (bpf_map_lookup_elem(&nat_dnat_rev, &saddr) || bpf_map_lookup_elem(&nat_snat, &lk))
		return 1;
	return cfg->masq && saddr != cfg->masq_addr;
}

/* A packet this NAT cannot translate (later fragment of an unknown
 * datagram, other protocol, unparsable frame, ...): leaving with a source
 * the NAT covers, it would leak an inside address; it is dropped and
 * counted. Anything else passes untouched. */
static __always_inline int nat_cannot(struct nat_cfg *cfg, __u32 dir, __be32 saddr)
{
	if (dir == EDGENF_DIR_EGRESS && nat_covers_out(cfg, saddr)) {
		enf_counter_inc(&nat_counters, NAT_C_UNXLATE);
		return ENF_VERDICT_DROP;
	}
	enf_counter_inc(&nat_counters, NAT_C_UNTOUCHED);
	return ENF_VERDICT_PASS;
}

/* A fragment after the first: translated as its datagram's first one. */
static __always_inline int nat_later_fragment(ctx_t *ctx, struct ct_pkt *p, struct nat_cfg *cfg, __u32 dir)
{
	struct nat_frag_key k;
	struct nat_frag *f;

	nat_frag_key(p, dir, &k);
	f = bpf_map_lookup_elem(&nat_frags, &k);
	if (!f || bpf_ktime_get_ns() - f->seen > NAT_FRAG_TIMEOUT_NS)
		return nat_cannot(cfg, dir, p->t.saddr);
	if (f->which == CT_SRC) {
		if (ct_nat_rewrite(ctx, p, CT_SRC, p->t.saddr, f->new_addr, 0, 0) < 0)
			return ENF_VERDICT_DROP;
	} else if (ct_nat_rewrite(ctx, p, CT_DST, p->t.daddr, f->new_addr, 0, 0) < 0) {
		return ENF_VERDICT_DROP;
	}
	enf_counter_inc(&nat_counters, NAT_C_XLATE);
	return ENF_VERDICT_PASS;
}

static __always_inline int nat_new_out(ctx_t *ctx, struct ct_pkt *p, struct nat_cfg *cfg, __u64 now)
{
	struct nat_addr_val *st;
	struct nat_snat_val *sn;
	struct nat_lpm_key lk = {.prefixlen = 32, .addr = p->t.saddr};
	__u16 lo = cfg->port_lo, hi = cfg->port_hi;

	if (p->t.proto == IPPROTO_ICMP && p->icmp_type != CT_ICMP_ECHO)
		return nat_cannot(cfg, EDGENF_DIR_EGRESS, p->t.saddr);
	if (lo == 0 || hi < lo) {
		lo = 1024;
		hi = 65535;
	}
	st = bpf_map_lookup_elem(&nat_dnat_rev, &p->t.saddr);
	if (st)
		return nat_open(ctx, p, EDGENF_DIR_EGRESS, CT_SRC, st->addr, p->t.sport, lo, hi, 1, NAT_K_STATIC,
				st->rule, now);
	sn = bpf_map_lookup_elem(&nat_snat, &lk);
	if (sn) {
		__u32 cnt = sn->count ? sn->count : 1;
		__be32 a = bpf_htonl(bpf_ntohl(sn->ext_lo) + nat_hash(&(struct ct_tuple){.saddr = p->t.saddr}) % cnt);

		return nat_open(ctx, p, EDGENF_DIR_EGRESS, CT_SRC, a, p->t.sport, lo, hi, 1, NAT_K_SNAT, sn->rule, now);
	}
	/* (the point's own flows too: tracked, their ports are not handed
	 * out to inside hosts) */
	if (cfg->masq && cfg->masq_addr)
		return nat_open(ctx, p, EDGENF_DIR_EGRESS, CT_SRC, cfg->masq_addr, p->t.sport, lo, hi, 1, NAT_K_MASQ,
				0, now);
	/* masquerade without an address yet: nothing can leave translated */
	return nat_cannot(cfg, EDGENF_DIR_EGRESS, p->t.saddr);
}

static __always_inline int nat_new_in(ctx_t *ctx, struct ct_pkt *p, struct nat_cfg *cfg, __u64 now)
{
	struct nat_pf_key k = {.addr = p->t.daddr, .port = p->t.dport, .proto = p->t.proto};
	struct nat_pf_val *pf = 0;
	struct nat_addr_val *d;

	if (p->t.proto == IPPROTO_TCP || p->t.proto == IPPROTO_UDP) {
		pf = bpf_map_lookup_elem(&nat_pf, &k);
		if (!pf && cfg->masq_addr && p->t.daddr == cfg->masq_addr) {
			k.addr = 0;
			pf = bpf_map_lookup_elem(&nat_pf, &k);
		}
	}
	if (pf)
		return nat_open(ctx, p, EDGENF_DIR_INGRESS, CT_DST, pf->addr, pf->port ? pf->port : p->t.dport, 0, 0,
				0, NAT_K_PF, pf->rule, now);
	if (p->t.proto == IPPROTO_ICMP && p->icmp_type != CT_ICMP_ECHO)
		goto untouched;
	d = bpf_map_lookup_elem(&nat_dnat, &p->t.daddr);
	if (d)
		return nat_open(ctx, p, EDGENF_DIR_INGRESS, CT_DST, d->addr,
				p->t.proto == IPPROTO_ICMP ? p->t.sport : p->t.dport, 0, 0, 0, NAT_K_DNAT,
				d->rule, now);
untouched:
	enf_counter_inc(&nat_counters, NAT_C_UNTOUCHED);
	return ENF_VERDICT_PASS;
}


/* ---- ICMP errors about translated flows ("related") ----------------------
 * An error (unreachable, time exceeded, parameter problem) quotes the packet
 * that caused it. It is translated like that flow's packets travelling the
 * same way: the outer address, and the quoted header's address and port,
 * with every checksum on the way (outer IPv4, ICMP, quoted IPv4 and L4). The
 * fields are rewritten with load/store helpers, so one code serves both hooks. */

static __always_inline long nat_store(ctx_t *ctx, __u32 off, void *from, __u32 len)
{
#if defined(EDGENF_HOOK_XDP)
	return bpf_xdp_store_bytes(ctx, off, from, len);
#else
	return bpf_skb_store_bytes(ctx, off, from, len, 0);
#endif
}

/* Change the 16-bit word at off to new and fix the checksums covering it:
 * ca and cb (0: none) and, when icmp is set, the ICMP checksum, which also
 * covers ca and cb (they sit in the quoted header). */
static __always_inline int nat_word(ctx_t *ctx, __u32 off, __be16 new, __u32 ca, __u32 cb, __u32 icmp)
{
	__sum16 c, cn, ic = 0;
	__be16 old;

	if (ctx_load_bytes(ctx, off, &old, 2) < 0)
		return -1;
	if (old == new)
		return 0;
	if (nat_store(ctx, off, &new, 2) < 0)
		return -1;
	if (icmp && ctx_load_bytes(ctx, icmp, &ic, 2) < 0)
		return -1;
	if (ca) {
		if (ctx_load_bytes(ctx, ca, &c, 2) < 0)
			return -1;
		cn = c;
		enf_csum_replace2(&cn, old, new);
		if (nat_store(ctx, ca, &cn, 2) < 0)
			return -1;
		if (icmp)
			enf_csum_replace2(&ic, c, cn);
	}
	if (cb) {
		if (ctx_load_bytes(ctx, cb, &c, 2) < 0)
			return -1;
		cn = c;
		enf_csum_replace2(&cn, old, new);
		if (nat_store(ctx, cb, &cn, 2) < 0)
			return -1;
		if (icmp)
			enf_csum_replace2(&ic, c, cn);
	}
	if (icmp) {
		enf_csum_replace2(&ic, old, new);
		if (nat_store(ctx, icmp, &ic, 2) < 0)
			return -1;
	}
	return 0;
}

static __always_inline int nat_icmp_err(ctx_t *ctx, struct ct_pkt *p, struct nat_cfg *cfg, __u32 dir)
{
	struct ct_tuple k = p->inner;
	struct nat_sess *s;
	__u32 o = p->l4_off, in = o + 8, inl4 = o + 28, icsum = o + 2, ipcs = in + 10, l3cs = p->l3_off + 10;
	__u32 l4cs = 0, pcs = 0, aoff, poff, outer;
	__u8 proto = p->inner.proto;
	__be32 na;
	__be16 np;

	k.dir = dir;
	k.pad = 0;
	s = bpf_map_lookup_elem(&nat_sess, &k);
	if (!s)
		return nat_cannot(cfg, dir, p->t.saddr);
	na = s->new_addr;
	np = s->new_port;
	if (s->which == CT_DST) {
		/* Inbound error about our outbound packet: its source was the
		 * external address:port, now the inside host's. */
		outer = p->l3_off + 16;
		aoff = in + 12;
		poff = proto == IPPROTO_ICMP ? inl4 + 4 : inl4;
	} else {
		/* Outbound error about an inbound packet of the flow: it leaves
		 * from the external address, quoting it as received. */
		outer = p->l3_off + 12;
		aoff = in + 16;
		poff = proto == IPPROTO_ICMP ? inl4 + 4 : inl4 + 2;
	}
	if (proto == IPPROTO_UDP) {
		__sum16 c = 0;

		if (ctx_load_bytes(ctx, inl4 + 6, &c, 2) == 0 && c)
			l4cs = inl4 + 6;
	} else if (proto == IPPROTO_TCP) {
		__sum16 c;

		if (ctx_load_bytes(ctx, inl4 + 16, &c, 2) == 0)
			l4cs = inl4 + 16;
	}
	/* The quoted port's checksum: TCP/UDP's own, or the quoted echo's. */
	pcs = l4cs;
	if (proto == IPPROTO_ICMP)
		pcs = inl4 + 2;
	if (nat_word(ctx, outer, (__be16)(na & 0xffff), l3cs, 0, 0) < 0 ||
	    nat_word(ctx, outer + 2, (__be16)(na >> 16), l3cs, 0, 0) < 0 ||
	    nat_word(ctx, aoff, (__be16)(na & 0xffff), ipcs, l4cs, icsum) < 0 ||
	    nat_word(ctx, aoff + 2, (__be16)(na >> 16), ipcs, l4cs, icsum) < 0 ||
	    nat_word(ctx, poff, np, pcs, 0, icsum) < 0)
		return ENF_VERDICT_DROP;
	enf_counter_inc(&nat_counters, NAT_C_XLATE);
	return ENF_VERDICT_PASS;
}

/* ---- NPTv6 (RFC 6296) ------------------------------------------------------
 * An inside prefix of up to 48 bits maps to an outside one of the same
 * length: egress rewrites source addresses inside → outside, ingress
 * destination addresses outside → inside. The 16-bit word right after the
 * first 48 bits (the subnet word) absorbs the one's complement difference
 * of the two prefixes, so the address's checksum contribution — and with it
 * every L4 checksum — is unchanged: no checksum is touched, at either hook,
 * even for CHECKSUM_PARTIAL packets. ICMPv6 errors carry the offending
 * packet's header: its address is mapped back the same way (again without
 * changing any checksum), so the inside host recognises its own packet. */

/* The data starts with the direction, so the prefix length is 32 + the
 * address prefix length. */
struct nat_npt_key {
	__u32 prefixlen;
	__u32 dir; /* EDGENF_DIR_EGRESS: inside prefixes; ingress: outside ones */
	__be32 addr[4];
};

struct nat_npt_val {
	__be16 pfx[3];  /* the new prefix, masked */
	__be16 mask[3]; /* prefix bits of the first three words */
	__u16 adj;      /* one's complement adjustment of word 3, host order */
	__u16 pad;
	__u32 rule;
};

/* Inside prefix → outside (egress), outside → inside (ingress). */
struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(max_entries, 2 * 1024);
	__type(key, struct nat_npt_key);
	__type(value, struct nat_npt_val);
	__uint(map_flags, BPF_F_NO_PREALLOC);
} nat_npt SEC(".maps");

#define NPT_NONE 0   /* no mapping covers the address */
#define NPT_DONE 1   /* translated */
#define NPT_CANNOT 2 /* its subnet word is 0xffff (RFC 6296 3.5): not mappable */

/* Translate the address at a (16 bytes, inside the packet) if a rule of
 * direction dir maps it. */
static __always_inline int npt_addr(__u32 dir, __be16 *a)
{
	struct nat_npt_key k = {.prefixlen = 32 + 128, .dir = dir};
	struct nat_npt_val *v;
	__u32 w;

	__builtin_memcpy(k.addr, a, 16);
	v = bpf_map_lookup_elem(&nat_npt, &k);
	if (!v)
		return NPT_NONE;
	if (a[3] == 0xffff)
		return NPT_CANNOT;
#pragma unroll
	for (int i = 0; i < 3; i++)
		a[i] = (a[i] & ~v->mask[i]) | v->pfx[i];
	w = bpf_ntohs(a[3]) + v->adj;
	w = (w & 0xffff) + (w >> 16);
	if (w == 0xffff)
		w = 0;
	a[3] = bpf_htons(w);
	return NPT_DONE;
}

static __always_inline int nat_ipv6(ctx_t *ctx, __u32 dir)
{
	struct enf_pkt pkt;
	struct enf_ip6_info x;
	struct ipv6hdr *ip6;
	int r;

	ct_pull(ctx, ENF_IP6_MAX_HDR);
	if (enf_parse(ctx, &pkt) < 0 || pkt.l3_proto != ETH_P_IPV6)
		return ENF_VERDICT_PASS;
	ip6 = enf_ptr(ctx, CT_OFF(pkt.l3_off));
	if (!enf_in_bounds(ctx, ip6, sizeof(*ip6)))
		return ENF_VERDICT_PASS;
	r = npt_addr(dir, dir == EDGENF_DIR_EGRESS ? (__be16 *)&ip6->saddr : (__be16 *)&ip6->daddr);
	if (r == NPT_CANNOT) {
		enf_counter_inc(&nat_counters, NAT_C_UNXLATE);
		return ENF_VERDICT_DROP;
	}
	/* An ICMPv6 error: the quoted packet went the other way. */
	if (enf_ip6_walk(ctx, pkt.l3_off, &x) == 0 && x.l4_off && x.proto == IPPROTO_ICMPV6) {
		struct icmphdr *ih = enf_ptr(ctx, x.l4_off & (ENF_IP6_MAX_HDR - 1));
		struct ipv6hdr *in = (void *)(ih + 1);

		if (enf_in_bounds(ctx, in, sizeof(*in)) && ih->type >= CT_ICMP6_DEST_UNREACH &&
		    ih->type <= CT_ICMP6_PARAMPROB && in->version == 6) {
			int ri = npt_addr(dir, dir == EDGENF_DIR_EGRESS ? (__be16 *)&in->daddr : (__be16 *)&in->saddr);

			if (ri == NPT_DONE && r == NPT_NONE)
				r = NPT_DONE;
		}
	}
	enf_counter_inc(&nat_counters, r == NPT_DONE ? NAT_C_XLATE : NAT_C_UNTOUCHED);
	return ENF_VERDICT_PASS;
}

static __always_inline int nat(ctx_t *ctx, struct edgenf_md *md, __u32 dir)
{
	struct ct_pkt p;
	struct ct_tuple key;
	struct nat_sess *s;
	struct nat_cfg *cfg;
	__u32 zero = 0;
	__u64 now;

	(void)md;
	cfg = bpf_map_lookup_elem(&nat_cfg, &zero);
	if (!cfg)
		return ENF_VERDICT_DROP;
	switch (ct_extract(ctx, &p)) {
	case CT_X_OTHER:
		return nat_ipv6(ctx, dir); /* ARP and the rest pass */
	case CT_X_BAD:
		/* Its source cannot be trusted (or read): nothing unparsable
		 * leaves this way. */
		if (dir == EDGENF_DIR_EGRESS) {
			enf_counter_inc(&nat_counters, NAT_C_UNXLATE);
			return ENF_VERDICT_DROP;
		}
		enf_counter_inc(&nat_counters, NAT_C_UNTOUCHED);
		return ENF_VERDICT_PASS;
	}
	if (!p.l4_off)
		return nat_later_fragment(ctx, &p, cfg, dir);
	if (p.t.proto != IPPROTO_TCP && p.t.proto != IPPROTO_UDP && p.t.proto != IPPROTO_ICMP)
		return nat_cannot(cfg, dir, p.t.saddr);
	if (p.t.proto == IPPROTO_ICMP && p.icmp_err)
		return nat_icmp_err(ctx, &p, cfg, dir);
	if (p.t.proto == IPPROTO_ICMP && p.icmp_type != CT_ICMP_ECHO && p.icmp_type != CT_ICMP_ECHOREPLY)
		return nat_cannot(cfg, dir, p.t.saddr);
	now = bpf_ktime_get_ns();
	key = p.t;
	key.dir = dir;
	key.pad = 0;
	s = bpf_map_lookup_elem(&nat_sess, &key);
	if (s) {
		struct ct_conn *c = &s->conn;
		struct nat_sess *o = s;
		int reply = 0;

		if (!(s->flags & NAT_F_ORIG)) {
			struct ct_tuple ok = s->other;

			o = bpf_map_lookup_elem(&nat_sess, &ok);
			if (!o || !(o->flags & NAT_F_ORIG)) {
				/* The pair was evicted: start over. */
				bpf_map_delete_elem(&nat_sess, &key);
				goto fresh;
			}
			c = &o->conn;
			reply = 1;
		}
		if (ct_expired(c, &cfg->to, now)) {
			struct ct_tuple ok = s->flags & NAT_F_ORIG ? key : s->other;
			struct ct_tuple rk = o->other;

			bpf_map_delete_elem(&nat_sess, &rk);
			bpf_map_delete_elem(&nat_sess, &ok);
			goto fresh;
		}
		ct_update(c, &p, reply, now);
		return nat_xlate(ctx, &p, s, dir);
	}
fresh:
	if (dir == EDGENF_DIR_EGRESS)
		return nat_new_out(ctx, &p, cfg, now);
	return nat_new_in(ctx, &p, cfg, now);
}

EDGENF_TRANSPARENT(nat)
