/*
 * http_audit.c — GET /v1/projects/{p}/audit[?limit=N&action=A]: the
 * project's audit events, newest first (role admin or DeleteTelemetry of
 * the project, or the hub admin token). Audit rows are append-only: no
 * retention or deletion path touches audit_events_v1.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ch_format.h"
#include "http_server.h"
#include "hub.h"
#include "params.h"

#define AUDIT_DEFAULT_LIMIT 100
#define AUDIT_MAX_LIMIT 10000

static int event_row(void *ctx, char **f, size_t n)
{
	json_t *list = ctx, *o;
	int64_t ns;
	time_t s;
	struct tm tm;
	char ts[40];

	if (n < 5)
		return 0;
	ns = strtoll(f[0], NULL, 10);
	s = (time_t)(ns / 1000000000LL);
	gmtime_r(&s, &tm);
	snprintf(ts, sizeof(ts), "%04d-%02d-%02dT%02d:%02d:%02d.%09lldZ", tm.tm_year + 1900, tm.tm_mon + 1,
		 tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (long long)(ns % 1000000000LL));
	o = json_pack("{s:s, s:I, s:s, s:s, s:s}", "time", ts, "time_ns", (json_int_t)ns, "actor", f[1],
		      "action", f[2], "detail", f[3]);
	if (o && *f[4])
		json_object_set_new(o, "deletion_id", json_string(f[4]));
	if (o)
		json_array_append_new(list, o);
	return 0;
}

int hub_handle_audit(hub_req *r, wt_err *err)
{
	const char *action = wt_http_param(&r->q, "action");
	wt_buf *sql = wt_arena_buf(&r->arena), *out = wt_arena_buf(&r->arena);
	json_t *list;
	long limit;
	int rc;

	if (!sql || !out)
		return wt_err_set(err, WT_ENOMEM, "out of memory");
	if ((rc = hub_param_uint(&r->q, "limit", AUDIT_DEFAULT_LIMIT, 1, AUDIT_MAX_LIMIT, &limit, err)) ||
	    (rc = hub_ch_health_check(&r->ctx->store, err)))
		return rc;
	wt_buf_puts(sql, "SELECT time_ns, actor, action, detail, deletion_id FROM audit_events_v1 WHERE project = ");
	hub_sql_quote(sql, r->project);
	if (action && *action) {
		wt_buf_puts(sql, " AND action = ");
		hub_sql_quote(sql, action);
	}
	wt_buf_printf(sql, " ORDER BY time_ns DESC LIMIT %ld FORMAT TabSeparated", limit);
	if ((rc = hub_ch_query_buf(r->ch, sql, out, err)))
		return rc;
	list = hub_req_own_json(r, json_array());
	if (!list)
		return wt_err_set(err, WT_ENOMEM, "out of memory");
	hub_tsv_each((char *)out->data, out->len, 5, event_row, list);
	hub_req_json(r, 200, json_pack("{s:s, s:O}", "project", r->project, "events", list));
	return 0;
}
