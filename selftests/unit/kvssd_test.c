// SPDX-License-Identifier: GPL-2.0
/*
 * Unit tests of the flash device model (kvssd/kvssd-model.c) that the
 * kvssd driver, kvsim and these tests share: its configuration checks,
 * its service-time draws, and the three properties a queueing device must
 * have. At queue depth 1 a request takes the model's service time; with
 * far more requests outstanding than dies, throughput saturates at dies /
 * service time; and past that knee the mean latency is what Little's law
 * says (outstanding / throughput), the excess being time spent waiting
 * inside the device. Garbage collection takes a die away for an erase
 * after a set number of programs.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kvssd/kvssd-model.h"
#include "tap.h"

static struct kvssd_config base_cfg(u32 dies)
{
	struct kvssd_config c = {
		.channels = dies >= 8 ? 8 : 1,
		.dies_per_channel = dies >= 8 ? dies / 8 : dies,
		.stripe_sectors = 128,		/* 64 KiB */
		.page_sectors = 32,		/* 16 KiB */
		.read_ns = 100 * NSEC_PER_USEC,
		.program_ns = 600 * NSEC_PER_USEC,
		.erase_ns = 3 * NSEC_PER_MSEC,
		.cv_pct = 0,
		.gc_programs = 0,
		.seed = 7,
	};
	return c;
}

static struct kvssd_die dies_mem[KVSSD_MAX_DIES];

static bool new_model(struct kvssd_model *m, const struct kvssd_config *cfg)
{
	return !kvssd_model_init(m, cfg, dies_mem);
}

static bool test_config(void)
{
	struct kvssd_config good = base_cfg(64), c;
	struct kvssd_model m;
	int i;

	EXPECT(!kvssd_config_error(&good), "the default is refused: %s",
	       kvssd_config_error(&good));
	EXPECT(kvssd_nr_dies(&good) == 64, "%u dies", kvssd_nr_dies(&good));
	for (i = 0; i < 12; i++) {
		c = good;
		switch (i) {
		case 0: c.channels = 0; break;
		case 1: c.dies_per_channel = 0; break;
		case 2: c.channels = 33; c.dies_per_channel = 32; break;
		case 3: c.stripe_sectors = 96; break;
		case 4: c.stripe_sectors = 0; break;
		case 5: c.page_sectors = 256; break;	/* above the stripe */
		case 6: c.page_sectors = 24; break;
		case 7: c.read_ns = 0; break;
		case 8: c.program_ns = 2 * NSEC_PER_SEC; break;
		case 9: c.erase_ns = 0; break;
		case 10: c.cv_pct = 101; break;
		case 11: c.stripe_sectors = 1 << 14; c.page_sectors = 1; break;
		}
		EXPECT(kvssd_config_error(&c), "case %d accepted", i);
		EXPECT(kvssd_nr_dies(&c) == 0, "case %d: %u dies", i,
		       kvssd_nr_dies(&c));
		EXPECT(kvssd_model_init(&m, &c, dies_mem) == -1,
		       "case %d: a model was set up", i);
	}
	c = good;
	c.channels = 32;
	c.dies_per_channel = 32;
	EXPECT(kvssd_nr_dies(&c) == KVSSD_MAX_DIES, "1024 dies refused");
	return true;
}

/* Requests on consecutive stripes go to consecutive dies, then wrap. */
static bool test_striping(void)
{
	struct kvssd_config cfg = base_cfg(16);
	struct kvssd_model m;
	u32 die;

	if (!new_model(&m, &cfg))
		return false;
	EXPECT(kvssd_die_of(&m, 0) == 0, "sector 0");
	EXPECT(kvssd_die_of(&m, 127) == 0, "sector 127");
	EXPECT(kvssd_die_of(&m, 128) == 1, "sector 128");
	EXPECT(kvssd_die_of(&m, 16 * 128) == 0, "wraps after 16 stripes");
	kvssd_submit(&m, 0, KVSSD_READ, 5 * 128 + 8, 8, &die);
	EXPECT(die == 5, "die %u", die);
	EXPECT(m.dies[5].queued == 1 && m.dies[5].ops == 1, "counts %u %llu",
	       m.dies[5].queued, (unsigned long long)m.dies[5].ops);
	kvssd_die_done(&m, die);
	EXPECT(m.dies[5].queued == 0, "queued %u", m.dies[5].queued);
	return true;
}

/* Service times: pages, mean and spread of the draws. */
static bool test_service(void)
{
	struct kvssd_config cfg = base_cfg(64);
	struct kvssd_model m;
	static const u32 cvs[] = { 30, 100 };
	unsigned int k;
	int i, n = 200000;

	if (!new_model(&m, &cfg))
		return false;
	EXPECT(kvssd_service(&m, KVSSD_READ, 8) == cfg.read_ns, "4 KiB read");
	EXPECT(kvssd_service(&m, KVSSD_READ, 32) == cfg.read_ns, "one page");
	EXPECT(kvssd_service(&m, KVSSD_READ, 33) == 2 * cfg.read_ns,
	       "a page and a sector");
	EXPECT(kvssd_service(&m, KVSSD_PROGRAM, 128) == 4 * cfg.program_ns,
	       "a stripe of programs");
	EXPECT(kvssd_service(&m, KVSSD_READ, 4096) == 4 * cfg.read_ns,
	       "a request beyond the stripe costs the stripe");

	for (k = 0; k < ARRAY_SIZE(cvs); k++) {
		double sum = 0, sq = 0, mean, sd, lo = 1e30;

		cfg.cv_pct = cvs[k];
		if (!new_model(&m, &cfg))
			return false;
		for (i = 0; i < n; i++) {
			double s = (double)kvssd_service(&m, KVSSD_READ, 8);

			sum += s;
			sq += s * s;
			if (s < lo)
				lo = s;
		}
		mean = sum / n;
		sd = sqrt(sq / n - mean * mean);
		diag("cv %u%%: mean %.0f ns, sd %.0f ns, min %.0f ns", cvs[k],
		     mean, sd, lo);
		EXPECT(fabs(mean / cfg.read_ns - 1) < 0.01, "mean %.0f", mean);
		EXPECT(fabs(sd / (cfg.read_ns * cvs[k] / 100.0) - 1) < 0.03,
		       "sd %.0f", sd);
		EXPECT(lo >= cfg.read_ns * (100 - cvs[k]) / 100.0,
		       "a draw below the fixed part: %.0f", lo);
	}
	return true;
}

/* Min-heap of completion times, for the closed loop below. */
struct ev {
	u64	t;
	u64	submitted;
	u32	die;
};

static void heap_push(struct ev *h, int *n, struct ev e)
{
	int i = (*n)++;

	while (i && h[(i - 1) / 2].t > e.t) {
		h[i] = h[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	h[i] = e;
}

static struct ev heap_pop(struct ev *h, int *n)
{
	struct ev top = h[0], last = h[--(*n)];
	int i = 0, c;

	while ((c = 2 * i + 1) < *n) {
		if (c + 1 < *n && h[c + 1].t < h[c].t)
			c++;
		if (h[c].t >= last.t)
			break;
		h[i] = h[c];
		i = c;
	}
	h[i] = last;
	return top;
}

struct loop_result {
	double	iops;
	double	mean_lat_ns;
	double	max_queued;
};

/*
 * A closed loop of @depth outstanding 4 KiB reads at random sectors: each
 * completion submits the next at once, as fio does at a fixed iodepth.
 * @n completions are counted after the first @n of warm-up.
 */
static struct loop_result closed_loop(struct kvssd_model *m, int depth, int n)
{
	struct ev *h = calloc(depth, sizeof(*h));
	struct loop_result r = { 0 };
	u64 rng = 12345, t0 = 0, now = 0;
	double lat = 0;
	int nh = 0, done = 0, i;
	u32 d, q;

	for (i = 0; i < depth + 2 * n; i++) {
		struct ev e;

		if (i >= depth) {
			e = heap_pop(h, &nh);
			now = e.t;
			kvssd_die_done(m, e.die);
			if (++done == n)
				t0 = now;
			if (done > n)
				lat += (double)(e.t - e.submitted);
			if (done == 2 * n)
				break;
		}
		rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
		e.submitted = now;
		e.t = kvssd_submit(m, now, KVSSD_READ,
				   (rng >> 20) % (1ULL << 30) / 8 * 8, 8,
				   &e.die);
		heap_push(h, &nh, e);
		for (d = 0, q = 0; d < m->nr_dies; d++)
			if (m->dies[d].queued > q)
				q = m->dies[d].queued;
		if (q > r.max_queued)
			r.max_queued = q;
	}
	r.iops = n / ((double)(now - t0) / NSEC_PER_SEC);
	r.mean_lat_ns = lat / n;
	free(h);
	return r;
}

static bool test_qd1(void)
{
	struct kvssd_config cfg = base_cfg(64);
	struct kvssd_model m;
	struct loop_result r;

	if (!new_model(&m, &cfg))
		return false;
	r = closed_loop(&m, 1, 2000);
	diag("QD1: %.1f us mean, %.0f IOPS", r.mean_lat_ns / 1000, r.iops);
	EXPECT(fabs(r.mean_lat_ns - cfg.read_ns) < 1, "mean %.0f ns",
	       r.mean_lat_ns);
	EXPECT(r.max_queued == 1, "a die held %.0f", r.max_queued);
	return true;
}

/*
 * The knee at 16, 64 and 256 dies: well below it the device is not the
 * limit; far past it throughput is dies / service time and latency is
 * Little's law's outstanding / throughput, all of it past the service
 * time spent queued inside the device.
 */
static bool test_saturation(void)
{
	static const u32 nr_dies[] = { 16, 64, 256 };
	unsigned int k;

	for (k = 0; k < ARRAY_SIZE(nr_dies); k++) {
		struct kvssd_config cfg = base_cfg(nr_dies[k]);
		double max = (double)kvssd_max_iops(&cfg, KVSSD_READ);
		struct kvssd_model m;
		struct loop_result lo, hi;
		int depth = 16 * nr_dies[k];

		if (!new_model(&m, &cfg))
			return false;
		EXPECT(max == nr_dies[k] * 10000.0, "max %.0f", max);
		lo = closed_loop(&m, nr_dies[k] / 8, 20000);
		if (!new_model(&m, &cfg))
			return false;
		hi = closed_loop(&m, depth, 50 * depth);
		diag("%u dies: QD %u %.0f IOPS %.0f us; QD %d %.0f IOPS (max %.0f) %.0f us, Little %.0f us",
		     nr_dies[k], nr_dies[k] / 8, lo.iops, lo.mean_lat_ns / 1000,
		     depth, hi.iops, max, hi.mean_lat_ns / 1000,
		     depth / hi.iops * 1e6);
		EXPECT(lo.mean_lat_ns < 1.1 * cfg.read_ns,
		       "below the knee %.0f ns", lo.mean_lat_ns);
		EXPECT(hi.iops <= max * 1.001 && hi.iops > 0.93 * max,
		       "%u dies at QD %d: %.0f IOPS of %.0f", nr_dies[k], depth,
		       hi.iops, max);
		EXPECT(fabs(hi.mean_lat_ns / (depth / hi.iops * 1e9) - 1) < 0.02,
		       "Little's law: %.0f ns against %.0f", hi.mean_lat_ns,
		       depth / hi.iops * 1e9);
		EXPECT(hi.mean_lat_ns > 10 * cfg.read_ns,
		       "no queue inside the device: %.0f ns", hi.mean_lat_ns);
	}
	return true;
}

/* Variance does not move the mean, the knee, or Little's law. */
static bool test_variance(void)
{
	struct kvssd_config cfg = base_cfg(64);
	struct kvssd_model m;
	struct loop_result r;

	cfg.cv_pct = 100;
	if (!new_model(&m, &cfg))
		return false;
	r = closed_loop(&m, 1, 50000);
	EXPECT(fabs(r.mean_lat_ns / cfg.read_ns - 1) < 0.02, "QD1 mean %.0f",
	       r.mean_lat_ns);
	if (!new_model(&m, &cfg))
		return false;
	r = closed_loop(&m, 1024, 100000);
	diag("cv 100%%, 64 dies, QD 1024: %.0f IOPS, %.0f us", r.iops,
	     r.mean_lat_ns / 1000);
	EXPECT(r.iops > 0.9 * kvssd_max_iops(&cfg, KVSSD_READ) &&
	       r.iops < 1.05 * kvssd_max_iops(&cfg, KVSSD_READ),
	       "%.0f IOPS", r.iops);
	EXPECT(fabs(r.mean_lat_ns / (1024 / r.iops * 1e9) - 1) < 0.02,
	       "Little's law: %.0f ns", r.mean_lat_ns);
	return true;
}

/* Every gc_programs programs, the die erases before serving the next. */
static bool test_gc(void)
{
	struct kvssd_config cfg = base_cfg(16);
	struct kvssd_model m;
	u64 t, t_read;
	int i;

	cfg.gc_programs = 4;
	if (!new_model(&m, &cfg))
		return false;
	for (i = 1; i <= 4; i++) {
		t = kvssd_submit(&m, 0, KVSSD_PROGRAM, 0, 8, NULL);
		EXPECT(t == i * cfg.program_ns, "program %d ends at %llu", i,
		       (unsigned long long)t);
	}
	EXPECT(m.dies[0].erases == 1, "%llu erases",
	       (unsigned long long)m.dies[0].erases);
	/* A read behind the fourth program waits for the erase too. */
	t_read = kvssd_submit(&m, 0, KVSSD_READ, 8, 8, NULL);
	EXPECT(t_read == 4 * cfg.program_ns + cfg.erase_ns + cfg.read_ns,
	       "read ends at %llu", (unsigned long long)t_read);
	/* Another die is not affected. */
	t = kvssd_submit(&m, 0, KVSSD_READ, 128, 8, NULL);
	EXPECT(t == cfg.read_ns, "die 1 read ends at %llu",
	       (unsigned long long)t);
	EXPECT(m.dies[0].busy_ns == 4 * cfg.program_ns + cfg.erase_ns +
	       cfg.read_ns, "busy %llu", (unsigned long long)m.dies[0].busy_ns);
	EXPECT(kvssd_max_iops(&cfg, KVSSD_PROGRAM) ==
	       16ULL * NSEC_PER_SEC * 4 / (4 * cfg.program_ns + cfg.erase_ns),
	       "program bound %llu",
	       (unsigned long long)kvssd_max_iops(&cfg, KVSSD_PROGRAM));
	return true;
}

/* The same seed gives the same run; another seed another. */
static bool test_repeatable(void)
{
	struct kvssd_config cfg = base_cfg(64);
	struct kvssd_model m;
	struct loop_result a, b, c;

	cfg.cv_pct = 50;
	if (!new_model(&m, &cfg))
		return false;
	a = closed_loop(&m, 256, 20000);
	if (!new_model(&m, &cfg))
		return false;
	b = closed_loop(&m, 256, 20000);
	cfg.seed = 8;
	if (!new_model(&m, &cfg))
		return false;
	c = closed_loop(&m, 256, 20000);
	EXPECT(a.iops == b.iops && a.mean_lat_ns == b.mean_lat_ns,
	       "%.3f %.3f", a.iops, b.iops);
	EXPECT(a.mean_lat_ns != c.mean_lat_ns, "seed ignored");
	return true;
}

TAP_MAIN(
	{ test_config, "kvssd: bad configurations are refused, good ones accepted" },
	{ test_striping, "kvssd: stripes map to dies in turn; per-die counts" },
	{ test_service, "kvssd: service by pages; draws keep the mean, spread by cv" },
	{ test_qd1, "kvssd: at QD1 a read takes the service time" },
	{ test_saturation, "kvssd: the knee at 16, 64, 256 dies: saturation, Little's law" },
	{ test_variance, "kvssd: cv 100%: the same mean, knee and Little's law" },
	{ test_gc, "kvssd: an erase every gc_programs programs holds its die" },
	{ test_repeatable, "kvssd: a seed repeats a run" },
)
