/*
 * backoff.c — exponential retry delays with a cap and optional jitter (see
 * backoff.h).
 */
#include "backoff.h"
#include "rng.h"

int64_t wt_backoff_ms(const wt_backoff *b, unsigned attempt)
{
	int64_t lo = b->initial_ms, hi = b->max_ms > 0 ? b->max_ms : INT64_MAX, ceil = hi;

	if (lo > hi)
		lo = hi;
	if (attempt < 63 && lo <= (hi >> attempt))
		ceil = lo << attempt;
	if (!b->jitter)
		return ceil;
	return lo + (int64_t)wt_rng_below((uint64_t)(ceil - lo) + 1);
}
