/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The flight recorder at run time: notices a trigger (the kernel's, or
 * SIGUSR1), waits --flight-after so the packets after it are kept too, then
 * has the backend freeze and copy the rings and writes the last N records,
 * in t1 order, to a record file of their own.
 */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "flight.h"
#include "paths.h"
#include "runmeta.h"

#define WHAT_SIGNAL UINT64_MAX	/* a dump asked for by SIGUSR1 */

struct hs_flight {
	struct hs_flight_opts o;
	const struct hs_config *cfg;
	struct hs_backend *b;
	char *header;
	char dir[PATH_MAX];
	int64_t mono_to_real_ns;
	hs_flight_end_cb end;
	void *ctx;
	int pending;			/* a trigger waits for its dump */
	struct hs_flight_trigger trig;	/* that trigger */
	uint64_t triggers_at;		/* the kernel's trigger count before it */
	uint64_t armed_triggers;	/* that count at the last poll with none waiting */
	struct hs_flight_cpu sum;	/* the last counts read */
	uint64_t dumps, skipped, failed;
	int poll_err;			/* said once */
};

static volatile sig_atomic_t asked;

static void on_usr1(int sig)
{
	asked = 1;
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

struct hs_flight *hs_flight_new(const struct hs_flight_opts *o, const struct hs_config *cfg,
				struct hs_backend *b, const char *header, const char *out,
				int64_t mono_to_real_ns, hs_flight_end_cb end, void *ctx)
{
	struct hs_flight *f = calloc(1, sizeof(*f));
	const char *slash = strrchr(out, '/');

	if (!f || !(f->header = strdup(header))) {
		free(f);
		return NULL;
	}
	f->o = *o;
	f->cfg = cfg;
	f->b = b;
	f->mono_to_real_ns = mono_to_real_ns;
	f->end = end;
	f->ctx = ctx;
	if (o->dir)
		snprintf(f->dir, sizeof(f->dir), "%s", o->dir);
	else if (slash)
		snprintf(f->dir, sizeof(f->dir), "%.*s", (int)(slash - out), slash == out ? "/" : out);
	else
		snprintf(f->dir, sizeof(f->dir), ".");
	signal(SIGUSR1, on_usr1);
	return f;
}

/* the trigger as the user wrote it */
static const char *trigger_text(const struct hs_flight *f, const struct hs_flight_trigger *t)
{
	if (t->what == WHAT_SIGNAL)
		return "signal";
	if (t->what < HS_NDELAYS)
		return f->o.delay_text[t->what] ? f->o.delay_text[t->what] : "?";
	for (int i = 0; i < HS_FLIGHT_REASONS; i++)
		if (f->cfg->flight_reasons[i] == t->value ||
		    f->cfg->flight_reasons[i] == HS_FLIGHT_ANY_DROP)
			return f->o.reason_text[i];
	return "?";
}

static int by_at_last_first(const void *a, const void *b)
{
	const struct hs_flight_entry *x = a, *y = b;

	return x->at < y->at ? 1 : x->at > y->at ? -1 : 0;
}

static int by_t1(const void *a, const void *b)
{
	const struct hs_record *x = &((const struct hs_flight_entry *)a)->r;
	const struct hs_record *y = &((const struct hs_flight_entry *)b)->r;

	if (x->t[HS_T1] != y->t[HS_T1])
		return x->t[HS_T1] < y->t[HS_T1] ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* the dump's header: the run's, with what this dump is */
static char *dump_header(const struct hs_flight *f, size_t n, uint64_t frozen_at,
			 uint64_t frozen_ns)
{
	const struct hs_flight_trigger *t = &f->trig;
	struct js j;
	char *out;

	js_init(&j);
	js_reopen(&j, f->header);
	js_open(&j, "flight_dump", '{');
	js_u64(&j, "index", f->dumps + 1);
	js_str(&j, "trigger", trigger_text(f, t));
	js_u64(&j, "trigger_ns", t->ns);
	if (t->what < HS_NDELAYS) {
		js_str(&j, "delay", hs_delay_names[t->what]);
		js_u64(&j, "delay_ns", t->value);
	} else if (t->what == HS_FLIGHT_WHAT_DROP) {
		js_u64(&j, "drop_reason", t->value);
	}
	if (t->what != WHAT_SIGNAL)
		js_u64(&j, "trigger_seq", t->seq);
	js_u64(&j, "triggers", f->sum.triggers - f->triggers_at);
	js_u64(&j, "frozen_ns", frozen_at);
	js_u64(&j, "freeze_ns", frozen_ns);
	js_u64(&j, "records", n);
	js_u64(&j, "records_per_cpu", f->cfg->flight_n);
	js_close(&j, '}');
	js_close(&j, '}');
	out = js_text(&j) ? strdup(js_text(&j)) : NULL;
	js_free(&j);
	return out;
}

/* DIR/flight-YYYYMMDDTHHMMSS.uuuuuuZ-K.hsr, by the trigger's UTC time */
static void dump_path(const struct hs_flight *f, char *path, size_t len)
{
	uint64_t real = f->trig.ns + f->mono_to_real_ns;
	time_t sec = real / 1000000000ull;
	struct tm tm;
	char stamp[32];

	gmtime_r(&sec, &tm);
	strftime(stamp, sizeof(stamp), "%Y%m%dT%H%M%S", &tm);
	snprintf(path, len, "%s/flight-%s.%06lluZ-%llu.hsr", f->dir, stamp,
		 (unsigned long long)(real % 1000000000ull / 1000),
		 (unsigned long long)f->dumps + 1);
}

/* a translation, for a flow of the dump's records only */
static int dump_nat(void *ctx, const struct hs_tuple *from, const struct hs_nat *n)
{
	struct hs_writer *w = ctx;

	return hs_writer_nat(w, from, n, true, false);
}

/* the last N records kept, in t1 order, to their own file */
static int dump(struct hs_flight *f)
{
	const struct hs_flight_entry *e;
	struct hs_flight_entry *sel;
	struct hs_writer w = { .fd = -1 };	/* freed whether or not it opened */
	size_t n, k = 0;
	uint64_t at = mono_ns(), took;
	char path[PATH_MAX + 64], *header = NULL, *end = NULL;
	int err = f->b->flight_copy(f->b, &e, &n);

	took = mono_ns() - at;
	if (err) {
		fprintf(stderr, "\nhopscope: flight dump: cannot read the kernel's rings: %s\n",
			strerror(-err));
		return err;
	}
	sel = malloc((n ? n : 1) * sizeof(*sel));
	if (!sel)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		if (e[i].r.seq)
			sel[k++] = e[i];
	qsort(sel, k, sizeof(*sel), by_at_last_first);
	if (k > f->cfg->flight_n)
		k = f->cfg->flight_n;
	qsort(sel, k, sizeof(*sel), by_t1);
	dump_path(f, path, sizeof(path));
	header = dump_header(f, k, at, took);
	err = header ? hs_writer_open(&w, path, header, 1) : -ENOMEM;
	for (size_t i = 0; !err && i < k; i++) {
		sel[i].r.path = hs_path_of(f->cfg, &sel[i].r);
		err = hs_writer_add(&w, &sel[i].r);
	}
	/* their flows' translations as the kernel has them now */
	if (!err && f->b->nat)
		err = f->b->nat(f->b, dump_nat, &w);
	if (!err)
		err = hs_writer_sync(&w);	/* END's counts final */
	if (!err) {
		end = f->end(f->ctx, &w);
		err = end ? hs_writer_close(&w, end) : -ENOMEM;
	}
	hs_writer_free(&w);
	if (err)
		fprintf(stderr, "\nhopscope: flight dump %s failed: %s (a file there holds what "
			"was written before)\n", path, strerror(-err));
	else
		fprintf(stderr, "\nhopscope: flight dump %s: %zu records, trigger %s (%llu "
			"triggers; kept frozen %.1f ms)\n", path, k, trigger_text(f, &f->trig),
			(unsigned long long)(f->sum.triggers - f->triggers_at), took / 1e6);
	free(header);
	free(end);
	free(sel);
	return err;
}

int hs_flight_tick(struct hs_flight *f, int stopping)
{
	struct hs_flight_trigger t;
	int fired = f->b->flight_poll(f->b, &t, &f->sum);

	if (fired < 0) {
		if (!f->poll_err)
			fprintf(stderr, "\nhopscope: flight recorder: cannot read its state: %s\n",
				strerror(-fired));
		f->poll_err = 1;
		return fired;
	}
	if (!f->pending && (fired || asked)) {
		if (!fired) {
			t = (struct hs_flight_trigger){ .ns = mono_ns(), .what = WHAT_SIGNAL };
		}
		asked = 0;
		f->trig = t;
		/* the first trigger since the last poll claimed it: none before it */
		f->triggers_at = f->armed_triggers;
		f->pending = 1;
		if (f->dumps + f->failed >= f->o.max_dumps) {
			if (!f->skipped++)
				fprintf(stderr, "\nhopscope: flight recorder: %u dumps written, the most "
					"--flight-max-dumps allows: later triggers are counted "
					"(dumps_skipped), not dumped\n", f->o.max_dumps);
			f->pending = 0;
			f->b->flight_rearm(f->b);
		}
	}
	asked = 0;	/* one dump at a time: a signal meanwhile is in it */
	if (f->pending && (stopping || mono_ns() >= f->trig.ns + f->o.after_ns)) {
		if (dump(f))
			f->failed++;
		else
			f->dumps++;
		f->pending = 0;
		f->b->flight_rearm(f->b);
	}
	if (!f->pending)
		f->armed_triggers = f->sum.triggers;
	return 0;
}

void hs_flight_json(const struct hs_flight *f, struct js *j)
{
	js_open(j, "flight", '{');
	js_u64(j, "dumps", f->dumps);
	js_u64(j, "dumps_skipped", f->skipped);
	js_u64(j, "dumps_failed", f->failed);
	js_u64(j, "triggers", f->sum.triggers);
	js_u64(j, "records_kept", f->sum.pos);
	js_u64(j, "records_not_kept", f->sum.not_kept);
	js_close(j, '}');
}

int hs_flight_summary(const struct hs_flight *f)
{
	fprintf(stderr, "  flight     dumps %llu  dumps_skipped %llu  dumps_failed %llu  triggers "
		"%llu  records_kept %llu  records_not_kept %llu (in %s)\n",
		(unsigned long long)f->dumps, (unsigned long long)f->skipped,
		(unsigned long long)f->failed, (unsigned long long)f->sum.triggers,
		(unsigned long long)f->sum.pos, (unsigned long long)f->sum.not_kept, f->dir);
	return f->failed || f->poll_err;
}

void hs_flight_free(struct hs_flight *f)
{
	if (!f)
		return;
	signal(SIGUSR1, SIG_DFL);
	for (int i = 0; i < HS_NDELAYS; i++)
		free(f->o.delay_text[i]);
	for (int i = 0; i < HS_FLIGHT_REASONS; i++)
		free(f->o.reason_text[i]);
	free(f->header);
	free(f);
}
