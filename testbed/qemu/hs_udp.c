/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The QEMU guest's traffic: a UDP sender that sends an exact number of
 * datagrams (or until killed), and a sink that counts them. Static, no
 * dependencies: busybox has neither.
 *   hs_udp send DST PORT COUNT [SIZE [TOS [GAP_US [DF]]]]   COUNT 0: until SIGTERM;
 *                                             GAP_US: pause after each datagram;
 *                                             DF 0: IPv4 with DF clear (a router fragments)
 *   hs_udp sink PORT [REPLIES]                counts until SIGTERM; answers the
 *                                             first REPLIES datagrams (a stateful
 *                                             firewall then sees the flow established)
 *                                             and says where the first came from
 *   hs_udp tap IFNAME                         a packet tap (as tcpdump), until SIGTERM
 *   hs_udp tcpsend DST4 PORT BYTES            one TCP connection, BYTES of zeros
 *   hs_udp tcpsink PORT                       accepts one, reads it to the end
 * Each prints one line: "sent N" / "received N" / "tapped N" (N: bytes for TCP);
 * a sink that answers, "from ADDRESS" before it.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static int usage(void)
{
	fprintf(stderr, "usage: hs_udp send DST PORT COUNT [SIZE [TOS [GAP_US [DF]]]] | hs_udp sink PORT [REPLIES] | "
		"hs_udp tap IFNAME | hs_udp tcpsend DST4 PORT BYTES | hs_udp tcpsink PORT\n");
	return 2;
}

static int do_send(int argc, char **argv)
{
	struct sockaddr_storage ss = {};
	struct sockaddr_in *v4 = (struct sockaddr_in *)&ss;
	struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)&ss;
	unsigned long count = strtoul(argv[4], NULL, 0), sent = 0;
	int port = atoi(argv[3]), size = argc > 5 ? atoi(argv[5]) : 64;
	int tos = argc > 6 ? atoi(argv[6]) : 0, fd, fam;
	/* an emulated NIC drops what its ring cannot take: a gap keeps them in */
	long gap_us = argc > 7 ? atol(argv[7]) : 0;
	int df = argc > 8 ? atoi(argv[8]) : 1, pmtu = IP_PMTUDISC_DONT;
	struct timespec gap = { gap_us / 1000000, gap_us % 1000000 * 1000 };
	socklen_t len;
	char buf[1500] = {};

	if (size < 8 || size > (int)sizeof(buf))
		return usage();
	if (inet_pton(AF_INET, argv[2], &v4->sin_addr) == 1) {
		fam = AF_INET;
		v4->sin_family = AF_INET;
		v4->sin_port = htons(port);
		len = sizeof(*v4);
	} else if (inet_pton(AF_INET6, argv[2], &v6->sin6_addr) == 1) {
		fam = AF_INET6;
		v6->sin6_family = AF_INET6;
		v6->sin6_port = htons(port);
		len = sizeof(*v6);
	} else {
		fprintf(stderr, "hs_udp: bad address %s\n", argv[2]);
		return 2;
	}
	fd = socket(fam, SOCK_DGRAM, 0);
	if (fd < 0 ||
	    (fam == AF_INET && setsockopt(fd, IPPROTO_IP, IP_TOS, &tos, sizeof(tos))) ||
	    (fam == AF_INET6 && setsockopt(fd, IPPROTO_IPV6, IPV6_TCLASS, &tos, sizeof(tos))) ||
	    (fam == AF_INET && !df &&
	     setsockopt(fd, IPPROTO_IP, IP_MTU_DISCOVER, &pmtu, sizeof(pmtu)))) {
		perror("hs_udp: socket");
		return 1;
	}
	/* unconnected: an ICMP error must not fail the next send */
	while (!stop && (!count || sent < count)) {
		uint64_t seq = sent;

		memcpy(buf, &seq, sizeof(seq));
		if (sendto(fd, buf, size, 0, (struct sockaddr *)&ss, len) == size) {
			sent++;
			if (gap_us)
				nanosleep(&gap, NULL);
		} else if (errno == ENOBUFS || errno == EAGAIN || errno == EINTR) {
			struct timespec ts = { 0, 100000 };

			nanosleep(&ts, NULL);
		} else {
			perror("hs_udp: sendto");
			return 1;
		}
	}
	printf("sent %lu\n", sent);
	return 0;
}

/* count what fd receives until SIGTERM, then print "WHAT N"; send the first
 * `replies` datagrams back where they came from */
static int count_until_stop(int fd, const char *what, unsigned long replies)
{
	struct sockaddr_storage from;
	unsigned long n = 0;
	char buf[2048];
	socklen_t len;
	ssize_t got;

	while (!stop) {
		len = sizeof(from);
		got = recvfrom(fd, buf, sizeof(buf), 0, (struct sockaddr *)&from, &len);
		if (got < 0)
			continue;
		if (n++ >= replies)
			continue;
		if (sendto(fd, buf, got, 0, (struct sockaddr *)&from, len) != got)
			perror("hs_udp: reply");
		if (n == 1) {	/* the sink's socket is IPv6: IPv4 as ::ffff:a.b.c.d */
			char addr[INET6_ADDRSTRLEN];

			printf("from %s\n", inet_ntop(AF_INET6, &((struct sockaddr_in6 *)&from)->sin6_addr,
						       addr, sizeof(addr)));
		}
	}
	printf("%s %lu\n", what, n);
	return 0;
}

static int do_sink(int argc, char **argv)
{
	struct sockaddr_in6 a = { .sin6_family = AF_INET6, .sin6_port = htons(atoi(argv[2])) };
	int fd = socket(AF_INET6, SOCK_DGRAM, 0), off = 0, big = 8 << 20;

	if (fd < 0 || setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &off, sizeof(off)) ||
	    setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &big, sizeof(big)) ||
	    bind(fd, (struct sockaddr *)&a, sizeof(a))) {
		perror("hs_udp: sink");
		return 1;
	}
	return count_until_stop(fd, "received", argc > 3 ? strtoul(argv[3], NULL, 0) : 0);
}

/* an AF_PACKET socket holds a reference on every skb it sees, as tcpdump does */
static int do_tap(char **argv)
{
	struct sockaddr_ll a = { .sll_family = AF_PACKET, .sll_protocol = htons(ETH_P_ALL),
				 .sll_ifindex = if_nametoindex(argv[2]) };
	int fd = socket(AF_PACKET, SOCK_RAW, htons(ETH_P_ALL));

	if (fd < 0 || !a.sll_ifindex || bind(fd, (struct sockaddr *)&a, sizeof(a))) {
		perror("hs_udp: tap");
		return 1;
	}
	return count_until_stop(fd, "tapped", 0);
}

static int do_tcpsend(char **argv)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(atoi(argv[3])) };
	unsigned long left = strtoul(argv[4], NULL, 0), sent = 0;
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	char buf[16384] = {};

	if (inet_pton(AF_INET, argv[2], &a.sin_addr) != 1)
		return usage();
	if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a))) {
		perror("hs_udp: tcpsend");
		return 1;
	}
	while (left) {
		ssize_t n = write(fd, buf, left < sizeof(buf) ? left : sizeof(buf));

		if (n <= 0) {
			perror("hs_udp: tcpsend");
			return 1;
		}
		left -= n;
		sent += n;
	}
	close(fd);
	printf("sent %lu\n", sent);
	return 0;
}

static int do_tcpsink(char **argv)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(atoi(argv[2])) };
	int fd = socket(AF_INET, SOCK_STREAM, 0), on = 1, c;
	unsigned long got = 0;
	char buf[65536];
	ssize_t n;

	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on)) ||
	    bind(fd, (struct sockaddr *)&a, sizeof(a)) || listen(fd, 1) ||
	    (c = accept(fd, NULL, NULL)) < 0) {
		perror("hs_udp: tcpsink");
		return 1;
	}
	while ((n = read(c, buf, sizeof(buf))) > 0)
		got += n;
	printf("received %lu\n", got);
	return 0;
}

int main(int argc, char **argv)
{
	struct sigaction sa = { .sa_handler = on_signal };

	/* no SA_RESTART: a signal ends a blocking recv */
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc >= 5 && !strcmp(argv[1], "send"))
		return do_send(argc, argv);
	if ((argc == 3 || argc == 4) && !strcmp(argv[1], "sink"))
		return do_sink(argc, argv);
	if (argc == 3 && !strcmp(argv[1], "tap"))
		return do_tap(argv);
	if (argc == 5 && !strcmp(argv[1], "tcpsend"))
		return do_tcpsend(argv);
	if (argc == 3 && !strcmp(argv[1], "tcpsink"))
		return do_tcpsink(argv);
	return usage();
}
