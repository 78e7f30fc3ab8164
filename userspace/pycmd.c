/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Every command but `record` belongs to the Python package: run it there. */
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "hs_paths.h"
#include "pycmd.h"

/*
 * The Python package that belongs to this binary, found from where the binary
 * is, never from the environment: an installed or pip-installed package
 * elsewhere may be another version's.
 *   build/hopscope in a checkout:   build/../userspace/python
 *   installed as PREFIX/sbin/hopscope (make install):  PREFIX/lib/hopscope/python
 * Neither there (a binary copied elsewhere): the interpreter's own sys.path.
 */
static const char *const package_dirs[] = { "../userspace/python", "../lib/hopscope/python" };

static void use_own_package(void)
{
	char exe[PATH_MAX], dir[PATH_MAX + 64], init[PATH_MAX + 96];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	const char *old = getenv("PYTHONPATH"), *bindir;
	size_t i;

	if (n <= 0)
		return;
	exe[n] = 0;
	bindir = dirname(exe);
	for (i = 0; i < sizeof(package_dirs) / sizeof(package_dirs[0]); i++) {
		snprintf(dir, sizeof(dir), "%s/%s", bindir, package_dirs[i]);
		snprintf(init, sizeof(init), "%s/hopscope/__init__.py", dir);
		if (!access(init, R_OK))
			break;
	}
	if (i == sizeof(package_dirs) / sizeof(package_dirs[0]))
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

/* The Python commands that start a recorder (`hopscope top`) run this very
 * program: the one that belongs to their package, wherever it is installed. */
static void name_own_program(void)
{
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

	if (n <= 0)
		return;
	exe[n] = 0;
	setenv("HOPSCOPE_PROGRAM", exe, 1);
}

int hs_exec_python(int argc, char **argv)
{
	const char *cmd = argv[1];
	const char *env = getenv("HOPSCOPE_PYTHON");
	/* the virtualenv `make deps` made (VENV), or the user's choice */
	const char *py = env && *env ? env : HS_PYTHON;

	/* the analysis commands live in the Python package. Keep freed memory in
	 * the process: on VMs whose host reclaims freed pages, touching fresh
	 * memory again cost 0.5-3 s per GB and doubled the time of the statistics
	 * on 10 M records (evaluation/bench/analysis_stats.py). One arena: the statistics'
	 * threads otherwise get arenas of their own, mapped and unmapped as they
	 * go, and touch fresh memory again (evaluation/measurements.md). A user's own
	 * setting wins. (userspace/glibc.tunables) */
	setenv("GLIBC_TUNABLES", HS_GLIBC_TUNABLES, 0);
	use_own_package();
	name_own_program();
	/* and not a hopscope/ in the current directory ahead of it (`python -m`
	 * puts the current directory first; Python >= 3.11 reads this) */
	setenv("PYTHONSAFEPATH", "1", 0);
	if (strchr(py, '/') && access(py, X_OK)) {
		const char *src = py == env ? " (HOPSCOPE_PYTHON)" : "";

		if (errno == ENOENT)
			fprintf(stderr, "hopscope: '%s' needs hopscope's Python dependencies, "
				"and %s%s is missing.\n", cmd, py, src);
		else
			fprintf(stderr, "hopscope: cannot run %s%s for '%s': %s\n",
				py, src, cmd, strerror(errno));
		fprintf(stderr, "`make deps` (as root, in hopscope's source tree) installs them; "
			"HOPSCOPE_PYTHON names another Python that has them (docs/install.md).\n");
		return 1;
	}
	char **args = calloc(argc + 3, sizeof(*args));

	if (!args)
		return 1;
	args[0] = (char *)py;
	args[1] = "-m";
	args[2] = "hopscope";
	for (int i = 1; i < argc; i++)
		args[i + 2] = argv[i];
	execvp(py, args);  /* HOPSCOPE_PYTHON=python3: looked up in PATH */
	fprintf(stderr, "hopscope: cannot run %s for '%s': %s (docs/install.md)\n",
		py, cmd, strerror(errno));
	free(args);
	return 1;
}
