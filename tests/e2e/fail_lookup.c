/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * LD_PRELOAD shim for tests: once the file named by HS_FAIL_LOOKUP exists,
 * every BPF_MAP_LOOKUP_ELEM (libbpf calls syscall(__NR_bpf, ...)) fails with
 * EIO, so a test can see what the recorder does when it cannot read a map.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <linux/bpf.h>
#include <stdarg.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

long syscall(long nr, ...)
{
	static long (*real)(long, ...);
	const char *path = getenv("HS_FAIL_LOOKUP");
	long a[6];
	va_list ap;

	va_start(ap, nr);
	for (int i = 0; i < 6; i++)
		a[i] = va_arg(ap, long);
	va_end(ap);
	if (nr == __NR_bpf && a[0] == BPF_MAP_LOOKUP_ELEM && path && !access(path, F_OK)) {
		errno = EIO;
		return -1;
	}
	if (!real)
		real = (long (*)(long, ...))dlsym(RTLD_NEXT, "syscall");
	return real(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
}
