/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * hopscope: `record` is native (it loads the probes); `layout` prints the
 * shared record layout for the Python tests; every other command (export,
 * report, campaign, ...) belongs to the Python package and is handed to it.
 */
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "hopscope_file.h"
#include "record.h"
#include "runmeta.h"

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: hopscope COMMAND [OPTIONS]\n"
		"\n"
		"  record     attach the probes and write a record file (.hsr)\n"
		"  export     record file -> Parquet or CSV\n"
		"  describe   summary of a record file\n"
		"  verify     check a record file's chunks and checksums\n"
		"  report     PDF report of one or more runs\n"
		"  campaign   run a scenario file's conditions and repetitions\n"
		"  layout     print the record layout (for tests)\n"
		"  version    print the version\n"
		"\n"
		"`hopscope COMMAND --help` tells more.\n"
		"EXAMPLE:\n"
		"  hopscope record --netns router --in r-s1,r-s2 --out r-rx -d 10 -o run.hsr\n");
}

#define FIELD(s, f) printf("%s.%s %zu %zu\n", #s, #f, offsetof(struct s, f), sizeof(((struct s *)0)->f))

static int layout(void)
{
	printf("hs_record %zu\n", sizeof(struct hs_record));
	FIELD(hs_record, t); FIELD(hs_record, seq); FIELD(hs_record, key);
	FIELD(hs_record, drop_reason); FIELD(hs_record, in_ifindex); FIELD(hs_record, out_ifindex);
	FIELD(hs_record, flow); FIELD(hs_record, ip_len); FIELD(hs_record, sport);
	FIELD(hs_record, dport); FIELD(hs_record, cpu_in); FIELD(hs_record, cpu_out);
	FIELD(hs_record, tos); FIELD(hs_record, proto); FIELD(hs_record, status);
	FIELD(hs_record, drop_stage); FIELD(hs_record, flags); FIELD(hs_record, done);
	FIELD(hs_record, saddr); FIELD(hs_record, daddr);
	printf("hs_flow %zu\n", sizeof(struct hs_flow));
	printf("hs_chunk %zu\n", sizeof(struct hs_chunk));
	printf("hs_file_header %zu\n", sizeof(struct hs_file_header));
	for (int c = 0; c < HS_C_NCOUNTERS; c++)
		printf("counter %d %s\n", c, hs_counter_names[c]);
	for (int s = 0; s < HS_NSTAGES; s++)
		printf("stage %d %s\n", s, hs_stage_names[s]);
	return 0;
}

/*
 * The Python half from this binary's own tree (build/../userspace/python)
 * when there is one: an installed or editable package elsewhere may be
 * another checkout's, older or newer than this binary.
 */
static void use_own_package(void)
{
	char exe[PATH_MAX], dir[PATH_MAX + 64], init[PATH_MAX + 96];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	const char *old = getenv("PYTHONPATH");

	if (n <= 0)
		return;
	exe[n] = 0;
	snprintf(dir, sizeof(dir), "%s/../userspace/python", dirname(exe));
	snprintf(init, sizeof(init), "%s/hopscope/__init__.py", dir);
	if (access(init, R_OK))
		return;
	if (old && *old) {
		size_t len = strlen(dir) + strlen(old) + 2;
		char *both = malloc(len);

		if (!both)
			return;
		snprintf(both, len, "%s:%s", dir, old);
		setenv("PYTHONPATH", both, 1);
		free(both);
	} else {
		setenv("PYTHONPATH", dir, 1);
	}
}

int main(int argc, char **argv)
{
	const char *cmd = argc > 1 ? argv[1] : NULL;

	if (!cmd || !strcmp(cmd, "-h") || !strcmp(cmd, "--help") || !strcmp(cmd, "help")) {
		usage(cmd ? stdout : stderr);
		return cmd ? 0 : 2;
	}
	if (!strcmp(cmd, "record"))
		return hs_cmd_record(argc - 1, argv + 1);
	if (!strcmp(cmd, "layout"))
		return layout();
	if (!strcmp(cmd, "version") || !strcmp(cmd, "--version")) {
		printf("hopscope %s (record format %d)\n", HS_TRACER_VERSION, HS_FILE_VERSION);
		return 0;
	}
	/* the analysis commands live in the Python package. Keep freed memory in
	 * the process: on VMs whose host reclaims freed pages, touching fresh
	 * memory again cost 0.5-3 s per GB and doubled the time of the statistics
	 * on 10 M records (bench/analysis_stats.py); a user's own setting wins */
	setenv("GLIBC_TUNABLES", "glibc.malloc.mmap_max=0:glibc.malloc.trim_threshold=1099511627776", 0);
	use_own_package();
	const char *py = getenv("PYTHON") ? getenv("PYTHON") : "python3";
	char **args = calloc(argc + 3, sizeof(*args));

	if (!args)
		return 1;
	args[0] = (char *)py;
	args[1] = "-m";
	args[2] = "hopscope";
	for (int i = 1; i < argc; i++)
		args[i + 2] = argv[i];
	execvp(py, args);
	fprintf(stderr, "hopscope: cannot run %s for '%s': %s\n", py, cmd, strerror(errno));
	return 1;
}
