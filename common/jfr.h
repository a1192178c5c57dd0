/*
 * jfr.h — JDK Flight Recorder (.jfr) recordings → wt_profile.
 *
 * Reads the native chunk format written by the JDK's flight recorder
 * (format 1.x/2.x, JDK 8u272+ … 21+) and by async-profiler / the Datadog
 * profiler: chunk headers, the metadata event (type descriptions), the
 * constant pools (checkpoint events) and the events, and maps profiling
 * events onto Watchtower sample types (table in docs/formats.md "JFR").
 * The input must be raw (wt_format_decode inflates gzip first).
 *
 * Bounded: every count and length read from the file is checked against
 * the bytes that remain before anything is allocated for it; malformed
 * input is WT_EINVAL "jfr: chunk N at byte B: what"; model limits are
 * WT_ELIMIT. Ownership: *out is a new profile owned by the caller.
 */
#ifndef WT_JFR_H
#define WT_JFR_H

#include <stddef.h>
#include <stdint.h>

#include "err.h"
#include "profile.h"

/* Per-recording figures, for tests and diagnostics. */
typedef struct wt_jfr_count {
	char *name; /* event type name, e.g. "jdk.ExecutionSample" */
	uint64_t count;
} wt_jfr_count;

typedef struct wt_jfr_stats {
	uint32_t chunks;
	uint64_t events;      /* all events except metadata and checkpoints */
	uint64_t used;        /* events that became samples */
	uint64_t skipped;     /* events of types we do not map (not errors) */
	uint64_t metadata;    /* metadata events (type id 0) */
	uint64_t checkpoints; /* constant-pool events (type id 1) */
	wt_jfr_count *types;  /* events per type name, sorted by name */
	size_t ntypes;
} wt_jfr_stats;

/* Decode a raw JFR recording of len bytes. hint: uploader's profile kind
 * (passed to the sample type table; may be NULL). */
int wt_jfr_decode(const uint8_t *buf, size_t len, const wt_limits *lim, const char *hint,
		  wt_profile **out, wt_err *err);

/* As wt_jfr_decode, and fills *st (may be NULL); on success the caller
 * frees it with wt_jfr_stats_free(). On error *st holds nothing. */
int wt_jfr_decode_stats(const uint8_t *buf, size_t len, const wt_limits *lim, const char *hint,
			wt_profile **out, wt_jfr_stats *st, wt_err *err);
void wt_jfr_stats_free(wt_jfr_stats *st);

#endif
