// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* upf: the 5G user plane function's fast path (standard cube, ports n3, n6
 * and n9).
 *
 *  - GTP-U G-PDUs to the port's address on n3/n9 are looked up by TEID;
 *    plain IP on n6 by destination (the UE's IPv4 address, or the /64 of
 *    its IPv6 address: through an array indexed by its offset in its UE
 *    pool when it is in one, else a hash). Each key leads to a list of rules (a PFCP PDR with
 *    one of its SDF filters and QFIs), tried in precedence order by a
 *    bpf_loop over facts extracted from the packet once.
 *  - The matched rule's QERs gate the packet and police it (a lock-free
 *    GCRA token bucket per direction: one compare-and-swap on a shared
 *    theoretical arrival time), its counter block counts it (one block
 *    per rule and CPU: the daemon sums a URR's usage from the blocks of the
 *    rules that name it), URRs with thresholds or quotas count them down
 *    (atomic down-counters that punt an event when they cross zero), and
 *    its FAR forwards it (decapsulate, encapsulate with the
 *    PDU Session Container when a QFI is set, set the MACs), drops it,
 *    buffers it (punt to the daemon) and/or notifies the SMF of the first
 *    packet (NOCP, once per FAR).
 *  - Echo Requests, Error Indications, End Markers, G-PDUs to unknown TEIDs
 *    (rate-limited), ARP and NDP go to the slow path; ARP requests and
 *    neighbour solicitations for the port's addresses are answered here.
 *  - Frames the daemon releases from a buffer come in on port 63 with the
 *    rule to apply in a trailer.
 *
 * Ports are found by role (their name), not index. Layouts are mirrored in kernel.go; indexes 0 of the rule, FAR, QER, URR
 * and SDF arrays mean "none". */
#include <edgenf/edgenf.h>
#include <edgenf/arp.h>
#include <edgenf/copy.h>

#ifndef BPF_F_ADJ_ROOM_DECAP_L3_IPV4 /* linux 6.3 UAPI */
#define BPF_F_ADJ_ROOM_DECAP_L3_IPV4 (1ULL << 7)
#define BPF_F_ADJ_ROOM_DECAP_L3_IPV6 (1ULL << 8)
#endif

/* The sizes of a cube of the default max_sessions (131,072). The daemon
 * sizes each cube's maps for its max_sessions before loading (sizes.go),
 * and sets the two constants below that the fast path computes indexes
 * with: every other index is bounded by its array. */
#define UPF_MAX_RULES 262144
#define UPF_MAX_FARS 262144
#define UPF_MAX_QERS 131072
#define UPF_MAX_URRS 131072
#define UPF_MAX_SDFS 65536
#define UPF_MAX_KEYS 262144
#define UPF_TEID_SLOTS 131072
#define UPF_MAX_NEIGH 4096

/* the blocks of a row of upf_rule_count: the size of upf_rules */
volatile const __u32 upf_rule_row = UPF_MAX_RULES;
/* upf_teid_slots' size - 1 (a power of two) */
volatile const __u32 upf_teid_slot_mask = UPF_TEID_SLOTS - 1;
#define UPF_LIST_MAX 32
#define UPF_RULE_QERS 2
#define UPF_RULE_URRS 4

/* port roles (the port's name) */
#define UPF_N3 1
#define UPF_N6 2
#define UPF_N9 3
#define UPF_RELEASE 63 /* port index of released frames; no port has it */
#define UPF_RELEASE_MAGIC 0x75706672 /* "upfr" */

#define GTPU_PORT 2152
#define GTP_ECHO_REQ 1
#define GTP_ECHO_RESP 2
#define GTP_ERROR_IND 26
#define GTP_END_MARKER 254
#define GTP_GPDU 255
#define GTP_EXT_PDU_SESSION 0x85

#ifndef IPPROTO_ICMPV6
#define IPPROTO_ICMPV6 58
#endif

/* punt reasons (kernel.go) */
enum {
	UPF_PUNT_ECHO = 1,  /* GTP-U Echo Request: answered by the daemon */
	UPF_PUNT_ERRIND,    /* GTP-U Error Indication from a peer */
	UPF_PUNT_NO_TEID,   /* G-PDU for no tunnel: Error Indication (rate-limited) */
	UPF_PUNT_BUFF,      /* arg: rule. The packet as received, to buffer */
	UPF_PUNT_NOCP,      /* arg: rule. A copy: first packet of a NOCP FAR */
	UPF_PUNT_URR,       /* arg: URR. A copy: a threshold or quota reached */
	UPF_PUNT_NEIGH,     /* arg: out port. Ready but for the destination MAC */
	UPF_PUNT_NEIGH_IN,  /* a copy of ARP / NDP for the port: learn */
	UPF_PUNT_END_MARKER, /* GTP-U End Marker from a peer */
};

/* counters (upf_stats indexes, kernel.go). The first four, the packets and
 * octets forwarded by direction, the fast path does not write: they are the
 * sums of the rules' counter blocks, which the daemon adds up. Here it keeps
 * the part of them that no block holds any more (the counts of the rules it
 * has freed since the last reset of the counters). */
enum {
	UPF_ST_UL_PKTS,
	UPF_ST_UL_BYTES,
	UPF_ST_DL_PKTS,
	UPF_ST_DL_BYTES,
	UPF_ST_DROP_NO_SESSION, /* no tunnel or UE address matches */
	UPF_ST_DROP_NO_RULE,    /* a session, but no PDR matches */
	UPF_ST_DROP_FAR,        /* FAR says drop */
	UPF_ST_DROP_GATE,       /* a QER's gate is closed */
	UPF_ST_DROP_MBR,        /* above a QER's maximum bit rate */
	UPF_ST_DROP_QUOTA,      /* a URR's volume quota is used up */
	UPF_ST_DROP_MALFORMED,  /* bad GTP-U or inner header */
	UPF_ST_DROP_NOT_GTP,    /* non-GTP-U traffic on n3/n9, other traffic on n6 */
	UPF_ST_DROP_TOO_BIG,    /* no room to encapsulate, or a GSO packet at TC */
	UPF_ST_BUFFERED,
	UPF_ST_NO_TEID,         /* G-PDUs to unknown TEIDs */
	UPF_ST_ECHO,
	UPF_ST_ERRIND,
	UPF_ST_END_MARKER,
	UPF_ST_NEIGH_MISS,
	UPF_ST_ARP_REPLIES,
	UPF_ST_NA_REPLIES,
	UPF_ST_DUPLICATED,      /* DUPL copies made in the kernel */
	UPF_ST_DUPL_SLOW,       /* DUPL copies sent through the daemon */
	UPF_ST_DUPL_LOST,       /* DUPL copies not made (next hop unknown, no room) */
	UPF_ST_N,
};

struct upf_port {
	__u8 mac[ETH_ALEN];
	__u8 has4;
	__u8 has6;
	__u8 role; /* UPF_N3, UPF_N6, UPF_N9; 0: no port */
	__u8 pad[3];
	__be32 ip4;
	__be32 gw4; /* next hop; 0: the destination itself */
	__u32 ip6[4];
	__u32 gw6[4];
};

/* Rule entries end with their owner: the session's SEID and the PFCP rule
 * ID. The daemon reads it back after a restart to adopt the entries (and
 * their counters); the fast path ignores it. */
#define UPF_OWNER \
	__u64 seid; \
	__u32 id;   \
	__u32 retired /* rules: the generation in which the rule left its lists */

#define RULE_GTP 0x01 /* matched by TEID: the GTP-U header is removed */
#define RULE_UL 0x02  /* uplink: the UE is the inner source */
#define RULE_UE4 0x04 /* check the UE's IPv4 address */
#define RULE_UE6 0x08 /* check the UE's IPv6 /64 */
/* << i: the i-th URR has a threshold or quota to count down; without it
 * the URR's shared entry is not read (the rule's counter block is its
 * count) */
#define RULE_URR_COUNTDOWN 0x10

#define FAR_FORW 0x01
#define FAR_DROP 0x02
#define FAR_BUFF 0x04
#define FAR_NOCP 0x08
#define FAR_TOS 0x10 /* set the outer ToS */
#define FAR_DUPL 0x20 /* a copy goes to the FAR's dup */

#define OHC_NONE 0
#define OHC_GTP4 4
#define OHC_GTP6 6

/* What a FAR does with a packet. */
struct upf_fwd {
	__u8 action;
	__u8 port;
	__u8 ohc;
	__u8 tos;
	__be32 teid;
	__u32 peer[4]; /* IPv4 in [0] */
};

/* A rule's line: what a packet's path reads of it. It carries a copy of
 * its FAR's forwarding, next to what it matches: the packet's path reads
 * one entry, not two (at 100,000 sessions, one cache miss less). A changed
 * FAR gets a new slot, and so do the rules that use it: copy and FAR never
 * disagree. The FAR's own entry is read only for NOCP (its notified flag)
 * and DUPL, and so is its index (in the rule, not the line: 52 octets, so
 * that a slot's key, a list's head line and its first rule's index fit one
 * cache line). */
struct upf_line {
	/* the QERs that gate or police (a QER that only gives a QFI is in
	 * mark: no read of upf_qers); 0: none */
	__u32 qer[UPF_RULE_QERS];
	__u32 sdf;
	__be32 ue4;
	__u32 ue6[2];
	__u8 flags;
	__u8 qfi;  /* 0: any */
	__u8 n;    /* in a list's head: the list's length; 0 in upf_rules */
	__u8 mark; /* the QFI to mark downlink packets with (its first QER's
		    * that has one); 0: the rule's qfi */
	struct upf_fwd fwd;
};

/* A rule: its line, its FAR (read only for NOCP and DUPL), its URRs (read
 * only when one of them counts down a threshold or quota:
 * RULE_URR_COUNTDOWN) and its owner. */
struct upf_rule {
	struct upf_line line;
	__u32 far;
	__u32 urr[UPF_RULE_URRS];
	UPF_OWNER;
};

/* The rules a TEID or UE address leads to, in precedence order: a copy of
 * the first one's line and its index. A key with one rule (the common case)
 * costs one lookup and no read of upf_rules (at 100,000 sessions, a cache
 * and a TLB miss less). Rules never change in place (a changed rule gets a
 * new slot, and its lists are rewritten), so the copy is never stale. The
 * rules after the first are in a upf_more, read only when the first does
 * not match: in the slot arrays a side array at the slot's index, in the
 * hash maps the rest of the value (upf_hlist). 56 octets: with a slot's key,
 * one cache line. */
struct upf_list {
	struct upf_line head; /* head.n: how many rules */
	__u32 rule;           /* the first's index */
};

/* A list's rules after the first (rule[i]: the list's rule i + 1). */
struct upf_more {
	__u32 rule[UPF_LIST_MAX - 1];
};

/* A list in a hash map (upf_teid, upf_ue4, upf_ue6): the entry has no line
 * of its own to keep, so the rest of the list follows its head. */
struct upf_hlist {
	struct upf_list list;
	struct upf_more more;
};

#define SDF_PROTO 0x001
#define SDF_REMOTE 0x002
#define SDF_LOCAL 0x004
#define SDF_RPORT 0x008
#define SDF_LPORT 0x010
#define SDF_TOS 0x020
#define SDF_SPI 0x040
#define SDF_FL 0x080
#define SDF_V6 0x100 /* the addresses are IPv6 */

struct upf_sdf {
	__u16 flags;
	__u8 proto;
	__u8 tos;
	__u8 tos_mask;
	__u8 pad[3];
	__u16 rport_lo, rport_hi, lport_lo, lport_hi; /* host order */
	__be32 spi;
	__u32 flow_label; /* host order */
	__u32 remote[4], remote_mask[4];
	__u32 local[4], local_mask[4];
	UPF_OWNER;
};

struct upf_far {
	struct upf_fwd fwd;
	__u32 notified; /* NOCP: set by the first packet */
	__u32 pad;
	struct upf_fwd dup; /* DUPL: where the copy goes */
	UPF_OWNER;
};

#define QER_UL_CLOSED 0x01
#define QER_DL_CLOSED 0x02
#define QER_MBR_UL 0x04
#define QER_MBR_DL 0x08

struct upf_qer {
	__u8 gate;
	__u8 qfi;
	__u8 pad[6];
	__u64 cost[2]; /* ns per byte << 16: uplink, downlink */
	__u64 tau[2];  /* burst tolerance, ns */
	__u64 tat[2];  /* theoretical arrival time, ns */
	UPF_OWNER;
};

#define URR_TH_TOTAL 0x01
#define URR_TH_UL 0x02
#define URR_TH_DL 0x04
#define URR_Q_TOTAL 0x08
#define URR_Q_UL 0x10
#define URR_Q_DL 0x20

struct upf_urr {
	__u32 flags;
	__u32 pad;
	__s64 th[3]; /* octets left before the threshold: total, UL, DL */
	__s64 q[3];  /* octets left of the quota */
	UPF_OWNER;
};

/* A rule's counter block: a rule is one direction (RULE_UL), so one pair
 * of counters. 16 octets: four blocks to a cache line. */
struct upf_count {
	__u64 bytes;
	__u64 pkts;
};

struct upf_neigh_key {
	__u32 port; /* | 0x100 for IPv6 */
	__u32 addr[4];
};

struct upf_neigh {
	__u8 mac[ETH_ALEN];
	__u16 pad;
};

struct upf_cfg {
	__u64 no_teid_gap_ns; /* at least this long between two NO_TEID punts per CPU */
	/* the TEIDs the UPF chooses (host order): teid - chosen_base < chosen_n
	 * indexes upf_teid_slots */
	__u32 chosen_base;
	__u32 chosen_n;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct upf_cfg);
} upf_cfg SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, EDGENF_MAX_PORTS);
	__type(key, __u32);
	__type(value, struct upf_port);
} upf_ports SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, UPF_MAX_KEYS);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, __be32); /* TEID */
	__type(value, struct upf_hlist);
} upf_teid SEC(".maps");

/* The uplink lists of the TEIDs the UPF chooses (F-TEID CHOOSE), found by
 * index instead of a hash: the TEID's offset in the chosen range, its low
 * bits the slot, its high bits a generation the daemon bumps when it reuses
 * the slot. The slot holds the full TEID: a stale or forged TEID of the
 * range misses (and falls to upf_teid, where it misses too). teid 0: a free
 * slot. The daemon changes a live slot's list through upf_teid (the slot's
 * teid set to 0 first, the list and its upf_teid_more written, the teid set
 * back), so a packet never reads a half-written list.
 *
 * A slot is one cache line (64 octets; the array is memory-mappable, so its
 * values start on a page): the packet reads the TEID, the head line and its
 * rule's index from one line. At 131,072 slots the array spans 8 MiB, not
 * the 24 of lists with their 32 rule indexes: within the reach of the TLB
 * and the L3 cache. */
struct upf_teid_slot {
	__be32 teid;
	struct upf_list list;
	__u32 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, UPF_TEID_SLOTS);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, struct upf_teid_slot);
} upf_teid_slots SEC(".maps");

/* The rules after the first of the list in the same slot of upf_teid_slots. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, UPF_TEID_SLOTS);
	__type(key, __u32);
	__type(value, struct upf_more);
} upf_teid_more SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, UPF_MAX_KEYS);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, __be32); /* UE IPv4 address */
	__type(value, struct upf_hlist);
} upf_ue4 SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, UPF_MAX_KEYS);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, __u64); /* UE IPv6 /64, as in the packet */
	__type(value, struct upf_hlist);
} upf_ue6 SEC(".maps");

/* UE address pools (the cube's ue_pools, pools.go): a downlink packet to
 * an address in a pool finds its list through an array indexed by the
 * address's offset in the pool, not by a hash (about 33 ns on a CPU that
 * mitigates return speculation; an array lookup is inlined). Each pool has
 * a window of upf_ue_slots, in the order of the settings; a pool larger
 * than the slots left is indexed only up to them. */
#define UPF_POOLS 8 /* indexed pools per family */
#define UPF_POOL_SLOTS 131072

struct upf_pool {
	__u64 base;  /* its first address (IPv4) or /64 (IPv6), host order */
	__u32 size;  /* how many addresses or /64s of it are indexed */
	__u32 first; /* the slot of base */
};

struct upf_pools {
	__u32 n4, n6;
	struct upf_pool v4[UPF_POOLS];
	struct upf_pool v6[UPF_POOLS];
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct upf_pools);
} upf_pools SEC(".maps");

/* A pooled UE address's slot is the index of its list in upf_ue_lists (0:
 * none). A changed list is written at a new index and the slot switched to
 * it, as rules are: a packet sees the old list or the new one. The list
 * holds its address, which is checked: a slot read through a stale pool
 * table, half-written or empty is a miss, and the hash is asked. A list is
 * one cache line (the array is memory-mappable: its values start on a
 * page); its rules after the first are in upf_ue_more at the same index,
 * written before the list. */
struct upf_ue_list {
	__u64 ue; /* IPv4 address in the low 32 bits, or the /64: as in the packet */
	struct upf_list list; /* its head in the same line as ue */
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, UPF_POOL_SLOTS);
	__type(key, __u32);
	__type(value, __u32);
} upf_ue_slots SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, UPF_POOL_SLOTS);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, struct upf_ue_list);
} upf_ue_lists SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, UPF_POOL_SLOTS);
	__type(key, __u32);
	__type(value, struct upf_more);
} upf_ue_more SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, UPF_MAX_RULES);
	__type(key, __u32);
	__type(value, struct upf_rule);
} upf_rules SEC(".maps");

/* The rules' counter blocks, one per rule and CPU, in one plain array: a
 * row of upf_rule_row blocks per possible CPU, block (cpu, rule) at
 * cpu * upf_rule_row + rule. The daemon multiplies max_entries by the
 * number of possible CPUs before loading (sizes.go: sizeFor). A per-CPU array
 * would cost a packet of a cold session two misses, each on a 4 KiB page
 * of its own (the array's pointer to the rule's per-CPU block, then the
 * block); this costs one. A CPU writes only its own row, as it would its
 * per-CPU copy. The daemon reads the blocks through a memory mapping (no
 * system call per CPU and rule). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, UPF_MAX_RULES);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, struct upf_count);
} upf_rule_count SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, UPF_MAX_SDFS);
	__type(key, __u32);
	__type(value, struct upf_sdf);
} upf_sdfs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, UPF_MAX_FARS);
	__type(key, __u32);
	__type(value, struct upf_far);
} upf_fars SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, UPF_MAX_QERS);
	__type(key, __u32);
	__type(value, struct upf_qer);
} upf_qers SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, UPF_MAX_URRS);
	__type(key, __u32);
	__type(value, struct upf_urr);
} upf_urrs SEC(".maps");

/* The daemon's usage accounting of each URR (the measurement's start, its
 * counters then, the report sequence, the configuration): kept here so that
 * it survives the daemon. The fast path never reads it. */
struct upf_urr_rep {
	__u8 b[136];
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, UPF_MAX_URRS);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, __u32);
	__type(value, struct upf_urr_rep);
} upf_urr_rep SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, UPF_MAX_NEIGH);
	__type(key, struct upf_neigh_key);
	__type(value, struct upf_neigh);
} upf_neigh SEC(".maps");

/* The generation of upf_neigh: the daemon bumps it after every change. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} upf_neigh_gen SEC(".maps");

/* Per CPU, port and family: the last next hop found in upf_neigh and the
 * generation of upf_neigh it was found in (0: none yet). Traffic mostly goes to one next hop per direction (the N6
 * gateway, a gNB), so this saves the hash of a 20-octet key per packet.
 * Runs on one CPU do not interleave (the receive path has bottom halves
 * off), so the entry is never read half-written. */
struct upf_neigh_cache {
	struct upf_neigh_key k;
	__u8 mac[ETH_ALEN];
	__u16 pad;
	__u64 gen;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 2 * EDGENF_MAX_PORTS); /* port, + EDGENF_MAX_PORTS for IPv6 */
	__type(key, __u32);
	__type(value, struct upf_neigh_cache);
} upf_neigh_cache SEC(".maps");

ENF_COUNTERS(upf_stats, UPF_ST_N);

/* per CPU: room to compute an IPv6 UDP checksum in */
#define UPF_CSUM_MAX 4096
struct upf_buf {
	__u8 b[UPF_CSUM_MAX];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct upf_buf);
} upf_scratch SEC(".maps");

/* per CPU: time of the last NO_TEID punt */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} upf_punt_time SEC(".maps");

/* Makes the first n bytes (or the whole frame, if shorter) directly
 * readable. */
static __always_inline int upf_pull(ctx_t *ctx, __u32 n)
{
	__u32 len = ctx_len(ctx);

	return ctx_pull(ctx, len < n ? len : n);
}

static __always_inline int upf_drop(ctx_t *ctx, struct edgenf_md *md, __u32 why)
{
	enf_counter_inc(&upf_stats, why);
	return enf_drop(ctx, md);
}

/* What the rules match on, read from the packet once. Addresses in
 * network order, IPv4 in [0]. */
struct upf_flow {
	__u32 src[4];
	__u32 dst[4];
	__u16 sport, dport; /* host order; 0 when the packet has none */
	__u8 v6;
	__u8 proto;
	__u8 tos;
	__u8 qfi;
	__u8 ports;    /* sport/dport are valid */
	__u8 released; /* a frame the daemon released from a buffer */
	__u16 inner;   /* offset of the inner IP header in the frame */
	__u32 flow_label;
	__be32 spi;
	__u32 len; /* the inner IP packet's length: what URRs count */
	struct upf_more *more; /* the looked-up list's rules after the first */
};

/* Reads the inner IP header at off into f. Returns -1 if it is not IP. */
static __always_inline int upf_inner(ctx_t *ctx, __u32 off, struct upf_flow *f)
{
	void *data = ctx_data(ctx);
	__u8 *p = data + (off & 0xff);
	__u32 l4;

	if (!enf_in_bounds(ctx, p, 1))
		return -1;
	if ((p[0] >> 4) == 4) {
		struct iphdr *ip = (void *)p;

		if (!enf_in_bounds(ctx, ip, sizeof(*ip)) || ip->ihl < 5)
			return -1;
		f->v6 = 0;
		f->src[0] = ip->saddr;
		f->dst[0] = ip->daddr;
		f->proto = ip->protocol;
		f->tos = ip->tos;
		f->len = bpf_ntohs(ip->tot_len);
		if (ip->frag_off & bpf_htons(0x1fff))
			return 0; /* not the first fragment: no ports */
		l4 = (off & 0xff) + ip->ihl * 4;
	} else if ((p[0] >> 4) == 6) {
		struct ipv6hdr *ip6 = (void *)p;

		if (!enf_in_bounds(ctx, ip6, sizeof(*ip6)))
			return -1;
		f->v6 = 1;
		__builtin_memcpy(f->src, &ip6->saddr, 16);
		__builtin_memcpy(f->dst, &ip6->daddr, 16);
		f->proto = ip6->nexthdr;
		f->tos = (p[0] << 4) | (p[1] >> 4);
		f->flow_label = ((__u32)(p[1] & 0x0f) << 16) | ((__u32)p[2] << 8) | p[3];
		f->len = bpf_ntohs(ip6->payload_len) + sizeof(*ip6);
		l4 = (off & 0xff) + sizeof(*ip6);
	} else {
		return -1;
	}
	if (f->proto == IPPROTO_TCP || f->proto == IPPROTO_UDP || f->proto == IPPROTO_SCTP) {
		__be16 *ports = data + (l4 & 0x1ff);

		if (enf_in_bounds(ctx, ports, 4)) {
			f->sport = bpf_ntohs(ports[0]);
			f->dport = bpf_ntohs(ports[1]);
			f->ports = 1;
		}
	} else if (f->proto == IPPROTO_ESP) {
		__be32 *spi = data + (l4 & 0x1ff);

		if (enf_in_bounds(ctx, spi, 4))
			f->spi = *spi;
	}
	return 0;
}

static __always_inline int upf_ip6_eq(const void *a, const void *b)
{
	const __u32 *x = a, *y = b;

	return x[0] == y[0] && x[1] == y[1] && x[2] == y[2] && x[3] == y[3];
}

static __always_inline int upf_addr_match(const __u32 *a, const __u32 *want, const __u32 *mask)
{
	return ((a[0] & mask[0]) == want[0]) && ((a[1] & mask[1]) == want[1]) &&
	       ((a[2] & mask[2]) == want[2]) && ((a[3] & mask[3]) == want[3]);
}

/* Does the flow match SDF filter s? Filters are written downlink (TS 29.244
 * 5.2.1A.2A): "remote" is the source of downlink packets, the destination of
 * uplink ones. */
static __always_inline int upf_sdf_match(struct upf_sdf *s, struct upf_flow *f, int ul)
{
	__u16 fl = s->flags;
	__u32 *remote = ul ? f->dst : f->src;
	__u32 *local = ul ? f->src : f->dst;
	__u16 rport = ul ? f->dport : f->sport;
	__u16 lport = ul ? f->sport : f->dport;

	if ((fl & (SDF_REMOTE | SDF_LOCAL)) && !!(fl & SDF_V6) != f->v6)
		return 0;
	if ((fl & SDF_PROTO) && s->proto != f->proto)
		return 0;
	if ((fl & SDF_REMOTE) && !upf_addr_match(remote, s->remote, s->remote_mask))
		return 0;
	if ((fl & SDF_LOCAL) && !upf_addr_match(local, s->local, s->local_mask))
		return 0;
	if ((fl & (SDF_RPORT | SDF_LPORT)) && !f->ports)
		return 0;
	if ((fl & SDF_RPORT) && (rport < s->rport_lo || rport > s->rport_hi))
		return 0;
	if ((fl & SDF_LPORT) && (lport < s->lport_lo || lport > s->lport_hi))
		return 0;
	if ((fl & SDF_TOS) && (f->tos & s->tos_mask) != s->tos)
		return 0;
	if ((fl & SDF_SPI) && (f->proto != IPPROTO_ESP || f->spi != s->spi))
		return 0;
	if ((fl & SDF_FL) && (!f->v6 || f->flow_label != s->flow_label))
		return 0;
	return 1;
}

/* Does rule r take the packet whose flow is f? */
static __always_inline int upf_rule_ok(struct upf_line *r, struct upf_flow *f)
{
	int ul = r->flags & RULE_UL;

	if (r->qfi && r->qfi != f->qfi)
		return 0;
	/* A tunnel's rule that names the UE's addresses takes only packets
	 * from (uplink) or to them, of either family it names. */
	if (r->flags & (RULE_UE4 | RULE_UE6)) {
		__u32 *ue = ul ? f->src : f->dst;

		if (f->v6 && (!(r->flags & RULE_UE6) || ue[0] != r->ue6[0] || ue[1] != r->ue6[1]))
			return 0;
		if (!f->v6 && (!(r->flags & RULE_UE4) || ue[0] != r->ue4))
			return 0;
	}
	if (r->sdf) {
		__u32 s = r->sdf;
		struct upf_sdf *sdf = bpf_map_lookup_elem(&upf_sdfs, &s);

		if (!sdf || !upf_sdf_match(sdf, f, ul))
			return 0;
	}
	return 1;
}

/* The first rules of a list are tried inline: most lists hold one or two
 * (a PDR without SDF filters, or one per direction of a tunnel), and a
 * bpf_loop costs an indirect call per rule. Longer lists go on in
 * bpf_loop, whose verification cost does not grow with the list. */
#define UPF_LIST_INLINE 2

struct upf_match {
	struct upf_list *list;
	struct upf_more *more;
	struct upf_flow *flow;
	__u32 rule; /* the first rule that matches, 0: none */
};

/* bpf_loop body: try rule UPF_LIST_INLINE + i of the list. */
static long upf_try(__u32 i, void *data)
{
	struct upf_match *m = data;
	struct upf_rule *r;
	__u32 idx;

	i += UPF_LIST_INLINE - 1; /* its index in more */
	if (i >= UPF_LIST_MAX - 1 || i + 1 >= m->list->head.n)
		return 1;
	idx = m->more->rule[i];
	r = bpf_map_lookup_elem(&upf_rules, &idx);
	if (!r || !upf_rule_ok(&r->line, m->flow))
		return 0;
	m->rule = idx;
	return 1;
}

/* GCRA (virtual scheduling): the packet conforms if the theoretical arrival
 * time is at most tau ahead of now; it then moves on by the packet's cost.
 * One compare-and-swap on a shared word; after a few lost races the packet
 * is charged with an atomic add and let through. */
static __always_inline int upf_mbr_ok(struct upf_qer *q, int dir, __u32 len, __u64 now)
{
	__u64 cost = ((__u64)len * q->cost[dir & 1]) >> 16;
	__u64 tau = q->tau[dir & 1];
	__u64 *tatp = &q->tat[dir & 1];

#pragma unroll
	for (int k = 0; k < 4; k++) {
		__u64 tat = *(volatile __u64 *)tatp;
		__u64 base = tat > now ? tat : now;

		if (base - now > tau)
			return 0;
		if (__sync_val_compare_and_swap(tatp, tat, base + cost) == tat)
			return 1;
	}
	__sync_fetch_and_add(tatp, cost);
	return 1;
}

/* Count down a threshold or quota; returns 1 when this packet crossed zero. */
static __always_inline int upf_countdown(__s64 *left, __u32 len)
{
	__s64 before = __sync_fetch_and_add(left, -(__s64)len);

	return before > 0 && before <= (__s64)len;
}

/* Counts the packet down a URR's thresholds and quotas; returns -1 if its
 * quota is used up. */
static __always_inline int upf_urr(ctx_t *ctx, struct edgenf_md *md, __u32 idx, int dl, __u32 len)
{
	struct upf_urr *u = bpf_map_lookup_elem(&upf_urrs, &idx);
	int event = 0;

	if (!u)
		return 0;
	if (u->flags & (URR_Q_TOTAL | URR_Q_UL | URR_Q_DL)) {
		if ((u->flags & URR_Q_TOTAL) && u->q[0] <= 0)
			return -1;
		if ((u->flags & (dl ? URR_Q_DL : URR_Q_UL)) && u->q[dl ? 2 : 1] <= 0)
			return -1;
		if (u->flags & URR_Q_TOTAL)
			event |= upf_countdown(&u->q[0], len);
		if (u->flags & (dl ? URR_Q_DL : URR_Q_UL))
			event |= upf_countdown(&u->q[dl ? 2 : 1], len);
	}
	if (u->flags & URR_TH_TOTAL)
		event |= upf_countdown(&u->th[0], len);
	if (u->flags & (dl ? URR_TH_DL : URR_TH_UL))
		event |= upf_countdown(&u->th[dl ? 2 : 1], len);
	if (event)
		enf_report(ctx, md, md->cube, md->in_port, UPF_PUNT_URR, idx, 0);
	return 0;
}

static __always_inline __u16 upf_fold(__u64 s)
{
	s = (s & 0xffffffff) + (s >> 32);
	s = (s & 0xffff) + (s >> 16);
	s = (s & 0xffff) + (s >> 16);
	return (__u16)s;
}

/* The UDP checksum of an IPv6 + UDP datagram in the frame at l3 (mandatory
 * over IPv6: RFC 8200 8.1), the UDP checksum field being zero. The datagram
 * is copied into a per-CPU buffer first: bpf_csum_diff cannot be proven to
 * stay inside a packet over a length known only at run time. Returns 0 when
 * the datagram is longer than the buffer. Out of line: one copy for both
 * encapsulations (the packet's and a DUPL copy's). */
static __attribute__((noinline)) __sum16 upf_udp6_csum(ctx_t *ctx, __u32 l3, __u32 udplen)
{
	struct ipv6hdr *ip6 = enf_ptr(ctx, l3 & 0xff);
	struct upf_buf *buf;
	__u32 zero = 0, padded;
	__u64 sum = 0;
	__u16 r;

	if (!enf_in_bounds(ctx, ip6, sizeof(*ip6)) || udplen < 8 || udplen > UPF_CSUM_MAX - 4)
		return 0;
	buf = bpf_map_lookup_elem(&upf_scratch, &zero);
	if (!buf)
		return 0;
	/* pseudo header: addresses, length, next header */
#pragma unroll
	for (int i = 0; i < 4; i++)
		sum += ((__u32 *)&ip6->saddr)[i] + (__u64)((__u32 *)&ip6->daddr)[i];
	sum += bpf_htonl(udplen) + (__u64)bpf_htonl(IPPROTO_UDP);
	padded = (udplen + 3) & ~3u;
	*(__u32 *)(buf->b + ((padded - 4) & (UPF_CSUM_MAX - 4))) = 0; /* zero padding */
	/* already below: for the verifier, whose view the compiler's
	 * knowledge would otherwise optimise away */
	asm volatile("" : "+r"(udplen));
	udplen &= UPF_CSUM_MAX - 1;
	if (udplen < 8 || ctx_load_bytes(ctx, l3 + sizeof(*ip6), buf->b, udplen))
		return 0;
#pragma unroll
	for (int i = 0; i < UPF_CSUM_MAX / 512; i++) {
		__u32 n;

		if (i * 512 >= padded)
			break;
		n = padded - i * 512;
		asm volatile("" : "+r"(n));
		if (n > 512)
			n = 512;
		sum = bpf_csum_diff(0, 0, (void *)(buf->b + i * 512), n, upf_fold(sum));
	}
	r = ~upf_fold(sum);
	return r ? r : 0xffff;
}

/* Sets the Ethernet header for leaving by port p (index out) towards the
 * next hop of dst (IPv4 in dst[0]). Returns 1 when the neighbour is
 * unknown. */
static __always_inline int upf_l2(ctx_t *ctx, struct upf_port *p, __u32 out, int v6, __u32 *dst)
{
	struct ethhdr *eth = ctx_data(ctx);
	struct upf_neigh_key k = {.port = out | (v6 ? 0x100 : 0)};
	struct upf_neigh_cache *c;
	struct upf_neigh *n;
	__u32 zero = 0, slot = (out & (EDGENF_MAX_PORTS - 1)) | (v6 ? EDGENF_MAX_PORTS : 0);
	__u64 *gen, g;

	if (!enf_in_bounds(ctx, eth, sizeof(*eth)))
		return -1;
	if (v6) {
		if (p->gw6[0] | p->gw6[1] | p->gw6[2] | p->gw6[3])
			__builtin_memcpy(k.addr, p->gw6, 16);
		else
			__builtin_memcpy(k.addr, dst, 16);
	} else {
		k.addr[0] = p->gw4 ? p->gw4 : dst[0];
	}
	__builtin_memcpy(eth->h_source, p->mac, ETH_ALEN);
	eth->h_proto = bpf_htons(v6 ? ETH_P_IPV6 : ETH_P_IP);
	gen = bpf_map_lookup_elem(&upf_neigh_gen, &zero);
	c = bpf_map_lookup_elem(&upf_neigh_cache, &slot);
	if (!gen || !c)
		return -1;
	g = *(volatile __u64 *)gen;
	if (g && c->gen == g && c->k.port == k.port && c->k.addr[0] == k.addr[0] && c->k.addr[1] == k.addr[1] &&
	    c->k.addr[2] == k.addr[2] && c->k.addr[3] == k.addr[3]) {
		__builtin_memcpy(eth->h_dest, c->mac, ETH_ALEN);
		return 0;
	}
	n = bpf_map_lookup_elem(&upf_neigh, &k);
	if (!n)
		return 1;
	__builtin_memcpy(eth->h_dest, n->mac, ETH_ALEN);
	c->k = k;
	__builtin_memcpy(c->mac, n->mac, ETH_ALEN);
	c->gen = g;
	return 0;
}

/* Removes the outer Ethernet/IP/UDP/GTP-U headers: the inner packet, which
 * starts at inner, follows a new Ethernet header (rewritten by upf_l2). */
static __always_inline int upf_decap(ctx_t *ctx, __u32 inner, int inner_v6)
{
#if defined(EDGENF_HOOK_XDP)
	(void)inner_v6;
	return bpf_xdp_adjust_head(ctx, (int)inner - (int)sizeof(struct ethhdr));
#else
	struct ethhdr *eth = ctx_data(ctx);
	__u64 flags = 0;
	int outer_v6;

	if (!enf_in_bounds(ctx, eth, sizeof(*eth)))
		return -1;
	outer_v6 = eth->h_proto == bpf_htons(ETH_P_IPV6);
	if (outer_v6 != inner_v6)
		flags = inner_v6 ? BPF_F_ADJ_ROOM_DECAP_L3_IPV6 : BPF_F_ADJ_ROOM_DECAP_L3_IPV4;
	return bpf_skb_adjust_room(ctx, -(int)(inner - sizeof(struct ethhdr)), BPF_ADJ_ROOM_MAC, flags);
#endif
}

struct gtp_ext_dl {
	__be16 seq;
	__u8 npdu;
	__u8 next; /* 0x85 */
	__u8 len;  /* 1 (4 octets) */
	__u8 type; /* PDU type 0 (DL PDU SESSION INFORMATION) << 4 */
	__u8 qfi;
	__u8 next2; /* 0: no more */
};

/* Puts the frame (Ethernet + inner IP of len bytes) into a GTP-U tunnel.
 * copy: for a DUPL copy, whose header goes again once it is sent: at TC
 * the skb is not marked encapsulated (the kernel encapsulates an skb only
 * once: the packet's own tunnel would be refused). */
static __always_inline int upf_encap(ctx_t *ctx, struct upf_fwd *far, struct upf_port *p, __u8 qfi, __u32 inner_len,
				     int copy)
{
	int v6 = far->ohc == OHC_GTP6;
	__u32 iplen = v6 ? sizeof(struct ipv6hdr) : sizeof(struct iphdr);
	__u32 gtplen = qfi ? 16 : 8;
	__u32 room = iplen + sizeof(struct udphdr) + gtplen;
	__u32 l4 = sizeof(struct ethhdr) + iplen;
	__u8 *gtp;
	struct udphdr *udp;

	if (v6 ? !p->has6 : !p->has4)
		return -1;
#if defined(EDGENF_HOOK_XDP)
	(void)copy;
	if (bpf_xdp_adjust_head(ctx, -(int)room))
		return -1;
#else
	{
		struct ethhdr *e0 = ctx_data(ctx);
		__u64 fl = BPF_F_ADJ_ROOM_ENCAP_L4_UDP | BPF_F_ADJ_ROOM_ENCAP_L2(gtplen) |
			   (v6 ? BPF_F_ADJ_ROOM_ENCAP_L3_IPV6 : BPF_F_ADJ_ROOM_ENCAP_L3_IPV4);

		if (!enf_in_bounds(ctx, e0, sizeof(*e0)))
			return -1;
		/* (the ENCAP_L3 flag makes the skb's protocol the outer one's) */
		if (ctx->gso_segs > 1)
			return -2;
		if (bpf_skb_adjust_room(ctx, room, BPF_ADJ_ROOM_MAC, copy ? 0 : fl))
			return -1;
		if (upf_pull(ctx, sizeof(struct ethhdr) + room + 40))
			return -1;
	}
#endif
	if (v6) {
		struct ipv6hdr *ip6 = enf_ptr(ctx, sizeof(struct ethhdr));

		if (!enf_in_bounds(ctx, ip6, sizeof(*ip6)))
			return -1;
		*(__be32 *)ip6 = bpf_htonl(0x60000000 | ((__u32)((far->action & FAR_TOS) ? far->tos : 0) << 20));
		ip6->payload_len = bpf_htons(inner_len + sizeof(struct udphdr) + gtplen);
		ip6->nexthdr = IPPROTO_UDP;
		ip6->hop_limit = 64;
		__builtin_memcpy(&ip6->saddr, p->ip6, 16);
		__builtin_memcpy(&ip6->daddr, far->peer, 16);
	} else {
		struct iphdr *ip = enf_ptr(ctx, sizeof(struct ethhdr));
		__be16 vt = bpf_htons(0x4500 | ((far->action & FAR_TOS) ? far->tos : 0));
		__be16 tot = bpf_htons(inner_len + iplen + sizeof(struct udphdr) + gtplen);
		__be32 saddr = p->ip4, daddr = far->peer[0];

		if (!enf_in_bounds(ctx, ip, sizeof(*ip)))
			return -1;
		/* The header checksum from the values in registers, not read
		 * back from the frame: id 0, DF, TTL 64, UDP are constants. */
		*(__be16 *)ip = vt;
		ip->tot_len = tot;
		ip->id = 0;
		ip->frag_off = bpf_htons(0x4000); /* DF */
		ip->ttl = 64;
		ip->protocol = IPPROTO_UDP;
		ip->saddr = saddr;
		ip->daddr = daddr;
		ip->check = ~upf_fold((__u64)vt + tot + bpf_htons(0x4000) + bpf_htons(64 << 8 | IPPROTO_UDP) + saddr + daddr);
	}
	udp = enf_ptr(ctx, l4);
	if (!enf_in_bounds(ctx, udp, sizeof(*udp)))
		return -1;
	udp->source = bpf_htons(GTPU_PORT);
	udp->dest = bpf_htons(GTPU_PORT);
	udp->len = bpf_htons(inner_len + sizeof(*udp) + gtplen);
	udp->check = 0;
	gtp = enf_ptr(ctx, l4 + sizeof(*udp));
	if (!enf_in_bounds(ctx, gtp, 16))
		return -1;
	gtp[0] = qfi ? 0x34 : 0x30; /* version 1, PT, E when a container follows */
	gtp[1] = GTP_GPDU;
	*(__be16 *)(gtp + 2) = bpf_htons(inner_len + gtplen - 8);
	*(__be32 *)(gtp + 4) = far->teid;
	if (qfi) {
		struct gtp_ext_dl *x = (void *)(gtp + 8);

		x->seq = 0;
		x->npdu = 0;
		x->next = GTP_EXT_PDU_SESSION;
		x->len = 1;
		x->type = 0;
		x->qfi = qfi & 0x3f;
		x->next2 = 0;
	}
	if (v6) {
		__sum16 c = upf_udp6_csum(ctx, sizeof(struct ethhdr), inner_len + sizeof(*udp) + gtplen);

		udp = enf_ptr(ctx, l4);
		if (!c || !enf_in_bounds(ctx, udp, sizeof(*udp)))
			return -2;
		udp->check = c;
	}
	return 0;
}

/* DUPL: a copy of the packet, whose frame is now Ethernet + the inner
 * packet (f->len bytes), to the dup destination of rule idx's FAR, with the dup's
 * own outer header or none; then the frame is as it was but for its
 * Ethernet header, which the caller rewrites. The copy shares the packet's
 * payload: at XDP it is recorded for the copy machine (copy.h), at TC the
 * skb is cloned; else it goes through the daemon. A copy whose next hop is
 * unknown goes to the daemon, which resolves it and sends the copy.
 * Returns -1 when the frame was damaged (drop it). Out of line: most FARs
 * do not duplicate, and the apply step's code stays short without it. */
static __attribute__((noinline)) int upf_dupl(ctx_t *ctx, struct edgenf_md *md, __u32 idx, struct upf_flow *f)
{
	struct upf_rule *r = bpf_map_lookup_elem(&upf_rules, &idx);
	struct upf_far *far = r ? bpf_map_lookup_elem(&upf_fars, &r->far) : NULL;
	struct upf_port *p;
	__u32 dp, room;
	int ret;

	if (!far)
		return 0;
	dp = far->dup.port;
	p = bpf_map_lookup_elem(&upf_ports, &dp);
	if (!p)
		return 0;
	if (far->dup.ohc != OHC_NONE) {
		ret = upf_encap(ctx, &far->dup, p, 0, f->len, 1);
		if (!ret)
			ret = upf_l2(ctx, p, dp, far->dup.ohc == OHC_GTP6, far->dup.peer);
	} else {
		ret = upf_l2(ctx, p, dp, f->v6, f->dst);
	}
	if (ret == 0) {
		enf_copy_begin();
		ret = enf_copy(ctx, md, dp, 0xffffffffu, 0, ctx_len(ctx) - f->len);
		if (ret == -2)
			return -1;
		enf_counter_inc(&upf_stats, ret == 1 ? UPF_ST_DUPLICATED : ret == 0 ? UPF_ST_DUPL_SLOW : UPF_ST_DUPL_LOST);
	} else if (ret > 0) {
		enf_counter_inc(&upf_stats, UPF_ST_NEIGH_MISS);
		enf_report(ctx, md, md->cube, md->in_port, UPF_PUNT_NEIGH, dp, EDGENF_PUNT_SNAPLEN);
	} else {
		enf_counter_inc(&upf_stats, UPF_ST_DUPL_LOST);
	}
	/* the copy's outer header goes again */
	room = ctx_len(ctx) - sizeof(struct ethhdr) - f->len;
	if (room && upf_decap(ctx, sizeof(struct ethhdr) + room, f->v6))
		return -1;
	return 0;
}

/* NOCP: the first packet of rule idx's FAR notifies the SMF (a copy to
 * the slow path, once per FAR). Out of line: the apply step's verification
 * does not fork on it. */
static __attribute__((noinline)) int upf_nocp(ctx_t *ctx, struct edgenf_md *md, __u32 idx)
{
	struct upf_rule *r = bpf_map_lookup_elem(&upf_rules, &idx);
	struct upf_far *far = r ? bpf_map_lookup_elem(&upf_fars, &r->far) : NULL;

	if (far && __sync_fetch_and_or(&far->notified, 1) == 0)
		enf_report(ctx, md, md->cube, md->in_port, UPF_PUNT_NOCP, idx, 0);
	return 0;
}

/* The steps of rule r (index idx) that most rules skip: a FAR that does
 * not only forward (drop, buffer, notify), QERs that gate or police, URRs
 * that count down a threshold or quota. Returns the packet's verdict, or -1
 * when it goes on. */
static __always_inline int upf_gate(ctx_t *ctx, struct edgenf_md *md, __u32 idx, struct upf_line *r,
				    struct upf_flow *f)
{
	struct upf_fwd *far = &r->fwd;
	int dl = !(r->flags & RULE_UL);
	__u64 now = 0;

	if ((far->action & FAR_DROP) || !(far->action & (FAR_FORW | FAR_BUFF)))
		return upf_drop(ctx, md, UPF_ST_DROP_FAR);
#pragma unroll
	for (int i = 0; i < UPF_RULE_QERS; i++) {
		__u32 q = r->qer[i];
		struct upf_qer *qer;

		if (!q)
			continue;
		qer = bpf_map_lookup_elem(&upf_qers, &q);
		if (!qer)
			continue;
		if (qer->gate & (dl ? QER_DL_CLOSED : QER_UL_CLOSED))
			return upf_drop(ctx, md, UPF_ST_DROP_GATE);
		if (qer->gate & (dl ? QER_MBR_DL : QER_MBR_UL)) {
			if (!now)
				now = bpf_ktime_get_ns();
			if (!upf_mbr_ok(qer, dl, f->len, now))
				return upf_drop(ctx, md, UPF_ST_DROP_MBR);
		}
	}
	if (far->action & FAR_NOCP)
		upf_nocp(ctx, md, idx);
	if (far->action & FAR_BUFF) {
		if (f->released)
			return upf_drop(ctx, md, UPF_ST_DROP_FAR);
		enf_counter_inc(&upf_stats, UPF_ST_BUFFERED);
		return enf_punt(ctx, md, UPF_PUNT_BUFF, idx);
	}
	if (r->flags & (RULE_URR_COUNTDOWN * 0xf)) {
		struct upf_rule *full = bpf_map_lookup_elem(&upf_rules, &idx);

#pragma unroll
		for (int i = 0; i < UPF_RULE_URRS; i++) {
			__u32 u = full ? full->urr[i] : 0;

			if (u && (r->flags & (RULE_URR_COUNTDOWN << i)) && upf_urr(ctx, md, u, dl, f->len) < 0)
				return upf_drop(ctx, md, UPF_ST_DROP_QUOTA);
		}
	}
	return -1;
}

/* Applies rule r (index idx) to a packet whose flow is f (f->inner: the
 * offset of the inner IP header, after the GTP-U header of a tunnelled
 * packet). */
static __always_inline int upf_apply(ctx_t *ctx, struct edgenf_md *md, __u32 idx, struct upf_line *r,
				     struct upf_flow *f)
{
	__u32 inner = f->inner;
	struct upf_fwd *far;
	struct upf_port *port;
	struct upf_count *rc;
	__u32 out, cidx;
	int ret;

	if (!r)
		return upf_drop(ctx, md, UPF_ST_DROP_NO_RULE);
	far = &r->fwd;
	/* One test for what the common rule (forward, no gate, no policing,
	 * no countdown) does not do. */
	if (enf_unlikely((far->action & (FAR_FORW | FAR_DROP | FAR_BUFF | FAR_NOCP)) != FAR_FORW ||
			 (r->qer[0] | r->qer[1]) || (r->flags & (RULE_URR_COUNTDOWN * 0xf)))) {
		ret = upf_gate(ctx, md, idx, r, f);
		if (ret >= 0)
			return ret;
	}
	cidx = bpf_get_smp_processor_id() * upf_rule_row + idx;
	rc = bpf_map_lookup_elem(&upf_rule_count, &cidx);
	if (rc) {
		rc->bytes += f->len;
		rc->pkts++;
	}

	out = far->port;
	port = bpf_map_lookup_elem(&upf_ports, &out);
	if (!port)
		return upf_drop(ctx, md, UPF_ST_DROP_MALFORMED);
	if (r->flags & RULE_GTP) {
		if (upf_decap(ctx, inner, f->v6))
			return upf_drop(ctx, md, UPF_ST_DROP_MALFORMED);
	}
	/* Ethernet padding of a short frame is not part of the packet. */
	if (ctx_len(ctx) > sizeof(struct ethhdr) + f->len &&
	    ctx_change_tail(ctx, sizeof(struct ethhdr) + f->len))
		return upf_drop(ctx, md, UPF_ST_DROP_MALFORMED);
	if ((far->action & FAR_DUPL) && upf_dupl(ctx, md, idx, f))
		return upf_drop(ctx, md, UPF_ST_DROP_MALFORMED);
	if (far->ohc != OHC_NONE) {
		ret = upf_encap(ctx, far, port, r->mark ? r->mark : r->qfi, f->len, 0);
		if (ret)
			return upf_drop(ctx, md, UPF_ST_DROP_TOO_BIG);
		ret = upf_l2(ctx, port, out, far->ohc == OHC_GTP6, far->peer);
	} else {
		ret = upf_l2(ctx, port, out, f->v6, f->dst);
	}
	if (ret < 0)
		return upf_drop(ctx, md, UPF_ST_DROP_MALFORMED);
	if (ret > 0) {
		enf_counter_inc(&upf_stats, UPF_ST_NEIGH_MISS);
		return enf_punt(ctx, md, UPF_PUNT_NEIGH, out);
	}
#if defined(EDGENF_HOOK_XDP)
	/* a recorded copy: the frame goes to the copy machine, which sends
	 * the copy and then the frame */
	if ((far->action & FAR_DUPL) && enf_copy_pending() && enf_copy_meta(ctx) == 0)
		return enf_copy_last(ctx, md, out, 0xffffffffu, ctx_len(ctx) - f->len);
#endif
	return enf_send(ctx, md, out);
}

#if defined(EDGENF_HOOK_TC)
/* At TC the apply step is a global function: the verifier checks it once,
 * on its own (r and f as memory of their types' sizes), not once for each
 * kind of pointer a rule's line comes in (the head of a list in each map
 * of lists, a rule of upf_rules), whose map values do not prune together:
 * inlined, the TC program verified 875k of the verifier's million
 * instructions. At XDP it stays inlined: no call and return per packet. */
__attribute__((noinline)) int upf_apply_tc(struct __sk_buff *ctx, struct edgenf_md *md, __u32 idx,
					   struct upf_line *r, struct upf_flow *f)
{
	if (!md || !f)
		return TC_ACT_SHOT;
	return upf_apply(ctx, md, idx, r, f);
}
#define upf_apply_step upf_apply_tc
#else
#define upf_apply_step upf_apply
#endif

/* The first rule of list that matches f: its line (NULL: none) and its
 * index in *idx. The rules after the first (f->more) are read only when the
 * first does not match. */
static __always_inline struct upf_line *upf_match(struct upf_list *list, struct upf_flow *f, __u32 *idx)
{
	struct upf_match m = {.list = list, .more = f->more, .flow = f};
	struct upf_rule *r;

	if (!list->head.n)
		return NULL;
	if (upf_rule_ok(&list->head, f)) {
		*idx = list->rule;
		return &list->head;
	}
	if (!m.more)
		return NULL;
#pragma unroll
	for (int i = 1; i < UPF_LIST_INLINE; i++) {
		if (i >= list->head.n)
			return NULL;
		*idx = m.more->rule[i - 1];
		r = bpf_map_lookup_elem(&upf_rules, idx);
		if (r && upf_rule_ok(&r->line, f))
			return &r->line;
	}
	bpf_loop(UPF_LIST_MAX - UPF_LIST_INLINE, upf_try, &m, 0);
	*idx = m.rule;
	r = bpf_map_lookup_elem(&upf_rules, idx);
	if (!m.rule || !r)
		return NULL;
	return &r->line;
}

/* A GTP-U message other than a G-PDU: path management for the slow path. */
static __attribute__((noinline)) int upf_gtp_signal(ctx_t *ctx, struct edgenf_md *md, __u8 type)
{
	switch (type) {
	case GTP_ECHO_REQ:
		enf_counter_inc(&upf_stats, UPF_ST_ECHO);
		return enf_punt(ctx, md, UPF_PUNT_ECHO, 0);
	case GTP_ERROR_IND:
		enf_counter_inc(&upf_stats, UPF_ST_ERRIND);
		return enf_punt(ctx, md, UPF_PUNT_ERRIND, 0);
	case GTP_END_MARKER:
		enf_counter_inc(&upf_stats, UPF_ST_END_MARKER);
		return enf_punt(ctx, md, UPF_PUNT_END_MARKER, 0);
	default:
		return upf_drop(ctx, md, UPF_ST_DROP_NOT_GTP);
	}
}

/* Rate limit of punts about unknown TEIDs, per CPU. */
static __always_inline int upf_no_teid_ok(void)
{
	__u32 zero = 0;
	__u64 *last = bpf_map_lookup_elem(&upf_punt_time, &zero);
	struct upf_cfg *cfg = bpf_map_lookup_elem(&upf_cfg, &zero);
	__u64 now = bpf_ktime_get_ns();

	if (!last || !cfg || now - *last < cfg->no_teid_gap_ns)
		return 0;
	*last = now;
	return 1;
}

/* A G-PDU to a TEID no session has: an Error Indication from the slow path,
 * rate-limited. */
static __attribute__((noinline)) int upf_no_teid(ctx_t *ctx, struct edgenf_md *md, __be32 teid)
{
	enf_counter_inc(&upf_stats, UPF_ST_NO_TEID);
	if (upf_no_teid_ok())
		return enf_punt(ctx, md, UPF_PUNT_NO_TEID, bpf_ntohl(teid));
	return upf_drop(ctx, md, UPF_ST_DROP_NO_SESSION);
}

struct gtphdr {
	__u8 flags;
	__u8 type;
	__be16 len;
	__be32 teid;
};

/* Skips the GTP-U header at *off (with its optional fields and extension
 * headers): *off becomes the inner packet's offset. The PDU Session
 * Container's QFI goes into *qfi. */
static __always_inline int upf_gtp_skip(ctx_t *ctx, __u32 *off, __u8 *qfi)
{
	struct gtphdr *g = enf_ptr(ctx, *off & 0x1ff);
	__u32 o = *off + sizeof(*g);
	__u8 next = 0;

	if (!enf_in_bounds(ctx, g, sizeof(*g)))
		return -1;
	if (g->flags & 0x07) { /* E, S or PN: sequence, N-PDU, next extension */
		__u8 *opt = enf_ptr(ctx, o & 0x1ff);

		if (!enf_in_bounds(ctx, opt, 4))
			return -1;
		if (g->flags & 0x04)
			next = opt[3];
		o += 4;
	}
#pragma unroll
	for (int i = 0; i < 4; i++) {
		__u8 *x;
		__u32 n;

		if (!next)
			break;
		x = enf_ptr(ctx, o & 0x1ff);
		if (!enf_in_bounds(ctx, x, 4))
			return -1;
		n = (__u32)x[0] * 4;
		if (n == 0)
			return -1;
		if (next == GTP_EXT_PDU_SESSION)
			*qfi = x[2] & 0x3f;
		o += n;
		x = enf_ptr(ctx, (o - 1) & 0x1ff);
		if (!enf_in_bounds(ctx, x, 1))
			return -1;
		next = x[0];
	}
	if (next)
		return -1;
	*off = o;
	return 0;
}

/* The rules of a TEID: a TEID of the chosen range by its slot (one compare
 * to know, an array read, no hash), any other (or a chosen one whose slot is
 * being rewritten) by upf_teid. f->more: where the rules after the first
 * are. */
static __always_inline struct upf_list *upf_teid_list(__be32 teid, struct upf_flow *f)
{
	struct upf_hlist *hl;
	struct upf_cfg *cfg;
	__u32 i = 0;

	cfg = bpf_map_lookup_elem(&upf_cfg, &i);
	if (cfg) {
		i = bpf_ntohl(teid) - cfg->chosen_base;
		if (i < cfg->chosen_n) {
			struct upf_teid_slot *s;

			i &= upf_teid_slot_mask;
			s = bpf_map_lookup_elem(&upf_teid_slots, &i);
			if (s && s->teid == teid) {
				f->more = bpf_map_lookup_elem(&upf_teid_more, &i);
				return &s->list;
			}
		}
	}
	hl = bpf_map_lookup_elem(&upf_teid, &teid);
	if (!hl)
		return NULL;
	f->more = &hl->more;
	return &hl->list;
}

/* A UDP datagram to the GTP-U port of n3/n9 (l4: its UDP header): the
 * rules of its TEID, f read from the inner packet. NULL: the packet's
 * verdict is in *v. */
static __always_inline struct upf_list *upf_gtpu(ctx_t *ctx, struct edgenf_md *md, __u32 l4, struct upf_flow *f,
						 int *v)
{
	struct gtphdr *g = enf_ptr(ctx, (l4 + sizeof(struct udphdr)) & 0x1ff);
	struct upf_list *list;
	__u32 off;
	__be32 teid;

	if (!enf_in_bounds(ctx, g, sizeof(*g)) || (g->flags & 0xf0) != 0x30) {
		*v = upf_drop(ctx, md, UPF_ST_DROP_MALFORMED);
		return NULL;
	}
	if (g->type != GTP_GPDU) {
		*v = upf_gtp_signal(ctx, md, g->type);
		return NULL;
	}
	teid = g->teid;
	off = l4 + sizeof(struct udphdr);
	if (upf_gtp_skip(ctx, &off, &f->qfi)) {
		*v = upf_drop(ctx, md, UPF_ST_DROP_MALFORMED);
		return NULL;
	}
	list = upf_teid_list(teid, f);
	if (!list) {
		*v = upf_no_teid(ctx, md, teid);
		return NULL;
	}
	if (upf_inner(ctx, off, f)) {
		*v = upf_drop(ctx, md, UPF_ST_DROP_MALFORMED);
		return NULL;
	}
	f->inner = off;
	return list;
}

/* ARP for the port's address: requests are answered here; a copy of every
 * request and reply goes to the slow path to learn the sender. */
static __attribute__((noinline)) int upf_arp_in(ctx_t *ctx, struct edgenf_md *md, struct upf_port *p)
{
	struct ethhdr *eth = ctx_data(ctx);
	struct enf_arp *a = enf_ptr(ctx, sizeof(*eth));
	__u32 in = md->in_port;

	if (!enf_in_bounds(ctx, a, sizeof(*a)) || !enf_arp_ipv4(a))
		return upf_drop(ctx, md, UPF_ST_DROP_NOT_GTP);
	if (!p->has4 || enf_arp_target(a) != p->ip4)
		return upf_drop(ctx, md, UPF_ST_DROP_NOT_GTP);
	enf_report(ctx, md, md->cube, in, UPF_PUNT_NEIGH_IN, 0, 64);
	eth = ctx_data(ctx);
	a = enf_ptr(ctx, sizeof(*eth));
	if (!enf_in_bounds(ctx, eth, sizeof(*eth)) || !enf_in_bounds(ctx, a, sizeof(*a)))
		return upf_drop(ctx, md, UPF_ST_DROP_MALFORMED);
	if (a->op != bpf_htons(ARPOP_REQUEST))
		return enf_drop(ctx, md);
	enf_arp_reply(eth, a, p->mac);
	enf_counter_inc(&upf_stats, UPF_ST_ARP_REPLIES);
	return enf_send(ctx, md, in);
}

/* ICMPv6 neighbour discovery on a port: a solicitation for the port's
 * address is answered here with an advertisement; a copy of solicitations
 * and advertisements goes to the slow path to learn the sender. */
static __attribute__((noinline)) int upf_nd_in(ctx_t *ctx, struct edgenf_md *md, struct upf_port *p)
{
	struct ethhdr *eth = ctx_data(ctx);
	struct ipv6hdr *ip6 = enf_ptr(ctx, sizeof(*eth));
	__u8 *icmp = enf_ptr(ctx, sizeof(*eth) + sizeof(*ip6));
	__u32 in = md->in_port, sum;
	__u8 type;
	struct {
		__u8 type, code;
		__sum16 csum;
		__be32 flags;
		__u32 target[4];
		__u8 opt_type, opt_len;
		__u8 mac[ETH_ALEN];
	} na;
	struct {
		__u32 src[4], dst[4];
		__be32 len, nh;
	} ph;

	if (!enf_in_bounds(ctx, icmp, 24) || ip6->nexthdr != IPPROTO_ICMPV6)
		return upf_drop(ctx, md, UPF_ST_DROP_NOT_GTP);
	type = icmp[0];
	if (type != 135 && type != 136)
		return upf_drop(ctx, md, UPF_ST_DROP_NOT_GTP);
	/* a solicitation for the port's address; an advertisement to it (an
	 * answer) or to all nodes (unsolicited) */
	if (!p->has6 || (type == 135 && !upf_ip6_eq(icmp + 8, p->ip6)) ||
	    (type == 136 && !upf_ip6_eq(&ip6->daddr, p->ip6) && ip6->daddr.in6_u.u6_addr8[0] != 0xff))
		return upf_drop(ctx, md, UPF_ST_DROP_NOT_GTP);
	enf_report(ctx, md, md->cube, in, UPF_PUNT_NEIGH_IN, 0, 128);
	if (type != 135)
		return enf_drop(ctx, md);
	/* Answer: to the soliciting address (or all-nodes if unspecified),
	 * solicited + override, with our link-layer address. */
	eth = ctx_data(ctx);
	ip6 = enf_ptr(ctx, sizeof(*eth));
	if (!enf_in_bounds(ctx, eth, sizeof(*eth)) || !enf_in_bounds(ctx, ip6, sizeof(*ip6)))
		return upf_drop(ctx, md, UPF_ST_DROP_MALFORMED);
	__builtin_memset(&na, 0, sizeof(na));
	na.type = 136;
	__builtin_memcpy(na.target, p->ip6, 16);
	na.opt_type = 2; /* target link-layer address */
	na.opt_len = 1;
	__builtin_memcpy(na.mac, p->mac, ETH_ALEN);
	__builtin_memcpy(ph.dst, &ip6->saddr, 16);
	if (!(ph.dst[0] | ph.dst[1] | ph.dst[2] | ph.dst[3])) {
		ph.dst[0] = bpf_htonl(0xff020000);
		ph.dst[3] = bpf_htonl(1);
		na.flags = bpf_htonl(0x20000000); /* override */
	} else {
		na.flags = bpf_htonl(0x60000000); /* solicited, override */
	}
	__builtin_memcpy(ph.src, p->ip6, 16);
	ph.len = bpf_htonl(sizeof(na));
	ph.nh = bpf_htonl(IPPROTO_ICMPV6);
	sum = bpf_csum_diff(0, 0, (void *)&ph, sizeof(ph), 0);
	sum = bpf_csum_diff(0, 0, (void *)&na, sizeof(na), sum);
	na.csum = ~upf_fold(sum);
	if (ctx_change_tail(ctx, sizeof(*eth) + sizeof(*ip6) + sizeof(na)))
		return upf_drop(ctx, md, UPF_ST_DROP_MALFORMED);
	eth = ctx_data(ctx);
	ip6 = enf_ptr(ctx, sizeof(*eth));
	icmp = enf_ptr(ctx, sizeof(*eth) + sizeof(*ip6));
	if (!enf_in_bounds(ctx, icmp, sizeof(na)))
		return upf_drop(ctx, md, UPF_ST_DROP_MALFORMED);
	__builtin_memcpy(eth->h_dest, eth->h_source, ETH_ALEN);
	__builtin_memcpy(eth->h_source, p->mac, ETH_ALEN);
	*(__be32 *)ip6 = bpf_htonl(0x60000000);
	ip6->payload_len = bpf_htons(sizeof(na));
	ip6->nexthdr = IPPROTO_ICMPV6;
	ip6->hop_limit = 255;
	__builtin_memcpy(&ip6->saddr, ph.src, 16);
	__builtin_memcpy(&ip6->daddr, ph.dst, 16);
	__builtin_memcpy(icmp, &na, sizeof(na));
	enf_counter_inc(&upf_stats, UPF_ST_NA_REPLIES);
	return enf_send(ctx, md, in);
}

/* The pool of pools[0..n) whose indexed part holds h (host order). */
static __always_inline struct upf_pool *upf_pool_of(struct upf_pool *pools, __u32 n, __u64 h)
{
#pragma unroll
	for (int i = 0; i < UPF_POOLS; i++) {
		if (i >= n)
			break;
		if (h - pools[i].base < pools[i].size)
			return &pools[i];
	}
	return NULL;
}

/* The list of a UE address in an indexed pool (f->dst), the rules after its
 * first in f->more; NULL: not in one, or its slot holds no list for it. */
static __always_inline struct upf_list *upf_pooled(struct upf_flow *f)
{
	struct upf_pools *pools;
	struct upf_ue_list *l;
	struct upf_pool *pool;
	__u32 zero = 0, idx, *slot;
	__u64 ue = 0, h;

	pools = bpf_map_lookup_elem(&upf_pools, &zero);
	if (!pools)
		return NULL;
	if (f->v6) {
		__builtin_memcpy(&ue, f->dst, 8);
		h = __builtin_bswap64(ue);
		pool = upf_pool_of(pools->v6, pools->n6, h);
	} else {
		ue = f->dst[0];
		h = bpf_ntohl(f->dst[0]);
		pool = upf_pool_of(pools->v4, pools->n4, h);
	}
	if (!pool)
		return NULL;
	idx = pool->first + (__u32)(h - pool->base);
	slot = bpf_map_lookup_elem(&upf_ue_slots, &idx);
	if (!slot || !*slot)
		return NULL;
	idx = *slot;
	l = bpf_map_lookup_elem(&upf_ue_lists, &idx);
	if (!l || l->ue != ue)
		return NULL;
	f->more = bpf_map_lookup_elem(&upf_ue_more, &idx);
	return &l->list;
}

/* A packet on n6, plain IP to a UE: the rules of its UE address, f read
 * from the packet. NULL: the packet's verdict is in *v. */
static __always_inline struct upf_list *upf_n6(ctx_t *ctx, struct edgenf_md *md, __u16 proto, struct upf_flow *f,
					       int *v)
{
	struct upf_list *list;

	if (upf_inner(ctx, sizeof(struct ethhdr), f)) {
		*v = upf_drop(ctx, md, UPF_ST_DROP_NOT_GTP);
		return NULL;
	}
	if ((proto == ETH_P_IPV6) != f->v6) {
		*v = upf_drop(ctx, md, UPF_ST_DROP_MALFORMED);
		return NULL;
	}
	list = upf_pooled(f);
	if (!list) {
		struct upf_hlist *hl;

		if (f->v6) {
			__u64 key;

			__builtin_memcpy(&key, f->dst, 8);
			hl = bpf_map_lookup_elem(&upf_ue6, &key);
		} else {
			hl = bpf_map_lookup_elem(&upf_ue4, &f->dst[0]);
		}
		if (hl) {
			list = &hl->list;
			f->more = &hl->more;
		}
	}
	if (!list) {
		*v = upf_drop(ctx, md, UPF_ST_DROP_NO_SESSION);
		return NULL;
	}
	f->inner = sizeof(struct ethhdr);
	return list;
}

/* A frame the daemon releases from a buffer: the rule to apply is in a
 * trailer, which goes. Returns -1 when the frame is ready for rule *idx, f
 * read from it; else the frame's verdict. */
static __always_inline int upf_release(ctx_t *ctx, struct edgenf_md *md, struct upf_flow *f, __u32 *idx)
{
	__u32 len = ctx_len(ctx), tr[2], inner = sizeof(struct ethhdr);
	struct upf_rule *r;

	if (len < sizeof(struct ethhdr) + sizeof(tr) || ctx_load_bytes(ctx, len - sizeof(tr), tr, sizeof(tr)))
		return enf_drop(ctx, md);
	if (tr[1] != UPF_RELEASE_MAGIC || ctx_change_tail(ctx, len - sizeof(tr)))
		return enf_drop(ctx, md);
	*idx = tr[0];
	r = bpf_map_lookup_elem(&upf_rules, idx);
	if (!r)
		return upf_drop(ctx, md, UPF_ST_DROP_NO_RULE);
	if (r->line.flags & RULE_GTP) {
		/* uplink: the tunnelled packet as received (IPv4 or IPv6, UDP,
		 * GTP-U with its extension headers) */
		struct ethhdr *eth;

		if (upf_pull(ctx, 128))
			return enf_drop(ctx, md);
		eth = ctx_data(ctx);
		if (!enf_in_bounds(ctx, eth, sizeof(*eth)))
			return enf_drop(ctx, md);
		inner = sizeof(*eth) + sizeof(struct udphdr) +
			(eth->h_proto == bpf_htons(ETH_P_IPV6) ? sizeof(struct ipv6hdr) : sizeof(struct iphdr));
		if (upf_gtp_skip(ctx, &inner, &f->qfi))
			return enf_drop(ctx, md);
	}
	/* opaque: with the constant offset of a downlink frame, clang narrows
	 * the packet pointers to 32 bits, which the verifier refuses */
	asm volatile("" : "+r"(inner));
	if (upf_inner(ctx, inner, f))
		return enf_drop(ctx, md);
	f->inner = inner;
	f->released = 1;
	return -1;
}

/* The rules a frame from a port is matched against (its TEID's or UE
 * address's list), f read from it. NULL: the frame's verdict is in *v
 * (ARP, neighbour discovery, GTP-U signalling, no session, malformed). The
 * frame is read once, without enf_parse: a frame with VLAN tags is
 * malformed here, so its tag walk and offsets are not needed, and on n6 the
 * IP header is read into f right away (upf_n6). The checks are enf_parse's:
 * enf_ip4_sane, IPv6 version 6. */
static __always_inline struct upf_list *upf_lookup(ctx_t *ctx, struct edgenf_md *md, struct upf_flow *f, int *v)
{
	__u32 in = md->in_port, l4 = 0;
	struct upf_port *p;
	struct ethhdr *eth;
	struct udphdr *udp;
	__be16 proto;

	if (upf_pull(ctx, 128)) {
		*v = enf_drop(ctx, md);
		return NULL;
	}
	p = bpf_map_lookup_elem(&upf_ports, &in);
	eth = ctx_data(ctx);
	if (!p || !enf_in_bounds(ctx, eth, sizeof(*eth)))
		goto malformed;
	proto = eth->h_proto;
	if (proto == bpf_htons(ETH_P_IP)) {
		struct iphdr *ip = (void *)(eth + 1);

		if (!enf_in_bounds(ctx, ip, sizeof(*ip)) || !enf_ip4_sane(ctx, ip, ctx_len(ctx) - sizeof(*eth)))
			goto malformed;
		if (p->role == UPF_N6)
			return upf_n6(ctx, md, ETH_P_IP, f, v);
		/* to the port's GTP-U address: no options; a fragment other
		 * than the first has no UDP header */
		if (p->has4 && ip->daddr == p->ip4 && ip->ihl == 5 && ip->protocol == IPPROTO_UDP &&
		    !(ip->frag_off & bpf_htons(ENF_IP_OFFSET)))
			l4 = sizeof(*eth) + sizeof(*ip);
	} else if (proto == bpf_htons(ETH_P_IPV6)) {
		struct ipv6hdr *ip6 = (void *)(eth + 1);

		if (!enf_in_bounds(ctx, ip6, sizeof(*ip6)) || ip6->version != 6)
			goto malformed;
		if (ip6->nexthdr == IPPROTO_ICMPV6) {
			__u8 *icmp = (void *)(ip6 + 1);

			if (enf_in_bounds(ctx, icmp, 1) && (icmp[0] == 135 || icmp[0] == 136)) {
				*v = upf_nd_in(ctx, md, p);
				return NULL;
			}
		}
		if (p->role == UPF_N6)
			return upf_n6(ctx, md, ETH_P_IPV6, f, v);
		if (p->has6 && ip6->nexthdr == IPPROTO_UDP && upf_ip6_eq(&ip6->daddr, p->ip6))
			l4 = sizeof(*eth) + sizeof(*ip6);
	} else if (proto == bpf_htons(ETH_P_ARP)) {
		*v = upf_arp_in(ctx, md, p);
		return NULL;
	} else if (proto == bpf_htons(ETH_P_8021Q) || proto == bpf_htons(ETH_P_8021AD)) {
		goto malformed;
	}
	/* a UDP datagram to the GTP-U port of an n3 or n9 port's address */
	udp = enf_ptr(ctx, l4);
	if (!l4 || (p->role != UPF_N3 && p->role != UPF_N9) || !enf_in_bounds(ctx, udp, sizeof(*udp)) ||
	    udp->dest != bpf_htons(GTPU_PORT)) {
		*v = upf_drop(ctx, md, UPF_ST_DROP_NOT_GTP);
		return NULL;
	}
	return upf_gtpu(ctx, md, l4, f, v);
malformed:
	*v = upf_drop(ctx, md, UPF_ST_DROP_MALFORMED);
	return NULL;
}

static __always_inline int upf(ctx_t *ctx, struct edgenf_md *md)
{
	struct upf_flow f = {};
	struct upf_line *line;
	__u32 idx = 0;
	int v = 0;

	if (md->in_port == UPF_RELEASE) {
		struct upf_rule *r;

		v = upf_release(ctx, md, &f, &idx);
		if (v >= 0)
			return v;
		r = bpf_map_lookup_elem(&upf_rules, &idx);
		if (!r)
			return upf_drop(ctx, md, UPF_ST_DROP_NO_RULE);
		line = &r->line;
	} else {
		struct upf_list *list = upf_lookup(ctx, md, &f, &v);

		if (!list)
			return v;
		line = upf_match(list, &f, &idx);
		if (!line)
			return upf_drop(ctx, md, UPF_ST_DROP_NO_RULE);
	}
	/* The apply step's one call site, inlined at XDP: no call and return
	 * per packet (each return costs several ns on CPUs whose kernel
	 * mitigates return-address speculation, as this VM's does). */
	return upf_apply_step(ctx, md, idx, line, &f);
}

EDGENF_CUBE(upf)
