/*
 * cli.c — wtctl's command table: global options, then "GROUP VERB ..."
 * dispatched to the cmd_*.c files. Kept apart from main.c so unit tests
 * link the whole CLI library.
 */
#include "cli.h"

#include <curl/curl.h>
#include <stdio.h>
#include <string.h>

#include "cmd_convert_cpuprofile.h"
#include "cmd_pki.h"

void cli_usage(FILE *f)
{
	fputs(
	"usage: wtctl [--hub URL] [--edge URL] [--token T] [--json] COMMAND ...\n"
	"\n"
	"Global options (anywhere on the line; environment fallbacks in brackets):\n"
	"  --hub URL     hub base URL [WT_HUB_URL]\n"
	"  --edge URL    edge base URL [WT_EDGE_URL]; uploads and queries prefer it\n"
	"                (admin edge …: the edge id instead)\n"
	"  --token T     bearer token [WT_TOKEN; admin commands also WT_ADMIN_TOKEN]\n"
	"  --json        machine-readable output\n"
	"\n"
	"Commands:\n"
	"  profile upload FILE --service S [--format F] [--type T] [--label K=V]...\n"
	"                 [--from T] [--until T] [--idempotency-key K]\n"
	"      POST the file to {edge or hub}/v1/profiles: format detected by content\n"
	"      (unless --format), body gzipped, 3 tries on connect errors and 5xx,\n"
	"      all with one Idempotency-Key (K, else random per invocation: the hub\n"
	"      stores a retried upload once);\n"
	"      prints what was stored (samples, types, time range; --json: the answer).\n"
	"      F: auto (default), pprof, folded, perf, jfr, otlp, cpuprofile, speedscope\n"
	"      (what the server accepts). Exit 1 on a 4xx/5xx, the error on stderr.\n"
	"  profile summary FILE [--format F] [--type T] [--top N] [--max-decompressed SIZE]\n"
	"      Offline, like `go tool pprof -top`: format, sample count, sample types\n"
	"      with units and totals, unique stacks, time range, top N functions by\n"
	"      self and by total (N=0: all). --json for scripts.\n"
	"      A gzip/zstd FILE is decompressed to at most 1 GiB (--max-decompressed\n"
	"      SIZE, e.g. 4G, allows more); its first KiB must look like a profile.\n"
	"  profile convert FILE --to folded|pprof|speedscope [--type T] [-o OUT] [--max-decompressed SIZE]\n"
	"      Offline conversion of any format above (FILE - = stdin). speedscope\n"
	"      takes --type all or T1,T2 (one profile per type and thread).\n"
	"  profile convert-cpuprofile IN [-o OUT] [--type samples|cpu]\n"
	"      V8/Node .cpuprofile to folded stacks (the seed's Node.js path).\n"
	"  admin project create NAME [--retention-days N] [--exist-ok]\n"
	"  admin token create --project P --role upload|read|admin|DeleteTelemetry\n"
	"      Prints only the token on stdout (details on stderr, or all with --json).\n"
	"  admin token list --project P        ids, roles, created, last used (never secrets)\n"
	"  admin token revoke --project P ID   every hub refuses it within hub.token_cache_ttl_ms\n"
	"  admin edge allow|disallow --edge ID --project P\n"
	"      Register an edge (its certificate's id) to a project: only then does the hub\n"
	"      apply its batches for that project and serve it that project's config.\n"
	"  admin edge list [--project P] [--edge ID]\n"
	"  query table|flamegraph --project P --service S [--type T] [--from T]\n"
	"                 [--until T] [--label K=V]... [--limit N]\n"
	"      Query the edge (--edge) or hub (--hub) API with a read token.\n"
	"  config set FILE [-o OUT] PATH=VALUE...   (libconfig values: '\"s\"', 42, [..])\n"
	"  config get FILE PATH\n"
	"      Generate a daemon config from an example (used by appliance/up).\n"
	"  policy get --project P | policy set --project P FILE\n"
	"      Read or replace a project's profiling policy (admin token).\n"
	"  sourcemaps upload [--project P] FILE|DIR...\n"
	"      Upload native debug files (unstripped ELF, .debug files) by GNU build id\n"
	"      for the hub's symbolizer; files the hub has already are skipped.\n"
	"  sourcemaps list [--project P] | sourcemaps delete [--project P] BUILD_ID...\n"
	"      (project also from WT_PROJECT; an upload or admin token)\n"
	"  pki init|issue-edge|issue-hub|show ...   (site PKI for edge-hub mTLS;\n"
	"      wtctl pki help)\n"
	"  help, version\n", f);
}

static int unknown(const char *what)
{
	fprintf(stderr, "wtctl: unknown command: %s (try wtctl help)\n", what);
	return CLI_EXIT_USAGE;
}

static int dispatch(const cli_global *g, int argc, char **argv)
{
	const char *grp = argc > 1 ? argv[1] : NULL;
	const char *verb = argc > 2 ? argv[2] : NULL;

	if (grp && !strcmp(grp, "pki")) {
		if (g->help || !verb) {
			fputs(cli_pki_usage, g->help ? stdout : stderr);
			return g->help ? CLI_EXIT_OK : CLI_EXIT_USAGE;
		}
		return cli_cmd_pki(argc - 2, argv + 2);
	}
	if (!grp || g->help || !strcmp(grp, "help")) {
		cli_usage(grp ? stdout : stderr);
		return grp ? CLI_EXIT_OK : CLI_EXIT_USAGE;
	}
	if (!strcmp(grp, "version")) {
		puts("wtctl (Watchtower) " WT_CLI_VERSION);
		return CLI_EXIT_OK;
	}
	if (!verb)
		return unknown(grp);
	if (!strcmp(grp, "profile")) {
		if (!strcmp(verb, "upload"))
			return cli_cmd_upload(g, argc - 3, argv + 3);
		if (!strcmp(verb, "summary"))
			return cli_cmd_summary(g, argc - 3, argv + 3);
		if (!strcmp(verb, "convert"))
			return cli_cmd_convert(g, argc - 3, argv + 3);
		if (!strcmp(verb, "convert-cpuprofile"))
			return cli_cmd_convert_cpuprofile(argc - 3, argv + 3);
		return unknown(verb);
	}
	if (!strcmp(grp, "admin")) {
		const char *act = argc > 3 ? argv[3] : "";
		if (!strcmp(verb, "project") && !strcmp(act, "create"))
			return cli_cmd_project_create(g, argc - 4, argv + 4);
		if (!strcmp(verb, "token") && !strcmp(act, "create"))
			return cli_cmd_token_create(g, argc - 4, argv + 4);
		if (!strcmp(verb, "token") && !strcmp(act, "list"))
			return cli_cmd_token_list(g, argc - 4, argv + 4);
		if (!strcmp(verb, "token") && !strcmp(act, "revoke"))
			return cli_cmd_token_revoke(g, argc - 4, argv + 4);
		if (!strcmp(verb, "edge") && (!strcmp(act, "allow") || !strcmp(act, "disallow") || !strcmp(act, "list")))
			return cli_cmd_edge(g, act, argc - 4, argv + 4);
		return unknown(verb);
	}
	if (!strcmp(grp, "query")) {
		if (!strcmp(verb, "table") || !strcmp(verb, "flamegraph"))
			return cli_cmd_query(g, verb, argc - 3, argv + 3);
		return unknown(verb);
	}
	if (!strcmp(grp, "policy"))
		return cli_cmd_policy(g, verb, argc - 3, argv + 3);
	if (!strcmp(grp, "sourcemaps"))
		return cli_cmd_sourcemaps(g, verb, argc - 3, argv + 3);
	if (!strcmp(grp, "config")) {
		if (!strcmp(verb, "set"))
			return cli_cmd_config_set(g, argc - 3, argv + 3);
		if (!strcmp(verb, "get"))
			return cli_cmd_config_get(g, argc - 3, argv + 3);
		return unknown(verb);
	}
	return unknown(grp);
}

int cli_main(int argc, char **argv, cli_getenv_fn getenv_fn)
{
	cli_global g;
	char err[CLI_ERR_MAX];
	int rc;

	if (cli_parse_global(&argc, argv, &g, getenv_fn, err, sizeof(err))) {
		fprintf(stderr, "wtctl: %s\n", err);
		return CLI_EXIT_USAGE;
	}
	if (curl_global_init(CURL_GLOBAL_DEFAULT)) {
		fprintf(stderr, "wtctl: cannot initialise libcurl\n");
		return CLI_EXIT_FAIL;
	}
	rc = dispatch(&g, argc, argv);
	curl_global_cleanup();
	return rc;
}
