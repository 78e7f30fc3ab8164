/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* record's --flight options: triggers and times as the user writes them. */
#include <math.h>	/* isfinite */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "dropreasons.h"
#include "flight.h"
#include "runmeta.h"

/* a time: a number and ns, us, ms or s (def_unit_ns without one); -1: not one */
static int time_ns(const char *arg, uint64_t def_unit_ns, uint64_t *ns)
{
	static const struct { const char *name; uint64_t ns; } units[] = {
		{ "ns", 1 }, { "us", 1000 }, { "ms", 1000000 }, { "s", 1000000000 },
	};
	char *end;
	double v = strtod(arg, &end), unit = 0;

	if (end == arg || !isfinite(v) || v < 0)
		return -1;
	if (!*end)
		unit = def_unit_ns;
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
		if (!strcmp(end, units[i].name))
			unit = units[i].ns;
	if (!unit || v * unit > 1e18)
		return -1;
	*ns = (uint64_t)(v * unit + 0.5);
	return 0;
}

static int drop_trigger(struct hs_config *cfg, struct hs_flight_opts *o, const char *arg,
			char *why, size_t len)
{
	const char *name = arg + strlen("drop:");
	long v = strcmp(name, "any") ? hs_drop_reason_value(name) : HS_FLIGHT_ANY_DROP;
	int i = 0;

	if (v < 0) {
		snprintf(why, len, v == -2 ? "--flight-trigger %s: this kernel names no drop "
			 "reasons (no BTF): use drop:any" : "--flight-trigger %s: this kernel has "
			 "no drop reason '%s' (names as in its SKB_DROP_REASON_*, e.g. "
			 "drop:QDISC_DROP, or drop:any)", arg, name);
		return -1;
	}
	while (i < HS_FLIGHT_REASONS && cfg->flight_reasons[i] && cfg->flight_reasons[i] != v)
		i++;
	if (i == HS_FLIGHT_REASONS) {
		snprintf(why, len, "--flight-trigger: at most %d drop reasons", HS_FLIGHT_REASONS);
		return -1;
	}
	cfg->flight_reasons[i] = v;
	free(o->reason_text[i]);
	o->reason_text[i] = strdup(arg);
	return 0;
}

/* one --flight-trigger into cfg and o; -1 with why */
static int trigger(struct hs_config *cfg, struct hs_flight_opts *o, const char *arg,
		   char *why, size_t len)
{
	const char *gt = strchr(arg, '>');
	uint64_t ns;

	if (!strncmp(arg, "drop:", 5))
		return drop_trigger(cfg, o, arg, why, len);
	for (int d = 0; gt && d < HS_NDELAYS; d++) {
		if (strlen(hs_delay_names[d]) != (size_t)(gt - arg) ||
		    strncmp(arg, hs_delay_names[d], gt - arg))
			continue;
		if (time_ns(gt + 1, 0, &ns)) {
			snprintf(why, len, "--flight-trigger %s: the threshold must be a time with "
				 "its unit (ns, us, ms or s), e.g. %s>500us", arg, hs_delay_names[d]);
			return -1;
		}
		cfg->flight_over[d] = ns + 1;	/* the kernel compares d >= it */
		free(o->delay_text[d]);
		o->delay_text[d] = strdup(arg);
		return 0;
	}
	snprintf(why, len, "--flight-trigger takes DELAY>TIME (DELAY one of d_iq, d_p, d_oq, "
		 "transit, d_rxq, d_qdisc; TIME e.g. 500us) or drop:REASON (a kernel drop reason, "
		 "or any), not '%s'", arg);
	return -1;
}

void hs_flight_config_json(struct js *j, const struct hs_flight_opts *o)
{
	const struct hs_config *cfg = o->cfg;

	js_open(j, "flight", '{');
	js_u64(j, "records", cfg->flight_n);
	js_open(j, "triggers", '[');
	for (int d = 0; d < HS_NDELAYS; d++)
		if (o->delay_text[d])
			js_str(j, NULL, o->delay_text[d]);
	for (int i = 0; i < HS_FLIGHT_REASONS; i++)
		if (o->reason_text[i])
			js_str(j, NULL, o->reason_text[i]);
	js_str(j, NULL, "signal");
	js_close(j, ']');
	js_u64(j, "after_ns", o->after_ns);
	js_u64(j, "max_dumps", o->max_dumps);
	js_close(j, '}');
}

enum { OPT_FLIGHT = 1100, OPT_TRIGGER, OPT_AFTER, OPT_DIR, OPT_MAX };

static const struct argp_option options[] = {
	{ "flight", OPT_FLIGHT, "N", 0, "with --aggregate: keep the last N records in the kernel "
	  "(N per CPU, overwritten) and write them to a flight dump when a trigger fires or on "
	  "SIGUSR1" },
	{ "flight-trigger", OPT_TRIGGER, "SPEC", 0, "what makes a flight dump, repeatable: "
	  "DELAY>TIME (d_iq, d_p, d_oq, transit, d_rxq, d_qdisc; e.g. d_oq>500us) or drop:REASON "
	  "(a kernel drop reason, e.g. QDISC_DROP, or any)" },
	{ "flight-after", OPT_AFTER, "TIME", 0, "keep recording this long after the trigger "
	  "before the dump (e.g. 50ms; default 0)" },
	{ "flight-dir", OPT_DIR, "DIR", 0, "folder of the flight dumps (default: --output's)" },
	{ "flight-max-dumps", OPT_MAX, "N", 0, "write at most N flight dumps, count the "
	  "triggers after them as dumps_skipped (default 100)" },
	{},
};

/* the checks that need the whole command line */
static void check(struct argp_state *state, const struct hs_flight_opts *o)
{
	const struct hs_config *cfg = o->cfg;

	if (o->given && !cfg->flight_n)
		argp_error(state, "--flight-trigger, --flight-after, --flight-dir and "
			   "--flight-max-dumps need --flight N");
	if (cfg->flight_n && cfg->hist != HS_HIST_AGGREGATE)
		argp_error(state, "--flight keeps in the kernel the records --aggregate does "
			   "not write: it needs --aggregate");
	if (cfg->flight_over[HS_D_RXQ] && !(cfg->stages & HS_STAGE_BIT(HS_T0)))
		argp_error(state, "--flight-trigger d_rxq needs --stages t0");
	if (cfg->flight_over[HS_D_QDISC] && !(cfg->stages & HS_STAGE_BIT(HS_TCEG)))
		argp_error(state, "--flight-trigger d_qdisc needs --stages tceg");
	if (cfg->flight_reasons[0] && !cfg->drops)
		argp_error(state, "--flight-trigger drop:... needs the drops: no --no-drops");
}

static error_t parse_opt(int key, char *arg, struct argp_state *state)
{
	struct hs_flight_opts *o = state->input;
	unsigned long n;
	char *end, why[320];
	struct stat st;

	switch (key) {
	case OPT_FLIGHT:
		n = strtoul(arg, &end, 10);
		if (*end || end == arg || !n || n > HS_FLIGHT_MAX_N)
			argp_error(state, "--flight takes the records to keep, 1 to %d, not '%s'",
				   HS_FLIGHT_MAX_N, arg);
		o->cfg->flight_n = n;
		return 0;
	case OPT_TRIGGER:
		if (trigger(o->cfg, o, arg, why, sizeof(why)))
			argp_error(state, "%s", why);
		break;
	case OPT_AFTER:
		if (time_ns(arg, 1000000000ull, &o->after_ns) || o->after_ns > 3600 * 1000000000ull)
			argp_error(state, "--flight-after takes a time up to an hour (e.g. 50ms, 2s), "
				   "not '%s'", arg);
		break;
	case OPT_DIR:
		if (stat(arg, &st) || !S_ISDIR(st.st_mode) || access(arg, W_OK | X_OK))
			argp_error(state, "--flight-dir %s: not a folder this user can write", arg);
		o->dir = arg;
		break;
	case OPT_MAX:
		n = strtoul(arg, &end, 10);
		if (*end || end == arg || n > 1000000)
			argp_error(state, "--flight-max-dumps takes 0 to 1000000, not '%s'", arg);
		o->max_dumps = n;
		break;
	case ARGP_KEY_END:
		check(state, o);
		return 0;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	o->given = 1;
	return 0;
}

const struct argp hs_flight_argp = { options, parse_opt };
