// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* ddos: transparent DDoS mitigator.
 *
 * Per packet, in this order:
 *  1. source blacklist: the longest live entry that holds the source
 *     (IPv4: the table below; IPv6: exact hash, then LPM trie);
 *  2. sources blocked automatically (rate or port scan; LRU hash with a
 *     deadline); a blocked scanner's packets go to the mirror interface
 *     instead of being dropped, when one is configured;
 *  3. destination blacklist, likewise on the destination;
 *  4. detection: per-source packet rate over a window, and per-source
 *     distinct destination ports (2048-bit bitmap) and incremental port runs
 *     of probes (TCP SYN without ACK, UDP) over a window. Crossing a
 *     threshold blocks the source for a while and emits one event to the
 *     slow path.
 * Every blacklist entry counts the packets and bytes it dropped. Addresses are
 * kept as IPv6; IPv4 is mapped (::ffff:a.b.c.d). Entries expire at a
 * bpf_ktime_get_ns() deadline (0: never), checked here and cleaned by the
 * controller. Layouts are mirrored by ddos.go and table.go.
 *
 * IPv4 entries of each blacklist, exact addresses and prefixes alike, live in
 * an open-addressing table of two arrays the controller manages
 * (dd_{src,dst}_t4: slots keyed by (prefix length, masked address);
 * dd_{src,dst}_t4v: the entries), looked up with no call into the kernel.
 * Calls are what a lookup costs on this CPU: each call and return of a helper
 * is ~10 ns with the return-stack mitigations (retpolines, return thunks); a
 * hash lookup is four of them, an LPM trie lookup one plus its walk. The
 * settings list the prefix lengths in use (at most DD_TAB_LENS), longest
 * first; the fast path probes each with at most DD_TAB_PROBES inlined array
 * reads and takes the first live entry: longest-prefix match, and an expired
 * entry no longer matches (a shorter live one does). Entries that find no slot
 * within DD_TAB_PROBES of their home, or whose length finds no room in the
 * list, go to a fallback LPM trie of IPv4 prefixes (dd_{src,dst}_lpm4) whose
 * values carry their length, so that the table and the trie together still
 * give the longest match; it is looked up only when not empty. */
#include <edgenf/edgenf.h>

#define DD_MAX_ENTRIES (1 << 20)
#define DD_MAX_SOURCES 32768
#define DD_SCAN_BITS 2048
#define DD_SCAN_WORDS (DD_SCAN_BITS / 64)
#define DD_TAB_SLOTS (1 << 21)
#define DD_TAB_PROBES 8
#define DD_TAB_MULT 0x9E3779B1u
#define DD_TAB_LENS 16 /* distinct prefix lengths a table holds */
#define DD_TAB_IDX ((1U << 24) - 1)

/* dd_cfg.flags (EXACT, LPM: the IPv6 maps; LPM4: the IPv4 fallback tries) */
#define DD_F_SRC_EXACT (1 << 0)
#define DD_F_SRC_LPM (1 << 1)
#define DD_F_DST_EXACT (1 << 2)
#define DD_F_DST_LPM (1 << 3)
#define DD_F_RATE (1 << 4)
#define DD_F_SCAN (1 << 5)
#define DD_F_DIR_INGRESS (1 << 6)
#define DD_F_DIR_EGRESS (1 << 7)
#define DD_F_MIRROR (1 << 8)
#define DD_F_SRC_LPM4 (1 << 9)
#define DD_F_DST_LPM4 (1 << 10)

/* Block reasons, also the punt reasons of events. */
#define DD_REASON_SCAN 1
#define DD_REASON_RATE 2

/* dd_stats indexes */
enum {
	DD_ST_PASSED,
	DD_ST_DROP_SRC,     /* source blacklist */
	DD_ST_DROP_DST,     /* destination blacklist */
	DD_ST_DROP_BLOCKED, /* automatically blocked source (dropped or mirrored) */
	DD_ST_MIRRORED,
	DD_ST_EVENTS,
	DD_ST_BLOCK_SCAN,
	DD_ST_BLOCK_RATE,
	DD_ST_N,
};

struct dd_addr {
	__u32 a[4];
};

struct dd_lpm_key {
	__u32 prefixlen;
	__u32 a[4];
};

struct dd_entry {
	__u64 expires; /* ktime ns; 0 = never */
	__u64 packets;
	__u64 bytes;
};

/* The IPv4 fallback tries: the address in network order; the value knows
 * its prefix length (a trie lookup does not tell it). */
struct dd_lpm4_key {
	__u32 prefixlen;
	__u32 a;
};

struct dd_entry4 {
	struct dd_entry e;
	__u32 len;
	__u32 pad;
};

struct dd_block {
	__u64 until;
	__u64 since;
	__u64 packets;
	__u64 bytes;
	__u32 reason;
	__u32 count; /* distinct ports or packets in the window at detection */
};

struct dd_track {
	__u64 rate_start;
	__u64 scan_start;
	__u32 rate_pkts;
	__u32 distinct;
	__u16 last_port;
	__u16 seq_run;
	__u32 pad;
	__u64 bits[DD_SCAN_WORDS];
};

/* A prefix length in a table: tag = length + 1 (bits 24..31 of its slots),
 * and the seed of its slots' hash. */
struct dd_tab_len {
	__u32 tag;
	__u32 seed;
};

/* The lengths a table holds, longest first. */
struct dd_tab_cfg {
	__u32 n;
	__u32 pad;
	struct dd_tab_len lens[DD_TAB_LENS];
};

struct dd_cfg {
	__u32 flags;
	__u32 rate_threshold;
	__u64 rate_window_ns;
	__u64 rate_block_ns;
	__u32 scan_distinct;
	__u32 scan_sequential;
	__u64 scan_window_ns;
	__u64 scan_block_ns;
	__u32 mirror_ifindex;
	__u32 pad;
	struct dd_tab_cfg src4, dst4;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct dd_cfg);
} dd_cfg SEC(".maps");

ENF_COUNTERS(dd_stats, DD_ST_N);

/* Blacklist entries the controller adds one by one (allocated as they come). */
#define DD_LIST_MAP(name, kind, key_type, value_type)                                             \
	struct {                                                                                   \
		__uint(type, kind);                                                                \
		__uint(max_entries, DD_MAX_ENTRIES);                                               \
		__uint(map_flags, BPF_F_NO_PREALLOC);                                              \
		__type(key, key_type);                                                             \
		__type(value, value_type);                                                         \
	} name SEC(".maps")

DD_LIST_MAP(dd_src_exact, BPF_MAP_TYPE_HASH, struct dd_addr, struct dd_entry);
DD_LIST_MAP(dd_src_lpm, BPF_MAP_TYPE_LPM_TRIE, struct dd_lpm_key, struct dd_entry);
DD_LIST_MAP(dd_dst_exact, BPF_MAP_TYPE_HASH, struct dd_addr, struct dd_entry);
DD_LIST_MAP(dd_dst_lpm, BPF_MAP_TYPE_LPM_TRIE, struct dd_lpm_key, struct dd_entry);

/* The IPv4 tables, one per blacklist. A slot is 0 (empty, ends a probe
 * sequence), ~0 (deleted) or: the masked address (as loaded from the header:
 * network order bytes) in bits 32..63, the entry's tag (prefix length + 1) in
 * bits 24..31, and 1 + the index of its entry in the values in bits 0..23.
 * The controller writes an entry before the slot that points to it, and a
 * slot before the length that leads to it. */
#define DD_TAB_SLOTS_MAP(name)                                                                     \
	struct {                                                                                   \
		__uint(type, BPF_MAP_TYPE_ARRAY);                                                  \
		__uint(max_entries, DD_TAB_SLOTS);                                                 \
		__type(key, __u32);                                                                \
		__type(value, __u64);                                                              \
	} name SEC(".maps")

/* An entry of a table. Its counters take one atomic add per packet:
 * recent packs the packets (high 20 bits) and bytes (low 44) counted since the
 * last fold; the packet that brings recent's count to DD_REC_FOLD moves it
 * into packets and bytes. The counts are packets + (recent >> 44) and
 * bytes + (recent & DD_REC_BYTES). Between two folds recent holds at most
 * DD_REC_FOLD frames (of less than 2^24 bytes each, far more than any
 * frame): no carry into the packet count. */
struct dd_tab_entry {
	__u64 expires; /* ktime ns; 0 = never */
	__u64 recent;
	__u64 packets;
	__u64 bytes;
};

#define DD_REC_SHIFT 44
#define DD_REC_BYTES ((1ULL << DD_REC_SHIFT) - 1)
#define DD_REC_FOLD (1ULL << 19)

/* The entries; the last one holds the seed of the table's hash for the
 * controller (the fast path reads the per-length seeds in dd_cfg). */
#define DD_TAB_VALS_MAP(name)                                                                      \
	struct {                                                                                   \
		__uint(type, BPF_MAP_TYPE_ARRAY);                                                  \
		__uint(max_entries, DD_MAX_ENTRIES + 1);                                           \
		__type(key, __u32);                                                                \
		__type(value, struct dd_tab_entry);                                                \
	} name SEC(".maps")

DD_TAB_SLOTS_MAP(dd_src_t4);
DD_TAB_VALS_MAP(dd_src_t4v);
DD_LIST_MAP(dd_src_lpm4, BPF_MAP_TYPE_LPM_TRIE, struct dd_lpm4_key, struct dd_entry4);
DD_TAB_SLOTS_MAP(dd_dst_t4);
DD_TAB_VALS_MAP(dd_dst_t4v);
DD_LIST_MAP(dd_dst_lpm4, BPF_MAP_TYPE_LPM_TRIE, struct dd_lpm4_key, struct dd_entry4);

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, DD_MAX_SOURCES);
	__type(key, struct dd_addr);
	__type(value, struct dd_block);
} dd_blocked SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, DD_MAX_SOURCES);
	__type(key, struct dd_addr);
	__type(value, struct dd_track);
} dd_track SEC(".maps");

/* An all-zero dd_track to create entries from (too big for the stack). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct dd_track);
} dd_zero SEC(".maps");

/* The clock is read once per packet, and only when needed. */
static __always_inline __u64 dd_now(__u64 *now)
{
	if (!*now)
		*now = bpf_ktime_get_ns();
	return *now;
}

static __always_inline int dd_live(struct dd_entry *e, __u64 *now)
{
	return e->expires == 0 || dd_now(now) < e->expires;
}

static __always_inline void dd_hit(struct dd_entry *e, __u32 len)
{
	__sync_fetch_and_add(&e->packets, 1);
	__sync_fetch_and_add(&e->bytes, len);
}

/* The entry of a masked address m of length tag - 1 in a table, or NULL. Array
 * lookups are inlined by the verifier: no calls. */
static __always_inline struct dd_tab_entry *dd_tab_find(void *slots, void *vals, __u32 m, __u32 tag,
							 __u32 seed)
{
	__u32 h = ((m ^ seed) * DD_TAB_MULT) >> 11; /* 32 - log2(DD_TAB_SLOTS) */
	__u64 key = ((__u64)m << 8) | tag; /* the slot's bits 24..63 */

#pragma unroll
	for (int i = 0; i < DD_TAB_PROBES; i++) {
		__u32 k = (h + i) & (DD_TAB_SLOTS - 1);
		__u64 *s = bpf_map_lookup_elem(slots, &k);
		__u64 v;

		if (!s)
			return NULL;
		v = *(volatile __u64 *)s;
		if (!v)
			return NULL;
		if ((v >> 24) == key) {
			__u32 idx = (__u32)(v & DD_TAB_IDX) - 1;

			return bpf_map_lookup_elem(vals, &idx);
		}
	}
	return NULL;
}

/* Count a packet on a table entry (see struct dd_tab_entry). */
static __always_inline void dd_tab_hit(struct dd_tab_entry *e, __u32 len)
{
	__u64 inc = (1ULL << DD_REC_SHIFT) + len;
	__u64 now = __sync_fetch_and_add(&e->recent, inc) + inc;

	if ((now >> DD_REC_SHIFT) == DD_REC_FOLD) {
		__u64 b = now & DD_REC_BYTES;

		__sync_fetch_and_add(&e->packets, DD_REC_FOLD);
		__sync_fetch_and_add(&e->bytes, b);
		__sync_fetch_and_add(&e->recent, -((DD_REC_FOLD << DD_REC_SHIFT) | b));
	}
}

/* The live entry of table length i that holds a (as loaded), or NULL. */
static __always_inline struct dd_tab_entry *dd_tab_live(void *slots, void *vals, struct dd_tab_len *l, __u32 a,
							 __u64 *now)
{
	__u32 tag = l->tag;
	/* The mask of the length, as loaded (network order). */
	__u32 m = a & bpf_htonl((__u32)(0xffffffff00000000ULL >> ((tag - 1) & 63)));
	struct dd_tab_entry *e = dd_tab_find(slots, vals, m, tag, l->seed);

	if (e && (e->expires == 0 || dd_now(now) < e->expires))
		return e;
	return NULL;
}

/* The longest live entry of an IPv4 address a (as loaded) in a table and its
 * fallback trie, counted on; 1 when there is one. The table's lengths are
 * probed longest first; the trie's longest match (one call, only when the
 * trie is not empty) takes its place among them. */
static __always_inline int dd_listed4(void *slots, void *vals, void *lpm4, struct dd_tab_cfg *tc, __u32 use_lpm4,
				      __u32 a, __u64 *now, __u32 len)
{
	struct dd_tab_entry *e;
	struct dd_entry4 *f;
	__u32 ftag, n = tc->n;

	if (!use_lpm4) {
		/* The common case: the table alone. */
#pragma clang loop unroll(disable)
		for (__u32 i = 0; i < DD_TAB_LENS; i++) {
			if (i >= n)
				return 0;
			e = dd_tab_live(slots, vals, &tc->lens[i], a, now);
			if (e) {
				dd_tab_hit(e, len);
				return 1;
			}
		}
		return 0;
	}

	struct dd_lpm4_key k = {.prefixlen = 32, .a = a};

	f = bpf_map_lookup_elem(lpm4, &k);
	ftag = f ? f->len + 1 : 0;
#pragma clang loop unroll(disable)
	for (__u32 i = 0; i < DD_TAB_LENS; i++) {
		if (i >= n)
			break;
		if (f && tc->lens[i].tag <= ftag) {
			if (dd_live(&f->e, now)) {
				dd_hit(&f->e, len);
				return 1;
			}
			f = NULL;
		}
		e = dd_tab_live(slots, vals, &tc->lens[i], a, now);
		if (e) {
			dd_tab_hit(e, len);
			return 1;
		}
	}
	if (f && dd_live(&f->e, now)) {
		dd_hit(&f->e, len);
		return 1;
	}
	return 0;
}

/* Exact then prefix lookup of one IPv6 address; 1 when a live entry matched. */
static __always_inline int dd_listed(void *exact, void *lpm, __u32 flags, __u32 fexact, __u32 flpm,
				     struct dd_addr *a, __u64 *now, __u32 len)
{
	struct dd_entry *e;

	if (flags & fexact) {
		e = bpf_map_lookup_elem(exact, a);
		if (e && dd_live(e, now)) {
			dd_hit(e, len);
			return 1;
		}
	}
	if (flags & flpm) {
		struct dd_lpm_key k = {.prefixlen = 128};

		__builtin_memcpy(k.a, a->a, sizeof(k.a));
		e = bpf_map_lookup_elem(lpm, &k);
		if (e && dd_live(e, now)) {
			dd_hit(e, len);
			return 1;
		}
	}
	return 0;
}

/* Report a detection to the slow path (a copy of the packet that tipped it),
 * without dropping anything: the caller decides the packet's fate. */
static __always_inline void dd_event(ctx_t *ctx, struct edgenf_md *md, __u32 dir, __u32 reason, __u32 count)
{
	enf_counter_inc(&dd_stats, DD_ST_EVENTS);
	enf_report(ctx, md, enf_self(md), dir, reason, count, 256);
}

/* A blocked source's packet: to the mirror interface (scanners, when one is
 * set) or dropped. The mirror replaces the rest of the hop. */
static __always_inline int dd_blocked_verdict(struct edgenf_md *md, struct dd_cfg *cfg, __u32 reason)
{
	enf_counter_inc(&dd_stats, DD_ST_DROP_BLOCKED);
	if (reason == DD_REASON_SCAN && (cfg->flags & DD_F_MIRROR) && cfg->mirror_ifindex) {
		enf_counter_inc(&dd_stats, DD_ST_MIRRORED);
		md->hop.kind = EDGENF_DST_IFACE;
		md->hop.ifindex = cfg->mirror_ifindex;
		md->hop.nstack = 0;
		return ENF_VERDICT_PASS;
	}
	return ENF_VERDICT_DROP;
}

static __always_inline int dd_block(ctx_t *ctx, struct edgenf_md *md, __u32 dir, struct dd_cfg *cfg,
				    struct dd_addr *src, struct dd_track *t, __u64 now, __u32 len,
				    __u32 reason, __u32 count)
{
	struct dd_block b = {
		.until = now + (reason == DD_REASON_SCAN ? cfg->scan_block_ns : cfg->rate_block_ns),
		.since = now,
		.packets = 1,
		.bytes = len,
		.reason = reason,
		.count = count,
	};

	/* Start counting afresh once the block ends. */
	t->rate_start = 0;
	t->scan_start = 0;
	if (bpf_map_update_elem(&dd_blocked, src, &b, BPF_ANY) == 0) {
		enf_counter_inc(&dd_stats, reason == DD_REASON_SCAN ? DD_ST_BLOCK_SCAN : DD_ST_BLOCK_RATE);
		dd_event(ctx, md, dir, reason, count);
	}
	return dd_blocked_verdict(md, cfg, reason);
}

static __always_inline int dd_detect(ctx_t *ctx, struct edgenf_md *md, __u32 dir, struct dd_cfg *cfg,
				     struct enf_pkt *pkt, struct dd_addr *src, __u64 now, __u32 len)
{
	struct dd_track *t = bpf_map_lookup_elem(&dd_track, src);
	__u32 zero = 0;

	if (!t) {
		struct dd_track *z = bpf_map_lookup_elem(&dd_zero, &zero);

		if (!z)
			return ENF_VERDICT_PASS;
		bpf_map_update_elem(&dd_track, src, z, BPF_NOEXIST);
		t = bpf_map_lookup_elem(&dd_track, src);
		if (!t)
			return ENF_VERDICT_PASS;
	}
	if (cfg->flags & DD_F_RATE) {
		if (now - t->rate_start > cfg->rate_window_ns) {
			t->rate_start = now;
			t->rate_pkts = 0;
		}
		t->rate_pkts++;
		if (t->rate_pkts > cfg->rate_threshold)
			return dd_block(ctx, md, dir, cfg, src, t, now, len, DD_REASON_RATE, t->rate_pkts);
	}
	if (!(cfg->flags & DD_F_SCAN) || !pkt->l4_off)
		return ENF_VERDICT_PASS;

	/* Probes: TCP SYN without ACK, and UDP. */
	__u8 *l4 = enf_ptr(ctx, pkt->l4_off & 0x1ff);
	__u16 port;

	if (pkt->l4_proto == IPPROTO_TCP) {
		if (!enf_in_bounds(ctx, l4, 14))
			return ENF_VERDICT_PASS;
		if ((l4[13] & 0x12) != 0x02) /* SYN set, ACK clear */
			return ENF_VERDICT_PASS;
	} else if (pkt->l4_proto == IPPROTO_UDP) {
		if (!enf_in_bounds(ctx, l4, 4))
			return ENF_VERDICT_PASS;
	} else {
		return ENF_VERDICT_PASS;
	}
	port = ((__u16)l4[2] << 8) | l4[3];

	if (now - t->scan_start > cfg->scan_window_ns) {
		t->scan_start = now;
		t->distinct = 0;
		t->seq_run = 0;
		t->last_port = 0;
#pragma unroll
		for (int i = 0; i < DD_SCAN_WORDS; i++)
			t->bits[i] = 0;
	}
	__u32 bit = (port ^ (port >> 11)) & (DD_SCAN_BITS - 1);
	__u64 m = 1ULL << (bit & 63);
	__u32 w = (bit >> 6) & (DD_SCAN_WORDS - 1);

	if (!(t->bits[w] & m)) {
		t->bits[w] |= m;
		t->distinct++;
	}
	if (port == (__u16)(t->last_port + 1) && t->seq_run)
		t->seq_run++;
	else if (port != t->last_port || !t->seq_run)
		t->seq_run = 1;
	t->last_port = port;

	if (cfg->scan_distinct && t->distinct > cfg->scan_distinct)
		return dd_block(ctx, md, dir, cfg, src, t, now, len, DD_REASON_SCAN, t->distinct);
	if (cfg->scan_sequential && t->seq_run >= cfg->scan_sequential)
		return dd_block(ctx, md, dir, cfg, src, t, now, len, DD_REASON_SCAN, t->distinct);
	return ENF_VERDICT_PASS;
}

static __always_inline int ddos(ctx_t *ctx, struct edgenf_md *md, __u32 dir)
{
	__u32 zero = 0, len, flags, v4 = 0;
	struct dd_cfg *cfg = bpf_map_lookup_elem(&dd_cfg, &zero);
	struct dd_addr src = {}, dst = {};
	struct enf_pkt pkt;
	__u64 now = 0;

	if (!cfg)
		return ENF_VERDICT_PASS;
#if defined(EDGENF_HOOK_TC)
	/* Headers in the linear part (ctx_pull does 32-bit pointer math the
	 * verifier refuses). */
	if (ctx_data(ctx) + 128 > ctx_data_end(ctx))
		bpf_skb_pull_data(ctx, ctx->len < 128 ? ctx->len : 128);
#endif
	if (enf_parse(ctx, &pkt))
		return ENF_VERDICT_PASS;
	if (pkt.l3_proto == ETH_P_IP) {
		struct iphdr *ip = enf_ptr(ctx, pkt.l3_off & 0x1f);

		if (!enf_in_bounds(ctx, ip, sizeof(*ip)))
			return ENF_VERDICT_PASS;
		/* The common case first: the source in the table. */
		if ((cfg->src4.n || (cfg->flags & DD_F_SRC_LPM4)) &&
		    dd_listed4(&dd_src_t4, &dd_src_t4v, &dd_src_lpm4, &cfg->src4, cfg->flags & DD_F_SRC_LPM4,
			       ip->saddr, &now, ctx_len(ctx))) {
			enf_counter_inc(&dd_stats, DD_ST_DROP_SRC);
			return ENF_VERDICT_DROP;
		}
		src.a[2] = bpf_htonl(0xffff);
		src.a[3] = ip->saddr;
		dst.a[2] = bpf_htonl(0xffff);
		dst.a[3] = ip->daddr;
		v4 = 1;
	} else if (pkt.l3_proto == ETH_P_IPV6) {
		struct ipv6hdr *ip6 = enf_ptr(ctx, pkt.l3_off & 0x1f);

		if (!enf_in_bounds(ctx, ip6, sizeof(*ip6)))
			return ENF_VERDICT_PASS;
		__builtin_memcpy(src.a, &ip6->saddr, 16);
		__builtin_memcpy(dst.a, &ip6->daddr, 16);
	} else {
		return ENF_VERDICT_PASS;
	}
	flags = cfg->flags;
	len = ctx_len(ctx);

	if (!v4 && dd_listed(&dd_src_exact, &dd_src_lpm, flags, DD_F_SRC_EXACT, DD_F_SRC_LPM, &src, &now, len)) {
		enf_counter_inc(&dd_stats, DD_ST_DROP_SRC);
		return ENF_VERDICT_DROP;
	}
	if (flags & (DD_F_RATE | DD_F_SCAN)) {
		struct dd_block *b = bpf_map_lookup_elem(&dd_blocked, &src);

		if (b && dd_now(&now) < b->until) {
			__sync_fetch_and_add(&b->packets, 1);
			__sync_fetch_and_add(&b->bytes, len);
			return dd_blocked_verdict(md, cfg, b->reason);
		}
	}
	if (v4 ? (cfg->dst4.n || (flags & DD_F_DST_LPM4)) &&
		     dd_listed4(&dd_dst_t4, &dd_dst_t4v, &dd_dst_lpm4, &cfg->dst4, flags & DD_F_DST_LPM4, dst.a[3],
				&now, len)
	       : dd_listed(&dd_dst_exact, &dd_dst_lpm, flags, DD_F_DST_EXACT, DD_F_DST_LPM, &dst, &now, len)) {
		enf_counter_inc(&dd_stats, DD_ST_DROP_DST);
		return ENF_VERDICT_DROP;
	}
	if ((flags & (DD_F_RATE | DD_F_SCAN)) &&
	    (flags & (dir == EDGENF_DIR_EGRESS ? DD_F_DIR_EGRESS : DD_F_DIR_INGRESS))) {
		int v = dd_detect(ctx, md, dir, cfg, &pkt, &src, dd_now(&now), len);

		if (v != ENF_VERDICT_PASS || md->hop.nstack == 0)
			return v;
	}
	enf_counter_inc(&dd_stats, DD_ST_PASSED);
	return ENF_VERDICT_PASS;
}

EDGENF_TRANSPARENT(ddos)
