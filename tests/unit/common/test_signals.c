/*
 * test_signals.c — common/signals.c: blocked signals sent to the process
 * (from this and from another thread) are read from the signalfd in
 * order, not delivered to a handler; a wait with a timeout returns 0 when
 * nothing came; SIGPIPE is ignored.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <pthread.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "clock.h"
#include "signals.h"

static wt_signals sigs = {-1};

static int setup(void **state)
{
	static const int handled[] = {SIGTERM, SIGINT, SIGHUP};
	wt_err err = {0, ""};

	return wt_signals_open(&sigs, handled, 3, &err);
}

static int teardown(void **state)
{
	wt_signals_close(&sigs);
	return 0;
}

static void *late_hup(void *arg)
{
	struct timespec ts = {0, 50 * 1000000L};

	nanosleep(&ts, NULL);
	kill(getpid(), SIGHUP); /* this thread inherited the blocked mask */
	return NULL;
}

static void read_in_order(void **state)
{
	struct sigaction sa;

	assert_true(sigs.fd >= 0);
	assert_int_equal(wt_signals_wait(&sigs, 0), 0);
	kill(getpid(), SIGHUP);
	assert_int_equal(wt_signals_wait(&sigs, 0), SIGHUP);
	kill(getpid(), SIGTERM);
	kill(getpid(), SIGINT);
	/* pending standard signals come lowest number first */
	assert_int_equal(wt_signals_wait(&sigs, 1000), SIGINT);
	assert_int_equal(wt_signals_wait(&sigs, 1000), SIGTERM);
	assert_int_equal(wt_signals_wait(&sigs, 0), 0);
	assert_int_equal(sigaction(SIGPIPE, NULL, &sa), 0);
	assert_true(sa.sa_handler == SIG_IGN);
	raise(SIGPIPE); /* ignored: the test goes on */
}

static void waits(void **state)
{
	pthread_t t;
	int64_t t0 = wt_now_ms(CLOCK_MONOTONIC);

	assert_int_equal(wt_signals_wait(&sigs, 30), 0);
	assert_true(wt_now_ms(CLOCK_MONOTONIC) - t0 >= 25);
	assert_int_equal(pthread_create(&t, NULL, late_hup, NULL), 0);
	assert_int_equal(wt_signals_wait(&sigs, -1), SIGHUP);
	pthread_join(t, NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(read_in_order),
		cmocka_unit_test(waits),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
