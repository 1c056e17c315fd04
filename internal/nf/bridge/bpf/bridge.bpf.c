// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* bridge: an 802.1Q learning switch cube.
 *
 * Per frame: classify into a VLAN (access VLAN / native VLAN for untagged
 * frames, the tag for tagged ones on ports allowed to carry it), learn the
 * source MAC in the FDB (fast path, no slow path involved), look the
 * destination up, and send out of one port with the tag added or removed as
 * that port wants, or flood to the VLAN's other ports:
 *   XDP: one devmap broadcast (BPF_F_BROADCAST | BPF_F_EXCLUDE_INGRESS) of a
 *        tagged copy; the devmap's egress program (br_egress) drops copies
 *        for ports outside the VLAN and untags for untagged members;
 *   TC:  bpf_clone_redirect to each member port, tagging as needed.
 */
#include <edgenf/edgenf.h>

#define BR_MAX_FDB 65536
#define BR_VLANS 4096
#define BR_FDB_STATIC 1

/* Mirrored by bridge.go. */
struct br_config {
	__u64 aging_ns; /* 0: entries never expire */
};

struct br_port {
	__u16 pvid; /* VLAN of untagged frames; 0: untagged frames dropped */
	__u16 valid;
};

struct br_vlan {
	__u64 members;  /* bit per port index */
	__u64 untagged; /* members that send this VLAN untagged */
};

struct br_fdb_key {
	__u8 mac[ETH_ALEN];
	__u16 vlan;
};

struct br_fdb_val {
	__u32 port;
	__u32 flags;
	__u64 seen; /* bpf_ktime_get_coarse_ns of the last frame from it */
};

enum br_counter {
	BR_CNT_LEARN_FULL = 0, /* new MAC not learned: FDB full */
	BR_CNT_MOVES = 1,      /* MAC moved to another port */
	BR_CNT_FILTERED = 2,   /* destination behind the ingress port */
	BR_CNT_FLOODED = 3,    /* frames flooded */
	BR_CNT_VLAN_DROP = 4,  /* VLAN not allowed on the ingress port */
	BR_CNT_MAX = 8,
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct br_config);
} br_config SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, EDGENF_MAX_PORTS);
	__type(key, __u32);
	__type(value, struct br_port);
} br_ports SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, BR_VLANS);
	__type(key, __u32);
	__type(value, struct br_vlan);
} br_vlans SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, BR_MAX_FDB);
	__type(key, struct br_fdb_key);
	__type(value, struct br_fdb_val);
} br_fdb SEC(".maps");

ENF_COUNTERS(br_counters, BR_CNT_MAX);

/* Interface → port index, for the devmap egress program. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, EDGENF_MAX_PORTS);
	__type(key, __u32);
	__type(value, __u32);
} br_ifport SEC(".maps");

#if defined(EDGENF_HOOK_XDP)
/* Port index → {ifindex, egress program}: the flood set. */
struct {
	__uint(type, BPF_MAP_TYPE_DEVMAP_HASH);
	__uint(max_entries, EDGENF_MAX_PORTS);
	__type(key, __u32);
	__type(value, struct bpf_devmap_val);
} br_flood SEC(".maps");
#endif

static __always_inline int mac_multicast(const __u8 *m)
{
	return m[0] & 1;
}

#define BR_VLAN_TPID 0x8100

#if defined(EDGENF_HOOK_XDP)
/* Insert an 802.1Q tag after the MAC addresses. */
static __always_inline int br_push(ctx_t *ctx, __u16 vid)
{
	__u8 macs[12];
	void *data = ctx_data(ctx);

	if (!enf_in_bounds(ctx, data, 12))
		return -1;
	__builtin_memcpy(macs, data, 12);
	if (bpf_xdp_adjust_head(ctx, -4))
		return -1;
	data = ctx_data(ctx);
	if (!enf_in_bounds(ctx, data, 16))
		return -1;
	__builtin_memcpy(data, macs, 12);
	*(__be16 *)(data + 12) = bpf_htons(BR_VLAN_TPID);
	*(__be16 *)(data + 14) = bpf_htons(vid);
	return 0;
}

/* Remove the outer 802.1Q tag. */
static __always_inline int br_pop(ctx_t *ctx)
{
	__u8 macs[12];
	void *data = ctx_data(ctx);

	if (!enf_in_bounds(ctx, data, 18))
		return -1;
	__builtin_memcpy(macs, data, 12);
	if (bpf_xdp_adjust_head(ctx, 4))
		return -1;
	data = ctx_data(ctx);
	if (!enf_in_bounds(ctx, data, 14))
		return -1;
	__builtin_memcpy(data, macs, 12);
	return 0;
}
#endif

static __always_inline int bridge(ctx_t *ctx, struct edgenf_md *md)
{
	struct ethhdr *eth = ctx_data(ctx);
	__u32 in = md->in_port, zero = 0, out, vid32;
	struct br_fdb_key key = {};
	struct br_fdb_val *e;
	struct br_config *cfg;
	struct br_port *pp;
	struct br_vlan *vl;
	int tagged = 0;
	__u16 vid;
	__u64 now, inbit;

	if (!enf_in_bounds(ctx, eth, sizeof(*eth)) || in >= EDGENF_MAX_PORTS)
		return enf_drop(ctx, md);
	pp = bpf_map_lookup_elem(&br_ports, &in);
	cfg = bpf_map_lookup_elem(&br_config, &zero);
	if (!pp || !pp->valid || !cfg)
		return enf_drop(ctx, md);
	inbit = 1ULL << in;

	/* Classify. */
#if defined(EDGENF_HOOK_TC)
	if (ctx->vlan_present && ctx->vlan_proto == bpf_htons(BR_VLAN_TPID)) {
		tagged = 1;
		vid = ctx->vlan_tci & 0x0fff;
	} else
#endif
	if (eth->h_proto == bpf_htons(BR_VLAN_TPID)) {
		struct vlan_hdr *vh = (void *)(eth + 1);

		if (!enf_in_bounds(ctx, vh, sizeof(*vh)))
			return enf_drop(ctx, md);
		tagged = 1;
		vid = bpf_ntohs(vh->tci) & 0x0fff;
	} else {
		vid = pp->pvid;
	}
	if (vid == 0 || vid >= 4095) {
		enf_counter_inc(&br_counters, BR_CNT_VLAN_DROP);
		return enf_drop(ctx, md); /* untagged without a native VLAN, or priority-tagged */
	}
	vid32 = vid;
	vl = bpf_map_lookup_elem(&br_vlans, &vid32);
	if (!vl || !(vl->members & inbit)) {
		enf_counter_inc(&br_counters, BR_CNT_VLAN_DROP);
		return enf_drop(ctx, md);
	}
	/* IEEE 802.1D reserved group addresses (STP, LACP, ...) are not forwarded. */
	if (eth->h_dest[0] == 0x01 && eth->h_dest[1] == 0x80 && eth->h_dest[2] == 0xc2 &&
	    eth->h_dest[3] == 0 && eth->h_dest[4] == 0 && (eth->h_dest[5] & 0xf0) == 0)
		return enf_drop(ctx, md);
	if (mac_multicast(eth->h_source))
		return enf_drop(ctx, md);

	/* Learn. */
	now = bpf_ktime_get_coarse_ns(); /* CLOCK_MONOTONIC_COARSE: no clock read per frame */
	__builtin_memcpy(key.mac, eth->h_source, ETH_ALEN);
	key.vlan = vid;
	e = bpf_map_lookup_elem(&br_fdb, &key);
	if (e) {
		if (!(e->flags & BR_FDB_STATIC)) {
			if (e->port != in) {
				e->port = in;
				e->seen = now;
				enf_counter_inc(&br_counters, BR_CNT_MOVES);
			} else if (now - e->seen > 1000000000ULL) {
				e->seen = now;
			}
		}
	} else {
		struct br_fdb_val nv = { .port = in, .seen = now };

		if (bpf_map_update_elem(&br_fdb, &key, &nv, BPF_NOEXIST) == -7 /* -E2BIG */)
			enf_counter_inc(&br_counters, BR_CNT_LEARN_FULL);
	}

	/* Forward. */
	out = EDGENF_MAX_PORTS;
	if (!mac_multicast(eth->h_dest)) {
		__builtin_memcpy(key.mac, eth->h_dest, ETH_ALEN);
		e = bpf_map_lookup_elem(&br_fdb, &key);
		if (e && ((e->flags & BR_FDB_STATIC) || !cfg->aging_ns || now - e->seen <= cfg->aging_ns))
			out = e->port;
	}
	if (out < EDGENF_MAX_PORTS && (vl->members & (1ULL << out))) {
		int want_tag = !(vl->untagged & (1ULL << out));

		if (out == in) {
			enf_counter_inc(&br_counters, BR_CNT_FILTERED);
			return enf_drop(ctx, md);
		}
#if defined(EDGENF_HOOK_XDP)
		if (tagged && !want_tag) {
			if (br_pop(ctx))
				return enf_drop(ctx, md);
		} else if (!tagged && want_tag) {
			if (br_push(ctx, vid))
				return enf_drop(ctx, md);
		}
#else
		if (tagged && bpf_skb_vlan_pop(ctx))
			return enf_drop(ctx, md);
		if (want_tag && bpf_skb_vlan_push(ctx, bpf_htons(BR_VLAN_TPID), vid))
			return enf_drop(ctx, md);
#endif
		return enf_send(ctx, md, out);
	}

	/* Flood within the VLAN. */
	enf_counter_inc(&br_counters, BR_CNT_FLOODED);
#if defined(EDGENF_HOOK_XDP)
	if (!tagged && br_push(ctx, vid))
		return enf_drop(ctx, md);
	return bpf_redirect_map(&br_flood, 0, BPF_F_BROADCAST | BPF_F_EXCLUDE_INGRESS);
#else
	{
		__u64 members = vl->members & ~inbit, untagged = vl->untagged;
		__u32 in_if = md->ingress_ifindex;
		int has_tag = 0;

		if (tagged && bpf_skb_vlan_pop(ctx))
			return enf_drop(ctx, md);
		for (__u32 p = 0; p < EDGENF_MAX_PORTS; p++) {
			__u32 key2 = p;
			struct edgenf_hop *h;
			int want;

			if (!(members & (1ULL << p)))
				continue;
			h = bpf_map_lookup_elem(&enf_ports, &key2);
			if (!h || h->kind != EDGENF_DST_IFACE || h->ifindex == in_if)
				continue;
			want = !(untagged & (1ULL << p));
			if (want && !has_tag) {
				if (bpf_skb_vlan_push(ctx, bpf_htons(BR_VLAN_TPID), vid))
					break;
				has_tag = 1;
			} else if (!want && has_tag) {
				if (bpf_skb_vlan_pop(ctx))
					break;
				has_tag = 0;
			}
			enf_count(p, ctx_len(ctx), ENF_TX);
			enf_clone_redirect(ctx, md, h->ifindex);
		}
		return CTX_DROP;
	}
#endif
}

EDGENF_CUBE(bridge)

#if defined(EDGENF_HOOK_XDP)
/* Runs on each copy of a flooded frame, per destination port: keep it only
 * on the VLAN's members, untag it for untagged members, count it. The copy
 * always arrives tagged (the ingress side tags before broadcasting). */
SEC("xdp/devmap") int br_egress(struct xdp_md *ctx)
{
	__u32 ifindex = ctx->egress_ifindex, port, vid;
	struct ethhdr *eth = ctx_data(ctx);
	struct vlan_hdr *vh = (void *)(eth + 1);
	struct br_vlan *vl;
	__u32 *pp;

	if (!enf_in_bounds(ctx, vh, sizeof(*vh)) || eth->h_proto != bpf_htons(BR_VLAN_TPID))
		return XDP_DROP;
	vid = bpf_ntohs(vh->tci) & 0x0fff;
	pp = bpf_map_lookup_elem(&br_ifport, &ifindex);
	vl = bpf_map_lookup_elem(&br_vlans, &vid);
	if (!pp || !vl)
		return XDP_DROP;
	port = *pp;
	if (port >= EDGENF_MAX_PORTS || !(vl->members & (1ULL << port)))
		return XDP_DROP;
	if ((vl->untagged & (1ULL << port)) && br_pop(ctx))
		return XDP_DROP;
	enf_count(port, ctx_len(ctx), ENF_TX);
	return XDP_PASS;
}
#endif
