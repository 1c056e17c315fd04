// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* monitor: transparent; counts packets and bytes per direction and L3/L4
 * protocol class, and passes everything unchanged. */
#include <edgenf/edgenf.h>

/* Protocol classes; mirrored by monitor.go. */
enum mon_class {
	MON_OTHER,
	MON_ARP,
	MON_IPV4,
	MON_IPV4_TCP,
	MON_IPV4_UDP,
	MON_ICMP,
	MON_IPV6,
	MON_IPV6_TCP,
	MON_IPV6_UDP,
	MON_ICMPV6,
	MON_NCLASS,
};

/* key: dir * MON_NCLASS + class */
ENF_TRAFFIC_COUNTERS(mon_counts, 2 * MON_NCLASS);

static __always_inline __u32 mon_classify(struct enf_pkt *pkt)
{
	switch (pkt->l3_proto) {
	case ETH_P_ARP:
		return MON_ARP;
	case ETH_P_IP:
		if (pkt->l4_proto == IPPROTO_TCP)
			return MON_IPV4_TCP;
		if (pkt->l4_proto == IPPROTO_UDP)
			return MON_IPV4_UDP;
		if (pkt->l4_proto == IPPROTO_ICMP)
			return MON_ICMP;
		return MON_IPV4;
	case ETH_P_IPV6:
		if (pkt->l4_proto == IPPROTO_TCP)
			return MON_IPV6_TCP;
		if (pkt->l4_proto == IPPROTO_UDP)
			return MON_IPV6_UDP;
		if (pkt->l4_proto == IPPROTO_ICMPV6)
			return MON_ICMPV6;
		return MON_IPV6;
	}
	return MON_OTHER;
}

static __always_inline int monitor(ctx_t *ctx, struct edgenf_md *md, __u32 dir)
{
	struct enf_pkt pkt;
	__u32 key = MON_OTHER;

	(void)md;
	if (enf_parse(ctx, &pkt) == 0)
		key = mon_classify(&pkt);
	key += (dir & 1) * MON_NCLASS;
	enf_traffic_add(&mon_counts, key, ctx_len(ctx));
	return ENF_VERDICT_PASS;
}

EDGENF_TRANSPARENT(monitor)
