// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* capture: transparent; copies the first snaplen bytes of the frames it sees
 * (in the directions asked, matching the filter, within the rate) into a
 * ring buffer the daemon reads, and passes every frame unchanged. A capture
 * runs only while attached: a point without one pays nothing.
 *
 * The filter is classic BPF as libpcap compiles tcpdump expressions, run by
 * a small interpreter (one bpf_loop step per instruction) over the frame's
 * first bytes: the program is verified once and a new filter is a map
 * update, not a new program. At TC a VLAN tag the kernel moved into the skb
 * is put back in the copy, so the filter and the file see the frame as it
 * is on the wire. */
#include <edgenf/edgenf.h>
#include <linux/filter.h>

#define CAP_MAX 16384       /* largest snap length (and filter window) */
#define CAP_PROG_MAX 512    /* filter instructions (libpcap's "port 53" is 20) */
#define CAP_RING (8 << 20)  /* bytes of ring buffer per capture */
/* The reader is woken only once this much waits in the ring: waking it for
 * every record (an irq_work and a scheduler wake-up) would cost each frame
 * several times what copying it does. It drains the ring at its own pace
 * besides (every 20 to 200 ms: internal/api/capture.go), so a quiet
 * capture is late by at most that. */
#define CAP_WAKE_BYTES (256 << 10)

/* Settings, written by the daemon (capture.go mirrors them). */
struct cap_config {
	__u32 snaplen;
	__u32 dirs;   /* bit 0 ingress, bit 1 egress */
	__u32 nprog;  /* filter instructions; 0: every frame */
	__u32 pad;
	__u64 rate;   /* frames per second (0: unbounded) */
	__u64 burst;  /* frames the bucket holds */
};

/* Counters per CPU (capture.go mirrors them). */
struct cap_stats {
	__u64 seen;     /* frames in the directions asked */
	__u64 matched;  /* ... that the filter took */
	__u64 captured; /* ... written to the ring */
	__u64 rate_drop;/* ... over the rate */
	__u64 ring_drop;/* ... the ring had no room for */
	__u64 tokens;   /* the rate's bucket (nanoframes) */
	__u64 last;     /* its last refill (ns) */
};

/* One record in the ring; the copied bytes follow. */
struct cap_rec {
	__u64 tstamp;  /* CLOCK_MONOTONIC, ns */
	__u32 pkt_len; /* length on the wire */
	__u32 cap_len; /* bytes that follow */
	__u32 dir;
	__u32 ifindex;
};

/* The classic BPF machine. It lives in the scratch map, not on the stack:
 * the verifier knows stack values exactly, so each step of the loop, with a
 * program counter of its own, was a new state to verify (86,000
 * instructions at XDP, 262,000 at TC: seconds per load, twice for a capture
 * on an interface, ten times that on a loaded host); what it reads from map
 * memory can be any value, so one pass over the step verifies it. */
struct cap_vm {
	__u32 a, x, pc, n, len, wire, ret, done;
	__u32 m[16];
};

struct cap_buf {
	struct cap_rec rec;
	__u8 data[CAP_MAX];
	struct cap_vm vm; /* after the data: rec and data go to the ring */
};

/* A classic BPF instruction (struct sock_filter). */
struct cap_insn {
	__u16 code;
	__u8 jt;
	__u8 jf;
	__u32 k;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct cap_config);
} cap_config SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, CAP_PROG_MAX);
	__type(key, __u32);
	__type(value, struct cap_insn);
} cap_prog SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct cap_stats);
} cap_stats SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct cap_buf);
} cap_scratch SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, CAP_RING);
} cap_ring SEC(".maps");

/* Load size bytes (big-endian) at off of the copy, or end the filter with
 * "no match" as the kernel's and libpcap's interpreters do past the end. */
static __always_inline int cap_load(struct cap_buf *b, __u32 off, __u32 size, __u32 *out)
{
	__u8 *p;

	if (off > CAP_MAX - 4 || off + size > b->vm.len)
		return -1;
	p = b->data + off;
	if (size == 1)
		*out = p[0];
	else if (size == 2)
		*out = (__u32)p[0] << 8 | p[1];
	else
		*out = (__u32)p[0] << 24 | (__u32)p[1] << 16 | (__u32)p[2] << 8 | p[3];
	return 0;
}

static __always_inline long cap_end(struct cap_vm *vm, __u32 ret)
{
	vm->ret = ret;
	vm->done = 1;
	return 1;
}

/* One instruction (the opcodes of linux/filter.h that classic BPF has) of
 * the machine in the scratch buffer arg points to. */
static long cap_step(__u32 i, void *arg)
{
	struct cap_buf *b = *(struct cap_buf **)arg;
	struct cap_vm *vm;
	struct cap_insn *in;
	__u32 pc, k, v, src;
	__u16 code;

	(void)i;
	if (!b)
		return 1;
	vm = &b->vm;
	pc = vm->pc;
	if (pc >= vm->n || pc >= CAP_PROG_MAX)
		return cap_end(vm, 0);
	in = bpf_map_lookup_elem(&cap_prog, &pc);
	if (!in)
		return cap_end(vm, 0);
	code = in->code;
	k = in->k;
	vm->pc = pc + 1;
	switch (BPF_CLASS(code)) {
	case BPF_LD:
	case BPF_LDX:
		switch (BPF_MODE(code)) {
		case BPF_IMM:
			v = k;
			break;
		case BPF_LEN:
			v = vm->wire;
			break;
		case BPF_MEM:
			v = vm->m[k & 15];
			break;
		case BPF_ABS:
		case BPF_IND: {
			__u32 size = BPF_SIZE(code) == BPF_W ? 4 : BPF_SIZE(code) == BPF_H ? 2 : 1;
			__u32 off = BPF_MODE(code) == BPF_IND ? vm->x + k : k;

			if (BPF_MODE(code) == BPF_IND && off < k)
				return cap_end(vm, 0); /* wrapped */
			if (cap_load(b, off, size, &v))
				return cap_end(vm, 0);
			break;
		}
		case BPF_MSH:
			if (cap_load(b, k, 1, &v))
				return cap_end(vm, 0);
			v = (v & 0xf) << 2;
			break;
		default:
			return cap_end(vm, 0);
		}
		if (BPF_CLASS(code) == BPF_LD)
			vm->a = v;
		else
			vm->x = v;
		return 0;
	case BPF_ST:
		vm->m[k & 15] = vm->a;
		return 0;
	case BPF_STX:
		vm->m[k & 15] = vm->x;
		return 0;
	case BPF_ALU:
		src = BPF_SRC(code) == BPF_X ? vm->x : k;
		switch (BPF_OP(code)) {
		case BPF_ADD: vm->a += src; break;
		case BPF_SUB: vm->a -= src; break;
		case BPF_MUL: vm->a *= src; break;
		case BPF_DIV:
			if (!src)
				return cap_end(vm, 0);
			vm->a /= src;
			break;
		case BPF_MOD:
			if (!src)
				return cap_end(vm, 0);
			vm->a %= src;
			break;
		case BPF_OR: vm->a |= src; break;
		case BPF_AND: vm->a &= src; break;
		case BPF_XOR: vm->a ^= src; break;
		case BPF_LSH: vm->a = src < 32 ? vm->a << src : 0; break;
		case BPF_RSH: vm->a = src < 32 ? vm->a >> src : 0; break;
		case BPF_NEG: vm->a = -vm->a; break;
		default:
			return cap_end(vm, 0);
		}
		return 0;
	case BPF_JMP: {
		int t;

		if (BPF_OP(code) == BPF_JA) {
			vm->pc = pc + 1 + k;
			return 0;
		}
		src = BPF_SRC(code) == BPF_X ? vm->x : k;
		switch (BPF_OP(code)) {
		case BPF_JEQ: t = vm->a == src; break;
		case BPF_JGT: t = vm->a > src; break;
		case BPF_JGE: t = vm->a >= src; break;
		case BPF_JSET: t = (vm->a & src) != 0; break;
		default:
			return cap_end(vm, 0);
		}
		vm->pc = pc + 1 + (t ? in->jt : in->jf);
		return 0;
	}
	case BPF_RET:
		return cap_end(vm, BPF_RVAL(code) == BPF_A ? vm->a : BPF_RVAL(code) == BPF_K ? k : 0);
	case BPF_MISC:
		if (BPF_MISCOP(code) == BPF_TAX)
			vm->x = vm->a;
		else
			vm->a = vm->x;
		return 0;
	}
	return cap_end(vm, 0);
}

/* Copy the frame's first n bytes into b->data, a VLAN tag the kernel holds
 * outside the frame put back after the MAC addresses. Returns the bytes
 * copied, and the frame's length on the wire in *wire. */
static __always_inline __u32 cap_copy(ctx_t *ctx, struct cap_buf *b, __u32 n, __u32 *wire)
{
	__u32 len = ctx_len(ctx);

	*wire = len;
#if defined(EDGENF_HOOK_TC)
	if (ctx->vlan_present && len >= 12) {
		__be16 tag[2] = {(__be16)ctx->vlan_proto, bpf_htons((__u16)ctx->vlan_tci)};

		*wire = len + 4;
		if (n > len + 4)
			n = len + 4;
		if (n < 16 || bpf_skb_load_bytes(ctx, 0, b->data, 12))
			return 0;
		__builtin_memcpy(b->data + 12, tag, 4);
		n -= 16;
		if (n > CAP_MAX - 16)
			n = CAP_MAX - 16;
		if (n && bpf_skb_load_bytes(ctx, 12, b->data + 16, n))
			return 0;
		return n + 16;
	}
#endif
	if (n > len)
		n = len;
	if (n > CAP_MAX)
		n = CAP_MAX;
	if (n == 0)
		return 0;
	if (ctx_load_bytes(ctx, 0, b->data, n))
		return 0;
	return n;
}

/* Whether the rate lets one more frame through (a token bucket per CPU;
 * each CPU gets the whole rate, which bounds the total by rate x CPUs). */
static __always_inline int cap_rate_ok(struct cap_config *cfg, struct cap_stats *st, __u64 now)
{
	__u64 cap, add;

	if (!cfg->rate)
		return 1;
	cap = cfg->burst * 1000000000ull;
	add = (now - st->last) * cfg->rate;
	st->last = now;
	st->tokens = st->tokens + add > cap || st->tokens + add < st->tokens ? cap : st->tokens + add;
	if (st->tokens < 1000000000ull)
		return 0;
	st->tokens -= 1000000000ull;
	return 1;
}

static __always_inline int capture(ctx_t *ctx, struct edgenf_md *md, __u32 dir)
{
	__u32 zero = 0, n, wire, snap;
	struct cap_config *cfg = bpf_map_lookup_elem(&cap_config, &zero);
	struct cap_stats *st = bpf_map_lookup_elem(&cap_stats, &zero);
	struct cap_buf *b;
	__u64 now;

	(void)md;
	if (!cfg || !st || !(cfg->dirs & (1u << (dir & 1))))
		return ENF_VERDICT_PASS;
	st->seen++;
	b = bpf_map_lookup_elem(&cap_scratch, &zero);
	if (!b)
		return ENF_VERDICT_PASS;
	snap = cfg->snaplen;
	if (snap > CAP_MAX)
		snap = CAP_MAX;
	n = cap_copy(ctx, b, cfg->nprog ? CAP_MAX : snap, &wire);
	if (n == 0)
		return ENF_VERDICT_PASS;
	if (cfg->nprog) {
		struct cap_vm *vm = &b->vm;

		__builtin_memset(vm, 0, sizeof(*vm));
		vm->n = cfg->nprog;
		vm->len = n;
		vm->wire = wire;
		bpf_loop(CAP_PROG_MAX, cap_step, &b, 0);
		if (!vm->done || vm->ret == 0)
			return ENF_VERDICT_PASS;
		if (vm->ret < snap)
			snap = vm->ret; /* a filter's return value is its snap length */
	}
	st->matched++;
	now = bpf_ktime_get_ns();
	if (!cap_rate_ok(cfg, st, now)) {
		st->rate_drop++;
		return ENF_VERDICT_PASS;
	}
	if (n > snap)
		n = snap;
	b->rec.tstamp = now;
	b->rec.pkt_len = wire;
	b->rec.cap_len = n;
	b->rec.dir = dir;
	b->rec.ifindex = ctx_ifindex(ctx);
	if (n > CAP_MAX)
		return ENF_VERDICT_PASS;
	if (bpf_ringbuf_output(&cap_ring, b, sizeof(b->rec) + n,
			       bpf_ringbuf_query(&cap_ring, BPF_RB_AVAIL_DATA) >= CAP_WAKE_BYTES ? BPF_RB_FORCE_WAKEUP
												  : BPF_RB_NO_WAKEUP))
		st->ring_drop++;
	else
		st->captured++;
	return ENF_VERDICT_PASS;
}

EDGENF_TRANSPARENT(capture)
