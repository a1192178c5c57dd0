/*
 * rollup.h — per-minute function rollups: for each (sample type, minute,
 * function name) the self value (samples whose leaf is the function) and the
 * total value (samples whose stack contains the function — counted ONCE per
 * stack even when the function recurses).
 *
 * The edge stores rollups (merged on write) and replicates them; the hub's
 * regression detection reads them. The service and project are the caller's
 * key prefix, not part of a row.
 *
 * Ownership: wt_rollup_build fills *out, which owns its rows and strings;
 * release with wt_rollup_free().
 */
#ifndef WT_ROLLUP_H
#define WT_ROLLUP_H

#include <stddef.h>
#include <stdint.h>

#include "err.h"
#include "profile.h"

typedef struct wt_rollup_row {
	const char *type;     /* canonical sample type name */
	const char *unit;
	const char *function; /* frame name as wt_profile_frame_name gives it */
	int64_t minute;       /* unix time / 60 */
	int64_t self;
	int64_t total;
} wt_rollup_row;

typedef struct wt_rollup {
	wt_rollup_row *rows; /* sorted by (type, minute, function) */
	size_t n;
	void *priv;
} wt_rollup;

/* Samples with time_ns == 0 are placed at p->time_ns, or at fallback_ns when
 * the profile has no time either. */
int wt_rollup_build(const wt_profile *p, int64_t fallback_ns, wt_rollup *out, wt_err *err);
void wt_rollup_free(wt_rollup *r);

#endif
