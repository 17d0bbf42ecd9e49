// SPDX-License-Identifier: GPL-2.0
/*
 * Unit tests of the kvbatch depth controller (kvp_depth_* in kv-policy.c),
 * the automatic max_inflight, driven against modelled devices.
 *
 * The device model: @units parallel units, each serving one request at a
 * time, with a service time of mean @svc_ns and a coefficient of variation
 * of @cv_pct percent (a fixed part plus an exponential part). A request
 * dispatched to the device either takes any free unit (null_blk, or an
 * SSD that stripes perfectly) or joins the FIFO of one unit picked at
 * random (an SSD whose logical blocks hash onto dies, so that some dies
 * have a queue while others idle). The host keeps the requests beyond the
 * limit, as kvbatch does, and dispatches when a completion makes room.
 *
 * Each case is run twice: once with the controller setting the limit and
 * once with the limit at the host's ceiling (no limit). The expectations
 * come from what the controller promises, not from recorded figures:
 * throughput within 10% of the unlimited run (the limit never costs
 * throughput), a limit that does not collapse across idle gaps or a
 * clock read out of order, and, where depth past the device's parallelism
 * buys nothing, a limit near that parallelism, so that the rest of the
 * queue stays in the scheduler, where its order applies.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "kv-rand.h"
#include "kv-policy.h"
#include "tap.h"

#define US	1000ULL
#define MS	1000000ULL
#define SEC	1000000000ULL

#define MAX_UNITS	512
#define NO_TIME		(~0ULL)

struct dev_model {
	u32	units;
	bool	random_unit;	/* FIFO per unit, picked at random */
	u64	svc_ns;		/* mean service time */
	u32	cv_pct;		/* coefficient of variation, percent */
};

struct load_model {
	u32	outstanding;	/* closed loop: requests kept submitted */
	u32	burst;		/* > 0: bursts of this many, then a gap */
	u64	gap_ns;
	u64	duration_ns;
	u64	warmup_ns;	/* not counted in the throughput */
	/*
	 * The host's CPU, when it is the bottleneck (a deep device on a busy
	 * or slow host): each dispatch costs host_ns of one CPU, exponential
	 * (noisy), and kick_ns more when a hold had to end first (a queue
	 * run from a work item, a context switch).
	 */
	u64	host_ns;
	u64	kick_ns;
	/*
	 * The host's queue counts in the service time kvbatch measures
	 * (dispatch to completion): on a guest whose CPU is the bottleneck
	 * completions are handled late, more so the more are in flight, so
	 * the measured time grows with depth while the throughput does not.
	 * Shared-FIFO devices only.
	 */
	bool	host_in_service;
	/* Pulses of @pulse requests every @pulse_ns, on top of the rest. */
	u32	pulse;
	u64	pulse_ns;
};

struct run_result {
	u64	done;		/* completions after the warm-up */
	u64	busy_ns;	/* time with requests pending, after it */
	u32	limit_end;
	u32	limit_min;	/* lowest limit after the warm-up */
	u32	limit_max;
	u64	rate;		/* completions per second of busy time */
};

/* Deterministic, so every run of the test is the same. */
static u64 rng_state;

static u64 svc_time(const struct dev_model *m)
{
	double c = m->cv_pct / 100.0;
	double e = -__builtin_log(1.0 - kv_rand_unit(&rng_state));

	return (u64)(m->svc_ns * ((1.0 - c) + c * e)) + 1;
}

/* A ring of dispatch times: a unit's FIFO, or the device's shared one. */
struct ring {
	u64	*t;
	u32	head, n, cap;
};

static void ring_push(struct ring *r, u64 v)
{
	r->t[(r->head + r->n++) % r->cap] = v;
}

static u64 ring_pop(struct ring *r)
{
	u64 v = r->t[r->head];

	r->head = (r->head + 1) % r->cap;
	r->n--;
	return v;
}

struct sim {
	const struct dev_model *m;
	struct ring	q[MAX_UNITS];	/* random_unit: per unit */
	struct ring	shared;		/* otherwise */
	struct ring	disp;		/* shared's dispatch times */
	u64		done_at[MAX_UNITS];	/* NO_TIME: idle */
	u64		start_of[MAX_UNITS];	/* arrival time in service */
	u64		disp_of[MAX_UNITS];	/* dispatch time (shared) */
	/*
	 * The busy units, a binary min-heap by done_at (ties: the lower
	 * unit, as a scan in unit order would find): the next completion
	 * in O(log units). A scan of every unit per event would take most
	 * of make unit's time on the 256-unit devices.
	 */
	u32		busy[MAX_UNITS];
	u32		nbusy;
	u32		inflight;
};

/* Does unit @a complete before unit @b? */
static bool unit_before(const struct sim *s, u32 a, u32 b)
{
	return s->done_at[a] < s->done_at[b] ||
	       (s->done_at[a] == s->done_at[b] && a < b);
}

static void busy_swap(struct sim *s, u32 i, u32 j)
{
	u32 t = s->busy[i];

	s->busy[i] = s->busy[j];
	s->busy[j] = t;
}

/* Unit @u has just started a request (done_at set). */
static void busy_push(struct sim *s, u32 u)
{
	u32 i = s->nbusy++;

	s->busy[i] = u;
	while (i && unit_before(s, s->busy[i], s->busy[(i - 1) / 2])) {
		busy_swap(s, i, (i - 1) / 2);
		i = (i - 1) / 2;
	}
}

/* Take the unit that completes first off the heap. */
static void busy_pop(struct sim *s)
{
	u32 i = 0, c;

	s->busy[0] = s->busy[--s->nbusy];
	for (;;) {
		c = 2 * i + 1;
		if (c >= s->nbusy)
			break;
		if (c + 1 < s->nbusy &&
		    unit_before(s, s->busy[c + 1], s->busy[c]))
			c++;
		if (!unit_before(s, s->busy[c], s->busy[i]))
			break;
		busy_swap(s, i, c);
		i = c;
	}
}

/*
 * Start the next request a unit may serve, once it has arrived (a request
 * the host's CPU is still dispatching arrives later).
 */
static void unit_start(struct sim *s, u32 u, u64 now)
{
	struct ring *r = s->m->random_unit ? &s->q[u] : &s->shared;
	u64 arr;

	if (s->done_at[u] != NO_TIME || !r->n)
		return;
	arr = ring_pop(r);
	if (!s->m->random_unit)
		s->disp_of[u] = ring_pop(&s->disp);
	s->start_of[u] = arr;
	s->done_at[u] = (arr > now ? arr : now) + svc_time(s->m);
	busy_push(s, u);
}

/* Dispatch a request that reaches the device at @arr (>= @now). */
static void dev_submit(struct sim *s, u64 now, u64 arr)
{
	u32 u;

	s->inflight++;
	if (s->m->random_unit) {
		u = kv_rand64(&rng_state) % s->m->units;
		ring_push(&s->q[u], arr);
		unit_start(s, u, now);
		return;
	}
	ring_push(&s->shared, arr);
	ring_push(&s->disp, now);
	for (u = 0; u < s->m->units; u++) {
		if (s->done_at[u] == NO_TIME) {
			unit_start(s, u, now);
			break;
		}
	}
}

/*
 * Run @load on @m. With @fixed non-zero the limit is @fixed; otherwise the
 * controller sets it, starting from kvp_depth_init(@ceil).
 */
static int run(const struct dev_model *m, const struct load_model *load,
	       u32 ceil, u32 fixed, struct run_result *res)
{
	static struct sim s;
	struct kvp_depth d;
	u64 now = 1 * SEC, end = now + load->duration_ns;
	u64 warm = now + load->warmup_ns;
	u64 next_burst = now, busy_from = 0, cpu_free = 0, next_pulse = now;
	u32 host = 0, left_in_burst = 0, u;
	bool kicked = false;
	u32 cap = ceil + 1;

	memset(&s, 0, sizeof(s));
	memset(res, 0, sizeof(*res));
	s.m = m;
	for (u = 0; u < m->units; u++) {
		s.done_at[u] = NO_TIME;
		s.q[u].cap = cap;
		s.q[u].t = calloc(cap, sizeof(u64));
	}
	s.shared.cap = cap;
	s.shared.t = calloc(cap, sizeof(u64));
	s.disp.cap = cap;
	s.disp.t = calloc(cap, sizeof(u64));
	kvp_depth_init(&d, ceil);
	res->limit_min = ~0U;

	for (;;) {
		u32 limit = fixed ? fixed : d.limit;
		u64 t = NO_TIME;
		u32 first = 0;

		/* Arrivals. */
		if (load->burst) {
			if (!host && !s.inflight && !left_in_burst &&
			    now >= next_burst && now < end) {
				host = load->burst;
				left_in_burst = load->burst;
			}
		} else if (now < end) {
			while (host + s.inflight < load->outstanding)
				host++;
		}
		while (load->pulse && now >= next_pulse && now < end) {
			host += load->pulse;
			next_pulse += load->pulse_ns;
		}
		if ((host || s.inflight) && !busy_from)
			busy_from = now;

		/* Dispatch up to the limit, each through the host's CPU. */
		while (host && s.inflight < limit) {
			u64 arr = now;

			if (load->host_ns) {
				u64 cost = (u64)(load->host_ns *
					-__builtin_log(1.0 - kv_rand_unit(&rng_state)));

				if (kicked)
					cost += load->kick_ns;
				kicked = false;
				cpu_free = (cpu_free > now ? cpu_free : now) +
					   cost;
				arr = cpu_free;
			}
			host--;
			dev_submit(&s, now, arr);
			kvp_depth_dispatched(&d, s.inflight, now);
		}

		/* Next event: the earliest completion, or the next burst. */
		if (s.nbusy) {
			first = s.busy[0];
			t = s.done_at[first];
		}
		if (t == NO_TIME) {
			if (busy_from && now > warm)
				res->busy_ns += now - (busy_from > warm ?
						       busy_from : warm);
			busy_from = 0;
			if (!load->burst || now >= end)
				break;
			next_burst = now + load->gap_ns;
			left_in_burst = 0;
			now = next_burst;
			continue;
		}
		now = t;

		/* Complete the request on unit @first. */
		{
			bool bound = host && s.inflight >= limit;
			u64 lat = now - (load->host_in_service ?
					 s.disp_of[first] : s.start_of[first]);

			kicked = bound;

			busy_pop(&s);
			s.done_at[first] = NO_TIME;
			s.inflight--;
			if (left_in_burst)
				left_in_burst--;
			if (!fixed)
				kvp_depth_completed(&d, now, lat, s.inflight,
						    bound);
			/*
			 * Only @first is free: with a shared FIFO, a request
			 * waits only while every unit is busy.
			 */
			unit_start(&s, first, now);
		}
		if (now > warm) {
			res->done++;
			if (d.limit < res->limit_min)
				res->limit_min = d.limit;
			if (d.limit > res->limit_max)
				res->limit_max = d.limit;
		}
		if (now >= end && !load->burst && !s.inflight)
			break;
		if (now >= end && load->burst && !s.inflight && !host)
			break;
	}
	if (busy_from && now > warm)
		res->busy_ns += now - (busy_from > warm ? busy_from : warm);
	res->limit_end = fixed ? fixed : d.limit;
	res->rate = res->busy_ns ? res->done * SEC / res->busy_ns : 0;
	for (u = 0; u < m->units; u++)
		free(s.q[u].t);
	free(s.shared.t);
	free(s.disp.t);
	return 0;
}

static const char *dev_name(const struct dev_model *m, char *buf, size_t n)
{
	snprintf(buf, n, "%u units%s, %llu us, cv %u%%", m->units,
		 m->random_unit ? " (random)" : "",
		 (unsigned long long)(m->svc_ns / US), m->cv_pct);
	return buf;
}

/*
 * Run @l on @m with the controller and with no limit, from the same random
 * state; report both, and expect the controller's throughput to be within
 * 90% of the unlimited one (over busy time).
 */
static void run_pair(const struct dev_model *m, const struct load_model *l,
		     u32 ceil, u64 seed, const char *what,
		     struct run_result *a, struct run_result *b)
{
	char name[96];

	rng_state = seed;
	run(m, l, ceil, 0, a);
	rng_state = seed;
	run(m, l, ceil, ceil, b);
	dev_name(m, name, sizeof(name));
	diag("%s, %s: %llu/s at limit %u..%u (end %u), unlimited %llu/s",
	     what, name, (unsigned long long)a->rate, a->limit_min,
	     a->limit_max, a->limit_end, (unsigned long long)b->rate);
	EXPECT(a->rate * 10 >= b->rate * 9,
	       "%s, %s: %llu/s is under 90%% of the unlimited %llu/s",
	       what, name, (unsigned long long)a->rate,
	       (unsigned long long)b->rate);
}

/*
 * Steady closed-loop load, several times the device's parallelism: the
 * controller must keep at least 90% of the unlimited throughput, and keep
 * the queue in the scheduler (a limit well under the offered load).
 */
static bool test_steady(void)
{
	static const u32 units[] = { 4, 32, 256 };
	static const u32 cvs[] = { 0, 50, 100 };
	u32 i, j, r;
	char name[96];

	for (r = 0; r < 2; r++) {
		for (i = 0; i < 3; i++) {
			for (j = 0; j < 3; j++) {
				struct dev_model m = {
					.units = units[i], .random_unit = r,
					.svc_ns = 1 * MS, .cv_pct = cvs[j],
				};
				struct load_model l = {
					.outstanding = 8 * units[i] + 64,
					/* Windows of a slow device are long. */
					.duration_ns = (units[i] < 32 ? 20 : 4) * SEC,
					.warmup_ns = (units[i] < 32 ? 5 : 1) * SEC,
				};
				u32 ceil = 2 * l.outstanding;
				struct run_result a, b;

				run_pair(&m, &l, ceil,
					 0x9e3779b97f4a7c15ULL + i * 7 + j,
					 "steady", &a, &b);
				dev_name(&m, name, sizeof(name));
				EXPECT(a.limit_end * 10 >= units[i] * 9,
				       "%s: limit %u is well below the device's %u units",
				       name, a.limit_end, units[i]);
				/*
				 * Past its parallelism a device with free
				 * units gains nothing from depth: the rest
				 * belongs in the scheduler. A device whose
				 * blocks hash onto dies keeps gaining (a few
				 * percent per step), so there only the
				 * throughput is held to account.
				 */
				EXPECT(r || a.limit_end <= 2 * units[i] + 16,
				       "%s: limit %u is past twice the device's %u units",
				       name, a.limit_end, units[i]);
			}
		}
	}
	return true;
}

/*
 * Bursts of recalls with idle gaps (fio --thinktime): the throughput over
 * busy time must stay within 90% of the unlimited one, and the gaps must
 * not collapse the limit (trials may take it somewhat below the device's
 * parallelism where that costs no throughput, not to a handful).
 */
static bool test_bursty(void)
{
	static const u32 units[] = { 32, 256 };
	u32 i, j;
	char name[96];

	for (i = 0; i < 2; i++) {
		for (j = 0; j < 2; j++) {
			struct dev_model m = {
				.units = units[i], .svc_ns = 1 * MS,
				.cv_pct = j ? 100 : 0,
			};
			struct load_model l = {
				.burst = 2 * units[i], .gap_ns = 60 * MS,
				.duration_ns = 20 * SEC, .warmup_ns = 5 * SEC,
			};
			u32 ceil = 1024;
			struct run_result a, b;

			run_pair(&m, &l, ceil, 0x2545f4914f6cdd1dULL + i,
				 "bursty", &a, &b);
			dev_name(&m, name, sizeof(name));
			EXPECT(a.limit_min * 4 >= units[i],
			       "%s: the limit fell to %u, under a quarter of the device's %u units",
			       name, a.limit_min, units[i]);
		}
	}
	return true;
}

/*
 * A deep device (256 units of 1 ms, CV 50%) behind a host whose CPU is the
 * bottleneck, 256 requests outstanding, each dispatch costing 14 us of
 * host CPU and @kick more after a hold. The controller must keep what
 * the device did at full depth (within 3%); when @hold_free, it must not
 * hold requests back at all.
 */
static void check_host(const char *what, bool in_service, bool hold_free,
		       u64 seed)
{
	static const u64 kicks[] = { 0, 2 * US, 6 * US };
	struct dev_model m = { .units = 256, .svc_ns = 1 * MS, .cv_pct = 50 };
	u32 i;

	for (i = 0; i < 3; i++) {
		struct load_model l = {
			.outstanding = 256, .duration_ns = 8 * SEC,
			.warmup_ns = 2 * SEC, .host_ns = 14 * US,
			.kick_ns = kicks[i], .host_in_service = in_service,
		};
		unsigned long long kick = kicks[i] / US;
		struct run_result a, b;

		rng_state = seed + i;
		run(&m, &l, 768, 0, &a);
		rng_state = seed + i;
		run(&m, &l, 768, 768, &b);
		diag("%s, kick %llu us: %llu/s at limit %u..%u (end %u), unlimited %llu/s",
		     what, kick, (unsigned long long)a.rate, a.limit_min,
		     a.limit_max, a.limit_end, (unsigned long long)b.rate);
		EXPECT(a.rate * 100 >= b.rate * 97,
		       "%s, kick %llu us: %llu/s is under 97%% of the unlimited %llu/s",
		       what, kick, (unsigned long long)a.rate,
		       (unsigned long long)b.rate);
		EXPECT(!hold_free || a.limit_end >= l.outstanding,
		       "%s, kick %llu us: limit %u holds back part of a load of %u",
		       what, kick, a.limit_end, l.outstanding);
	}
}

/*
 * The host's CPU queue outside the measured service time (TCG guests; a
 * busy server): throughput is the CPU's at any depth above the knee, a
 * little less once the limit binds (each hold costs a queue run), and
 * noisy. The controller must keep what the device did at full depth
 * (within 3%), and since the device's service time does not depend on
 * depth here, it has no evidence that depth hurts: it must not hold
 * requests back at all (the limit ends at or above the load). Trimming on
 * throughput alone would take it to about 95 for a load of 256.
 */
static bool test_host_bound(void)
{
	check_host("host-bound", false, true, 0x51afd7ed558ccd1dULL);
	return true;
}

/*
 * The same host, but its queue is inside the measured service time (a
 * TCG guest handling completions late): a shallower limit does shorten
 * the service time, by what it took off the depth, and at a limit's
 * worth of requests in flight Little's law reads the same throughput.
 * Only the device's own completions show what each hold's queue run
 * costs. The controller may trim here, but it must keep what the device
 * did at full depth (within 3%): on a deep null_blk in such a guest, a
 * limit trimmed to a few dozen for fio's 256 reads can cost a fifth of
 * the IOPS of max_inflight 256.
 */
static bool test_host_in_service(void)
{
	check_host("host in service", true, false, 0x2b9e4c1f03d7a655ULL);
	return true;
}

/*
 * A limit full all the window on a device with free units. A shallower
 * limit can be kept while the host is slow (a busy host's own delays make
 * the service time fall with the depth, so that a trial can halve the
 * limit at unchanged IOPS), and now the host is fast again: every
 * completion finds work held back, the service time is twice the unloaded
 * one (the host's own delays), and the throughput is the limit's. The
 * next trial must be a deeper one, and the limit must grow back without
 * a shallower trial on the way (each costs while it runs: from such a
 * limit, a shallower trial can cost a fifth to half of the throughput).
 */
static bool test_full_limit_grows(void)
{
	struct kvp_depth d;
	u64 t = 10 * SEC, lat = 1 * MS;
	u32 i, inflight, downs = 0, first = KVP_TRIAL_NONE, trial;

	kvp_depth_init(&d, 256);
	/* The host fast, the load light: the unloaded service time, 1 ms. */
	kvp_depth_dispatched(&d, 1, t);
	for (i = 0; i < 64 * KVP_DEPTH_WINDOW_RQS; i++) {
		u64 windows = d.windows;

		inflight = d.limit < 40 ? d.limit : 40;
		t += lat / inflight;
		kvp_depth_dispatched(&d, inflight, t);
		kvp_depth_completed(&d, t, lat, inflight - 1, false);
		/* Ends with a window, none in a trial: the next starts afresh. */
		if (i >= 16 * KVP_DEPTH_WINDOW_RQS && d.windows != windows &&
		    d.trial == KVP_TRIAL_NONE)
			break;
	}
	/*
	 * Where the slow host's kept trials left it: 32 in flight, each for
	 * 3.2 ms (10 000 a second).
	 */
	d.trial = KVP_TRIAL_NONE;
	d.limit = 32;
	d.ref_rate = 10000;
	d.ref_mean = 3200 * US;
	d.wait_up = 0;
	d.wait_down = 0;
	d.backoff_up = 0;
	d.backoff_down = 0;
	lat = 2 * MS;
	for (i = 0; i < 64 * KVP_DEPTH_WINDOW_RQS && d.limit < 128; i++) {
		trial = d.trial;
		inflight = d.limit;
		t += lat / inflight;
		kvp_depth_dispatched(&d, inflight, t);
		kvp_depth_completed(&d, t, lat, inflight - 1, true);
		if (trial == KVP_TRIAL_NONE && d.trial != KVP_TRIAL_NONE) {
			if (first == KVP_TRIAL_NONE)
				first = d.trial;
			downs += d.trial == KVP_TRIAL_DOWN;
		}
	}
	diag("full limit from 32: %u after %u completions, %u shallower trials",
	     d.limit, i, downs);
	EXPECT(first == KVP_TRIAL_UP, "the first trial was not a deeper one (%u)",
	       first);
	EXPECT(!downs, "%u shallower trials from a full limit", downs);
	EXPECT(d.limit >= 128, "the limit grew only to %u", d.limit);
	return true;
}

/*
 * One window's worth of steady completions, then a completion stamped a
 * little before the window started (another CPU read the clock first):
 * the limit must not move on it.
 */
static bool test_clock_order(void)
{
	struct kvp_depth d;
	u64 t = 10 * SEC;
	u32 i, before;

	kvp_depth_init(&d, 256);
	kvp_depth_dispatched(&d, 1, t);
	for (i = 0; i < 64; i++)
		kvp_depth_completed(&d, t + i * US, 100 * US, 1, false);
	before = d.limit;
	kvp_depth_dispatched(&d, 1, t + 64 * US);
	kvp_depth_completed(&d, t - 5 * US, 100 * US, 0, false);
	EXPECT(d.limit >= before,
	       "a completion read before the window start moved the limit %u -> %u",
	       before, d.limit);
	return true;
}

/*
 * A deep device that grew the limit, then ten seconds idle, then a single
 * request: the idle time is not device time and must not shrink it.
 */
static bool test_idle_gap(void)
{
	struct dev_model m = { .units = 256, .svc_ns = 1 * MS };
	struct load_model l = {
		.outstanding = 1024, .duration_ns = 2 * SEC,
		.warmup_ns = 1 * SEC,
	};
	struct run_result a;
	struct kvp_depth d;
	u64 t = 100 * SEC;
	u32 i;

	rng_state = 42;
	run(&m, &l, 2048, 0, &a);
	EXPECT(a.limit_end >= 192, "steady run ended at limit %u",
	       a.limit_end);

	/* The same state, by hand: grow, then idle, then one request. */
	kvp_depth_init(&d, 2048);
	for (i = 0; i < 4000; i++) {
		u32 n = d.limit;

		kvp_depth_dispatched(&d, 1, t);
		kvp_depth_completed(&d, t + 1 * MS, 1 * MS, n - 1, true);
		t += 1 * MS / (n < 256 ? n : 256);
	}
	a.limit_end = d.limit;
	kvp_depth_completed(&d, t, 1 * MS, 0, false);
	t += 10 * SEC;
	kvp_depth_dispatched(&d, 1, t);
	kvp_depth_completed(&d, t + 1 * MS, 1 * MS, 0, false);
	EXPECT(d.limit >= a.limit_end,
	       "ten idle seconds took the limit from %u to %u",
	       a.limit_end, d.limit);
	return true;
}

/* The limit stays within [KVP_DEPTH_MIN, ceiling] whatever happens. */
static bool test_bounds(void)
{
	struct kvp_depth d;
	u64 t = SEC;
	u32 i;

	kvp_depth_init(&d, 8);
	EXPECT(d.limit <= 8, "start limit %u over the ceiling 8", d.limit);
	for (i = 0; i < 100000; i++) {
		kvp_depth_dispatched(&d, 1 + i % 8, t);
		kvp_depth_completed(&d, t + 5 * US, i % 3 ? 5 * US : 900 * US,
				    i % 8, i & 1);
		t += 5 * US;
		EXPECT(d.limit >= KVP_DEPTH_MIN && d.limit <= 8,
		       "limit %u outside [%u, 8]", d.limit, KVP_DEPTH_MIN);
	}
	kvp_depth_set_max(&d, 2);
	EXPECT(d.limit == KVP_DEPTH_MIN,
	       "ceiling 2: limit %u, expected the minimum %u", d.limit,
	       KVP_DEPTH_MIN);

	/* A raised ceiling (nr_requests grew): a limit at the old one follows. */
	kvp_depth_init(&d, 8);
	kvp_depth_set_max(&d, 64);
	EXPECT(d.limit == 64, "limit %u at the old ceiling 8 did not follow it to 64",
	       d.limit);
	d.limit = 20;
	kvp_depth_set_max(&d, 128);
	EXPECT(d.limit == 20, "a trimmed limit moved from 20 to %u with the ceiling",
	       d.limit);
	return true;
}

/*
 * A device throttled to a rate (QEMU's iops cap, a cloud volume's token
 * bucket): one request at a time, 333 us each, 3000/s at any depth, so
 * every request beyond the first waits inside the device, where no order
 * applies. A steady few readers plus pulses of recall requests keep the
 * mean depth well under the peaks, so the limit seldom binds where it
 * starts. A shallower limit costs no throughput and shortens the service
 * time: the controller must find that and keep the queue in the
 * scheduler (on the capped QEMU NVMe of make bench, a limit left near the
 * ceiling lets prefetch go out as it would under none).
 */
static bool test_throttled(void)
{
	static const u32 cvs[] = { 0, 50 };
	u32 j;

	for (j = 0; j < 2; j++) {
		struct dev_model m = {
			.units = 1, .svc_ns = 333 * US, .cv_pct = cvs[j],
		};
		struct load_model l = {
			.outstanding = 12, .pulse = 32, .pulse_ns = 20 * MS,
			.duration_ns = 30 * SEC, .warmup_ns = 10 * SEC,
		};
		struct run_result a, b;
		char name[96];

		run_pair(&m, &l, 512, 0x6a09e667f3bcc909ULL + j, "throttled",
			 &a, &b);
		dev_name(&m, name, sizeof(name));
		EXPECT(a.limit_end <= 8,
		       "%s: limit %u leaves the queue inside a device that serves one at a time",
		       name, a.limit_end);
	}
	return true;
}

/*
 * A shallower trial that fails costs while it lasts: the device does less
 * and the work it holds back waits in the scheduler, the lowest tiers
 * longest. On a saturated recall device (256 units, 8 ms, every tag in
 * use), a trial begun under a light load that runs its four windows once
 * the load comes holds the device at a limit of 32 for hundreds of ms,
 * enough to triple the recall tail. A trial that holds work back without
 * shortening the service time must end within a quarter window of its
 * own completions, not after its four windows; one whose service time
 * reads a little shorter (the host's own delays shrink with the load),
 * within a window.
 */
/*
 * From a fresh controller with a ceiling of 256: a light load (64 in
 * flight of 8 ms each, nothing held) until a shallower trial starts, or
 * 100000 completions. Returns the time reached.
 */
static u64 light_until_trial(struct kvp_depth *d, u64 lat)
{
	u64 t = 1 * SEC;
	u32 i, inflight = 64;

	kvp_depth_init(d, 256);
	kvp_depth_dispatched(d, 1, t);
	for (i = 0; i < 100000 && d->trial != KVP_TRIAL_DOWN; i++) {
		t += lat / inflight;
		kvp_depth_dispatched(d, inflight, t);
		kvp_depth_completed(d, t, lat, inflight - 1, false);
	}
	return t;
}

static u32 failing_trial(u32 pct, u32 *from, u32 *to)
{
	struct kvp_depth d;
	u64 t, lat = 8 * MS;
	u32 n, inflight;

	t = light_until_trial(&d, lat);
	*from = d.trial_from;
	*to = d.limit;
	if (d.trial != KVP_TRIAL_DOWN)
		return 0;
	/*
	 * The load rises past the trial's limit: every completion finds it
	 * full with work waiting, and the service time is @pct percent of
	 * what it was.
	 */
	lat = lat * pct / 100;
	for (n = 0; n < 8 * KVP_DEPTH_WINDOW_RQS && d.trial; n++) {
		inflight = d.limit;
		t += lat / inflight;
		kvp_depth_dispatched(&d, inflight, t);
		kvp_depth_completed(&d, t, lat, inflight - 1, true);
	}
	if (d.trial || d.limit != *from)
		return ~0U;
	return n;
}

static bool test_trial_fails_fast(void)
{
	u32 n, from, to;

	n = failing_trial(100, &from, &to);
	diag("same service time: trial %u -> %u ended after %u completions",
	     from, to, n);
	EXPECT(n, "no shallower trial under a light load (limit %u)", to);
	EXPECT(n <= from + KVP_DEPTH_WINDOW_RQS / 4,
	       "the failing trial lasted %u completions, past %u settling and a quarter window",
	       n, from);

	n = failing_trial(99, &from, &to);
	diag("service time 1%% shorter: trial %u -> %u ended after %u completions",
	     from, to, n);
	EXPECT(n, "no shallower trial under a light load (limit %u)", to);
	EXPECT(n <= from + KVP_DEPTH_WINDOW_RQS,
	       "the failing trial lasted %u completions, past %u settling and a window",
	       n, from);
	return true;
}

/*
 * A shallower trial whose limit held work back for only a tenth of its
 * window: the rest of the time the load was under the limit, or the limit
 * was not in force (kvbatch applies it only while demand is about). The
 * window's throughput and service time are then the load's, and the load
 * varies; here it happens to read a little faster, the service time an
 * eighth shorter. That is no evidence that the shallower limit keeps the
 * throughput when it binds, and the trial must be undone. Kept, such a
 * trial can halve the limit under a deep recall load at half the
 * throughput the deeper limit had shown a few windows before.
 */
static bool test_trial_needs_binding(void)
{
	struct kvp_depth d;
	u64 t, lat = 8 * MS;
	u32 n, from, to, inflight = 64;

	t = light_until_trial(&d, lat);
	from = d.trial_from;
	to = d.limit;
	EXPECT(d.trial == KVP_TRIAL_DOWN,
	       "no shallower trial under a light load (limit %u)", d.limit);
	lat = lat * 7 / 8;
	for (n = 0; n < 8 * KVP_DEPTH_WINDOW_RQS && d.trial; n++) {
		t += lat / inflight;
		kvp_depth_dispatched(&d, inflight, t);
		kvp_depth_completed(&d, t, lat, inflight - 1, n % 10 == 0);
	}
	diag("trial %u -> %u bound for 1 in 10: limit %u after %u completions",
	     from, to, d.limit, n);
	EXPECT(!d.trial, "the trial did not end");
	EXPECT(d.limit == from,
	       "a trial that held back 1 in 10 was kept: limit %u, from %u",
	       d.limit, from);
	return true;
}

/*
 * nr_requests changes while a shallower trial runs (kvp_depth_set_max()
 * from the depth_updated hook), and then the trial fails: the limit goes
 * back to where the trial started, but never above the new ceiling, and
 * a start at the old ceiling follows the ceiling as a limit there would.
 */
static bool test_ceiling_in_trial(void)
{
	static const u32 ceilings[] = { 128, 64, 512 };
	u32 j;

	for (j = 0; j < 3; j++) {
		struct kvp_depth d;
		u64 t, lat = 8 * MS;
		u32 i, from, inflight;

		t = light_until_trial(&d, lat);
		EXPECT(d.trial == KVP_TRIAL_DOWN,
		       "no shallower trial under a light load (limit %u)",
		       d.limit);
		from = d.trial_from;
		kvp_depth_set_max(&d, ceilings[j]);
		/* The load rises past the trial's limit; no gain from it. */
		for (i = 0; i < 8 * KVP_DEPTH_WINDOW_RQS && d.trial; i++) {
			inflight = d.limit;
			t += lat / inflight;
			kvp_depth_dispatched(&d, inflight, t);
			kvp_depth_completed(&d, t, lat, inflight - 1, true);
		}
		diag("trial from %u, ceiling now %u: limit %u after the trial",
		     from, d.max, d.limit);
		EXPECT(!d.trial, "the trial did not end");
		EXPECT(d.limit <= d.max, "limit %u above the new ceiling %u",
		       d.limit, d.max);
		EXPECT(d.limit == d.max,
		       "a trial from the old ceiling %u ended at %u, not at the new ceiling %u",
		       from, d.limit, d.max);
	}
	return true;
}

TAP_MAIN(
	{ test_steady, "depth: steady load keeps throughput and the queue" },
	{ test_bursty, "depth: bursts with idle gaps keep throughput" },
	{ test_host_bound, "depth: a host-bound device keeps its throughput" },
	{ test_host_in_service, "depth: a host queue inside the service time keeps throughput" },
	{ test_full_limit_grows, "depth: a full limit on free units grows back" },
	{ test_throttled,
	  "depth: a rate-throttled device keeps the queue in the scheduler" },
	{ test_trial_needs_binding,
	  "depth: a shallower trial that barely binds is undone" },
	{ test_trial_fails_fast,
	  "depth: a failing shallower trial ends early" },
	{ test_clock_order, "depth: a clock read out of order" },
	{ test_idle_gap, "depth: idle time does not shrink the limit" },
	{ test_bounds, "depth: the limit stays within its bounds" },
	{ test_ceiling_in_trial,
	  "depth: a failed trial goes back within a ceiling changed under it" }
)
