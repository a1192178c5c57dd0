/*
 * test_rng.c — common/rng.c: getrandom bytes fill the whole buffer, the
 * per-thread generator stays in range, spreads evenly enough for jitter,
 * and two threads do not draw the same sequence.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <pthread.h>
#include <cmocka.h>

#include "rng.h"

static void bytes_filled(void **state)
{
	uint8_t a[4096], b[4096];
	size_t i, zeros = 0;

	memset(a, 0, sizeof(a));
	memset(b, 0, sizeof(b));
	assert_int_equal(wt_random_bytes(a, sizeof(a)), 0);
	assert_int_equal(wt_random_bytes(b, sizeof(b)), 0);
	assert_memory_not_equal(a, b, sizeof(a));
	for (i = 0; i < sizeof(a); i++)
		zeros += !a[i];
	assert_true(zeros < 64); /* ~16 expected of 4096 */
	assert_int_equal(wt_random_bytes(a, 0), 0);
}

static void below_in_range_and_even(void **state)
{
	unsigned hist[10] = {0};
	int i;

	assert_int_equal(wt_rng_below(0), 0);
	assert_int_equal(wt_rng_below(1), 0);
	for (i = 0; i < 100000; i++) {
		uint64_t v = wt_rng_below(10);
		assert_true(v < 10);
		hist[v]++;
	}
	for (i = 0; i < 10; i++) /* 10000 ± 5 sigma (~95) */
		assert_true(hist[i] > 9500 && hist[i] < 10500);
}

static void *draw(void *arg)
{
	uint64_t *out = arg;
	int i;

	for (i = 0; i < 16; i++)
		out[i] = wt_rng_u64();
	return NULL;
}

static void threads_differ(void **state)
{
	uint64_t a[16], b[16];
	pthread_t t1, t2;

	assert_int_equal(pthread_create(&t1, NULL, draw, a), 0);
	assert_int_equal(pthread_create(&t2, NULL, draw, b), 0);
	pthread_join(t1, NULL);
	pthread_join(t2, NULL);
	assert_memory_not_equal(a, b, sizeof(a));
	assert_true(a[0] != a[1]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(bytes_filled),
		cmocka_unit_test(below_in_range_and_even),
		cmocka_unit_test(threads_differ),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
