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
#include "selection.h"
#include "params.h"

#define DEFAULT_TABLE_LIMIT 10000

void hub_handle_query(hub_req *r, const char *project, const char *view)
{
	hub_ctx *ctx = r->ctx;
	hub_principal who;
	struct evkeyvalq q;
	hub_sel sel;
	wt_err err = {0, ""};
	int64_t t0 = hub_now_ns();
	long max_nodes, limit;
	const char *type;
	char *unit = NULL;
	wt_flame *f = NULL;
	json_t *out = NULL;

	q.tqh_first = NULL;
	q.tqh_last = &q.tqh_first;
	if (hub_req_auth(r, &who))
		goto done;
	if (!hub_project_name_valid(project)) {
		wt_err_set(&err, WT_ENOTFOUND, "project: \"%.64s\" is not a valid project name", project);
		goto fail;
	}
	if (hub_auth_allows(&who, project, HUB_ROLE_READ, &err))
		goto fail;
	if (wt_http_query(r->req, &q)) {
		wt_err_set(&err, WT_EINVAL, "query string is malformed");
		goto fail;
	}
	memset(&sel, 0, sizeof(sel));
	sel.project = project;
	/* symbolize=0: frames as stored (for measuring the symbolizer's cost) */
	sel.syms = (wt_http_param(&q, "symbolize") && !strcmp(wt_http_param(&q, "symbolize"), "0"))
			   ? NULL : ctx->syms;
	if (hub_params_parse(&q, &sel.hp, &err) || hub_sel_path_param(&q, ctx, &sel, &err) ||
	    hub_param_uint(&q, "max_nodes", (long)ctx->cfg.max_nodes, 1, 1000000, &max_nodes, &err) ||
	    /* limit 0 = all rows (docs/api.md), as on the edge */
	    hub_param_uint(&q, "limit", DEFAULT_TABLE_LIMIT, 0, 1000000, &limit, &err))
		goto fail;
	if (hub_ch_health_check(&ctx->store, &err) ||
	    hub_sel_resolve(r->ch, &sel, t0, ctx->cfg.default_range_s, &err))
		goto fail;
	type = sel.type;
	f = wt_flame_new();
	if (!f) {
		wt_err_set(&err, WT_ENOMEM, "out of memory");
		goto fail;
	}
	if (strcmp(view, "callgraph"))
		wt_flame_skip_edges(f);
	if (hub_sel_load_flame(r->ch, &sel, f, &unit, &err))
		goto fail;
	if (!strcmp(view, "flamegraph"))
		out = wt_flame_tree_json(f, unit ? unit : "", (size_t)max_nodes);
	else if (!strcmp(view, "table"))
		out = wt_flame_table_json(f, unit ? unit : "", (size_t)limit);
	else
		out = wt_flame_callgraph_json(f, unit ? unit : "", (size_t)max_nodes);
	if (!out) {
		wt_err_set(&err, WT_ENOMEM, "out of memory rendering the view");
		goto fail;
	}
	json_object_set_new(out, "type", json_string(type[0] ? type : (sel.hp.type ? sel.hp.type : "cpu")));
	if (sel.hp.service)
		json_object_set_new(out, "service", json_string(sel.hp.service));
	json_object_set_new(out, "from", json_integer(sel.from));
	json_object_set_new(out, "until", json_integer(sel.until));
	json_object_set_new(out, "path", json_string(sel.agg_used ? "aggregates" : "raw"));
	atomic_fetch_add(&ctx->metrics.queries_total, 1);
	atomic_fetch_add(&ctx->metrics.query_ns_total, (long)(hub_now_ns() - t0));
	hub_req_json(r, 200, out);
	goto done;
fail:
	hub_req_fail(r, &err);
done:
	free(unit);
	wt_flame_free(f);
	evhttp_clear_headers(&q);
}
