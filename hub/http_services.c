/*
 * http_services.c — small read endpoints for the explorer's pickers:
 *   GET /v1/projects/{p}/services          services and their sample types
 *   GET /v1/projects/{p}/labels            label keys and some of their values
 *   GET /v1/projects/{p}/profiles/series   one service's total per time step
 * All need the project's read token and take the query API's selection
 * parameters (service, type, from, until, label.K=V, span_id, trace_id).
 * services/labels default to all time, series to the query API's default
 * range. Answers are bounded (row limits in the SQL).
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ch_format.h"
#include "clock.h"
#include "http_server.h"
#include "http_ui.h"
#include "params.h"
#include "selection.h"

#define MAX_SERVICES_ROWS 10000
#define MAX_LABEL_KEYS 100
#define MAX_LABEL_VALUES 50
#define SERIES_MAX_POINTS 2000
#define SERIES_DEFAULT_POINTS 240

static const char *const column_labels[] = {"host", "thread", "container", "span_id", "trace_id"};
#define NCOLS (sizeof(column_labels) / sizeof(column_labels[0]))

/* WHERE of the selection; type NULL = all types; from/until < 0 = open. */
static void where(wt_buf *w, const char *project, const hub_params *hp, const char *type,
		  int64_t from, int64_t until)
{
	size_t i, j;

	wt_buf_puts(w, " WHERE project = ");
	hub_sql_quote(w, project);
	if (hp->service) {
		wt_buf_puts(w, " AND service = ");
		hub_sql_quote(w, hp->service);
	}
	if (type) {
		wt_buf_puts(w, " AND sample_type = ");
		hub_sql_quote(w, type);
	}
	if (from >= 0) {
		hub_sql_date_cond(w, ">=", from);
		wt_buf_printf(w, " AND time_ns >= %lld", (long long)from);
	}
	if (until >= 0) {
		hub_sql_date_cond(w, "<=", until);
		wt_buf_printf(w, " AND time_ns < %lld", (long long)until);
	}
	for (i = 0; i < hp->nlabels; i++) {
		const char *k = hp->labels[i].key;
		for (j = 0; j < NCOLS; j++)
			if (!strcmp(k, column_labels[j]))
				break;
		if (j < NCOLS) {
			wt_buf_printf(w, " AND %s = ", column_labels[j]);
		} else {
			wt_buf_puts(w, " AND labels.value[indexOf(labels.key, ");
			hub_sql_quote(w, k);
			wt_buf_puts(w, ")] = ");
		}
		hub_sql_quote(w, hp->labels[i].value);
	}
}

/* Common start after the route wrapper's token, project and role checks:
 * the selection parameters, and ClickHouse up. */
static int begin(hub_req *r, hub_params *hp, wt_err *err)
{
	int rc;

	memset(hp, 0, sizeof(*hp));
	if ((rc = hub_params_parse(&r->q, hp, err)))
		return rc;
	return hub_ch_health_check(&r->ctx->store, err);
}

/* ---- services -------------------------------------------------------------- */

struct svc_ctx {
	json_t *services;
	json_t *cur;    /* types array of the current service */
	char name[HUB_SERVICE_MAX + 1];
};

static int svc_row(void *vctx, char **f, size_t n)
{
	struct svc_ctx *c = vctx;

	if (n < 3)
		return 0;
	if (!c->cur || strcmp(c->name, f[0])) {
		json_t *s = json_pack("{s:s, s:[]}", "name", f[0], "types");
		if (!s)
			return WT_ENOMEM;
		json_array_append_new(c->services, s);
		c->cur = json_object_get(s, "types");
		snprintf(c->name, sizeof(c->name), "%s", f[0]);
	}
	json_array_append_new(c->cur, json_pack("{s:s, s:s}", "type", f[1], "unit", f[2]));
	return 0;
}

int hub_handle_services(hub_req *r, wt_err *err)
{
	hub_params hp;
	wt_buf *sql = wt_arena_buf(&r->arena), *res = wt_arena_buf(&r->arena);
	struct svc_ctx c = {NULL, NULL, ""};
	int rc;

	if (!sql || !res)
		return wt_err_set(err, WT_ENOMEM, "out of memory");
	if ((rc = begin(r, &hp, err)))
		return rc;
	wt_buf_puts(sql, "SELECT service, sample_type, any(unit) FROM profile_samples_v1");
	where(sql, r->project, &hp, NULL, hp.has_from ? hp.from_ns : -1, hp.has_until ? hp.until_ns : -1);
	wt_buf_printf(sql, " GROUP BY service, sample_type ORDER BY service, sample_type LIMIT %d"
		      " FORMAT TabSeparated", MAX_SERVICES_ROWS);
	if ((rc = hub_ch_query_buf(r->ch, sql, res, err)))
		return rc;
	c.services = hub_req_own_json(r, json_array());
	if (!c.services || hub_tsv_each((char *)res->data, res->len, 3, svc_row, &c))
		return wt_err_set(err, WT_ENOMEM, "out of memory listing services");
	hub_req_json(r, 200, json_pack("{s:s, s:O}", "project", r->project, "services", c.services));
	return 0;
}

/* ---- labels ----------------------------------------------------------------- */

static int label_row(void *vctx, char **f, size_t n)
{
	json_t *arr = vctx, *vals;
	char *p, *e;

	if (n < 2 || !f[0][0])
		return 0;
	/* f[1] is an Array(String) literal: ['a','b\'c'] — parse the quoted items. */
	vals = json_array();
	if (!vals)
		return WT_ENOMEM;
	p = f[1];
	while ((p = strchr(p, '\''))) {
		wt_buf v = WT_BUF_INIT;
		for (e = p + 1; *e && *e != '\''; e++) {
			if (*e == '\\' && e[1])
				e++;
			wt_buf_putc(&v, *e);
		}
		wt_buf_putc(&v, '\0');
		if (!v.oom && ((char *)v.data)[0])
			json_array_append_new(vals, json_string((char *)v.data));
		wt_buf_free(&v);
		if (!*e)
			break;
		p = e + 1;
	}
	json_array_append_new(arr, json_pack("{s:s, s:o}", "key", f[0], "values", vals));
	return 0;
}

/* The label rows (k, v) of table (profile_samples_v1, or label_sets_v1:
 * the same label columns) under where + cond (column labels first: host,
 * thread, container; not span/trace ids: those are looked up, not picked;
 * then the Nested label keys), as a UNION ALL. */
static void label_selects(wt_buf *sql, const char *table, const char *where, const char *cond)
{
	size_t j;

	for (j = 0; j < 3; j++)
		wt_buf_printf(sql, "SELECT '%s' AS k, %s AS v FROM %s%s%s AND %s != '' UNION ALL ", column_labels[j],
			      column_labels[j], table, where, cond, column_labels[j]);
	/* the alias keeps labels.key an array for the filters' indexOf */
	wt_buf_printf(sql, "SELECT l.key AS k, l.value AS v FROM %s ARRAY JOIN labels AS l%s%s", table, where, cond);
}

int hub_handle_labels(hub_req *r, wt_err *err)
{
	hub_params hp;
	hub_sel sel;
	wt_buf *sql = wt_arena_buf(&r->arena), *res = wt_arena_buf(&r->arena), *w = wt_arena_buf(&r->arena),
	       *agg = wt_arena_buf(&r->arena), *raw = wt_arena_buf(&r->arena), *in = wt_arena_buf(&r->arena);
	int64_t from, until;
	json_t *arr;
	int rc;

	if (!sql || !res || !w || !agg || !raw || !in)
		return wt_err_set(err, WT_ENOMEM, "out of memory");
	memset(&sel, 0, sizeof(sel));
	if ((rc = begin(r, &hp, err)) || (rc = hub_sel_path_param(&r->q, r->ctx, &sel, err)))
		return rc;
	from = hp.has_from ? hp.from_ns : -1;
	until = hp.has_until ? hp.until_ns : -1;
	where(w, r->project, &hp, hp.type, from, until);
	if (wt_buf_putc(w, '\0'))
		return wt_err_set(err, WT_ENOMEM, "out of memory");
	/* A closed range reads the label sets of the aggregates' pieces from
	 * label_sets_v1 (a few rows per label set and bucket) and only the
	 * pieces they do not cover from the raw rows. */
	sel.project = r->project;
	sel.hp = hp;
	sel.from = from;
	sel.until = until;
	if (from >= 0 && until >= 0 && hub_sel_labelset_sql(r->ch, &sel, hp.type, agg, raw, err, &rc) && !rc) {
		wt_buf_puts(in, " WHERE project = ");
		hub_sql_quote(in, r->project);
		wt_buf_printf(in, " AND labelset_id GLOBAL IN (SELECT labelset_id FROM (%.*s))", (int)agg->len,
			      (const char *)agg->data);
	}
	if (rc)
		return rc;
	if (wt_buf_putc(raw, '\0') || wt_buf_putc(in, '\0'))
		return wt_err_set(err, WT_ENOMEM, "out of memory");
	/* 18.16: groupUniqArray takes no size parameter. */
	wt_buf_printf(sql, "SELECT k, arraySlice(arraySort(groupUniqArray(v)), 1, %d) FROM (", MAX_LABEL_VALUES);
	label_selects(sql, "profile_samples_v1", (const char *)w->data, (const char *)raw->data);
	if (sel.agg_used) {
		wt_buf_puts(sql, " UNION ALL ");
		label_selects(sql, "label_sets_v1", (const char *)in->data, "");
	}
	wt_buf_printf(sql, ") GROUP BY k ORDER BY k LIMIT %d FORMAT TabSeparated", MAX_LABEL_KEYS);
	if (sql->oom)
		return wt_err_set(err, WT_ENOMEM, "out of memory");
	if ((rc = hub_ch_query_buf(r->ch, sql, res, err)))
		return rc;
	arr = hub_req_own_json(r, json_array());
	if (!arr || hub_tsv_each((char *)res->data, res->len, 2, label_row, arr))
		return wt_err_set(err, WT_ENOMEM, "out of memory listing labels");
	hub_req_json(r, 200, json_pack("{s:s, s:O, s:s}", "project", r->project, "labels", arr, "path",
				       sel.agg_used ? "aggregates" : "raw"));
	return 0;
}

/* ---- series ----------------------------------------------------------------- */

struct series_ctx {
	json_t *points;
	char unit[64];
	char type[128];
};

static int series_row(void *vctx, char **f, size_t n)
{
	struct series_ctx *c = vctx;

	if (n < 3)
		return 0;
	json_array_append_new(c->points, json_pack("[I, I]", (json_int_t)strtoll(f[0], NULL, 10),
						   (json_int_t)strtoll(f[1], NULL, 10)));
	if (!c->unit[0])
		snprintf(c->unit, sizeof(c->unit), "%s", f[2]);
	return 0;
}

static int type_row(void *vctx, char **f, size_t n)
{
	struct series_ctx *c = vctx;
	if (n >= 1 && !c->type[0])
		snprintf(c->type, sizeof(c->type), "%s", f[0]);
	return 0;
}

int hub_handle_series(hub_req *r, wt_err *err)
{
	hub_params hp;
	wt_buf *sql = wt_arena_buf(&r->arena), *res = wt_arena_buf(&r->arena);
	struct series_ctx c;
	int64_t from, until, step;
	long points;
	int rc;

	memset(&c, 0, sizeof(c));
	if (!sql || !res)
		return wt_err_set(err, WT_ENOMEM, "out of memory");
	if ((rc = begin(r, &hp, err)) ||
	    (rc = hub_param_uint(&r->q, "points", SERIES_DEFAULT_POINTS, 1, SERIES_MAX_POINTS, &points, err)))
		return rc;
	until = hp.has_until ? hp.until_ns : wt_now_ns(CLOCK_REALTIME);
	from = hp.has_from ? hp.from_ns : until - (int64_t)r->ctx->cfg.default_range_s * 1000000000LL;
	if (from < 0)
		from = 0;
	if (until <= from)
		return wt_err_set(err, WT_EINVAL, "until: must be after from");
	/* Whole seconds per step, at least one. */
	step = (until - from) / points;
	step = step < 1000000000LL ? 1000000000LL : step / 1000000000LL * 1000000000LL;
	if (hp.type) {
		snprintf(c.type, sizeof(c.type), "%s", hp.type);
	} else {
		wt_buf_puts(sql, "SELECT sample_type FROM profile_samples_v1");
		where(sql, r->project, &hp, NULL, from, until);
		wt_buf_puts(sql, " GROUP BY sample_type ORDER BY sample_type = 'cpu' DESC, min(time_ns),"
			    " sample_type LIMIT 1 FORMAT TabSeparated");
		if ((rc = hub_ch_query_buf(r->ch, sql, res, err)))
			return rc;
		hub_tsv_each((char *)res->data, res->len, 1, type_row, &c);
		wt_buf_reset(sql);
		wt_buf_reset(res);
	}
	c.points = hub_req_own_json(r, json_array());
	if (!c.points)
		return wt_err_set(err, WT_ENOMEM, "out of memory");
	if (c.type[0]) {
		wt_buf_printf(sql, "SELECT %lld + intDiv(time_ns - %lld, %lld) * %lld AS t, sum(value), any(unit)"
			      " FROM profile_samples_v1", (long long)from, (long long)from, (long long)step,
			      (long long)step);
		where(sql, r->project, &hp, c.type, from, until);
		wt_buf_printf(sql, " GROUP BY t ORDER BY t LIMIT %d FORMAT TabSeparated", SERIES_MAX_POINTS + 1);
		if ((rc = hub_ch_query_buf(r->ch, sql, res, err)))
			return rc;
		hub_tsv_each((char *)res->data, res->len, 3, series_row, &c);
	}
	hub_req_json(r, 200, json_pack("{s:s, s:s, s:s, s:I, s:I, s:I, s:O}", "project", r->project,
				       "type", c.type[0] ? c.type : (hp.type ? hp.type : "cpu"), "unit", c.unit,
				       "from", (json_int_t)from, "until", (json_int_t)until,
				       "step", (json_int_t)step, "points", c.points));
	return 0;
}
