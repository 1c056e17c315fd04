// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* down: stands in for a standard cube the daemon could not restore (its
 * program no longer builds or loads). Every frame sent to it is dropped and
 * counted as a drop of the port it came in on: the broken cube fails closed
 * while the rest of the topology runs, and its own maps stay pinned for
 * when it is fixed. */
#include <edgenf/edgenf.h>

static __always_inline int down(ctx_t *ctx, struct edgenf_md *md)
{
	return enf_drop(ctx, md);
}

EDGENF_CUBE(down)
