/*
 * selection.h — one "selection" of profile samples (project, service,
 * sample type, time range, label/span/trace filters) as the query and
 * analysis endpoints use it: its SQL WHERE clause, its default type, its
 * aggregated flame, its total. The diff endpoint holds two (base and
 * target); table/flamegraph/callgraph (http_query.c) hold one.
 *
 * Ownership: a hub_sel borrows every string (from the request's evkeyvalq
 * or the caller); it owns nothing and needs no free.
 */
#ifndef HUB_SELECTION_H
#define HUB_SELECTION_H

#include <event2/keyvalq_struct.h>
#include <stdint.h>

#include "buf.h"
#include "ch_client.h"
#include "err.h"
#include "flame.h"
#include "params.h"
#include "symbols.h"

#define HUB_TYPE_MAX 128

typedef struct hub_sel {
	const char *project;
	hub_params hp;           /* service, type, label filters */
	int64_t from, until;     /* resolved [from, until) in unix ns */
	char type[HUB_TYPE_MAX]; /* resolved type; "" when the selection is empty */
	hub_symbols *syms;       /* symbolize "module+0xOFF" frames; NULL = leave them */
	/* Aggregate path (stackagg.h): with ctx set (and hub.query_aggregates
	 * on) flames and totals are read from the stack aggregates where the
	 * filters allow; NULL = raw rows only. agg_used is set by the loaders:
	 * 1 when they read aggregates. */
	struct hub_ctx *ctx;
	int agg_used;
	int unknown_stacks;      /* set by the aggregate loader: a stack had no frames */
	const struct hub_lsel *lsel; /* more label matchers (label_selector.h); NULL = none */
} hub_sel;

/* Append " WHERE …" for s (type NULL: any type; else that type). */
void hub_sel_where(wt_buf *w, const hub_sel *s, const char *type);

/* Resolve s->from/until from hp (defaults: until = now, from = until -
 * default_range_s) and s->type (hp.type, else cpu when present, else the
 * earliest sample's type). 0 or the ClickHouse error. */
int hub_sel_resolve(hub_ch *ch, hub_sel *s, int64_t now_ns, int default_range_s, wt_err *err);

/* Add the selection's stacks (type s->type) to f; *unit = a new string
 * (caller frees) or NULL when empty. With s->syms, unsymbolized native
 * frames are symbolized on the way (symbols.h), one stored frame becoming
 * its inline chain. */
int hub_sel_load_flame(hub_ch *ch, hub_sel *s, wt_flame *f, char **unit, wt_err *err);

/* The view cache (viewcache.h) for a rendering `view` of resolved s with
 * request parameters q: returns 1 when it applies — single server, the
 * aggregate path, a range ending at least STABLE_LAG before now_ns (its
 * pieces then never change) — with the key appended to key (view,
 * project, type, range, aggregate coverage, symbol index, parameters but
 * `cache`) and *fp = a fingerprint of the active ClickHouse parts of
 * stack_agg_v1 and profile_samples_v1 over the range's days (and of
 * label_sets_v1 with label filters); 0 when not (or on a ClickHouse
 * error: *rc set). */
int hub_sel_cache_key(hub_ch *ch, hub_sel *s, const char *view, const struct evkeyvalq *q, int64_t now_ns,
		      wt_buf *key, uint64_t *fp, wt_err *err, int *rc);

/* The timeline's rows from the aggregates: when s can be answered from
 * them (hub_sel_agg_ok), col is service, host, thread or container and
 * width_ns is a multiple of the finest resolution (60 s), appends to w a
 * UNION ALL of SELECTs giving lv (col's value as a String), b (bucket
 * index: time / width_ns), v (sum of values, Int64) and u (a unit) — raw
 * rows for the pieces the aggregates do not cover (hub_agg_segments),
 * stack_agg_v1 rows of resolutions dividing width_ns for the rest, per
 * label set joined to its col value in label_sets_v1 — sets s->agg_used
 * and returns the number of pieces; 0 when the raw rows must be read
 * alone (w unchanged; or on a ClickHouse error resolving label sets: *rc
 * set). */
size_t hub_sel_timeline_sql(hub_ch *ch, hub_sel *s, const char *col, int64_t width_ns, wt_buf *w, wt_err *err,
			    int *rc);

/* The label sets of s's range for listings (label keys and values),
 * when s can be answered from the aggregates (hub_sel_agg_ok): appends to
 * agg a UNION ALL of "SELECT labelset_id FROM series_agg_v1 WHERE …" over
 * the pieces the aggregates cover (hub_agg_segments; type NULL: every
 * type; s's label filters as on the other aggregate reads), and to raw
 * " AND (…)" the time conditions of the pieces left to the raw rows
 * (" AND (0)" when none), sets s->agg_used and returns the number of
 * aggregate pieces; 0 when the raw rows must be read alone (agg and raw
 * unchanged; on a ClickHouse error resolving label sets *rc is set). */
size_t hub_sel_labelset_sql(hub_ch *ch, hub_sel *s, const char *type, wt_buf *agg, wt_buf *raw, wt_err *err,
			    int *rc);

/* Sum of values of type `type` over the selection (0 when empty). */
int hub_sel_total(hub_ch *ch, hub_sel *s, const char *type, int64_t *out, wt_err *err);

/* s->ctx from the request's `path` parameter: absent or "auto" → ctx
 * (aggregates where possible), "raw" → NULL (raw rows only, for
 * comparisons and measurements); anything else WT_EINVAL. */
int hub_sel_path_param(const struct evkeyvalq *q, struct hub_ctx *ctx, hub_sel *s, wt_err *err);

/* 1 when s can be answered from the aggregates: ctx set, aggregates on,
 * no span_id / trace_id filter. Pure. */
int hub_sel_agg_ok(const hub_sel *s);

/* The count-valued type paired with a weighted one ("cpu" → "samples",
 * "inuse_space" → "inuse_objects", "mutex_delay" → "mutex_contentions"…),
 * or NULL. Pure. */
const char *hub_count_type_of(const char *type);

/* 1 when unit counts events (samples, count, objects …), so values are
 * sample counts already. Pure. */
int hub_unit_is_count(const char *unit);

/* The smallest "nice" bucket width (1-2-5 steps of ms and s, then 1, 2,
 * 5, 10, 15, 30 min, 1, 2, 3, 6, 12 h, then whole days) for which
 * [from, until), aligned to multiples of the width, has at most n buckets.
 * Pure. */
int64_t hub_nice_width(int64_t from, int64_t until, long n);

/* Parse the request's "<prefix>K=V" parameters as a selection, each one
 * absent defaulting to the unprefixed (target) parameter; used for the
 * diff's base_* selection. Errors name the prefixed parameter. */
int hub_sel_params_prefixed(const struct evkeyvalq *q, const char *prefix, struct evkeyvalq *tmp,
			    hub_params *out, wt_err *err);

#endif
