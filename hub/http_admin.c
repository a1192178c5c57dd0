/*
 * http_admin.c — admin API: projects and tokens (docs/api.md "## Hub").
 *   POST /v1/admin/projects {"name","retention_days"} → 201 | 200 (same) | 409
 *   GET  /v1/admin/projects
 *   POST /v1/admin/tokens {"project","role"} → 201 {"token","id","project","role"}
 *   GET  /v1/admin/tokens?project=P  (ids and roles; never secrets)
 * The hub.cfg admin token may do everything; a project's "admin" token may
 * create and list tokens of its own project.
 */
#include <stdlib.h>
#include <string.h>

#include "audit.h"
#include "ch_format.h"
#include "http_server.h"
#include "hub.h"
#include "log.h"
#include "sha.h"

#define ADMIN_MAX_BODY (64 * 1024)
#define DEFAULT_RETENTION_DAYS 30
#define MAX_RETENTION_DAYS 36500

static int read_json(hub_req *r, json_t **out, wt_err *err)
{
	uint8_t *body = NULL;
	size_t len = 0;
	json_error_t je;
	int rc = wt_http_body(r->req, ADMIN_MAX_BODY, &body, &len, err);

	if (rc)
		return rc;
	*out = json_loadb((const char *)body, len, 0, &je);
	free(body);
	if (!*out || !json_is_object(*out)) {
		json_decref(*out);
		*out = NULL;
		return wt_err_set(err, WT_EINVAL, "body: expected a JSON object (%s at line %d column %d)",
				  je.text, je.line, je.column);
	}
	return 0;
}

typedef struct proj_row {
	int found;
	long retention_days;
	json_t *list;
} proj_row;

static int project_row(void *ctx, char **f, size_t n)
{
	proj_row *pr = ctx;

	if (n < 3)
		return 0;
	pr->found = 1;
	pr->retention_days = strtol(f[1], NULL, 10);
	if (pr->list)
		json_array_append_new(pr->list, json_pack("{s:s, s:i, s:s}", "name", f[0],
							  "retention_days", (json_int_t)pr->retention_days,
							  "created_at", f[2]));
	return 0;
}

/* Look a project up; pr->found tells. */
static int project_get(hub_ch *ch, const char *name, proj_row *pr, wt_err *err)
{
	wt_buf sql = WT_BUF_INIT, out = WT_BUF_INIT;
	int rc;

	wt_buf_puts(&sql, "SELECT name, retention_days, created_at FROM projects_v1 FINAL");
	if (name) {
		wt_buf_puts(&sql, " WHERE name = ");
		hub_sql_quote(&sql, name);
	}
	wt_buf_puts(&sql, " ORDER BY name FORMAT TabSeparated");
	rc = hub_ch_query_buf(ch, &sql, &out, err);
	if (!rc)
		hub_tsv_each((char *)out.data, out.len, 3, project_row, pr);
	wt_buf_free(&sql);
	wt_buf_free(&out);
	return rc;
}

static void projects_post(hub_req *r, const hub_principal *who)
{
	wt_err err = {0, ""};
	json_t *in = NULL, *jn, *jr;
	const char *name;
	long retention = DEFAULT_RETENTION_DAYS;
	proj_row pr = {0, 0, NULL};
	wt_buf sql = WT_BUF_INIT;
	char detail[128];

	if (read_json(r, &in, &err))
		goto fail;
	jn = json_object_get(in, "name");
	jr = json_object_get(in, "retention_days");
	name = json_string_value(jn);
	if (!name || !hub_project_name_valid(name)) {
		wt_err_set(&err, WT_EINVAL, "name: project names are 1-64 characters [A-Za-z0-9_.-], starting alphanumeric");
		goto fail;
	}
	if (jr && !json_is_null(jr)) {
		if (!json_is_integer(jr) || json_integer_value(jr) < 1 ||
		    json_integer_value(jr) > MAX_RETENTION_DAYS) {
			wt_err_set(&err, WT_EINVAL, "retention_days: expected an integer from 1 to %d",
				   MAX_RETENTION_DAYS);
			goto fail;
		}
		retention = (long)json_integer_value(jr);
	}
	if (hub_store_check(&r->ctx->store, &err) || project_get(r->ch, name, &pr, &err))
		goto fail;
	if (pr.found) {
		if (pr.retention_days != retention) {
			json_decref(in);
			hub_req_json(r, 409, json_pack("{s:s, s:s}", "error", "conflict", "detail",
				"project exists with a different retention_days"));
			return;
		}
		hub_req_json(r, 200, json_pack("{s:s, s:i, s:b}", "name", name,
					       "retention_days", (json_int_t)retention, "created", 0));
		json_decref(in);
		return;
	}
	wt_buf_printf(&sql, "INSERT INTO projects_v1 (name, retention_days, created_at, updated_ns) VALUES (");
	hub_sql_quote(&sql, name);
	wt_buf_printf(&sql, ", %ld, now(), %lld)", retention, (long long)hub_now_ns());
	if (hub_ch_query_buf(r->ch, &sql, NULL, &err))
		goto fail;
	snprintf(detail, sizeof(detail), "retention_days=%ld", retention);
	if (hub_audit_record(r->ch, name, who->token_id, "project.create", detail, NULL, &err))
		wt_warn("msg=\"audit event not recorded\" project=%s error=\"%s\"", name, err.msg);
	wt_info("msg=\"project created\" project=%s retention_days=%ld", name, retention);
	hub_req_json(r, 201, json_pack("{s:s, s:i, s:b}", "name", name, "retention_days",
				       (json_int_t)retention, "created", 1));
	json_decref(in);
	wt_buf_free(&sql);
	return;
fail:
	json_decref(in);
	wt_buf_free(&sql);
	hub_req_fail(r, &err);
}

void hub_handle_admin_projects(hub_req *r)
{
	hub_principal who;
	wt_err err = {0, ""};
	proj_row pr = {0, 0, NULL};

	if (hub_req_auth(r, &who))
		return;
	if (!who.super) {
		wt_err_set(&err, WT_EFORBIDDEN, "projects are managed with the hub admin token");
		hub_req_fail(r, &err);
		return;
	}
	if (evhttp_request_get_command(r->req) == EVHTTP_REQ_POST) {
		projects_post(r, &who);
		return;
	}
	pr.list = json_array();
	if (hub_store_check(&r->ctx->store, &err) || project_get(r->ch, NULL, &pr, &err)) {
		json_decref(pr.list);
		hub_req_fail(r, &err);
		return;
	}
	hub_req_json(r, 200, json_pack("{s:o}", "projects", pr.list));
}

static int token_list_row(void *ctx, char **f, size_t n)
{
	json_t *list = ctx;

	if (n >= 4)
		json_array_append_new(list, json_pack("{s:s, s:s, s:s, s:s}", "id", f[0], "project", f[1],
						      "role", f[2], "created_at", f[3]));
	return 0;
}

static void tokens_get(hub_req *r, const hub_principal *who)
{
	struct evkeyvalq q;
	const char *project;
	wt_err err = {0, ""};
	wt_buf sql = WT_BUF_INIT, out = WT_BUF_INIT;
	json_t *list = json_array();

	if (wt_http_query(r->req, &q)) {
		wt_err_set(&err, WT_EINVAL, "query string is malformed");
		goto fail;
	}
	project = wt_http_param(&q, "project");
	if (!project || !hub_project_name_valid(project)) {
		wt_err_set(&err, WT_EINVAL, "project: required, a valid project name");
		goto fail;
	}
	if (hub_auth_allows(who, project, HUB_ROLE_ADMIN, &err) || hub_store_check(&r->ctx->store, &err))
		goto fail;
	wt_buf_puts(&sql, "SELECT id, project, role, created_at FROM tokens_v1 FINAL WHERE revoked = 0 AND project = ");
	hub_sql_quote(&sql, project);
	wt_buf_puts(&sql, " ORDER BY created_at, id FORMAT TabSeparated");
	if (hub_ch_query_buf(r->ch, &sql, &out, &err))
		goto fail;
	hub_tsv_each((char *)out.data, out.len, 4, token_list_row, list);
	hub_req_json(r, 200, json_pack("{s:o}", "tokens", list));
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

static void tokens_post(hub_req *r, const hub_principal *who)
{
	wt_err err = {0, ""};
	json_t *in = NULL;
	const char *project, *role_s;
	int role;
	proj_row pr = {0, 0, NULL};
	char secret[HUB_TOKEN_HEX + 1], id[17], hash[HUB_SHA256_HEX_LEN + 1], detail[128];
	wt_buf sql = WT_BUF_INIT;

	if (read_json(r, &in, &err))
		goto fail;
	project = json_string_value(json_object_get(in, "project"));
	role_s = json_string_value(json_object_get(in, "role"));
	if (!project || !hub_project_name_valid(project)) {
		wt_err_set(&err, WT_EINVAL, "project: required, a valid project name");
		goto fail;
	}
	if (!role_s || hub_role_parse(role_s, &role)) {
		wt_err_set(&err, WT_EINVAL, "role: expected one of upload, read, admin, DeleteTelemetry");
		goto fail;
	}
	if (hub_auth_allows(who, project, HUB_ROLE_ADMIN, &err))
		goto fail;
	if (hub_store_check(&r->ctx->store, &err) || project_get(r->ch, project, &pr, &err))
		goto fail;
	if (!pr.found) {
		wt_err_set(&err, WT_ENOTFOUND, "project \"%s\" does not exist (create it first)", project);
		goto fail;
	}
	if (hub_token_generate(secret, id)) {
		wt_err_set(&err, WT_EIO, "getrandom failed");
		goto fail;
	}
	hub_sha256_hex(secret, strlen(secret), hash);
	wt_buf_puts(&sql, "INSERT INTO tokens_v1 (token_sha256, id, project, role, created_at, revoked, updated_ns) VALUES (");
	hub_sql_quote(&sql, hash);
	wt_buf_puts(&sql, ", ");
	hub_sql_quote(&sql, id);
	wt_buf_puts(&sql, ", ");
	hub_sql_quote(&sql, project);
	wt_buf_puts(&sql, ", ");
	hub_sql_quote(&sql, hub_role_name(role));
	wt_buf_printf(&sql, ", now(), 0, %lld)", (long long)hub_now_ns());
	if (hub_ch_query_buf(r->ch, &sql, NULL, &err))
		goto fail;
	snprintf(detail, sizeof(detail), "id=%s role=%s", id, hub_role_name(role));
	if (hub_audit_record(r->ch, project, who->token_id, "token.create", detail, NULL, &err))
		wt_warn("msg=\"audit event not recorded\" project=%s error=\"%s\"", project, err.msg);
	hub_auth_flush(r->ctx->auth); /* a cached "unknown" must not hide the new token */
	wt_info("msg=\"token created\" project=%s id=%s role=%s", project, id, hub_role_name(role));
	hub_req_json(r, 201, json_pack("{s:s, s:s, s:s, s:s}", "token", secret, "id", id,
				       "project", project, "role", hub_role_name(role)));
	json_decref(in);
	wt_buf_free(&sql);
	return;
fail:
	json_decref(in);
	wt_buf_free(&sql);
	hub_req_fail(r, &err);
}

void hub_handle_admin_tokens(hub_req *r)
{
	hub_principal who;

	if (hub_req_auth(r, &who))
		return;
	if (evhttp_request_get_command(r->req) == EVHTTP_REQ_POST)
		tokens_post(r, &who);
	else
		tokens_get(r, &who);
}
