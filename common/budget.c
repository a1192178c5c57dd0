/*
 * budget.c — the shared byte budget of budget.h: one atomic counter and a
 * compare-and-swap loop, so a reservation either fits entirely or fails.
 */
#include "budget.h"

void wt_budget_init(wt_budget *b, uint64_t max)
{
	atomic_store(&b->used, 0);
	atomic_store(&b->refused, 0);
	b->max = max;
}

int wt_budget_take(wt_budget *b, uint64_t n)
{
	uint64_t cur = atomic_load(&b->used);

	do {
		if (b->max && (n > b->max || cur > b->max - n)) {
			atomic_fetch_add(&b->refused, 1);
			return -1;
		}
	} while (!atomic_compare_exchange_weak(&b->used, &cur, cur + n));
	return 0;
}

void wt_budget_give(wt_budget *b, uint64_t n)
{
	if (n)
		atomic_fetch_sub(&b->used, n);
}
