// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* portfwd: forward by in-port -> out-port, optionally rewriting MACs. */
#include <edgenf/edgenf.h>

#define PF_VALID 1
#define PF_SET_SRC 2
#define PF_SET_DST 4

enum pf_action {
	PF_FORWARD = 0,
	PF_DROP = 1,
	PF_PASS = 2, /* to the Linux stack */
	PF_PUNT = 3, /* to the slow path */
};

#define PF_PUNT_REASON 1

/* Mirrored by portfwd.go. */
struct pf_entry {
	__u32 out_port;
	__u16 flags;
	__u16 action;
	__u8 src[ETH_ALEN];
	__u8 dst[ETH_ALEN];
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, EDGENF_MAX_PORTS);
	__type(key, __u32);
	__type(value, struct pf_entry);
} pf_table SEC(".maps");

static __always_inline int portfwd(ctx_t *ctx, struct edgenf_md *md)
{
	__u32 in = md->in_port;
	struct pf_entry *e = bpf_map_lookup_elem(&pf_table, &in);
	struct ethhdr *eth;

	if (!e || !(e->flags & PF_VALID))
		return enf_drop(ctx, md);
	switch (e->action) {
	case PF_DROP:
		return enf_drop(ctx, md);
	case PF_PASS:
		return enf_pass(ctx, md);
	case PF_PUNT:
		return enf_punt(ctx, md, PF_PUNT_REASON, in);
	}
	if (e->flags & (PF_SET_SRC | PF_SET_DST)) {
		eth = ctx_data(ctx);
		if (!enf_in_bounds(ctx, eth, sizeof(*eth)))
			return enf_drop(ctx, md);
		if (e->flags & PF_SET_SRC)
			__builtin_memcpy(eth->h_source, e->src, ETH_ALEN);
		if (e->flags & PF_SET_DST)
			__builtin_memcpy(eth->h_dest, e->dst, ETH_ALEN);
	}
	return enf_send(ctx, md, e->out_port);
}

EDGENF_CUBE(portfwd)
