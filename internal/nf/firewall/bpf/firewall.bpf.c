// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* firewall: transparent; an ingress and an egress chain of rules over IPv4
 * and IPv6 (source/destination prefix, protocol, source/destination port
 * range or ICMP type, TCP flags, connection-tracking state), first match by
 * rule id wins, default policy per chain. IPv6's upper-layer header is found
 * through the extension header chain (a bounded walk, enf_ip6_walk); what
 * cannot be walked is judged by the policy.
 *
 * Classification is a linear bit-vector search (as in Polycube's
 * pcn-firewall): for each field the daemon precomputes, per distinct value
 * class, the bit vector of rules that accept it. A packet looks up one vector
 * per field, ANDs them, and the lowest set bit is the matching rule. Each
 * vector carries a 3-word summary (bit j: word j is non-zero) so the AND only
 * visits words that can match: the cost hardly grows with the rule count.
 *
 * The rule set is double-buffered: every table holds two generations and one
 * 4-byte version (fw_active; its low bit is the generation packets use). The
 * daemon writes the inactive generation and bumps the version: no packet
 * sees a half-updated set.
 *
 * Verdict cache: of the fields a rule matches, only the TCP flags and the
 * connection-tracking state vary between the packets of one connection in
 * one direction. Each connection remembers, per chain, the rule its last
 * packet matched with the version, direction, flags and state it was found
 * for; a packet that agrees on all of them skips the classifier (four hash
 * lookups, each a call and a return, which cost on this CPU). */
#include <edgenf/edgenf.h>
#include <edgenf/conntrack.h>

#define FW_MAX_RULES 10240

static __always_inline int fw_is_icmp(__u8 proto)
{
	return proto == IPPROTO_ICMP || proto == IPPROTO_ICMPV6;
}
#define FW_WORDS (FW_MAX_RULES / 64)
#define FW_SUM 3

/* Fields (dimensions) of the classifier. */
enum fw_dim {
	FW_D_SRC,
	FW_D_DST,
	FW_D_SPORT,
	FW_D_DPORT,
	FW_D_PROTO,
	FW_D_FLAGS,
	FW_D_STATE,
	FW_NDIMS,
};

struct fw_bv {
	__u64 sum[FW_SUM];
	__u64 w[FW_WORDS];
};

/* Per generation and chain: index gen * 2 + chain. Mirrored by firewall.go. */
struct fw_meta {
	__u32 nrules;
	__u32 nwords;  /* words holding rules */
	__u32 dims;    /* bit per fw_dim: the field is matched by some rule */
	__u8 policy;   /* FW_ACCEPT or FW_DROP */
	__u8 accept_established;
	__u8 valid;
	__u8 pad;
};

#define FW_ACCEPT 0
#define FW_DROP 1

struct fw_rule {
	__u8 action;
	__u8 log;
	__u16 pad;
	__u32 id;
};

struct fw_cfg {
	__u32 log_rate; /* logged packets per second, per CPU */
	__u32 pad;
	struct ct_timeouts to;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} fw_active SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct fw_cfg);
} fw_cfg SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 4);
	__type(key, __u32);
	__type(value, struct fw_meta);
} fw_meta SEC(".maps");

/* Source and destination prefixes: the data starts with gen, chain, dim and
 * the address family (4 or 6), so the prefix length is 32 + the address
 * prefix length and the families never match each other's prefixes. IPv4
 * addresses fill the first word of addr. */
struct fw_lpm_key {
	__u32 prefixlen;
	__u8 gen;
	__u8 chain;
	__u8 dim;
	__u8 family;
	__be32 addr[4];
};

struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(max_entries, 4 * 2 * (FW_MAX_RULES + 2));
	__type(key, struct fw_lpm_key);
	__type(value, __u32); /* class in fw_cls */
	__uint(map_flags, BPF_F_NO_PREALLOC);
} fw_lpm SEC(".maps");

/* Class vectors of every field. All vectors a packet uses come from this one
 * map, which keeps the verifier's state count small. */
struct fw_cls_key {
	__u8 gen;
	__u8 chain;
	__u8 dim;
	__u8 pad;
	__u32 cls;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4 * (6 * FW_MAX_RULES + 1024) + 1);
	__type(key, struct fw_cls_key);
	__type(value, struct fw_bv);
	__uint(map_flags, BPF_F_NO_PREALLOC);
} fw_cls SEC(".maps");

/* Port -> class: index ((gen * 2 + chain) * 2 + (dim - FW_D_SPORT)) * 65536 + port.
 * ICMP and ICMPv6 packets look their type up as the destination port (rules
 * with ports are TCP or UDP, rules with an ICMP type ICMP or ICMPv6: the
 * protocol field keeps them apart). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 8 * 65536);
	__type(key, __u32);
	__type(value, __u32);
} fw_portcls SEC(".maps");

/* TCP flags byte -> class: index (gen * 2 + chain) * 256 + flags. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 4 * 256);
	__type(key, __u32);
	__type(value, __u32);
} fw_flagcls SEC(".maps");

/* The vector with every bit set (the value of a field no rule matches on)
 * is fw_cls[{0, 0, FW_NDIMS, 0}]. */

/* Rules by bit index: (gen * 2 + chain) * FW_MAX_RULES + bit. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 4 * FW_MAX_RULES);
	__type(key, __u32);
	__type(value, struct fw_rule);
} fw_rules SEC(".maps");

/* Per-rule counters, same index; FW_MAX_RULES + (gen * 2 + chain) past the
 * rules: the default policy's; then per chain the accept-established
 * shortcut's, invalid packets accepted, frames that could not be parsed (the
 * policy judged them) and fragments dropped for hiding or rewriting their L4
 * header. */
#define FW_CNT_POLICY (4 * FW_MAX_RULES)
#define FW_CNT_ESTAB (4 * FW_MAX_RULES + 4)
#define FW_CNT_INVALID (4 * FW_MAX_RULES + 8)
#define FW_CNT_UNPARSED (4 * FW_MAX_RULES + 12)
#define FW_CNT_BADFRAG (4 * FW_MAX_RULES + 14)
ENF_TRAFFIC_COUNTERS(fw_counters, 4 * FW_MAX_RULES + 16);

/* Connections: normalised tuple (lower address/port first), either family. */
struct fw_conn {
	struct ct_conn c;
	__u8 orig_swapped; /* the originator's packets are the swapped ones */
	__u8 pad[7];
	__u64 vcache[2]; /* per chain: fw_vc_tag() | (bit + 1), 0: no rule */
};

/* What a cached verdict is valid for; the low 16 bits hold the result. The
 * byte that varies within a connection is the TCP flags, or the ICMP type
 * (rules match it; requests and errors share a tuple). */
static __always_inline __u64 fw_vc_tag(__u32 version, int reply, __u32 pstate, const struct ct_pkt46 *p)
{
	__u32 flags = p->t.proto == IPPROTO_TCP ? p->tcp_flags : fw_is_icmp(p->t.proto) ? p->icmp_type : 0;

	return (__u64)version << 32 | (__u64)(1 << 15 | reply << 12 | pstate << 8 | flags) << 16;
}

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 262144);
	__type(key, struct ct_tuple46);
	__type(value, struct fw_conn);
} fw_conns SEC(".maps");

/* Fragments after the first carry no ports: they take the verdict of their
 * datagram's first fragment, remembered by chain, addresses, protocol and
 * identification (IPv4's, or the IPv6 fragment header's) for as long as
 * Linux waits for a datagram's fragments. A later fragment whose first one
 * was not seen is judged by the policy. */
struct fw_frag_key {
	__be32 saddr[4];
	__be32 daddr[4];
	__be32 id;
	__u8 proto;
	__u8 chain;
	__u8 family;
	__u8 pad;
};

struct fw_frag {
	__u64 seen;   /* bpf_ktime_get_ns() of the first fragment */
	__u32 cnt;    /* the counter it was counted on */
	__u8 verdict; /* FW_ACCEPT or FW_DROP */
	__u8 pad[3];
};

#define FW_FRAG_TIMEOUT_NS (30ull * 1000000000ull) /* net.ipv4.ipfrag_time */

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, struct fw_frag_key);
	__type(value, struct fw_frag);
} fw_frags SEC(".maps");

static __always_inline void fw_frag_key(const struct ct_pkt46 *p, __u8 chain, struct fw_frag_key *k)
{
	__builtin_memcpy(k->saddr, p->t.saddr, 16);
	__builtin_memcpy(k->daddr, p->t.daddr, 16);
	k->id = p->frag_id;
	k->proto = p->t.proto;
	k->chain = chain;
	k->family = p->t.family;
	k->pad = 0;
}

/* The packet being judged, per CPU (a packet runs to completion on its CPU):
 * the stack is the classifier's. */
struct fw_scratch {
	struct ct_pkt46 p;
	struct ct_tuple46 key; /* p's connection, normalised */
	struct fw_conn upd;    /* its new state */
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct fw_scratch);
} fw_scratch SEC(".maps");

/* Log rate limiter (token bucket per CPU). */
struct fw_bucket {
	__u64 last;
	__u64 tokens; /* in 1/1e9 of a token */
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct fw_bucket);
} fw_logbucket SEC(".maps");

#define FW_LOG_ACCEPT 1
#define FW_LOG_DROP 2

/* Compare two addresses: -1, 0, 1. */
static __always_inline int fw_addr_cmp(const __be32 *a, const __be32 *b)
{
#pragma unroll
	for (int i = 0; i < 4; i++) {
		__u32 x = bpf_ntohl(a[i]), y = bpf_ntohl(b[i]);

		if (x != y)
			return x < y ? -1 : 1;
	}
	return 0;
}

/* Normalise t into k; returns 1 when it swapped the ends. */
static __always_inline int fw_norm(const struct ct_tuple46 *t, struct ct_tuple46 *k)
{
	int c = fw_addr_cmp(t->saddr, t->daddr), swap;

	if (t->proto == IPPROTO_ICMP || t->proto == IPPROTO_ICMPV6)
		swap = c > 0;
	else
		swap = c > 0 || (c == 0 && bpf_ntohs(t->sport) > bpf_ntohs(t->dport));
	if (swap)
		ct_reverse46(t, k);
	else
		*k = *t;
	k->pad = 0;
	return swap;
}


static __always_inline int fw_log(ctx_t *ctx, struct edgenf_md *md, struct fw_cfg *cfg, __u32 reason, __u32 arg)
{
	__u32 zero = 0;
	struct fw_bucket *b = bpf_map_lookup_elem(&fw_logbucket, &zero);
	__u64 now = bpf_ktime_get_ns(), rate = cfg->log_rate, cap;

	if (!b || !rate)
		return 0;
	cap = rate * 1000000000ull; /* a burst of one second */
	b->tokens += (now - b->last) * rate;
	if (b->tokens > cap)
		b->tokens = cap;
	b->last = now;
	if (b->tokens < 1000000000ull)
		return 0;
	b->tokens -= 1000000000ull;
	enf_report(ctx, md, enf_self(md), md->in_port, reason, arg, 128);
	return 1;
}

/* Lowest set bit of a non-zero word, without branches (de Bruijn). */
static const __u8 fw_debruijn[64] = {
	0,  1,  48, 2,  57, 49, 28, 3,  61, 58, 50, 42, 38, 29, 17, 4,  62, 55, 59, 36, 53, 51,
	43, 22, 45, 39, 33, 30, 24, 18, 12, 5,  63, 47, 56, 27, 60, 41, 37, 16, 54, 35, 52, 21,
	44, 32, 23, 11, 46, 26, 40, 15, 34, 20, 31, 10, 25, 14, 19, 9,  13, 8,  7,  6,
};

static __always_inline __u32 fw_ctz(__u64 x)
{
	return fw_debruijn[((x & -x) * 0x03f79d71b4cb0a89ull) >> 58];
}

static __always_inline struct fw_bv *fw_cls_bv(__u8 gen, __u8 chain, __u8 dim, __u32 cls)
{
	struct fw_cls_key k = {.gen = gen, .chain = chain, .dim = dim, .cls = cls};

	return bpf_map_lookup_elem(&fw_cls, &k);
}

/* The bit of the first matching rule, or -1. */
static __always_inline int fw_none(const struct fw_bv *v)
{
	return !(v->sum[0] | v->sum[1] | v->sum[2]);
}

/* A global function: the verifier checks it once, not once for every path
 * of the caller that reaches it (its loops would otherwise be explored for
 * each, which is most of the program's verification cost). */
__attribute__((noinline)) int fw_classify(const struct fw_meta *m, __u32 gen, __u32 chain, const struct ct_pkt46 *p,
					  __u32 pstate)
{
	__u32 base = (gen * 2 + chain);
	struct fw_bv *ones = fw_cls_bv(0, 0, FW_NDIMS, 0);
	struct fw_bv *vs, *vd, *vsp, *vdp, *vp, *vf, *vc, *a;
	__u32 dims;

	/* Every pointer starts as the all-ones vector (not NULL): pointers of
	 * one kind keep the verifier's state count small. */
	if (!ones || !m || !p || gen > 1 || chain > 1)
		return -1;
	dims = m->dims;
	vs = vd = vsp = vdp = vp = vf = vc = ones;

	/* Fields in order of typical selectivity; a field whose vector is
	 * empty ends the search at once (no rule can match). */
	if (dims & (1 << FW_D_DPORT)) {
		__u32 i = (base * 2 + 1) * 65536 + (fw_is_icmp(p->t.proto) ? p->icmp_type : bpf_ntohs(p->t.dport));
		__u32 *cls = bpf_map_lookup_elem(&fw_portcls, &i);

		if (!cls)
			return -1;
		vdp = fw_cls_bv(gen, chain, FW_D_DPORT, *cls);
		if (!vdp || fw_none(vdp))
			return -1;
	}
	if (dims & (1 << FW_D_DST)) {
		struct fw_lpm_key k = {.prefixlen = p->t.family == 6 ? 160 : 64,
				       .gen = gen, .chain = chain, .dim = FW_D_DST, .family = p->t.family};
		__u32 *cls;

		__builtin_memcpy(k.addr, p->t.daddr, 16);
		cls = bpf_map_lookup_elem(&fw_lpm, &k);

		if (!cls)
			return -1;
		vd = fw_cls_bv(gen, chain, FW_D_DST, *cls);
		if (!vd || fw_none(vd))
			return -1;
	}
	if (dims & (1 << FW_D_SRC)) {
		struct fw_lpm_key k = {.prefixlen = p->t.family == 6 ? 160 : 64,
				       .gen = gen, .chain = chain, .dim = FW_D_SRC, .family = p->t.family};
		__u32 *cls;

		__builtin_memcpy(k.addr, p->t.saddr, 16);
		cls = bpf_map_lookup_elem(&fw_lpm, &k);

		if (!cls)
			return -1;
		vs = fw_cls_bv(gen, chain, FW_D_SRC, *cls);
		if (!vs || fw_none(vs))
			return -1;
	}
	if (dims & (1 << FW_D_SPORT)) {
		__u32 i = (base * 2 + 0) * 65536 + bpf_ntohs(fw_is_icmp(p->t.proto) ? 0 : p->t.sport);
		__u32 *cls = bpf_map_lookup_elem(&fw_portcls, &i);

		if (!cls)
			return -1;
		vsp = fw_cls_bv(gen, chain, FW_D_SPORT, *cls);
		if (!vsp || fw_none(vsp))
			return -1;
	}
	if (dims & (1 << FW_D_PROTO)) {
		vp = fw_cls_bv(gen, chain, FW_D_PROTO, p->t.proto);
		if (!vp)
			vp = fw_cls_bv(gen, chain, FW_D_PROTO, 256);
		if (!vp || fw_none(vp))
			return -1;
	}
	if (dims & (1 << FW_D_FLAGS)) {
		__u32 i = base * 256 + (p->t.proto == IPPROTO_TCP ? p->tcp_flags : 0);
		__u32 *cls = bpf_map_lookup_elem(&fw_flagcls, &i);

		if (!cls)
			return -1;
		vf = fw_cls_bv(gen, chain, FW_D_FLAGS, *cls);
		if (!vf || fw_none(vf))
			return -1;
	}
	if (dims & (1 << FW_D_STATE)) {
		vc = fw_cls_bv(gen, chain, FW_D_STATE, pstate);
		if (!vc || fw_none(vc))
			return -1;
	}
	/* A field no rule uses needs no vector of its own: alias it to one
	 * that is looked at anyway (x & x == x), which saves memory loads. */
	a = vdp;
	if (a == ones)
		a = vd;
	if (a == ones)
		a = vs;
	if (a == ones)
		a = vp;
	if (vs == ones)
		vs = a;
	if (vd == ones)
		vd = a;
	if (vsp == ones)
		vsp = a;
	if (vdp == ones)
		vdp = a;
	if (vp == ones)
		vp = a;
	if (vf == ones)
		vf = a;
	if (vc == ones)
		vc = a;
	for (__u32 j = 0; j < FW_SUM; j++) {
		__u64 s = vs->sum[j] & vd->sum[j] & vsp->sum[j] & vdp->sum[j] & vp->sum[j] & vf->sum[j] & vc->sum[j];

		for (int k = 0; k < 64 && s; k++) {
			__u32 w = j * 64 + fw_ctz(s);
			__u64 x;

			s &= s - 1;
			if (w >= FW_WORDS)
				return -1;
			x = vs->w[w] & vd->w[w] & vsp->w[w] & vdp->w[w] & vp->w[w] & vf->w[w] & vc->w[w];
			if (x)
				return w * 64 + fw_ctz(x);
		}
	}
	return -1;
}

static __always_inline int fw_verdict(__u8 v)
{
	return v == FW_ACCEPT ? ENF_VERDICT_PASS : ENF_VERDICT_DROP;
}

/* A fragment after the first: its datagram's verdict. */
static __always_inline int fw_later_fragment(const struct ct_pkt46 *p, __u8 chain, const struct fw_meta *m, __u32 len)
{
	struct fw_frag_key k;
	struct fw_frag *f;

	fw_frag_key(p, chain, &k);
	f = bpf_map_lookup_elem(&fw_frags, &k);
	if (f && bpf_ktime_get_ns() - f->seen <= FW_FRAG_TIMEOUT_NS) {
		enf_traffic_add(&fw_counters, f->cnt, len);
		return fw_verdict(f->verdict);
	}
	enf_traffic_add(&fw_counters, FW_CNT_UNPARSED + chain, len);
	return fw_verdict(m->policy);
}

static __always_inline int firewall(ctx_t *ctx, struct edgenf_md *md, __u32 dir)
{
	__u32 zero = 0, len = ctx_len(ctx), mi, pstate, version, cnt;
	__u8 chain = dir & 1, gen;
	__u64 tag = 0;
	struct fw_conn *conn = 0;
	struct fw_scratch *sc;
	struct fw_meta *m;
	struct fw_cfg *cfg;
	struct ct_pkt46 *p;
	__u32 *active;
	int swapped, reply = 0, bit = -1, verdict, log = 0;
	__u64 now;

	active = bpf_map_lookup_elem(&fw_active, &zero);
	cfg = bpf_map_lookup_elem(&fw_cfg, &zero);
	if (!active || !cfg)
		return ENF_VERDICT_PASS;
	sc = bpf_map_lookup_elem(&fw_scratch, &zero);
	if (!sc)
		return ENF_VERDICT_DROP;
	p = &sc->p;
	version = *active;
	gen = version & 1;
	mi = gen * 2 + chain;
	m = bpf_map_lookup_elem(&fw_meta, &mi);
	if (!m || !m->valid)
		return ENF_VERDICT_PASS;
	/* IPv4 and IPv6 are classified; ARP and the rest pass, and so does
	 * IPv6 neighbour discovery (unfragmented, hop limit 255: RFC 4861
	 * 6.1, 7.1), IPv6's ARP, which never leaves its link. What cannot be
	 * parsed is not let through unjudged: the policy decides, and a
	 * fragment that hides or rewrites its datagram's L4 header is
	 * dropped. */
	switch (ct_extract46(ctx, p)) {
	case CT_X_OTHER:
		return ENF_VERDICT_PASS;
	case CT_X_IPV6:
		if (p->t.proto == IPPROTO_ICMPV6 && p->l4_off && !p->frag && p->hop_limit == 255 &&
		    p->icmp_type >= CT_ICMP6_ND_FIRST && p->icmp_type <= CT_ICMP6_ND_LAST)
			return ENF_VERDICT_PASS;
		break;
	case CT_X_BAD:
		if (p->frag) {
			/* the rest of its datagram goes the same way */
			struct fw_frag_key fk;
			struct fw_frag f = {.seen = bpf_ktime_get_ns(), .cnt = FW_CNT_BADFRAG + chain, .verdict = FW_DROP};

			fw_frag_key(p, chain, &fk);
			bpf_map_update_elem(&fw_frags, &fk, &f, BPF_ANY);
			enf_traffic_add(&fw_counters, FW_CNT_BADFRAG + chain, len);
			return ENF_VERDICT_DROP;
		}
		enf_traffic_add(&fw_counters, FW_CNT_UNPARSED + chain, len);
		return fw_verdict(m->policy);
	}
	if (p->frag && !p->l4_off)
		return fw_later_fragment(p, chain, m, len);

	now = bpf_ktime_get_ns();
	swapped = fw_norm(&p->t, &sc->key);
	conn = bpf_map_lookup_elem(&fw_conns, &sc->key);
	if (conn && ct_expired(&conn->c, &cfg->to, now))
		conn = 0;
	if (conn) {
		sc->upd = *conn;
		reply = swapped != sc->upd.orig_swapped;
		pstate = ct_update46(&sc->upd.c, p, reply, now);
	} else if (p->icmp_err) {
		struct ct_tuple46 ik;

		fw_norm(&p->inner, &ik);
		pstate = bpf_map_lookup_elem(&fw_conns, &ik) ? CT_PKT_RELATED : CT_PKT_INVALID;
	} else if (p->frag && !p->l4_off) {
		pstate = CT_PKT_INVALID; /* later fragments: no ports to match */
	} else {
		pstate = ct_can_start46(p) ? CT_PKT_NEW : CT_PKT_INVALID;
	}

	if (m->accept_established && (pstate == CT_PKT_ESTABLISHED || pstate == CT_PKT_RELATED)) {
		cnt = FW_CNT_ESTAB + chain;
		enf_traffic_add(&fw_counters, cnt, len);
		verdict = FW_ACCEPT;
		goto done;
	}
	tag = fw_vc_tag(version, reply, pstate, p);
	if (conn && (conn->vcache[chain] & ~0xffffull) == tag) {
		bit = (int)(conn->vcache[chain] & 0xffff) - 1;
	} else {
		bit = m->nrules ? fw_classify(m, gen, chain, p, pstate) : -1;
		if (conn)
			conn->vcache[chain] = tag | (__u16)(bit + 1);
	}
	if (bit >= 0 && bit < FW_MAX_RULES) {
		__u32 ri = mi * FW_MAX_RULES + bit;
		struct fw_rule *r = bpf_map_lookup_elem(&fw_rules, &ri);

		if (!r)
			return ENF_VERDICT_DROP;
		cnt = ri;
		enf_traffic_add(&fw_counters, cnt, len);
		verdict = r->action;
		if (r->log)
			log = fw_log(ctx, md, cfg, verdict == FW_ACCEPT ? FW_LOG_ACCEPT : FW_LOG_DROP,
				     (chain << 31) | (r->id & 0x7fffffff));
	} else {
		cnt = FW_CNT_POLICY + mi;
		enf_traffic_add(&fw_counters, cnt, len);
		verdict = m->policy;
	}
done:
	if (p->frag) {
		/* the first fragment: its verdict is its datagram's */
		struct fw_frag_key fk;
		struct fw_frag f = {.seen = now, .cnt = cnt, .verdict = verdict};

		fw_frag_key(p, chain, &fk);
		bpf_map_update_elem(&fw_frags, &fk, &f, BPF_ANY);
	}
	if (verdict != FW_ACCEPT)
		return ENF_VERDICT_DROP;
	if (pstate == CT_PKT_INVALID)
		enf_traffic_add(&fw_counters, FW_CNT_INVALID + chain, len);
	if (conn) {
		/* In place: no map update per packet. */
		if (pstate != CT_PKT_INVALID)
			conn->c = sc->upd.c;
	} else if (pstate == CT_PKT_NEW) {
		__builtin_memset(&sc->upd, 0, sizeof(sc->upd));
		ct_init_proto(&sc->upd.c, p->t.proto, now);
		sc->upd.orig_swapped = swapped;
		sc->upd.vcache[chain] = tag | (__u16)(bit + 1);
		bpf_map_update_elem(&fw_conns, &sc->key, &sc->upd, BPF_ANY);
	}
	(void)log;
	return ENF_VERDICT_PASS;
}

EDGENF_TRANSPARENT(firewall)
