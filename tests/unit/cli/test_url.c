/*
 * test_url.c — request URLs built by wtctl: paths, parameter order,
 * percent-encoding of values and label keys, trailing slashes of the base.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cli/cli.h"

static void test_upload_url(void **state)
{
	cli_upload_args a = {0};
	char *u;

	a.service = "my svc/α";
	a.labels[0] = "region=eu west&1";
	a.nlabels = 1;
	a.from = "2024-01-01T00:00:00+01:00";
	u = cli_upload_url("http://127.0.0.1:4040//", &a);
	assert_non_null(u);
	assert_string_equal(u, "http://127.0.0.1:4040/v1/profiles?format=auto&service=my%20svc%2F%CE%B1"
			       "&from=2024-01-01T00%3A00%3A00%2B01%3A00&label.region=eu%20west%261");
	free(u);
	a.format = "pprof";
	a.type = "cpu";
	a.from = NULL;
	a.nlabels = 0;
	a.service = "api";
	u = cli_upload_url("http://h", &a);
	assert_string_equal(u, "http://h/v1/profiles?format=pprof&service=api&type=cpu");
	free(u);
	assert_null(cli_upload_url("", &a));
	assert_null(cli_upload_url(NULL, &a));
}

static void test_query_url(void **state)
{
	cli_query_args q = {0};
	char *u;

	q.view = "flamegraph";
	q.project = "demo";
	q.service = "api";
	q.type = "alloc_space";
	q.until = "1700000000";
	q.labels[0] = "host=a";
	q.nlabels = 1;
	u = cli_query_url("http://hub:8080/", &q);
	assert_string_equal(u, "http://hub:8080/v1/projects/demo/profiles/flamegraph?service=api"
			       "&type=alloc_space&until=1700000000&label.host=a");
	free(u);
	q.project = "a/b";
	q.view = "table";
	q.type = NULL;
	q.until = NULL;
	q.nlabels = 0;
	u = cli_query_url("http://hub", &q);
	assert_string_equal(u, "http://hub/v1/projects/a%2Fb/profiles/table?service=api");
	free(u);
}

static void test_debuginfo_url(void **state)
{
	char *u;
	(void)state;

	u = cli_debuginfo_url("http://hub:8080//", "demo", NULL, NULL);
	assert_string_equal(u, "http://hub:8080/v1/projects/demo/debuginfo");
	free(u);
	u = cli_debuginfo_url("http://hub", "demo", "3f2e", "lib foo+.so");
	assert_string_equal(u, "http://hub/v1/projects/demo/debuginfo/3f2e?name=lib%20foo%2B.so");
	free(u);
	assert_null(cli_debuginfo_url("", "demo", NULL, NULL));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_upload_url),
		cmocka_unit_test(test_query_url),
		cmocka_unit_test(test_debuginfo_url),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
