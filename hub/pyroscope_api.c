/*
 * pyroscope_api.c — Pyroscope's query API on the hub, so Grafana's
 * "Grafana Pyroscope" data source and profilecli work against Watchtower:
 * Connect unary calls POST /querier.v1.QuerierService/<Method> (connect.h;
 * messages of proto/pyroscope_querier.proto and pyroscope_types.proto),
 * answered from the same selections and flame graphs as the hub's own
 * query API (selection.h, common/flame.c) — nothing here aggregates
 * samples itself; pyroscope_flame.c re-encodes the flame trees.
 *
 * Mapping (docs/api.md "Pyroscope query API"):
 *   - tenant: X-Scope-OrgID names the project; without it, the token's own
 *     project. Token from "Authorization: Bearer T" or basic auth with T as
 *     the password; the project's read role is needed. The hub's route
 *     wrapper checks all of this (server.c, HUB_AUTH_CONNECT row) and
 *     answers its errors in Connect's shape before the handler runs.
 *   - profile type ids <name>:<sample_type>:<unit>:<period_type>:<period_unit>
 *     ↔ our canonical types (type_map below); unknown ids use their
 *     sample_type part as our type name, our unmapped types get
 *     "wt:<type>:<unit>:<type>:<unit>".
 *   - label selectors (label_selector.h): service_name = our service,
 *     host/thread/container/span_id/trace_id and every stored label.
 *   - times are milliseconds; 0 means "all time" for the listing calls and
 *     the query API's default range for the Select* calls.
 */
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "ch_client.h"
#include "clock.h"
#include "ch_format.h"
#include "compress.h"
#include "connect.h"
#include "flame.h"
#include "http_server.h"
#include "hub.h"
#include "label_selector.h"
#include "pprof.h"
#include "pyroscope_flame.h"
#include "proto/profile.pb-c.h"
#include "proto/pyroscope_querier.pb-c.h"
#include "proto/pyroscope_types.pb-c.h"
#include "selection.h"

#define PYRO_MAX_BODY (1 << 20)      /* requests are small: selectors and ids */
#define PYRO_MAX_ROWS 10000          /* label names/values, series label sets */
#define PYRO_MAX_SERIES_ROWS 200000  /* (series, point) rows of SelectSeries */
#define PYRO_MAX_POINTS 11000        /* points per series; step grows to fit */
#define PYRO_MAX_MATCHERS 32         /* selectors in one matchers list */

/* ---- profile type ids ------------------------------------------------------- */

static const struct type_map {
	const char *type, *name, *sample_type, *unit, *period_type, *period_unit;
} type_map[] = {
	{"cpu", "process_cpu", "cpu", "nanoseconds", "cpu", "nanoseconds"},
	{"samples", "process_cpu", "samples", "count", "cpu", "nanoseconds"},
	{"wall", "wall", "wall", "nanoseconds", "wall", "nanoseconds"},
	{"alloc_objects", "memory", "alloc_objects", "count", "space", "bytes"},
	{"alloc_space", "memory", "alloc_space", "bytes", "space", "bytes"},
	{"inuse_objects", "memory", "inuse_objects", "count", "space", "bytes"},
	{"inuse_space", "memory", "inuse_space", "bytes", "space", "bytes"},
	{"goroutine", "goroutines", "goroutine", "count", "goroutine", "count"},
	{"mutex_contentions", "mutex", "contentions", "count", "contentions", "count"},
	{"mutex_delay", "mutex", "delay", "nanoseconds", "contentions", "count"},
	{"block_contentions", "block", "contentions", "count", "contentions", "count"},
	{"block_delay", "block", "delay", "nanoseconds", "contentions", "count"},
	{"offcpu", "off_cpu", "offcpu", "nanoseconds", "offcpu", "nanoseconds"},
	{"lock", "lock", "lock", "nanoseconds", "lock", "nanoseconds"},
	{"exceptions", "exceptions", "exceptions", "count", "exceptions", "count"},
	{"native_alloc", "native_memory", "native_alloc", "bytes", "space", "bytes"},
	{"gc_pause", "gc", "gc_pause", "nanoseconds", "gc", "nanoseconds"},
};
#define NTYPES (sizeof(type_map) / sizeof(type_map[0]))

static const struct type_map *type_entry(const char *type)
{
	size_t i;
	for (i = 0; i < NTYPES; i++)
		if (!strcmp(type_map[i].type, type))
			return &type_map[i];
	return NULL;
}

/* Fill pt (strings malloc'd) for our (type, unit). */
static int profile_type_of(const char *type, const char *unit, Types__V1__ProfileType *pt)
{
	const struct type_map *e = type_entry(type);
	const char *name = e ? e->name : "wt", *st = e ? e->sample_type : type;
	const char *pty = e ? e->period_type : type, *pu = e ? e->period_unit : unit;
	char id[512];

	if (!unit || !*unit)
		unit = e ? e->unit : "count";
	snprintf(id, sizeof(id), "%s:%s:%s:%s:%s", name, st, unit, pty, pu);
	pt->id = strdup(id);
	pt->name = strdup(name);
	pt->sample_type = strdup(st);
	pt->sample_unit = strdup(unit);
	pt->period_type = strdup(pty);
	pt->period_unit = strdup(pu);
	return pt->id && pt->name && pt->sample_type && pt->sample_unit && pt->period_type && pt->period_unit
		       ? 0 : WT_ENOMEM;
}

/* Our type name for a profile type id; WT_EINVAL naming `field`. */
static int type_of_id(const char *id, const char *field, char out[HUB_TYPE_MAX], wt_err *err)
{
	char parts[5][HUB_TYPE_MAX];
	size_t n = 0, i;
	const char *p = id, *c;

	for (;;) {
		size_t len;
		c = strchr(p, ':');
		len = c ? (size_t)(c - p) : strlen(p);
		if (n >= 5 || len >= HUB_TYPE_MAX)
			goto bad;
		memcpy(parts[n], p, len);
		parts[n++][len] = '\0';
		if (!c)
			break;
		p = c + 1;
	}
	if (n != 5 || !parts[1][0])
		goto bad;
	for (i = 0; i < NTYPES; i++)
		if (!strcmp(type_map[i].name, parts[0]) && !strcmp(type_map[i].sample_type, parts[1])) {
			snprintf(out, HUB_TYPE_MAX, "%s", type_map[i].type);
			return 0;
		}
	snprintf(out, HUB_TYPE_MAX, "%s", parts[1]);
	return 0;
bad:
	return wt_err_set(err, WT_EINVAL,
			  "%s: \"%.128s\" is not a profile type id <name>:<sample_type>:<unit>:<period_type>:<period_unit>",
			  field, id);
}

/* ---- request plumbing ------------------------------------------------------- */

typedef struct pyro_call {
	hub_req *r;
	int enc;                        /* HUB_CONNECT_* of the request (and reply) */
	char project[HUB_PROJECT_MAX + 1];
} pyro_call;

/* ms → ns, saturating: a time past what int64 nanoseconds hold (year
 * 2262) is the end of time, never a wrapped negative one */
static int64_t ms_to_ns(int64_t ms)
{
	return ms >= INT64_MAX / 1000000LL ? INT64_MAX - 1 : ms * 1000000LL;
}

/* [start, end] in ms → [from, until) ns; 0/0 = all time (open) or the
 * default range (select = 1). */
static void time_range(const pyro_call *c, int64_t start_ms, int64_t end_ms, int select, int64_t *from,
		       int64_t *until)
{
	int64_t now = wt_now_ns(CLOCK_REALTIME);

	*until = end_ms > 0 ? ms_to_ns(end_ms) + 1 : now + 1;
	if (start_ms > 0)
		*from = ms_to_ns(start_ms);
	else
		*from = select ? *until - (int64_t)c->r->ctx->cfg.default_range_s * 1000000000LL : 0;
	if (*from < 0)
		*from = 0;
}

/* A selection for the Select* calls: type id and selector parsed once. */
typedef struct pyro_sel {
	hub_sel sel;
	hub_lsel ls;
} pyro_sel;

static int sel_init(pyro_call *c, pyro_sel *ps, const char *type_id, const char *selector, int64_t start_ms,
		    int64_t end_ms, const char *prefix, wt_err *err)
{
	char field[64], type[HUB_TYPE_MAX];
	const char *pt;
	int rc;

	memset(ps, 0, sizeof(*ps));
	ps->sel.project = c->project;
	ps->sel.syms = c->r->ctx->syms;
	ps->sel.lsel = &ps->ls;
	snprintf(field, sizeof(field), "%slabel_selector", prefix);
	if ((rc = hub_lsel_parse(selector ? selector : "", &ps->ls, err))) {
		char msg[sizeof(err->msg)];
		snprintf(msg, sizeof(msg), "%s: %s", field, err->msg);
		snprintf(err->msg, sizeof(err->msg), "%s", msg);
		return rc;
	}
	snprintf(field, sizeof(field), "%sprofile_typeID", prefix);
	pt = type_id && *type_id ? type_id : hub_lsel_get(&ps->ls, "__profile_type__");
	if (!pt)
		return wt_err_set(err, WT_EINVAL, "%s: missing", field);
	if ((rc = type_of_id(pt, field, type, err)))
		return rc;
	/* the resolved type lives in sel.type; hp.type only has to be non-NULL */
	snprintf(ps->sel.type, sizeof(ps->sel.type), "%s", type);
	time_range(c, start_ms, end_ms, 1, &ps->sel.from, &ps->sel.until);
	return 0;
}

/* ---- flame graphs (encoded by pyroscope_flame.c) ----------------------------- */

/* Load the selection's flame as a JSON tree with at most max_nodes nodes. */
static int load_tree(pyro_call *c, pyro_sel *ps, int64_t max_nodes, json_t **tree, wt_err *err)
{
	wt_flame *f = wt_flame_new();
	char *unit = NULL;
	int rc = 0;

	*tree = NULL;
	if (!f)
		return wt_err_set(err, WT_ENOMEM, "out of memory");
	if (max_nodes <= 0)
		max_nodes = (int64_t)c->r->ctx->cfg.max_nodes;
	if (!(rc = hub_sel_load_flame(c->r->ch, &ps->sel, f, &unit, err))) {
		*tree = wt_flame_tree_json(f, unit ? unit : "", (size_t)max_nodes);
		if (!*tree)
			rc = wt_err_set(err, WT_ENOMEM, "out of memory rendering the flame graph");
	}
	free(unit);
	wt_flame_free(f);
	return rc;
}

/* Flame graph of one selection → a new FlameGraph message. */
static int flamegraph_msg(pyro_call *c, pyro_sel *ps, int64_t max_nodes, Querier__V1__FlameGraph **out,
			  wt_err *err)
{
	Querier__V1__FlameGraph *fg = malloc(sizeof(*fg));
	json_t *tree = NULL;
	hub_pf_node root;
	int rc;

	memset(&root, 0, sizeof(root));
	*out = fg;
	if (!fg)
		return wt_err_set(err, WT_ENOMEM, "out of memory");
	querier__v1__flame_graph__init(fg);
	if ((rc = load_tree(c, ps, max_nodes, &tree, err)))
		goto out;
	if (hub_pf_node_add(&root, json_object_get(tree, "root"), 0) || hub_pf_flamegraph(&root, fg))
		rc = wt_err_set(err, WT_ENOMEM, "out of memory");
out:
	hub_pf_node_free(&root);
	json_decref(tree);
	return rc;
}

/* ---- the methods ------------------------------------------------------------------ */

/* Rows of a JSONCompact answer ("data"), new reference or NULL + err. */
static json_t *ch_rows(pyro_call *c, wt_buf *sql, wt_err *err)
{
	wt_buf res = WT_BUF_INIT;
	json_t *doc = NULL, *rows = NULL;
	json_error_t je;

	wt_buf_puts(sql, " FORMAT JSONCompact");
	if (!hub_ch_query_buf(c->r->ch, sql, &res, err)) {
		doc = json_loadb(res.data ? (const char *)res.data : "", res.len, 0, &je);
		rows = json_incref(json_object_get(doc, "data"));
		if (!json_is_array(rows)) {
			json_decref(rows);
			rows = NULL;
			wt_err_set(err, WT_EIO, "clickhouse: unreadable JSONCompact answer");
		}
	}
	json_decref(doc);
	wt_buf_free(&res);
	return rows;
}

static int64_t row_i64(json_t *row, size_t i)
{
	json_t *v = json_array_get(row, i);
	return json_is_string(v) ? strtoll(json_string_value(v), NULL, 10) : (int64_t)json_number_value(v);
}

static const char *row_str(json_t *row, size_t i)
{
	const char *s = json_string_value(json_array_get(row, i));
	return s ? s : "";
}

/* WHERE for the listing calls: project, time, and the OR of the matchers
 * (each a selector; __profile_type__ in one restricts its sample type). */
static int list_where(pyro_call *c, wt_buf *w, char **matchers, size_t n, int64_t start_ms, int64_t end_ms,
		      wt_err *err)
{
	hub_sel s;
	size_t i;
	int rc = 0;

	memset(&s, 0, sizeof(s));
	s.project = c->project;
	time_range(c, start_ms, end_ms, 0, &s.from, &s.until);
	hub_sel_where(w, &s, NULL);
	if (n > PYRO_MAX_MATCHERS)
		return wt_err_set(err, WT_EINVAL, "matchers: more than %d selectors", PYRO_MAX_MATCHERS);
	if (!n)
		return 0;
	wt_buf_puts(w, " AND (");
	for (i = 0; i < n && !rc; i++) {
		hub_lsel ls;
		const char *pt;
		char type[HUB_TYPE_MAX];

		memset(&ls, 0, sizeof(ls));
		if ((rc = hub_lsel_parse(matchers[i], &ls, err))) {
			char msg[sizeof(err->msg)];
			snprintf(msg, sizeof(msg), "matchers[%zu]: %s", i, err->msg);
			snprintf(err->msg, sizeof(err->msg), "%s", msg);
		} else {
			wt_buf_puts(w, i ? ") OR (1" : "(1");
			if ((pt = hub_lsel_get(&ls, "__profile_type__"))) {
				char field[32];
				snprintf(field, sizeof(field), "matchers[%zu]", i);
				if (!(rc = type_of_id(pt, field, type, err))) {
					wt_buf_puts(w, " AND sample_type = ");
					hub_sql_quote(w, type);
				}
			}
			hub_lsel_where(w, &ls);
		}
		hub_lsel_free(&ls);
	}
	wt_buf_puts(w, "))");
	return rc;
}

static void m_profile_types(pyro_call *c, const Querier__V1__ProfileTypesRequest *q)
{
	Querier__V1__ProfileTypesResponse resp = QUERIER__V1__PROFILE_TYPES_RESPONSE__INIT;
	wt_buf sql = WT_BUF_INIT;
	wt_err err = {0, ""};
	json_t *rows = NULL, *row;
	size_t i;

	wt_buf_puts(&sql, "SELECT sample_type, min(unit) FROM profile_samples_v1");
	list_where(c, &sql, NULL, 0, q->start, q->end, &err);
	wt_buf_printf(&sql, " GROUP BY sample_type ORDER BY sample_type LIMIT %d", PYRO_MAX_ROWS);
	if (!(rows = ch_rows(c, &sql, &err)))
		goto fail;
	resp.profile_types = calloc(json_array_size(rows) + 1, sizeof(*resp.profile_types));
	if (!resp.profile_types)
		goto oom;
	json_array_foreach(rows, i, row) {
		Types__V1__ProfileType *pt = malloc(sizeof(*pt));
		if (!pt)
			goto oom;
		types__v1__profile_type__init(pt);
		resp.profile_types[resp.n_profile_types++] = pt;
		if (profile_type_of(row_str(row, 0), row_str(row, 1), pt))
			goto oom;
	}
	hub_connect_reply(c->r, c->enc, &resp.base);
	goto out;
oom:
	wt_err_set(&err, WT_ENOMEM, "out of memory");
fail:
	hub_connect_fail(c->r, &err);
out:
	for (i = 0; i < resp.n_profile_types; i++)
		protobuf_c_message_free_unpacked(&resp.profile_types[i]->base, NULL);
	free(resp.profile_types);
	json_decref(rows);
	wt_buf_free(&sql);
}

/* names[] of a LabelNames/LabelValues answer from a one-column rowset. */
static void reply_names(pyro_call *c, json_t *rows, int values)
{
	Types__V1__LabelNamesResponse ln = TYPES__V1__LABEL_NAMES_RESPONSE__INIT;
	Types__V1__LabelValuesResponse lv = TYPES__V1__LABEL_VALUES_RESPONSE__INIT;
	char **names = calloc(json_array_size(rows) + 1, sizeof(char *));
	size_t i, n = 0;
	json_t *row;
	wt_err err = {0, ""};

	if (!names) {
		wt_err_set(&err, WT_ENOMEM, "out of memory");
		hub_connect_fail(c->r, &err);
		return;
	}
	json_array_foreach(rows, i, row)
		if (*row_str(row, 0))
			names[n++] = (char *)row_str(row, 0);
	if (values) {
		lv.names = names;
		lv.n_names = n;
		hub_connect_reply(c->r, c->enc, &lv.base);
	} else {
		ln.names = names;
		ln.n_names = n;
		hub_connect_reply(c->r, c->enc, &ln.base);
	}
	free(names);
}

static void m_label_names(pyro_call *c, const Types__V1__LabelNamesRequest *q)
{
	static const char *const cols[] = {"host", "thread", "container", "span_id", "trace_id"};
	wt_buf sql = WT_BUF_INIT, w = WT_BUF_INIT;
	wt_err err = {0, ""};
	json_t *rows = NULL;
	size_t j;

	if (list_where(c, &w, q->matchers, q->n_matchers, q->start, q->end, &err))
		goto fail;
	wt_buf_putc(&w, '\0');
	wt_buf_puts(&sql, "SELECT k FROM (SELECT '__profile_type__' AS k UNION ALL SELECT 'service_name' AS k"
		    " FROM profile_samples_v1");
	wt_buf_puts(&sql, (char *)w.data);
	wt_buf_puts(&sql, " LIMIT 1");
	for (j = 0; j < sizeof(cols) / sizeof(cols[0]); j++) {
		wt_buf_printf(&sql, " UNION ALL SELECT '%s' AS k FROM profile_samples_v1", cols[j]);
		wt_buf_puts(&sql, (char *)w.data);
		wt_buf_printf(&sql, " AND %s != '' LIMIT 1", cols[j]);
	}
	wt_buf_puts(&sql, " UNION ALL SELECT arrayJoin(labels.key) AS k FROM profile_samples_v1");
	wt_buf_puts(&sql, (char *)w.data);
	wt_buf_printf(&sql, ") GROUP BY k ORDER BY k LIMIT %d", PYRO_MAX_ROWS);
	if (w.oom || !(rows = ch_rows(c, &sql, &err)))
		goto fail;
	reply_names(c, rows, 0);
	goto out;
fail:
	hub_connect_fail(c->r, &err);
out:
	json_decref(rows);
	wt_buf_free(&sql);
	wt_buf_free(&w);
}

static void m_label_values(pyro_call *c, const Types__V1__LabelValuesRequest *q)
{
	wt_buf sql = WT_BUF_INIT;
	wt_err err = {0, ""};
	json_t *rows = NULL;

	if (!q->name || !*q->name) {
		wt_err_set(&err, WT_EINVAL, "name: missing");
		goto fail;
	}
	if (!strcmp(q->name, "__profile_type__")) {
		/* the ids of the types present, as ProfileTypes lists them */
		json_t *row;
		size_t i;
		wt_buf_puts(&sql, "SELECT sample_type, min(unit) FROM profile_samples_v1");
		if (list_where(c, &sql, q->matchers, q->n_matchers, q->start, q->end, &err))
			goto fail;
		wt_buf_printf(&sql, " GROUP BY sample_type ORDER BY sample_type LIMIT %d", PYRO_MAX_ROWS);
		if (!(rows = ch_rows(c, &sql, &err)))
			goto fail;
		json_array_foreach(rows, i, row) {
			Types__V1__ProfileType pt = TYPES__V1__PROFILE_TYPE__INIT;
			profile_type_of(row_str(row, 0), row_str(row, 1), &pt);
			json_array_set_new(row, 0, json_string(pt.id ? pt.id : ""));
			free(pt.id), free(pt.name), free(pt.sample_type), free(pt.sample_unit);
			free(pt.period_type), free(pt.period_unit);
		}
		reply_names(c, rows, 1);
		goto out;
	}
	if (!hub_label_key_valid(q->name) && strcmp(q->name, "service_name")) {
		wt_err_set(&err, WT_EINVAL, "name: \"%.64s\" is not a label name", q->name);
		goto fail;
	}
	wt_buf_puts(&sql, "SELECT v FROM (SELECT ");
	hub_lsel_column(&sql, q->name);
	wt_buf_puts(&sql, " AS v FROM profile_samples_v1");
	if (list_where(c, &sql, q->matchers, q->n_matchers, q->start, q->end, &err))
		goto fail;
	wt_buf_printf(&sql, ") WHERE v != '' GROUP BY v ORDER BY v LIMIT %d", PYRO_MAX_ROWS);
	if (!(rows = ch_rows(c, &sql, &err)))
		goto fail;
	reply_names(c, rows, 1);
	goto out;
fail:
	hub_connect_fail(c->r, &err);
out:
	json_decref(rows);
	wt_buf_free(&sql);
}

/* Label sets: service, profile type, host, container and the stored labels
 * (thread, span_id and trace_id are per-sample and left out unless named
 * in label_names). */
static void m_series(pyro_call *c, const Querier__V1__SeriesRequest *q)
{
	Querier__V1__SeriesResponse resp = QUERIER__V1__SERIES_RESPONSE__INIT;
	wt_buf sql = WT_BUF_INIT;
	wt_err err = {0, ""};
	json_t *rows = NULL, *row, *seen = json_object();
	size_t i, k;
	int want_thread = 0, want_span = 0, want_trace = 0;

	for (k = 0; k < q->n_label_names; k++) {
		want_thread |= !strcmp(q->label_names[k], "thread");
		want_span |= !strcmp(q->label_names[k], "span_id");
		want_trace |= !strcmp(q->label_names[k], "trace_id");
	}
	wt_buf_printf(&sql, "SELECT service, sample_type, min(unit), host, container, %s, %s, %s, labels.key,"
		      " labels.value FROM profile_samples_v1", want_thread ? "thread" : "''",
		      want_span ? "span_id" : "''", want_trace ? "trace_id" : "''");
	if (!seen || list_where(c, &sql, q->matchers, q->n_matchers, q->start, q->end, &err))
		goto fail;
	wt_buf_printf(&sql, " GROUP BY service, sample_type, host, container, %s, %s, %s, labels.key, labels.value"
		      " ORDER BY service, sample_type, host, container, %s, %s, %s, labels.key, labels.value LIMIT %d",
		      want_thread ? "thread" : "''", want_span ? "span_id" : "''", want_trace ? "trace_id" : "''",
		      want_thread ? "thread" : "''", want_span ? "span_id" : "''", want_trace ? "trace_id" : "''",
		      PYRO_MAX_ROWS);
	if (!(rows = ch_rows(c, &sql, &err)))
		goto fail;
	resp.labels_set = calloc(json_array_size(rows) + 1, sizeof(*resp.labels_set));
	if (!resp.labels_set)
		goto oom;
	json_array_foreach(rows, i, row) {
		Types__V1__ProfileType pt = TYPES__V1__PROFILE_TYPE__INIT;
		const char *names[8 + 64], *vals[8 + 64];
		json_t *lk = json_array_get(row, 8), *lv = json_array_get(row, 9);
		size_t n = 0, m, kept = 0;
		wt_buf key = WT_BUF_INIT;
		Types__V1__Labels *ls;
		int dup;

		if (profile_type_of(row_str(row, 1), row_str(row, 2), &pt))
			goto oom_pt;
		names[n] = "service_name", vals[n++] = row_str(row, 0);
		names[n] = "__profile_type__", vals[n++] = pt.id;
		names[n] = "__name__", vals[n++] = pt.name;
		names[n] = "host", vals[n++] = row_str(row, 3);
		names[n] = "container", vals[n++] = row_str(row, 4);
		names[n] = "thread", vals[n++] = row_str(row, 5);
		names[n] = "span_id", vals[n++] = row_str(row, 6);
		names[n] = "trace_id", vals[n++] = row_str(row, 7);
		for (m = 0; m < json_array_size(lk) && n < 8 + 64; m++) {
			names[n] = json_string_value(json_array_get(lk, m));
			vals[n] = json_string_value(json_array_get(lv, m));
			if (names[n] && vals[n])
				n++;
		}
		/* keep the non-empty labels named in label_names (all when none) */
		for (m = 0; m < n; m++) {
			int keep = vals[m][0] != '\0';
			if (keep && q->n_label_names) {
				keep = 0;
				for (k = 0; k < q->n_label_names; k++)
					keep |= !strcmp(q->label_names[k], names[m]);
			}
			if (keep) {
				names[kept] = names[m], vals[kept++] = vals[m];
				wt_buf_printf(&key, "%s\x1f%s\x1e", names[m], vals[m]);
			}
		}
		wt_buf_putc(&key, '\0');
		dup = key.oom || json_object_get(seen, (char *)key.data) != NULL;
		if (!dup)
			json_object_set_new(seen, (char *)key.data, json_true());
		wt_buf_free(&key);
		if (!dup && (ls = malloc(sizeof(*ls)))) {
			types__v1__labels__init(ls);
			resp.labels_set[resp.n_labels_set++] = ls;
			ls->labels = calloc(kept + 1, sizeof(*ls->labels));
			if (!ls->labels)
				dup = -1;
			for (m = 0; ls->labels && m < kept; m++) {
				Types__V1__LabelPair *lp = malloc(sizeof(*lp));
				if (!lp) {
					dup = -1;
					break;
				}
				types__v1__label_pair__init(lp);
				lp->name = strdup(names[m]);
				lp->value = strdup(vals[m]);
				ls->labels[ls->n_labels++] = lp;
				if (!lp->name || !lp->value) {
					dup = -1;
					break;
				}
			}
		} else if (!dup) {
			dup = -1;
		}
		free(pt.id), free(pt.name), free(pt.sample_type), free(pt.sample_unit);
		free(pt.period_type), free(pt.period_unit);
		if (dup < 0)
			goto oom;
		continue;
oom_pt:
		free(pt.id), free(pt.name), free(pt.sample_type), free(pt.sample_unit);
		free(pt.period_type), free(pt.period_unit);
		goto oom;
	}
	hub_connect_reply(c->r, c->enc, &resp.base);
	goto out;
oom:
	wt_err_set(&err, WT_ENOMEM, "out of memory");
fail:
	hub_connect_fail(c->r, &err);
out:
	for (i = 0; i < resp.n_labels_set; i++)
		protobuf_c_message_free_unpacked(&resp.labels_set[i]->base, NULL);
	free(resp.labels_set);
	json_decref(rows);
	json_decref(seen);
	wt_buf_free(&sql);
}

static void m_select_merge_stacktraces(pyro_call *c, const Querier__V1__SelectMergeStacktracesRequest *q)
{
	Querier__V1__SelectMergeStacktracesResponse resp = QUERIER__V1__SELECT_MERGE_STACKTRACES_RESPONSE__INIT;
	wt_err err = {0, ""};
	pyro_sel ps;

	if (sel_init(c, &ps, q->profile_typeid, q->label_selector, q->start, q->end, "", &err) ||
	    flamegraph_msg(c, &ps, q->max_nodes, &resp.flamegraph, &err))
		hub_connect_fail(c->r, &err);
	else
		hub_connect_reply(c->r, c->enc, &resp.base);
	if (resp.flamegraph)
		protobuf_c_message_free_unpacked(&resp.flamegraph->base, NULL);
	hub_lsel_free(&ps.ls);
}

/* span_selector → span_id =~ "(a|b|…)" on top of the label selector. */
static void m_select_merge_span_profile(pyro_call *c, const Querier__V1__SelectMergeSpanProfileRequest *q)
{
	Querier__V1__SelectMergeSpanProfileResponse resp = QUERIER__V1__SELECT_MERGE_SPAN_PROFILE_RESPONSE__INIT;
	wt_err err = {0, ""};
	wt_buf re = WT_BUF_INIT;
	pyro_sel ps;
	size_t i;

	if (sel_init(c, &ps, q->profile_typeid, q->label_selector, q->start, q->end, "", &err))
		goto fail;
	if (!q->n_span_selector) {
		wt_err_set(&err, WT_EINVAL, "span_selector: no span ids");
		goto fail;
	}
	for (i = 0; i < q->n_span_selector; i++) {
		const char *id = q->span_selector[i];
		size_t len = strlen(id);
		if (!len || len > 32 || strspn(id, "0123456789abcdefABCDEF") != len) {
			wt_err_set(&err, WT_EINVAL, "span_selector[%zu]: \"%.64s\" is not a hex span id", i, id);
			goto fail;
		}
		wt_buf_printf(&re, "%s%s", i ? "|" : "", id);
	}
	wt_buf_putc(&re, '\0');
	if (re.oom || hub_lsel_add(&ps.ls, "span_id", HUB_LM_RE, (char *)re.data)) {
		wt_err_set(&err, WT_EINVAL, "span_selector: too many matchers");
		goto fail;
	}
	if (flamegraph_msg(c, &ps, q->max_nodes, &resp.flamegraph, &err))
		goto fail;
	hub_connect_reply(c->r, c->enc, &resp.base);
	goto out;
fail:
	hub_connect_fail(c->r, &err);
out:
	if (resp.flamegraph)
		protobuf_c_message_free_unpacked(&resp.flamegraph->base, NULL);
	hub_lsel_free(&ps.ls);
	wt_buf_free(&re);
}

static void m_select_merge_profile(pyro_call *c, const Querier__V1__SelectMergeProfileRequest *q)
{
	wt_err err = {0, ""};
	pyro_sel ps;
	json_t *tree = NULL;
	hub_pf_node root;
	wt_profile *p = NULL;
	wt_limits lim;
	uint8_t *bytes = NULL;
	size_t blen = 0, ti;
	Perftools__Profiles__Profile *msg = NULL;
	const struct type_map *e;

	memset(&root, 0, sizeof(root));
	if (sel_init(c, &ps, q->profile_typeid, q->label_selector, q->start, q->end, "", &err))
		goto fail;
	/* max_nodes 0: the whole tree (pprof is what tools re-aggregate) */
	if (load_tree(c, &ps, q->max_nodes > 0 ? q->max_nodes : 100000000, &tree, &err))
		goto fail;
	wt_limits_default(&lim);
	lim.max_stack_depth = HUB_PF_MAX_DEPTH;
	e = type_entry(ps.sel.type);
	if (!(p = wt_profile_new(&lim)) || hub_pf_node_add(&root, json_object_get(tree, "root"), 0)) {
		wt_err_set(&err, WT_ENOMEM, "out of memory");
		goto fail;
	}
	if (wt_profile_add_type(p, e ? e->sample_type : ps.sel.type,
				json_string_value(json_object_get(tree, "unit")), NULL, &ti, &err))
		goto fail;
	if (e) {
		uint32_t pt, pu;
		if (wt_profile_intern_cstr(p, e->period_type, &pt, &err) ||
		    wt_profile_intern_cstr(p, e->period_unit, &pu, &err))
			goto fail;
		p->period_type = pt;
		p->period_unit = pu;
	}
	p->time_ns = ps.sel.from;
	p->duration_ns = ps.sel.until - ps.sel.from;
	if (hub_pf_to_profile(&root, p, &err) || wt_pprof_encode(p, 0, &bytes, &blen, &err))
		goto fail;
	if (!(msg = perftools__profiles__profile__unpack(NULL, blen, bytes))) {
		wt_err_set(&err, WT_EIO, "encoding the merged profile failed");
		goto fail;
	}
	hub_connect_reply(c->r, c->enc, &msg->base);
	goto out;
fail:
	hub_connect_fail(c->r, &err);
out:
	if (msg)
		perftools__profiles__profile__free_unpacked(msg, NULL);
	free(bytes);
	wt_profile_free(p);
	hub_pf_node_free(&root);
	json_decref(tree);
	hub_lsel_free(&ps.ls);
}

typedef struct series_acc {
	Types__V1__Series *s;
	double sum;
} series_acc;

static int acc_cmp(const void *a, const void *b)
{
	double x = ((const series_acc *)a)->sum, y = ((const series_acc *)b)->sum;
	return x < y ? 1 : x > y ? -1 : 0;
}

/* Points at from + k·step (the hub's series endpoint uses the same grid):
 * sum, or average per upload (profile) in the bucket. */
static void m_select_series(pyro_call *c, const Querier__V1__SelectSeriesRequest *q)
{
	Querier__V1__SelectSeriesResponse resp = QUERIER__V1__SELECT_SERIES_RESPONSE__INIT;
	wt_buf sql = WT_BUF_INIT, prev = WT_BUF_INIT, key = WT_BUF_INIT;
	wt_err err = {0, ""};
	json_t *rows = NULL, *row;
	series_acc *acc = NULL;
	size_t nacc = 0, i, g;
	pyro_sel ps;
	int64_t step, min_step;
	int avg = q->aggregation == TYPES__V1__TIME_SERIES_AGGREGATION_TYPE__TIME_SERIES_AGGREGATION_TYPE_AVERAGE;

	if (sel_init(c, &ps, q->profile_typeid, q->label_selector, q->start, q->end, "", &err))
		goto fail;
	if (!(q->step >= 0) || q->step > 1e9) {
		wt_err_set(&err, WT_EINVAL, "step: %g is not a number of seconds", q->step);
		goto fail;
	}
	if (q->n_group_by > 16) {
		wt_err_set(&err, WT_EINVAL, "group_by: more than 16 labels");
		goto fail;
	}
	step = (int64_t)llround(q->step * 1e9);
	min_step = (ps.sel.until - ps.sel.from) / PYRO_MAX_POINTS + 1;
	if (step < min_step)
		step = step <= 0 && min_step < 15000000000LL ? 15000000000LL : min_step;
	wt_buf_printf(&sql, "SELECT %lld + intDiv(time_ns - %lld, %lld) * %lld AS t", (long long)ps.sel.from,
		      (long long)ps.sel.from, (long long)step, (long long)step);
	for (g = 0; g < q->n_group_by; g++) {
		if (!hub_label_key_valid(q->group_by[g]) && strcmp(q->group_by[g], "service_name")) {
			wt_err_set(&err, WT_EINVAL, "group_by[%zu]: \"%.64s\" is not a label name", g, q->group_by[g]);
			goto fail;
		}
		wt_buf_puts(&sql, ", ");
		hub_lsel_column(&sql, q->group_by[g]);
	}
	wt_buf_printf(&sql, ", toString(sum(value)), %s FROM profile_samples_v1",
		      avg ? "uniqExact(upload_id)" : "1");
	hub_sel_where(&sql, &ps.sel, ps.sel.type);
	wt_buf_puts(&sql, " GROUP BY t");
	for (g = 0; g < q->n_group_by; g++) {
		wt_buf_puts(&sql, ", ");
		hub_lsel_column(&sql, q->group_by[g]);
	}
	wt_buf_puts(&sql, " ORDER BY ");
	for (g = 0; g < q->n_group_by; g++) {
		hub_lsel_column(&sql, q->group_by[g]);
		wt_buf_puts(&sql, ", ");
	}
	wt_buf_printf(&sql, "t LIMIT %d", PYRO_MAX_SERIES_ROWS);
	if (!(rows = ch_rows(c, &sql, &err)))
		goto fail;
	if (!(acc = calloc(json_array_size(rows) + 1, sizeof(*acc))))
		goto oom;
	json_array_foreach(rows, i, row) {
		series_acc *a;
		Types__V1__Point *pt;
		int64_t n = row_i64(row, 2 + q->n_group_by);
		double v = strtod(row_str(row, 1 + q->n_group_by), NULL);

		wt_buf_reset(&key);
		for (g = 0; g < q->n_group_by; g++)
			wt_buf_printf(&key, "%s\x1f", row_str(row, 1 + g));
		wt_buf_putc(&key, '\0');
		if (key.oom)
			goto oom;
		if (!nacc || prev.len != key.len || memcmp(prev.data, key.data, key.len)) {
			Types__V1__Series *s = malloc(sizeof(*s));
			if (!s)
				goto oom;
			types__v1__series__init(s);
			acc[nacc++].s = s;
			wt_buf_reset(&prev);
			wt_buf_append(&prev, key.data, key.len);
			if (!(s->labels = calloc(q->n_group_by + 1, sizeof(*s->labels))) ||
			    !(s->points = calloc(json_array_size(rows) - i, sizeof(*s->points))))
				goto oom;
			for (g = 0; g < q->n_group_by; g++) {
				Types__V1__LabelPair *lp = malloc(sizeof(*lp));
				if (!lp)
					goto oom;
				types__v1__label_pair__init(lp);
				s->labels[s->n_labels++] = lp;
				if (!(lp->name = strdup(q->group_by[g])) || !(lp->value = strdup(row_str(row, 1 + g))))
					goto oom;
			}
		}
		a = &acc[nacc - 1];
		if (!(pt = malloc(sizeof(*pt))))
			goto oom;
		types__v1__point__init(pt);
		pt->timestamp = row_i64(row, 0) / 1000000LL;
		pt->value = avg && n > 0 ? v / (double)n : v;
		a->s->points[a->s->n_points++] = pt;
		a->sum += pt->value;
	}
	if (q->limit > 0 && (size_t)q->limit < nacc) {
		qsort(acc, nacc, sizeof(*acc), acc_cmp);
		for (i = (size_t)q->limit; i < nacc; i++)
			protobuf_c_message_free_unpacked(&acc[i].s->base, NULL);
		nacc = (size_t)q->limit;
	}
	if (!(resp.series = calloc(nacc + 1, sizeof(*resp.series))))
		goto oom;
	for (i = 0; i < nacc; i++)
		resp.series[i] = acc[i].s;
	resp.n_series = nacc;
	hub_connect_reply(c->r, c->enc, &resp.base);
	goto out;
oom:
	wt_err_set(&err, WT_ENOMEM, "out of memory");
fail:
	hub_connect_fail(c->r, &err);
out:
	for (i = 0; i < nacc; i++)
		protobuf_c_message_free_unpacked(&acc[i].s->base, NULL);
	free(acc);
	free(resp.series);
	json_decref(rows);
	wt_buf_free(&sql);
	wt_buf_free(&prev);
	wt_buf_free(&key);
	hub_lsel_free(&ps.ls);
}

static void m_diff(pyro_call *c, const Querier__V1__DiffRequest *q)
{
	Querier__V1__DiffResponse resp = QUERIER__V1__DIFF_RESPONSE__INIT;
	Querier__V1__FlameGraphDiff *fd = NULL;
	const Querier__V1__SelectMergeStacktracesRequest *side[2] = {q->left, q->right};
	json_t *tree[2] = {NULL, NULL};
	wt_err err = {0, ""};
	pyro_sel ps[2];
	hub_pf_node root;
	int k;

	memset(&root, 0, sizeof(root));
	memset(ps, 0, sizeof(ps));
	for (k = 0; k < 2; k++) {
		if (!side[k]) {
			wt_err_set(&err, WT_EINVAL, "%s: missing", k ? "right" : "left");
			goto fail;
		}
		if (sel_init(c, &ps[k], side[k]->profile_typeid, side[k]->label_selector, side[k]->start,
			     side[k]->end, k ? "right." : "left.", &err) ||
		    load_tree(c, &ps[k], side[k]->max_nodes, &tree[k], &err))
			goto fail;
		if (hub_pf_node_add(&root, json_object_get(tree[k], "root"), k))
			goto oom;
	}
	if (!(fd = malloc(sizeof(*fd))))
		goto oom;
	querier__v1__flame_graph_diff__init(fd);
	resp.flamegraph = fd;
	if (hub_pf_diff(&root, fd))
		goto oom;
	hub_connect_reply(c->r, c->enc, &resp.base);
	goto out;
oom:
	wt_err_set(&err, WT_ENOMEM, "out of memory");
fail:
	hub_connect_fail(c->r, &err);
out:
	if (fd)
		protobuf_c_message_free_unpacked(&fd->base, NULL);
	hub_pf_node_free(&root);
	for (k = 0; k < 2; k++) {
		json_decref(tree[k]);
		hub_lsel_free(&ps[k].ls);
	}
}

/* ---- routing ---------------------------------------------------------------------- */

typedef void (*pyro_fn)(pyro_call *c, const void *req);

static const struct method {
	const char *name;
	const ProtobufCMessageDescriptor *in;
	pyro_fn fn;
} methods[] = {
	{"ProfileTypes", &querier__v1__profile_types_request__descriptor, (pyro_fn)m_profile_types},
	{"LabelNames", &types__v1__label_names_request__descriptor, (pyro_fn)m_label_names},
	{"LabelValues", &types__v1__label_values_request__descriptor, (pyro_fn)m_label_values},
	{"Series", &querier__v1__series_request__descriptor, (pyro_fn)m_series},
	{"SelectMergeStacktraces", &querier__v1__select_merge_stacktraces_request__descriptor,
	 (pyro_fn)m_select_merge_stacktraces},
	{"SelectMergeSpanProfile", &querier__v1__select_merge_span_profile_request__descriptor,
	 (pyro_fn)m_select_merge_span_profile},
	{"SelectMergeProfile", &querier__v1__select_merge_profile_request__descriptor,
	 (pyro_fn)m_select_merge_profile},
	{"SelectSeries", &querier__v1__select_series_request__descriptor, (pyro_fn)m_select_series},
	{"Diff", &querier__v1__diff_request__descriptor, (pyro_fn)m_diff},
};

static void free_msg(void *m)
{
	protobuf_c_message_free_unpacked(m, NULL);
}

/* The route wrapper (server.c, HUB_AUTH_CONNECT) has checked the token
 * and the read role on the tenant's project (r->project); body and
 * decoded message belong to r->arena. */
int hub_handle_pyroscope(hub_req *r, wt_err *err)
{
	struct evkeyvalq *h = evhttp_request_get_input_headers(r->req);
	const char *ct, *ce;
	pyro_call c;
	size_t i, blen = 0;
	uint8_t *body = NULL;
	ProtobufCMessage *msg = NULL;
	int rc;

	memset(&c, 0, sizeof(c));
	c.r = r;
	c.enc = HUB_CONNECT_JSON;
	snprintf(c.project, sizeof(c.project), "%s", r->project);
	for (i = 0; i < sizeof(methods) / sizeof(methods[0]); i++)
		if (!strcmp(r->id, methods[i].name))
			break;
	if (i == sizeof(methods) / sizeof(methods[0])) {
		/* Connect: an unknown procedure is 404 "unimplemented" */
		json_t *o = hub_req_own_json(r, json_pack("{s:s, s:s}", "code", "unimplemented", "message",
							  "this QuerierService method is not served by Watchtower"));
		char *s = o ? json_dumps(o, JSON_COMPACT) : NULL;
		if (!s || wt_arena_defer(&r->arena, free, s))
			return wt_err_set(err, WT_ENOMEM, "out of memory");
		hub_req_count(r, 404);
		wt_http_send_bytes(r->req, 404, "application/json", s, strlen(s));
		return 0;
	}
	ct = evhttp_find_header(h, "Content-Type");
	if (ct && !strncasecmp(ct, "application/proto", 17)) {
		c.enc = HUB_CONNECT_PROTO;
	} else if (!ct || strncasecmp(ct, "application/json", 16)) {
		json_t *o = hub_req_own_json(r, json_pack("{s:s, s:s}", "code", "invalid_argument", "message",
							  "Content-Type: use application/proto or application/json (Connect unary)"));
		char *s = o ? json_dumps(o, JSON_COMPACT) : NULL;
		if (!s || wt_arena_defer(&r->arena, free, s))
			return wt_err_set(err, WT_ENOMEM, "out of memory");
		hub_req_count(r, 415);
		evhttp_add_header(evhttp_request_get_output_headers(r->req), "Accept-Post",
				  "application/json, application/proto");
		wt_http_send_bytes(r->req, 415, "application/json", s, strlen(s));
		return 0;
	}
	if ((rc = hub_ch_health_check(&r->ctx->store, err)))
		return rc;
	rc = wt_http_body(r->req, PYRO_MAX_BODY, &body, &blen, err);
	if (body && wt_arena_defer(&r->arena, free, body))
		return wt_err_set(err, WT_ENOMEM, "out of memory");
	if (rc)
		return rc;
	ce = evhttp_find_header(h, "Content-Encoding");
	if (ce && !strcasecmp(ce, "gzip")) {
		uint8_t *plain = NULL;
		size_t plen = 0;
		rc = wt_gunzip(body, blen, PYRO_MAX_BODY, &plain, &plen, err);
		if (plain && wt_arena_defer(&r->arena, free, plain))
			return wt_err_set(err, WT_ENOMEM, "out of memory");
		if (rc)
			return rc;
		body = plain;
		blen = plen;
	} else if (ce && strcasecmp(ce, "identity")) {
		return wt_err_set(err, WT_EINVAL, "Content-Encoding: \"%.32s\" is not supported (gzip, identity)", ce);
	}
	rc = hub_connect_decode(methods[i].in, c.enc, body, blen, &msg, err);
	if (msg && wt_arena_defer(&r->arena, free_msg, msg))
		return wt_err_set(err, WT_ENOMEM, "out of memory");
	if (rc)
		return rc;
	methods[i].fn(&c, msg);
	atomic_fetch_add(&r->ctx->metrics.queries_total, 1);
	return 0;
}
