/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* `hopscope record`: attach, drain, write the record file, report every counter. */
#include <argp.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>
#include <bpf/libbpf.h>
#include "backend.h"
#include "flight.h"
#include "ifaces.h"
#include "ifstack.h"
#include "ifwatch.h"
#include "netns.h"
#include "paths.h"
#include "record.h"
#include "routerlock.h"
#include "runmeta.h"
#include "snapshot.h"
#include "sample.h"
#include "writer.h"

/* CPUs per drain thread under --drain-threads auto: one thread carries the
 * records of 5-6.6 M packets a second (evaluation/overhead.md, the recorder's
 * path), four CPUs forward ~4.4 M at most on the fastest machine measured */
#define HS_CPUS_PER_DRAIN 4

struct opts {
	struct hs_config cfg;
	const char *in, *out, *output, *backend, *xdp_mode, *calibration, *snapshot;
	const char *sample;	/* --sample as given, NULL: not given */
	double duration;
	double counters_every;	/* seconds between COUNTERS chunks */
	struct hs_flight_opts flight;
	uint64_t count;
	int quiet;
	int ready_fd;		/* -1: none */
	int realtime;		/* --realtime's SCHED_FIFO priority, 0: none */
	bool realtime_asked;	/* given, not the default: a refusal is an error */
	int drain_threads;	/* --drain-threads, 0: auto */
};

static volatile sig_atomic_t stop_signal;

static void on_signal(int sig)
{
	stop_signal = sig;
}

static const char doc[] =
"Record the four instants of every packet a router forwards.\v"
"Stages: t1 XDP on each --in interface; t2 netfilter PRE_ROUTING (earliest\n"
"priority); t3 POST_ROUTING (latest); t4 net_dev_start_xmit on each --out\n"
"interface. --stages adds: t0 (arrival: netif_rx), tcin (tc ingress), fwd\n"
"(netfilter FORWARD), tceg (tc egress, before the qdisc).\n"
"\n"
"EXAMPLES:\n"
"  hopscope record --netns router --in r-s1,r-s2 --out r-rx -d 10 -o run.hsr\n"
"      10 s of the testbed's router, both senders\n"
"  hopscope record -n router -i r-s1 -O r-rx --stages t0,tceg -c 100000 -o q.hsr\n"
"      stop after 100000 complete records; split both queues into their parts\n"
"  hopscope record -n router -i r-s1 -O r-rx -o run.hsr --ready-fd 3 3>ready &\n"
"      read -r line < ready   # blocks until every probe is attached (line: ready)\n"
"  hopscope record -n router -i r-s1 -O r-rx -d 10 -o run.hsr --calibration cal.json\n"
"      with the probe floor `hopscope calibrate -o cal.json` measured\n"
"  hopscope record -n router -i r-s1 -O r-rx -d 3600 --aggregate -o hour.hsr\n"
"      an hour of delay histograms by TOS and output, no record per packet\n"
"  hopscope record -n router -i r-s1 -O r-rx --aggregate -o day.hsr \\\n"
"      --flight 4096 --flight-trigger 'd_oq>500us' --flight-after 50ms\n"
"      always on; an output queue wait over 500 us (or SIGUSR1) writes the last\n"
"      4096 packets' records to flight-TIME-K.hsr beside day.hsr\n"
"  hopscope record -n router -i r-s1 -O r-rx -d 60 --aggregate --sample auto \\\n"
"      --cpu-budget 5 -o s.hsr\n"
"      histograms of a packet in N, N chosen each second so that the probes\n"
"      take at most 5 % of a CPU (the file says N; counts are the traced ones)\n"
"  hopscope describe run.hsr\n"
"      what was recorded: counts, delays, counters, problems, error budget\n"
"\n"
"--ready-fd N: once every probe is attached and the file's header is written,\n"
"the line `ready` goes to file descriptor N, which is then closed (a pipe's\n"
"reader sees the line, or end of file if the recorder failed before). -q does\n"
"not silence it.\n"
"Stops on --duration, --count or Ctrl-C; prints every counter at the end.\n"
"Exit status: 0 ok, 1 runtime error, 2 usage error.";

enum {
	OPT_STAGES = 1000, OPT_XDP, OPT_SLOTS, OPT_RING, OPT_NODROPS, OPT_BACKEND, OPT_FLOOR,
	OPT_READY_FD, OPT_CALIBRATION, OPT_HIST, OPT_AGGREGATE, OPT_SNAPSHOT, OPT_COUNTERS_EVERY,
	OPT_SAMPLE, OPT_CPU_BUDGET, OPT_GRO, OPT_REALTIME, OPT_DRAIN_THREADS, OPT_ROUTER_ID,
};

static const struct argp_option options[] = {
	{ "netns", 'n', "NAME", 0, "router's network namespace (/run/netns/NAME)" },
	{ "router-id", OPT_ROUTER_ID, "ID", 0, "this router's name on a path of several, in the "
	  "file's header (1-" HS_STR(HS_ROUTER_ID_MAX) " printable ASCII characters, no space; "
	  "default: the hostname, HOST/NETNS with --netns)" },
	{ "in", 'i', "IF[,IF]", 0, "input interfaces (XDP, t1)" },
	{ "out", 'O', "IF[,IF]", 0, "output interfaces (t4)" },
	{ "output", 'o', "FILE", 0, "record file to write (.hsr)" },
	{ "duration", 'd', "SEC", 0, "stop after SEC seconds" },
	{ "count", 'c', "N", 0, "stop after N complete records" },
	{ "stages", OPT_STAGES, "LIST", 0, "optional stages: t0,tcin,fwd,tceg or all" },
	{ "xdp-mode", OPT_XDP, "MODE", 0, "auto (default: generic on veth, native elsewhere, "
	  "generic where the driver refuses native or gives it no metadata room), native, "
	  "generic" },
	{ "gro", OPT_GRO, "MODE", 0, "off (default: one record per wire packet; GRO cannot "
	  "merge what native XDP traced), or keep: GRO merges TCP on native-XDP inputs that have "
	  "it on, as untraced, and a merged packet has one record counting its segments (segs)" },
	{ "slots", OPT_SLOTS, "N", 0, "packets in flight per CPU before eviction (power of 2, default "
	  HS_STR(HS_SLOTS_DEFAULT) ")" },
	{ "ring", OPT_RING, "MIB", 0, "MiB for the record rings, shared by the CPUs (default: "
	  HS_STR(HS_RING_CPU_RECORDS) " records a CPU, " HS_STR(HS_RING_MIN_MIB) " to "
	  HS_STR(HS_RING_MAX_MIB) " MiB)" },
	{ "realtime", OPT_REALTIME, "PRIO", 0, "drain the rings at SCHED_FIFO priority PRIO "
	  "(1-99; default 1, 0: the normal scheduler): other work on the recorder's CPU cannot "
	  "hold the drain up (as perf record -r)" },
	{ "drain-threads", OPT_DRAIN_THREADS, "N|auto", 0, "threads that drain the record "
	  "rings, each the rings of every Nth CPU (auto, the default: one per "
	  HS_STR(HS_CPUS_PER_DRAIN) " CPUs; eBPF backend)" },
	{ "no-drops", OPT_NODROPS, 0, 0, "do not watch skb:kfree_skb for drops" },
	{ "backend", OPT_BACKEND, "NAME", 0, "ebpf, kmod or auto (default auto)" },
	{ "floor", OPT_FLOOR, "clock", OPTION_ARG_OPTIONAL, "attach empty programs (kmod: "
	  "probes that return at once) at the same hooks and record nothing: what the hooks "
	  "alone cost, the floor no tracer there can beat (evaluation/overhead.md); "
	  "=clock: each reads the clock once (eBPF backend), the floor of any tracer that stamps" },
	{ "ready-fd", OPT_READY_FD, "N", 0, "write `ready` to file descriptor N once attached "
	  "and the file header is written, then close it" },
	{ "calibration", OPT_CALIBRATION, "FILE", 0, "carry this `hopscope calibrate` result "
	  "into the file's header: describe and report show its floor beside the run's" },
	{ "histograms", OPT_HIST, 0, 0, "also add every complete packet's delays to in-kernel "
	  "histograms by TOS and output, written with the counters (eBPF backend)" },
	{ "aggregate", OPT_AGGREGATE, 0, 0, "histograms only: no record leaves the kernel, the "
	  "file holds its header, counters and histograms (eBPF backend)" },
	{ "snapshot", OPT_SNAPSHOT, "FILE", 0, "every second, replace FILE with the header and "
	  "the latest counters and histograms as one JSON object (what hopscope top and "
	  "hopscope serve read)" },
	{ "counters-every", OPT_COUNTERS_EVERY, "SEC", 0, "write the buffered records and a "
	  "COUNTERS chunk every SEC seconds (default 1; longer for days of --aggregate)" },
	{ "sample", OPT_SAMPLE, "N|auto", 0, "trace one packet in N per CPU, drawn at random "
	  "at t1 (1, the default: every packet); auto: N chosen each second to keep the probes "
	  "within --cpu-budget (eBPF backend, not with t0)" },
	{ "cpu-budget", OPT_CPU_BUDGET, "PCT", 0, "--sample auto: the share of one CPU, in %, "
	  "the probes may take (0 < PCT <= 100)" },
	{ "quiet", 'q', 0, 0, "no live line" },
	{ "verbose", 'v', 0, 0, "libbpf debug output" },
	{},
};

/* an optional stage by its name (t_tcin) or that name without "t_" (tcin); -1: none */
static int optional_stage(const char *name)
{
	for (int s = 0; s < HS_NSTAGES; s++) {
		const char *n = hs_stage_names[s];

		if (HS_STAGES_CORE & HS_STAGE_BIT(s))
			continue;
		if (!strcmp(name, n) || (!strncmp(n, "t_", 2) && !strcmp(name, n + 2)))
			return s;
	}
	return -1;
}

/* a comma list with at least one name and no empty one ("a,,b", ",a", "a,") */
static int has_name(const char *list)
{
	size_t n = strlen(list);

	return n && list[0] != ',' && list[n - 1] != ',' && !strstr(list, ",,");
}

static int parse_stages(const char *arg, uint32_t *stages)
{
	char *copy, *save = NULL, *tok;
	int err = 0;

	if (!has_name(arg))
		return -EINVAL;
	copy = strdup(arg);
	if (!copy)
		return -ENOMEM;
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		int s = optional_stage(tok);

		if (!strcmp(tok, "all")) {
			*stages |= ~HS_STAGES_CORE & (HS_STAGE_BIT(HS_NSTAGES) - 1);
			continue;
		}
		if (s < 0) {
			err = -EINVAL;
			break;
		}
		*stages |= HS_STAGE_BIT(s);
	}
	free(copy);
	return err;
}

/* a positive, finite number of seconds (exits 2 otherwise) */
static double seconds(struct argp_state *state, const char *opt, const char *arg)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(arg, &end);
	/* isfinite: strtod takes "nan", "inf" and 1e999 (ERANGE) too */
	if (end == arg || *end || errno || !isfinite(v) || v <= 0)
		argp_error(state, "%s must be a positive, finite number of seconds, not '%s'",
			   opt, arg);
	return v;
}

/* --sample other than 1: packets go untraced on purpose */
static bool sampled(const struct hs_config *cfg)
{
	return cfg->sample_n > 1 || cfg->cpu_budget > 0;
}

static error_t parse_opt(int key, char *arg, struct argp_state *state)
{
	struct opts *o = state->input;
	char *end;

	switch (key) {
	case 'n': o->cfg.netns = arg; break;
	case OPT_ROUTER_ID:
		/* one line, without the value: it may hold a newline */
		if (!hs_router_id_ok(arg))
			argp_failure(state, 2, 0, "--router-id takes 1 to %d printable ASCII "
				     "characters and no space or control character", HS_ROUTER_ID_MAX);
		o->cfg.router_id = arg;
		break;
	case 'i':
	case 'O':
		if (!has_name(arg))
			argp_error(state, "--%s takes interface names separated by commas, not '%s'",
				   key == 'i' ? "in" : "out", arg);
		if (key == 'i')
			o->in = arg;
		else
			o->out = arg;
		break;
	case 'o': o->output = arg; break;
	case 'q': o->quiet = 1; break;
	case 'v': o->cfg.verbose = 1; break;
	case 'd': o->duration = seconds(state, "--duration", arg); break;
	case OPT_COUNTERS_EVERY: o->counters_every = seconds(state, "--counters-every", arg); break;
	case OPT_SNAPSHOT: o->snapshot = arg; break;
	case 'c':
		/* strtoull takes "-1" (as 2^64-1), leading blanks and overflow (ERANGE) */
		errno = 0;
		o->count = strtoull(arg, &end, 10);
		if (arg[0] < '0' || arg[0] > '9' || *end || errno || !o->count)
			argp_error(state, "--count must be a positive integer, not '%s'", arg);
		break;
	case OPT_STAGES:
		if (parse_stages(arg, &o->cfg.stages))
			argp_error(state, "--stages takes t0,tcin,fwd,tceg or all, not '%s'", arg);
		break;
	case OPT_XDP:
		if (strcmp(arg, "auto") && strcmp(arg, "native") && strcmp(arg, "generic"))
			argp_error(state, "--xdp-mode must be auto, native or generic, not '%s'", arg);
		o->xdp_mode = arg;
		break;
	case OPT_GRO:
		if (strcmp(arg, "off") && strcmp(arg, "keep"))
			argp_error(state, "--gro must be off or keep, not '%s'", arg);
		o->cfg.gro_keep = !strcmp(arg, "keep");
		break;
	case OPT_SLOTS: {
		unsigned long n = strtoul(arg, &end, 10);

		if (*end || n < 64 || n > (1ul << 22) || (n & (n - 1)))
			argp_error(state, "--slots must be a power of 2 between 64 and 4194304");
		o->cfg.slots_per_cpu = n;
		break;
	}
	case OPT_REALTIME: {
		long prio = strtol(arg, &end, 10);

		if (*end || end == arg || prio < 0 || prio > 99)
			argp_error(state, "--realtime must be a priority from 1 to 99, or 0, not '%s'",
				   arg);
		o->realtime = prio;
		o->realtime_asked = true;
		break;
	}
	case OPT_DRAIN_THREADS: {
		long n = strcmp(arg, "auto") ? strtol(arg, &end, 10) : 0;

		if (strcmp(arg, "auto") && (*end || n < 1 || n > HS_MAX_LANES))
			argp_error(state, "--drain-threads must be auto or 1 to %d, not '%s'",
				   HS_MAX_LANES, arg);
		o->drain_threads = n;
		break;
	}
	case OPT_RING: {
		unsigned long mib = strtoul(arg, &end, 10);

		if (*end || !mib || mib > HS_RING_MAX_MIB || (mib & (mib - 1)))
			argp_error(state, "--ring must be a power of 2 MiB, at most %d",
				   HS_RING_MAX_MIB);
		o->cfg.ringbuf_bytes = (uint64_t)mib << 20;
		break;
	}
	case OPT_NODROPS: o->cfg.drops = false; break;
	case OPT_BACKEND: o->backend = arg; break;
	case OPT_FLOOR:
		if (arg && strcmp(arg, "clock"))
			argp_error(state, "--floor takes no value or =clock, not '%s'", arg);
		o->cfg.floor = arg ? HS_FLOOR_CLOCK : HS_FLOOR_EMPTY;
		break;
	case OPT_HIST:
		if (o->cfg.hist != HS_HIST_AGGREGATE)
			o->cfg.hist = HS_HIST_RECORDS;
		break;
	case OPT_AGGREGATE: o->cfg.hist = HS_HIST_AGGREGATE; break;
	case OPT_SAMPLE: {
		unsigned long n;

		o->sample = arg;
		if (!strcmp(arg, "auto"))
			break;
		errno = 0;
		n = strtoul(arg, &end, 10);
		if (arg[0] < '0' || arg[0] > '9' || *end || errno || !n || n > HS_SAMPLE_MAX)
			argp_error(state, "--sample takes auto or an integer from 1 to %u, not '%s'",
				   HS_SAMPLE_MAX, arg);
		o->cfg.sample_n = n;
		break;
	}
	case OPT_CPU_BUDGET:
		errno = 0;
		o->cfg.cpu_budget = strtod(arg, &end);
		if (end == arg || *end || errno || !isfinite(o->cfg.cpu_budget) ||
		    o->cfg.cpu_budget <= 0 || o->cfg.cpu_budget > 100)
			argp_error(state, "--cpu-budget is a percentage of one CPU, more than 0 and "
				   "at most 100, not '%s'", arg);
		break;
	case OPT_CALIBRATION: o->calibration = arg; break;
	case OPT_READY_FD: {
		long fd = strtol(arg, &end, 10);

		if (*end || end == arg || fd < 0 || fd > INT_MAX || fcntl(fd, F_GETFD) < 0)
			argp_error(state, "--ready-fd takes an open file descriptor, not '%s'", arg);
		/* not for the children (tc): only this process may close it */
		fcntl(fd, F_SETFD, FD_CLOEXEC);
		o->ready_fd = fd;
		break;
	}
	case ARGP_KEY_ARG:
		argp_error(state, "unexpected argument '%s'", arg);
		break;
	case ARGP_KEY_INIT:	/* the --flight options' parser (flight_opts.c) */
		o->flight.cfg = &o->cfg;
		state->child_inputs[0] = &o->flight;
		break;
	case ARGP_KEY_END:
		if (!o->in || !o->out || !o->output)
			argp_error(state, "--in, --out and --output are required");
		if (o->cfg.hist && o->cfg.floor)
			argp_error(state, "--floor records nothing: no --histograms or --aggregate");
		if (o->cfg.hist && !strcmp(o->backend, "kmod"))
			argp_error(state, "--histograms and --aggregate need the eBPF backend");
		if ((o->sample && !strcmp(o->sample, "auto")) != (o->cfg.cpu_budget > 0))
			argp_error(state, "--sample auto and --cpu-budget PCT go together");
		if (sampled(&o->cfg) && o->cfg.floor)
			argp_error(state, "--floor records nothing: no --sample");
		if (o->cfg.floor == HS_FLOOR_CLOCK && !strcmp(o->backend, "kmod"))
			argp_error(state, "--floor=clock needs the eBPF backend");
		if (sampled(&o->cfg) && !strcmp(o->backend, "kmod"))
			argp_error(state, "--sample needs the eBPF backend");
		/* t0 waits under the packet's key for an XDP that takes it: an
		 * unsampled packet would leave its t0 to be taken by its twin */
		if (sampled(&o->cfg) && (o->cfg.stages & HS_STAGE_BIT(HS_T0)))
			argp_error(state, "--sample does not go with --stages t0 (t0 is taken "
				   "before t1 decides whether a packet is traced)");
		if (o->cfg.hist == HS_HIST_AGGREGATE && o->count)
			argp_error(state, "--count counts records: --aggregate writes none "
				   "(use --duration)");
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

/* the text of a `hopscope calibrate` file, for the header; NULL: said why */
static char *read_calibration(const char *path)
{
	enum { MAX = 1 << 20 };
	char *text = malloc(MAX + 1), why[160];
	const char *fmt;
	size_t n, flen;
	FILE *f = fopen(path, "re");

	if (!f || !text) {
		fprintf(stderr, "hopscope: --calibration %s: %s\n", path, strerror(errno));
		goto fail;
	}
	n = fread(text, 1, MAX + 1, f);
	if (ferror(f) || n > MAX) {
		fprintf(stderr, "hopscope: --calibration %s: %s\n", path,
			ferror(f) ? "cannot read it" : "larger than 1 MiB: not a calibration");
		goto fail;
	}
	text[n] = 0;
	if (memchr(text, 0, n) || !js_utf8_valid(text) ||
	    js_check_object(text, "format", &fmt, &flen, why, sizeof(why))) {
		fprintf(stderr, "hopscope: --calibration %s: not valid JSON: %s\n", path,
			memchr(text, 0, n) || !js_utf8_valid(text) ? "not UTF-8 text" : why);
		goto fail;
	}
	if (!fmt || flen != strlen(HS_CALIBRATION_FORMAT) || memcmp(fmt, HS_CALIBRATION_FORMAT, flen)) {
		fprintf(stderr, "hopscope: --calibration %s: not written by hopscope calibrate "
			"(no \"format\": \"%s\")\n", path, HS_CALIBRATION_FORMAT);
		goto fail;
	}
	fclose(f);
	return text;
fail:
	if (f)
		fclose(f);
	free(text);
	return NULL;
}

static int privileged(void)
{
	char line[256];
	unsigned long long eff = 0;
	FILE *f = fopen("/proc/self/status", "re");

	if (!f)
		return geteuid() == 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "CapEff: %llx", &eff) == 1)
			break;
	fclose(f);
	/* CAP_SYS_ADMIN (setns, BPF), or CAP_BPF + CAP_PERFMON + CAP_NET_ADMIN */
	return (eff >> 21 & 1) || ((eff >> 39 & 1) && (eff >> 38 & 1) && (eff >> 12 & 1));
}

/*
 * --backend auto: eBPF where the kernel has the BPF netfilter link, the module
 * otherwise; says which. NULL (said why) when nothing can run.
 */
static struct hs_backend *pick_backend(const char *name)
{
	char why[160], why_kmod[160];
	struct hs_backend *b;

	if (!strcmp(name, "ebpf")) {
		b = hs_backend_ebpf();
	} else if (!strcmp(name, "kmod")) {
		b = hs_backend_kmod();
	} else if (hs_backend_ebpf_supported(why, sizeof(why))) {
		fprintf(stderr, "hopscope: this kernel has the BPF netfilter link: using the eBPF backend\n");
		b = hs_backend_ebpf();
	} else if (hs_backend_kmod_supported(why_kmod, sizeof(why_kmod))) {
		fprintf(stderr, "hopscope: %s: using the kernel module backend\n", why);
		b = hs_backend_kmod();
	} else {
		fprintf(stderr, "hopscope: no backend can run here: %s (eBPF), and %s (kernel module)\n",
			why, why_kmod);
		return NULL;
	}
	if (!b)
		fprintf(stderr, "hopscope: out of memory\n");
	return b;
}

struct run;

/* a drain thread: lane k of the writer, the rings of CPUs k, k + n, ... */
struct drain_thread {
	struct run *run;
	struct hs_lane *lane;
	int k;
	pthread_t thread;
	bool started;
	/* its own figures, read by counters_json (__atomic) */
	uint64_t max_gap_ns, cpu_wait_ns;
	/* its pace, its own (drain_begin) */
	double last, drained;	/* its last drain began, ended */
	int sleep_ms;
	uint64_t wait_at_start;	/* its thread's schedstat wait then */
};

struct run {
	struct hs_writer w;
	struct hs_backend *b;
	struct drain_thread drains[HS_MAX_LANES];	/* [1, nlanes): threads; 0 the loop's */
	int drains_quit;	/* __atomic: the threads end */
	int drains_err;		/* __atomic: a thread's error (-errno), it ended */
	uint64_t cpu_at_start;	/* this process's CPU time when the loop began */
	struct hs_flight *flight;	/* --flight, or NULL */
	uint64_t counters[HS_C_NCOUNTERS];
	struct hs_cost cost[HS_NSTAGES];	/* when the backend samples it */
	int err;
	int counters_err;	/* the last counter read failed: counters are stale */
	/* packets still in a slot when the probes stopped (records or not:
	 * --aggregate writes none); 0 until then */
	uint64_t inflight_at_stop;
	struct hs_snapshot snap;
	struct hs_sampling sampling;
	uint32_t said_n;	/* --sample auto: the N last said on stderr */
	const struct hs_clock_facts *clock;
	struct hs_config *cfg;
	/* the outputs' transmit counters while the probes were on (tx_json) */
	uint64_t tx_start[2], tx_end[2];
	int tx_err;
	bool tx_read;	/* both read (a flight dump's END comes before the stop) */
	uint64_t tx_unseen;
	bool nat_final;		/* the stop's read of the translations */
	int nat_err;		/* the last read of them failed */
};

/*
 * The backend's counters into run->counters. A failed read keeps the last
 * good values and says so (once while recording; at the stop always, and the
 * run then exits 1): the trailer's counters must never be zeros or a mix
 * passed off as the run's.
 */
static void read_counters(struct run *run, int final)
{
	int err = run->b->counters(run->b, run->counters);

	if (!err && run->b->cost)
		err = run->b->cost(run->b, run->cost);

	if (err && (final || !run->counters_err))
		fprintf(stderr, "%shopscope: %scannot read the tracer's counters: %s%s\n",
			final ? "\n" : "", final ? "ERROR: " : "", strerror(-err),
			final ? " (the file's trailer holds the last values read)" :
				" (will retry; the file keeps the last values read)");
	run->counters_err = err;
}

/* ctx: the drain thread (lane) the record came to */
static int on_record(void *ctx, const struct hs_record *r)
{
	struct drain_thread *d = ctx;
	uint8_t path = hs_path_of(d->run->cfg, r);
	struct hs_record named;

	if (path == r->path)	/* most records: no copy */
		return hs_lane_add(d->lane, r);
	named = *r;
	named.path = path;
	return hs_lane_add(d->lane, &named);
}

/*
 * What left the traced outputs that no probe saw: a fast path with no stage
 * on the CPU (XDP_REDIRECT from an untraced input, hardware offload where
 * the driver counts it). The outputs' transmit counters were read with the
 * probes on, after the start and before the stop; every start_xmit there is
 * counted at t4 (complete, partial, out_nometa, out_segs) and either sent
 * or dropped by the driver. A transmit in the instants between a counter
 * read and the probes' attach or detach is seen but not in the counters'
 * difference: `unseen` is a lower bound, exact when the outputs are quiet
 * then. The eBPF backend without --sample (a packet left out is not counted
 * at t4).
 */
static void tx_json(struct run *run, struct js *j)
{
	const uint64_t *c = run->counters;
	uint64_t sent, seen;

	if (run->tx_err || !run->tx_read || strcmp(run->b->name, "ebpf") || run->cfg->sample_n > 1)
		return;
	sent = (run->tx_end[0] - run->tx_start[0]) + (run->tx_end[1] - run->tx_start[1]);
	seen = c[HS_C_COMPLETE] + c[HS_C_PARTIAL] + c[HS_C_OUT_NOMETA] + c[HS_C_OUT_SEGS];
	js_open(j, "outputs_tx", '{');
	js_u64(j, "tx_packets", run->tx_end[0] - run->tx_start[0]);
	js_u64(j, "tx_dropped", run->tx_end[1] - run->tx_start[1]);
	js_u64(j, "seen_at_t4", seen);
	run->tx_unseen = sent > seen ? sent - seen : 0;
	js_u64(j, "unseen", run->tx_unseen);
	js_close(j, '}');
}

static int on_nat(void *ctx, const struct hs_tuple *from, const struct hs_nat *n)
{
	struct run *run = ctx;

	return hs_writer_nat(&run->w, from, n, run->nat_final, true);
}

/* the translations t3 filed, into the flow table before its next chunk;
 * final: with their packets at the stop */
static void read_nat(struct run *run, bool final)
{
	int err;

	if (!run->b->nat)
		return;
	run->nat_final = final;
	err = run->b->nat(run->b, on_nat, run);
	if (err && (final || !run->nat_err))
		fprintf(stderr, "\nhopscope: WARNING: cannot read the NAT translations: %s%s\n",
			strerror(-err), final ? "" : " (will retry)");
	run->nat_err = err;
}

/* this process's CPU time, user and system */
static uint64_t cpu_ns(void)
{
	struct rusage ru;

	if (getrusage(RUSAGE_SELF, &ru))
		return 0;
	return (uint64_t)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000000ull +
	       (uint64_t)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1000ull;
}

/* this thread's time waiting for a CPU while runnable (schedstat's second
 * field; 0 where the kernel does not keep it) */
static uint64_t runq_wait_ns(void)
{
	unsigned long long run_ns, wait_ns = 0;
	FILE *f = fopen("/proc/thread-self/schedstat", "re");

	if (f && fscanf(f, "%llu %llu", &run_ns, &wait_ns) != 2)
		wait_ns = 0;
	if (f)
		fclose(f);
	return wait_ns;
}

/* the most of the drains' figure at offset off in struct drain_thread */
static uint64_t drains_max(struct run *run, size_t off)
{
	uint64_t most = 0;

	for (int k = 0; k < run->w.nlanes; k++) {
		uint64_t v = __atomic_load_n((uint64_t *)((char *)&run->drains[k] + off),
					     __ATOMIC_RELAXED);

		most = v > most ? v : most;
	}
	return most;
}

/* w: the file the chunk is for, the run's or a flight dump's; its lanes held
 * (hs_writer_hold) or stopped, so that the counts are those of its records */
static char *counters_json(struct run *run, struct hs_writer *w, const char *stop_reason)
{
	struct js j;
	char *out;
	struct hs_tally t;
	uint64_t records, not_stored;

	hs_writer_tally(w, &t, &records, &not_stored);
	struct hs_userspace_counts u = {
		.by_status = t.by_status,
		.complete_by_path = t.complete_by_path,
		.records = records,
		.flows = w->flows.n,
		.flow_overflow = w->flows.overflow,
		.nat_flows = w->flows.nat_flows,
		.nat_changed = w->flows.nat_changed,
		.t4_unseen = t.t4_unseen,
		.not_stored = not_stored,
		.inflight_at_stop = run->inflight_at_stop,
		/* from the loop's start: not the probes' loading and attaching */
		.cpu_ns = cpu_ns() - run->cpu_at_start,
		.drain_threads = run->w.nlanes,
		.drain_cpu_wait_ns = drains_max(run, offsetof(struct drain_thread, cpu_wait_ns)),
		.drain_max_gap_ns = drains_max(run, offsetof(struct drain_thread, max_gap_ns)),
		.ring_records = run->b->drain.ring_records,
		.ring_peak_waiting = run->b->drain.peak_waiting,
		/* the writing thread's */
		.write_ns = __atomic_load_n(&w->write_ns, __ATOMIC_RELAXED),
		.write_max_ns = __atomic_load_n(&w->write_max_ns, __ATOMIC_RELAXED),
	};

	js_init(&j);
	hs_runmeta_counters(&j, run->counters, run->b->cost ? run->cost : NULL, &u);
	if (run->cfg->hist) {
		int err = run->b->hist(run->b, &j);

		/* this chunk goes without them; at the stop the run exits 1 */
		if (err) {
			fprintf(stderr, "\nhopscope: cannot read the histograms: %s\n", strerror(-err));
			run->counters_err = err;
		}
	}
	if (!strcmp(run->b->name, "ebpf")) {
		hs_ifaces_xdp_json(&j, run->cfg);
		hs_sampling_json(&j, &run->sampling, run->counters);
	}
	hs_ifwatch_json(&j, run->cfg);
	if (run->flight)
		hs_flight_json(run->flight, &j);
	if (stop_reason) {
		tx_json(run, &j);
		js_str(&j, "stop_reason", stop_reason);
	}
	js_close(&j, '}');
	out = js_text(&j) ? strdup(js_text(&j)) : NULL;
	js_free(&j);
	return out;
}

/* --snapshot: the first failure said at once, the count at the end */
static void snapshot(struct run *run, const char *counters_json, int final)
{
	if (!run->snap.path || !counters_json)
		return;
	if (hs_snapshot_write(&run->snap, counters_json, final) && run->snap.failed == 1)
		fprintf(stderr, "\nhopscope: WARNING: cannot write the snapshot %s: %s (will "
			"retry every second; its readers see the last one written)\n",
			run->snap.path, strerror(-run->snap.last_err));
}

/* a flight dump's END: the run's counters now, the dump's records */
static char *flight_end_json(void *ctx, struct hs_writer *w)
{
	struct run *run = ctx;

	read_counters(run, 0);
	return counters_json(run, w, "flight_dump");
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* lanes held */
static void live_line(struct run *run, double elapsed)
{
	const uint64_t *c = run->counters;
	struct hs_tally t;
	uint64_t records, not_stored;

	hs_writer_tally(&run->w, &t, &records, &not_stored);
	fprintf(stderr, "\r%7.1fs  records %llu  complete %llu  dropped %llu  evicted %llu  "
		"ring-lost %llu   ", elapsed, (unsigned long long)records,
		(unsigned long long)t.by_status[HS_ST_COMPLETE],
		(unsigned long long)t.by_status[HS_ST_DROPPED],
		(unsigned long long)c[HS_C_EVICTED], (unsigned long long)c[HS_C_RB_FAIL]);
}

/* what the file cannot say of NAT: translations changed, or not filed */
static void nat_warn(struct run *run)
{
	if (run->w.flows.nat_changed)
		fprintf(stderr, "hopscope: WARNING: NAT changed the translation of %u flows "
			"during the run: their records carry no translated tuple (hopscope "
			"describe lists them)\n", run->w.flows.nat_changed);
	if (run->counters[HS_C_NAT_FULL])
		fprintf(stderr, "hopscope: WARNING: %llu packets NAT changed found the "
			"translation map full (%d flows): their translation is not in the file\n",
			(unsigned long long)run->counters[HS_C_NAT_FULL], HS_NAT_MAX);
}

static void summary(struct run *run, const struct hs_tally *t, const char *path,
		    const char *reason, double secs)
{
	const uint64_t *by = t->by_status;

	fprintf(stderr, "\nhopscope: %s: %llu records in %.1f s (stopped: %s)\n", path,
		(unsigned long long)run->w.written, secs, reason);
	fprintf(stderr, "  records   ");
	for (int s = HS_ST_NONE + 1; s < HS_ST_END; s++)
		fprintf(stderr, " %s %llu", hs_status_names[s], (unsigned long long)by[s]);
	/* the module leaves GRO on: a record may stand for several wire packets */
	if (t->complete_wire != t->complete)
		fprintf(stderr, "\n  merged     wire_packets %llu in the complete records (GRO: their segs)",
			(unsigned long long)t->complete_wire);
	fprintf(stderr, "\n  flows      %u (overflow %llu)", run->w.flows.n,
		(unsigned long long)run->w.flows.overflow);
	if (run->w.flows.nat_flows)
		fprintf(stderr, "\n  nat        %u flows translated, %llu packets",
			run->w.flows.nat_flows, (unsigned long long)run->counters[HS_C_NAT]);
	fprintf(stderr, "\n  counters  ");
	for (int c = 0; c < HS_C_NCOUNTERS; c++)
		fprintf(stderr, " %s %llu%s", hs_counter_names[c],
			(unsigned long long)run->counters[c], c % 6 == 5 ? "\n           " : "");
	fprintf(stderr, "\n");
	/* a race is an eviction that won against the packet's t4 or drop: its
	 * one record is among the evicted */
	if (run->counters[HS_C_RB_FAIL] || run->counters[HS_C_EVICTED])
		fprintf(stderr, "hopscope: WARNING: the tracer lost packets: ring buffer %llu "
			"(see --ring), evicted %llu (slot reused before t4: a queue longer than "
			"--slots, or a t4 unseen; %llu of them while leaving)\n",
			(unsigned long long)run->counters[HS_C_RB_FAIL],
			(unsigned long long)run->counters[HS_C_EVICTED],
			(unsigned long long)run->counters[HS_C_RACE]);
	nat_warn(run);
	if (run->counters[HS_C_IN_NOMETA])
		fprintf(stderr, "hopscope: WARNING: %llu packets that came in by a traced input were "
			"forwarded without their record (counter in_nometa): a way in hopscope does "
			"not follow, such as IPsec or a tunnel it does not know (docs/recording.md)\n",
			(unsigned long long)run->counters[HS_C_IN_NOMETA]);
	if (sampled(run->cfg))
		fprintf(stderr, "hopscope: sampled: 1 packet in %u (%s), %llu of the %llu at t1 "
			"traced; every count here is of the traced ones\n", run->sampling.n,
			run->sampling.budget > 0 ? "auto, the last second's" : "fixed",
			(unsigned long long)(run->counters[HS_C_XDP_PKTS] -
					     run->counters[HS_C_UNSAMPLED]),
			(unsigned long long)run->counters[HS_C_XDP_PKTS]);
	if (run->cfg->hist == HS_HIST_AGGREGATE)
		fprintf(stderr, "hopscope: --aggregate: no records; %llu complete packets, their "
			"delays in the END chunk's histograms (hopscope describe %s)\n",
			(unsigned long long)run->counters[HS_C_COMPLETE], path);
	if (run->snap.failed)
		fprintf(stderr, "hopscope: WARNING: %llu of %llu snapshots of %s not written "
			"(last: %s)\n", (unsigned long long)run->snap.failed,
			(unsigned long long)(run->snap.failed + run->snap.written), run->snap.path,
			run->snap.last_err ? strerror(-run->snap.last_err) : "the last one was");
	hs_clock_warn(run->clock);	/* again: the start's scrolled away */
}

/* --sample auto: N for the next second, from this one's rate and cost; said
 * when it has doubled or halved since last said (the file has every second's) */
static void resample(struct run *run, double t, int quiet)
{
	uint32_t n = hs_sampling_step(&run->sampling, t, run->counters, run->cost);

	if (!n)
		return;
	run->b->sample(run->b, n);
	if (quiet || (n < 2 * run->said_n && 2 * n > run->said_n))
		return;
	run->said_n = n;
	fprintf(stderr, "\nhopscope: --sample auto: now 1 packet in %u (budget %g %% of a CPU)\n",
		n, run->sampling.budget);
}

/*
 * How long a drain sleeps after each drain: a quarter of the time a ring
 * takes to fill at the rate the last drain saw (as if all of it came on one
 * CPU), at least 1 ms. Idle, it doubles up to a quarter of the time a ring
 * fills at HS_CPU_RECORDS_MAX, so that traffic starting during a sleep
 * finds room: with 8192-record rings a fixed 20 ms let one start fill a
 * ring at 312 k records/s. It sleeps after a drain that found records too,
 * so that a drain at SCHED_FIFO (--realtime) never holds its CPU while
 * records keep coming: it takes its records in batches.
 */
#define HS_DRAIN_SLEEP_MAX_MS 20
/* records a second one CPU hands over at most, above any router measured
 * (1.1 M packets a second a CPU) */
#define HS_CPU_RECORDS_MAX 2e6

static int drain_sleep_ms(int sleep_ms, uint64_t ring_records, int n, double seconds)
{
	double most = ring_records / 4.0 / HS_CPU_RECORDS_MAX * 1e3, ms;

	most = most > HS_DRAIN_SLEEP_MAX_MS ? HS_DRAIN_SLEEP_MAX_MS : most < 1 ? 1 : most;
	if (n <= 0 || !ring_records || seconds <= 0)
		ms = sleep_ms * 2;
	else
		ms = ring_records / 4.0 / (n / seconds) * 1e3;
	return ms >= most ? (int)most : ms < 1 ? 1 : (int)ms;
}

/* in the drain's own thread, before its first drain */
static void drain_begin(struct drain_thread *d)
{
	d->last = d->drained = now_s();
	d->sleep_ms = HS_DRAIN_SLEEP_MAX_MS;
	d->wait_at_start = runq_wait_ns();
}

/* a drain begins: the time since the last one began, kept if the longest */
static void drain_gap(struct drain_thread *d)
{
	double now = now_s();

	if (now > d->last && (now - d->last) * 1e9 > d->max_gap_ns)
		__atomic_store_n(&d->max_gap_ns, (uint64_t)((now - d->last) * 1e9),
				 __ATOMIC_RELAXED);
	d->last = now;
}

/* a drain handed over n records (since the last one ended): sleep as
 * drain_sleep_ms says, unless it stopped at the backend's bound with
 * records waiting (more); a signal ends the sleep early. Returns when the
 * drain ended. */
static double drain_pause(struct drain_thread *d, int n, bool more)
{
	double t = now_s();

	d->sleep_ms = drain_sleep_ms(d->sleep_ms, d->run->b->drain.ring_records, n,
				     t - d->drained);
	d->drained = t;
	if (!more)
		nanosleep(&(struct timespec){ 0, d->sleep_ms * 1000000L }, NULL);
	return t;
}

static void drain_waited(struct drain_thread *d)
{
	__atomic_store_n(&d->cpu_wait_ns, runq_wait_ns() - d->wait_at_start, __ATOMIC_RELAXED);
}

/* drain threads 1 to nlanes - 1: drain, then sleep (drain_sleep_ms) */
static void *drain_main(void *arg)
{
	struct drain_thread *d = arg;
	struct run *run = d->run;
	double waited;

	drain_begin(d);
	waited = d->last;
	while (!__atomic_load_n(&run->drains_quit, __ATOMIC_RELAXED)) {
		double t;
		int n;

		drain_gap(d);
		hs_lane_lock(d->lane);
		n = run->b->drain_lane(run->b, d->k, on_record, d);
		hs_lane_unlock(d->lane);
		if (n < 0) {
			__atomic_store_n(&run->drains_err, n, __ATOMIC_RELAXED);
			break;
		}
		t = drain_pause(d, n, false);
		if (t - waited >= 1.0) {
			drain_waited(d);
			waited = t;
		}
	}
	drain_waited(d);
	return NULL;
}

static int start_drains(struct run *run)
{
	for (int k = 0; k < run->w.nlanes; k++)
		run->drains[k] = (struct drain_thread){ .run = run, .lane = &run->w.lane[k], .k = k };
	for (int k = 1; k < run->w.nlanes; k++) {
		int err = pthread_create(&run->drains[k].thread, NULL, drain_main, &run->drains[k]);

		if (err) {
			fprintf(stderr, "hopscope: cannot start drain thread %d: %s\n", k,
				strerror(err));
			return -err;
		}
		run->drains[k].started = true;
	}
	return 0;
}

/* the threads end after their drain; what is left in their rings the
 * backend's stop hands to lane 0, which then knows their flows */
static void stop_drains(struct run *run)
{
	__atomic_store_n(&run->drains_quit, 1, __ATOMIC_RELAXED);
	for (int k = 1; k < run->w.nlanes; k++)
		if (run->drains[k].started)
			pthread_join(run->drains[k].thread, NULL);
	hs_writer_merge_lanes(&run->w);
}

/* once a second: the counters, the snapshot, the COUNTERS chunk (the
 * drains held, so that its counts are those of the records before it) */
static void tick(struct run *run, struct opts *o, double t, double *last_flush)
{
	bool flush = t - *last_flush >= o->counters_every;
	char *js;

	hs_ifwatch(run->cfg, run->b);
	read_counters(run, 0);
	if (!run->counters_err)
		resample(run, t, o->quiet);
	/* the map's translations into the flow table (its own lock), before
	 * the drains are held: only what must agree with the records waits */
	if (flush)
		read_nat(run, false);
	hs_writer_hold(&run->w);
	js = counters_json(run, &run->w, NULL);
	snapshot(run, js, 0);
	/* while the disk is behind, the COUNTERS chunk waits for the next tick:
	 * the drains are held meanwhile, and must not wait for the disk too */
	if (flush && !hs_writer_backed_up(&run->w)) {
		run->err = hs_writer_flush(&run->w, js);
		*last_flush = t;
	}
	hs_writer_release(&run->w);
	free(js);
}

static int record_loop(struct run *run, struct opts *o)
{
	double start = now_s(), last_flush = start, last_read = start, last_live = start;
	const char *reason = "signal";
	int live = !o->quiet && isatty(2);
	struct drain_thread *d0 = &run->drains[0];
	struct hs_tally tally;
	uint64_t records, not_stored;
	char *js;

	run->cpu_at_start = cpu_ns();
	run->err = start_drains(run);
	drain_begin(d0);

	while (!stop_signal && !run->err) {
		double t;
		int n;

		drain_gap(d0);
		/* lane 0 is this thread's alone: no lock */
		n = run->b->poll(run->b, on_record, d0);
		n = n < 0 ? n : __atomic_load_n(&run->drains_err, __ATOMIC_RELAXED) ?: n;

		if (n < 0) {
			/* a write error comes back through the callback (the writer
			 * counts what it cannot store from then on); ECANCELED: the
			 * backend stopped the run and said why */
			if (n != -ECANCELED)
				fprintf(stderr, "hopscope: %s: %s\n", run->w.err ?
					"writing the record file" : "reading records", strerror(-n));
			run->err = n;
			reason = "error";
			break;
		}
		t = drain_pause(d0, n, run->b->drain.more);
		if (t - last_read >= 1.0) {
			drain_waited(d0);
			tick(run, o, t, &last_flush);
			last_read = t;
		}
		if (live && t - last_live >= 0.5) {
			hs_writer_hold(&run->w);
			live_line(run, t - start);
			hs_writer_release(&run->w);
			last_live = t;
		}
		if (o->duration && t - start >= o->duration) {
			reason = "duration";
			break;
		}
		if (o->count && hs_writer_complete(&run->w) >= o->count) {
			reason = "count";
			break;
		}
		if (run->flight)
			hs_flight_tick(run->flight, 0);
	}
	if (run->err)
		reason = "error";
	drain_waited(d0);
	stop_drains(run);
	/* a trigger still waiting for --flight-after: dumped while the probes run */
	if (run->flight)
		hs_flight_tick(run->flight, 1);
	run->tx_err = run->tx_err ?: hs_ifaces_tx(run->cfg, run->tx_end);
	run->tx_read = true;
	int inflight = run->b->stop(run->b, on_record, d0);

	run->inflight_at_stop = inflight > 0 ? (uint64_t)inflight : 0;

	read_counters(run, 1);
	read_nat(run, true);
	if (run->flight)	/* its counts as the stop left them, for END */
		hs_flight_tick(run->flight, 1);
	/* every record in the file or counted not stored before END counts them
	 * (the writing thread says a failure of its own here, if not before) */
	if (hs_writer_sync(&run->w) && !run->err) {
		run->err = run->w.err;
		reason = "error";
	}
	js = counters_json(run, &run->w, reason);
	snapshot(run, js, 1);
	/* after a write error too: the writer cut the file back to whole chunks,
	 * and the END chunk says how many records it could not store */
	if (js) {
		int err = hs_writer_close(&run->w, js);

		run->err = run->err ?: err;
	}
	free(js);
	hs_writer_tally(&run->w, &tally, &records, &not_stored);
	summary(run, &tally, o->output, reason, now_s() - start);
	if (run->flight && hs_flight_summary(run->flight))
		run->err = run->err ?: -EIO;
	if (run->tx_unseen)
		fprintf(stderr, "hopscope: %llu packets left the traced outputs without passing t4: "
			"a way out no probe is on, or a t4 the kernel skipped (those are "
			"recorded, inflight; outputs_tx in the END chunk; docs/recording.md, "
			"Forwarding paths)\n", (unsigned long long)run->tx_unseen);
	if (run->inflight_at_stop > tally.t4_unseen)
		fprintf(stderr, "hopscope: %llu packets were still inside the router at stop "
			"(status inflight)\n",
			(unsigned long long)(run->inflight_at_stop - tally.t4_unseen));
	/* the known causes differ: a kernel that skips BPF tracepoint programs
	 * in some contexts; the module's probes are not BPF, but a way out it
	 * cannot follow is (docs/troubleshooting.md) */
	if (tally.t4_unseen)
		fprintf(stderr, "hopscope: WARNING: %llu packets (status inflight) were overtaken "
			"by later packets of their flow that left: their t4 went unseen. %s\n",
			(unsigned long long)tally.t4_unseen, strcmp(run->b->name, "kmod") ?
			"A kernel that skips BPF tracepoint programs in some contexts causes "
			"this; the packets keep their other stages (docs/troubleshooting.md)" :
			"They left by a way the module did not follow (a merged packet whose "
			"segments left from another CPU or out of order: docs/troubleshooting.md)");
	return run->err || run->counters_err ? 1 : 0;
}

/* --ready-fd: the machine-readable "recording" (a reader that is gone is not an error) */
/* the drain threads: --drain-threads, else one per HS_CPUS_PER_DRAIN CPUs,
 * at most one per CPU; one where no records come (--aggregate); -1: the
 * backend has one (said why) */
static int drain_lanes(const struct opts *o, const struct hs_backend *b)
{
	long ncpu = sysconf(_SC_NPROCESSORS_CONF);
	int n = o->drain_threads ? o->drain_threads :
		(int)((ncpu + HS_CPUS_PER_DRAIN - 1) / HS_CPUS_PER_DRAIN);

	if (!b->drain_lane && o->drain_threads > 1) {
		fprintf(stderr, "hopscope: --drain-threads needs the eBPF backend, not %s\n",
			b->name);
		return -1;
	}
	if (!b->drain_lane || o->cfg.hist == HS_HIST_AGGREGATE || n < 1)
		return 1;
	return n > ncpu ? (int)ncpu : n;
}

static void tell_ready(int fd)
{
	static const char line[] = "ready\n";
	struct sigaction ign = { .sa_handler = SIG_IGN }, old;
	ssize_t n;

	sigaction(SIGPIPE, &ign, &old);	/* EPIPE rather than death */
	do
		n = write(fd, line, sizeof(line) - 1);
	while (n < 0 && errno == EINTR);
	if (n < 0 && errno != EPIPE)
		fprintf(stderr, "hopscope: --ready-fd %d: %s\n", fd, strerror(errno));
	close(fd);
	sigaction(SIGPIPE, &old, NULL);
}

/* --ring's default: HS_RING_CPU_RECORDS records a CPU, so a router with more
 * CPUs gets rings as long in time, not a fixed total shared thinner */
static uint64_t ring_default_bytes(void)
{
	int ncpu = libbpf_num_possible_cpus();
	uint64_t b = (uint64_t)(ncpu > 0 ? ncpu : 1) * HS_RING_CPU_RECORDS * sizeof(struct hs_record);

	if (b < (uint64_t)HS_RING_MIN_MIB << 20)
		return (uint64_t)HS_RING_MIN_MIB << 20;
	return b > (uint64_t)HS_RING_MAX_MIB << 20 ? (uint64_t)HS_RING_MAX_MIB << 20 : b;
}

int hs_cmd_record(int argc, char **argv)
{
	struct argp_child children[] = { { &hs_flight_argp }, {} };
	struct argp argp = { options, parse_opt, NULL, doc, children };
	struct opts o = {
		.cfg = {
			.stages = HS_STAGES_CORE,
			.slots_per_cpu = HS_SLOTS_DEFAULT,
			.ringbuf_bytes = 0,	/* ring_default_bytes() */
			.drops = true,
			.sample_n = 1,
		},
		.backend = "auto",
		.realtime = 1,
		.xdp_mode = "auto",
		.flight = { .max_dumps = 100 },
		.ready_fd = -1,
		.counters_every = 1.0,
	};
	struct hs_clocks start;
	struct hs_clock_facts clock;
	struct run run = { .clock = &clock, .cfg = &o.cfg };
	struct js header;
	int err, lock = -1;

	argp_err_exit_status = 2;
	if (argp_parse(&argp, argc, argv, 0, NULL, &o))
		return 2;
	if (!o.cfg.ringbuf_bytes)
		o.cfg.ringbuf_bytes = ring_default_bytes();
	if (strcmp(o.backend, "ebpf") && strcmp(o.backend, "kmod") && strcmp(o.backend, "auto")) {
		fprintf(stderr, "hopscope: --backend must be ebpf, kmod or auto\n");
		return 2;
	}
	if (o.calibration && !(o.cfg.calibration = read_calibration(o.calibration)))
		return 2;
	if (!privileged()) {
		fprintf(stderr, "hopscope: record needs root (CAP_SYS_ADMIN, or CAP_BPF + "
			"CAP_PERFMON + CAP_NET_ADMIN)\n");
		return 1;
	}
	/* before the drain and writing threads start: they inherit the policy */
	if (o.realtime &&
	    sched_setscheduler(0, SCHED_FIFO, &(struct sched_param){ .sched_priority = o.realtime })) {
		fprintf(stderr, "hopscope: %s--realtime %d: cannot run at SCHED_FIFO: %s%s\n",
			o.realtime_asked ? "" : "WARNING: ", o.realtime, strerror(errno),
			o.realtime_asked ? "" : " (the drain runs at the normal scheduler: other "
			"work on its CPU can hold it up)");
		if (o.realtime_asked)
			return 1;
	}
	/* here, before the netns's own /sys replaces this one */
	hs_clock_facts_read(&clock);
	if (hs_netns_enter(o.cfg.netns, &o.cfg.netns_inum) ||
	    hs_ifaces_add(&o.cfg, o.in, 0) || hs_ifaces_add(&o.cfg, o.out, 1) ||
	    hs_ifaces_set_xdp_mode(&o.cfg, o.xdp_mode) || hs_ifaces_set_gro(&o.cfg))
		return 1;
	err = hs_ifstack_check(&o.cfg);
	if (err)
		return err == -EINVAL ? 2 : 1;
	run.b = pick_backend(o.backend);
	if (!run.b)
		return 1;
	/* before any probe; held until the probes are gone (an early return
	 * ends the process, and the lock with it). The eBPF probes read any
	 * hopscope's XDP metadata; the module shares nothing with them, and
	 * refuses a second session itself */
	if (!strcmp(run.b->name, "ebpf")) {
		lock = hs_router_lock(HS_LOCK_DIR, o.cfg.netns_inum, o.cfg.netns, o.in, o.out);
		if (lock < 0) {
			run.b->close(run.b);
			return 1;
		}
	}
	if (sampled(&o.cfg) && !run.b->sample) {
		fprintf(stderr, "hopscope: --sample needs the eBPF backend, not %s\n", run.b->name);
		run.b->close(run.b);
		return 2;
	}
	run.b->nlanes = drain_lanes(&o, run.b);
	if (run.b->nlanes < 0) {
		run.b->close(run.b);
		return 2;
	}
	hs_sampling_init(&run.sampling, &o.cfg);
	run.said_n = o.cfg.sample_n;
	/* the module follows no packet through a tunnel: it would lose them */
	if ((o.cfg.n_tun || o.cfg.n_tun_ep) && strcmp(run.b->name, "ebpf")) {
		fprintf(stderr, "hopscope: the namespace has tunnels, and only the eBPF backend "
			"follows packets through them (the %s backend would lose those routed "
			"into one or arriving by one); use --backend ebpf\n", run.b->name);
		run.b->close(run.b);
		return 2;
	}
	if (o.cfg.hist && !run.b->hist) {
		fprintf(stderr, "hopscope: --histograms and --aggregate need the eBPF backend, "
			"not %s\n", run.b->name);
		run.b->close(run.b);
		return 2;
	}
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	signal(SIGHUP, on_signal);
	err = run.b->open(run.b, &o.cfg);
	if (err) {
		run.b->close(run.b);
		return 1;
	}
	run.snap.path = o.snapshot;
	hs_ifwatch_init(&o.cfg);
	hs_clocks_now(&start);
	js_init(&header);
	hs_runmeta_header(&header, &o.cfg, run.b, &start, &clock, argc, argv);
	if (o.cfg.flight_n && js_text(&header)) {
		struct js with;

		js_init(&with);
		js_reopen(&with, js_text(&header));
		hs_flight_config_json(&with, &o.flight);
		js_close(&with, '}');
		js_free(&header);
		header = with;
		run.flight = js_text(&header) ?
			hs_flight_new(&o.flight, &o.cfg, run.b, js_text(&header), o.output,
				      start.mono_to_real_ns, flight_end_json, &run) : NULL;
	}
	if (!js_text(&header) || (o.cfg.flight_n && !run.flight) ||
	    hs_writer_open(&run.w, o.output, js_text(&header), run.b->nlanes) ||
	    (o.snapshot && !(run.snap.header = strdup(js_text(&header))))) {
		js_free(&header);
		hs_flight_free(run.flight);
		hs_writer_free(&run.w);
		run.b->close(run.b);
		return 1;
	}
	js_free(&header);
	if (!o.quiet)
		fprintf(stderr, "hopscope: recording %s (backend %s) to %s; Ctrl-C to stop\n",
			o.cfg.netns ? o.cfg.netns : "this namespace", run.b->name, o.output);
	hs_clock_warn(&clock);
	run.tx_err = hs_ifaces_tx(&o.cfg, run.tx_start);
	if (o.ready_fd >= 0)
		tell_ready(o.ready_fd);
	err = record_loop(&run, &o);
	free(run.snap.header);
	hs_flight_free(run.flight);
	hs_writer_free(&run.w);
	run.b->close(run.b);
	if (lock >= 0)
		close(lock);
	hs_clock_facts_free(&clock);
	free(o.cfg.calibration);
	return err;
}
