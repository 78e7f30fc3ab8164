/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>
#include "netns.h"

int hs_netns_enter(const char *name, uint64_t *inum)
{
	char path[256];
	struct stat st;
	int fd;

	if (name) {
		if (strchr(name, '/'))
			snprintf(path, sizeof(path), "%s", name);
		else
			snprintf(path, sizeof(path), "/run/netns/%s", name);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0) {
			fprintf(stderr, "hopscope: no network namespace '%s' (%s: %s)\n",
				name, path, strerror(errno));
			return -ENOENT;
		}
		if (setns(fd, CLONE_NEWNET)) {
			int err = errno;

			fprintf(stderr, "hopscope: cannot enter namespace '%s': %s\n", name,
				strerror(err));
			close(fd);
			return -err;
		}
		close(fd);
		if (unshare(CLONE_NEWNS) ||
		    mount(NULL, "/", NULL, MS_SLAVE | MS_REC, NULL) ||
		    umount2("/sys", MNT_DETACH) ||
		    mount("sysfs", "/sys", "sysfs", 0, NULL))
			fprintf(stderr, "hopscope: warning: /sys not remounted for '%s' (%s): "
				"interface metadata may be missing\n", name, strerror(errno));
	}
	if (stat("/proc/self/ns/net", &st)) {
		fprintf(stderr, "hopscope: /proc/self/ns/net: %s\n", strerror(errno));
		return -errno;
	}
	*inum = st.st_ino;
	return 0;
}
