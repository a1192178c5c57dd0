/*
 * folded.h — collapsed ("folded") stack text: `frame;frame;frame COUNT` per
 * line, ROOT FIRST (Brendan Gregg stackcollapse). Dialects accepted by the
 * decoder: async-profiler collapsed, py-spy raw, rbspy collapsed, dotnet-trace
 * converted folded, FlameGraph annotations (_[k] _[j] ...) kept as written.
 * CRLF, blank lines and trailing spaces are tolerated; a count that is not a
 * non-negative integer is WT_EINVAL naming the line number.
 *
 * Ownership: *out is a new profile owned by the caller.
 */
#ifndef WT_FOLDED_H
#define WT_FOLDED_H

#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "err.h"
#include "profile.h"

typedef struct wt_folded_opts {
	const wt_limits *lim; /* NULL = defaults */
	const char *type;     /* sample type name, default "cpu" */
	const char *unit;     /* default "samples"; with sample_rate > 0 and
			       * unit "nanoseconds", counts are scaled by 1e9/rate */
	int64_t sample_rate;  /* Hz, 0 = unknown */
	int64_t time_ns;      /* profile start (unix ns), 0 = unknown */
} wt_folded_opts;

int wt_folded_decode(const uint8_t *buf, size_t len, const wt_folded_opts *opts,
		     wt_profile **out, wt_err *err);

/* Write sample type `type_idx` of p as folded text, root first, one line per
 * distinct stack (labels and times merged), appended to *out. */
int wt_folded_encode(const wt_profile *p, size_t type_idx, wt_buf *out, wt_err *err);

#endif
