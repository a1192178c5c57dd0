/*
 * stackagg.h — the per-resolution stack aggregates (stack_agg_v1, interned
 * label sets in label_sets_v1) that let the query endpoints answer in time
 * proportional to the unique stacks of a selection rather than its samples.
 *
 * Layout (docs/operations.md "## Stack aggregates"):
 *  - stack_agg_v1: SummingMergeTree of value per (project, service,
 *    sample_type, res, labelset_id, bucket, stack_id, unit,
 *    retention_days), res = 60 / 3600 / 86400 s, bucket = unix seconds of
 *    the bucket start; labelset_id 0 is the sum over every label set (what
 *    a query without label filters reads).
 *  - series_agg_v1: the same without the stack: SummingMergeTree of value
 *    per (project, service, sample_type, res, labelset_id, bucket, unit,
 *    retention_days), one row per label set (no labelset 0): what the
 *    timeline reads, a few rows per label set and bucket however many
 *    stacks there are.
 *  - label_sets_v1: labelset_id → host, thread, container, labels (the
 *    same columns as profile_samples_v1, so the same filter SQL applies).
 *  - All three are filled by materialized views on profile_samples_v1 (schema.c),
 *    i.e. inside the very INSERT of every raw row written by the shared row
 *    writer (ch_rows.c) — direct uploads and replication apply alike — so the
 *    replication ledger's per-day exactly-once covers them too.
 *  - Existing data (a hub upgraded from a schema without aggregates) is
 *    rebuilt day by day by the "aggregates" worker job; until a day is
 *    rebuilt, queries read it from the raw rows (agg_state_v1
 *    'agg_from_day': aggregates are complete for days >= it).
 * span_id / trace_id are not part of a label set: filters on them use the
 * raw rows.
 */
#ifndef HUB_STACKAGG_H
#define HUB_STACKAGG_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "ch_client.h"
#include "err.h"

struct hub_ctx;

#define HUB_AGG_NRES 3
/* resolutions in seconds, finest first */
extern const int64_t hub_agg_res_s[HUB_AGG_NRES];

/* The label-set id expression over profile_samples_v1 columns. */
#define HUB_AGG_LABELSET_EXPR \
	"cityHash64(host, thread, container, arrayStringConcat(labels.key, '\\0')," \
	" arrayStringConcat(labels.value, '\\0'))"

/* One piece of a query range: res = 0 for raw rows, else the resolution
 * in seconds; [from_ns, until_ns) is a multiple of res for res > 0. */
typedef struct hub_agg_seg {
	int64_t res;
	int64_t from_ns, until_ns;
	int sign; /* +1: add the piece's rows; -1: subtract them (hub_agg_segments_signed) */
} hub_agg_seg;

#define HUB_AGG_MAX_SEGS (2 * HUB_AGG_NRES + 3)

/* Split [from, until) into raw and aggregate pieces, coarsest resolution
 * first in the middle: time before cover_ns (aggregates not complete) and
 * the unaligned edges finer than a minute are raw. step_ns > 0: only
 * resolutions dividing step_ns are used (timeline buckets). Pieces are
 * disjoint, in time order, and cover [from, until) exactly. Returns the
 * number of pieces (<= HUB_AGG_MAX_SEGS). Pure. */
size_t hub_agg_segments(int64_t from_ns, int64_t until_ns, int64_t cover_ns, int64_t step_ns,
			hub_agg_seg *out);

/* Like hub_agg_segments (step 0) but a remainder of a range longer than
 * half a bucket is read as the whole bucket minus the finer pieces of its
 * complement (sign -1): an unaligned range then reads at most half a
 * bucket of finer pieces at each end instead of up to a whole one. Buckets
 * start at or after cover_ns and end at or before max(until_ns,
 * stable_ns) (pass a time before which no more rows arrive, so a live
 * range never reads a bucket still being written beyond its end). The
 * signed sum of the pieces is exactly [from, until). Returns the number of
 * pieces (<= HUB_AGG_MAX_SIGNED). Pure. */
#define HUB_AGG_MAX_SIGNED (1 + 2 + 4 + 8 + 1)
size_t hub_agg_segments_signed(int64_t from_ns, int64_t until_ns, int64_t cover_ns, int64_t stable_ns,
			       hub_agg_seg *out);

/* The aggregating SELECT over profile_samples_v1 rows matching `where`
 * (SQL after WHERE; NULL = all) for the resolutions res_list ("[60, 3600,
 * 86400]"), producing stack_agg_v1's columns in HUB_AGG_COLUMNS order.
 * src is the source table name (qualified in DDL). */
#define HUB_AGG_COLUMNS \
	"date, res, bucket, project, service, sample_type, unit, labelset_id, stack_id, value, retention_days"
int hub_agg_select_sql(wt_buf *b, const char *src, const char *where, const char *res_list);
/* The same for series_agg_v1 (per label set, no stack), in
 * HUB_SERIES_COLUMNS order. */
#define HUB_SERIES_COLUMNS \
	"date, res, bucket, project, service, sample_type, unit, labelset_id, value, retention_days"
int hub_series_select_sql(wt_buf *b, const char *src, const char *where, const char *res_list);
/* The label-set SELECT (label_sets_v1 columns) over src rows matching where. */
#define HUB_LABELSETS_COLUMNS "project, labelset_id, host, thread, container, labels.key, labels.value"
int hub_labelsets_select_sql(wt_buf *b, const char *src, const char *where);

/* Day (days since epoch) from which aggregates are complete; cached for a
 * second. 0 = all days. On error the raw path is safe: returns INT32_MAX. */
int64_t hub_agg_from_day(struct hub_ctx *ctx, hub_ch *ch);

/* Audited deletion (http_delete.c): remove the aggregate rows (stack_agg_v1
 * and series_agg_v1) of every resolution whose bucket starts before before_ns (project, optional
 * service; id tags the mutation like the raw one), then re-aggregate from
 * the raw rows the part of the buckets straddling before_ns that is kept. */
int hub_agg_delete_before(hub_ch *ch, const char *project, const char *service, int64_t before_ns,
			  const char *id, wt_err *err);

/* Worker job "aggregates": rebuild days not yet aggregated (newest first)
 * from the raw rows, lowering agg_from_day after each. */
int hub_agg_backfill_run(struct hub_ctx *ctx, hub_ch *ch, int64_t now_s, json_t *summary, wt_err *err);

#endif
