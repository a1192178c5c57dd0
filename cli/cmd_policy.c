/*
 * cmd_policy.c — `wtctl policy get --project P` (prints the policy document;
 * --json: the hub's whole answer with revision and author) and
 * `wtctl policy set --project P FILE` (PUT the file; the hub validates it
 * and names the bad field). Both use GET/PUT {hub}/v1/projects/P/policy
 * with a project admin token (--token / WT_TOKEN, else WT_ADMIN_TOKEN).
 */
#include "cli.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http_client.h"

#define POLICY_FILE_MAX (64 * 1024)

static const cli_optspec specs[] = {{"--project", "-p", 1}, {NULL, NULL, 0}};

static int parse(int argc, char **argv, const char **project, const char **file, int want_file)
{
	cli_argiter it;
	const char *v;
	char err[CLI_ERR_MAX];
	int k;

	*project = *file = NULL;
	cli_argiter_init(&it, argc, argv);
	while ((k = cli_arg_next(&it, specs, &v, err, sizeof(err))) != CLI_ARG_END) {
		if (k == CLI_ARG_ERR) {
			fprintf(stderr, "wtctl: policy: %s\n", err);
			return -1;
		}
		if (k == 0)
			*project = v;
		else if (want_file && !*file)
			*file = v;
		else {
			fprintf(stderr, "wtctl: policy: unexpected argument \"%s\"\n", v);
			return -1;
		}
	}
	if (!*project || (want_file && !*file)) {
		fprintf(stderr, "usage: wtctl policy get --project P | wtctl policy set --project P FILE\n");
		return -1;
	}
	return 0;
}

static char *policy_url(const cli_global *g, const char *project)
{
	char *url = NULL, *esc;
	size_t n;

	if (!g->hub) {
		fprintf(stderr, "wtctl: policy: give --hub URL (or WT_HUB_URL)\n");
		return NULL;
	}
	n = strlen(g->hub);
	while (n > 0 && g->hub[n - 1] == '/')
		n--;
	/* project names are [A-Za-z0-9_.-]: nothing to escape, refuse the rest */
	if (!*project || strspn(project, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-") !=
	    strlen(project)) {
		fprintf(stderr, "wtctl: policy: \"%s\" is not a project name\n", project);
		return NULL;
	}
	esc = strdup(project);
	if (esc && asprintf(&url, "%.*s/v1/projects/%s/policy", (int)n, g->hub, esc) < 0)
		url = NULL;
	free(esc);
	return url;
}

int cli_cmd_policy(const cli_global *g, const char *verb, int argc, char **argv)
{
	const char *project, *file, *token = g->token ? g->token : g->admin_token;
	cli_http_resp r = {0};
	char err[CLI_ERR_MAX], *url = NULL, *body = NULL;
	size_t len = 0;
	int set = !strcmp(verb, "set"), rc = CLI_EXIT_FAIL;
	json_t *ans = NULL;

	if (strcmp(verb, "get") && !set) {
		fprintf(stderr, "wtctl: policy: unknown verb \"%s\" (get or set)\n", verb);
		return CLI_EXIT_USAGE;
	}
	if (parse(argc, argv, &project, &file, set))
		return CLI_EXIT_USAGE;
	if (!token) {
		fprintf(stderr, "wtctl: policy: give an admin token with --token (or WT_TOKEN / WT_ADMIN_TOKEN)\n");
		return CLI_EXIT_USAGE;
	}
	if (!(url = policy_url(g, project)))
		return CLI_EXIT_USAGE;
	if (set) {
		FILE *f = fopen(file, "rb");
		if (!f) {
			fprintf(stderr, "wtctl: policy set: cannot open %s\n", file);
			goto out;
		}
		body = malloc(POLICY_FILE_MAX + 1);
		len = body ? fread(body, 1, POLICY_FILE_MAX + 1, f) : 0;
		fclose(f);
		if (!body || len > POLICY_FILE_MAX) {
			fprintf(stderr, "wtctl: policy set: %s is larger than %d bytes\n", file, POLICY_FILE_MAX);
			goto out;
		}
	}
	if (cli_http_request(set ? "PUT" : "GET", url, token, set ? "application/json" : NULL, body, len, &r, err,
			     sizeof(err))) {
		fprintf(stderr, "wtctl: policy %s: %s\n", verb, err);
		goto out;
	}
	if (r.status < 200 || r.status >= 300) {
		cli_http_report_error(set ? "policy set" : "policy get", &r);
		goto out;
	}
	ans = json_loadb(r.body, r.len, 0, NULL);
	if (g->json || !ans) {
		printf("%s\n", r.body);
	} else if (set) {
		fprintf(stderr, "wtctl: policy of %s is now revision %" JSON_INTEGER_FORMAT "\n", project,
			json_integer_value(json_object_get(ans, "revision")));
	} else {
		char *txt = json_dumps(json_object_get(ans, "policy"), JSON_INDENT(2) | JSON_SORT_KEYS);
		printf("%s\n", txt ? txt : "{}");
		free(txt);
		fprintf(stderr, "wtctl: revision %" JSON_INTEGER_FORMAT "\n",
			json_integer_value(json_object_get(ans, "revision")));
	}
	rc = CLI_EXIT_OK;
out:
	json_decref(ans);
	cli_http_resp_free(&r);
	free(body);
	free(url);
	return rc;
}
