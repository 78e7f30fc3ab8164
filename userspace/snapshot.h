/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * record --snapshot PATH: the run's header and its latest counters (with the
 * histograms), rewritten whole every second, for readers that watch a live
 * run (hopscope top, hopscope serve) without reading a growing record file.
 */
#ifndef HS_SNAPSHOT_H
#define HS_SNAPSHOT_H

#include <stdint.h>

struct hs_snapshot {
	const char *path;	/* NULL: no snapshots */
	char *header;		/* the record file's header JSON */
	uint64_t written;	/* snapshots written */
	uint64_t failed;	/* snapshots not written (the reader keeps the last one) */
	int last_err;		/* -errno of the last failure, 0 after a success */
};

/* {"format": "hopscope-snapshot", "version", "sequence", "realtime_ns",
 * "final", "header": {...}, "counters": {...}} into a file beside path,
 * then renamed over it: a reader sees the previous snapshot or this one,
 * whole. Returns 0 or -errno (also counted in failed). */
int hs_snapshot_write(struct hs_snapshot *s, const char *counters_json, int final);

#endif
