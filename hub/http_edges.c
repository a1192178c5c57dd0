/*
 * http_edges.c — admin API for edge → project registrations
 * (edge_projects.h; docs/api.md "Admin: edges"):
 *   POST   /v1/admin/edges/{id}/projects {"project":"P"} → 201 (200: already)
 *   DELETE /v1/admin/edges/{id}/projects/{P}            → 200
 *   GET    /v1/admin/edges?project=P                    → {"edges":[...]}
 *   GET    /v1/admin/edges?edge=ID                      → (hub admin token)
 * The hub admin token may do everything; a project's admin token manages
 * the registrations of its own project only. Every change is audited in
 * the project (`edge.allow`, `edge.disallow`).
 */
#include <stdlib.h>
#include <string.h>

#include "ch_format.h"
#include "edge_projects.h"
#include "http_server.h"
#include "hub.h"
#include "ch_rows.h"
#include "log.h"
#include "pki.h"

#define EDGES_MAX_BODY 4096
#define EDGES_LIST_MAX 10000

static int list_row(void *ctx, char **f, size_t n)
{
	json_t *list = ctx;

	if (n >= 4)
		json_array_append_new(list, json_pack("{s:s, s:s, s:s, s:I}", "edge_id", f[0], "project", f[1],
						      "updated_by", f[2], "updated_ns",
						      (json_int_t)strtoll(f[3], NULL, 10)));
	return 0;
}

static void edges_get(hub_req *r, const hub_principal *who)
{
	struct evkeyvalq q;
	const char *project, *edge;
	wt_err err = {0, ""};
	wt_buf sql = WT_BUF_INIT, out = WT_BUF_INIT;
	json_t *list = json_array();

	if (wt_http_query(r->req, &q)) {
		wt_err_set(&err, WT_EINVAL, "query string is malformed");
		goto fail;
	}
	project = wt_http_param(&q, "project");
	edge = wt_http_param(&q, "edge");
	if (project && !hub_project_name_valid(project)) {
		wt_err_set(&err, WT_EINVAL, "project: not a valid project name");
		goto fail;
	}
	if (edge && !hub_edge_id_valid(edge)) {
		wt_err_set(&err, WT_EINVAL, "edge: 1-%d characters [A-Za-z0-9_.-], starting alphanumeric", WT_PKI_ID_MAX);
		goto fail;
	}
	if (!who->super && !project) {
		wt_err_set(&err, WT_EFORBIDDEN, "a project admin token lists its own project's edges (project=P)");
		goto fail;
	}
	if ((project && hub_auth_allows(who, project, HUB_ROLE_ADMIN, &err)) ||
	    hub_ch_health_check(&r->ctx->store, &err))
		goto fail;
	wt_buf_puts(&sql, "SELECT edge_id, project, argMax(actor, updated_ns), max(updated_ns)"
			  " FROM edge_projects_v1 WHERE 1");
	if (project) {
		wt_buf_puts(&sql, " AND project = ");
		hub_sql_quote(&sql, project);
	}
	if (edge) {
		wt_buf_puts(&sql, " AND edge_id = ");
		hub_sql_quote(&sql, edge);
	}
	wt_buf_printf(&sql, " GROUP BY edge_id, project HAVING argMax(allowed, updated_ns) = 1"
		      " ORDER BY edge_id, project LIMIT %d FORMAT TabSeparated", EDGES_LIST_MAX);
	if (hub_ch_query_buf(r->ch, &sql, &out, &err))
		goto fail;
	hub_tsv_each((char *)out.data, out.len, 4, list_row, list);
	hub_req_json(r, 200, json_pack("{s:o}", "edges", list));
	list = NULL;
	goto done;
fail:
	hub_req_fail(r, &err);
done:
	json_decref(list);
	evhttp_clear_headers(&q);
	wt_buf_free(&sql);
	wt_buf_free(&out);
}

/* POST (allowed = 1, project from the body) or DELETE (project from the path). */
static void edges_set(hub_req *r, const hub_principal *who, const char *edge, const char *path_project,
		      int allowed)
{
	wt_err err = {0, ""};
	uint8_t *body = NULL;
	size_t len = 0;
	json_t *in = NULL;
	const char *project = path_project;
	hub_edge_projects *ep = NULL;
	int had, days;

	if (!hub_edge_id_valid(edge)) {
		wt_err_set(&err, WT_EINVAL, "edge id: 1-%d characters [A-Za-z0-9_.-], starting alphanumeric",
			   WT_PKI_ID_MAX);
		goto fail;
	}
	if (allowed) {
		if (wt_http_body(r->req, EDGES_MAX_BODY, &body, &len, &err))
			goto fail;
		in = json_loadb((const char *)body, len, 0, NULL);
		project = json_string_value(json_object_get(in, "project"));
	}
	if (!project || !hub_project_name_valid(project)) {
		wt_err_set(&err, WT_EINVAL, "project: required, a valid project name");
		goto fail;
	}
	/* the body's project is known only here; DELETE's is the path's,
	 * which the route wrapper checked */
	if ((allowed && hub_auth_allows(who, project, HUB_ROLE_ADMIN, &err)) ||
	    hub_ch_health_check(&r->ctx->store, &err))
		goto fail;
	if (allowed && hub_project_retention(r->ch, project, &days, &err))
		goto fail; /* WT_ENOTFOUND: create the project first */
	if (!(ep = malloc(sizeof(*ep)))) {
		wt_err_set(&err, WT_ENOMEM, "out of memory");
		goto fail;
	}
	if (hub_edge_projects_load(r->ch, edge, ep, &err))
		goto fail;
	had = hub_edge_projects_has(ep, project);
	if (had != allowed && hub_edge_projects_set(r->ch, edge, project, allowed, who->token_id, &err))
		goto fail;
	if (had != allowed)
		wt_info("msg=\"edge registration changed\" edge=%s project=%s allowed=%d by=%s", edge, project,
			allowed, who->token_id);
	hub_req_json(r, allowed && !had ? 201 : 200,
		     json_pack("{s:s, s:s, s:b, s:b}", "edge_id", edge, "project", project, "allowed", allowed,
			       "changed", had != allowed));
	goto done;
fail:
	hub_req_fail(r, &err);
done:
	free(ep);
	free(body);
	json_decref(in);
}

int hub_handle_edges_get(hub_req *r, wt_err *err)
{
	(void)err; /* edges_get answers its own errors */
	edges_get(r, &r->who);
	return 0;
}

int hub_handle_edge_allow(hub_req *r, wt_err *err)
{
	(void)err;
	edges_set(r, &r->who, r->id, NULL, 1);
	return 0;
}

/* DELETE .../projects/{project}: the route wrapper has checked the admin
 * role on the path's project (DELETE .../projects/ matches the POST row
 * only: 405). */
int hub_handle_edge_disallow(hub_req *r, wt_err *err)
{
	(void)err;
	edges_set(r, &r->who, r->id, r->project, 0);
	return 0;
}
