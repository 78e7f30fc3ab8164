/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* A record's path (include/hopscope.h, enum hs_path), named by its input. */
#ifndef HS_PATHS_H
#define HS_PATHS_H

#include "backend.h"

/* r's path named from what its input has (hs_iface.fast): a no_netfilter
 * packet's fast path, a stack packet's detour, when one mechanism there
 * explains it; otherwise the path the kernel said */
uint8_t hs_path_of(const struct hs_config *cfg, const struct hs_record *r);

#endif
