/*
 * rng.c — getrandom(2) bytes and the per-thread xorshift64* generator (see
 * rng.h). The generator's state is thread-local and seeded lazily from
 * getrandom (falling back to the clock and the state's address should the
 * call fail), so two threads or two processes never share a sequence.
 */
#include "rng.h"
#include "clock.h"
#include "err.h"

#include <errno.h>
#include <sys/random.h>

int wt_random_bytes(void *buf, size_t n)
{
	uint8_t *p = buf;
	int rc = 0;

	while (n) {
		ssize_t got = getrandom(p, n, 0);
		if (got < 0) {
			if (errno == EINTR)
				continue;
			rc = WT_EIO;
			break;
		}
		p += got;
		n -= (size_t)got;
	}
	return rc;
}

static _Thread_local uint64_t rng_state;

uint64_t wt_rng_u64(void)
{
	uint64_t x = rng_state;

	if (!x) {
		if (wt_random_bytes(&x, sizeof(x)))
			x = (uint64_t)wt_now_ns(CLOCK_MONOTONIC) ^ ((uint64_t)(uintptr_t)&rng_state << 16) ^
			    0x9E3779B97F4A7C15ULL;
		if (!x)
			x = 1;
	}
	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	rng_state = x;
	return x * 0x2545F4914F6CDD1DULL;
}

uint64_t wt_rng_below(uint64_t n)
{
	return n ? wt_rng_u64() % n : 0;
}
