/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * One recorder per router. Two on one router would stamp each other's
 * packets (the XDP metadata in front of a packet is not a recorder's own),
 * so the second is refused before it attaches anything, with who holds the
 * router: the holder wrote it in the lock file. The file stays after the
 * run (removing it would race with a recorder that has it open); only the
 * flock says whether it is held, and a holder's flock ends with its process.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "routerlock.h"

#define LINE_MAX_ 1024

/* the holder's line, as it wrote it */
static void refused(int fd)
{
	char line[LINE_MAX_];
	ssize_t n = pread(fd, line, sizeof(line) - 1, 0);

	line[n > 0 ? n : 0] = 0;
	line[strcspn(line, "\n")] = 0;
	fprintf(stderr, "hopscope: another hopscope (%s) is recording this router: its probes "
		"hold the router's hooks; stop it first (one recorder per router records any "
		"number of inputs: name them all in --in)\n",
		line[0] ? line : "just starting: it has not said who it is yet");
}

int hs_router_lock(const char *dir, uint64_t netns_inum, const char *netns, const char *in,
		   const char *out)
{
	char path[512], line[LINE_MAX_], ns[300], when[32];
	time_t now = time(NULL);
	struct tm tm;
	int fd, n, err;

	snprintf(path, sizeof(path), "%s/recorder-%llu.lock", dir, (unsigned long long)netns_inum);
	if (mkdir(dir, 0755) && errno != EEXIST)
		goto fail;
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0)
		goto fail;
	if (flock(fd, LOCK_EX | LOCK_NB)) {
		err = errno;
		if (err == EWOULDBLOCK)
			refused(fd);
		close(fd);
		if (err == EWOULDBLOCK)
			return -1;
		errno = err;
		goto fail;
	}
	if (netns)
		snprintf(ns, sizeof(ns), "'%s'", netns);
	else
		snprintf(ns, sizeof(ns), "inode %llu", (unsigned long long)netns_inum);
	strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", localtime_r(&now, &tm));
	n = snprintf(line, sizeof(line), "pid %d, router ns %s, --in %s --out %s, since %s\n",
		     (int)getpid(), ns, in, out, when);
	if (n >= (int)sizeof(line))
		n = sizeof(line) - 1;
	/* a crashed holder's line may be there: replaced whole */
	if (ftruncate(fd, 0) || pwrite(fd, line, n, 0) != n) {
		err = errno;
		close(fd);
		errno = err;
		goto fail;
	}
	return fd;
fail:
	fprintf(stderr, "hopscope: cannot take the router lock %s: %s (it keeps to one recorder "
		"per router)\n", path, strerror(errno));
	return -1;
}
