/*
 * test_clock.c — common/clock.h: wt_now_ns/wt_now_ms agree with
 * clock_gettime on the clock asked for, the monotonic clock never goes
 * back, wt_deadline lies that far ahead with a normalised timespec, and
 * wt_sleep_ns sleeps the whole time even when a signal interrupts it.
 */
#include <setjmp.h>
#include <signal.h>
#include <string.h>
#include <sys/time.h>
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

static volatile sig_atomic_t alarms;

static void on_alarm(int sig)
{
	(void)sig;
	alarms++;
}

static void sleep_whole(void **state)
{
	struct sigaction sa, old;
	struct itimerval it = {{0, 0}, {0, 20000}}; /* one SIGALRM after 20 ms */
	int64_t t0;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_alarm; /* no SA_RESTART: nanosleep returns EINTR */
	assert_int_equal(sigaction(SIGALRM, &sa, &old), 0);
	t0 = ref_ns(CLOCK_MONOTONIC);
	assert_int_equal(setitimer(ITIMER_REAL, &it, NULL), 0);
	wt_sleep_ms(120);
	assert_int_equal(alarms, 1);
	assert_true(ref_ns(CLOCK_MONOTONIC) - t0 >= 120000000LL);
	sigaction(SIGALRM, &old, NULL);
	t0 = ref_ns(CLOCK_MONOTONIC);
	wt_sleep_ns(0);
	wt_sleep_ns(-5);
	assert_true(ref_ns(CLOCK_MONOTONIC) - t0 < 100000000LL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(realtime_matches),
		cmocka_unit_test(monotonic_matches),
		cmocka_unit_test(deadline),
		cmocka_unit_test(sleep_whole),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
