/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* Packet replication of v1model programs, the state: the requests a stage
 * makes (clone, resubmit, recirculate), the multicast groups and clone
 * sessions the control plane configures. replicate_run.h makes the copies.
 * Layouts and limits are mirrored in internal/p4/tableruntime and
 * internal/p4/backend (MaxReplicas, MaxPasses, MaxE2E). */
#pragma once

#include "../ctx.h"

#define P4_MAX_REPLICAS 32   /* replicas of a multicast group */
#define P4_MAX_GROUPS 4096   /* multicast groups */
#define P4_MAX_SESSIONS 1024 /* clone sessions */
#define P4_MAX_PASSES 8      /* ingress runs of a packet (resubmit, recirculate) */
#define P4_MAX_E2E 2         /* chained E2E clones (a clone cloning itself) */

/* standard_metadata.instance_type (BMv2) */
#define P4_INST_NORMAL 0
#define P4_INST_I2E 1
#define P4_INST_E2E 2
#define P4_INST_RECIRC 4
#define P4_INST_REPLICATION 5
#define P4_INST_RESUBMIT 6

/* Replication requests of the running stage (clone, resubmit,
 * recirculate): the externs record them in the per-packet state, the
 * pipeline acts on them at the end of the stage (the last call wins). */
struct p4_rq {
	__u32 clone_sess, clone_fl;
	__u32 resub, resub_fl;
	__u32 recirc, recirc_fl;
};

struct p4_replica {
	__u16 port;
	__u16 rid;
};

/* A multicast group: n replicas (egress_port, egress_rid). */
struct p4_mc_group {
	__u32 n;
	__u32 pad;
	struct p4_replica r[P4_MAX_REPLICAS];
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, P4_MAX_GROUPS);
	__type(key, __u32);
	__type(value, struct p4_mc_group);
} p4_mc_groups SEC(".maps");

#define P4_SESS_MC 1
/* A clone session: a port, or a multicast group (flags & P4_SESS_MC);
 * trunc: the copies' length at most (0: whole). */
struct p4_clone_session {
	__u32 port;
	__u32 mgrp;
	__u32 trunc;
	__u32 flags;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, P4_MAX_SESSIONS);
	__type(key, __u32);
	__type(value, struct p4_clone_session);
} p4_clone_sessions SEC(".maps");
