// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* Benchmark programs (XDP only; the TC build is just a license section).
 *
 * bench_gen:   the traffic generator, run with BPF_PROG_RUN and
 *              BPF_F_TEST_XDP_LIVE_FRAMES. It rewrites the flow (source
 *              address and port) and optionally a timestamp into every
 *              frame, then redirects it into the veth in gen_port[0].
 *              Live frames are recycled without being reset, so every
 *              varied field is written in full each time. Other modes
 *              (gen_mode): GTP-U uplink frames whose TEID and inner source
 *              address come from gen_flows, and plain frames whose
 *              destination address does (a mobile core's downlink), and
 *              IPv6 frames varied like plain ones.
 * bench_sink:  counts generator frames (IPv4 or IPv6/UDP to sig_dport with the
 *              magic in the payload, plain, inside GTP-U or inside IP-in-IP) and drops
 *              everything; with a timestamp, records the one-way latency
 *              in a histogram.
 * bench_fwd:   the raw XDP redirect baseline: redirect to fwd_port[0].
 * bench_pass:  XDP_PASS, so that a veth accepts redirected frames.
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/udp.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

char _license[] SEC("license") = "Dual BSD/GPL";

#if defined(EDGENF_HOOK_XDP)

#define BENCH_MAGIC 0xED6EBE7C
#define HIST_SUB 16     /* linear sub-buckets per power of two */
#define HIST_BUCKETS 1024

struct payload {
	__u32 magic;
	__u32 seq;
	__u64 ts;
} __attribute__((packed));

struct frame {
	struct ethhdr eth;
	struct iphdr ip;
	struct udphdr udp;
	struct payload pl;
} __attribute__((packed));

#define GTP_PORT 2152
#define GEN_PLAIN 0  /* vary source address and port */
#define GEN_GTP_UL 1 /* GTP-U: TEID and inner source address from gen_flows */
#define GEN_DL 2     /* plain, destination address from gen_flows */
#define GEN_V6 3     /* IPv6/UDP, source address and port varied like GEN_PLAIN */

struct frame6 {
	struct ethhdr eth;
	struct ipv6hdr ip;
	struct udphdr udp;
	struct payload pl;
} __attribute__((packed));
#define GEN_MAX_FLOWS (1 << 17)

/* A generator frame inside an IP-in-IP header of its own family (the lb's
 * tunnel mode): IPv6-in-IPv6 and IPv4-in-IPv4. */
struct frame66 {
	struct ethhdr eth;
	struct ipv6hdr outer;
	struct ipv6hdr ip;
	struct udphdr udp;
	struct payload pl;
} __attribute__((packed));

struct frame44 {
	struct ethhdr eth;
	struct iphdr outer;
	struct iphdr ip;
	struct udphdr udp;
	struct payload pl;
} __attribute__((packed));

/* A GTP-U uplink frame: outer IPv4/UDP/GTP-U (8 octets), inner IPv4/UDP. */
struct gtp_frame {
	struct ethhdr eth;
	struct iphdr ip;
	struct udphdr udp;
	__u8 gtp_flags;
	__u8 gtp_type;
	__be16 gtp_len;
	__be32 teid;
	struct iphdr in_ip;
	struct udphdr in_udp;
	struct payload pl;
} __attribute__((packed));

volatile const __u32 nflows = 1;      /* flows: distinct (saddr, sport) */
volatile const __u16 sig_dport = 9;   /* destination port of generated frames */

struct {
	__uint(type, BPF_MAP_TYPE_DEVMAP);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} gen_port SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_DEVMAP);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} fwd_port SEC(".maps");

/* gen_tmpl[0]: the headers (and payload start) of the template frame. Live
 * frames are recycled without being reset, and the kernel stack rewrites
 * them in place (TTL, MACs, NAT): the generator restores them every time. */
struct tmpl {
	__u8 b[sizeof(struct gtp_frame)];
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct tmpl);
} gen_tmpl SEC(".maps");

/* gen_cfg[0]: non-zero to write bpf_ktime_get_ns() into each frame. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} gen_cfg SEC(".maps");

/* gen_mode[0]: the generator's mode and flows (0: nflows). */
struct gen_mode {
	__u32 mode;
	__u32 nflows;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct gen_mode);
} gen_mode SEC(".maps");

/* gen_flows[i]: flow i's TEID and UE address (GEN_GTP_UL, GEN_DL). */
struct gen_flow {
	__be32 teid;
	__be32 addr;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, GEN_MAX_FLOWS);
	__type(key, __u32);
	__type(value, struct gen_flow);
} gen_flows SEC(".maps");

/* gen_count[0]: frames generated; sink_count[0]: generator frames seen,
 * [1]: their bytes, [2]: other frames. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} gen_count SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 3);
	__type(key, __u32);
	__type(value, __u64);
} sink_count SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, HIST_BUCKETS);
	__type(key, __u32);
	__type(value, __u64);
} sink_hist SEC(".maps");

static __always_inline __u16 ip_csum(void *ip)
{
	__u16 *w = ip;
	__u32 s = 0;
#pragma unroll
	for (int i = 0; i < 10; i++)
		if (i != 5)
			s += w[i];
	s = (s & 0xffff) + (s >> 16);
	s = (s & 0xffff) + (s >> 16);
	return (__u16)~s;
}

static __always_inline __u64 gen_stamp(void)
{
	__u32 zero = 0;
	__u32 *stamp = bpf_map_lookup_elem(&gen_cfg, &zero);
	return stamp && *stamp ? bpf_ktime_get_ns() : 0;
}

SEC("xdp") int bench_gen(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data, *end = (void *)(long)ctx->data_end;
	struct frame *f = data;
	__u32 zero = 0;
	__u64 *cnt = bpf_map_lookup_elem(&gen_count, &zero);
	struct tmpl *t = bpf_map_lookup_elem(&gen_tmpl, &zero);
	struct gen_mode *m = bpf_map_lookup_elem(&gen_mode, &zero);

	if (!cnt || !t || !m || (void *)(f + 1) > end)
		return XDP_ABORTED;
	__u32 mode = m->mode, nf = m->nflows ? m->nflows : nflows;
	__u64 n = (*cnt)++;
	__u32 flow = nf > 1 ? (__u32)(n % nf) : 0;
	struct gen_flow *fl = NULL;
	if (mode != GEN_PLAIN)
		fl = bpf_map_lookup_elem(&gen_flows, &flow);

	if (mode == GEN_GTP_UL) {
		struct gtp_frame *g = data;
		if ((void *)(g + 1) > end)
			return XDP_ABORTED;
		__builtin_memcpy(data, t->b, sizeof(struct gtp_frame));
		if (fl) {
			g->teid = fl->teid;
			g->in_ip.saddr = fl->addr;
		}
		g->in_ip.check = ip_csum(&g->in_ip);
		g->pl.seq = (__u32)n;
		g->pl.ts = gen_stamp();
		return bpf_redirect_map(&gen_port, 0, 0);
	}
	if (mode == GEN_V6) {
		struct frame6 *f6 = data;
		__u32 cs;

		if ((void *)(f6 + 1) > end)
			return XDP_ABORTED;
		__builtin_memcpy(data, t->b, sizeof(struct frame6));
		/* The template has source address ...:0 and port 1024 and
		 * its UDP checksum (mandatory in IPv6) for them: add what
		 * the flow changes (one's complement sum). */
		__u16 *w = (void *)&f6->pl.seq;

		f6->ip.saddr.in6_u.u6_addr8[15] = 10 + (flow & 63);
		f6->udp.source = bpf_htons(1024 + (flow >> 6));
		f6->pl.seq = (__u32)n;
		f6->pl.ts = gen_stamp();
		cs = (__u16)~bpf_ntohs(f6->udp.check) + (10 + (flow & 63)) + (flow >> 6);
#pragma unroll
		for (int i = 0; i < 6; i++) /* seq and ts, zero in the template */
			cs += bpf_ntohs(w[i]);
		cs = (cs & 0xffff) + (cs >> 16);
		cs = (cs & 0xffff) + (cs >> 16);
		cs = (__u16)~cs;
		f6->udp.check = bpf_htons(cs ? cs : 0xffff);
		return bpf_redirect_map(&gen_port, 0, 0);
	}
	__builtin_memcpy(data, t->b, sizeof(struct frame));
	if (mode == GEN_DL) {
		if (fl)
			f->ip.daddr = fl->addr;
	} else {
		/* Template source address is x.x.x.0: flow selects the low 6
		 * bits of the address and the source port above 1024. */
		__u32 saddr = bpf_ntohl(f->ip.saddr) & ~0xffU;
		f->ip.saddr = bpf_htonl(saddr | (10 + (flow & 63)));
		f->udp.source = bpf_htons(1024 + (flow >> 6));
	}
	f->ip.check = ip_csum(data + sizeof(struct ethhdr));
	f->pl.seq = (__u32)n;
	f->pl.ts = gen_stamp();
	return bpf_redirect_map(&gen_port, 0, 0);
}

static __always_inline __u32 log2u64(__u64 v)
{
	__u32 r = 0;
	if (v >> 32) { v >>= 32; r += 32; }
	if (v >> 16) { v >>= 16; r += 16; }
	if (v >> 8) { v >>= 8; r += 8; }
	if (v >> 4) { v >>= 4; r += 4; }
	if (v >> 2) { v >>= 2; r += 2; }
	if (v >> 1) { r += 1; }
	return r;
}

/* Bucket of a latency in ns: exact below 16, then 16 linear sub-buckets per
 * power of two (relative error < 6.25%). Mirrored in Go (kern.BucketBounds). */
static __always_inline __u32 hist_bucket(__u64 d)
{
	if (d < HIST_SUB)
		return (__u32)d;
	__u32 m = log2u64(d); /* >= 4 */
	__u32 sub = (__u32)(d >> (m - 4)) & (HIST_SUB - 1);
	__u32 b = (m - 3) * HIST_SUB + sub;
	return b < HIST_BUCKETS ? b : HIST_BUCKETS - 1;
}

struct inner {
	struct iphdr ip;
	struct udphdr udp;
	struct payload pl;
} __attribute__((packed));

/* The payload of a generator frame: plain, or inside GTP-U (with at most
 * one extension header, as a PDU Session Container); NULL otherwise. */
static __always_inline struct payload *sink_payload(void *data, void *end)
{
	struct frame *f = data;
	struct frame6 *f6 = data;

	if ((void *)(f6 + 1) <= end && f6->eth.h_proto == bpf_htons(ETH_P_IPV6)) {
		if (f6->ip.nexthdr == IPPROTO_IPV6) {
			struct frame66 *t = data;

			if ((void *)(t + 1) > end || t->ip.nexthdr != IPPROTO_UDP || t->udp.dest != bpf_htons(sig_dport))
				return NULL;
			return &t->pl;
		}
		if (f6->ip.nexthdr != IPPROTO_UDP || f6->udp.dest != bpf_htons(sig_dport))
			return NULL;
		return &f6->pl;
	}
	if ((void *)(f + 1) <= end && f->eth.h_proto == bpf_htons(ETH_P_IP) && f->ip.ihl == 5 &&
	    f->ip.protocol == IPPROTO_IPIP) {
		struct frame44 *t = data;

		if ((void *)(t + 1) > end || t->ip.ihl != 5 || t->ip.protocol != IPPROTO_UDP ||
		    t->udp.dest != bpf_htons(sig_dport))
			return NULL;
		return &t->pl;
	}
	if ((void *)(f + 1) > end || f->eth.h_proto != bpf_htons(ETH_P_IP) ||
	    f->ip.ihl != 5 || f->ip.protocol != IPPROTO_UDP)
		return NULL;
	if (f->udp.dest == bpf_htons(sig_dport))
		return &f->pl;
	if (f->udp.dest != bpf_htons(GTP_PORT))
		return NULL;
	__u8 *gtp = data + sizeof(struct ethhdr) + sizeof(struct iphdr) + sizeof(struct udphdr);
	if ((void *)(gtp + 16) > end)
		return NULL;
	__u32 glen = 8;
	if (gtp[0] & 0x07) {
		glen = 12;
		if (gtp[0] & 0x04)
			glen += 4 * (gtp[12] & 0x03);
	}
	struct inner *in = (void *)(gtp + glen);
	if ((void *)(in + 1) > end || in->ip.ihl != 5 || in->ip.protocol != IPPROTO_UDP ||
	    in->udp.dest != bpf_htons(sig_dport))
		return NULL;
	return &in->pl;
}

SEC("xdp") int bench_sink(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data, *end = (void *)(long)ctx->data_end;
	struct payload *pl = sink_payload(data, end);
	__u32 k = 2;
	__u64 *c;

	if (pl && pl->magic == bpf_htonl(BENCH_MAGIC)) {
		k = 0;
		__u64 ts = pl->ts;
		if (ts) {
			__u64 now = bpf_ktime_get_ns();
			__u32 b = now > ts ? hist_bucket(now - ts) : 0;
			c = bpf_map_lookup_elem(&sink_hist, &b);
			if (c)
				(*c)++;
		}
		c = bpf_map_lookup_elem(&sink_count, &k);
		if (c)
			(*c)++;
		k = 1;
		c = bpf_map_lookup_elem(&sink_count, &k);
		if (c)
			*c += (__u64)(end - data);
		return XDP_DROP;
	}
	c = bpf_map_lookup_elem(&sink_count, &k);
	if (c)
		(*c)++;
	return XDP_DROP;
}

SEC("xdp") int bench_fwd(struct xdp_md *ctx)
{
	return bpf_redirect_map(&fwd_port, 0, 0);
}

SEC("xdp") int bench_pass(struct xdp_md *ctx)
{
	return XDP_PASS;
}

#endif /* EDGENF_HOOK_XDP */
