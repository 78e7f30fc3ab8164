/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* The one definition of every map and setting the stages share. */
#define HS_DEFINE_MAPS
#include "hopscope.bpf.h"
#include "tunnel.bpf.h"
#include "pieces.bpf.h"
#include "gro.bpf.h"
#include "nat.bpf.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";
