/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The unit tests' TAP harness: each test is a bool (*)(void) that records
 * failures with EXPECT() (the first few messages of a test are printed)
 * and run_test() prints its "ok N - desc" / "not ok N - desc" line.
 * Included once per test program.
 */
#ifndef _KVB_UNIT_TAP_H
#define _KVB_UNIT_TAP_H

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>

static int nr_pass, nr_fail, nr_run;

/* Per-test failure state. */
static bool t_ok;
static int t_msgs;

static void diag(const char *fmt, ...)
{
	va_list ap;

	printf("# ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
}

#define EXPECT(cond, ...)						\
	do {								\
		if (!(cond)) {						\
			t_ok = false;					\
			if (t_msgs++ < 8) {				\
				printf("# FAIL %s:%d: ", __func__,	\
				       __LINE__);			\
				printf(__VA_ARGS__);			\
				printf("\n");				\
			}						\
		}							\
	} while (0)

static void run_test(bool (*fn)(void), const char *desc)
{
	t_ok = true;
	t_msgs = 0;
	nr_run++;
	if (fn() && t_ok) {
		nr_pass++;
		printf("ok %d - %s\n", nr_run, desc);
	} else {
		nr_fail++;
		printf("not ok %d - %s\n", nr_run, desc);
	}
	fflush(stdout);
}

#endif /* _KVB_UNIT_TAP_H */
