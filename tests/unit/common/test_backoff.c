/*
 * test_backoff.c — common/backoff.c: plain doubling with and without a cap,
 * jitter staying within [initial, min(max, initial * 2^attempt)] and
 * reaching both ends, and no overflow for large attempts or no cap.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "backoff.h"

static void doubling(void **state)
{
	wt_backoff b = {500, 0, 0};

	assert_int_equal(wt_backoff_ms(&b, 0), 500);
	assert_int_equal(wt_backoff_ms(&b, 1), 1000);
	assert_int_equal(wt_backoff_ms(&b, 2), 2000);
	assert_int_equal(wt_backoff_ms(&b, 10), 512000);
	/* uncapped and huge attempts saturate instead of overflowing */
	assert_true(wt_backoff_ms(&b, 62) > 0);
	assert_true(wt_backoff_ms(&b, 1000) == INT64_MAX);
}

static void capped(void **state)
{
	wt_backoff b = {200, 30000, 0};

	assert_int_equal(wt_backoff_ms(&b, 0), 200);
	assert_int_equal(wt_backoff_ms(&b, 7), 25600);
	assert_int_equal(wt_backoff_ms(&b, 8), 30000);
	assert_int_equal(wt_backoff_ms(&b, 40), 30000);
	assert_int_equal(wt_backoff_ms(&b, 4000000000u), 30000);
	/* a cap below the start: the cap */
	b.initial_ms = 50000;
	assert_int_equal(wt_backoff_ms(&b, 0), 30000);
}

static void jittered(void **state)
{
	wt_backoff b = {500, 30000, 1};
	int64_t min = INT64_MAX, max = 0;
	unsigned a;
	int i;

	for (a = 0; a < 70; a++) {
		int64_t ceil = a < 6 ? 500LL << a : 30000;
		for (i = 0; i < 200; i++) {
			int64_t v = wt_backoff_ms(&b, a);
			assert_true(v >= 500 && v <= ceil);
		}
	}
	assert_int_equal(wt_backoff_ms(&b, 0), 500); /* [500, 500] */
	for (i = 0; i < 20000; i++) {
		int64_t v = wt_backoff_ms(&b, 2); /* [500, 2000] */
		if (v < min)
			min = v;
		if (v > max)
			max = v;
	}
	assert_true(min < 520 && max > 1980);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(doubling),
		cmocka_unit_test(capped),
		cmocka_unit_test(jittered),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
