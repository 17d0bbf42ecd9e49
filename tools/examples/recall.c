// SPDX-License-Identifier: GPL-2.0
/*
 * recall - the smallest KV-cache recall an engine would issue: one batch of
 * reads submitted together through io_uring, every read carrying the same
 * tag (BE class with an ioprio hint, which needs no privilege), and the
 * time until the last one completes.
 *
 *   recall DEV HINT NREADS [BLOCK_SIZE]
 *   recall --help
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <liburing.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* The tag's layout: class, hint and level bits (kv-ioprio.h at the top). */
#include "kv-ioprio.h"

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

#define USAGE "usage: recall DEV HINT(1..1023) NREADS(1..256) [BLOCK_SIZE]\n"

static void usage(const char *msg, const char *arg)
{
	if (msg)
		fprintf(stderr, "recall: %s: '%s'\n", msg, arg);
	fputs(USAGE, stderr);
	exit(2);
}

/* @s as a plain decimal in lo..hi, else the usage. */
static unsigned int parse_arg(const char *s, unsigned long lo,
			      unsigned long hi, const char *what)
{
	unsigned long v;
	char *end;

	if (*s < '0' || *s > '9')
		usage(what, s);
	v = strtoul(s, &end, 10);
	if (*end || v < lo || v > hi)
		usage(what, s);
	return v;
}

int main(int argc, char **argv)
{
	struct io_uring ring;
	struct io_uring_cqe *cqe;
	unsigned int n, bs = 65536, hint, i;
	double start;
	char *buf;
	int fd;

	for (i = 1; i < (unsigned int)argc; i++) {
		if (strcmp(argv[i], "--help") && strcmp(argv[i], "-h"))
			continue;
		fputs(USAGE "\n"
		      "Read NREADS blocks of BLOCK_SIZE bytes (4096..1048576, a multiple\n"
		      "of 4096; default 65536) from DEV in one io_uring submission,\n"
		      "every read tagged BE with ioprio hint HINT, and print the time\n"
		      "until the last one completed.\n", stdout);
		return 0;
	}
	/* No other option: a word that looks like one is a mistake. */
	for (i = 1; i < (unsigned int)argc; i++)
		if (argv[i][0] == '-' && argv[i][1] &&
		    (argv[i][1] < '0' || argv[i][1] > '9'))
			usage("no such option", argv[i]);
	if (argc < 4 || argc > 5)
		usage(NULL, NULL);
	hint = parse_arg(argv[2], 1, KV_IOPRIO_HINT_MAX, "HINT is 1..1023");
	n = parse_arg(argv[3], 1, 256, "NREADS is 1..256");
	if (argc == 5)
		bs = parse_arg(argv[4], 4096, 1 << 20,
			       "BLOCK_SIZE is 4096..1048576, a multiple of 4096");
	if (bs % 4096)
		usage("BLOCK_SIZE is 4096..1048576, a multiple of 4096",
		      argv[4]);
	fd = open(argv[1], O_RDONLY | O_DIRECT);
	if (fd < 0 || io_uring_queue_init(n, &ring, 0) < 0 ||
	    posix_memalign((void **)&buf, 4096, (size_t)n * bs)) {
		perror("recall");
		return 1;
	}

	/* One recall batch: n reads, one tag, submitted together. */
	start = now_ms();
	for (i = 0; i < n; i++) {
		struct io_uring_sqe *sqe = io_uring_get_sqe(&ring);

		io_uring_prep_read(sqe, fd, buf + (size_t)i * bs, bs,
				   (off_t)i * bs);
		sqe->ioprio = KV_IOPRIO(KV_IOPRIO_CLASS_BE, hint, 0);
	}
	io_uring_submit(&ring);

	for (i = 0; i < n; i++) {
		if (io_uring_wait_cqe(&ring, &cqe) < 0 || cqe->res != (int)bs) {
			fprintf(stderr, "recall: read failed\n");
			return 1;
		}
		io_uring_cqe_seen(&ring, cqe);
	}
	printf("recall: %u reads of %u bytes, tag 0x%x, last completed after %.2f ms\n",
	       n, bs, KV_IOPRIO(KV_IOPRIO_CLASS_BE, hint, 0),
	       now_ms() - start);
	return 0;
}
