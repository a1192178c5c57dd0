/*
 * cmd_admin.c — `wtctl admin project create`, `admin token create|list|
 * revoke` and `admin edge allow|disallow|list` against the hub's admin API
 * (/v1/admin/projects, /v1/admin/tokens, /v1/admin/edges; docs/api.md)
 * with the admin token (--token, WT_TOKEN, else WT_ADMIN_TOKEN).
 *
 * `token create` prints only the secret on stdout (one line) so scripts can
 * capture it; the details go to stderr, or the whole answer to stdout with
 * --json.
 */
#include "cli.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "http_client.h"

/* method + body (a new reference, stolen; NULL: none) to hub + path.
 * *r filled on success. */
static int admin_request(const cli_global *g, const char *what, const char *method, const char *path,
			 json_t *body, cli_http_resp *r)
{
	const char *token = g->token ? g->token : g->admin_token;
	char err[CLI_ERR_MAX];
	char *url = NULL, *text = NULL;
	size_t n;
	int rc = -1;

	if (!g->hub) {
		fprintf(stderr, "wtctl: %s: give --hub URL (or WT_HUB_URL)\n", what);
		goto out;
	}
	if (!token) {
		fprintf(stderr, "wtctl: %s: give the admin token with --token (or WT_TOKEN / WT_ADMIN_TOKEN)\n", what);
		goto out;
	}
	n = strlen(g->hub);
	while (n > 0 && g->hub[n - 1] == '/')
		n--;
	if (asprintf(&url, "%.*s%s", (int)n, g->hub, path) < 0) {
		url = NULL;
		goto out;
	}
	if (body && !(text = json_dumps(body, JSON_COMPACT)))
		goto out;
	if (cli_http_request(method, url, token, body ? "application/json" : NULL, text, text ? strlen(text) : 0, r,
			     err, sizeof(err))) {
		fprintf(stderr, "wtctl: %s: %s\n", what, err);
		goto out;
	}
	rc = 0;
out:
	json_decref(body);
	free(text);
	free(url);
	return rc;
}

static int admin_post(const cli_global *g, const char *what, const char *path, json_t *body,
		      cli_http_resp *r)
{
	return admin_request(g, what, "POST", path, body, r);
}

/* Names that go into a URL path or query unescaped: what the hub accepts
 * for projects, edge ids and token ids. */
static int name_ok(const char *what, const char *v)
{
	size_t i, n = strlen(v);

	for (i = 0; i < n; i++) {
		char c = v[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
		      c == '.' || c == '-')) {
			fprintf(stderr, "wtctl: %s \"%s\": only [A-Za-z0-9_.-] is allowed\n", what, v);
			return 0;
		}
	}
	return n > 0 && n <= 128;
}

int cli_cmd_project_create(const cli_global *g, int argc, char **argv)
{
	cli_project_args a;
	cli_http_resp r = {0};
	char err[CLI_ERR_MAX];
	json_t *body;
	int rc = CLI_EXIT_FAIL;

	if (cli_parse_project_create(argc, argv, &a, err, sizeof(err))) {
		fprintf(stderr, "wtctl: %s\n", err);
		return CLI_EXIT_USAGE;
	}
	body = json_object();
	json_object_set_new(body, "name", json_string(a.name));
	if (a.retention_days > 0)
		json_object_set_new(body, "retention_days", json_integer(a.retention_days));
	if (admin_post(g, "admin project create", "/v1/admin/projects", body, &r))
		goto out;
	if (r.status == 409 && a.exist_ok) {
		fprintf(stderr, "wtctl: project %s exists already\n", a.name);
		rc = CLI_EXIT_OK;
		goto out;
	}
	if (r.status < 200 || r.status >= 300) {
		cli_http_report_error("admin project create", &r);
		goto out;
	}
	if (g->json)
		printf("%s\n", r.body);
	else
		printf("project %s created\n", a.name);
	rc = CLI_EXIT_OK;
out:
	cli_http_resp_free(&r);
	return rc;
}

int cli_cmd_token_create(const cli_global *g, int argc, char **argv)
{
	cli_token_args a;
	cli_http_resp r = {0};
	char err[CLI_ERR_MAX];
	json_t *body, *ans = NULL;
	const char *token;
	int rc = CLI_EXIT_FAIL;

	if (cli_parse_token_create(argc, argv, &a, err, sizeof(err))) {
		fprintf(stderr, "wtctl: %s\n", err);
		return CLI_EXIT_USAGE;
	}
	body = json_object();
	json_object_set_new(body, "project", json_string(a.project));
	json_object_set_new(body, "role", json_string(a.role));
	if (admin_post(g, "admin token create", "/v1/admin/tokens", body, &r))
		goto out;
	if (r.status < 200 || r.status >= 300) {
		cli_http_report_error("admin token create", &r);
		goto out;
	}
	ans = json_loadb(r.body, r.len, 0, NULL);
	token = ans ? json_string_value(json_object_get(ans, "token")) : NULL;
	if (!token || !*token) {
		fprintf(stderr, "wtctl: admin token create: the hub's answer has no \"token\": %.*s\n",
			(int)(r.len > 500 ? 500 : r.len), r.body);
		goto out;
	}
	if (g->json) {
		printf("%s\n", r.body);
	} else {
		json_t *id = json_object_get(ans, "id");
		printf("%s\n", token);
		if (json_is_string(id))
			fprintf(stderr, "wtctl: token %s for project %s, role %s\n", json_string_value(id),
				a.project, a.role);
		else if (json_is_integer(id))
			fprintf(stderr, "wtctl: token %" JSON_INTEGER_FORMAT " for project %s, role %s\n",
				json_integer_value(id), a.project, a.role);
		else
			fprintf(stderr, "wtctl: token for project %s, role %s\n", a.project, a.role);
	}
	rc = CLI_EXIT_OK;
out:
	json_decref(ans);
	cli_http_resp_free(&r);
	return rc;
}

/* Print r's body with --json, else fmt over each element of array key. */
static int admin_report(const cli_global *g, const char *what, const cli_http_resp *r, const char *key,
			void (*line)(json_t *item))
{
	json_t *ans, *arr, *it;
	size_t i;

	if (r->status < 200 || r->status >= 300) {
		cli_http_report_error(what, r);
		return CLI_EXIT_FAIL;
	}
	if (g->json) {
		printf("%s\n", r->body);
		return CLI_EXIT_OK;
	}
	ans = json_loadb(r->body, r->len, 0, NULL);
	arr = key ? json_object_get(ans, key) : NULL;
	if (key && !json_is_array(arr)) {
		fprintf(stderr, "wtctl: %s: the hub's answer has no \"%s\" list\n", what, key);
		json_decref(ans);
		return CLI_EXIT_FAIL;
	}
	if (key)
		json_array_foreach(arr, i, it)
			line(it);
	else
		line(ans);
	json_decref(ans);
	return CLI_EXIT_OK;
}

static const char *js(json_t *o, const char *k)
{
	const char *v = json_string_value(json_object_get(o, k));
	return v ? v : "-";
}

static void token_line(json_t *t)
{
	json_t *used = json_object_get(t, "last_used_ns");
	char when[32] = "never";

	if (json_is_integer(used)) {
		time_t sec = (time_t)(json_integer_value(used) / 1000000000LL);
		struct tm tm;
		if (gmtime_r(&sec, &tm))
			strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
	}
	printf("%-16s  %-15s  created %s  last used %s\n", js(t, "id"), js(t, "role"), js(t, "created_at"), when);
}

int cli_cmd_token_list(const cli_global *g, int argc, char **argv)
{
	cli_admin_args a;
	cli_http_resp r = {0};
	char err[CLI_ERR_MAX], path[256];
	int rc = CLI_EXIT_FAIL;

	if (cli_parse_admin("token list", NULL, argc, argv, &a, err, sizeof(err))) {
		fprintf(stderr, "wtctl: %s\n", err);
		return CLI_EXIT_USAGE;
	}
	if (!name_ok("--project", a.project))
		return CLI_EXIT_USAGE;
	snprintf(path, sizeof(path), "/v1/admin/tokens?project=%s", a.project);
	if (!admin_request(g, "admin token list", "GET", path, NULL, &r))
		rc = admin_report(g, "admin token list", &r, "tokens", token_line);
	cli_http_resp_free(&r);
	return rc;
}

static void revoked_line(json_t *t)
{
	printf("token %s (%s, project %s) %s\n", js(t, "id"), js(t, "role"), js(t, "project"),
	       json_is_true(json_object_get(t, "changed")) ? "revoked" : "was already revoked");
}

int cli_cmd_token_revoke(const cli_global *g, int argc, char **argv)
{
	cli_admin_args a;
	cli_http_resp r = {0};
	char err[CLI_ERR_MAX], path[512];
	int rc = CLI_EXIT_FAIL;

	if (cli_parse_admin("token revoke", NULL, argc, argv, &a, err, sizeof(err))) {
		fprintf(stderr, "wtctl: %s\n", err);
		return CLI_EXIT_USAGE;
	}
	if (!name_ok("--project", a.project) || !name_ok("token id", a.id))
		return CLI_EXIT_USAGE;
	snprintf(path, sizeof(path), "/v1/admin/tokens/%s?project=%s", a.id, a.project);
	if (!admin_request(g, "admin token revoke", "DELETE", path, NULL, &r))
		rc = admin_report(g, "admin token revoke", &r, NULL, revoked_line);
	cli_http_resp_free(&r);
	return rc;
}

static void edge_line(json_t *e)
{
	printf("%-24s  %s\n", js(e, "edge_id"), js(e, "project"));
}

static void edge_changed_line(json_t *e)
{
	int allowed = json_is_true(json_object_get(e, "allowed"));

	printf("edge %s %s project %s%s\n", js(e, "edge_id"), allowed ? "may write into" : "no longer writes into",
	       js(e, "project"), json_is_true(json_object_get(e, "changed")) ? "" : " (unchanged)");
}

int cli_cmd_edge(const cli_global *g, const char *act, int argc, char **argv)
{
	cli_admin_args a;
	cli_http_resp r = {0};
	char err[CLI_ERR_MAX], path[512], verb[32];
	int rc = CLI_EXIT_FAIL;

	snprintf(verb, sizeof(verb), "edge %s", act);
	if (cli_parse_admin(verb, g->edge_arg, argc, argv, &a, err, sizeof(err))) {
		fprintf(stderr, "wtctl: %s\n", err);
		return CLI_EXIT_USAGE;
	}
	if ((a.project && !name_ok("--project", a.project)) || (a.edge && !name_ok("--edge", a.edge)))
		return CLI_EXIT_USAGE;
	if (!strcmp(act, "list")) {
		snprintf(path, sizeof(path), "/v1/admin/edges?%s%s%s%s", a.project ? "project=" : "",
			 a.project ? a.project : "", a.project && a.edge ? "&" : "", a.edge ? "edge=" : "");
		if (a.edge)
			strncat(path, a.edge, sizeof(path) - strlen(path) - 1);
		if (!admin_request(g, "admin edge list", "GET", path, NULL, &r))
			rc = admin_report(g, "admin edge list", &r, "edges", edge_line);
	} else if (!strcmp(act, "allow")) {
		json_t *body = json_pack("{s:s}", "project", a.project);
		snprintf(path, sizeof(path), "/v1/admin/edges/%s/projects", a.edge);
		if (!admin_post(g, "admin edge allow", path, body, &r))
			rc = admin_report(g, "admin edge allow", &r, NULL, edge_changed_line);
	} else {
		snprintf(path, sizeof(path), "/v1/admin/edges/%s/projects/%s", a.edge, a.project);
		if (!admin_request(g, "admin edge disallow", "DELETE", path, NULL, &r))
			rc = admin_report(g, "admin edge disallow", &r, NULL, edge_changed_line);
	}
	cli_http_resp_free(&r);
	return rc;
}
