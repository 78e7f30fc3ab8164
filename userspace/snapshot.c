/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* The live snapshot file (snapshot.h): written beside its path, then renamed. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "json.h"
#include "snapshot.h"

#define HS_SNAPSHOT_VERSION 1

static int write_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -errno;
		p += w;
		n -= w;
	}
	return 0;
}

static int write_file(const char *path, const char *text)
{
	char tmp[PATH_MAX];
	int fd, err;

	if (snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= (int)sizeof(tmp))
		return -ENAMETOOLONG;
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	err = write_all(fd, text, strlen(text));
	if (close(fd) && !err)
		err = -errno;
	if (!err && rename(tmp, path))
		err = -errno;
	if (err)
		unlink(tmp);
	return err;
}

int hs_snapshot_write(struct hs_snapshot *s, const char *counters_json, int final)
{
	struct timespec now;
	struct js j;
	int err;

	clock_gettime(CLOCK_REALTIME, &now);
	js_init(&j);
	js_open(&j, NULL, '{');
	js_str(&j, "format", "hopscope-snapshot");
	js_u64(&j, "version", HS_SNAPSHOT_VERSION);
	js_u64(&j, "sequence", s->written + s->failed);
	js_u64(&j, "realtime_ns", (uint64_t)now.tv_sec * 1000000000ull + now.tv_nsec);
	js_bool(&j, "final", final);
	js_raw(&j, "header", s->header);
	js_raw(&j, "counters", counters_json);
	js_close(&j, '}');
	err = js_text(&j) ? write_file(s->path, js_text(&j)) : -ENOMEM;
	js_free(&j);
	if (err)
		s->failed++;
	else
		s->written++;
	s->last_err = err;
	return err;
}
