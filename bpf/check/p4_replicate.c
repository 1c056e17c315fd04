/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* The smallest program edgenf/p4/replicate_run.h is a template over, so
 * that `make bpf` compiles the template on its own (with -Werror, for both
 * hooks), every option on: it defines what the header's comment lists, the
 * way the P4 compiler's generated C does (internal/p4/backend/replicate.go).
 * Its object is thrown away. */
#include <edgenf/p4/p4.h>
#include <edgenf/p4/replicate.h>

#define P4_CPU_PORT_CFG 255
#define P4_DEBUG 0

struct s_standard_metadata_t {
	__u16 f_ingress_port;
	__u16 f_egress_spec;
	__u16 f_egress_port;
	__u32 f_instance_type;
	__u32 f_packet_length;
	__u64 f_ingress_global_timestamp;
	__u64 f_egress_global_timestamp;
	__u16 f_mcast_grp;
	__u16 f_egress_rid;
};

struct p4_state {
	struct {
		__u8 valid;
		__u16 f_etherType;
	} hdr;
	__u8 kept;
	struct s_standard_metadata_t sm;
	__u32 off;
	struct p4_rq rq;
	__u32 trunc;
	__u32 trunc_len;
	__u8 buf[14];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct p4_state);
} p4_state_map SEC(".maps");

P4_FN int p4_parser(ctx_t *ctx)
{
	__u32 zero = 0;
	struct p4_state *s = bpf_map_lookup_elem(&p4_state_map, &zero);

	P4_KEEP(ctx);
	if (!s)
		return 0;
	s->hdr.valid = 1;
	s->off = 14;
	return 0;
}

P4_FN int p4_deparse(ctx_t *ctx)
{
	P4_KEEP(ctx);
	return 0;
}

P4_FN int ctl_ingress(ctx_t *ctx)
{
	__u32 zero = 0;
	struct p4_state *s = bpf_map_lookup_elem(&p4_state_map, &zero);

	P4_KEEP(ctx);
	if (!s)
		return 0;
	s->sm.f_egress_spec = 1;
	s->rq.clone_sess = 1; /* clone(I2E, 0) */
	s->rq.clone_fl = 1;
	return 0;
}

P4_FN int ctl_egress(ctx_t *ctx)
{
	P4_KEEP(ctx);
	return 0;
}

static __always_inline void p4_keep(struct p4_state *d, const struct p4_state *src, __u32 fl)
{
	if (fl == 1)
		d->kept = src->kept;
}

#define P4_PROGRAM 1
#define P4_VERIFY(ctx) /* empty */
#define P4_INGRESS(ctx) ctl_ingress(ctx)
#define P4_EGRESS(ctx) ctl_egress(ctx)
#define P4_COMPUTE(ctx) /* empty */
#define P4_COPY_RECORD 1
#define P4_EGRESS_TIMESTAMP 1
#define P4_TRUNCATE 1
#include <edgenf/p4/replicate_run.h>

static __always_inline int p4_pipeline(ctx_t *ctx, struct edgenf_md *md)
{
	__u32 zero = 0;
	struct p4_state *s = bpf_map_lookup_elem(&p4_state_map, &zero);
	struct p4_snaps *sn = bpf_map_lookup_elem(&p4_snap_map, &zero);
	int port;

	if (!s || !sn)
		return enf_drop(ctx, md);
	__builtin_memset(s, 0, __builtin_offsetof(struct p4_state, buf));
	s->sm.f_ingress_port = md->in_port;
	s->sm.f_packet_length = ctx_len(ctx);
	port = p4_run(ctx);
	if (port < 0)
		return enf_drop(ctx, md);
	if (port == P4_CPU_PORT || port == P4_CPU_PORT_CFG)
		return enf_punt(ctx, md, P4_PUNT_PACKET_IN, 0);
	return enf_send(ctx, md, port);
}

EDGENF_CUBE(p4_pipeline)
