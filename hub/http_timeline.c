/*
 * http_timeline.c — GET /v1/projects/{p}/profiles/timeline: the value per
 * time bucket for each value of one label (`by` = thread, host, container,
 * service, span_id or trace_id), for the timeline and heatmap views.
 *
 * The bucket width is the smallest "nice" width (1-2-5 steps of ms/s, then
 * 1/2/5/10/15/30 min, 1/2/3/6/12 h, 1 d) that covers [from, until) in at
 * most `buckets` (default 200, max 2000) buckets; buckets are aligned to
 * multiples of the width since the epoch. ClickHouse sums the values per
 * (label value, intDiv(time_ns, width)); the top `limit` − 1 label values
 * by total (limit ≤ 50, default 50) keep their own row and the rest are
 * summed into one row named "other" — so at most 50 rows. Label values
 * whose total is 0 are left out.
 *
 * Without `buckets`, a range of at least AUTO_MINUTE_MIN buckets of a
 * minute gets buckets of at least a minute: the stack aggregates
 * (stackagg.h) then answer (hub_sel_timeline_sql: by service, host,
 * thread or container, label filters the aggregates hold, the width a
 * multiple of a minute); finer buckets, span_id / trace_id and label
 * matchers read the raw rows. path=raw reads the raw rows always.
 */
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "ch_format.h"
#include "clock.h"
#include "http_server.h"
#include "selection.h"

#define MAX_BUCKETS 2000
#define DEFAULT_BUCKETS 200
#define MAX_ROWS 50
/* automatic width: at least a minute when that still gives this many
 * buckets (a range of 50 min or more) */
#define AUTO_MINUTE_MIN 50
#define MINUTE_NS 60000000000LL

typedef struct tl_row {
	char *value;
	int64_t total;
	int64_t *series;
} tl_row;

/* rows[0..n): the top label values (order of Q1), then "other" when used */
typedef struct tl_acc {
	tl_row rows[MAX_ROWS + 1];
	size_t n;
	int has_other;
	int64_t b0;
	long nb;
	char unit[64];
	int oom;
	wt_arena *arena;  /* the request's: row values and series */
} tl_acc;

static int add_row(tl_acc *a, const char *v)
{
	tl_row *r = &a->rows[a->n];

	r->value = wt_arena_strdup(a->arena, v);
	r->total = 0;
	r->series = wt_arena_calloc(a->arena, (size_t)a->nb, sizeof(int64_t));
	if (!r->value || !r->series)
		return WT_ENOMEM;
	a->n++;
	return 0;
}

/* Q1 rows: label value, total (ordered by total desc, value) */
typedef struct top_ctx {
	tl_acc *a;
	size_t want;  /* rows that keep their own line */
	size_t seen;
} top_ctx;

static int top_row(void *ctx, char **f, size_t n)
{
	top_ctx *t = ctx;

	if (n < 1)
		return 0;
	t->seen++;
	if (t->a->n < t->want && add_row(t->a, f[0])) {
		t->a->oom = 1;
		return 1;
	}
	return 0;
}

/* Q2 rows: own (1 = a top value), label value, bucket index, sum, unit */
static int series_row(void *ctx, char **f, size_t n)
{
	tl_acc *a = ctx;
	tl_row *r = NULL;
	int64_t b, v;
	size_t i;

	if (n < 5)
		return 0;
	b = strtoll(f[2], NULL, 10) - a->b0;
	v = strtoll(f[3], NULL, 10);
	if (b < 0 || b >= a->nb)
		return 0;
	if (f[0][0] == '1') {
		for (i = 0; i < a->n - (size_t)a->has_other; i++)
			if (!strcmp(a->rows[i].value, f[1]))
				r = &a->rows[i];
	} else if (a->has_other) {
		r = &a->rows[a->n - 1];
	}
	if (!r)
		return 0;
	r->series[b] += v;
	r->total += v;
	if (!a->unit[0])
		snprintf(a->unit, sizeof(a->unit), "%s", f[4]);
	return 0;
}

static const char *by_column(const char *by)
{
	static const char *const ok[] = {"thread", "host", "container", "service", "span_id", "trace_id"};
	size_t i;

	for (i = 0; by && i < sizeof(ok) / sizeof(ok[0]); i++)
		if (!strcmp(by, ok[i]))
			return ok[i];
	return NULL;
}

int hub_handle_timeline(hub_req *r, wt_err *err)
{
	hub_ctx *ctx = r->ctx;
	wt_arena *a = &r->arena;
	int64_t t0 = wt_now_ns(CLOCK_REALTIME), width;
	wt_buf *pieces = wt_arena_buf(a);
	long nbuckets, limit;
	const char *by_s = evhttp_find_header(&r->q, "by"), *col;
	hub_sel *sel = wt_arena_calloc(a, 1, sizeof(*sel));
	tl_acc *acc = wt_arena_calloc(a, 1, sizeof(*acc));
	wt_buf *sql = wt_arena_buf(a), *res = wt_arena_buf(a);
	json_t *out, *rows_j;
	size_t i;
	long b;
	int rc;

	if (!sel || !acc || !sql || !res || !pieces)
		return wt_err_set(err, WT_ENOMEM, "out of memory");
	acc->arena = a;
	sel->project = r->project;
	if ((rc = hub_params_parse(&r->q, &sel->hp, err)) || (rc = hub_sel_path_param(&r->q, ctx, sel, err)) ||
	    (rc = hub_param_uint(&r->q, "buckets", DEFAULT_BUCKETS, 1, MAX_BUCKETS, &nbuckets, err)) ||
	    (rc = hub_param_uint(&r->q, "limit", MAX_ROWS, 1, MAX_ROWS, &limit, err)))
		return rc;
	col = by_column(by_s ? by_s : "thread");
	if (!col)
		return wt_err_set(err, WT_EINVAL, "by: \"%.32s\" is not one of thread, host, container, service,"
				  " span_id, trace_id", by_s);
	if ((rc = hub_ch_health_check(&ctx->store, err)) ||
	    (rc = hub_sel_resolve(r->ch, sel, t0, ctx->cfg.default_range_s, err)))
		return rc;
	if (sel->until <= sel->from)
		sel->until = sel->from + 1;
	width = hub_nice_width(sel->from, sel->until, nbuckets);
	/* automatic buckets of at least a minute where that keeps enough of
	 * them (the same for every path, so path=raw compares) */
	if (!evhttp_find_header(&r->q, "buckets") && width < MINUTE_NS &&
	    (sel->until - 1) / MINUTE_NS - sel->from / MINUTE_NS + 1 >= AUTO_MINUTE_MIN)
		width = MINUTE_NS;
	acc->b0 = sel->from / width;
	acc->nb = (long)((sel->until - 1) / width - acc->b0 + 1);
	if (sel->type[0]) {
		top_ctx tc = {acc, (size_t)limit, 0};
		/* the aggregate pieces when they apply (pieces: lv, b, v, u) */
		if (!hub_sel_timeline_sql(r->ch, sel, col, width, pieces, err, &rc) && rc)
			return rc;
		if (wt_buf_putc(pieces, '\0'))
			return wt_err_set(err, WT_ENOMEM, "out of memory");
		/* Q1: the top label values; one more than fits tells whether
		 * an "other" row is needed */
		if (sel->agg_used) {
			wt_buf_printf(sql, "SELECT lv, sum(v) AS s FROM (%s) GROUP BY lv HAVING s != 0 ORDER BY s DESC,"
				      " lv LIMIT %ld FORMAT TabSeparated", (const char *)pieces->data, limit + 1);
		} else {
			wt_buf_printf(sql, "SELECT %s, sum(value) AS s FROM profile_samples_v1", col);
			hub_sel_where(sql, sel, sel->type);
			wt_buf_printf(sql, " GROUP BY %s HAVING s != 0 ORDER BY s DESC, %s LIMIT %ld FORMAT TabSeparated",
				      col, col, limit + 1);
		}
		if ((rc = hub_ch_query_buf(r->ch, sql, res, err)))
			return rc;
		hub_tsv_each((char *)res->data, res->len, 2, top_row, &tc);
		if (!acc->oom && tc.seen > (size_t)limit) {
			/* limit − 1 own rows + "other" (the dropped row's memory
			 * stays in the arena until the request ends) */
			acc->n--;
			if (add_row(acc, "other"))
				acc->oom = 1;
			acc->has_other = 1;
		}
		if (acc->oom)
			return wt_err_set(err, WT_ENOMEM, "out of memory building the timeline");
		/* Q2: series of the top values, the rest summed as own = 0 */
		wt_buf_reset(sql);
		wt_buf_reset(res);
		wt_buf_printf(sql, "SELECT %s IN (", sel->agg_used ? "lv" : col);
		for (i = 0; i < acc->n - (size_t)acc->has_other; i++) {
			if (i)
				wt_buf_putc(sql, ',');
			hub_sql_quote(sql, acc->rows[i].value);
		}
		if (acc->n - (size_t)acc->has_other == 0)
			wt_buf_puts(sql, "''");
		if (sel->agg_used) {
			wt_buf_printf(sql, ") AS own, if(own, lv, '') AS lv2, b, sum(v), any(u) FROM (%s)"
				      " GROUP BY own, lv2, b FORMAT TabSeparated", (const char *)pieces->data);
		} else {
			wt_buf_printf(sql, ") AS own, if(own, %s, '') AS lv, intDiv(time_ns, %lld) AS b, sum(value),"
				      " any(unit) FROM profile_samples_v1", col, (long long)width);
			hub_sel_where(sql, sel, sel->type);
			wt_buf_puts(sql, " GROUP BY own, lv, b FORMAT TabSeparated");
		}
		if ((rc = hub_ch_query_buf(r->ch, sql, res, err)))
			return rc;
		hub_tsv_each((char *)res->data, res->len, 5, series_row, acc);
	}
	out = hub_req_own_json(r, json_object());
	rows_j = hub_req_own_json(r, json_array());
	if (!out || !rows_j)
		return wt_err_set(err, WT_ENOMEM, "out of memory");
	for (i = 0; i < acc->n; i++) {
		json_t *ser = json_array();
		int other = acc->has_other && i + 1 == acc->n;
		for (b = 0; ser && b < acc->nb; b++)
			json_array_append_new(ser, json_integer(acc->rows[i].series[b]));
		json_array_append_new(rows_j, json_pack("{s:s, s:I, s:o, s:b}",
			"value", acc->rows[i].value, "total", (json_int_t)acc->rows[i].total,
			"series", ser ? ser : json_array(), "other", other));
	}
	json_object_set_new(out, "unit", json_string(acc->unit));
	json_object_set_new(out, "type", json_string(sel->type));
	json_object_set_new(out, "by", json_string(col));
	if (sel->hp.service)
		json_object_set_new(out, "service", json_string(sel->hp.service));
	json_object_set_new(out, "from", json_integer(sel->from));
	json_object_set_new(out, "until", json_integer(sel->until));
	json_object_set_new(out, "bucket_ns", json_integer(width));
	json_object_set_new(out, "start_ns", json_integer(acc->b0 * width));
	json_object_set_new(out, "buckets", json_integer(acc->nb));
	json_object_set_new(out, "path", json_string(sel->agg_used ? "aggregates" : "raw"));
	json_object_set(out, "rows", rows_j);
	/* the reply takes its own reference; the arena drops the one it holds */
	return hub_req_query_json(r, t0, json_incref(out), err);
}
