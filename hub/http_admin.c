/*
 * http_admin.c — admin API: projects and tokens (docs/api.md "## Hub").
 *   POST /v1/admin/projects {"name","retention_days"} → 201 | 200 (same) | 409
 *   GET  /v1/admin/projects
 *   POST /v1/admin/tokens {"project","role"} → 201 {"token","id","project","role"}
 *   GET  /v1/admin/tokens?project=P  (ids, roles, last use; never secrets)
 *   DELETE /v1/admin/tokens/{id}[?project=P] → 200 {"id","revoked":true,"changed"}
 * The hub.cfg admin token may do everything; a project's "admin" token may
 * create, list and revoke tokens of its own project, except that only the
 * hub admin token creates DeleteTelemetry tokens (a project admin asking
 * gets 403 and a `token.create.refused` audit event). Revocation is a newer
 * tokens_v1 row with revoked = 1; every hub refuses the token within
 * hub.token_cache_ttl_ms (auth.h), edges at their next config poll.
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
	if (hub_ch_health_check(&r->ctx->store, &err) || project_get(r->ch, name, &pr, &err))
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
	wt_buf_printf(&sql, ", %ld, now(), %lld)", retention, (long long)wt_now_ns(CLOCK_REALTIME));
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

int hub_handle_admin_projects(hub_req *r, wt_err *err)
{
	proj_row pr = {0, 0, NULL};
	int rc;

	if (!r->who.super)
		return wt_err_set(err, WT_EFORBIDDEN, "projects are managed with the hub admin token");
	if (evhttp_request_get_command(r->req) == EVHTTP_REQ_POST) {
		projects_post(r, &r->who);
		return 0;
	}
	pr.list = hub_req_own_json(r, json_array());
	if (!pr.list)
		return wt_err_set(err, WT_ENOMEM, "out of memory");
	if ((rc = hub_ch_health_check(&r->ctx->store, err)) || (rc = project_get(r->ch, NULL, &pr, err)))
		return rc;
	hub_req_json(r, 200, json_pack("{s:O}", "projects", pr.list));
	return 0;
}

static int token_list_row(void *ctx, char **f, size_t n)
{
	json_t *list = ctx;

	if (n >= 4)
		json_array_append_new(list, json_pack("{s:s, s:s, s:s, s:s, s:n}", "id", f[0], "project", f[1],
						      "role", f[2], "created_at", f[3], "last_used_ns"));
	return 0;
}

/* token_usage_v1 row (id, max used_ns) → last_used_ns of that listed token */
static int token_used_row(void *ctx, char **f, size_t n)
{
	json_t *list = ctx, *t;
	size_t i;

	if (n < 2)
		return 0;
	json_array_foreach(list, i, t)
		if (!strcmp(json_string_value(json_object_get(t, "id")), f[0]))
			json_object_set_new(t, "last_used_ns", json_integer((json_int_t)strtoll(f[1], NULL, 10)));
	return 0;
}

/* SELECT of the newest version of every token of project (a revocation is a
 * newer row), as (id, project, role, created_at, revoked, token_sha256,
 * newest updated_ns); id = NULL for all of them. */
static void tokens_newest_sql(wt_buf *sql, const char *project, const char *id)
{
	wt_buf_puts(sql, "SELECT ti, tp, tr, tc, rv, token_sha256, tu FROM (SELECT token_sha256,"
			 " argMax(id, updated_ns) AS ti, argMax(project, updated_ns) AS tp,"
			 " argMax(role, updated_ns) AS tr, argMax(created_at, updated_ns) AS tc,"
			 " argMax(revoked, updated_ns) AS rv, max(updated_ns) AS tu FROM tokens_v1 WHERE ");
	if (project) {
		wt_buf_puts(sql, "project = ");
		hub_sql_quote(sql, project);
	} else {
		wt_buf_puts(sql, "id = ");
		hub_sql_quote(sql, id);
	}
	wt_buf_puts(sql, " GROUP BY token_sha256)");
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
	if (hub_auth_allows(who, project, HUB_ROLE_ADMIN, &err) || hub_ch_health_check(&r->ctx->store, &err))
		goto fail;
	tokens_newest_sql(&sql, project, NULL);
	wt_buf_puts(&sql, " WHERE rv = 0 ORDER BY tc, ti FORMAT TabSeparated");
	if (hub_ch_query_buf(r->ch, &sql, &out, &err))
		goto fail;
	hub_tsv_each((char *)out.data, out.len, 7, token_list_row, list);
	wt_buf_reset(&sql);
	wt_buf_reset(&out);
	wt_buf_puts(&sql, "SELECT id, max(used_ns) FROM token_usage_v1 WHERE project = ");
	hub_sql_quote(&sql, project);
	wt_buf_puts(&sql, " GROUP BY id FORMAT TabSeparated");
	if (hub_ch_query_buf(r->ch, &sql, &out, &err))
		goto fail;
	hub_tsv_each((char *)out.data, out.len, 2, token_used_row, list);
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
	if (role == HUB_ROLE_DELETE && !who->super) {
		/* deleting telemetry is the operator's decision, not a project admin's */
		wt_err aerr = {0, ""};
		snprintf(detail, sizeof(detail), "role=%s refused: only the hub admin token creates it",
			 hub_role_name(role));
		if (hub_audit_record(r->ch, project, who->token_id, "token.create.refused", detail, NULL, &aerr))
			wt_warn("msg=\"audit event not recorded\" project=%s error=\"%s\"", project, aerr.msg);
		wt_warn("msg=\"token creation refused\" project=%s by=%s role=%s", project, who->token_id,
			hub_role_name(role));
		wt_err_set(&err, WT_EFORBIDDEN, "role: only the hub admin token creates %s tokens",
			   hub_role_name(role));
		goto fail;
	}
	if (hub_ch_health_check(&r->ctx->store, &err) || project_get(r->ch, project, &pr, &err))
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
	wt_buf_printf(&sql, ", now(), 0, %lld)", (long long)wt_now_ns(CLOCK_REALTIME));
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

typedef struct tok_rec {
	int found;
	char id[33], project[HUB_PROJECT_MAX + 1], role[32], created[32], hash[HUB_SHA256_HEX_LEN + 1];
	int revoked;
	long long updated_ns;
} tok_rec;

static int token_rec_row(void *ctx, char **f, size_t n)
{
	tok_rec *t = ctx;

	if (n < 7 || t->found)
		return 0;
	t->found = 1;
	snprintf(t->id, sizeof(t->id), "%s", f[0]);
	snprintf(t->project, sizeof(t->project), "%s", f[1]);
	snprintf(t->role, sizeof(t->role), "%s", f[2]);
	snprintf(t->created, sizeof(t->created), "%s", f[3]);
	t->revoked = strcmp(f[4], "0") != 0;
	snprintf(t->hash, sizeof(t->hash), "%s", f[5]);
	t->updated_ns = strtoll(f[6], NULL, 10);
	return 0;
}

static int token_id_valid(const char *id)
{
	size_t i, n = strlen(id);

	if (n == 0 || n > 32)
		return 0;
	for (i = 0; i < n; i++)
		if (!((id[i] >= '0' && id[i] <= '9') || (id[i] >= 'a' && id[i] <= 'f')))
			return 0;
	return 1;
}

/* DELETE /v1/admin/tokens/{id}: the audit event, then the revoked row. */
int hub_handle_admin_token_revoke(hub_req *r, wt_err *err)
{
	const hub_principal *who = &r->who;
	const char *id = r->id ? r->id : "", *project = wt_http_param(&r->q, "project");
	wt_buf *sql = wt_arena_buf(&r->arena), *out = wt_arena_buf(&r->arena);
	tok_rec t;
	char detail[128];
	int rc;

	memset(&t, 0, sizeof(t));
	if (!sql || !out)
		return wt_err_set(err, WT_ENOMEM, "out of memory");
	if (!token_id_valid(id))
		return wt_err_set(err, WT_EINVAL, "id: a token id is 1-32 lowercase hex digits");
	if ((rc = hub_ch_health_check(&r->ctx->store, err)))
		return rc;
	tokens_newest_sql(sql, NULL, id);
	wt_buf_puts(sql, " ORDER BY rv LIMIT 1 FORMAT TabSeparated");
	if ((rc = hub_ch_query_buf(r->ch, sql, out, err)))
		return rc;
	hub_tsv_each((char *)out->data, out->len, 7, token_rec_row, &t);
	if (!t.found || (project && strcmp(project, t.project)))
		return wt_err_set(err, WT_ENOTFOUND, "token %s does not exist%s%s", id, project ? " in project " : "",
				  project ? project : "");
	if ((rc = hub_auth_allows(who, t.project, HUB_ROLE_ADMIN, err)))
		return rc;
	if (!t.revoked) {
		snprintf(detail, sizeof(detail), "id=%s role=%s", t.id, t.role);
		if ((rc = hub_audit_record(r->ch, t.project, who->token_id, "token.revoke", detail, NULL, err)))
			return rc; /* nothing revoked without its audit event */
		wt_buf_reset(sql);
		wt_buf_puts(sql, "INSERT INTO tokens_v1 (token_sha256, id, project, role, created_at, revoked,"
				 " updated_ns) VALUES (");
		hub_sql_quote(sql, t.hash);
		wt_buf_puts(sql, ", ");
		hub_sql_quote(sql, t.id);
		wt_buf_puts(sql, ", ");
		hub_sql_quote(sql, t.project);
		wt_buf_puts(sql, ", ");
		hub_sql_quote(sql, t.role);
		wt_buf_puts(sql, ", ");
		hub_sql_quote(sql, t.created);
		/* newer than the row it replaces even if that hub's clock ran ahead */
		wt_buf_printf(sql, ", 1, %lld)", wt_now_ns(CLOCK_REALTIME) > t.updated_ns ? (long long)wt_now_ns(CLOCK_REALTIME) : t.updated_ns + 1);
		if ((rc = hub_ch_query_buf(r->ch, sql, NULL, err)))
			return rc;
		hub_auth_flush(r->ctx->auth);
		wt_info("msg=\"token revoked\" project=%s id=%s role=%s by=%s", t.project, t.id, t.role, who->token_id);
	}
	hub_req_json(r, 200, json_pack("{s:s, s:s, s:s, s:b, s:b}", "id", t.id, "project", t.project, "role",
				       t.role, "revoked", 1, "changed", !t.revoked));
	return 0;
}

int hub_handle_admin_tokens(hub_req *r, wt_err *err)
{
	(void)err;
	if (evhttp_request_get_command(r->req) == EVHTTP_REQ_POST)
		tokens_post(r, &r->who);
	else
		tokens_get(r, &r->who);
	return 0;
}
