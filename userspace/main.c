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
#include "pycmd.h"
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
		printf("hopscope %s (record format %d)\n", HS_VERSION, HS_FILE_VERSION);
		return 0;
	}
	return hs_exec_python(argc, argv);
}
