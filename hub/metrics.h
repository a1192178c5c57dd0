/*
 * metrics.h — the hub's Prometheus counters (lock-free atomics) and their
 * text rendering for GET /metrics.
 */
#ifndef HUB_METRICS_H
#define HUB_METRICS_H

#include <stdatomic.h>

#include "buf.h"

typedef struct hub_metrics {
	atomic_long requests_total;
	atomic_long responses_2xx, responses_4xx, responses_5xx;
	atomic_long uploads_total, uploads_rejected_total;
	atomic_long upload_bytes_total, upload_rows_total;
	atomic_long queries_total;
	atomic_long query_ns_total;      /* summed query latency */
	atomic_long ch_insert_ns_total;  /* summed ClickHouse insert latency */
	atomic_long ch_errors_total;
	atomic_long objstore_puts_total, objstore_errors_total;
} hub_metrics;

/* Append the Prometheus text exposition; ch_up and ch_transitions come from
 * the store. */
int hub_metrics_render(const hub_metrics *m, int ch_up, long ch_transitions, wt_buf *out);

#endif
