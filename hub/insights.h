/*
 * insights.h — CPU usage insights from on-CPU time per 100 ms bucket of one
 * (service, host), as a pure function (unit-tested in
 * tests/unit/hub/test_insights.c; served by http_insights.c).
 *
 * Usage of a bucket = CPU nanoseconds in it / bucket width (1.0 = one
 * core). A "window" is `window` consecutive buckets (1 s by default).
 *  - cpu_burst:      every bucket covered by a window whose mean usage is
 *                    above burst_usage (0.75) is marked; a maximal run of
 *                    marked buckets, with idle (zero) buckets trimmed from
 *                    both ends, lasting at least burst_min_ns (10 s).
 *  - cpu_saturation: the same with mean usage ≥ sat_usage (1.0, a full
 *                    core) and sat_min_ns (1 s).
 *  - starvation:     a run of buckets with no samples at all, at least
 *                    starve_min_ns (100 ms) and at most starve_max_ns (2 s)
 *                    long (longer gaps are idle periods, not starvation),
 *                    with a busy bucket (usage ≥ busy_usage, 0.5) right
 *                    before and right after it.
 * Windows smooth the sampling jitter: at 99 Hz a fully busy thread gets 9
 * or 10 samples per 100 ms, but ~99 (= 1.0 s) per second.
 */
#ifndef HUB_INSIGHTS_H
#define HUB_INSIGHTS_H

#include <stddef.h>
#include <stdint.h>

typedef struct hub_insight_opts {
	int64_t bucket_ns;        /* 100 ms */
	int window;               /* buckets per window: 10 */
	double burst_usage;       /* 0.75 */
	int64_t burst_min_ns;     /* 10 s */
	double sat_usage;         /* 1.0 */
	int64_t sat_min_ns;       /* 1 s */
	double busy_usage;        /* 0.5 */
	int64_t starve_min_ns;    /* 100 ms */
	int64_t starve_max_ns;    /* 2 s */
} hub_insight_opts;

void hub_insight_opts_default(hub_insight_opts *o);

enum { HUB_INSIGHT_BURST, HUB_INSIGHT_SATURATION, HUB_INSIGHT_STARVATION };

typedef struct hub_insight_card {
	int kind;                 /* HUB_INSIGHT_* */
	int64_t from_ns, until_ns;
	double value;             /* burst/saturation: mean usage over the card; starvation: gap seconds */
	double peak;              /* burst/saturation: highest window mean inside; starvation: 0 */
} hub_insight_card;

const char *hub_insight_kind_name(int kind);

/* Find the cards of one series: cpu[i] = CPU ns in bucket (b0 + i), i < n,
 * where bucket k spans [k·bucket_ns, (k+1)·bucket_ns). Appends to *cards
 * (realloc'd; the caller frees) and *ncards. 0 or WT_ENOMEM. Cards come in
 * the order burst, saturation, starvation, each by time. O(n). */
int hub_insights_find(const int64_t *cpu, size_t n, int64_t b0, const hub_insight_opts *o,
		      hub_insight_card **cards, size_t *ncards);

#endif
