/*
 * cmd_admin.c — `wtctl admin project create` and `wtctl admin token create`
 * against the hub's admin API (POST /v1/admin/projects, /v1/admin/tokens)
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

#include "http_client.h"

/* POST body (a new reference, stolen) to hub + path. *r filled on success. */
static int admin_post(const cli_global *g, const char *what, const char *path, json_t *body,
		      cli_http_resp *r)
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
	if (!(text = json_dumps(body, JSON_COMPACT)))
		goto out;
	if (cli_http_request("POST", url, token, "application/json", text, strlen(text), r, err,
			     sizeof(err))) {
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
