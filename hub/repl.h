/*
 * repl.h — the hub side of edge → hub replication.
 *
 * repl_server.c runs the mutual-TLS listener (common/tls_server.c) on the
 * replication port and hands each `POST /v1/replicate` batch to
 * hub_repl_apply() (repl_apply.c), which stores it exactly once.
 *
 * Exactly-once on ClickHouse 18.16 (no insert deduplication on plain
 * MergeTree, no transactions) rests on three facts:
 *   1. every upload has a stable id, "<edge_id>-<seq>", stored in every
 *      sample row (upload_id) and in a marker row of the rollup table;
 *   2. the ledger (repl_ledger_v1) gets a "started" row for a seq BEFORE any
 *      of its data rows and an "applied" row AFTER all of them;
 *   3. data rows of a batch are inserted as one INSERT per table per UTC day
 *      (one partition), which ClickHouse writes as a single part: after a
 *      crash such an insert is either wholly present or absent.
 * A seq whose ledger shows "applied" is a duplicate (skipped). A seq that
 * shows only "started" was interrupted: the hub asks which (upload, day)
 * parts exist — sample rows by upload_id, rollup rows by marker — and
 * inserts only the missing ones. Stacks (ReplacingMergeTree) and originals
 * (one object per upload id) are idempotent by construction.
 */
#ifndef HUB_REPL_H
#define HUB_REPL_H

#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "ch_client.h"
#include "err.h"

struct hub_ctx;
struct hub_repl_server;

typedef struct hub_repl_result {
	uint64_t last_seq;
	unsigned applied, duplicates, rejected, recovered;
	size_t sample_rows, rollup_rows;
	/* where the time went (ns): ledger queries; preparing (decode, stacks,
	 * rows); object store puts (hash, write, fsync: in a helper thread,
	 * overlapping prepare) and the wait for them after prepare; data
	 * INSERTs */
	int64_t ledger_ns, prepare_ns, objstore_ns, objstore_wait_ns, insert_ns;
} hub_repl_result;

/* Apply one decoded batch (protobuf bytes, already decompressed) sent by
 * the edge whose certificate says peer_id. Returns 0 and fills *res, or:
 * WT_EFORBIDDEN (batch edge id ≠ certificate id; an upload for a project
 * the edge is not registered to, or a seq jump: edge_projects.h), WT_EINVAL (malformed
 * batch), WT_EUNAVAIL (ClickHouse or the object store is down: retry),
 * WT_ENOTFOUND (an upload names a project the hub does not know: retry
 * after creating it). Nothing is acknowledged unless 0 is returned. */
int hub_repl_apply(struct hub_ctx *ctx, hub_ch *ch, const char *peer_id, const uint8_t *batch,
		   size_t len, hub_repl_result *res, wt_err *err);

/* Start/stop the replication listener (cfg.repl_listen; off when empty). */
int hub_repl_server_start(struct hub_ctx *ctx, struct hub_repl_server **out, wt_err *err);
void hub_repl_server_stop(struct hub_repl_server *s);
/* Re-read the TLS certificate files (SIGHUP). */
int hub_repl_server_reload(struct hub_repl_server *s, wt_err *err);
/* Append per-edge replication metrics (Prometheus text) to out. */
int hub_repl_metrics_render(wt_buf *out);

#endif
