/*
 * budget.h — a byte budget shared by threads: request bodies (and what is
 * decoded from them) reserve bytes before they are kept and give them back
 * when freed, so that the sum held by all requests of a daemon stays under
 * one configured bound (the edge's limits.max_inflight_mb). Lock-free; any
 * thread may take or give.
 */
#ifndef WT_BUDGET_H
#define WT_BUDGET_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

typedef struct wt_budget {
	_Atomic uint64_t used;    /* bytes reserved now */
	_Atomic uint64_t refused; /* reservations refused (a counter for /metrics) */
	uint64_t max;             /* 0 = unlimited */
} wt_budget;

/* Set the bound; call before any thread uses b. */
void wt_budget_init(wt_budget *b, uint64_t max);
/* Reserve n bytes: 0, or -1 (and refused++) when used + n would exceed max.
 * O(1); never blocks. */
int wt_budget_take(wt_budget *b, uint64_t n);
/* Give back n bytes taken earlier (n may be 0). */
void wt_budget_give(wt_budget *b, uint64_t n);

#endif
