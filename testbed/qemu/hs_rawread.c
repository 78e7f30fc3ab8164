/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The QEMU guest's check of read() on /dev/hopscope with buffers that fail,
 * straight on the device (no backend in between). In the router's netns:
 *
 *   hs_rawread efault IN OUT PORT READY GO
 *     records; once GO exists, reads first into an unmapped address (must
 *     fail with EFAULT), then into a buffer whose second record lies on a
 *     PROT_NONE page (must return one record), then normally until SIGINT,
 *     stop, and end of file. Prints
 *       RAWREAD efault=0|1 partial=RECORDS complete=N
 *     complete counting PORT's complete records: none may be lost by the
 *     failed copies.
 *   hs_rawread stall IN OUT PORT READY GO
 *     records; once GO exists, reads into a userfaultfd-registered buffer
 *     whose fault is not served: the read stalls inside copy_to_user. Writes
 *     READY.stalled once the fault arrived, serves it when READY.release
 *     appears, and prints
 *       RAWSTALL stalled=1 read=BYTES
 *     Meanwhile the guest deletes network namespaces: their teardown must
 *     not wait for this reader.
 * Exit: 0 ok, 1 error.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "hopscope_kmod.h"

static volatile sig_atomic_t stop;
static const char *port_s;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static void wait_for(const char *path)
{
	while (access(path, F_OK) && !stop)
		usleep(50000);
}

static void touch(const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);

	if (fd >= 0)
		close(fd);
}

static int start(const char *in, const char *out)
{
	struct hs_kmod_config kc = { .abi = HS_KMOD_ABI, .netns_fd = -1 };
	int fd = open(HS_KMOD_DEVICE, O_RDONLY | O_CLOEXEC);

	if (fd < 0) {
		perror("hs_rawread: open");
		return -1;
	}
	kc.stages = HS_STAGES_CORE;
	kc.n_in = kc.n_out = 1;
	kc.in_ifindex[0] = if_nametoindex(in);
	kc.out_ifindex[0] = if_nametoindex(out);
	if (ioctl(fd, HS_IOC_CONFIGURE, &kc) || ioctl(fd, HS_IOC_START, 0)) {
		perror("hs_rawread: configure/start");
		return -1;
	}
	return fd;
}

static unsigned long count(const struct hs_record *r, size_t n)
{
	unsigned long c = 0;

	for (size_t i = 0; i < n; i++)
		c += r[i].status == HS_ST_COMPLETE && r[i].proto == IPPROTO_UDP &&
		     r[i].dport == atoi(port_s);
	return c;
}

/* until the records are there: poll() says POLLIN */
static void wait_records(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	while (!stop && poll(&p, 1, 100) == 0)
		;
}

static int do_efault(int fd)
{
	long page = sysconf(_SC_PAGESIZE);
	static struct hs_record buf[256];
	void *volatile bad = (void *)8;	/* volatile: the compiler must not judge it */
	unsigned long complete = 0;
	int efault = 0, partial = -1;
	char *two;
	ssize_t got;

	wait_records(fd);
	got = read(fd, bad, sizeof(buf));
	efault = got < 0 && errno == EFAULT;
	/* one record's room before a page that cannot be written */
	two = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (two == MAP_FAILED || mprotect(two + page, page, PROT_NONE))
		return 1;
	wait_records(fd);
	got = read(fd, two + page - sizeof(struct hs_record), 4 * sizeof(struct hs_record));
	if (got >= 0) {
		partial = got / sizeof(struct hs_record);
		complete += count((void *)(two + page - sizeof(struct hs_record)), partial);
	}
	while (!stop) {
		got = read(fd, buf, sizeof(buf));
		if (got > 0)
			complete += count(buf, got / sizeof(*buf));
		else
			usleep(20000);
	}
	if (ioctl(fd, HS_IOC_STOP, 0))
		return 1;
	while ((got = read(fd, buf, sizeof(buf))) > 0)
		complete += count(buf, got / sizeof(*buf));
	printf("RAWREAD efault=%d partial=%d complete=%lu\n", efault, partial, complete);
	return got < 0;
}

struct stall {
	int uffd;
	const char *ready;
};

static void *serve(void *arg)
{
	struct stall *st = arg;
	struct pollfd p = { .fd = st->uffd, .events = POLLIN };
	struct uffd_msg msg;
	char path[512];

	while (poll(&p, 1, -1) < 1)
		;
	if (read(st->uffd, &msg, sizeof(msg)) != sizeof(msg) || msg.event != UFFD_EVENT_PAGEFAULT)
		return NULL;
	snprintf(path, sizeof(path), "%s.stalled", st->ready);
	touch(path);
	snprintf(path, sizeof(path), "%s.release", st->ready);
	wait_for(path);
	struct uffdio_zeropage z = {
		.range = { .start = msg.arg.pagefault.address & ~(sysconf(_SC_PAGESIZE) - 1),
			   .len = sysconf(_SC_PAGESIZE) },
	};
	ioctl(st->uffd, UFFDIO_ZEROPAGE, &z);
	return NULL;
}

static int do_stall(int fd, const char *ready)
{
	long page = sysconf(_SC_PAGESIZE);
	struct stall st = { .ready = ready };
	struct uffdio_api api = { .api = UFFD_API };
	struct uffdio_register reg;
	pthread_t th;
	ssize_t got;
	char *buf;

	st.uffd = syscall(__NR_userfaultfd, O_CLOEXEC);
	if (st.uffd < 0 || ioctl(st.uffd, UFFDIO_API, &api)) {
		perror("hs_rawread: userfaultfd");
		return 1;
	}
	buf = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	reg.range.start = (unsigned long)buf;
	reg.range.len = page;
	reg.mode = UFFDIO_REGISTER_MODE_MISSING;
	if (buf == MAP_FAILED || ioctl(st.uffd, UFFDIO_REGISTER, &reg)) {
		perror("hs_rawread: UFFDIO_REGISTER");
		return 1;
	}
	pthread_create(&th, NULL, serve, &st);
	wait_records(fd);
	got = read(fd, buf, page / sizeof(struct hs_record) * sizeof(struct hs_record));
	pthread_join(th, NULL);
	printf("RAWSTALL stalled=1 read=%zd\n", got);
	return got <= 0;
}

int main(int argc, char **argv)
{
	int fd, rc;

	if (argc != 7) {
		fprintf(stderr, "usage: hs_rawread efault|stall IN OUT PORT READY GO\n");
		return 2;
	}
	port_s = argv[4];
	/* no SA_RESTART: a read() waiting for records must return on SIGINT */
	struct sigaction sa = { .sa_handler = on_signal };

	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	fd = start(argv[2], argv[3]);
	if (fd < 0)
		return 1;
	touch(argv[5]);
	wait_for(argv[6]);
	rc = !strcmp(argv[1], "efault") ? do_efault(fd) : do_stall(fd, argv[5]);
	fflush(stdout);
	return rc;
}
