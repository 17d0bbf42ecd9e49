/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kvbatch tracepoints: tracepoint:kvbatch:* in bpftrace, events/kvbatch/ in
 * tracefs. Every event starts with the device, printed as major,minor like
 * the block layer's events. Disabled tracepoints cost a patched-out branch.
 */
#undef TRACE_SYSTEM
#define TRACE_SYSTEM KVB_MODNAME

#if !defined(_KV_TRACE_H) || defined(TRACE_HEADER_MULTI_READ)
#define _KV_TRACE_H

#include <linux/tracepoint.h>

#include "kv-defs.h"

/*
 * Tiers and reasons are recorded as their names (kvb_tier_names[] and
 * kvb_reason_names[]), so that a new tier or reason needs no change here
 * and bpftrace, perf and the text output all read the same string. The
 * field is zero-padded: bpftrace keys a map by all of its bytes, and the
 * ring buffer would otherwise show an older event's bytes after the NUL.
 */
#define kvb_trace_name(dst, names, i)	strscpy_pad(dst, names[i], KVB_NAME_LEN)

/* A batch opened: the first request of a key with nothing pending. */
TRACE_EVENT(kvbatch_batch_open,
	    TP_PROTO(dev_t dev, u64 key, int tier, u32 seq),
	    TP_ARGS(dev, key, tier, seq),
	    TP_STRUCT__entry(__field(dev_t, dev)
			     __field(u64, key)
			     __array(char, tier, KVB_NAME_LEN)
			     __field(u32, seq)),
	    TP_fast_assign(__entry->dev = dev;
			   __entry->key = key;
			   kvb_trace_name(__entry->tier, kvb_tier_names, tier);
			   __entry->seq = seq;),
	    TP_printk("%d,%d key=%#llx tier=%s seq=%u",
		      MAJOR(__entry->dev), MINOR(__entry->dev), __entry->key,
		      __entry->tier, __entry->seq)
);

/* A batch closed: its last request completed (after batch_window_us). */
TRACE_EVENT(kvbatch_batch_close,
	    TP_PROTO(dev_t dev, u64 key, int tier, u32 seq, u32 nr_rqs,
		     u64 bytes, u64 duration_ns),
	    TP_ARGS(dev, key, tier, seq, nr_rqs, bytes, duration_ns),
	    TP_STRUCT__entry(__field(dev_t, dev)
			     __field(u64, key)
			     __array(char, tier, KVB_NAME_LEN)
			     __field(u32, seq)
			     __field(u32, nr_rqs)
			     __field(u64, bytes)
			     __field(u64, duration_ns)),
	    TP_fast_assign(__entry->dev = dev;
			   __entry->key = key;
			   kvb_trace_name(__entry->tier, kvb_tier_names, tier);
			   __entry->seq = seq;
			   __entry->nr_rqs = nr_rqs;
			   __entry->bytes = bytes;
			   __entry->duration_ns = duration_ns;),
	    TP_printk("%d,%d key=%#llx tier=%s seq=%u requests=%u bytes=%llu duration_us=%llu",
		      MAJOR(__entry->dev), MINOR(__entry->dev), __entry->key,
		      __entry->tier, __entry->seq, __entry->nr_rqs,
		      __entry->bytes, __entry->duration_ns / 1000)
);

/*
 * A request chosen by the policy and handed to the driver; pending is
 * what its batch still has queued or in flight after this one.
 */
TRACE_EVENT(kvbatch_dispatch,
	    TP_PROTO(dev_t dev, sector_t sector, u32 bytes, u64 key, int tier,
		     u32 seq, int reason, u32 pending),
	    TP_ARGS(dev, sector, bytes, key, tier, seq, reason, pending),
	    TP_STRUCT__entry(__field(dev_t, dev)
			     __field(sector_t, sector)
			     __field(u32, bytes)
			     __field(u64, key)
			     __array(char, tier, KVB_NAME_LEN)
			     __field(u32, seq)
			     __array(char, reason, KVB_NAME_LEN)
			     __field(u32, pending)),
	    TP_fast_assign(__entry->dev = dev;
			   __entry->sector = sector;
			   __entry->bytes = bytes;
			   __entry->key = key;
			   kvb_trace_name(__entry->tier, kvb_tier_names, tier);
			   __entry->seq = seq;
			   kvb_trace_name(__entry->reason, kvb_reason_names,
					  reason);
			   __entry->pending = pending;),
	    TP_printk("%d,%d sector=%llu bytes=%u key=%#llx tier=%s seq=%u reason=%s pending=%u",
		      MAJOR(__entry->dev), MINOR(__entry->dev),
		      (unsigned long long)__entry->sector, __entry->bytes,
		      __entry->key, __entry->tier, __entry->seq,
		      __entry->reason, __entry->pending)
);

/* A write entered the deferred write queue; deferred counts it. */
TRACE_EVENT(kvbatch_write_defer,
	    TP_PROTO(dev_t dev, sector_t sector, u32 bytes, u32 deferred),
	    TP_ARGS(dev, sector, bytes, deferred),
	    TP_STRUCT__entry(__field(dev_t, dev)
			     __field(sector_t, sector)
			     __field(u32, bytes)
			     __field(u32, deferred)),
	    TP_fast_assign(__entry->dev = dev;
			   __entry->sector = sector;
			   __entry->bytes = bytes;
			   __entry->deferred = deferred;),
	    TP_printk("%d,%d sector=%llu bytes=%u deferred=%u",
		      MAJOR(__entry->dev), MINOR(__entry->dev),
		      (unsigned long long)__entry->sector, __entry->bytes,
		      __entry->deferred)
);

/* A burst of deferred writes was released. */
TRACE_EVENT(kvbatch_write_release,
	    TP_PROTO(dev_t dev, u32 burst, u32 deferred, int reason),
	    TP_ARGS(dev, burst, deferred, reason),
	    TP_STRUCT__entry(__field(dev_t, dev)
			     __field(u32, burst)
			     __field(u32, deferred)
			     __array(char, reason, KVB_NAME_LEN)),
	    TP_fast_assign(__entry->dev = dev;
			   __entry->burst = burst;
			   __entry->deferred = deferred;
			   kvb_trace_name(__entry->reason, kvb_reason_names,
					  reason);),
	    TP_printk("%d,%d burst=%u deferred=%u reason=%s",
		      MAJOR(__entry->dev), MINOR(__entry->dev), __entry->burst,
		      __entry->deferred, __entry->reason)
);

/* The automatic max_inflight changed. */
TRACE_EVENT(kvbatch_depth,
	    TP_PROTO(dev_t dev, u32 old_limit, u32 new_limit, u64 service_ns),
	    TP_ARGS(dev, old_limit, new_limit, service_ns),
	    TP_STRUCT__entry(__field(dev_t, dev)
			     __field(u32, old_limit)
			     __field(u32, new_limit)
			     __field(u64, service_ns)),
	    TP_fast_assign(__entry->dev = dev;
			   __entry->old_limit = old_limit;
			   __entry->new_limit = new_limit;
			   __entry->service_ns = service_ns;),
	    TP_printk("%d,%d max_inflight %u -> %u service_us=%llu",
		      MAJOR(__entry->dev), MINOR(__entry->dev), __entry->old_limit,
		      __entry->new_limit, __entry->service_ns / 1000)
);

#endif /* _KV_TRACE_H */

#undef TRACE_INCLUDE_PATH
#define TRACE_INCLUDE_PATH .
#undef TRACE_INCLUDE_FILE
#define TRACE_INCLUDE_FILE kv-trace
#include <trace/define_trace.h>
