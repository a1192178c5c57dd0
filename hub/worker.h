/*
 * worker.h — the hub's periodic jobs (retention, archive) and the lease
 * that lets one hub of several run a job at a time.
 *
 * Lease: table worker_leases (ReplacingMergeTree by version, key job). To
 * take a job a hub reads the row (FINAL); if another holder's expiry is in
 * the future it stands back; else it inserts (job, its instance id, now +
 * HUB_LEASE_TTL_S, version = max(old + 1, now_ns)) and re-reads: it won if
 * the row now names it. Race window: two hubs that both read an expired
 * lease and insert before either re-reads both see the higher version and
 * one wins; but a hub that re-reads before the other inserts also thinks
 * it won — both run. That needs two hubs to start the same job within
 * milliseconds of each other and is acceptable because every job is
 * idempotent (partition drops, ALTER … DELETE and object deletes of
 * already-removed data are no-ops). Releasing writes expiry 0 and the run's
 * end time (last_done_ns), which also schedules the next run across hub
 * restarts.
 *
 * Clock: jobs take `now_s` (unix seconds) so tests can move it
 * (`POST /v1/admin/worker/run?job=retention&now=...`, hub admin token).
 */
#ifndef HUB_WORKER_H
#define HUB_WORKER_H

#include <jansson.h>
#include <stdint.h>

#include "ch_client.h"
#include "err.h"

struct hub_ctx;

#define HUB_LEASE_TTL_S 3600
#define HUB_WORKER_CHECK_S 60 /* how often the thread looks for due jobs */

typedef struct hub_worker hub_worker;

/* Start the worker thread (jobs every cfg.worker_interval_s; off when 0).
 * Logs the retention path chosen for the server once ClickHouse is ready. */
int hub_worker_start(struct hub_ctx *ctx, hub_worker **out, wt_err *err);
void hub_worker_stop(hub_worker *w);

/* Run job ("retention" | "archive") now on the caller's thread under the
 * lease. *summary (new reference) says what was done. WT_EUNAVAIL when
 * another hub holds the lease; WT_EINVAL for an unknown job. */
int hub_worker_run_job(struct hub_ctx *ctx, hub_ch *ch, const char *job, int64_t now_s, json_t **summary,
		       wt_err *err);

/* The jobs (retention.c, archive.c). Each adds its figures to summary. */
int hub_retention_run(struct hub_ctx *ctx, hub_ch *ch, int64_t now_s, json_t *summary, wt_err *err);
int hub_archive_run(struct hub_ctx *ctx, hub_ch *ch, int64_t now_s, json_t *summary, wt_err *err);

/* Deletion helpers shared by the deletion API and the retention job
 * (deletion.c). Delete objects whose index rows matched and that no other
 * remaining row references; failures are recorded in object_deletions_v1
 * under deletion_id (retried by hub_deletion_retry). */
int hub_deletion_retry(struct hub_ctx *ctx, hub_ch *ch, json_t *summary, wt_err *err);

/* This process's instance id ("host-pid-rand"). */
const char *hub_worker_instance(void);

#endif
