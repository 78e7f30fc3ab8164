/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * hopscope: `record` is native (it loads the probes); `layout` prints the
 * shared record layout for the Python tests; every other command (export,
 * report, campaign, ...) belongs to the Python package and is handed to it.
 * --help lists both halves: the native commands from the table below, the
 * Python ones as `python -m hopscope --commands` lists them, so neither list
 * is typed twice.
 */
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "hopscope_file.h"
#include "pycmd.h"
#include "record.h"
#include "runmeta.h"

static int layout(void);
static int version(void);

static int cmd_record(int argc, char **argv) { return hs_cmd_record(argc - 1, argv + 1); }
static int cmd_layout(int argc, char **argv) { return layout(); }
static int cmd_version(int argc, char **argv) { return version(); }

static const struct native {
	const char *name;
	int (*run)(int argc, char **argv);
	const char *summary;
} natives[] = {
	{ "record", cmd_record, "attach the probes and write a record file (.hsr)" },
	{ "layout", cmd_layout, "print the record layout (for the tests)" },
	{ "version", cmd_version, "print the version" },
};
#define NNATIVES (sizeof(natives) / sizeof(natives[0]))

static const struct native *native(const char *name)
{
	for (size_t i = 0; i < NNATIVES; i++)
		if (!strcmp(name, natives[i].name))
			return &natives[i];
	return NULL;
}

/*
 * The Python half's commands, as `python -m hopscope --commands` prints them:
 * one `NAME<TAB>SUMMARY` line each. Runs it through hs_exec_python (same
 * package, same interpreter as the commands themselves) in a child whose
 * stdout is a pipe; returns how many it listed.
 */
static int python_commands(FILE *f)
{
	char *args[] = { "hopscope", "--commands", NULL };
	char line[512];
	int p[2], status, n = 0;
	pid_t pid;
	FILE *in;

	fflush(f);
	if (pipe(p))
		return 0;
	pid = fork();
	if (pid < 0) {
		close(p[0]);
		close(p[1]);
		return 0;
	}
	if (pid == 0) {
		int null = open("/dev/null", O_WRONLY);

		dup2(p[1], STDOUT_FILENO);
		if (null >= 0)
			dup2(null, STDERR_FILENO);
		close(p[0]);
		close(p[1]);
		hs_exec_python(2, args);
		_exit(127);
	}
	close(p[1]);
	in = fdopen(p[0], "r");
	while (in && fgets(line, sizeof(line), in)) {
		char *tab;

		line[strcspn(line, "\n")] = 0;
		tab = strchr(line, '\t');
		if (!tab || tab == line)
			continue;
		*tab = 0;
		if (native(line))	/* ours: listed above */
			continue;
		fprintf(f, "  %-12s%s\n", line, tab + 1);
		n++;
	}
	if (in)
		fclose(in);
	else
		close(p[0]);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	return n;
}

static void usage(FILE *f)
{
	fprintf(f, "Usage: hopscope COMMAND [OPTIONS]\n\n");
	for (size_t i = 0; i < NNATIVES; i++)
		fprintf(f, "  %-12s%s\n", natives[i].name, natives[i].summary);
	if (!python_commands(f))
		fprintf(f, "  (the analysis commands belong to the Python package, which could\n"
			"   not run to list them: run `make deps`; docs/install.md)\n");
	fprintf(f,
		"\n"
		"`hopscope COMMAND --help` tells more.\n"
		"EXAMPLES:\n"
		"  hopscope record --in eth0 --out eth1 -d 10 -o run.hsr     10 s of this host's routing\n"
		"  hopscope describe run.hsr                                 what it recorded\n"
		"  hopscope record --netns router --in r-s1,r-s2 --out r-rx -d 10 -o run.hsr\n"
		"                                                            the testbed's router\n");
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
	FIELD(hs_record, drop_stage); FIELD(hs_record, flags); FIELD(hs_record, path);
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

static int version(void)
{
	printf("hopscope %s (record format %d)\n", HS_VERSION, HS_FILE_VERSION);
	return 0;
}

int main(int argc, char **argv)
{
	const char *cmd = argc > 1 ? argv[1] : NULL;
	const struct native *n;

	if (!cmd || !strcmp(cmd, "-h") || !strcmp(cmd, "--help") || !strcmp(cmd, "help")) {
		usage(cmd ? stdout : stderr);
		return cmd ? 0 : 2;
	}
	if (!strcmp(cmd, "--version"))
		return version();
	n = native(cmd);
	if (n)
		return n->run(argc, argv);
	return hs_exec_python(argc, argv);
}
