/*
 * ch_rows.h — turn a decoded wt_profile into the hub's ClickHouse rows
 * (profile_samples_v1, profile_stacks_v1, function_rollup_v1) and insert
 * them in RowBinary batches. Used by the direct upload endpoint (and later
 * by replication from edges).
 */
#ifndef HUB_INGEST_H
#define HUB_INGEST_H

#include <stddef.h>
#include <stdint.h>

#include "ch_client.h"
#include "daysink.h"
#include "params.h"
#include "profile.h"
#include "stackcache.h"

typedef struct hub_ch_rows_req {
	const char *project;
	const char *service;
	const char *upload_id;
	int retention_days;
	const hub_label_param *labels; /* added to every sample (override) */
	size_t nlabels;
	size_t batch_rows;             /* rows per INSERT */
	hub_stackcache *stacks;
	long cache_generation;
	/* Replication (repl_apply.c): with a sink, sample rows are appended to
	 * the sink's per-day buffers instead of being inserted (the caller
	 * inserts them in bounded blocks), the first skip[i].rows rows of day
	 * skip[i].day are left out (already stored by an interrupted apply: the
	 * rows of a day come in the same order every time), and no rollup is
	 * computed (repl_apply.c inserts the rollup in its own pieces). The
	 * sink's on_block, when set, is called as each block of a day ends.
	 * Stacks are still inserted directly: profile_stacks_v1 is a
	 * ReplacingMergeTree, so repeating them is harmless. */
	hub_daysink *sink;
	const hub_day_count *skip;
	size_t nskip;
} hub_ch_rows_req;

typedef struct hub_ch_rows_stats {
	size_t sample_rows, stack_rows, rollup_rows;
	int64_t insert_ns;
} hub_ch_rows_stats;

/* Sample times must already be placed (time_ns set on the profile or its
 * samples). Inserts stacks first, then samples, then rollups. On error
 * some tables may already hold rows (18.16 has no multi-table
 * transactions); the error is returned (WT_EUNAVAIL / WT_EIO / WT_ENOMEM). */
int hub_ch_rows_profile(hub_ch *ch, const hub_ch_rows_req *rq, const wt_profile *p,
		       int64_t fallback_ns, hub_ch_rows_stats *st, wt_err *err);

/* Column list of profile_samples_v1 inserts (the row layout written by
 * hub_ch_rows_profile into a sink). */
extern const char hub_samples_insert_sql[];

/* The project's retention_days (a default when unset); WT_ENOTFOUND when
 * the project does not exist (http_ingest.c). */
int hub_project_retention(hub_ch *ch, const char *project, int *days, wt_err *err);

/* Days since 1970-01-01 of unix ns (for Date columns). Pure. */
uint16_t hub_date_of_ns(int64_t ns);

#endif
