/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The flight recorder (record --aggregate --flight N): the kernel keeps the
 * last records per CPU (include/hopscope.h); on a trigger, or SIGUSR1, the
 * recorder waits --flight-after, then writes the last N records to a record
 * file of their own in --flight-dir (docs/record-format.md, "Flight dumps").
 */
#ifndef HS_FLIGHT_H
#define HS_FLIGHT_H

#include <argp.h>
#include <stdint.h>
#include "backend.h"
#include "json.h"
#include "writer.h"

#define HS_FLIGHT_MAX_N 65536	/* --flight: records kept per CPU, at most */

struct hs_flight_opts {
	struct hs_config *cfg;		/* the run's: flight_n and the triggers go there */
	int given;			/* a --flight-* option other than --flight */
	uint64_t after_ns;		/* --flight-after */
	const char *dir;		/* --flight-dir; NULL: -o's folder */
	uint32_t max_dumps;		/* --flight-max-dumps */
	char *delay_text[HS_NDELAYS];	/* each delay trigger as given (NULL: none) */
	char *reason_text[HS_FLIGHT_REASONS];	/* each drop trigger as given */
};

/* flight_opts.c: record's --flight options, an argp child whose input is
 * a struct hs_flight_opts with cfg set (its checks need --aggregate,
 * --stages and --no-drops, parsed by then) */
extern const struct argp hs_flight_argp;
/* the "flight" member of the run's header: N, the triggers, after, dir */
void hs_flight_config_json(struct js *j, const struct hs_flight_opts *o);

/* a dump's END JSON: the run's counters with the dump's own writer's counts */
typedef char *(*hs_flight_end_cb)(void *ctx, struct hs_writer *w);

struct hs_flight;

/* header: the run's header JSON (copied); out: the run's -o, whose folder
 * holds the dumps without --flight-dir; SIGUSR1 asks for a dump from now on */
struct hs_flight *hs_flight_new(const struct hs_flight_opts *o, const struct hs_config *cfg,
				struct hs_backend *b, const char *header, const char *out,
				int64_t mono_to_real_ns, hs_flight_end_cb end, void *ctx);
/* called every poll: notices triggers, dumps once --flight-after has passed
 * (stopping: a trigger still waiting is dumped now); -errno when the
 * backend cannot be read (said why) */
int hs_flight_tick(struct hs_flight *f, int stopping);
/* "flight": the dumps, skipped dumps, triggers, records kept and not kept */
void hs_flight_json(const struct hs_flight *f, struct js *j);
/* one line for the run's summary; 1: a dump failed or the state could not
 * be read (said when it happened), and the run exits 1 */
int hs_flight_summary(const struct hs_flight *f);
void hs_flight_free(struct hs_flight *f);

#endif
