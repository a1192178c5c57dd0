/*
 * cmd_query.c — `wtctl query table|flamegraph`: GET the query API of the
 * edge (--edge, its local buffer) or the hub (--hub) with a read token and
 * print the answer: JSON as received, or for `table` in text mode a
 * pprof-like table.
 */
#include "cli.h"

#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http_client.h"

static double pct(json_int_t v, json_int_t total)
{
	return total ? 100.0 * (double)v / (double)total : 0.0;
}

static int print_table(const cli_query_args *a, const cli_http_resp *r)
{
	json_error_t je;
	json_t *j = json_loadb(r->body, r->len, 0, &je), *rows, *row;
	json_int_t total;
	const char *unit;
	size_t i, n;

	if (!j || !json_is_object(j)) {
		fprintf(stderr, "wtctl: query table: answer is not a JSON object (%s)\n", j ? "" : je.text);
		json_decref(j);
		return CLI_EXIT_FAIL;
	}
	unit = json_string_value(json_object_get(j, "unit"));
	total = json_integer_value(json_object_get(j, "total"));
	rows = json_object_get(j, "rows");
	n = json_array_size(rows);
	printf("project %s, service %s, unit %s, total %" JSON_INTEGER_FORMAT ", %zu functions\n",
	       a->project, a->service, unit ? unit : "?", total, n);
	printf("%16s %7s %16s %7s  %s\n", "self", "self%", "total", "total%", "function");
	json_array_foreach(rows, i, row) {
		json_int_t s = json_integer_value(json_object_get(row, "self"));
		json_int_t t = json_integer_value(json_object_get(row, "total"));
		const char *f = json_string_value(json_object_get(row, "function"));
		if (a->limit && i >= a->limit)
			break;
		printf("%16" JSON_INTEGER_FORMAT " %6.2f%% %16" JSON_INTEGER_FORMAT " %6.2f%%  %s\n", s,
		       pct(s, total), t, pct(t, total), f ? f : "?");
	}
	json_decref(j);
	return CLI_EXIT_OK;
}

int cli_cmd_query(const cli_global *g, const char *view, int argc, char **argv)
{
	cli_query_args a;
	cli_http_resp r = {0};
	char err[CLI_ERR_MAX];
	const char *base = g->edge ? g->edge : g->hub;
	char *url = NULL;
	int rc = CLI_EXIT_FAIL;

	if (cli_parse_query(view, argc, argv, &a, err, sizeof(err))) {
		fprintf(stderr, "wtctl: %s\n", err);
		return CLI_EXIT_USAGE;
	}
	if (!base) {
		fprintf(stderr, "wtctl: query: give --hub URL or --edge URL (or WT_HUB_URL / WT_EDGE_URL)\n");
		return CLI_EXIT_USAGE;
	}
	if (!(url = cli_query_url(base, &a))) {
		fprintf(stderr, "wtctl: bad base URL %s\n", base);
		goto out;
	}
	if (cli_http_request("GET", url, g->token, NULL, NULL, 0, &r, err, sizeof(err))) {
		fprintf(stderr, "wtctl: query %s: %s\n", view, err);
		goto out;
	}
	if (r.status < 200 || r.status >= 300) {
		cli_http_report_error(strcmp(view, "table") ? "query flamegraph" : "query table", &r);
		goto out;
	}
	if (!g->json && !strcmp(view, "table")) {
		rc = print_table(&a, &r);
		goto out;
	}
	fwrite(r.body, 1, r.len, stdout);
	if (!r.len || r.body[r.len - 1] != '\n')
		putchar('\n');
	rc = CLI_EXIT_OK;
out:
	cli_http_resp_free(&r);
	free(url);
	return rc;
}
