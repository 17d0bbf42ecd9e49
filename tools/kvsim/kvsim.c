// SPDX-License-Identifier: GPL-2.0
/*
 * kvsim: replay a trace of requests on a model of a flash device with D
 * dies and a bounded device queue, under FIFO, strict priority classes,
 * kvbatch (the module's policy core, kv-policy.c, compiled from the same
 * source) and an oracle that knows the dies, and show when each batch
 * completes under each of them.
 *
 * The schedulers do the same work: the same requests, on the same dies,
 * with the same service times. kvsim checks that, and that every request
 * is dispatched and completed exactly once, and refuses to report a
 * comparison in which either fails. Only the order differs, and with it
 * the time at which each batch's last request completes.
 *
 * See Documentation/kvsim.rst ("Trace format") for the trace format.
 */
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kvsim-html.h"
#include "kvsim-run.h"

#define KVSIM_EXIT_ERROR	1	/* unreadable or invalid input, I/O */
#define KVSIM_EXIT_USAGE	2
#define KVSIM_EXIT_CHECK	3	/* work or dispatch check failed */

/* The usage line a bad argument prints, after what was wrong. */
static const char kvsim_usage[] =
"usage: kvsim {--trace NAME|FILE | --random N [--seed S]} [OPTION]... | --list | --help\n";

/* --help: the usage in full, then kvsim_help. */
static const char kvsim_synopsis[] =
"usage: kvsim {--trace NAME|FILE | --random N [--seed S]} [--sched LIST]\n"
"             [--dies N] [--queue-depth N] [--chunk SECTORS]\n"
"             [--set TUNABLE=VALUE]... [--timeline] [--tick TIME]\n"
"             [--html FILE] [--dump-trace] | --list | --help\n";

static const char kvsim_help[] =
"\n"
"Replay a trace under FIFO, strict priority (RT > BE > IDLE, FIFO within a\n"
"class), kvbatch's policy core and an oracle (each die picks its next request\n"
"when it frees: a floor for any elevator's order) on a model of a flash\n"
"device, check that every scheduler does the same work, and report per-batch\n"
"completion times.\n"
"\n"
"  --trace NAME|FILE   a built-in trace (see --list) or a trace file\n"
"  --random N          a random trace of N requests (--seed S, default 1)\n"
"  --sched LIST        comma-separated: fifo,prio,kvbatch,oracle (default:\n"
"                      all)\n"
"  --dies N            dies of the device, 1..1024 (default: the trace's,\n"
"                      else 4)\n"
"  --queue-depth N     requests the device holds (default: the trace's,\n"
"                      else one per die)\n"
"  --chunk SECTORS     die stripe for requests given by sector (default:\n"
"                      the trace's, else 128)\n"
"  --set NAME=VALUE    a kvbatch tunable (default: the module's defaults)\n"
"  --timeline          print the tick-by-tick timeline\n"
"  --tick TIME         tick of the timeline (default: every event on a tick,\n"
"                      at most 1000 ticks)\n"
"  --html FILE         write a self-contained HTML page of the timelines\n"
"  --dump-trace        print the trace in the text format and exit\n"
"  --list              list the built-in traces and the tunables\n"
"  -h, --help          print this help\n"
"\n"
"Times take ns, us, ms or s (bare numbers are us). Exit status: 0, 1 on an\n"
"unreadable or invalid trace, 2 on bad arguments, 3 if the schedulers did\n"
"not do the same work or a request was not dispatched exactly once.\n";

static void usage_error(const char *fmt, const char *arg)
{
	fprintf(stderr, "kvsim: ");
	fprintf(stderr, fmt, arg);
	fprintf(stderr, "\n%s", kvsim_usage);
	exit(KVSIM_EXIT_USAGE);
}

/*
 * What getopt_long() found wrong, in one line: @arg is the word it
 * stopped at, @opt its optopt (0 for a long option it does not know).
 */
static void bad_option(const char *arg, int opt)
{
	if (!opt)
		usage_error("unknown option %s", arg);
	if (!strncmp(arg, "--", 2))
		usage_error("%s takes no value", arg);
	fprintf(stderr, "kvsim: unknown option -%c\n%s", opt, kvsim_usage);
	exit(KVSIM_EXIT_USAGE);
}

static u32 parse_count(const char *opt, const char *s, u32 min, u32 max)
{
	unsigned long long v;
	char *end;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || *end || end == s || *s == '-' || v < min || v > max) {
		fprintf(stderr, "kvsim: %s takes a number, %u..%u: '%s'\n%s",
			opt, min, max, s, kvsim_usage);
		exit(KVSIM_EXIT_USAGE);
	}
	return (u32)v;
}

static unsigned int parse_scheds(const char *arg)
{
	char buf[128], *p, *save = NULL;
	unsigned int mask = 0;
	int k;

	if (strlen(arg) >= sizeof(buf))
		usage_error("--sched: '%s' is too long", arg);
	strcpy(buf, arg);
	for (p = strtok_r(buf, ",", &save); p; p = strtok_r(NULL, ",", &save)) {
		for (k = 0; k < KVS_NR_SCHEDS; k++)
			if (!strcmp(p, kvs_sched_names[k]))
				break;
		if (k == KVS_NR_SCHEDS)
			usage_error("--sched: no scheduler '%s' (fifo, prio, "
				    "kvbatch, oracle)", p);
		mask |= 1U << k;
	}
	if (!mask)
		usage_error("--sched: '%s' names no scheduler", arg);
	return mask;
}

static void list_builtins(void)
{
	unsigned int i;
	int k;

	printf("built-in traces (--trace NAME):\n");
	for (i = 0; i < kvsim_nr_builtins; i++)
		printf("  %-10s %s\n", kvsim_builtins[i].name,
		       kvsim_builtins[i].title);
	printf("\nkvbatch tunables (--set NAME=VALUE; module default, range):\n");
	for (k = 0; k < KVB_NR_TUNABLES; k++) {
		const struct kvb_tunable_desc *d = &kvb_tunables[k];

		if (!kvsim_tunable_modelled(k))
			continue;
		printf("  %-20s %6u   %u..%u%s\n", d->name, d->def, d->min,
		       d->max, k == KVB_MAX_INFLIGHT ?
		       "   (0: the device queue depth)" : "");
	}
}

/* ---- the report ------------------------------------------------------- */

static char *us(char *buf, u64 ns)
{
	if (ns == KVS_NO_TIME)
		return strcpy(buf, "-");
	return (char *)kvsim_fmt_us(buf, 32, ns);
}

/* The empty "ahead" column of a summary row, but no trailing blanks. */
static const char *pad(const struct kvsim_result *r, u32 k)
{
	return k + 1 < r->nr_runs ? "         " : "";
}

/* Batches in order of first arrival, then of first appearance. */
static u32 *batch_order(const struct kvsim_result *r)
{
	u32 n = r->t->nr_batches, i, j, *o = malloc(n * sizeof(*o));

	if (!o)
		return NULL;
	for (i = 0; i < n; i++) {
		u32 b = i;

		for (j = i; j > 0 && r->binfo[o[j - 1]].first >
				     r->binfo[b].first; j--)
			o[j] = o[j - 1];
		o[j] = b;
	}
	return o;
}

static void print_header(const struct kvsim_result *r, bool builtin)
{
	const struct kvsim_trace *t = r->t;
	u32 i, by_sector = 0;
	bool first = true;
	int k;

	printf("kvsim: %s (%s%s)\n", t->title[0] ? t->title : t->name,
	       builtin ? "built-in trace " : "trace ", t->name);
	for (i = 0; i < t->nr; i++)
		by_sector += t->rqs[i].die < 0;
	printf("device: %u dies, queue depth %u", r->cfg.dies, r->cfg.qdepth);
	/* The stripe matters only to requests given by sector. */
	if (by_sector)
		printf(", chunk %llu sectors", (unsigned long long)r->cfg.chunk);
	printf("; %u requests in %u batches\n", t->nr, t->nr_batches);
	printf("kvbatch tunables: module defaults");
	for (k = 0; k < KVB_NR_TUNABLES; k++) {
		if (r->tun[k] == kvb_tunables[k].def)
			continue;
		printf("%s%s=%u", first ? " except " : ", ",
		       kvb_tunables[k].name, r->tun[k]);
		first = false;
	}
	printf("\n");
}

static int cmp_u64(const void *a, const void *b)
{
	u64 x = *(const u64 *)a, y = *(const u64 *)b;

	return x < y ? -1 : x > y;
}

/*
 * The 99th percentile of @run's demand batch times (last completion
 * minus first arrival), nearest rank: the time 99% of them stay within.
 * KVS_NO_TIME if a batch did not finish or memory ran out.
 */
static u64 demand_p99(const struct kvsim_result *r,
		      const struct kvsim_run *run, u32 nd)
{
	u64 *v = malloc(nd * sizeof(*v)), p99;
	u32 b, n = 0;

	if (!v)
		return KVS_NO_TIME;
	for (b = 0; b < r->t->nr_batches; b++) {
		if (r->binfo[b].tier != KVB_TIER_DEMAND)
			continue;
		if (run->b[b].done == KVS_NO_TIME) {
			free(v);
			return KVS_NO_TIME;
		}
		v[n++] = run->b[b].done - r->binfo[b].first;
	}
	qsort(v, n, sizeof(*v), cmp_u64);
	p99 = v[(99 * (u64)n + 99) / 100 - 1];
	free(v);
	return p99;
}

static void print_batches(const struct kvsim_result *r)
{
	const struct kvsim_trace *t = r->t;
	char a[32], b[32], c[32];
	u32 *order = batch_order(r), i, k, nd = 0;
	u64 sum[KVS_NR_SCHEDS] = { 0 };

	if (!order)
		return;
	printf("\nbatch completion time (us): when the batch's last request "
	       "completed;\nahead: foreign work on the tail's die while the "
	       "batch waited (us)\n\n");
	printf("%-12s %-8s %5s %8s %8s", "batch", "tier", "reqs", "work",
	       "first");
	for (k = 0; k < r->nr_runs; k++)
		printf(" | %10s %8s", kvs_sched_names[r->run[k].sched],
		       "ahead");
	printf("\n");
	for (i = 0; i < t->nr_batches; i++) {
		u32 bi = order[i];
		const struct kvsim_binfo *in = &r->binfo[bi];

		printf("%-12s %-8s %5u %8s %8s", t->bname[bi],
		       kvb_tier_names[in->tier], in->nr, us(a, in->work),
		       us(b, in->first));
		for (k = 0; k < r->nr_runs; k++) {
			const struct kvsim_bres *br = &r->run[k].b[bi];

			printf(" | %10s %8s", us(c, br->done),
			       br->done == KVS_NO_TIME ? "-" :
			       us(a, br->ahead));
			if (in->tier == KVB_TIER_DEMAND &&
			    br->done != KVS_NO_TIME)
				sum[k] += br->done - in->first;
		}
		if (in->tier == KVB_TIER_DEMAND)
			nd++;
		printf("\n");
	}
	printf("\n");
	if (nd) {
		printf("%-45s", "mean demand batch time (last - first, us)");
		for (k = 0; k < r->nr_runs; k++)
			printf(" | %10s%s", us(a, sum[k] / nd), pad(r, k));
		printf("\n%-45s", "p99 demand batch time (nearest rank, us)");
		for (k = 0; k < r->nr_runs; k++)
			printf(" | %10s%s", us(a, demand_p99(r, &r->run[k], nd)),
			       pad(r, k));
		printf("\n");
	}
	printf("%-45s", "last completion (us)");
	for (k = 0; k < r->nr_runs; k++)
		printf(" | %10s%s", us(a, r->run[k].sim.end), pad(r, k));
	printf("\n%-45s", "total work (us)");
	for (k = 0; k < r->nr_runs; k++)
		printf(" | %10s%s", us(a, r->run[k].work), pad(r, k));
	printf("\n");
	free(order);
}

/* A timeline cell: the batch on the die, '*' if it is its tail. */
static void cell(char *buf, size_t len, const struct kvsim_result *r,
		 const struct kvsim_run *run, int i, int width)
{
	if (i < 0) {
		snprintf(buf, len, ".");
		return;
	}
	snprintf(buf, len, "%.*s%s", width - 1, r->t->bname[run->rqs[i].key],
		 kvsim_is_tail(run, (u32)i) ? "*" : "");
}

static void print_timeline(const struct kvsim_result *r)
{
	const struct kvsim_trace *t = r->t;
	char buf[64], tb[32];
	u32 tick, k, d, i;
	int width = 2;

	for (i = 0; i < t->nr_batches; i++)
		if ((int)strlen(t->bname[i]) + 1 > width)
			width = (int)strlen(t->bname[i]) + 1;
	if (width > 9)
		width = 9;

	printf("\ntimeline: one row per tick of %s us; a cell is the batch in "
	       "service on the die\n('.' idle, '*' the batch's tail "
	       "request); q: requests waiting in the scheduler,\nw: waiting "
	       "in the device behind a busy die\n\n",
	       kvsim_fmt_us(tb, sizeof(tb), r->tick));
	printf("%5s %10s", "tick", "time");
	for (k = 0; k < r->nr_runs; k++) {
		int w = (int)r->cfg.dies * (width + 1) + 8;

		printf(" | %-*s", k + 1 < r->nr_runs ? w : 0,
		       kvs_sched_names[r->run[k].sched]);
	}
	printf("\n%16s", "");
	for (k = 0; k < r->nr_runs; k++) {
		printf(" |");
		for (d = 0; d < r->cfg.dies; d++) {
			snprintf(buf, sizeof(buf), "d%u", d);
			printf(" %-*s", width, buf);
		}
		printf(" %3s %3s", "q", "w");
	}
	printf("\n");

	for (tick = 0; tick < r->ticks; tick++) {
		u64 t0 = (u64)tick * r->tick, t1 = t0 + r->tick;

		printf("%5u %10s", tick, kvsim_fmt_us(tb, sizeof(tb), t0));
		for (k = 0; k < r->nr_runs; k++) {
			const struct kvsim_run *run = &r->run[k];
			u32 q = 0, w = 0;

			printf(" |");
			for (d = 0; d < r->cfg.dies; d++) {
				cell(buf, sizeof(buf), r, run,
				     kvsim_on_die(run, d, t0, t1), width);
				printf(" %-*s", width, buf);
			}
			for (i = 0; i < t->nr; i++) {
				const struct kvs_req *rq = &run->rqs[i];

				if (rq->arrival <= t0 && rq->dispatch > t0)
					q++;
				else if (rq->dispatch <= t0 && rq->start > t0)
					w++;
			}
			printf(" %3u %3u", q, w);
		}
		printf("\n");
	}
}

/* ---- main ------------------------------------------------------------- */

enum {
	OPT_TRACE = 256, OPT_RANDOM, OPT_SEED, OPT_SCHED, OPT_DIES, OPT_QD,
	OPT_CHUNK, OPT_SET, OPT_TIMELINE, OPT_TICK, OPT_HTML, OPT_DUMP,
	OPT_LIST,
};

static const struct option kvsim_opts[] = {
	{ "trace",	 required_argument, NULL, OPT_TRACE },
	{ "random",	 required_argument, NULL, OPT_RANDOM },
	{ "seed",	 required_argument, NULL, OPT_SEED },
	{ "sched",	 required_argument, NULL, OPT_SCHED },
	{ "dies",	 required_argument, NULL, OPT_DIES },
	{ "queue-depth", required_argument, NULL, OPT_QD },
	{ "chunk",	 required_argument, NULL, OPT_CHUNK },
	{ "set",	 required_argument, NULL, OPT_SET },
	{ "timeline",	 no_argument,	    NULL, OPT_TIMELINE },
	{ "tick",	 required_argument, NULL, OPT_TICK },
	{ "html",	 required_argument, NULL, OPT_HTML },
	{ "dump-trace",	 no_argument,	    NULL, OPT_DUMP },
	{ "list",	 no_argument,	    NULL, OPT_LIST },
	{ "help",	 no_argument,	    NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

/* Whether a file can be made or replaced at @path: its directory takes one. */
static bool html_writable(const char *path)
{
	const char *slash = strrchr(path, '/');
	char dir[4096];
	struct stat st;

	if (!stat(path, &st) && S_ISDIR(st.st_mode))
		return false;
	if (!slash)
		return !access(".", W_OK);
	if ((size_t)(slash - path) >= sizeof(dir))
		return false;
	memcpy(dir, path, slash - path);
	dir[slash == path ? 1 : slash - path] = '\0';
	if (slash == path)
		dir[0] = '/';
	return !access(dir, W_OK);
}

int main(int argc, char **argv)
{
	const char *trace = NULL, *html = NULL;
	struct kvsim_opts o = { .scheds = (1U << KVS_NR_SCHEDS) - 1 };
	bool timeline = false, dump = false, list = false, builtin = false;
	bool seeded = false, tick = false;
	u32 nrandom = 0, seed = 1;
	char err[KVSIM_ERR_MAX];
	struct kvsim_result r;
	struct kvsim_trace t;
	unsigned int i, val;
	int c, tun;

	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", kvsim_opts, NULL)) != -1) {
		switch (c) {
		case OPT_TRACE:
			if (trace)
				usage_error("--trace given twice%s", "");
			trace = optarg;
			break;
		case OPT_RANDOM:
			nrandom = parse_count("--random", optarg, 1, 1000000);
			break;
		case OPT_SEED:
			seed = parse_count("--seed", optarg, 0, 0xffffffffU);
			seeded = true;
			break;
		case OPT_SCHED:
			o.scheds = parse_scheds(optarg);
			break;
		case OPT_DIES:
			o.dies = parse_count("--dies", optarg, 1, KVS_MAX_DIES);
			break;
		case OPT_QD:
			o.qdepth = parse_count("--queue-depth", optarg, 1,
					       65536);
			break;
		case OPT_CHUNK:
			o.chunk = parse_count("--chunk", optarg, 1, 1U << 20);
			break;
		case OPT_SET:
			if (kvsim_parse_set(optarg, &tun, &val, err,
					    sizeof(err)))
				usage_error("--set %s", err);
			o.tun[tun] = val;
			o.tun_set[tun] = true;
			break;
		case OPT_TIMELINE:
			timeline = true;
			break;
		case OPT_TICK:
			tick = true;
			if (kvsim_parse_time(optarg, &o.tick) || !o.tick)
				usage_error("--tick takes a time > 0 (e.g. "
					    "10us): '%s'", optarg);
			break;
		case OPT_HTML:
			if (!*optarg)
				usage_error("--html takes a file name%s", "");
			html = optarg;
			break;
		case OPT_DUMP:
			dump = true;
			break;
		case OPT_LIST:
			list = true;
			break;
		case 'h':
			printf("%s%s", kvsim_synopsis, kvsim_help);
			return 0;
		case ':':
			usage_error("%s needs a value", argv[optind - 1]);
			break;
		default:
			bad_option(argv[optind - 1], optopt);
		}
	}
	if (optind < argc)
		usage_error("unexpected argument '%s'", argv[optind]);
	/* Options that would be ignored are refused: a typo shows. */
	if (tick && !timeline)
		usage_error("--tick goes with --timeline%s", "");
	if (list) {
		if (trace || nrandom || timeline || html || dump)
			usage_error("--list takes no trace and writes no "
				    "report%s", "");
		list_builtins();
		return 0;
	}
	if (!!trace == !!nrandom)
		usage_error("give one of --trace or --random%s", "");
	if (seeded && !nrandom)
		usage_error("--seed goes with --random%s", "");
	if (dump && (timeline || html))
		usage_error("--dump-trace writes the trace, no report%s", "");
	/* Written after the run: a place it cannot be written to fails now. */
	if (html && !html_writable(html))
		usage_error("--html: cannot write '%s'", html);

	kvsim_trace_init(&t);
	err[0] = '\0';
	if (nrandom) {
		if (kvsim_random(&t, nrandom, seed, o.dies ? o.dies :
				 KVSIM_DEFAULT_DIES)) {
			fprintf(stderr, "kvsim: out of memory\n");
			return KVSIM_EXIT_ERROR;
		}
	} else {
		for (i = 0; i < kvsim_nr_builtins; i++)
			if (!strcmp(trace, kvsim_builtins[i].name))
				builtin = true;
		if (builtin ? kvsim_load_builtin(&t, trace, err, sizeof(err)) :
		    kvsim_load_file(&t, trace, err, sizeof(err))) {
			fprintf(stderr, "kvsim: %s\n", err);
			kvsim_trace_free(&t);
			return KVSIM_EXIT_ERROR;
		}
	}
	if (dump) {
		kvsim_write_trace(stdout, &t);
		kvsim_trace_free(&t);
		return 0;
	}

	if (kvsim_run_all(&r, &t, &o, err, sizeof(err))) {
		fprintf(stderr, "kvsim: %s\n", err);
		kvsim_result_free(&r);
		kvsim_trace_free(&t);
		return KVSIM_EXIT_ERROR;
	}
	print_header(&r, builtin);
	if (kvsim_check(&r, err, sizeof(err))) {
		fprintf(stderr, "kvsim: CHECK FAILED: %s\n", err);
		kvsim_result_free(&r);
		kvsim_trace_free(&t);
		return KVSIM_EXIT_CHECK;
	}
	print_batches(&r);
	printf("check: every scheduler did the same total work (%s us) and "
	       "dispatched and\ncompleted each of the %u requests exactly "
	       "once\n", us(err, r.trace_work), t.nr);
	if (timeline)
		print_timeline(&r);
	if (html) {
		if (kvsim_write_html(html, &r, err, sizeof(err))) {
			fprintf(stderr, "kvsim: %s\n", err);
			kvsim_result_free(&r);
			kvsim_trace_free(&t);
			return KVSIM_EXIT_ERROR;
		}
		printf("\nwrote %s\n", html);
	}
	kvsim_result_free(&r);
	kvsim_trace_free(&t);
	return 0;
}
