/*
 * clock.h — the one clock helper: nanoseconds (or milliseconds) of a POSIX
 * clock as a signed 64-bit count. CLOCK_MONOTONIC for intervals and
 * deadlines, CLOCK_REALTIME for sample and upload times.
 */
#ifndef WT_CLOCK_H
#define WT_CLOCK_H

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

#endif
