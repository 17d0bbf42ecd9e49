// SPDX-License-Identifier: GPL-2.0
/*
 * kvb_failnth - write a value to a file with the N-th fault site of that
 * one write(2) made to fail, through the kernel's per-task fail-nth
 * (Documentation/fault-injection/fault-injection.rst, "Systematic faults
 * using fail-nth").
 *
 *   kvb_failnth -n N FILE VALUE
 *
 * FILE and this thread's fail-nth are opened before fail-nth is armed, so
 * only the write of VALUE counts fault sites (which ones count is set in
 * debugfs: failslab/, fail_page_alloc/, their ignore-gfp-wait, min-order
 * and stack-trace filter). Prints one line, "injected=Y|N errno=E": Y when
 * the N-th site was reached and failed (N means the write had fewer than N
 * sites, so every site has been tried once N reaches that point), and E the
 * write's errno, 0 when it succeeded. Exits 0 when it could run the write,
 * 2 on a bad argument or when fail-nth is not available.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void usage(const char *msg)
{
	if (msg)
		fprintf(stderr, "kvb_failnth: %s\n", msg);
	fprintf(stderr, "usage: kvb_failnth -n N FILE VALUE\n");
	exit(2);
}

static void die(const char *what)
{
	fprintf(stderr, "kvb_failnth: %s: %s\n", what, strerror(errno));
	exit(2);
}

int main(int argc, char **argv)
{
	char arm[24], left[24];
	unsigned long n = 0;
	const char *value;
	int c, fn, fd, err;
	ssize_t len, r, got;
	char *end;

	while ((c = getopt(argc, argv, "n:")) != -1) {
		switch (c) {
		case 'n':
			errno = 0;
			n = strtoul(optarg, &end, 10);
			if (errno || end == optarg || *end || optarg[0] == '-' ||
			    n == 0 || n > 1000000)
				usage("N is a number from 1 to 1000000");
			break;
		default:
			usage(NULL);
		}
	}
	if (!n)
		usage("-n N is required");
	if (argc - optind != 2)
		usage("FILE and VALUE are required");
	value = argv[optind + 1];
	len = strlen(value);
	if (!len)
		usage("VALUE is empty");

	fn = open("/proc/thread-self/fail-nth", O_RDWR);
	if (fn < 0)
		die("/proc/thread-self/fail-nth (kernel without CONFIG_FAULT_INJECTION?)");
	fd = open(argv[optind], O_WRONLY);
	if (fd < 0)
		die(argv[optind]);
	snprintf(arm, sizeof(arm), "%lu", n);

	/* Nothing but the write runs in the kernel while fail-nth is armed. */
	if (write(fn, arm, strlen(arm)) < 0)
		die("arming fail-nth");
	r = write(fd, value, len);
	err = r < 0 ? errno : 0;
	got = pread(fn, left, sizeof(left) - 1, 0);
	if (got <= 0)
		die("reading fail-nth");
	left[got] = '\0';
	if (write(fn, "0", 1) < 0)
		die("disarming fail-nth");
	if (!err && r != len) {
		fprintf(stderr, "kvb_failnth: short write (%zd of %zd)\n", r, len);
		return 2;
	}
	/* fail-nth reads 0 once the armed fault was injected. */
	printf("injected=%c errno=%d\n", atoi(left) == 0 ? 'Y' : 'N', err);
	return 0;
}
