/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Every command but `record` belongs to the Python package: run it there. */
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "pycmd.h"

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

int hs_exec_python(int argc, char **argv)
{
	const char *cmd = argv[1];

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
