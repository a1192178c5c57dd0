/*
 * test_clock.c — common/clock.h: wt_now_ns/wt_now_ms agree with
 * clock_gettime on the clock asked for, the monotonic clock never goes
 * back, and wt_deadline lies that far ahead with a normalised timespec.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>
#include <cmocka.h>

#include "clock.h"

static int64_t ref_ns(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void realtime_matches(void **state)
{
	int64_t a = ref_ns(CLOCK_REALTIME), n = wt_now_ns(CLOCK_REALTIME), b = ref_ns(CLOCK_REALTIME);

	assert_true(a <= n && n <= b);
	/* a plausible wall clock: after 2020-01-01 */
	assert_true(n > 1577836800LL * 1000000000LL);
	assert_true(wt_now_ms(CLOCK_REALTIME) / 1000 - n / 1000000000LL <= 1);
}

static void monotonic_matches(void **state)
{
	int64_t prev = wt_now_ns(CLOCK_MONOTONIC);
	int i;

	for (i = 0; i < 1000; i++) {
		int64_t a = ref_ns(CLOCK_MONOTONIC), n = wt_now_ns(CLOCK_MONOTONIC), b = ref_ns(CLOCK_MONOTONIC);
		assert_true(a <= n && n <= b && n >= prev);
		prev = n;
	}
	{
		int64_t ms0 = ref_ns(CLOCK_MONOTONIC) / 1000000, ms = wt_now_ms(CLOCK_MONOTONIC),
			ms1 = ref_ns(CLOCK_MONOTONIC) / 1000000;
		assert_true(ms0 <= ms && ms <= ms1);
	}
}

static void deadline(void **state)
{
	int64_t before = ref_ns(CLOCK_MONOTONIC);
	struct timespec d = wt_deadline(CLOCK_MONOTONIC, 1500);
	int64_t at = (int64_t)d.tv_sec * 1000000000LL + d.tv_nsec, after = ref_ns(CLOCK_MONOTONIC);

	assert_true(d.tv_nsec >= 0 && d.tv_nsec < 1000000000L);
	assert_true(at >= before + 1500000000LL && at <= after + 1500000000LL);
	d = wt_deadline(CLOCK_REALTIME, 0);
	assert_true(d.tv_nsec >= 0 && d.tv_nsec < 1000000000L);
	assert_true((int64_t)d.tv_sec * 1000000000LL + d.tv_nsec <= ref_ns(CLOCK_REALTIME));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(realtime_matches),
		cmocka_unit_test(monotonic_matches),
		cmocka_unit_test(deadline),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
