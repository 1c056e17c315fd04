/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* The one header an NF includes. */
#pragma once

#include "ctx.h"
#include "types.h"
#include "maps.h"
#include "verdict.h"
#include "cube.h"
#include "counters.h"
#include "parse.h"
#include "csum.h"

char _license[] SEC("license") = "Dual BSD/GPL";
