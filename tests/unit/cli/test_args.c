/*
 * test_args.c — wtctl argument parsing: global options anywhere with
 * environment fallbacks, per-command parsers, and their usage errors.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "cli/cli.h"

#define ARGV(...) ((char *[]){__VA_ARGS__, NULL})
#define ARGC(...) ((int)(sizeof((char *[]){__VA_ARGS__}) / sizeof(char *)))

static const char *fake_env(const char *name)
{
	if (!strcmp(name, "WT_HUB_URL"))
		return "http://env-hub:8080";
	if (!strcmp(name, "WT_TOKEN"))
		return "env-token";
	if (!strcmp(name, "WT_ADMIN_TOKEN"))
		return "env-admin";
	return NULL;
}

static void test_global_anywhere(void **state)
{
	char **argv = ARGV("wtctl", "profile", "--hub", "http://h", "upload", "f.pb", "--json",
			   "--token=t1", "--service", "s");
	int argc = 10;
	cli_global g;
	char err[CLI_ERR_MAX];

	assert_int_equal(cli_parse_global(&argc, argv, &g, fake_env, err, sizeof(err)), 0);
	assert_string_equal(g.hub, "http://h"); /* flag beats the environment */
	assert_string_equal(g.token, "t1");
	assert_null(g.edge);
	assert_int_equal(g.json, 1);
	assert_string_equal(g.admin_token, "env-admin");
	assert_int_equal(argc, 6);
	assert_string_equal(argv[1], "profile");
	assert_string_equal(argv[2], "upload");
	assert_string_equal(argv[3], "f.pb");
	assert_string_equal(argv[4], "--service");
	assert_string_equal(argv[5], "s");
	assert_null(argv[6]);
}

static void test_global_env_fallback_and_dashdash(void **state)
{
	char **argv = ARGV("wtctl", "profile", "summary", "--", "--json");
	int argc = 5;
	cli_global g;
	char err[CLI_ERR_MAX];

	assert_int_equal(cli_parse_global(&argc, argv, &g, fake_env, err, sizeof(err)), 0);
	assert_string_equal(g.hub, "http://env-hub:8080");
	assert_string_equal(g.token, "env-token");
	assert_int_equal(g.json, 0); /* after "--" it is a file name */
	assert_int_equal(argc, 5);
}

static void test_global_missing_value(void **state)
{
	char **argv = ARGV("wtctl", "query", "--hub");
	int argc = 3;
	cli_global g;
	char err[CLI_ERR_MAX] = "";

	assert_int_equal(cli_parse_global(&argc, argv, &g, NULL, err, sizeof(err)), CLI_EXIT_USAGE);
	assert_non_null(strstr(err, "--hub"));
}

static void test_upload_full(void **state)
{
	char **argv = ARGV("cpu.pb.gz", "--service", "api", "--format=pprof", "-t", "cpu",
			   "--label", "region=eu", "--label", "host=a1", "--from", "1700000000",
			   "--until", "2024-01-01T00:00:00Z");
	cli_upload_args a;
	char err[CLI_ERR_MAX];

	assert_int_equal(cli_parse_upload(ARGC("cpu.pb.gz", "--service", "api", "--format=pprof",
					       "-t", "cpu", "--label", "region=eu", "--label",
					       "host=a1", "--from", "1700000000", "--until",
					       "2024-01-01T00:00:00Z"),
					  argv, &a, err, sizeof(err)),
			 0);
	assert_string_equal(a.file, "cpu.pb.gz");
	assert_string_equal(a.service, "api");
	assert_string_equal(a.format, "pprof");
	assert_string_equal(a.type, "cpu");
	assert_int_equal(a.nlabels, 2);
	assert_string_equal(a.labels[1], "host=a1");
	assert_string_equal(a.from, "1700000000");
	assert_string_equal(a.until, "2024-01-01T00:00:00Z");
}

static void test_upload_errors(void **state)
{
	cli_upload_args a;
	char err[CLI_ERR_MAX];

	assert_int_equal(cli_parse_upload(1, ARGV("f"), &a, err, sizeof(err)), CLI_EXIT_USAGE);
	assert_non_null(strstr(err, "--service"));
	assert_int_equal(cli_parse_upload(2, ARGV("--service", "s"), &a, err, sizeof(err)), CLI_EXIT_USAGE);
	assert_non_null(strstr(err, "FILE"));
	assert_int_equal(cli_parse_upload(4, ARGV("f", "g", "--service", "s"), &a, err, sizeof(err)),
			 CLI_EXIT_USAGE);
	assert_non_null(strstr(err, "unexpected argument g"));
	assert_int_equal(cli_parse_upload(5, ARGV("f", "--service", "s", "--label", "novalue"), &a,
					  err, sizeof(err)),
			 CLI_EXIT_USAGE);
	assert_non_null(strstr(err, "K=V"));
	assert_int_equal(cli_parse_upload(5, ARGV("f", "--service", "s", "--label", "a b=c"), &a, err,
					  sizeof(err)),
			 CLI_EXIT_USAGE);
	assert_int_equal(cli_parse_upload(4, ARGV("f", "--service", "s", "--bogus"), &a, err, sizeof(err)),
			 CLI_EXIT_USAGE);
	assert_non_null(strstr(err, "unknown option --bogus"));
	assert_int_equal(cli_parse_upload(2, ARGV("f", "--service"), &a, err, sizeof(err)), CLI_EXIT_USAGE);
	assert_non_null(strstr(err, "needs a value"));
	/* --idempotency-key: the hub's rule, 1..128 of [A-Za-z0-9._:-] */
	assert_int_equal(cli_parse_upload(3, ARGV("f", "-s", "s"), &a, err, sizeof(err)), 0);
	assert_null(a.idempotency_key);
	assert_int_equal(cli_parse_upload(5, ARGV("f", "-s", "s", "--idempotency-key", "job-42:try.1_a"), &a, err,
					  sizeof(err)),
			 0);
	assert_string_equal(a.idempotency_key, "job-42:try.1_a");
	assert_int_equal(cli_parse_upload(5, ARGV("f", "-s", "s", "--idempotency-key", "a b"), &a, err, sizeof(err)),
			 CLI_EXIT_USAGE);
	assert_non_null(strstr(err, "--idempotency-key"));
	assert_int_equal(cli_parse_upload(5, ARGV("f", "-s", "s", "--idempotency-key", ""), &a, err, sizeof(err)),
			 CLI_EXIT_USAGE);
	{
		char long_key[130];
		memset(long_key, 'k', 129);
		long_key[129] = 0;
		assert_int_equal(cli_parse_upload(5, ARGV("f", "-s", "s", "--idempotency-key", long_key), &a, err,
						  sizeof(err)),
				 CLI_EXIT_USAGE);
		long_key[128] = 0;
		assert_int_equal(cli_parse_upload(5, ARGV("f", "-s", "s", "--idempotency-key", long_key), &a, err,
						  sizeof(err)),
				 0);
	}
}

static void test_project_create(void **state)
{
	cli_project_args a;
	char err[CLI_ERR_MAX];

	assert_int_equal(cli_parse_project_create(1, ARGV("demo"), &a, err, sizeof(err)), 0);
	assert_string_equal(a.name, "demo");
	assert_int_equal(a.retention_days, -1);
	assert_int_equal(a.exist_ok, 0);
	assert_int_equal(cli_parse_project_create(4, ARGV("--retention-days", "30", "p", "--exist-ok"),
						  &a, err, sizeof(err)),
			 0);
	assert_int_equal(a.retention_days, 30);
	assert_int_equal(a.exist_ok, 1);
	assert_int_equal(cli_parse_project_create(3, ARGV("p", "--retention-days", "-3"), &a, err,
						  sizeof(err)),
			 CLI_EXIT_USAGE);
	assert_int_equal(cli_parse_project_create(3, ARGV("p", "--retention-days", "0"), &a, err,
						  sizeof(err)),
			 CLI_EXIT_USAGE);
	assert_int_equal(cli_parse_project_create(3, ARGV("p", "--retention-days", "7x"), &a, err,
						  sizeof(err)),
			 CLI_EXIT_USAGE);
	assert_int_equal(cli_parse_project_create(0, ARGV(NULL), &a, err, sizeof(err)), CLI_EXIT_USAGE);
}

static void test_token_create(void **state)
{
	cli_token_args a;
	char err[CLI_ERR_MAX];

	assert_int_equal(cli_parse_token_create(4, ARGV("--project", "demo", "--role", "DeleteTelemetry"),
						&a, err, sizeof(err)),
			 0);
	assert_string_equal(a.project, "demo");
	assert_string_equal(a.role, "DeleteTelemetry");
	assert_int_equal(cli_parse_token_create(4, ARGV("--project", "demo", "--role", "writer"), &a,
						err, sizeof(err)),
			 CLI_EXIT_USAGE);
	assert_non_null(strstr(err, "writer"));
	assert_int_equal(cli_parse_token_create(2, ARGV("--role", "read"), &a, err, sizeof(err)),
			 CLI_EXIT_USAGE);
	assert_non_null(strstr(err, "--project"));
	assert_int_equal(cli_parse_token_create(2, ARGV("--project=x", "--role=upload"), &a, err,
						sizeof(err)),
			 0);
	assert_string_equal(a.role, "upload");
}

/* admin token list/revoke, admin edge allow/disallow/list; the global
 * parser consumes --edge, so the edge id arrives as edge_default */
static void test_admin(void **state)
{
	cli_admin_args a;
	char err[CLI_ERR_MAX];
	int argc = 8;
	char *argv[] = {"wtctl", "admin", "edge", "allow", "--edge", "e1", "--project", "demo", NULL};
	cli_global g;

	(void)state;
	assert_int_equal(cli_parse_global(&argc, argv, &g, NULL, err, sizeof(err)), 0);
	assert_string_equal(g.edge_arg, "e1");
	assert_int_equal(cli_parse_admin("edge allow", g.edge_arg, argc - 4, argv + 4, &a, err, sizeof(err)), 0);
	assert_string_equal(a.edge, "e1");
	assert_string_equal(a.project, "demo");
	assert_int_equal(cli_parse_admin("edge disallow", NULL, 2, ARGV("--project", "demo"), &a, err, sizeof(err)),
			 CLI_EXIT_USAGE);
	assert_non_null(strstr(err, "--edge"));
	assert_int_equal(cli_parse_admin("edge list", NULL, 0, ARGV(NULL), &a, err, sizeof(err)), 0);
	assert_int_equal(cli_parse_admin("token revoke", NULL, 3, ARGV("--project", "demo", "abc123"), &a, err,
					 sizeof(err)),
			 0);
	assert_string_equal(a.id, "abc123");
	assert_int_equal(cli_parse_admin("token revoke", NULL, 2, ARGV("--project", "demo"), &a, err, sizeof(err)),
			 CLI_EXIT_USAGE);
	assert_int_equal(cli_parse_admin("token list", NULL, 1, ARGV("x"), &a, err, sizeof(err)), CLI_EXIT_USAGE);
	assert_int_equal(cli_parse_admin("token list", NULL, 2, ARGV("--project=p", "--edge=e"), &a, err, sizeof(err)),
			 CLI_EXIT_USAGE);
}

static void test_summary_convert(void **state)
{
	cli_summary_args s;
	cli_convert_args c;
	char err[CLI_ERR_MAX];

	assert_int_equal(cli_parse_summary(1, ARGV("f"), &s, err, sizeof(err)), 0);
	assert_int_equal(s.top, CLI_SUMMARY_TOP);
	assert_null(s.type);
	assert_int_equal(cli_parse_summary(5, ARGV("--top", "0", "f", "--type", "alloc_space"), &s, err,
					   sizeof(err)),
			 0);
	assert_int_equal(s.top, 0);
	assert_string_equal(s.type, "alloc_space");
	assert_int_equal(cli_parse_summary(3, ARGV("f", "--top", "ten"), &s, err, sizeof(err)),
			 CLI_EXIT_USAGE);

	assert_int_equal(cli_parse_convert(5, ARGV("f", "--to", "pprof", "-o", "out.pb.gz"), &c, err,
					   sizeof(err)),
			 0);
	assert_int_equal(c.to, CLI_TO_PPROF);
	assert_string_equal(c.out, "out.pb.gz");
	assert_int_equal(cli_parse_convert(2, ARGV("f", "--to=folded"), &c, err, sizeof(err)), 0);
	assert_int_equal(c.to, CLI_TO_FOLDED);
	assert_null(c.out);
	assert_int_equal(cli_parse_convert(2, ARGV("f", "--to=speedscope"), &c, err, sizeof(err)), 0);
	assert_int_equal(c.to, CLI_TO_SPEEDSCOPE);
	assert_int_equal(cli_parse_convert(3, ARGV("f", "--to", "svg"), &c, err, sizeof(err)),
			 CLI_EXIT_USAGE);
	assert_non_null(strstr(err, "svg"));
	assert_int_equal(cli_parse_convert(1, ARGV("f"), &c, err, sizeof(err)), CLI_EXIT_USAGE);
	assert_non_null(strstr(err, "--to"));
}

static void test_query(void **state)
{
	cli_query_args q;
	char err[CLI_ERR_MAX];

	assert_int_equal(cli_parse_query("table", 8,
					 ARGV("--project", "demo", "--service", "api", "--label",
					      "region=eu", "--limit", "5"),
					 &q, err, sizeof(err)),
			 0);
	assert_string_equal(q.view, "table");
	assert_int_equal(q.nlabels, 1);
	assert_int_equal(q.limit, 5);
	assert_int_equal(cli_parse_query("table", 2, ARGV("--project", "demo"), &q, err, sizeof(err)),
			 CLI_EXIT_USAGE);
	assert_non_null(strstr(err, "--service"));
	assert_int_equal(cli_parse_query("diff", 4, ARGV("--project", "d", "--service", "s"), &q, err,
					 sizeof(err)),
			 CLI_EXIT_USAGE);
}

static void test_config_set(void **state)
{
	cli_config_args c;
	char err[CLI_ERR_MAX];

	assert_int_equal(cli_parse_config_set(5, ARGV("in.cfg", "-o", "out.cfg", "a.b=1", "c=\"x\""), &c,
					      err, sizeof(err)),
			 0);
	assert_string_equal(c.in, "in.cfg");
	assert_string_equal(c.out, "out.cfg");
	assert_int_equal(c.npairs, 2);
	assert_int_equal(cli_parse_config_set(2, ARGV("in.cfg", "novalue"), &c, err, sizeof(err)),
			 CLI_EXIT_USAGE);
}

static void test_u64(void **state)
{
	uint64_t v;

	assert_int_equal(cli_parse_u64("42", &v), 0);
	assert_int_equal(v, 42);
	assert_int_equal(cli_parse_u64("", &v), -1);
	assert_int_equal(cli_parse_u64("-1", &v), -1);
	assert_int_equal(cli_parse_u64("1e3", &v), -1);
	assert_int_equal(cli_parse_u64("99999999999999999999999", &v), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_global_anywhere),
		cmocka_unit_test(test_global_env_fallback_and_dashdash),
		cmocka_unit_test(test_global_missing_value),
		cmocka_unit_test(test_upload_full),
		cmocka_unit_test(test_upload_errors),
		cmocka_unit_test(test_project_create),
		cmocka_unit_test(test_token_create),
		cmocka_unit_test(test_admin),
		cmocka_unit_test(test_summary_convert),
		cmocka_unit_test(test_query),
		cmocka_unit_test(test_config_set),
		cmocka_unit_test(test_u64),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
