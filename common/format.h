/*
 * format.h — ingest format names, content detection, and the single entry
 * point that turns an uploaded body (raw or gzip) into a wt_profile.
 * Daemons and wtctl call wt_format_decode(); they never call a parser
 * directly, so every format gets the same limits and error shape.
 */
#ifndef WT_FORMAT_H
#define WT_FORMAT_H

#include <stddef.h>
#include <stdint.h>

#include "err.h"
#include "profile.h"

typedef enum wt_format {
	WT_FMT_AUTO = 0,
	WT_FMT_PPROF,
	WT_FMT_FOLDED,
	WT_FMT_PERF,       /* perf script text */
	WT_FMT_JFR,
	WT_FMT_OTLP,
	WT_FMT_CPUPROFILE, /* V8 / Node .cpuprofile JSON */
	WT_FMT_SPEEDSCOPE,
} wt_format;

/* "pprof", "folded", ... (also "lines" → folded, "collapsed" → folded).
 * Returns 0 or WT_EFORMAT. */
int wt_format_parse(const char *name, wt_format *out);
const char *wt_format_name(wt_format f);

/* Guess the format of an (already decompressed) body; WT_FMT_AUTO if unknown. */
wt_format wt_format_detect(const uint8_t *buf, size_t len);

typedef struct wt_decode_opts {
	wt_limits lim;        /* initialise with wt_decode_opts_default() */
	const char *hint;     /* profile kind: "cpu", "block", "alloc"... or NULL */
	const char *type;     /* folded: sample type name (default "cpu") */
	const char *unit;     /* folded: unit (default "samples") */
	int64_t sample_rate;  /* folded: Hz, 0 = unknown */
	int64_t time_ns;      /* time to place samples at when the format has no
			       * wall clock (0 = leave unknown) */
} wt_decode_opts;

void wt_decode_opts_default(wt_decode_opts *o);

/* Decode body of len bytes (gzip detected by magic and inflated within
 * opts->lim.max_decompressed) in format fmt (WT_FMT_AUTO = detect).
 * Errors: WT_ELIMIT (too big), WT_EFORMAT (unknown or not yet supported
 * format), WT_EINVAL (malformed; message names format and position).
 * On success *out is a new profile owned by the caller and *detected (if
 * non-NULL) the format actually parsed. */
int wt_format_decode(const uint8_t *body, size_t len, wt_format fmt,
		     const wt_decode_opts *opts, wt_profile **out,
		     wt_format *detected, wt_err *err);

#endif
