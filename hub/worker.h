/*
 * worker.h — the hub's periodic jobs (retention, archive) and the lease
 * that lets one hub of several run a job at a time.
 *
 * Lease: table worker_leases (ReplacingMergeTree by version, key job). To
 * take a job a hub reads the row (FINAL); if another holder's expiry is in
 * the future it stands back (a periodic run also stands back when the row's
 * last_done_ns says the job ran less than an interval ago — another hub did
 * it); else it writes (job, its instance id, now + hub.worker_lease_ttl_s, version
 * = max(old + 1, now_ns)) and re-reads: it won if the row now names it.
 * Releasing writes expiry 0 and the run's end time (last_done_ns), which
 * also schedules the next run across hub restarts. While the job runs a
 * heartbeat thread re-writes the lease every third of the TTL (later expiry,
 * higher version), so a hub that dies holding the lease blocks the job for
 * at most one TTL (hub.worker_lease_ttl_s, default 120 s), then any hub
 * takes it over.
 *
 * Single server: race window — two hubs that both read an expired lease,
 * where one re-reads before the other writes, both think they won. Every
 * job is idempotent (partition drops, ALTER … DELETE and object deletes of
 * removed data are no-ops), and several hubs are a cluster-mode setup.
 *
 * Cluster mode (docs/operations.md "## Scale out") closes the window with a
 * claim before the write: the hub inserts (job, base_version = the version
 * it read, holder) into worker_lease_claims, whose claim_time is filled by
 * ClickHouse (now(), seconds), waits HUB_LEASE_SETTLE_MS, and reads the
 * claims on that base_version: the earliest (claim_time, holder) wins; the
 * others stand back. A claim that lands after the winner's read came more
 * than HUB_LEASE_SETTLE_MS after the winner's, so its claim_time is later
 * (clocks of the ClickHouse servers within 1 s of each other) and it loses
 * in its own read too: exactly one claimant per base version proceeds. Any
 * claimant that reads the lease after the winner wrote it sees it held.
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

#define HUB_LEASE_SETTLE_MS 3000 /* cluster mode: wait between claim and decision */
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
