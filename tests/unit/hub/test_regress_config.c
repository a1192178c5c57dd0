/*
 * test_regress_config.c — the `analysis` section of the hub's config
 * (hub_regress_config_load, hub/regress.c): defaults, the candidate bound
 * regress_max_candidates, and errors naming an out-of-range key.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "hub/regress.h"

/* write text to a temporary file and load it; the file is removed */
static int load(const char *text, hub_regress_config *c, wt_err *e)
{
	char path[] = "/tmp/wt-regress-cfg-XXXXXX";
	int fd = mkstemp(path), rc;
	FILE *f;

	assert_true(fd >= 0);
	f = fdopen(fd, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
	rc = hub_regress_config_load(path, c, e);
	unlink(path);
	return rc;
}

static void test_defaults(void **state)
{
	hub_regress_config c;
	wt_err e = {0, ""};

	(void)state;
	assert_int_equal(load("", &c, &e), 0);
	assert_int_equal(c.interval_s, 60);
	assert_int_equal(c.recent_s, 900);
	assert_int_equal(c.max_candidates, 10000);
	assert_true(c.min_effect == 0.02);
}

static void test_max_candidates(void **state)
{
	hub_regress_config c;
	wt_err e = {0, ""};

	(void)state;
	assert_int_equal(load("analysis = { regress_max_candidates = 50; min_effect = 0.05; };", &c, &e), 0);
	assert_int_equal(c.max_candidates, 50);
	assert_true(c.min_effect == 0.05);
	assert_int_not_equal(load("analysis = { regress_max_candidates = 0; };", &c, &e), 0);
	assert_non_null(strstr(e.msg, "analysis.regress_max_candidates"));
	assert_int_not_equal(load("analysis = { regress_max_candidates = 2000000; };", &c, &e), 0);
	assert_non_null(strstr(e.msg, "analysis.regress_max_candidates"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_defaults),
		cmocka_unit_test(test_max_candidates),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
