// SPDX-License-Identifier: GPL-2.0
/*
 * kvb_firstwrite - time a deferred write that arrives as the demand it is
 * held behind completes, with nothing after it.
 *
 *   kvb_firstwrite -d DEV -n ROUNDS -l LAT_US [-s SPAN_US] [-t LIMIT_MS]
 *                  [-f MAX_SLOW]
 *
 * Each round, two threads (pinned to the first two CPUs) each read 4 KiB
 * with O_DIRECT in the real-time class, demand for kvbatch, at the same
 * moment; a third thread writes 4 KiB with O_DIRECT in the idle class, a
 * write kvbatch defers while demand is in flight, about LAT_US later: the
 * device's latency, moved by up to SPAN_US either way from round to round,
 * so that some writes arrive while the reads complete. Then the device is
 * idle until every I/O of the round is done. A write that waits for a
 * queue run no completion asks for waits write_expire_ms. Prints each
 * round whose write took longer than LIMIT_MS (default 1000), stopping
 * after MAX_SLOW such rounds (default 3), then the rounds run and the
 * longest write; exits 1 if any round was slow, 2 on bad arguments or
 * I/O errors.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define BS		4096
#define PRIO(c, d)	(((c) << 13) | (d))
#define CLASS_RT	1
#define CLASS_IDLE	3

struct round {
	pthread_barrier_t start;
	int fd;
	unsigned int n;
	volatile int stop;
	int err;
};

static struct round rd;

static void usage(const char *msg)
{
	if (msg)
		fprintf(stderr, "kvb_firstwrite: %s\n", msg);
	fprintf(stderr,
		"usage: kvb_firstwrite -d DEV -n ROUNDS -l LAT_US [-s SPAN_US] [-t LIMIT_MS] [-f MAX_SLOW]\n");
	exit(2);
}

static unsigned int parse_uint(const char *s, const char *what,
			       unsigned long min, unsigned long max)
{
	unsigned long v;
	char *end;

	if (*s < '0' || *s > '9')
		usage(what);
	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || *end || v < min || v > max)
		usage(what);
	return v;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* ioprio_set() for the calling thread (IOPRIO_WHO_PROCESS, 0). */
static int set_prio(int prio)
{
	return syscall(SYS_ioprio_set, 1, 0, prio);
}

static void pin(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	/* A guest with one CPU still runs the rounds, just less sharply. */
	sched_setaffinity(0, sizeof(set), &set);
}

static void *buffer(void)
{
	void *p;

	if (posix_memalign(&p, BS, BS))
		return NULL;
	memset(p, 0x5a, BS);
	return p;
}

/* A reader: thread 0 or 1, reading its own block each round. */
static void *reader(void *arg)
{
	long id = (long)arg;
	void *buf = buffer();
	unsigned int i;

	pin(id);
	if (!buf || set_prio(PRIO(CLASS_RT, 0))) {
		rd.err = errno ? errno : ENOMEM;
		buf = NULL;
	}
	for (i = 0; i < rd.n; i++) {
		pthread_barrier_wait(&rd.start);
		if (rd.stop)
			break;
		if (buf && pread(rd.fd, buf, BS, (off_t)(1024 + 2 * i + id) * BS) != BS)
			rd.err = errno ? errno : EIO;
		pthread_barrier_wait(&rd.start);
	}
	free(buf);
	return NULL;
}

int main(int argc, char **argv)
{
	unsigned int lat_us = 0, span_us = 0, limit_ms = 1000, slow = 0;
	unsigned int max_slow = 3;
	const char *dev = NULL;
	pthread_t th[2];
	uint64_t worst = 0;
	void *buf;
	long i, done;
	int c;

	while ((c = getopt(argc, argv, "d:n:l:s:t:f:")) != -1) {
		switch (c) {
		case 'd':
			dev = optarg;
			break;
		case 'n':
			rd.n = parse_uint(optarg, "-n: rounds, 1..100000", 1, 100000);
			break;
		case 'l':
			lat_us = parse_uint(optarg, "-l: microseconds, 1..1000000", 1, 1000000);
			break;
		case 's':
			span_us = parse_uint(optarg, "-s: microseconds, 0..1000000", 0, 1000000);
			break;
		case 't':
			limit_ms = parse_uint(optarg, "-t: milliseconds, 1..600000", 1, 600000);
			break;
		case 'f':
			max_slow = parse_uint(optarg, "-f: rounds, 1..100000", 1, 100000);
			break;
		default:
			usage(NULL);
		}
	}
	if (optind != argc || !dev || !rd.n || !lat_us)
		usage("-d, -n and -l are required");
	if (span_us > lat_us)
		usage("-s must not exceed -l");

	rd.fd = open(dev, O_RDWR | O_DIRECT);
	if (rd.fd < 0) {
		fprintf(stderr, "kvb_firstwrite: %s: %s\n", dev, strerror(errno));
		return 2;
	}
	buf = buffer();
	if (!buf || pthread_barrier_init(&rd.start, NULL, 3))
		return 2;
	if (set_prio(PRIO(CLASS_IDLE, 0))) {
		perror("kvb_firstwrite: ioprio_set");
		return 2;
	}
	for (i = 0; i < 2; i++)
		if (pthread_create(&th[i], NULL, reader, (void *)i))
			return 2;
	pin(2);

	for (i = 0; i < rd.n; i++) {
		/* Sweep the write's arrival across the reads' completion. */
		long off = span_us ? (long)(i % 21) * span_us / 10 - span_us : 0;
		struct timespec ts;
		uint64_t t;

		ts.tv_sec = 0;
		ts.tv_nsec = (lat_us + off) * 1000L;
		while (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		if (slow >= max_slow)
			rd.stop = 1;
		pthread_barrier_wait(&rd.start);
		if (rd.stop)
			break;
		nanosleep(&ts, NULL);
		t = now_ns();
		if (pwrite(rd.fd, buf, BS, (off_t)(i % 512) * BS) != BS) {
			perror("kvb_firstwrite: pwrite");
			return 2;
		}
		t = now_ns() - t;
		pthread_barrier_wait(&rd.start);
		if (t > worst)
			worst = t;
		if (t > (uint64_t)limit_ms * 1000000) {
			slow++;
			printf("round %ld: write arrived %ld us after the reads, took %" PRIu64 " ms\n",
			       i, (long)lat_us + off, t / 1000000);
		}
	}
	done = i;
	for (i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	if (rd.err) {
		fprintf(stderr, "kvb_firstwrite: read: %s\n", strerror(rd.err));
		return 2;
	}
	printf("rounds %ld slow %u longest_ms %" PRIu64 "\n", done, slow,
	       worst / 1000000);
	return slow ? 1 : 0;
}
