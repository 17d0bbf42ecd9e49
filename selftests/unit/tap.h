/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The unit tests' TAP harness: each test is a bool (*)(void) that records
 * failures with EXPECT() (the first few messages of a test are printed)
 * and run_test() prints its "ok N - desc" / "not ok N - desc" line.
 * Included once per test program, which ends with TAP_MAIN() listing its
 * tests.
 */
#ifndef _KVB_UNIT_TAP_H
#define _KVB_UNIT_TAP_H

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <time.h>

#ifndef ARRAY_SIZE
#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))
#endif

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

struct tap_test {
	bool		(*fn)(void);
	const char	*desc;
};

/*
 * Run @n tests as one TAP program: the plan, a line per test, the runtime
 * and the closing "N passed, N failed" line. Returns the exit status.
 */
static int tap_run(const struct tap_test *tests, int n)
{
	struct timespec t0, t1;
	int i;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	printf("TAP version 13\n1..%d\n", n);
	for (i = 0; i < n; i++)
		run_test(tests[i].fn, tests[i].desc);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	diag("runtime %.3fs", (t1.tv_sec - t0.tv_sec) +
	     (t1.tv_nsec - t0.tv_nsec) / 1e9);
	printf("%d passed, %d failed\n", nr_pass, nr_fail);
	return nr_fail ? 1 : 0;
}

/*
 * The test program's main(): its tests, in order, as { fn, "desc" }
 * entries, run by tap_run().
 */
#define TAP_MAIN(...)							\
int main(void)								\
{									\
	static const struct tap_test tests[] = { __VA_ARGS__ };	\
									\
	return tap_run(tests, sizeof(tests) / sizeof(tests[0]));	\
}

#endif /* _KVB_UNIT_TAP_H */
