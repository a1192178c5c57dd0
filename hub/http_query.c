/*
 * http_query.c — GET /v1/projects/{p}/profiles/{flamegraph|table|callgraph}.
 *
 * ClickHouse does the heavy part: it sums values by stack over the
 * selection (project, service, type, time range, label filters) and joins
 * the frame names; the hub builds the view (common/flame.c) from at most
 * one row per distinct stack, read as RowBinary into a bounded buffer.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ch_format.h"
#include "flame.h"
#include "http_server.h"
#include "hub.h"
#include "log.h"
#include "selection.h"
#include "params.h"

#define DEFAULT_TABLE_LIMIT 10000

/* arena destructor */
static void flame_free(void *p)
{
	wt_flame_free(p);
}

/* The three views share everything but the rendering. */
static int query_view(hub_req *r, const char *view, wt_err *err)
{
	hub_ctx *ctx = r->ctx;
	hub_sel *sel = wt_arena_calloc(&r->arena, 1, sizeof(*sel));
	int64_t t0 = wt_now_ns(CLOCK_REALTIME);
	long max_nodes, limit;
	wt_buf key = WT_BUF_INIT;
	uint64_t fp = 0, unavail;
	wt_err cerr = {0, ""};
	int cache_on, cacheable = 0;
	const char *type, *unit;
	char *unit_m = NULL;
	wt_flame *f;
	json_t *out;
	int rc;

	if (!sel)
		return wt_err_set(err, WT_ENOMEM, "out of memory");
	sel->project = r->project;
	/* symbolize=0: frames as stored (for measuring the symbolizer's cost) */
	sel->syms = (wt_http_param(&r->q, "symbolize") && !strcmp(wt_http_param(&r->q, "symbolize"), "0"))
			    ? NULL : ctx->syms;
	if ((rc = hub_params_parse(&r->q, &sel->hp, err)) || (rc = hub_sel_path_param(&r->q, ctx, sel, err)) ||
	    (rc = hub_param_uint(&r->q, "max_nodes", (long)ctx->cfg.max_nodes, 1, 1000000, &max_nodes, err)) ||
	    /* limit 0 = all rows (docs/api.md), as on the edge */
	    (rc = hub_param_uint(&r->q, "limit", DEFAULT_TABLE_LIMIT, 0, 1000000, &limit, err)))
		return rc;
	if ((rc = hub_ch_health_check(&ctx->store, err)) ||
	    (rc = hub_sel_resolve(r->ch, sel, t0, ctx->cfg.default_range_s, err)))
		return rc;
	type = sel->type;
	/* a past range asked again: the rendering cached while the data it
	 * read is unchanged (viewcache.h); cache=0 skips the cache */
	cache_on = !(wt_http_param(&r->q, "cache") && !strcmp(wt_http_param(&r->q, "cache"), "0"));
	if (cache_on && hub_sel_cache_key(r->ch, sel, view, &r->q, t0, &key, &fp, &cerr, &rc)) {
		char *text;
		size_t len;

		if (hub_viewcache_get(ctx->views, (const char *)key.data, fp, &text, &len)) {
			/* the stored text as it is: no parse and render again
			 * (logged before the reply: tests count these lines) */
			wt_debug("msg=\"view from the view cache\" view=%s bytes=%zu", view, len);
			hub_req_query_text(r, t0, text, len);
			free(text);
			wt_buf_free(&key);
			return 0;
		}
		cacheable = 1;
	} else if (rc) {
		/* no fingerprint: answered without the cache */
		wt_debug("msg=\"view cache skipped\" error=\"%s\"", cerr.msg);
		rc = 0;
	}
	f = wt_flame_new();
	if (!f || wt_arena_defer(&r->arena, flame_free, f)) {
		wt_buf_free(&key);
		return wt_err_set(err, WT_ENOMEM, "out of memory");
	}
	/* build only what the view shows */
	if (strcmp(view, "callgraph"))
		wt_flame_skip_edges(f);
	if (strcmp(view, "flamegraph"))
		wt_flame_skip_tree(f);
	else
		wt_flame_skip_functions(f);
	unavail = hub_symbols_unavailable(sel->syms);
	rc = hub_sel_load_flame(r->ch, sel, f, &unit_m, err);
	if (hub_symbols_unavailable(sel->syms) != unavail)
		cacheable = 0; /* a frame missed its debug file for now */
	if (unit_m && wt_arena_defer(&r->arena, free, unit_m) && !rc)
		rc = wt_err_set(err, WT_ENOMEM, "out of memory");
	if (rc) {
		wt_buf_free(&key);
		return rc;
	}
	unit = unit_m ? unit_m : "";
	if (!strcmp(view, "flamegraph"))
		out = wt_flame_tree_json(f, unit, (size_t)max_nodes);
	else if (!strcmp(view, "table"))
		out = wt_flame_table_json(f, unit, (size_t)limit);
	else
		out = wt_flame_callgraph_json(f, unit, (size_t)max_nodes);
	if (!out) {
		wt_buf_free(&key);
		return wt_err_set(err, WT_ENOMEM, "out of memory rendering the view");
	}
	json_object_set_new(out, "type", json_string(type[0] ? type : (sel->hp.type ? sel->hp.type : "cpu")));
	if (sel->hp.service)
		json_object_set_new(out, "service", json_string(sel->hp.service));
	json_object_set_new(out, "from", json_integer(sel->from));
	json_object_set_new(out, "until", json_integer(sel->until));
	json_object_set_new(out, "path", json_string(sel->agg_used ? "aggregates" : "raw"));
	/* a stack without frames yet (its row may still be on the way) is
	 * not cached */
	if (cacheable && sel->agg_used && !sel->unknown_stacks) {
		/* rendered once: cached and sent */
		char *text = json_dumps(out, JSON_COMPACT);
		if (text) {
			size_t len = strlen(text);
			hub_viewcache_put(ctx->views, (const char *)key.data, fp, text, len);
			json_decref(out);
			wt_buf_free(&key);
			hub_req_query_text(r, t0, text, len);
			free(text);
			return 0;
		}
	}
	wt_buf_free(&key);
	return hub_req_query_json(r, t0, out, err);
}

int hub_handle_flamegraph(hub_req *r, wt_err *err)
{
	return query_view(r, "flamegraph", err);
}

int hub_handle_table(hub_req *r, wt_err *err)
{
	return query_view(r, "table", err);
}

int hub_handle_callgraph(hub_req *r, wt_err *err)
{
	return query_view(r, "callgraph", err);
}
