/*
 * clock.h — the one clock helper: nanoseconds (or milliseconds) of a POSIX
 * clock as a signed 64-bit count. CLOCK_MONOTONIC for intervals and
 * deadlines, CLOCK_REALTIME for sample and upload times; wt_deadline,
 * a timespec that far ahead for condition-variable waits; and wt_sleep_ns /
 * wt_sleep_ms, a whole sleep that resumes after a signal interrupts it.
 */
#ifndef WT_CLOCK_H
#define WT_CLOCK_H

#include <errno.h>
#include <stdint.h>
#include <time.h>

static inline int64_t wt_now_ns(clockid_t clock)
{
	struct timespec ts;
	clock_gettime(clock, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static inline int64_t wt_now_ms(clockid_t clock)
{
	return wt_now_ns(clock) / 1000000LL;
}

/* The absolute time ms milliseconds from now on clock, for
 * pthread_cond_timedwait (whose condition variable must use that clock). */
static inline struct timespec wt_deadline(clockid_t clock, int64_t ms)
{
	int64_t ns = wt_now_ns(clock) + ms * 1000000LL;
	struct timespec ts = {(time_t)(ns / 1000000000LL), (long)(ns % 1000000000LL)};

	return ts;
}

/* Sleep ns nanoseconds (<= 0: not at all), the rest again after a signal. */
static inline void wt_sleep_ns(int64_t ns)
{
	struct timespec ts;

	if (ns <= 0)
		return;
	ts.tv_sec = (time_t)(ns / 1000000000LL);
	ts.tv_nsec = (long)(ns % 1000000000LL);
	while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
		;
}

static inline void wt_sleep_ms(int64_t ms)
{
	wt_sleep_ns(ms * 1000000LL);
}

#endif
