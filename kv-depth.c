// SPDX-License-Identifier: GPL-2.0
/*
 * kvbatch depth controller: how many scheduled requests may be in the
 * device at once when the max_inflight tunable is 0.
 *
 * Why a limit at all. An SSD accepts far more commands than its dies can
 * serve and queues the rest per die, first come first served. A recall's
 * read that lands behind that queue waits for it whatever order kvbatch
 * chose, so kvbatch's order is worth what the limit keeps out of the
 * device. Too low a limit leaves dies idle and costs throughput.
 *
 * Why not a latency target. With requests spread over dies by address,
 * some dies queue while others idle: holding 97% of the throughput takes
 * a device latency of 10 to 30 times its unloaded value, depending on how
 * much the service time varies. A fixed target (TCP Vegas' expected rate,
 * Swift's target delay, a BBR gain) is right for one variance only, and
 * reading slower service (writes, GC) as congestion, it collapses.
 *
 * What it does instead. Each die is a FIFO server fed at random, so the
 * Pollaczek-Khinchine formula for a single queue relates the latency to
 * the die's utilisation u:
 *
 *	r = latency / unloaded latency = 1 + k u / (1 - u),
 *	k = (1 + cv2) / 2, cv2 the squared CV of the service time.
 *
 * A window of completions gives r, hence u, and with the throughput X the
 * number of dies, D = X base / u: BBR's rate times minimum latency,
 * corrected for dies that were idle. In flight, D dies at utilisation u
 * hold D u r(u) requests. The load's own depth C would run them at u_c, a
 * root of that quadratic; the limit is the depth at a share of u_c, the
 * shallowest that keeps that share of the throughput: 97.5% unless the
 * auto_keep_permille tunable says otherwise, since only the user can
 * weigh the other work's throughput against the recalls' time (the dies'
 * queues that throughput needs are where a recall waits). C is the number
 * of requests outstanding (in flight and queued) as the load's completions
 * see it, the most over KVP_DEPTH_SPAN windows, at most the ceiling: a
 * mean over completions rather than over time, so idle gaps do not lower
 * it, and rather than the peak, which a closed-loop load with recall
 * bursts on top reaches only during the bursts, where a limit set above
 * its usual depth would never bind. The formula reads
 * throughput from latency well enough that throughput trials at other
 * depths, which take thousands of completions to resolve a few percent,
 * are not needed.
 *
 * Where nothing queues inside the device (null_blk, a RAM disk), r stays
 * near 1, no die count is inferred, and the limit stays at the ceiling;
 * nor does one bind whose ceiling leaves the dies less than one request
 * queued each.
 *
 * The unloaded latency and its variance come from a probe: the limit
 * drops to KVP_DEPTH_PROBE, engaged or not, for KVP_DEPTH_PROBE_RQS
 * completions, at start, after every KVP_DEPTH_PROBE_EVERY of busy time
 * (and at least 100 probes' time, so probing costs at most 1% of it), and
 * at once when the dies inferred move by a quarter over KVP_DEPTH_SPAN
 * windows (the service changed: GC began or ended); each only under a
 * load at least the probe's depth that shows a queue somewhere, and given
 * up if the load goes away.
 * The die count is the upper quartile of that span's windows that saw a
 * queue: a GC pause or a burst gap does not pull the limit down, nor does
 * one window whose latency happened to be short push it up (a window's
 * count goes as 1 / (r - 1), so near r = 1 a little noise moves it far).
 *
 * Reads and writes (programs, erases), small and large, differ several
 * times in service time, and a load's mix moves; kvbatch's own order
 * fills a probe's few slots with demand reads and keeps writes, and
 * smaller foreign reads, out of it. So the unloaded time and its variance
 * are kept per class of request, by operation and size; a window's r is
 * its latency over its completions' unloaded work, each at its class's
 * time, and k is the mix's. A class no probe measured is inferred under
 * load (kvp_depth_infer()).
 *
 * One case the formula cannot see: a device whose throughput does not
 * grow with depth at all (one busy unit, or capped by rate, as a
 * throttled virtual disk), where latency grows with depth as it would
 * with dies far from saturation. The probe tells: if its depth already
 * gave that share of the mean rate seen deeper, the limit is held
 * at the probe's depth. After each later probe the rate is measured
 * deeper again, but a window at a time at twice the depth before, up to
 * the formula's limit, and back to the hold at the first window whose
 * rate the probe's depth already gave: a jump straight to the formula's
 * limit would fill the device's queue for a window after every probe,
 * and one window's noisy rate would often keep it there.
 *
 * A window counts only requests dispatched after the last real change of
 * the limit: those admitted under the old one say nothing about the new.
 *
 * All of it is integer arithmetic: Q16 fractions, the die count in Q8.
 */
#ifdef __KERNEL__
#include <linux/bits.h>
#include <linux/kernel.h>
#include <linux/math.h>
#include <linux/math64.h>
#include <linux/minmax.h>
#include <linux/string.h>
#include <linux/time64.h>
#else
#include "kv-user.h"
#endif

#include "kv-depth.h"

#define Q16			BIT_ULL(16)
#define KVP_DEPTH_WINDOW_MIN	64U
#define KVP_DEPTH_PROBE		4U
#define KVP_DEPTH_PROBE_RQS	128U
/* A probe measures a class from this many of its completions. */
#define KVP_DEPTH_PROBE_CL	16U
/* The dies over a span: its windows' upper quartile, in sixteenths. */
#define KVP_DEPTH_DIES_Q	12U
#define KVP_DEPTH_PROBE_EVERY	(5ULL * NSEC_PER_SEC)
/* Below this r the device queued nothing: no die count is inferred. */
#define KVP_DEPTH_R_QUEUE	(Q16 + Q16 / 4)
/* A ceiling whose r is below this leaves the dies without a queue. */
#define KVP_DEPTH_R_CEIL	(2 * Q16)

void kvp_depth_init(struct kvp_depth *d, u32 max)
{
	memset(d, 0, sizeof(*d));
	d->max = max ? max : 1;
	/* Start deep: too high a limit costs order, too low throughput. */
	d->limit = d->max;
	d->pk = d->max;
	d->probe_every = KVP_DEPTH_PROBE_EVERY;
	kvp_depth_set_keep(d, KVP_DEPTH_KEEP);
}

void kvp_depth_set_keep(struct kvp_depth *d, u32 permille)
{
	/* Rounded; at most 1000 << 16, which 32 bits hold. */
	d->keep = (min(permille, 1000U) * 65536 + 500) / 1000;
}

void kvp_depth_set_max(struct kvp_depth *d, u32 max)
{
	u32 old = d->max;

	d->max = max ? max : 1;
	/* A limit at the old ceiling found nothing to hold back: it follows. */
	if (d->limit == old || d->limit > d->max)
		WRITE_ONCE(d->limit, d->probing ? min(d->limit, d->max) :
			   d->max);
	if (d->saved == old || d->saved > d->max)
		d->saved = d->max;
	if (d->pk == old || d->pk > d->max)
		d->pk = d->max;
}

/* The dies over the span, Q8; 0 if no window saw a queue. */
static u32 kvp_depth_span_dies(const struct kvp_depth *d)
{
	u32 v[KVP_DEPTH_SPAN], i, j, n = 0, x;

	for (i = 0; i < KVP_DEPTH_SPAN; i++) {
		x = d->dies[i];
		if (!x)
			continue;
		/* Insertion sort: sixteen entries. */
		for (j = n++; j && v[j - 1] > x; j--)
			v[j] = v[j - 1];
		v[j] = x;
	}
	return n ? v[(n - 1) * KVP_DEPTH_DIES_Q / 16] : 0;
}

u32 kvp_depth_dies(const struct kvp_depth *d)
{
	return kvp_depth_span_dies(d) >> 8;
}

static void kvp_depth_tick(struct kvp_depth *d, u32 inflight, u64 now)
{
	/* Completions applied late may carry an earlier time. */
	if (now > d->last_ns) {
		if (d->cur) {
			d->busy_ns += now - d->last_ns;
			d->busy_since_probe += now - d->last_ns;
		}
		d->last_ns = now;
	}
	d->cur = inflight;
}

static void kvp_depth_reset(struct kvp_depth *d)
{
	d->n = 0;
	d->lat_min = 0;
	d->busy_ns = 0;
	d->lat_ns = 0;
	memset(d->n_cl, 0, sizeof(d->n_cl));
	memset(d->lat_cl, 0, sizeof(d->lat_cl));
	memset(d->lat2, 0, sizeof(d->lat2));
}

static bool kvp_depth_known(const struct kvp_depth *d)
{
	return d->base_ns[d->main];
}

/* The next window counts only what @limit admits. */
static void kvp_depth_set(struct kvp_depth *d, u32 limit, u64 now)
{
	WRITE_ONCE(d->limit, limit);
	d->from_ns = now;
	d->changes++;
	kvp_depth_reset(d);
}

void kvp_depth_dispatched(struct kvp_depth *d, u32 inflight, u64 now)
{
	kvp_depth_tick(d, inflight, now);
}

/* r(u) = 1 + k u / (1 - u), all Q16; u < 1. */
static u64 kvp_depth_r(u64 k, u64 u)
{
	return Q16 + div64_u64(k * u, Q16 - u);
}

/*
 * A probe's window is complete: each class's unloaded mean and variance.
 * A class it saw too little of keeps what an earlier probe measured, or
 * is inferred under load (kvp_depth_infer()); after a change of service,
 * only the latter.
 */
static void kvp_depth_probed(struct kvp_depth *d, u64 now)
{
	u64 cv2_sum = 0;
	u32 cl, nr = 0, least = 0;

	/* The class seen most is measured, whatever its count. */
	for (cl = 0; cl < KVP_DEPTH_CLASSES; cl++)
		least = max(least, d->n_cl[cl]);
	least = min(least, KVP_DEPTH_PROBE_CL);
	for (cl = 0; cl < KVP_DEPTH_CLASSES; cl++) {
		u32 n = d->n_cl[cl];
		u64 mean, m64, cv2 = 0, *base = &d->base_ns[cl];

		if (n < least) {
			if (d->fresh) {
				*base = 0;
				d->est_ns[cl] = 0;
			}
			continue;
		}
		mean = div64_u64(d->lat_cl[cl], n);
		m64 = div64_u64(d->lat_cl[cl] >> 6, n);
		if (m64)
			cv2 = mul_u64_u64_div_u64(div64_u64(d->lat2[cl], n),
						  Q16, m64 * m64);
		cv2 = clamp_t(u64, cv2, Q16, 17 * Q16) - Q16;
		if (*base && !d->fresh && mean < 2 * *base &&
		    *base < 2 * mean) {
			/* Half each: a probe's hundred-odd samples are noisy. */
			*base = (*base + mean) / 2;
			d->cv2[cl] = (d->cv2[cl] + (u32)cv2) / 2;
		} else {
			*base = mean;
			d->cv2[cl] = cv2;
		}
		d->est_ns[cl] = 0;
		cv2_sum += (u64)n * d->cv2[cl];
		nr += n;
		if (n > d->n_cl[d->main] || !d->base_ns[d->main])
			d->main = cl;
	}
	d->cv2_all = div64_u64(cv2_sum, max(nr, 1U));
	d->fresh = false;
	WRITE_ONCE(d->probing, false);
	d->busy_since_probe = 0;
	/* Completions applied late may carry a time before the start. */
	d->probe_every = KVP_DEPTH_PROBE_EVERY;
	if (now > d->probe_start)
		d->probe_every = max(d->probe_every,
				     100 * (now - d->probe_start));
	d->ref_dies = 0;
	d->sum_dies = 0;
	d->nr_sum = 0;
	d->probe_rate = div64_u64((u64)d->n * NSEC_PER_SEC, max(d->busy_ns, 1ULL));
	memset(d->rates, 0, sizeof(d->rates));
	/*
	 * Held at the probe's depth (kvp_depth_window()): measure the loaded
	 * rate again, one step deeper.
	 */
	if (d->held)
		kvp_depth_set(d, min(2 * KVP_DEPTH_PROBE, d->max), now);
	else
		kvp_depth_set(d, d->saved > KVP_DEPTH_PROBE ? d->saved : d->pk,
			      now);
}

/*
 * Held at the probe's depth and measuring deeper: stay there while this
 * window's @rate is no more than the probe's gave, else double the depth,
 * up to the formula's limit, where the hold ends. One window decides each
 * step, so the rare noisy one costs a step, not a window at the formula's
 * depth.
 */
static u32 kvp_depth_step(struct kvp_depth *d, u64 rate)
{
	if (d->limit <= KVP_DEPTH_PROBE)
		return d->limit;
	if (d->probe_rate * Q16 >= d->keep * rate)
		return min(KVP_DEPTH_PROBE, d->max);
	if (2 * d->limit < d->pk)
		return 2 * d->limit;
	d->held = false;
	return d->pk;
}

/*
 * The service changed if the dies inferred over a span of windows, each
 * seeing a queue, move by more than a quarter from the first such span
 * after the last probe: probe again now. A window without a queue starts
 * the span again, so that latency noise around the threshold on a device
 * without a queue inside does not add up to a span.
 */
static void kvp_depth_watch(struct kvp_depth *d, u64 dies)
{
	u64 mean;

	d->sum_dies += dies;
	if (++d->nr_sum < KVP_DEPTH_SPAN)
		return;
	mean = d->sum_dies / KVP_DEPTH_SPAN;
	d->sum_dies = 0;
	d->nr_sum = 0;
	if (!d->ref_dies) {
		d->ref_dies = mean;
	} else if (4 * mean < 3 * d->ref_dies || 3 * mean > 4 * d->ref_dies) {
		d->busy_since_probe = d->probe_every;
		d->fresh = true;
	}
}

/*
 * The unloaded time of a class @cl the probes did not measure (writes, or
 * smaller reads, that kvbatch kept out of the probe), from this window:
 * its requests share the dies' FIFOs with the measured classes and wait
 * as long as they do, @wait_ns on average, so its service time is the
 * rest of its mean latency. A filter of an eighth smooths it over
 * windows. 0: not known yet.
 */
static u64 kvp_depth_infer(struct kvp_depth *d, u32 cl, u64 wait_ns,
			   bool beside)
{
	u64 lat = div64_u64(d->lat_cl[cl], d->n_cl[cl]);
	u64 e, lo = (lat >> 6) + 1, hi = lat, *est = &d->est_ns[cl];
	u32 c, size = cl % KVP_DEPTH_SIZES;

	/*
	 * Where the wait is not alike, the rest is wrong: too short for a
	 * class the device or the host favours, too long for one that waits
	 * on two dies' queues (a request across a stripe). But no request is
	 * served faster than a measured smaller one of its operation, nor
	 * slower than that one's time per size (at most twice its bucket's
	 * factor: the smaller bucket may hold requests half its top size).
	 */
	for (c = cl - size; c < cl; c++) {
		if (!d->base_ns[c])
			continue;
		lo = max(lo, d->base_ns[c]);
		if (size < KVP_DEPTH_SIZES - 1)
			hi = min(hi, d->base_ns[c] << (cl - c + 1));
	}
	lo = min(lo, hi);
	/* Without a measured class beside it, the wait is not known. */
	if (beside) {
		e = clamp_t(u64, lat > wait_ns ? lat - wait_ns : 0, lo, hi);
		*est = *est ? *est - *est / 8 + e / 8 : e;
	}
	return *est;
}

/*
 * The window's unloaded work: its completions, each at its class's
 * unloaded time, in ns (@work); and the second moment of that service
 * time over its squared mean, 1 + cv2 of the mix (@m2, Q16), an inferred
 * class taking the probes' pooled variance. False if the window has a
 * class neither measured nor inferred yet.
 */
static bool kvp_depth_work(struct kvp_depth *d, u64 *work, u64 *m2)
{
	u64 m[KVP_DEPTH_CLASSES], lat = 0, wait = 0, mean, q, cv;
	u32 cl, n = 0;

	/* The measured classes' mean wait in the device. */
	*work = 0;
	for (cl = 0; cl < KVP_DEPTH_CLASSES; cl++) {
		if (!d->base_ns[cl] || !d->n_cl[cl])
			continue;
		n += d->n_cl[cl];
		lat += d->lat_cl[cl];
		*work += d->n_cl[cl] * d->base_ns[cl];
	}
	if (n && lat > *work)
		wait = div64_u64(lat - *work, n);
	for (cl = 0; cl < KVP_DEPTH_CLASSES; cl++) {
		m[cl] = d->base_ns[cl];
		if (!d->n_cl[cl] || m[cl])
			continue;
		m[cl] = kvp_depth_infer(d, cl, wait, n != 0);
		if (!m[cl])
			return false;
		*work += d->n_cl[cl] * m[cl];
	}
	mean = div64_u64(*work, d->n);
	if (!mean)
		return false;
	*m2 = 0;
	for (cl = 0; cl < KVP_DEPTH_CLASSES; cl++) {
		if (!d->n_cl[cl])
			continue;
		q = min(div64_u64(m[cl] << 16, mean), 64 * Q16);
		cv = d->base_ns[cl] ? d->cv2[cl] : d->cv2_all;
		*m2 += mul_u64_u64_div_u64((u64)d->n_cl[cl] * q, q,
					   (u64)d->n << 16) * (Q16 + cv) >> 16;
	}
	*m2 = clamp_t(u64, *m2, Q16, 17 * Q16);
	return true;
}

/* A window is complete: the limit that keeps its share of the throughput. */
static bool kvp_depth_window(struct kvp_depth *d, u64 now)
{
	u64 rate = div64_u64((u64)d->n * NSEC_PER_SEC, d->busy_ns);
	u64 k, r, u, work, m2, dies = 0, c, a, disc, uc, ut, limit;
	u64 rate_sum = 0;
	u32 i, ceiling = 0, nr_rates = 0;

	if (!kvp_depth_work(d, &work, &m2)) {
		/* No probe measured what this load does: probe it. */
		d->busy_since_probe = d->probe_every;
		kvp_depth_reset(d);
		return false;
	}
	k = m2 / 2;
	if (d->limit > KVP_DEPTH_PROBE) {
		d->rates[d->rslot] = rate;
		d->rslot = (d->rslot + 1) % KVP_DEPTH_SPAN;
	}
	r = min(mul_u64_u64_div_u64(d->lat_ns, Q16, work), 4096 * Q16);
	if (r > KVP_DEPTH_R_QUEUE) {
		u = div64_u64((r - Q16) << 16, r - Q16 + k);
		/* Busy dies, work over busy time (Q16), over u: Q8. */
		dies = div64_u64(mul_u64_u64_div_u64(work, Q16,
						     d->busy_ns) << 8, u);
		dies = clamp_t(u64, dies, 1, U32_MAX);
		kvp_depth_watch(d, dies);
	} else {
		d->sum_dies = 0;
		d->nr_sum = 0;
	}
	d->dies[d->slot] = dies;
	d->outs[d->slot] = d->out_n ?
		div64_u64(d->out_sum + d->out_n - 1, d->out_n) : 0;
	d->slot = (d->slot + 1) % KVP_DEPTH_SPAN;
	d->out_sum = 0;
	d->out_n = 0;
	kvp_depth_reset(d);

	dies = kvp_depth_span_dies(d);
	for (i = 0; i < KVP_DEPTH_SPAN; i++) {
		ceiling = max(ceiling, d->outs[i]);
		if (d->rates[i]) {
			rate_sum += d->rates[i];
			nr_rates++;
		}
	}
	if (!dies && !d->held)
		return false;	/* no queue seen: keep the limit */
	ceiling = min(ceiling, d->max);

	/*
	 * u_c: C = D u r(u) is (k - 1) u^2 + (1 + c) u - c = 0 with
	 * c = C / D; its root in [0, 1) as 2c / (1 + c + sqrt(disc)), which
	 * holds for k < 1 too. Past c = 4096 it is 1 to within Q16.
	 */
	limit = d->limit;
	if (dies) {
		c = min(div64_u64((u64)ceiling << 24, dies), 4096 * Q16);
		a = Q16 + c;
		disc = a * a + 4 * (k * c) - 4 * (c << 16);
		uc = min(div64_u64((2 * c) << 16, a + int_sqrt64(disc)),
			 Q16 - 1);
		if (kvp_depth_r(k, uc) < KVP_DEPTH_R_CEIL) {
			limit = d->max;
		} else {
			ut = (d->keep * uc) >> 16;
			limit = ((dies * ut >> 16) * kvp_depth_r(k, ut) >> 24) +
				1;
			limit = clamp_t(u64, limit, 1, d->max);
		}
		d->pk = limit;
	}
	/*
	 * The probe's depth already gave the share of the rate seen deeper
	 * since: more depth buys no throughput there (one busy unit, a
	 * device capped by rate), whatever the formula says. Hold it at the
	 * probe's depth; each probe measures deeper again, in steps. The
	 * mean over the windows, not their most: the most of several noisy
	 * rates sits above the rate they share.
	 */
	if (d->held) {
		limit = kvp_depth_step(d, rate);
	} else if (d->probe_rate && nr_rates &&
		   d->probe_rate * Q16 * nr_rates >=
		   d->keep * rate_sum) {
		limit = min(KVP_DEPTH_PROBE, d->max);
		d->held = true;
	}
	if (limit == d->limit)
		return false;
	/* Small moves keep the window: its requests fit either limit. */
	if (limit * 16 > d->limit * 15 && limit * 16 < d->limit * 17) {
		WRITE_ONCE(d->limit, limit);
		return true;
	}
	kvp_depth_set(d, limit, now);
	return true;
}

bool kvp_depth_completed(struct kvp_depth *d, u64 now, u64 lat_ns, u32 cl,
			 u32 inflight, u32 queued)
{
	u64 units;

	kvp_depth_tick(d, inflight, now);
	/* Outstanding as this completion saw it, itself included. */
	d->out_sum += inflight + queued + 1;
	d->out_n++;
	/*
	 * The load went away: a probe left standing would hold the next
	 * burst at its depth. The next load probes again.
	 */
	if (d->probing && !inflight && !queued) {
		WRITE_ONCE(d->probing, false);
		kvp_depth_set(d, d->saved, now);
		return true;
	}
	if (!lat_ns)
		return false;
	/*
	 * Admitted under an older limit: the window starts after it. One
	 * dispatched in the same nanosecond as the change may have been
	 * admitted before it.
	 */
	if (lat_ns > now || now - lat_ns <= d->from_ns) {
		kvp_depth_reset(d);
		return false;
	}
	d->n++;
	d->lat_ns += lat_ns;
	d->n_cl[cl]++;
	d->lat_cl[cl] += lat_ns;
	if (d->probing) {
		units = min(lat_ns >> 6, 1ULL << 24);
		d->lat2[cl] += units * units;
		if (d->n < KVP_DEPTH_PROBE_RQS)
			return false;
		kvp_depth_probed(d, now);
		return true;
	}
	d->lat_min = d->lat_min ? min(d->lat_min, lat_ns) : lat_ns;
	if (d->n < max(KVP_DEPTH_WINDOW_MIN, d->limit) || !d->busy_ns)
		return false;
	d->windows++;
	/*
	 * Probe when due, under a load that fills the probe's depth, and
	 * only if the window shows a queue somewhere: its mean latency half
	 * again its shortest. Where every request is served at once (a
	 * device of free units, fixed service time) nothing is probed, and
	 * nothing is ever held.
	 */
	if ((!kvp_depth_known(d) || d->busy_since_probe >= d->probe_every) &&
	    inflight + queued >= KVP_DEPTH_PROBE &&
	    2 * d->lat_ns > 3 * d->lat_min * d->n) {
		WRITE_ONCE(d->probing, true);
		d->probes++;
		d->probe_start = now;
		d->saved = d->limit;
		kvp_depth_set(d, min(KVP_DEPTH_PROBE, d->max), now);
		return true;
	}
	if (!kvp_depth_known(d)) {
		kvp_depth_reset(d);
		return false;
	}
	return kvp_depth_window(d, now);
}
