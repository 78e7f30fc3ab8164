/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Interfaces named on the command line: resolve, describe. */
#ifndef HS_IFACES_H
#define HS_IFACES_H

#include "backend.h"
#include "json.h"

/* add each name of a comma list as an input or output; -errno after printing why */
int hs_ifaces_add(struct hs_config *cfg, const char *list, int is_out);
/* XDP mode per input: "auto" (native, generic on veth), "native" or "generic" */
int hs_ifaces_set_xdp_mode(struct hs_config *cfg, const char *mode);
/* --gro keep: the inputs where it applies (native XDP, GRO on); 0, or -errno */
int hs_ifaces_set_gro(struct hs_config *cfg);
/* one JSON object per interface: driver, mtu, rps_cpus, coalescing, qdisc, its
 * stack and fast paths; then "pass_ifaces" and "flowtables_known" */
void hs_ifaces_json(struct js *j, const struct hs_config *cfg);
/* "xdp_modes": each input's XDP mode now (auto may switch one during the run) */
void hs_ifaces_xdp_json(struct js *j, const struct hs_config *cfg);
/* What argv (a program in PATH) writes to stdout, or NULL if it cannot run or
 * fails. No shell: an argument (an interface name) is never interpreted. */
char *hs_run_output(char *const argv[]);
/* `tc -s -j qdisc show dev NAME` output (JSON), or NULL */
char *hs_qdisc_json(const char *ifname);
/* the --out interfaces' transmit counters summed (sysfs statistics): tx[0]
 * packets sent, tx[1] dropped at transmit; -1 when one cannot be read */
int hs_ifaces_tx(const struct hs_config *cfg, uint64_t tx[2]);

#endif
