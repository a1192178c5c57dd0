/*
 * regress.h — regression detection over the function rollup (docs/operations.md
 * "## Regression detection").
 *
 * Every regress_interval_s a worker thread compares, for each (project,
 * service, sample type, function), the function's share of the total self
 * value in the recent window [end − recent, end) with its share in the
 * baseline window [end − recent − baseline, end − recent), where end is
 * the run time rounded down to a multiple of regress_interval_s. An issue
 * is opened when the share grew by at least min_effect (absolute share,
 * e.g. 0.02 = 2 percentage points) and the one-sided two-proportion z-test
 * on sample counts rejects "no increase" at level alpha (z ≥ z₁₋α);
 * updated while that holds; resolved when its (project, service, type) has
 * recent data and the test no longer fires. Counts: values of count units
 * are counts; weighted types are divided by their mean value per sample
 * from the paired count type in the same window (cpu ÷ samples …), else
 * nanoseconds by period_ns, else used as weights. The companion type
 * `samples` raises no issues of its own; rollup marker rows
 * (sample_type '_repl_marker') are never read. Function names go through
 * hub_symbols_function() first, so the per-address rows of a stripped
 * native function count as that function once its debug file is there.
 *
 * Idempotent: issues_v1 is a ReplacingMergeTree keyed by issue id with the
 * window end as version; a new issue's id is a hash of (project, service,
 * type, function, window end). Two hubs (or a restarted one) evaluating
 * the same window compute the same rows, so repeating a run changes
 * nothing. Users' acknowledge/mute go to issue_states_v1 (their own
 * ReplacingMergeTree), so a worker run never overwrites them.
 *
 * Config (libconfig, section `analysis`, docs/operations.md "## Regression
 * detection"): regress_interval_s (60; 0 = no worker thread, runs only on
 * POST /v1/admin/analysis/run), recent_window_s (900), baseline_window_s
 * (86400), min_effect (0.02), alpha (0.001), period_ns (10000000),
 * regress_max_candidates (10000: ClickHouse picks the functions a run
 * reads, those whose share grew by min_effect or that have an open issue,
 * at most this many plain names and as many native-frame rows; see
 * regress.c "candidates").
 */
#ifndef HUB_REGRESS_H
#define HUB_REGRESS_H

#include <stdint.h>

#include "ch_client.h"
#include "err.h"

struct hub_ctx;

typedef struct hub_regress_config {
	int interval_s;
	int recent_s;
	int baseline_s;
	double min_effect;
	double alpha;
	int64_t period_ns;
	int max_candidates; /* function rows read per run and kind (plain, native) */
} hub_regress_config;

typedef struct hub_regress_result {
	int64_t window_end_ns, recent_from_ns, baseline_from_ns;
	long groups, functions, opened, updated, resolved;
	long symbolized; /* rollup rows whose frame the symbolizer named */
} hub_regress_result;

typedef struct hub_regress hub_regress;

/* Read the `analysis` section of the config file at path (defaults when
 * absent). Errors (WT_EINVAL) name the key. */
int hub_regress_config_load(const char *path, hub_regress_config *c, wt_err *err);

/* Create the detector and, when c->interval_s > 0, start its thread (its
 * own ClickHouse client; it skips runs while the store is not ready).
 * *out is owned by the caller (hub_regress_stop). */
int hub_regress_start(struct hub_ctx *ctx, const hub_regress_config *c, hub_regress **out, wt_err *err);
void hub_regress_stop(hub_regress *g);

/* One run evaluated at at_ns (rounded down to the interval; a run with
 * interval 0 uses 60 s steps), for one project or all (project NULL).
 * Runs of one process are serialised. 0 or the ClickHouse error. */
int hub_regress_run(hub_regress *g, hub_ch *ch, int64_t at_ns, const char *project,
		    hub_regress_result *res, wt_err *err);

/* Issue id: 32 hex chars of xxh3-128 over project, service, type,
 * function and the window end. Pure. */
void hub_issue_id(const char *project, const char *service, const char *type, const char *function,
		  int64_t window_end_ns, char out[33]);

#endif
