/*
 * http_diff.c — GET /v1/projects/{p}/profiles/diff: a base selection
 * (base_service, base_type, base_from, base_until, base_label.K=V,
 * base_span_id, base_trace_id; each defaults to the target's value)
 * against the target selection (the common parameters).
 *
 * Each side is aggregated by ClickHouse exactly like the table/flamegraph
 * views (selection.c) and built into a wt_flame; the two flame trees and
 * function tables are then merged by name. Per function:
 *   change       = target_self/target_total − base_self/base_total
 *                  (normalize=true, default), or target_self − base_self;
 *   significance = the two-proportion z statistic of the self shares
 *                  (stats.h) computed on sample counts: values of a count
 *                  unit are counts; weighted types are divided by their
 *                  side's mean value per sample, taken from the paired
 *                  count type of the same selection (cpu → samples,
 *                  inuse_space → inuse_objects …); without one,
 *                  nanoseconds are divided by `period_ns` (default 10 ms,
 *                  the 100 Hz of Go and the eBPF sampler) and any other
 *                  unit is used as weights (counts = values: the test is
 *                  then only indicative). `"p_value"` is the two-sided
 *                  normal tail of z.
 * Rows are sorted by |change| descending.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>

#include <xxhash.h>

#include "analysis.h"
#include "clock.h"
#include "http_server.h"
#include "json_str.h"
#include "select.h"
#include "selection.h"
#include "stats.h"
#include "u64map.h"

#define DEFAULT_DIFF_LIMIT 10000
#define DEFAULT_PERIOD_NS 10000000L

typedef struct side {
	hub_sel sel;
	wt_flame *f;
	char *unit;
	int64_t total;
	double scale;       /* value units per sample */
	const char *basis;  /* how scale was found */
} side;

typedef struct row {
	const char *function;
	int64_t bs, bt, ts, tt;
	double change, z;
} row;

static int find_scale(hub_ch *ch, side *s, long period_ns, wt_err *err)
{
	const char *pair = hub_count_type_of(s->sel.type);
	int64_t cnt = 0;

	s->scale = 1;
	s->basis = "counts";
	if (hub_unit_is_count(s->unit ? s->unit : ""))
		return 0;
	if (pair && s->total > 0) {
		if (hub_sel_total(ch, &s->sel, pair, &cnt, err))
			return err->code;
		if (cnt > 0) {
			s->scale = (double)s->total / (double)cnt;
			s->basis = "paired_count_type";
			return 0;
		}
	}
	if (s->unit && !strcmp(s->unit, "nanoseconds")) {
		s->scale = (double)period_ns;
		s->basis = "period_ns";
		return 0;
	}
	s->basis = "weights";
	return 0;
}

static int64_t node_weight(const json_t *n)
{
	return json_integer_value(json_object_get(n, "base_total")) +
	       json_integer_value(json_object_get(n, "target_total"));
}

static int cmp_node(const void *a, const void *b)
{
	const json_t *x = *(json_t *const *)a, *y = *(json_t *const *)b;
	int64_t wx = node_weight(x), wy = node_weight(y);

	if (wx != wy)
		return wx < wy ? 1 : -1;
	return strcmp(json_string_value(json_object_get(x, "name")),
		      json_string_value(json_object_get(y, "name")));
}

/* Children heaviest first (base + target total), then by name: a stable,
 * deterministic order for the flame view. */
static int sort_children(json_t *kids)
{
	size_t n = json_array_size(kids), i;
	json_t **v;

	if (n < 2)
		return 0;
	if (!(v = malloc(n * sizeof(*v))))
		return WT_ENOMEM;
	for (i = 0; i < n; i++)
		v[i] = json_incref(json_array_get(kids, i));
	qsort(v, n, sizeof(*v), cmp_node);
	json_array_clear(kids);
	for (i = 0; i < n; i++)
		json_array_append_new(kids, v[i]);
	free(v);
	return 0;
}

/* Merge two flame nodes (either may be NULL) into a diff node. */
static json_t *merge_node(json_t *b, json_t *t, const char *name)
{
	json_t *o = json_object(), *kids = json_array(), *idx = json_object();
	json_t *sides[2] = {b, t};
	const char *key;
	json_t *pair;
	size_t i, k;

	if (!o || !kids || !idx)
		goto oom;
	json_object_set_new(o, "name", json_string(name));
	json_object_set_new(o, "base_self", json_integer(b ? json_integer_value(json_object_get(b, "self")) : 0));
	json_object_set_new(o, "base_total", json_integer(b ? json_integer_value(json_object_get(b, "total")) : 0));
	json_object_set_new(o, "target_self", json_integer(t ? json_integer_value(json_object_get(t, "self")) : 0));
	json_object_set_new(o, "target_total",
			    json_integer(t ? json_integer_value(json_object_get(t, "total")) : 0));
	for (k = 0; k < 2; k++) {
		json_t *ch = sides[k] ? json_object_get(sides[k], "children") : NULL, *c;
		json_array_foreach(ch, i, c) {
			const char *n = json_string_value(json_object_get(c, "name"));
			if (!n)
				continue;
			pair = json_object_get(idx, n);
			if (!pair) {
				pair = json_pack("[nn]");
				if (!pair || json_object_set_new(idx, n, pair))
					goto oom;
			}
			json_array_set(pair, k, c);
		}
	}
	json_object_foreach(idx, key, pair) {
		json_t *cb = json_array_get(pair, 0), *ct = json_array_get(pair, 1);
		json_t *m = merge_node(json_is_null(cb) ? NULL : cb, json_is_null(ct) ? NULL : ct, key);
		if (!m || json_array_append_new(kids, m))
			goto oom;
	}
	json_decref(idx);
	idx = NULL;
	if (sort_children(kids))
		goto oom;
	json_object_set_new(o, "children", kids);
	return o;
oom:
	json_decref(idx);
	json_decref(kids);
	json_decref(o);
	return NULL;
}

static int cmp_row(const void *a, const void *b)
{
	const row *x = a, *y = b;
	double ax = fabs(x->change), ay = fabs(y->change);

	if (ax != ay)
		return ax < ay ? 1 : -1;
	if (x->ts + x->bs != y->ts + y->bs)
		return x->ts + x->bs < y->ts + y->bs ? 1 : -1;
	return strcmp(x->function, y->function);
}

/* cmp_row for wt_select_top (select.h) */
static int cmp_row_ctx(const void *a, const void *b, void *ctx)
{
	(void)ctx;
	return cmp_row(a, b);
}

/* Function rows of both builders merged by name into *rows (n; names
 * owned by the builders): straight from the builders' per-name figures,
 * with no table rendered and no JSON in between. */
static int merge_rows(const wt_flame *bf, const wt_flame *tf, row **rows, size_t *n)
{
	const wt_flame *fs[2] = {bf, tf};
	size_t cap = wt_flame_nnames(bf) + wt_flame_nnames(tf) + 1, m = 0, k, i, slot;
	wt_u64map idx = {0}; /* xxh3(name) → first row; collisions chain via next */
	uint32_t *next = malloc(cap * sizeof(*next));
	row *out = calloc(cap, sizeof(*out));
	int rc = 0;

	*rows = NULL;
	*n = 0;
	/* sized once for every name (rows of both sides) */
	if (!next || !out || wt_u64map_reserve(&idx, cap)) {
		rc = WT_ENOMEM;
		goto out;
	}
	for (k = 0; k < 2; k++)
		for (i = 0; i < wt_flame_nnames(fs[k]); i++) {
			const char *name;
			int64_t self, total;
			uint64_t h;
			uint32_t j;

			if (!wt_flame_fn(fs[k], i, &name, &self, &total))
				continue;
			h = XXH3_64bits(name, strlen(name));
			if (wt_u64map_slot(&idx, h, &slot)) {
				rc = WT_ENOMEM;
				goto out;
			}
			for (j = idx.vals[slot]; j != WT_U64MAP_EMPTY; j = next[j])
				if (!strcmp(out[j].function, name))
					break;
			if (j == WT_U64MAP_EMPTY) {
				j = (uint32_t)m++;
				out[j].function = name;
				next[j] = idx.vals[slot];
				if (idx.vals[slot] == WT_U64MAP_EMPTY) {
					idx.keys[slot] = h;
					idx.n++;
				}
				idx.vals[slot] = j;
			}
			if (k == 0) {
				out[j].bs = self;
				out[j].bt = total;
			} else {
				out[j].ts = self;
				out[j].tt = total;
			}
		}
	*rows = out;
	*n = m;
	out = NULL;
out:
	free(out);
	free(next);
	wt_u64map_free(&idx);
	return rc;
}

static json_t *sel_json(const side *s)
{
	json_t *o = json_pack("{s:s, s:I, s:I}", "type", s->sel.type, "from", (json_int_t)s->sel.from,
			      "until", (json_int_t)s->sel.until);
	size_t i;

	if (!o)
		return NULL;
	if (s->sel.hp.service)
		json_object_set_new(o, "service", json_string(s->sel.hp.service));
	if (s->sel.hp.nlabels) {
		json_t *l = json_object();
		for (i = 0; l && i < s->sel.hp.nlabels; i++)
			json_object_set_new(l, s->sel.hp.labels[i].key, json_string(s->sel.hp.labels[i].value));
		json_object_set_new(o, "labels", l);
	}
	json_object_set_new(o, "unit", json_string(s->unit ? s->unit : ""));
	json_object_set_new(o, "sample_scale", hub_json_num(s->scale));
	json_object_set_new(o, "significance_basis", json_string(s->basis));
	return o;
}

/* arena destructors */
static void side_free(void *p)
{
	side *s = p;

	free(s->unit);
	wt_flame_free(s->f);
}

static void query_free(void *p)
{
	evhttp_clear_headers(p);
}

int hub_handle_diff(hub_req *r, wt_err *err)
{
	hub_ctx *ctx = r->ctx;
	wt_arena *a = &r->arena;
	struct evkeyvalq *q = &r->q, *bq = wt_arena_calloc(a, 1, sizeof(*bq));
	int64_t t0 = wt_now_ns(CLOCK_REALTIME);
	long max_nodes, limit, period_ns;
	int normalize, rc;
	side *base = wt_arena_calloc(a, 1, sizeof(*base)), *target = wt_arena_calloc(a, 1, sizeof(*target));
	json_t *btree, *ttree, *out, *rows_j, *flame;
	row *rows = NULL;
	size_t nrows = 0, i;

	if (!bq || !base || !target)
		return wt_err_set(err, WT_ENOMEM, "out of memory");
	TAILQ_INIT(bq);
	if (wt_arena_defer(a, query_free, bq) || wt_arena_defer(a, side_free, base) ||
	    wt_arena_defer(a, side_free, target))
		return wt_err_set(err, WT_ENOMEM, "out of memory");
	base->sel.project = target->sel.project = r->project;
	base->sel.syms = target->sel.syms = r->ctx->syms;
	if ((rc = hub_params_parse(q, &target->sel.hp, err)) ||
	    (rc = hub_sel_path_param(q, ctx, &target->sel, err)) ||
	    (rc = hub_sel_path_param(q, ctx, &base->sel, err)) ||
	    (rc = hub_sel_params_prefixed(q, "base_", bq, &base->sel.hp, err)) ||
	    (rc = hub_param_uint(q, "max_nodes", (long)ctx->cfg.max_nodes, 1, 1000000, &max_nodes, err)) ||
	    (rc = hub_param_uint(q, "limit", DEFAULT_DIFF_LIMIT, 1, 1000000, &limit, err)) ||
	    (rc = hub_param_uint(q, "period_ns", DEFAULT_PERIOD_NS, 1, 3600000000000L, &period_ns, err)) ||
	    (rc = hub_param_bool(q, "normalize", 1, &normalize, err)))
		return rc;
	if ((rc = hub_ch_health_check(&ctx->store, err)) ||
	    (rc = hub_sel_resolve(r->ch, &target->sel, t0, ctx->cfg.default_range_s, err)))
		return rc;
	/* base_from/base_until default to the target's resolved range, and
	 * base_type to the target's resolved type */
	if (!evhttp_find_header(q, "base_from") && !target->sel.hp.has_from) {
		base->sel.hp.has_from = 1;
		base->sel.hp.from_ns = target->sel.from;
	}
	if (!evhttp_find_header(q, "base_until") && !target->sel.hp.has_until) {
		base->sel.hp.has_until = 1;
		base->sel.hp.until_ns = target->sel.until;
	}
	if (!base->sel.hp.type && target->sel.type[0])
		base->sel.hp.type = target->sel.type;
	if (base->sel.hp.has_from && base->sel.hp.has_until && base->sel.hp.until_ns < base->sel.hp.from_ns)
		return wt_err_set(err, WT_EINVAL, "base_until: earlier than base_from");
	if ((rc = hub_sel_resolve(r->ch, &base->sel, t0, ctx->cfg.default_range_s, err)))
		return rc;
	base->f = wt_flame_new();
	target->f = wt_flame_new();
	if (!base->f || !target->f)
		return wt_err_set(err, WT_ENOMEM, "out of memory");
	wt_flame_skip_edges(base->f); /* tree and table only */
	wt_flame_skip_edges(target->f);
	if ((rc = hub_sel_load_flame(r->ch, &base->sel, base->f, &base->unit, err)) ||
	    (rc = hub_sel_load_flame(r->ch, &target->sel, target->f, &target->unit, err)))
		return rc;
	base->total = wt_flame_total(base->f);
	target->total = wt_flame_total(target->f);
	if (!normalize && base->unit && target->unit && strcmp(base->unit, target->unit))
		return wt_err_set(err, WT_EINVAL, "base_type: unit \"%s\" differs from the target's \"%s\"; "
				  "use normalize=true to compare shares", base->unit, target->unit);
	if ((rc = find_scale(r->ch, base, period_ns, err)) || (rc = find_scale(r->ch, target, period_ns, err)))
		return rc;

	btree = hub_req_own_json(r, wt_flame_tree_json(base->f, base->unit ? base->unit : "", (size_t)max_nodes));
	ttree = hub_req_own_json(r, wt_flame_tree_json(target->f, target->unit ? target->unit : "",
						       (size_t)max_nodes));
	if (!btree || !ttree)
		return wt_err_set(err, WT_ENOMEM, "out of memory rendering the diff");
	rc = merge_rows(base->f, target->f, &rows, &nrows);
	if (rows && wt_arena_defer(a, free, rows))
		rc = WT_ENOMEM;
	if (rc)
		return wt_err_set(err, WT_ENOMEM, "out of memory rendering the diff");
	for (i = 0; i < nrows; i++) {
		row *w = &rows[i];
		double bsh = base->total ? (double)w->bs / (double)base->total : 0;
		double tsh = target->total ? (double)w->ts / (double)target->total : 0;
		w->change = normalize ? tsh - bsh : (double)(w->ts - w->bs);
		w->z = hub_z_two_prop((double)w->bs / base->scale, (double)base->total / base->scale,
				      (double)w->ts / target->scale, (double)target->total / target->scale);
	}
	/* only the rows shown are sorted */
	if (nrows > (size_t)limit)
		wt_select_top(rows, nrows, sizeof(*rows), (size_t)limit, cmp_row_ctx, NULL);
	if (nrows)
		qsort(rows, nrows < (size_t)limit ? nrows : (size_t)limit, sizeof(*rows), cmp_row);

	out = hub_req_own_json(r, json_object());
	rows_j = hub_req_own_json(r, json_array());
	flame = hub_req_own_json(r, merge_node(json_object_get(btree, "root"), json_object_get(ttree, "root"),
					       "total"));
	if (!out || !rows_j || !flame)
		return wt_err_set(err, WT_ENOMEM, "out of memory rendering the diff");
	for (i = 0; i < nrows && i < (size_t)limit; i++) {
		const row *w = &rows[i];
		json_array_append_new(rows_j, json_pack("{s:o, s:I, s:I, s:I, s:I, s:o, s:o, s:o}",
			"function", wt_json_string(w->function), "base_self", (json_int_t)w->bs, "target_self", (json_int_t)w->ts,
			"base_total", (json_int_t)w->bt, "target_total", (json_int_t)w->tt,
			"change", hub_json_num(w->change), "significance", hub_json_num(w->z),
			"p_value", hub_json_num(hub_p_two_sided(w->z))));
	}
	json_object_set_new(out, "unit", json_string(target->unit ? target->unit : base->unit ? base->unit : ""));
	json_object_set_new(out, "type", json_string(target->sel.type[0] ? target->sel.type : base->sel.type));
	json_object_set_new(out, "normalize", json_boolean(normalize));
	json_object_set_new(out, "path", json_string(base->sel.agg_used && target->sel.agg_used ? "aggregates"
						      : base->sel.agg_used || target->sel.agg_used ? "mixed" : "raw"));
	json_object_set_new(out, "base_total", json_integer(base->total));
	json_object_set_new(out, "target_total", json_integer(target->total));
	json_object_set_new(out, "base", sel_json(base));
	json_object_set_new(out, "target", sel_json(target));
	json_object_set(out, "rows", rows_j);
	json_object_set_new(out, "truncated_rows", json_boolean(nrows > (size_t)limit));
	json_object_set_new(flame, "base_total", json_integer(base->total));
	json_object_set_new(flame, "target_total", json_integer(target->total));
	json_object_set_new(out, "flamegraph", json_pack("{s:s, s:I, s:I, s:b, s:O}",
		"unit", target->unit ? target->unit : base->unit ? base->unit : "",
		"base_total", (json_int_t)base->total, "target_total", (json_int_t)target->total,
		"truncated", json_is_true(json_object_get(btree, "truncated")) ||
			     json_is_true(json_object_get(ttree, "truncated")),
		"root", flame));
	/* the reply takes its own reference; the arena drops the one it holds */
	return hub_req_query_json(r, t0, json_incref(out), err);
}
