/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/timex.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>
#include "dropreasons.h"
#include "hopscope_file.h"
#include "ifaces.h"
#include "runmeta.h"
#include "sample.h"

const char *const hs_counter_names[HS_C_NCOUNTERS] = HS_COUNTER_NAMES;
const char *const hs_stage_names[HS_NSTAGES] = HS_STAGE_NAMES;
const char *const hs_status_names[HS_ST_END] = HS_STATUS_NAMES;
const char *const hs_delay_names[HS_NDELAYS] = HS_DELAY_NAMES;
const char *const hs_path_names[HS_PATH_END] = HS_PATH_NAMES;

static uint64_t ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

void hs_clocks_now(struct hs_clocks *c)
{
	uint64_t best = UINT64_MAX;

	/* realtime read between two monotonic reads; keep the tightest of a few */
	for (int i = 0; i < 7; i++) {
		uint64_t a = ns(CLOCK_MONOTONIC), r = ns(CLOCK_REALTIME), b = ns(CLOCK_MONOTONIC);

		if (b - a < best) {
			best = b - a;
			c->mono_ns = a + (b - a) / 2;
			c->real_ns = r;
		}
	}
	c->mono_to_real_ns = (int64_t)(c->real_ns - c->mono_ns);
	c->err_ns = (int64_t)(best / 2);
}

static char *first_line(const char *path, const char *prefix)
{
	char buf[512];
	FILE *f = fopen(path, "re");
	char *out = NULL;

	if (!f)
		return NULL;
	while (fgets(buf, sizeof(buf), f)) {
		if (prefix && strncmp(buf, prefix, strlen(prefix)))
			continue;
		buf[strcspn(buf, "\n")] = 0;
		char *v = prefix ? strchr(buf, ':') : buf;

		if (prefix && v)
			v += 2;
		out = v ? strdup(v) : NULL;
		break;
	}
	fclose(f);
	return out;
}

#define CS_DIR "/sys/devices/system/clocksource/clocksource0/"

/* line holds word as a whole word (cpuinfo's flags are space separated) */
static int has_word(const char *line, const char *word)
{
	size_t n = strlen(word);

	for (const char *p = strstr(line, word); p; p = strstr(p + 1, word))
		if ((p == line || p[-1] == ' ' || p[-1] == '\t') && strchr(" \t\n", p[n]))
			return 1;
	return 0;
}

/* constant_tsc and nonstop_tsc: set only if every CPU's flags line has them;
 * no flags line (not x86, or no /proc) leaves them unknown */
static void tsc_flags(struct hs_clock_facts *f)
{
	FILE *in = fopen("/proc/cpuinfo", "re");
	char *line = NULL;
	size_t cap = 0;
	int cpus = 0, constant = 0, nonstop = 0;

	f->constant_tsc = f->nonstop_tsc = -1;
	if (!in)
		return;
	while (getline(&line, &cap, in) > 0) {
		if (strncmp(line, "flags", 5) || !strchr(line, ':'))
			continue;
		cpus++;
		constant += has_word(line, "constant_tsc");
		nonstop += has_word(line, "nonstop_tsc");
	}
	free(line);
	fclose(in);
	if (cpus) {
		f->constant_tsc = constant == cpus;
		f->nonstop_tsc = nonstop == cpus;
	}
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

/* modes 0: adjtimex reads the kernel's NTP state and sets nothing */
static void realtime_sync(struct hs_clock_facts *f)
{
	struct timex tx = { .modes = 0 };

	f->sync.valid = adjtimex(&tx) >= 0;
	if (!f->sync.valid)
		return;
	f->sync.synced = !(tx.status & STA_UNSYNC);
	f->sync.status = tx.status;
	f->sync.tai_s = tx.tai;
	/* maxerror and esterror are in microseconds whatever STA_NANO says */
	f->sync.maxerror_ns = (int64_t)tx.maxerror * 1000;
	f->sync.esterror_ns = (int64_t)tx.esterror * 1000;
}

void hs_clock_facts_read(struct hs_clock_facts *f)
{
	static uint64_t t[HS_CLOCK_READS + 1];
	struct timespec res;

	f->clocksource = first_line(CS_DIR "current_clocksource", NULL);
	f->available = first_line(CS_DIR "available_clocksource", NULL);
	tsc_flags(f);
	f->resolution_ns = clock_getres(CLOCK_MONOTONIC, &res) ? -1 :
			   res.tv_sec * 1000000000ll + res.tv_nsec;
	/* back to back: each difference is the cost of one read (the median
	 * leaves out reads an interrupt or a preemption fell into) */
	for (int i = 0; i <= HS_CLOCK_READS; i++)
		t[i] = ns(CLOCK_MONOTONIC);
	for (int i = 0; i < HS_CLOCK_READS; i++)
		t[i] = t[i + 1] - t[i];
	qsort(t, HS_CLOCK_READS, sizeof(t[0]), cmp_u64);
	f->read_ns = t[HS_CLOCK_READS / 2];
	f->boot_id = first_line("/proc/sys/kernel/random/boot_id", NULL);
	realtime_sync(f);
}

void hs_clock_facts_free(struct hs_clock_facts *f)
{
	free(f->clocksource);
	free(f->available);
	free(f->boot_id);
	f->clocksource = f->available = f->boot_id = NULL;
}

void hs_clock_warn(const struct hs_clock_facts *f)
{
	/* the TSC exists on x86 only: elsewhere another clocksource is the right one */
#if defined(__x86_64__) || defined(__i386__)
	if (f->clocksource && strcmp(f->clocksource, "tsc"))
		fprintf(stderr, "hopscope: WARNING: the clocksource is %s, not tsc: every "
			"instant is read from it, coarser and costlier than the TSC (docs/clock.md)\n",
			f->clocksource);
#endif
	if (f->constant_tsc == 0)
		fprintf(stderr, "hopscope: WARNING: the TSC is not constant (no constant_tsc): its "
			"rate follows the CPU's frequency (docs/clock.md)\n");
	if (f->nonstop_tsc == 0)
		fprintf(stderr, "hopscope: WARNING: the TSC is not non-stop (no nonstop_tsc): it "
			"may stop in deep idle states (docs/clock.md)\n");
}

static void tristate(struct js *j, const char *key, int v)
{
	if (v < 0)
		js_raw(j, key, NULL);
	else
		js_bool(j, key, v);
}

static void signed_or_null(struct js *j, const char *key, int64_t v)
{
	if (v < 0)
		js_raw(j, key, NULL);
	else
		js_i64(j, key, v);
}

/* "clock": the facts above, null where unknown */
static void clock_json(struct js *j, const struct hs_clock_facts *f, const struct hs_backend *b,
		       const struct hs_clocks *start)
{
	js_open(j, "clock", '{');
	js_str(j, "clocksource", f->clocksource);
	if (f->available) {
		char *list = strdup(f->available), *save = NULL;

		js_open(j, "available_clocksources", '[');
		for (char *w = list ? strtok_r(list, " \t", &save) : NULL; w;
		     w = strtok_r(NULL, " \t", &save))
			js_str(j, NULL, w);
		js_close(j, ']');
		free(list);
	} else {
		js_raw(j, "available_clocksources", NULL);
	}
	tristate(j, "constant_tsc", f->constant_tsc);
	tristate(j, "nonstop_tsc", f->nonstop_tsc);
	/* the kernel's clock behind every instant, both backends */
	js_str(j, "stamp_clock", "CLOCK_MONOTONIC");
	js_str(j, "stamp_read", strcmp(b->name, "kmod") ? "bpf_ktime_get_ns" : "ktime_get_ns");
	signed_or_null(j, "resolution_ns", f->resolution_ns);
	signed_or_null(j, "user_read_cost_ns", f->read_ns);
	js_u64(j, "user_read_cost_reads", HS_CLOCK_READS);
	/* what aligns this host's instants with another's (docs/clock.md) */
	js_str(j, "boot_id", f->boot_id);
	if (f->sync.valid) {
		js_open(j, "realtime_sync", '{');
		js_bool(j, "synced", f->sync.synced);
		js_i64(j, "maxerror_ns", f->sync.maxerror_ns);
		js_i64(j, "esterror_ns", f->sync.esterror_ns);
		js_i64(j, "status", f->sync.status);
		js_i64(j, "tai_offset_s", f->sync.tai_s);
		js_close(j, '}');
	} else {
		js_raw(j, "realtime_sync", NULL);
	}
	js_i64(j, "mono_to_realtime_err_ns", start->err_ns);
	js_close(j, '}');
}

int hs_router_id_ok(const char *id)
{
	size_t n = strlen(id);

	if (!n || n > HS_ROUTER_ID_MAX)
		return 0;
	for (const unsigned char *c = (const unsigned char *)id; *c; c++)
		if (*c <= ' ' || *c > '~')
			return 0;
	return 1;
}

/* "hooks": one object per probe, whichever backend attached it */
static void hooks_json(struct js *j, const struct hs_backend *b)
{
	static const char *const kinds[] = HS_HOOK_NAMES;

	js_open(j, "hooks", '[');
	for (int i = 0; i < b->nhooks; i++) {
		const struct hs_hook *h = &b->hooks[i];

		js_open(j, NULL, '{');
		js_str(j, "stage", h->stage < HS_NSTAGES ? hs_stage_names[h->stage] :
				   kinds[h->stage - HS_HOOK_LOCAL_IN]);
		js_str(j, "hook", h->hook);
		if (h->has_priority)
			js_i64(j, "priority", h->priority);
		else
			js_raw(j, "priority", NULL);
		js_str(j, "backend", b->name);
		js_close(j, '}');
	}
	js_close(j, ']');
}

void hs_runmeta_header(struct js *j, const struct hs_config *cfg, const struct hs_backend *b,
		       const struct hs_clocks *start, const struct hs_clock_facts *clock,
		       int argc, char **argv)
{
	struct utsname u;
	char host[256] = "";
	struct js cmd;
	struct hs_sampling sampling;
	char *model = first_line("/proc/cpuinfo", "model name");
	char id[sizeof(host) + 1 + NAME_MAX + 1];	/* a netns is a file name */

	uname(&u);
	gethostname(host, sizeof(host) - 1);
	/* the command line, whole up to HS_COMMAND_MAX bytes; cut there between
	 * two characters, never inside one (js_str escapes what is not UTF-8) */
	js_init(&cmd);
	for (int i = 0; i < argc; i++) {
		js_append(&cmd, argv[i]);
		if (i + 1 < argc)
			js_append(&cmd, " ");
	}
	if (js_text(&cmd) && cmd.len > HS_COMMAND_MAX)
		cmd.buf[js_utf8_cut(cmd.buf, HS_COMMAND_MAX)] = 0;

	js_open(j, NULL, '{');
	js_str(j, "format", "hopscope-record");
	js_u64(j, "version", HS_FILE_VERSION);
	js_str(j, "tracer_version", HS_VERSION);
	js_u64(j, "key_hash", HS_KEY_HASH);
	js_str(j, "backend", b->name);
	/* false: a backend that does not read NAT's translations (the file has none) */
	js_bool(j, "nat_translations", b->nat != NULL);
	js_bool(j, "floor", cfg->floor);
	js_bool(j, "floor_clock", cfg->floor == HS_FLOOR_CLOCK);
	js_str(j, "command", js_text(&cmd) ? js_text(&cmd) : "");
	js_str(j, "hostname", host);
	/* the default, HOST/NETNS, tells routers in namespaces of one host apart */
	snprintf(id, sizeof(id), cfg->netns ? "%s/%s" : "%s", host, cfg->netns);
	js_str(j, "router_id", cfg->router_id ? cfg->router_id : id);
	js_bool(j, "router_id_given", cfg->router_id != NULL);
	js_u64(j, "start_realtime_ns", start->real_ns);
	js_u64(j, "start_monotonic_ns", start->mono_ns);
	js_i64(j, "mono_to_realtime_ns", start->mono_to_real_ns);
	js_open(j, "kernel", '{');
	js_str(j, "release", u.release);
	js_str(j, "version", u.version);
	js_str(j, "machine", u.machine);
	js_close(j, '}');
	js_str(j, "clocksource", clock->clocksource);	/* as before "clock" */
	clock_json(j, clock, b, start);
	js_open(j, "cpu", '{');
	js_str(j, "model", model);
	js_u64(j, "count", sysconf(_SC_NPROCESSORS_ONLN));
	js_close(j, '}');
	js_open(j, "netns", '{');
	js_str(j, "name", cfg->netns);
	js_u64(j, "inode", cfg->netns_inum);
	js_close(j, '}');
	hs_ifaces_json(j, cfg);
	js_open(j, "stages", '[');
	for (int s = 0; s < HS_NSTAGES; s++)
		if (cfg->stages & HS_STAGE_BIT(s))
			js_str(j, NULL, hs_stage_names[s]);
	js_close(j, ']');
	js_bool(j, "drops", cfg->drops);
	js_str(j, "histograms", cfg->hist == HS_HIST_AGGREGATE ? "aggregate" :
	       cfg->hist == HS_HIST_RECORDS ? "records" : "off");
	hs_sampling_init(&sampling, cfg);
	hs_sampling_json(j, &sampling, NULL);
	hs_drop_reasons_json(j);
	hooks_json(j, b);
	js_raw(j, "backend_info", js_text(&b->info));
	if (cfg->calibration)
		js_raw(j, "calibration", cfg->calibration);
	js_u64(j, "slots_per_cpu", cfg->slots_per_cpu);
	js_u64(j, "ringbuf_bytes", cfg->ringbuf_bytes);
	js_u64(j, "record_size", sizeof(struct hs_record));
	js_open(j, "counter_names", '[');
	for (int c = 0; c < HS_C_NCOUNTERS; c++)
		js_str(j, NULL, hs_counter_names[c]);
	js_close(j, ']');
	js_open(j, "stage_names", '[');
	for (int s = 0; s < HS_NSTAGES; s++)
		js_str(j, NULL, hs_stage_names[s]);
	js_close(j, ']');
	js_open(j, "record_flags", '{');
#define FLAG(id, val, name) js_u64(j, name, val);
	HS_FLAG_LIST(FLAG)
#undef FLAG
	js_close(j, '}');
	js_close(j, '}');
	free(model);
	js_free(&cmd);
}

/* the stages with samples; a histogram without its trailing empty buckets.
 * n is what the histogram and its overflow hold: a probe may be adding a
 * sample while the cost is read, and the chunk counts its own samples (the
 * one in flight shows at the next read) */
static void cost_json(struct js *j, const struct hs_cost *cost)
{
	js_open(j, "probe_cost", '{');
	js_u64(j, "sample_shift", HS_COST_SAMPLE_SHIFT);
	js_u64(j, "bucket_ns", HS_COST_BUCKET_NS);
	js_u64(j, "fine_buckets", HS_COST_FINE);
	js_u64(j, "wide_ns", HS_COST_WIDE_NS);
	js_u64(j, "sq_cap_ns", HS_COST_SQ_CAP);
	js_open(j, "stages", '{');
	for (int s = 0; s < HS_NSTAGES; s++) {
		const struct hs_cost *c = &cost[s];
		int last = HS_COST_BUCKETS;
		uint64_t n = c->over;

		for (int i = 0; i < HS_COST_BUCKETS; i++)
			n += c->hist[i];
		if (!n)
			continue;
		while (last > 0 && !c->hist[last - 1])
			last--;
		js_open(j, hs_stage_names[s], '{');
		js_u64(j, "n", n);
		js_u64(j, "sum_ns", c->sum_ns);
		js_u64(j, "sum_sq", c->sum_sq);
		js_u64(j, "max_ns", c->max_ns);
		js_u64(j, "over", c->over);
		js_open(j, "hist", '[');
		for (int i = 0; i < last; i++)
			js_u64(j, NULL, c->hist[i]);
		js_close(j, ']');
		js_close(j, '}');
	}
	js_close(j, '}');
	js_close(j, '}');
}

void hs_runmeta_counters(struct js *j, const uint64_t *counters, const struct hs_cost *cost,
			 const struct hs_userspace_counts *u)
{
	struct hs_clocks now;

	hs_clocks_now(&now);
	js_open(j, NULL, '{');
	js_u64(j, "monotonic_ns", now.mono_ns);
	js_open(j, "counters", '{');
	for (int c = 0; c < HS_C_NCOUNTERS; c++)
		js_u64(j, hs_counter_names[c], counters[c]);
	js_close(j, '}');
	js_open(j, "userspace", '{');
	js_u64(j, "records_written", u->records);
	js_open(j, "records_by_status", '{');
	for (int s = HS_ST_NONE + 1; s < HS_ST_END; s++)
		js_u64(j, hs_status_names[s], u->by_status[s]);
	js_close(j, '}');
	js_open(j, "complete_by_path", '{');
	for (int p = 0; p < HS_PATH_END; p++)
		js_u64(j, hs_path_names[p], u->complete_by_path[p]);
	js_close(j, '}');
	js_u64(j, "flows", u->flows);
	js_u64(j, "flow_overflow", u->flow_overflow);
	js_u64(j, "nat_flows", u->nat_flows);
	js_u64(j, "nat_changed", u->nat_changed);
	js_u64(j, "t4_unseen", u->t4_unseen);
	js_u64(j, "records_not_stored", u->not_stored);
	js_u64(j, "inflight_at_stop", u->inflight_at_stop);
	js_u64(j, "cpu_ns", u->cpu_ns);
	js_u64(j, "drain_threads", u->drain_threads);
	js_u64(j, "drain_cpu_wait_ns", u->drain_cpu_wait_ns);
	js_u64(j, "drain_max_gap_ns", u->drain_max_gap_ns);
	js_u64(j, "ring_records", u->ring_records);
	js_u64(j, "ring_peak_waiting", u->ring_peak_waiting);
	js_u64(j, "write_ns", u->write_ns);
	js_u64(j, "write_max_ns", u->write_max_ns);
	js_close(j, '}');
	if (cost)
		cost_json(j, cost);
}
