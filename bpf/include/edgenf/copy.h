/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* Copies of a frame for NFs that replicate (P4 clone and multicast):
 *   enf_copy(ctx, md, port, snap, slow);   a copy out of port, the frame untouched
 *
 * TC: the kernel clones the skb (bpf_clone_redirect). A copy for a port that
 * leads straight to an interface is cloned out of it. A copy for a port that
 * leads to another cube, or through transparent cubes, cannot enter them
 * from here (a tail call consumes the frame), so it is cloned into the
 * daemon's injection veth with the hop trailer the injector understands
 * (struct edgenf_inject_trailer): the trailer is appended, the skb cloned
 * out of the near end, the trailer cut again. edgenf_inject on the far end
 * strips it and delivers the copy on its hop, still in the kernel. The
 * injector's ifindex comes from enf_config (the daemon writes it when it
 * opens the injector); without it these copies take the slow path.
 *
 * XDP cannot copy an xdp_buff; the TC "copy machine" behind it makes the
 * copies. A copy is recorded instead of sent (enf_copy with hlen): its
 * header bytes (the first hlen bytes, which the NF rewrote in front of a
 * payload it leaves untouched and that all copies share), the payload
 * length and its hop go into a slot of the per-CPU ring enf_copy_ring
 * (EDGENF_COPY_RING slots, each with a sequence number). The NF ends the
 * packet with enf_copy_meta and enf_copy_last: the frame, holding the last
 * copy, leaves with XDP_PASS and, in its data_meta, a struct
 * edgenf_copy_meta naming the slot (no room for it: the recorded copies
 * are lost, counted in enf_copy_cpu.failed, the frame goes on as usual).
 * edgenf_copier (stub.bpf.c), first at TCX ingress of every interface that
 * runs XDP stubs or entries and of the injector, finds the meta, and for
 * each recorded copy rewrites the frame's head to the copy's header bytes
 * and clones it out (into the injector with a hop trailer for cubes, as
 * above, run there by the XDP programs); the last copy is redirected. Frames without the meta pass it
 * untouched. Several XDP_PASSed frames can wait for their TC (veth NAPI
 * and GRO batch up to 64 frames a poll), hence a ring: a slot is
 * overwritten only after EDGENF_COPY_RING more replicating packets on the
 * same CPU before its frame reached TC; the copy machine then drops the
 * frame and counts it (enf_copy_cpu.stale). Recording needs the copy
 * machine on the interface (enf_copy_devs), a header of at most
 * EDGENF_COPY_HDR bytes, at most EDGENF_COPY_MAX copies a packet; other
 * copies take the slow path: a perf-ring copy of the first snap bytes (at
 * most EDGENF_PUNT_SNAPLEN) that the daemon transmits out of the port
 * through the injector.
 *
 * Truncated copies (snap shorter than the frame) take the slow path, except
 * the last copy at XDP (the copy machine cuts it): cutting the frame would
 * lose the payload of the copies after it. */
#pragma once

#include "verdict.h"

/* Settings of the datapath (shared by every program of both hooks). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct edgenf_config);
} enf_config SEC(".maps");

/* The copy machine (XDP records, TC copies). */
#define EDGENF_COPY_RING 128 /* slots per CPU */
#define EDGENF_COPY_MAX 32   /* copies recorded per packet */
#define EDGENF_COPY_HDR 128  /* header bytes a recorded copy may have */
#define EDGENF_COPY_MIN 14   /* ... and at least (an Ethernet header) */
#define EDGENF_COPY_MAGIC 0x636f7079 /* "copy" */

/* One recorded copy. */
struct edgenf_copy {
	__u32 hlen;  /* header bytes in hdr, then the shared payload */
	__u32 trunc; /* the last copy only: cut to this length (0: whole) */
	struct edgenf_hop hop;
	__u8 hdr[EDGENF_COPY_HDR];
};

/* The copies of one packet; the frame itself holds the last one. */
struct edgenf_copy_slot {
	__u32 seq;
	__u32 n;    /* copies recorded */
	__u32 plen; /* payload bytes after each copy's headers */
	__u32 pad;
	struct edgenf_copy c[EDGENF_COPY_MAX];
};

/* Per-CPU state of the ring, and the copy machine's counters. */
struct edgenf_copy_cpu {
	__u32 next;   /* slot the next packet takes */
	__u32 seq;    /* sequence of the last slot taken */
	__u32 active; /* the packet now running has a slot: slot, aseq */
	__u32 slot;
	__u32 aseq;
	__u32 pad;
	__u64 stale;  /* frames whose slot had been overwritten (dropped) */
	__u64 failed; /* copies the copy machine could not make */
};

/* In the data_meta of a frame XDP_PASSed with recorded copies. */
struct edgenf_copy_meta {
	__u32 magic; /* EDGENF_COPY_MAGIC */
	__u32 slot;
	__u32 seq;
	__u32 cpu;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, EDGENF_COPY_RING);
	__type(key, __u32);
	__type(value, struct edgenf_copy_slot);
} enf_copy_ring SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct edgenf_copy_cpu);
} enf_copy_cpu SEC(".maps");

static __always_inline struct edgenf_copy_cpu *enf_copy_state(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&enf_copy_cpu, &zero);
}

/* A new packet: no slot yet. NFs that record copies call it first. */
static __always_inline void enf_copy_begin(void)
{
	struct edgenf_copy_cpu *st = enf_copy_state();

	if (st)
		st->active = 0;
}

/* The slot of the packet now running, or NULL when it has none. */
static __always_inline struct edgenf_copy_slot *enf_copy_slot(struct edgenf_copy_cpu *st)
{
	__u32 idx;

	if (!st || !st->active)
		return NULL;
	idx = st->slot;
	return bpf_map_lookup_elem(&enf_copy_ring, &idx);
}

/* slow: force the slow path (test runs read copies from the punt ring). */
static __always_inline void enf_copy_slow(ctx_t *ctx, struct edgenf_md *md, __u32 port, __u32 snap)
{
	if (snap > EDGENF_PUNT_SNAPLEN)
		snap = EDGENF_PUNT_SNAPLEN;
	if (enf_report(ctx, md, md->cube, enf_port_idx(md->in_port), EDGENF_PUNT_TRANSMIT, port, snap))
		enf_count(enf_port_idx(port), ctx_len(ctx), ENF_TX);
}

/* The injection veth's near end, 0 if the daemon has none open. */
static __always_inline __u32 enf_injector(void)
{
	__u32 zero = 0;
	struct edgenf_config *c = bpf_map_lookup_elem(&enf_config, &zero);

	return c ? c->inject_ifindex : 0;
}

#if defined(EDGENF_HOOK_TC)
/* Clone the skb into the injector with the trailer for hop h (run by the
 * programs of hook), then restore it. Returns 0 when the copy left.
 * Invalidates every packet pointer. */
static __attribute__((noinline)) int enf_clone_inject(struct __sk_buff *ctx, struct edgenf_hop *h, __u32 hook, __u32 inj)
{
	struct edgenf_inject_trailer tr;
	__u32 len = ctx->len;
	int err;

	__builtin_memcpy(&tr.hop, h, sizeof(tr.hop));
	tr.hook = hook;
	tr.magic = EDGENF_INJECT_MAGIC;
	if (bpf_skb_change_tail(ctx, len + sizeof(tr), 0))
		return -1;
	err = bpf_skb_store_bytes(ctx, len, &tr, sizeof(tr), 0);
	if (!err)
		err = bpf_clone_redirect(ctx, inj, 0);
	if (bpf_skb_change_tail(ctx, len, 0))
		return -2; /* the frame keeps the trailer: lost */
	return err ? -1 : 0;
}
#endif

#if defined(EDGENF_HOOK_XDP)
/* Record the frame's present contents as a copy on hop h: its first hlen
 * bytes and the length of the rest, in the packet's slot (taken now for its
 * first copy). trunc: cut to that length (last copy only). Returns 0 if
 * recorded. */
static __always_inline int enf_copy_record(struct xdp_md *ctx, struct edgenf_hop *h, __u32 hlen, __u32 trunc)
{
	struct edgenf_copy_cpu *st = enf_copy_state();
	struct edgenf_copy_slot *sl;
	struct edgenf_copy *c;
	__u32 len = ctx_len(ctx), idx, n, *ok;

	if (!st || hlen < EDGENF_COPY_MIN || hlen > EDGENF_COPY_HDR || hlen > len)
		return -1;
	if (h->kind != EDGENF_DST_IFACE && h->kind != EDGENF_DST_CUBE)
		return -1;
	if ((h->kind == EDGENF_DST_CUBE || h->nstack) && !enf_injector())
		return -1; /* the copy machine sends these through the injector */
	if (!st->active) {
		idx = ctx->ingress_ifindex;
		ok = bpf_map_lookup_elem(&enf_copy_devs, &idx);
		if (!ok || !*ok)
			return -1; /* no copy machine behind this interface */
		idx = st->next;
		if (idx >= EDGENF_COPY_RING)
			idx = 0;
		sl = bpf_map_lookup_elem(&enf_copy_ring, &idx);
		if (!sl)
			return -1;
		st->next = idx + 1;
		st->seq++;
		st->active = 1;
		st->slot = idx;
		st->aseq = st->seq;
		sl->seq = st->seq;
		sl->n = 0;
		sl->plen = len - hlen;
	} else {
		sl = enf_copy_slot(st);
		if (!sl || sl->plen != len - hlen)
			return -1;
	}
	n = sl->n;
	if (n >= EDGENF_COPY_MAX)
		return -1;
	c = &sl->c[n];
	if (bpf_xdp_load_bytes(ctx, 0, c->hdr, hlen))
		return -1;
	c->hlen = hlen;
	c->trunc = trunc < len ? trunc : 0;
	__builtin_memcpy(&c->hop, h, sizeof(c->hop));
	sl->n = n + 1;
	return 0;
}

/* Whether the packet now running has recorded copies. */
static __always_inline int enf_copy_pending(void)
{
	struct edgenf_copy_cpu *st = enf_copy_state();

	return st && st->active;
}

/* Name the packet's slot in the frame's data_meta, for the copy machine.
 * Returns 0 when done; then the frame must leave with XDP_PASS. When the
 * driver has no room for metadata the recorded copies are lost (counted)
 * and the frame goes on as if none had been recorded. */
static __always_inline int enf_copy_meta(struct xdp_md *ctx)
{
	struct edgenf_copy_cpu *st = enf_copy_state();
	struct edgenf_copy_slot *sl = enf_copy_slot(st);
	struct edgenf_copy_meta *m;
	void *data;

	if (!st || !sl)
		return -1;
	st->active = 0;
	if (bpf_xdp_adjust_meta(ctx, -(int)sizeof(*m)))
		goto lost;
	m = (void *)(long)ctx->data_meta;
	data = (void *)(long)ctx->data;
	if ((void *)(m + 1) > data)
		goto lost;
	m->magic = EDGENF_COPY_MAGIC;
	m->slot = st->slot;
	m->seq = st->aseq;
	m->cpu = bpf_get_smp_processor_id();
	return 0;
lost:
	st->failed += sl->n;
	sl->seq = 0;
	return -1;
}

/* The last copy of a packet with recorded copies, out of port, once
 * enf_copy_meta named the slot: recorded (cut to trunc by the copy
 * machine), and the frame goes to the copy machine, which redirects the
 * last recorded copy. A port that leads nowhere drops the last copy only. */
static __always_inline int enf_copy_last(struct xdp_md *ctx, struct edgenf_md *md, __u32 port, __u32 trunc, __u32 hlen)
{
	struct edgenf_copy_cpu *st = enf_copy_state();
	struct edgenf_hop *h;
	__u32 len = ctx_len(ctx);

	if (port >= EDGENF_MAX_PORTS || !(h = bpf_map_lookup_elem(&enf_ports, &port)) || h->kind == EDGENF_DST_NONE) {
		enf_count(enf_port_idx(md->in_port), len, ENF_DROP);
		return XDP_PASS;
	}
	if (st) { /* enf_copy_meta closed the slot: reopen it for this copy */
		st->active = 1;
		if (enf_copy_record(ctx, h, hlen, trunc) == 0) {
			st->active = 0;
			enf_count(port, trunc < len ? trunc : len, ENF_TX);
			return XDP_PASS;
		}
		st->active = 0;
	}
	/* not recordable: this one through the slow path */
	enf_copy_slow(ctx, md, port, trunc);
	return XDP_PASS;
}
#endif

/* Make a copy of the frame out of port (it is not the last one): snap
 * bytes of it at most; hlen: the bytes in front of the payload the copies
 * share (XDP records the copy when it can, see above).
 * Returns 1 if the copy was made (or recorded) in the kernel, 0 if it went
 * to the slow path, -1 if the port leads nowhere (no copy) and -2 if the
 * frame itself was damaged (drop it). */
static __always_inline int enf_copy(ctx_t *ctx, struct edgenf_md *md, __u32 port, __u32 snap, int slow, __u32 hlen)
{
	struct edgenf_hop *h;

	if (port >= EDGENF_MAX_PORTS)
		return -1;
	h = bpf_map_lookup_elem(&enf_ports, &port);
	if (!h || h->kind == EDGENF_DST_NONE)
		return -1;
#if defined(EDGENF_HOOK_TC)
	if (!slow && snap >= ctx_len(ctx)) {
		__u32 len = ctx_len(ctx), inj;
		int err;

		if (h->kind == EDGENF_DST_IFACE && h->nstack == 0) {
			enf_count(port, len, ENF_TX);
			enf_clone_redirect(ctx, md, h->ifindex);
			return 1;
		}
		inj = enf_injector();
		/* not for GSO skbs: the trailer would reset their GSO state */
		if (inj && !ctx->gso_size && (h->kind == EDGENF_DST_CUBE || h->kind == EDGENF_DST_IFACE)) {
			err = enf_clone_inject(ctx, h, EDGENF_HOOK_ID, inj);
			if (err == 0) {
				enf_count(port, len, ENF_TX);
				return 1;
			}
			if (err == -2)
				return -2;
		}
	}
#else
	if (!slow && snap >= ctx_len(ctx) && enf_copy_record(ctx, h, hlen, 0xffffffffu) == 0) {
		enf_count(port, ctx_len(ctx), ENF_TX);
		return 1;
	}
#endif
	(void)hlen;
	enf_copy_slow(ctx, md, port, snap);
	return 0;
}
