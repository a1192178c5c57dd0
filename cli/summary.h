/*
 * summary.h — per-function self/total figures of one sample type of a
 * wt_profile, as `go tool pprof -top` shows them: self = value of samples
 * whose leaf frame is the function, total = value of samples whose stack
 * contains the function, counted once per stack (recursion-safe). Functions
 * are keyed by printable frame name (wt_profile_frame_name).
 *
 * Cost O(frames + stack frames); memory proportional to unique frames and
 * stacks, not to samples. Ownership: cli_summary_build fills *s, which owns
 * its rows and names; release with cli_summary_free().
 */
#ifndef WT_CLI_SUMMARY_H
#define WT_CLI_SUMMARY_H

#include <stddef.h>
#include <stdint.h>

#include "err.h"
#include "profile.h"

typedef struct cli_summary_row {
	const char *function;
	int64_t self, total;
} cli_summary_row;

typedef struct cli_summary {
	int64_t total;         /* sum over all samples of the type */
	cli_summary_row *rows; /* every function; sorted by self desc, total desc, name */
	size_t n;
	size_t nstacks_used;   /* distinct stacks with a non-zero value */
	char *names;           /* storage for row names */
} cli_summary;

/* 0, WT_ENOMEM. */
int cli_summary_build(const wt_profile *p, size_t type_idx, cli_summary *s, wt_err *err);
void cli_summary_free(cli_summary *s);

/* Sort rows by total desc (then self desc, name) — for the "by total" view. */
void cli_summary_sort_by_total(cli_summary *s);

/* Type index a command should use: the one named `name` (canonical or the
 * format's own name), else the profile's default type, else the last type
 * (what `go tool pprof` picks). -1 when `name` matches nothing or the
 * profile has no types. */
int cli_summary_pick_type(const wt_profile *p, const char *name);

/* The number of samples as the producing tool counts them: the total of the
 * profile's sample-count type (canonical name "samples": pprof samples/count,
 * perf and cpuprofile record counts); else the count the parser took from
 * the input (wt_profile.source_samples: pprof Sample records, speedscope
 * samples entries, folded counts or Austin lines, JFR execution samples);
 * else the total of the first type whose unit is "samples"; and only when
 * nothing says, the number of distinct sample rows (the summary's "rows"). */
int64_t cli_summary_sample_count(const wt_profile *p);

/* Time range of the profile in unix ns (0 = unknown): start is the
 * profile's start time, else the earliest sample time; end is the later of
 * start + duration and the latest sample time. */
void cli_summary_time_range(const wt_profile *p, int64_t *start, int64_t *end);

#endif
