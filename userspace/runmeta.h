/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* The record file's header (run metadata) and counter snapshots, as JSON. */
#ifndef HS_RUNMETA_H
#define HS_RUNMETA_H

#include <stdint.h>
#include "backend.h"
#include "json.h"

struct hs_clocks {
	uint64_t mono_ns;
	uint64_t real_ns;
	int64_t mono_to_real_ns;	/* realtime = monotonic + this */
	int64_t err_ns;			/* half the monotonic bracket of the realtime read */
};

void hs_clocks_now(struct hs_clocks *c);

/* What the instants' accuracy depends on, read once before recording (before
 * entering the router's netns, whose fresh /sys would hide a bind mount).
 * NULL, -1: unknown (not readable here, or not x86 for the TSC flags). */
struct hs_clock_facts {
	char *clocksource;		/* current_clocksource */
	char *available;		/* available_clocksource, space separated */
	int constant_tsc, nonstop_tsc;	/* 1 on every CPU, 0 missing on one, -1 unknown */
	int64_t resolution_ns;		/* clock_getres(CLOCK_MONOTONIC) */
	int64_t read_ns;		/* median cost of one clock_gettime(CLOCK_MONOTONIC) */
	char *boot_id;			/* /proc/sys/kernel/random/boot_id: one boot, one clock */
	/* adjtimex() read only: how far CLOCK_REALTIME is from true time, as
	 * NTP or PTP told the kernel (valid 0: unreadable) */
	struct {
		int valid, synced, status, tai_s;
		int64_t maxerror_ns, esterror_ns;
	} sync;
};

#define HS_CLOCK_READS 10000	/* reads behind read_ns */
void hs_clock_facts_read(struct hs_clock_facts *f);
void hs_clock_facts_free(struct hs_clock_facts *f);
/* one "hopscope: WARNING: ..." line to stderr per clock fact that makes the
 * instants less accurate: a clocksource other than tsc, a TSC not constant or
 * not non-stop */
void hs_clock_warn(const struct hs_clock_facts *f);
/* --router-id: 1 to HS_ROUTER_ID_MAX bytes, each printable ASCII other than
 * a space (1), or not (0) */
#define HS_ROUTER_ID_MAX 64
int hs_router_id_ok(const char *id);
/* the header's "command": the command line, cut at a character boundary past this */
#define HS_COMMAND_MAX 65536
/* the header JSON: the run, the machine, its clock, the interfaces, and what b attached */
void hs_runmeta_header(struct js *j, const struct hs_config *cfg, const struct hs_backend *b,
		       const struct hs_clocks *start, const struct hs_clock_facts *clock,
		       int argc, char **argv);

/* what the recorder itself counted, for the COUNTERS and END chunks */
struct hs_userspace_counts {
	const uint64_t *by_status;	/* HS_ST_END values, by enum hs_status */
	const uint64_t *complete_by_path;	/* HS_PATH_END values: complete records by path */
	uint64_t records;		/* records written or buffered */
	uint64_t flows;
	uint64_t flow_overflow;
	uint64_t nat_flows;		/* flows with a NAT translation in the file */
	uint64_t nat_changed;		/* of them, those whose translation changed */
	uint64_t t4_unseen;		/* records flagged HS_F_T4_UNSEEN */
	uint64_t not_stored;		/* records received but not in the file (write error) */
	uint64_t inflight_at_stop;	/* packets in a slot at the stop (0 before it) */
	/* the recorder's own work: its CPU time, its drain threads, the most
	 * time one waited for a CPU, the longest time between two drains of a
	 * thread, what the drains saw
	 * (ring_records, peak_waiting), its time in write() (docs/record-format.md) */
	uint64_t cpu_ns, drain_threads, drain_cpu_wait_ns, drain_max_gap_ns;
	uint64_t ring_records, ring_peak_waiting;
	uint64_t write_ns, write_max_ns;
};

/* {"monotonic_ns", "counters": {...}, "userspace": {...}, "probe_cost": {...}}
 * without the closing brace; userspace.records_not_stored is u->not_stored;
 * cost NULL: no probe_cost (the backend does not sample it) */
void hs_runmeta_counters(struct js *j, const uint64_t *counters, const struct hs_cost *cost,
			 const struct hs_userspace_counts *u);

/* names from include/hopscope.h's lists, indexed by value (NULL: no such value) */
extern const char *const hs_counter_names[HS_C_NCOUNTERS];
extern const char *const hs_stage_names[HS_NSTAGES];
extern const char *const hs_status_names[HS_ST_END];
extern const char *const hs_delay_names[HS_NDELAYS];
extern const char *const hs_path_names[HS_PATH_END];

#endif
