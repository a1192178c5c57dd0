/*
 * test_http_server.c — time parameter parsing of common/http_server.c
 * (unix seconds, fractions, RFC 3339 with offsets; rejects).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "http_server.h"

static void parse_time(void **state)
{
	int64_t ns;
	assert_int_equal(wt_http_parse_time("1733155200", &ns), 0);
	assert_true(ns == 1733155200LL * 1000000000LL);
	assert_int_equal(wt_http_parse_time("1733155200.25", &ns), 0);
	assert_true(ns == 1733155200LL * 1000000000LL + 250000000LL);
	/* date -u -d 2026-12-02T16:00:00Z +%s → 1796227200 */
	assert_int_equal(wt_http_parse_time("2026-12-02T16:00:00Z", &ns), 0);
	assert_true(ns == 1796227200LL * 1000000000LL);
	assert_int_equal(wt_http_parse_time("2026-12-02T17:30:00.5+01:30", &ns), 0);
	assert_true(ns == 1796227200LL * 1000000000LL + 500000000LL);
	assert_int_equal(wt_http_parse_time("1970-01-01T00:00:00Z", &ns), 0);
	assert_true(ns == 0);
	assert_int_equal(wt_http_parse_time("yesterday", &ns), WT_EINVAL);
	assert_int_equal(wt_http_parse_time("", &ns), WT_EINVAL);
	assert_int_equal(wt_http_parse_time("12x", &ns), WT_EINVAL);
	assert_int_equal(wt_http_parse_time("2026-13-02T16:00:00Z", &ns), WT_EINVAL);
	assert_int_equal(wt_http_parse_time("2026-12-02T16:00:00", &ns), WT_EINVAL);
	assert_int_equal(wt_http_parse_time("99999999999999999999", &ns), WT_EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {cmocka_unit_test(parse_time)};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
