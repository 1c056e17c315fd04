/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* Structures shared between the fast path and the daemon. Layouts are mirrored
 * in internal/datapath/abi.go; change both together. */
#pragma once

#include <linux/types.h>

/* EDGENF_ABI(tag) puts struct tag into the object's BTF when neither a map
 * nor a function of the object carries it (a header the fast path writes to
 * a ring, a trailer it reads from a frame), so that the test of its Go
 * mirror (internal/btflayout) finds it. It costs nothing: the variable lives
 * in a section the loader ignores. */
#define EDGENF_ABI(tag) struct tag enf_abi_##tag __attribute__((section(".edgenf.abi"), used))

#define EDGENF_MAX_PORTS 64   /* ports per cube */
#define EDGENF_MAX_STACK 8    /* transparent cubes run on one hop */
#define EDGENF_MAX_SLOTS 16384 /* cubes per hook (patch panel size) */
#define EDGENF_PUNT_SNAPLEN 1536
/* Punt reason reserved by the framework: the daemon sends the punted frame
 * out of port "arg" of the punting cube (copy.h: copies XDP cannot make). */
#define EDGENF_PUNT_TRANSMIT 0xfffffff0u

/* Where a hop ends once its transparent stack has run. */
enum edgenf_dst {
	EDGENF_DST_NONE = 0,  /* unpeered port: drop */
	EDGENF_DST_IFACE = 1, /* redirect out of a Linux interface */
	EDGENF_DST_CUBE = 2,  /* tail-call another cube, entering on a port */
	EDGENF_DST_STACK = 3, /* hand the frame to the Linux stack */
};

/* Direction a transparent cube sees a packet in, relative to the point it is
 * attached to: ingress = towards the cube or host owning that point. */
enum edgenf_dir {
	EDGENF_DIR_INGRESS = 0,
	EDGENF_DIR_EGRESS = 1,
};

/* One hop: value of a port map entry. The daemon resolves the whole path of a
 * port (its attachments, the peer's attachments, the peer itself) into it, so
 * the fast path does one lookup per hop. */
struct edgenf_hop {
	__u32 kind;    /* enum edgenf_dst */
	__u32 ifindex; /* EDGENF_DST_IFACE */
	__u32 slot;    /* EDGENF_DST_CUBE: patch panel slot of the peer */
	__u32 port;    /* EDGENF_DST_CUBE: port index on the peer */
	__u8 nstack;   /* transparent cubes to run first */
	__u8 pad[3];
	__u16 stack[EDGENF_MAX_STACK]; /* their slots, in order */
	__u8 dir[EDGENF_MAX_STACK];    /* enum edgenf_dir each one sees */
};

/* Per-packet metadata, carried across tail calls in a per-CPU scratch slot.
 * A packet is processed start to end on one CPU without interleaving, so one
 * slot per CPU is enough. */
struct edgenf_md {
	__u32 cube;            /* slot of the cube now running */
	__u32 in_port;         /* port it received the packet on */
	__u32 ingress_ifindex; /* interface the frame entered the framework on */
	__u32 tenant;
	__u32 mark;            /* free for NFs; survives across cubes */
	__u32 pos;             /* index in hop.stack of the transparent cube now running */
	__u32 hops;            /* cubes traversed, to stop forwarding loops */
	__u32 priority;        /* skb->priority the frame leaves an interface with; 0: as it is (verdict.h: enf_out) */
	struct edgenf_hop hop; /* the delivery in progress */
};

/* Per-port counters (per CPU, summed by the daemon). Index EDGENF_MAX_PORTS
 * holds cube-wide drops and punts that belong to no port. */
struct edgenf_stats {
	__u64 rx_packets;
	__u64 rx_bytes;
	__u64 tx_packets;
	__u64 tx_bytes;
	__u64 drop_packets;
	__u64 drop_bytes;
	__u64 punt_packets;
	__u64 punt_rate_drops; /* punts over the cube's budget (verdict.h: enf_punt_allowed) */
};

/* A cube's punt budget (maps.h: enf_punt_budget), a token bucket kept as
 * GCRA's one timestamp: tat is when the bucket would be full again. A
 * punt is let through while tat, moved one interval on, stays within
 * burst of now. The daemon writes interval and burst (and zeroes tat);
 * interval 0 is no limit, burst 0 lets nothing through. */
struct edgenf_punt_budget {
	__u64 tat;      /* ns, bpf_ktime_get_ns */
	__u64 interval; /* ns per punt at the sustained rate */
	__u64 burst;    /* ns: punts in a burst x interval */
	__u64 pad;
};

/* In the data_meta of a frame an XDP program passes up so that it leaves
 * through the skb path with a priority (verdict.h: enf_out): the copy
 * machine (stub.bpf.c: edgenf_copier), first at TC ingress, gives it
 * skb->priority and redirects it out of ifindex, through that interface's
 * qdisc. */
struct edgenf_prio_meta {
	__u32 magic; /* EDGENF_PRIO_MAGIC */
	__u32 ifindex;
	__u32 priority;
	__u32 pad;
};
#define EDGENF_PRIO_MAGIC 0x7072696f /* "prio" */

/* Header of a punted packet on the perf ring; the packet bytes follow. */
struct edgenf_punt_hdr {
	__u32 magic; /* EDGENF_PUNT_MAGIC */
	__u32 cube;
	__u32 in_port;
	__u32 reason;
	__u32 arg;
	__u32 pkt_len; /* length on the wire; the capture may be shorter */
	__u32 ifindex;
	__u32 hook; /* 0 xdp, 1 tc */
};
#define EDGENF_PUNT_MAGIC 0x65646766 /* "edgf" */

/* Trailer the slow path appends to a frame it injects: the hop the frame is
 * to take. The injector program strips it. */
struct edgenf_inject_trailer {
	struct edgenf_hop hop;
	__u32 hook; /* 0 xdp, 1 tc: which injector handles it */
	__u32 magic; /* EDGENF_INJECT_MAGIC */
};
#define EDGENF_INJECT_MAGIC 0x696e6a65 /* "inje" */

/* Settings of the whole datapath, written by the daemon (one entry of the
 * shared map enf_config, copy.h). */
struct edgenf_config {
	__u32 inject_ifindex; /* near end of the injection veth; 0: none yet */
	__u32 pad[3];
};
