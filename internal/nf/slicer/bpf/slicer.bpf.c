// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* slicer: the classifier at a tenant entry point. A frame that comes in on an
 * entry port is classified into a slice (one map lookup per rule kind in use,
 * first hit in a fixed precedence), policed by the slice's token buckets,
 * marked (md->tenant = slice id; at TC, skb->priority = the slice's HTB
 * class) and sent out of the slice's port, which leads into the slice's
 * chain. A frame that comes back from a slice's chain (in on a slice port)
 * is marked the same way and leaves by the slice's entry port. A slice
 * needs no port of its own: one with a chain entry (SL_F_CHAIN) is entered
 * by the hop the engine resolved into enf_chain_hops, and its chain comes
 * back on virtual port EDGENF_MAX_PORTS + its id (the engine plans the
 * entry port's hop so), so a slicer serves any number of slices up to
 * SL_MAX - 1. Layouts are mirrored in slicer.go. */
#include <edgenf/edgenf.h>

#define SL_MAX 1024 /* slice ids 1..SL_MAX-1; 0 means none */

/* Rule kinds, in the order they are tried (bit i of sl_cfg.kinds). */
enum {
	SL_K_TEID = 0,   /* GTP-U TEID range (outer UDP 2152) */
	SL_K_UE = 1,     /* UE address pool: inner source of a G-PDU */
	SL_K_VLAN = 2,   /* outer VLAN id */
	SL_K_L4 = 3,     /* L4 protocol and destination port (0: any) */
	SL_K_DST = 4,    /* destination prefix */
	SL_K_SRC = 5,    /* source prefix */
	SL_K_DSCP = 6,   /* DSCP */
	SL_K_PORT = 7,   /* entry port the frame came in on */
};

#define SL_F_VALID 1
#define SL_F_CHAIN 2 /* entered through enf_chain_hops, not a port */

/* Prefix rule fields, classified by exact-match hash lookups, one per
 * prefix length in use, longest first (sl_prefix). */
enum {
	SL_P_SRC = 0,
	SL_P_DST = 1,
	SL_P_UE = 2,
	SL_P_MAX = 3,
};

#define SL_LENS 8           /* prefix lengths a field's hash lookups can try */
#define SL_LENS_TRIE 0xff   /* sl_cfg.nlens: the field's LPM trie */
#define SL_LENS_INLINE 0xfe /* sl_cfg.nlens: the field's IPv4 list in sl_cfg */
#define SL_INLINE 4         /* IPv4 prefixes a field can list in sl_cfg */

/* An IPv4 prefix listed in sl_cfg: compared in place, no map lookup. */
struct sl_inline4 {
	__be32 addr; /* host bits clear */
	__be32 mask;
	__u32 id; /* 0: the end of the list */
};

struct sl_cfg {
	__u32 kinds;         /* bit per rule kind in use */
	__u32 default_slice; /* unmatched traffic; 0: drop */
	/* Per prefix field and family (0: IPv4, 1: IPv6): how many prefix
	 * lengths its rules use, and those lengths, longest first; or
	 * SL_LENS_TRIE: the field is looked up in its LPM trie; or (IPv4)
	 * SL_LENS_INLINE: its few prefixes are listed in inline4, longest
	 * first. */
	__u8 nlens[SL_P_MAX][2];
	__u8 pad[2];
	/* Bit per port that is an entry port (no slice's port): a frame in
	 * on one is classified without first asking sl_ports whether it
	 * comes back from a slice. Written last, with the rest of sl_cfg: a
	 * port whose bit is clear takes the sl_ports lookup, as every port
	 * did before, so a stale bit can only cost that lookup. */
	__u64 entry_ports;
	__u8 lens[SL_P_MAX][2][SL_LENS];
	struct sl_inline4 inline4[SL_P_MAX][SL_INLINE];
};

/* Mirrored by slicer.go (slice). */
struct sl_slice {
	__u32 flags;
	__u32 port;    /* the slicer port leading into the slice's chain
			* (without SL_F_CHAIN) */
	__u32 entry;   /* the port its return traffic leaves by */
	__u32 classid; /* skb->priority at TC; 0: leave it */
	__u32 vlan;    /* the slice's VLAN: popped on the way in, pushed on
			* the way back (its chain sees untagged frames) */
	__u32 lease_gen; /* changes with the policers: credit leased under
			  * another generation is void (sl_police) */
	/* GCRA policers: cost of one byte in 1/256 ns and of one packet in
	 * ns; tolerance (the burst) in ns. Cost 0: no limit. */
	__u64 byte_cost;
	__u64 byte_tau;
	__u64 pkt_cost;
	__u64 pkt_tau;
	/* EDT shaping (TC, with sch_fq on the egress): cost of one byte in
	 * 1/256 ns; frames further than the horizon ahead are dropped. */
	__u64 edt_cost;
	__u64 edt_horizon;
	/* Leases (sl_police): bytes and packets a CPU takes from the shared
	 * policers at once; 0 or 1: per frame. */
	__u64 byte_lease;
	__u64 pkt_lease;
};

/* Shared by all CPUs: the theoretical arrival time of each policer. */
struct sl_state {
	__u64 byte_tat;
	__u64 pkt_tat;
	__u64 edt_next; /* departure time of the slice's next frame */
};

/* Per CPU, per slice. Mirrored by slicer.go (counters). The credit a CPU
 * has leased from the slice's shared policers and not spent yet lives here
 * too, next to the counters a forwarded frame adds to, so that a frame
 * looks up one per-CPU value, not two. */
struct sl_counters {
	__u64 in_packets; /* classified into the slice at an entry port */
	__u64 in_bytes;
	__u64 lease_bytes;
	__u64 lease_packets;
	__u32 lease_gen; /* sl_slice.lease_gen the lease was taken under */
	__u32 pad;
	__u64 ret_packets; /* came back from its chain */
	__u64 ret_bytes;
	__u64 police_packets; /* dropped by its policer */
	__u64 police_bytes;
	__u64 edt_packets; /* dropped: beyond the EDT horizon */
};

/* Index 0 of sl_policy counts what matched no slice and was dropped; 1
 * frames dropped because they could not be parsed. */
struct sl_policy {
	__u64 packets;
	__u64 bytes;
};

struct sl_lpm_key {
	__u32 prefixlen; /* 32 (the family word) + prefix length */
	__u32 family;    /* 4 or 6 */
	__u8 addr[16];
};

struct sl_teid_key {
	__u32 prefixlen;
	__be32 teid;
};

struct sl_l4_key {
	__u8 proto;
	__u8 pad;
	__be16 port;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct sl_cfg);
} sl_config SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, SL_MAX);
	__type(key, __u32);
	__type(value, struct sl_slice);
} sl_slices SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, SL_MAX);
	__type(key, __u32);
	__type(value, struct sl_state);
} sl_state SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, SL_MAX);
	__type(key, __u32);
	__type(value, struct sl_counters);
} sl_counters SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, struct sl_policy);
} sl_policy SEC(".maps");

/* Slice of a port: entry-port rules (index: port), and the slice a slice
 * port belongs to (index EDGENF_MAX_PORTS + port). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 2 * EDGENF_MAX_PORTS);
	__type(key, __u32);
	__type(value, __u32);
} sl_ports SEC(".maps");

/* The hop into each SL_F_CHAIN slice's chain entry (a cube port, with the
 * transparent cubes attached there), by slice id: written by the engine
 * (cube.Type.SliceChains), like a port's hop in enf_ports. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, SL_MAX);
	__type(key, __u32);
	__type(value, struct edgenf_hop);
} enf_chain_hops SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, __u32);
} sl_vlan SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 64);
	__type(key, __u32);
	__type(value, __u32);
} sl_dscp SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, struct sl_l4_key);
	__type(value, __u32);
} sl_l4 SEC(".maps");

/* The prefix rules of every field by exact match: the field, the prefix
 * length and the address with its host bits cleared. Sized so that they
 * never fill before the tries (three fields of 16,384 prefixes). */
struct sl_pfx4_key {
	__u8 field;
	__u8 len;
	__u16 pad;
	__be32 addr;
};

struct sl_pfx6_key {
	__u8 field;
	__u8 len;
	__u16 pad;
	__be32 addr[4];
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 3 * 16384);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct sl_pfx4_key);
	__type(value, __u32);
} sl_pfx4 SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 3 * 16384);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct sl_pfx6_key);
	__type(value, __u32);
} sl_pfx6 SEC(".maps");

/* The same prefixes by longest-prefix match: the fallback for a field
 * whose rules use more prefix lengths than SL_LENS (or than the control
 * plane finds cheaper to try one by one). */
#define SL_LPM(name)                                   \
	struct {                                       \
		__uint(type, BPF_MAP_TYPE_LPM_TRIE);   \
		__uint(max_entries, 16384);            \
		__uint(map_flags, BPF_F_NO_PREALLOC);  \
		__type(key, struct sl_lpm_key);        \
		__type(value, __u32);                  \
	} name SEC(".maps")

SL_LPM(sl_dst);
SL_LPM(sl_src);
SL_LPM(sl_ue);

/* A TEID range is stored as the aligned blocks that cover it. */
struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(max_entries, 16384);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct sl_teid_key);
	__type(value, __u32);
} sl_teid SEC(".maps");

#define SL_GTPU_PORT 2152
#define SL_GTP_GPDU 255

/* What classification reads from a frame. */
struct sl_fields {
	__u32 has_ip;
	__u32 has_gtp;
	__u32 dscp;
	__u32 vlan;
	__u32 has_vlan;
	struct sl_l4_key l4;
	__be32 teid;
	struct sl_lpm_key src, dst, ue;
};

static __always_inline void sl_addr4(struct sl_lpm_key *k, __be32 a)
{
	k->prefixlen = 64;
	k->family = 4;
	__builtin_memcpy(k->addr, &a, 4);
}

static __always_inline void sl_addr6(struct sl_lpm_key *k, const void *a)
{
	k->prefixlen = 32 + 128;
	k->family = 6;
	__builtin_memcpy(k->addr, a, 16);
}

/* The inner source address of a G-PDU whose IP header starts at off. */
static __always_inline void sl_inner(ctx_t *ctx, __u32 off, struct sl_fields *f)
{
	__u8 b[24];

	if (ctx_load_bytes(ctx, off, b, 1))
		return;
	if ((b[0] >> 4) == 4) {
		if (ctx_load_bytes(ctx, off, b, 16))
			return;
		sl_addr4(&f->ue, *(__be32 *)&b[12]);
		return;
	}
	if ((b[0] >> 4) == 6 && !ctx_load_bytes(ctx, off + 8, b, 16))
		sl_addr6(&f->ue, b);
}

/* GTP-U over UDP port 2152: the TEID, and for a G-PDU the inner source. */
static __always_inline void sl_gtp(ctx_t *ctx, __u32 udp_off, struct sl_fields *f)
{
	struct {
		__u8 flags;
		__u8 type;
		__be16 len;
		__be32 teid;
	} g;
	__u32 off = udp_off + 8 + 8;

	if (ctx_load_bytes(ctx, udp_off + 8, &g, sizeof(g)))
		return;
	if ((g.flags >> 5) != 1) /* GTP version 1 */
		return;
	f->has_gtp = 1;
	f->teid = g.teid;
	if (g.type != SL_GTP_GPDU)
		return;
	if (g.flags & 0x07) {
		/* sequence number, N-PDU number, next extension type; then
		 * extension headers, each 4*len bytes, the last with next 0 */
		__u8 next, len;

		if (ctx_load_bytes(ctx, off + 3, &next, 1))
			return;
		off += 4;
		for (int i = 0; i < 4; i++) {
			if (!next)
				break;
			if (ctx_load_bytes(ctx, off, &len, 1) || !len)
				return;
			off += len * 4;
			if (ctx_load_bytes(ctx, off - 1, &next, 1))
				return;
		}
		if (next)
			return;
	}
	sl_inner(ctx, off, f);
}

/* Rule kinds that look at the IP header, and at the L4 header. */
#define SL_NEED_IP ((1 << SL_K_TEID) | (1 << SL_K_UE) | (1 << SL_K_L4) | (1 << SL_K_DST) | (1 << SL_K_SRC) | (1 << SL_K_DSCP))
#define SL_NEED_L4 ((1 << SL_K_TEID) | (1 << SL_K_UE) | (1 << SL_K_L4))

/* What classification reads from an untagged IPv4 frame (sl_plain4). */
struct sl_ip4 {
	__be32 saddr;
	__be32 daddr;
	__u32 dscp;
};

/* The commonest case, read in one step: rules on IP fields only, and an
 * untagged IPv4 frame (at TC also one whose tag the kernel took out).
 * The same checks as enf_parse's, without its walk over VLAN tags and with
 * no offsets kept for an L4 header nobody reads. Returns 1 when the frame
 * is such a frame (its fields in v), 0 when it is not (the caller parses
 * it with sl_fields), -1 when it claims to be one and cannot be parsed. The
 * values are read into v at once, so no packet pointer lives long enough
 * for clang to spill it as 32 bits at XDP. */
static __always_inline int sl_plain4(ctx_t *ctx, struct sl_ip4 *v)
{
	struct ethhdr *eth = ctx_data(ctx);
	struct iphdr *ip = (void *)(eth + 1);

	if (!enf_in_bounds(ctx, ip, sizeof(*ip)) || eth->h_proto != bpf_htons(ETH_P_IP))
		return 0;
#if defined(EDGENF_HOOK_TC)
	if (ctx->vlan_present)
		return 0;
#endif
	if (!enf_ip4_sane(ctx, ip, ctx_len(ctx) - sizeof(*eth)))
		return -1;
	v->saddr = ip->saddr;
	v->daddr = ip->daddr;
	v->dscp = ip->tos >> 2;
	return 1;
}

/* Reads what the rule kinds in use (kinds) need, and no more: each frame
 * is parsed (a frame that cannot be is dropped whatever the rules), but the
 * lookup keys of unused kinds are neither read nor built. Headers are read
 * in place (enf_parse has bounded them); only the rare GTP-U path copies
 * with ctx_load_bytes. Values are read into the stack at once, as in
 * sl_plain4. */
static __always_inline int sl_fields(ctx_t *ctx, struct sl_fields *f, __u32 kinds)
{
	struct enf_pkt pkt;
	__be16 *ports;

	f->has_ip = 0;
	f->has_gtp = 0;
	f->ue.family = 0;
	if (enf_parse(ctx, &pkt))
		return -1;
	f->vlan = pkt.vlan;
	f->has_vlan = pkt.vlan_depth > 0;
#if defined(EDGENF_HOOK_TC)
	/* the kernel took the outer tag out of the frame */
	if (ctx->vlan_present) {
		f->vlan = ctx->vlan_tci & 0x0fff;
		f->has_vlan = 1;
	}
#endif
	if (!(kinds & SL_NEED_IP))
		return 0;
	if (pkt.l3_proto == ETH_P_IP) {
		struct iphdr *ip = enf_ptr(ctx, pkt.l3_off);

		if (!enf_in_bounds(ctx, ip, sizeof(*ip)))
			return -1;
		f->has_ip = 1;
		f->dscp = ip->tos >> 2;
		if (kinds & (1 << SL_K_SRC))
			sl_addr4(&f->src, ip->saddr);
		if (kinds & (1 << SL_K_DST))
			sl_addr4(&f->dst, ip->daddr);
	} else if (pkt.l3_proto == ETH_P_IPV6) {
		struct ipv6hdr *ip6 = enf_ptr(ctx, pkt.l3_off);

		if (!enf_in_bounds(ctx, ip6, sizeof(*ip6)))
			return -1;
		f->has_ip = 1;
		f->dscp = ((bpf_ntohs(*(__be16 *)ip6) >> 4) & 0xff) >> 2;
		if (kinds & (1 << SL_K_SRC))
			sl_addr6(&f->src, &ip6->saddr);
		if (kinds & (1 << SL_K_DST))
			sl_addr6(&f->dst, &ip6->daddr);
	}
	if (!f->has_ip || !(kinds & SL_NEED_L4))
		return 0;
	f->l4.proto = pkt.l4_proto;
	f->l4.pad = 0;
	f->l4.port = 0;
	if (!pkt.l4_off || (pkt.l4_proto != IPPROTO_TCP && pkt.l4_proto != IPPROTO_UDP && pkt.l4_proto != IPPROTO_SCTP))
		return 0;
	ports = enf_ptr(ctx, pkt.l4_off);
	if (!enf_in_bounds(ctx, ports, 2 * sizeof(*ports)))
		return -1;
	f->l4.port = ports[1];
	if (pkt.l4_proto == IPPROTO_UDP && f->l4.port == bpf_htons(SL_GTPU_PORT) &&
	    (kinds & ((1 << SL_K_TEID) | (1 << SL_K_UE))))
		sl_gtp(ctx, pkt.l4_off, f);
	return 0;
}

static __always_inline __u32 sl_hit(__u32 *v)
{
	return v ? *v : 0;
}

/* The network-order mask of the first len bits of a 32-bit word (len
 * clamped to 0..32). */
static __always_inline __be32 sl_mask(int len)
{
	if (len <= 0)
		return 0;
	if (len >= 32)
		return 0xffffffff;
	return bpf_htonl(~0u << (32 - len));
}

/* The slice of the longest prefix of field that holds IPv4 address a, 0
 * if none, the way the control plane chose for the field as cheapest: for
 * up to SL_INLINE prefixes, a compare each against the list in sl_cfg; one
 * hash lookup per prefix length its rules use, longest first, so an
 * address that matches a rule's longest prefix costs one lookup whatever
 * the number of rules (an LPM trie walks a node per distinguishing bit);
 * or the trie. */
static __always_inline __u32 sl_prefix4(struct sl_cfg *cfg, __u32 field, __be32 a, void *trie)
{
	__u32 n = cfg->nlens[field][0], id;

	if (n == SL_LENS_INLINE) {
		for (__u32 i = 0; i < SL_INLINE; i++) {
			struct sl_inline4 *e = &cfg->inline4[field][i];

			if (!e->id)
				break;
			if ((a & e->mask) == e->addr)
				return e->id;
		}
		return 0;
	}
	if (n == SL_LENS_TRIE) {
		struct sl_lpm_key k = {};

		sl_addr4(&k, a);
		return sl_hit(bpf_map_lookup_elem(trie, &k));
	}
	struct sl_pfx4_key hk = {.field = field};

	for (__u32 i = 0; i < SL_LENS && i < n; i++) {
		hk.len = cfg->lens[field][0][i];
		hk.addr = a & sl_mask(hk.len);
		if ((id = sl_hit(bpf_map_lookup_elem(&sl_pfx4, &hk))))
			return id;
	}
	return 0;
}

/* The slice of the longest prefix of field that holds address k (built by
 * sl_fields), 0 if none: sl_prefix4 for IPv4; for IPv6 one hash lookup per
 * prefix length in use, or the trie, as the control plane chose. */
static __always_inline __u32 sl_prefix(struct sl_cfg *cfg, __u32 field, struct sl_lpm_key *k, void *trie)
{
	__u32 n, id;

	if (k->family != 6)
		return sl_prefix4(cfg, field, *(__be32 *)k->addr, trie);
	n = cfg->nlens[field][1];
	if (n == SL_LENS_TRIE)
		return sl_hit(bpf_map_lookup_elem(trie, k));
	struct sl_pfx6_key hk = {.field = field};
	__be32 a[4];

	__builtin_memcpy(a, k->addr, sizeof(a));
	for (__u32 i = 0; i < SL_LENS && i < n; i++) {
		int len = cfg->lens[field][1][i];

		hk.len = len;
		hk.addr[0] = a[0] & sl_mask(len);
		hk.addr[1] = a[1] & sl_mask(len - 32);
		hk.addr[2] = a[2] & sl_mask(len - 64);
		hk.addr[3] = a[3] & sl_mask(len - 96);
		if ((id = sl_hit(bpf_map_lookup_elem(&sl_pfx6, &hk))))
			return id;
	}
	return 0;
}

/* The last two rule kinds in precedence order: DSCP (IP frames only) and
 * the entry port the frame came in on. */
static __always_inline __u32 sl_classify_last(__u32 kinds, __u32 has_ip, __u32 dscp, __u32 in_port)
{
	__u32 id;

	if ((kinds & (1 << SL_K_DSCP)) && has_ip &&
	    (id = sl_hit(bpf_map_lookup_elem(&sl_dscp, &dscp))))
		return id;
	if (kinds & (1 << SL_K_PORT))
		return sl_hit(bpf_map_lookup_elem(&sl_ports, &in_port));
	return 0;
}

/* sl_classify for an untagged IPv4 frame read by sl_plain4: the kinds
 * before the destination prefix do not apply to it (no tag; no rules that
 * read beyond the IP header), the rest are tried in the same order. */
static __always_inline __u32 sl_classify4(struct sl_ip4 *v, struct sl_cfg *cfg, __u32 kinds, __u32 in_port)
{
	__u32 id;

	if ((kinds & (1 << SL_K_DST)) && (id = sl_prefix4(cfg, SL_P_DST, v->daddr, &sl_dst)))
		return id;
	if ((kinds & (1 << SL_K_SRC)) && (id = sl_prefix4(cfg, SL_P_SRC, v->saddr, &sl_src)))
		return id;
	return sl_classify_last(kinds, 1, v->dscp, in_port);
}

/* The slice of a frame that came in on entry port in_port, 0 if none. */
static __always_inline __u32 sl_classify(struct sl_fields *f, struct sl_cfg *cfg, __u32 in_port)
{
	__u32 kinds = cfg->kinds, id, k;

	if ((kinds & (1 << SL_K_TEID)) && f->has_gtp) {
		struct sl_teid_key tk = {.prefixlen = 32, .teid = f->teid};

		if ((id = sl_hit(bpf_map_lookup_elem(&sl_teid, &tk))))
			return id;
	}
	if ((kinds & (1 << SL_K_UE)) && f->ue.family &&
	    (id = sl_prefix(cfg, SL_P_UE, &f->ue, &sl_ue)))
		return id;
	if ((kinds & (1 << SL_K_VLAN)) && f->has_vlan) {
		k = f->vlan;
		if ((id = sl_hit(bpf_map_lookup_elem(&sl_vlan, &k))))
			return id;
	}
	if ((kinds & (1 << SL_K_L4)) && f->has_ip) {
		if ((id = sl_hit(bpf_map_lookup_elem(&sl_l4, &f->l4))))
			return id;
		f->l4.port = 0;
		if ((id = sl_hit(bpf_map_lookup_elem(&sl_l4, &f->l4))))
			return id;
	}
	if ((kinds & (1 << SL_K_DST)) && f->has_ip &&
	    (id = sl_prefix(cfg, SL_P_DST, &f->dst, &sl_dst)))
		return id;
	if ((kinds & (1 << SL_K_SRC)) && f->has_ip &&
	    (id = sl_prefix(cfg, SL_P_SRC, &f->src, &sl_src)))
		return id;
	return sl_classify_last(kinds, f->has_ip, f->dscp, in_port);
}

/* One GCRA step, lock-free: the frame conforms when the policer's
 * theoretical arrival time, advanced by the frame's cost, is no more than
 * tau (the burst) ahead of now: a token bucket of tau/cost frames. A compare-and-swap publishes the new time; a CPU that
 * loses the race retries against the winner's value. */
static __always_inline int sl_gcra(__u64 *tat, __u64 now, __u64 cost, __u64 tau)
{
	for (int i = 0; i < 4; i++) {
		__u64 old = *(volatile __u64 *)tat, t = old > now ? old : now;

		if (t + cost - now > tau)
			return 0;
		if (__sync_val_compare_and_swap(tat, old, t + cost) == old)
			return 1;
	}
	/* Four CPUs won in a row: count this one as conforming rather than
	 * spin; it over-admits by at most one frame per collision. */
	return 1;
}

/* Take credit for at least need units from a shared policer: lease units
 * at once when the policer has them, else just need (near the limit, frame
 * by frame as without leases). Returns the units granted, 0 if none. */
static __always_inline __u64 sl_take(__u64 *tat, __u64 now, __u64 need, __u64 lease, __u64 cost, __u64 tau, int bytes)
{
	__u64 c;

	if (lease > need) {
		c = lease * cost;
		if (bytes)
			c >>= 8;
		if (sl_gcra(tat, now, c, tau))
			return lease;
	}
	c = need * cost;
	if (bytes)
		c >>= 8;
	return sl_gcra(tat, now, c, tau) ? need : 0;
}

/* The slice's rate limits, as GCRA policers shared by all CPUs, spent
 * through per-CPU leases (in c, the slice's counters on this CPU): a CPU
 * takes a lease of bytes (and packets) from the shared policer in one
 * clock read and compare-and-swap, then admits frames against it with no
 * clock, no atomic and no shared cache line until it runs out. A lease is
 * paid for when taken, so what the slice sends never exceeds the policer's
 * rate and burst; credit left on a CPU that stops seeing the slice's
 * frames only delays (bounded by one lease a CPU, a small part of the
 * burst: slicer.go picks the sizes). Credit leased under other limits (an
 * older lease_gen) is void. */
static __always_inline int sl_police(struct sl_slice *s, struct sl_counters *c, __u32 id, __u32 len)
{
	struct sl_state *st;
	__u64 now, got;

	if (!s->pkt_cost && !s->byte_cost)
		return 1;
	if (!c)
		return 1;
	if (c->lease_gen != s->lease_gen) {
		c->lease_bytes = 0;
		c->lease_packets = 0;
		c->lease_gen = s->lease_gen;
	}
	if ((!s->pkt_cost || c->lease_packets) && (!s->byte_cost || c->lease_bytes >= len))
		goto spend;
	st = bpf_map_lookup_elem(&sl_state, &id);
	if (!st)
		return 1;
	now = bpf_ktime_get_ns();
	if (s->pkt_cost && !c->lease_packets) {
		got = sl_take(&st->pkt_tat, now, 1, s->pkt_lease, s->pkt_cost, s->pkt_tau, 0);
		if (!got)
			return 0;
		c->lease_packets += got;
	}
	if (s->byte_cost && c->lease_bytes < len) {
		/* what the lease holds counts towards this frame */
		got = sl_take(&st->byte_tat, now, len - c->lease_bytes, s->byte_lease, s->byte_cost, s->byte_tau, 1);
		if (!got)
			return 0; /* a packet credit taken stays for the next frame */
		c->lease_bytes += got;
	}
spend:
	if (s->pkt_cost)
		c->lease_packets--;
	if (s->byte_cost)
		c->lease_bytes -= len;
	return 1;
}

/* Take the outer VLAN tag off (TC: the kernel has moved it into the skb;
 * XDP: slide the MAC addresses over it). */
static __always_inline int sl_vlan_pop(ctx_t *ctx)
{
	__u8 hdr[14]; /* the MAC addresses, then the inner ethertype */

#if defined(EDGENF_HOOK_TC)
	if (ctx->vlan_present)
		return bpf_skb_vlan_pop(ctx);
	/* still in the frame (a test run; the kernel untags before TC) */
	if (ctx_load_bytes(ctx, 0, hdr, 12) || ctx_load_bytes(ctx, 16, &hdr[12], 2) ||
	    ctx_adjust_head(ctx, 4))
		return -1;
	return bpf_skb_store_bytes(ctx, 0, hdr, sizeof(hdr), 0);
#else
	if (ctx_load_bytes(ctx, 0, hdr, 12) || ctx_load_bytes(ctx, 16, &hdr[12], 2) ||
	    bpf_xdp_adjust_head(ctx, 4))
		return -1;
	return bpf_xdp_store_bytes(ctx, 0, hdr, sizeof(hdr));
#endif
}

static __always_inline int sl_vlan_push(ctx_t *ctx, __u32 vid)
{
#if defined(EDGENF_HOOK_TC)
	return bpf_skb_vlan_push(ctx, bpf_htons(ETH_P_8021Q), vid);
#else
	__u8 hdr[16];

	if (ctx_load_bytes(ctx, 0, hdr, 12) || bpf_xdp_adjust_head(ctx, -4))
		return -1;
	hdr[12] = 0x81;
	hdr[13] = 0x00;
	hdr[14] = (vid >> 8) & 0x0f;
	hdr[15] = vid & 0xff;
	return bpf_xdp_store_bytes(ctx, 0, hdr, sizeof(hdr));
#endif
}

#if defined(EDGENF_HOOK_TC)
/* Earliest Departure Time, as Cilium's Bandwidth Manager does it: the
 * frame's departure is the slice's next free time (or now), which then
 * moves on by the frame's transmission time at the slice's rate; sch_fq
 * holds each frame until its time. Lock-free like the policers. Returns 0
 * when the frame would leave further than the horizon ahead (drop it). */
static __always_inline int sl_edt(struct __sk_buff *ctx, struct sl_slice *s, __u32 id, __u32 len)
{
	struct sl_state *st = bpf_map_lookup_elem(&sl_state, &id);
	__u64 now, cost;

	if (!st)
		return 1;
	now = bpf_ktime_get_ns();
	cost = ((__u64)len * s->edt_cost) >> 8;
	for (int i = 0; i < 4; i++) {
		__u64 old = *(volatile __u64 *)&st->edt_next, t = old > now ? old : now;

		if (t - now > s->edt_horizon)
			return 0;
		if (__sync_val_compare_and_swap(&st->edt_next, old, t + cost) == old) {
			bpf_skb_set_tstamp(ctx, t, BPF_SKB_TSTAMP_DELIVERY_MONO);
			return 1;
		}
	}
	return 1;
}
#endif

static __always_inline void sl_mark(ctx_t *ctx, struct edgenf_md *md, struct sl_slice *s, __u32 id)
{
	md->tenant = id;
#if defined(EDGENF_HOOK_TC)
	if (s->classid)
		ctx->priority = s->classid;
#endif
	(void)ctx;
}

static __always_inline void sl_policy_drop(__u32 idx, __u32 len)
{
	struct sl_policy *p = bpf_map_lookup_elem(&sl_policy, &idx);

	if (p) {
		p->packets++;
		p->bytes += len;
	}
}

/* Into the chain of slice id: the hop the engine resolved to its entry. */
static __always_inline int sl_enter(ctx_t *ctx, struct edgenf_md *md, __u32 id)
{
	struct edgenf_hop *h = bpf_map_lookup_elem(&enf_chain_hops, &id);

	if (!h || h->kind != EDGENF_DST_CUBE)
		return enf_drop(ctx, md);
	return enf_take_hop(ctx, md, h);
}

static __always_inline int slicer(ctx_t *ctx, struct edgenf_md *md)
{
	__u32 zero = 0, in = md->in_port, len = ctx_len(ctx), id, back, chain = 0, kinds;
	struct sl_fields f;
	struct sl_ip4 v4;
	int plain;
	struct sl_counters *cnt;
	struct sl_slice *s;
	struct sl_cfg *cfg;

	cfg = bpf_map_lookup_elem(&sl_config, &zero);
	if (!cfg)
		return enf_drop(ctx, md);
	/* back from a slice's chain: on the slice's port, or on virtual port
	 * EDGENF_MAX_PORTS + id from a chain entry; out by its entry port */
	if (in < EDGENF_MAX_PORTS && (cfg->entry_ports & (1ULL << in))) {
		id = 0;
	} else if (in < EDGENF_MAX_PORTS) {
		back = in + EDGENF_MAX_PORTS;
		id = sl_hit(bpf_map_lookup_elem(&sl_ports, &back));
	} else if (in < EDGENF_MAX_PORTS + SL_MAX) {
		id = in - EDGENF_MAX_PORTS;
		chain = SL_F_CHAIN;
		if (!id)
			return enf_drop(ctx, md);
	} else {
		return enf_drop(ctx, md);
	}
	if (id) {
		s = bpf_map_lookup_elem(&sl_slices, &id);
		cnt = bpf_map_lookup_elem(&sl_counters, &id);
		/* a chain comes back only as the kind of slice it entered */
		if (!s || !(s->flags & SL_F_VALID) || (s->flags & SL_F_CHAIN) != chain)
			return enf_drop(ctx, md);
		if (s->vlan && sl_vlan_push(ctx, s->vlan))
			return enf_drop(ctx, md);
		if (cnt) {
			cnt->ret_packets++;
			cnt->ret_bytes += len;
		}
		sl_mark(ctx, md, s, id);
		return enf_send(ctx, md, s->entry);
	}
	kinds = cfg->kinds;
	plain = !(kinds & SL_NEED_L4) ? sl_plain4(ctx, &v4) : 0;
	if (plain < 0 || (!plain && sl_fields(ctx, &f, kinds))) {
		sl_policy_drop(1, len);
		return enf_drop(ctx, md);
	}
	id = plain ? sl_classify4(&v4, cfg, kinds, in) : sl_classify(&f, cfg, in);
	if (!id)
		id = cfg->default_slice;
	if (!id || id >= SL_MAX) {
		sl_policy_drop(0, len);
		return enf_drop(ctx, md);
	}
	s = bpf_map_lookup_elem(&sl_slices, &id);
	cnt = bpf_map_lookup_elem(&sl_counters, &id);
	if (!s || !(s->flags & SL_F_VALID)) {
		sl_policy_drop(0, len);
		return enf_drop(ctx, md);
	}
	if (!sl_police(s, cnt, id, len)) {
		if (cnt) {
			cnt->police_packets++;
			cnt->police_bytes += len;
		}
		return enf_drop(ctx, md);
	}
#if defined(EDGENF_HOOK_TC)
	if (s->edt_cost && !sl_edt(ctx, s, id, len)) {
		if (cnt)
			cnt->edt_packets++;
		return enf_drop(ctx, md);
	}
#endif
	if (s->vlan && !plain && f.has_vlan && f.vlan == s->vlan && sl_vlan_pop(ctx))
		return enf_drop(ctx, md);
	if (cnt) {
		cnt->in_packets++;
		cnt->in_bytes += len;
	}
	sl_mark(ctx, md, s, id);
	if (s->flags & SL_F_CHAIN)
		return sl_enter(ctx, md, id);
	return enf_send(ctx, md, s->port);
}

EDGENF_CUBE(slicer)
