/*
 * metrics.c — Prometheus text rendering of hub_metrics (through common/prom.c).
 */
#include "metrics.h"
#include "prom.h"

#define C(name, help, v) wt_prom_counter(out, name, help, (uint64_t)(v))

int hub_metrics_render(const hub_metrics *m, int ch_up, long ch_transitions, wt_buf *out)
{
	wt_prom_gauge(out, "wt_hub_clickhouse_up", "1 when ClickHouse is reachable and migrated.", ch_up);
	C("wt_hub_clickhouse_transitions_total", "ClickHouse up/down changes.", ch_transitions);
	C("wt_hub_http_requests_total", "HTTP requests received.", m->requests_total);
	wt_prom_family(out, "wt_hub_http_responses_total", "counter", "HTTP responses by status class.");
	wt_prom_u64(out, "wt_hub_http_responses_total", "class", "2xx", (uint64_t)m->responses_2xx);
	wt_prom_u64(out, "wt_hub_http_responses_total", "class", "4xx", (uint64_t)m->responses_4xx);
	wt_prom_u64(out, "wt_hub_http_responses_total", "class", "5xx", (uint64_t)m->responses_5xx);
	C("wt_hub_uploads_total", "Uploads stored.", m->uploads_total);
	C("wt_hub_uploads_rejected_total", "Uploads rejected (4xx/5xx).", m->uploads_rejected_total);
	C("wt_hub_upload_bytes_total", "Bytes of stored upload bodies.", m->upload_bytes_total);
	C("wt_hub_upload_rows_total", "Sample rows inserted into ClickHouse.", m->upload_rows_total);
	C("wt_hub_queries_total", "Profile queries answered.", m->queries_total);
	wt_prom_counter_f(out, "wt_hub_query_seconds_total", "Summed profile query latency.", 6,
			  (double)m->query_ns_total / 1e9);
	wt_prom_counter_f(out, "wt_hub_clickhouse_insert_seconds_total", "Summed ClickHouse insert latency.", 6,
			  (double)m->ch_insert_ns_total / 1e9);
	C("wt_hub_clickhouse_errors_total", "ClickHouse requests that failed.", m->ch_errors_total);
	C("wt_hub_objstore_puts_total", "Objects written.", m->objstore_puts_total);
	C("wt_hub_objstore_errors_total", "Object store failures.", m->objstore_errors_total);
	return out->oom ? -2 : 0;
}
