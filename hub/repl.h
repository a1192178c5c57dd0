/*
 * repl.h — the hub side of edge → hub replication.
 *
 * repl_server.c runs the mutual-TLS listener (hub/tls_server.c) on the
 * replication port and hands each `POST /v1/replicate` batch to
 * hub_repl_apply() (repl_apply.c), which stores it exactly once, also when
 * several hubs share the ClickHouse database.
 *
 * Exactly-once on ClickHouse 18.16 (no insert deduplication on plain
 * MergeTree, no transactions) rests on these facts:
 *   1. every upload has a stable id, "<edge_id>-<incarnation>-<seq>"
 *      ("<edge_id>-<seq>" for the legacy incarnation ""), stored in every
 *      sample row (upload_id) and in marker rows of the rollup table; the
 *      incarnation is a random id the edge creates with its data dir, so a
 *      wiped edge whose seqs restart at 1 is a new stream, not duplicates;
 *   2. one apply at a time per seq: an apply of an admitted batch (valid
 *      headers, edge registered to its projects, seqs within bound:
 *      edge_projects.h; a refused batch writes nothing) first writes a
 *      claim on its seq range (repl_claim.c, table repl_claims_v1: token, claim_ns,
 *      lease) and, replication.claim_settle_ms (S) after writing it, reads
 *      the live claims overlapping its range; only the earliest (claim_ns,
 *      token) proceeds, the others answer 503 with Retry-After. A claimant
 *      whose claim insert took longer than S withdraws. So any claim
 *      ranked before ours finished its insert before ours was written + S,
 *      which is before our read: two claimants can never both see
 *      themselves first (hubs' clocks must agree within (S - insert
 *      latency) / 2). The winner renews its lease while it applies and
 *      writes nothing once the lease is (nearly) gone, so an apply whose
 *      hub died is taken over after the lease (replication.claim_ttl_s);
 *   3. the ledger (repl_ledger_v2; v1 still read for incarnation "") gets a
 *      "started" row for a seq BEFORE any of its data rows and an "applied"
 *      row AFTER all of them;
 *   4. data rows are inserted in blocks of at most
 *      min(clickhouse.insert_batch_rows, 1048576) rows, one UTC day (one
 *      partition) per INSERT: ClickHouse writes each as one part, wholly
 *      or not at all, in order. The sample rows of an (upload, day) come in
 *      the same order on every attempt, so what a crash left is a prefix
 *      whose length is count(upload_id, day); rollup rows (a summing table:
 *      counts mean nothing) go in pieces of at most block - 1 rows of one
 *      (upload, day), each with its own marker row in the same block.
 * A seq whose ledger shows "applied" is a duplicate (skipped). A seq that
 * shows only "started" was interrupted: the new claim holder counts its
 * sample rows per day and finds its rollup markers, and inserts only the
 * missing rows and pieces. Stacks (ReplacingMergeTree) and originals
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
	/* the batch's incarnation; the one the ledger last knew the edge under
	 * when that was another (other_known) */
	char incarnation[72], other_incarnation[72];
	int other_known;
	uint64_t other_last_seq;
	/* > 0 when refused because another apply holds the seqs: the edge
	 * should resend after this many seconds */
	int retry_after_s;
} hub_repl_result;

/* Apply one decoded batch (protobuf bytes, already decompressed) sent by
 * the edge whose certificate says peer_id. Returns 0 and fills *res, or:
 * WT_EFORBIDDEN (batch edge id ≠ certificate id; an upload for a project
 * the edge is not registered to, or a seq jump: edge_projects.h), WT_EINVAL
 * (malformed batch), WT_EUNAVAIL (ClickHouse or the object store is down,
 * or — res->retry_after_s > 0 — another apply holds these seqs: retry),
 * WT_ENOTFOUND (an upload names a project the hub does not know: retry
 * after creating it). Nothing is acknowledged unless 0 is returned. */
int hub_repl_apply(struct hub_ctx *ctx, hub_ch *ch, const char *peer_id, const uint8_t *batch,
		   size_t len, hub_repl_result *res, wt_err *err);

/* A direct upload (hub/http_ingest.c) stored with the machinery above, so
 * that it is all or nothing from the client's view: it is applied as the
 * single upload (seq 1) of a batch from the pseudo edge HUB_REPL_DIRECT_EDGE
 * (no certificate can name it: edge ids start alphanumeric) whose
 * incarnation is the upload id, under a claim and the ledger. A retry of
 * an interrupted one inserts only what is missing; a repeat of a finished
 * one inserts nothing (res->duplicates = 1). */
#define HUB_REPL_DIRECT_EDGE "_direct"
typedef struct hub_repl_direct {
	const char *project, *service;
	const struct hub_label_param *labels; /* added to every sample */
	size_t nlabels;
	const char *upload_id;     /* 32 lowercase hex (http_ingest.c) */
	const uint8_t *body;       /* the original as received */
	size_t len;
	/* decoded, times placed at received_ns; the apply frees it as soon
	 * as its rows are made and sets p to NULL (the caller frees it when
	 * it is still set) */
	struct wt_profile *p;
	const char *format;        /* detected format name */
	int64_t received_ns;       /* kept in the "started" ledger row */
	struct json_t *reply;      /* gains "object_key"; kept in the "applied" row */
	int retention_days;
} hub_repl_direct;

/* The ledger's view of direct upload upload_id: *state 0 (unknown),
 * 1 (started: *received_ns is the first attempt's time) or 2 (applied:
 * *reply the JSON answered then, malloc'd, caller frees). */
int hub_repl_direct_lookup(hub_ch *ch, const char *upload_id, int *state, int64_t *received_ns, char **reply,
			   wt_err *err);

/* Store direct upload d; errors as hub_repl_apply's. */
int hub_repl_direct_apply(struct hub_ctx *ctx, hub_ch *ch, hub_repl_direct *d, hub_repl_result *res, wt_err *err);

/* Start/stop the replication listener (cfg.repl_listen; off when empty). */
int hub_repl_server_start(struct hub_ctx *ctx, struct hub_repl_server **out, wt_err *err);
void hub_repl_server_stop(struct hub_repl_server *s);
/* Re-read the TLS certificate files (SIGHUP). */
int hub_repl_server_reload(struct hub_repl_server *s, wt_err *err);
/* Append per-edge replication metrics (Prometheus text) to out. */
int hub_repl_metrics_render(wt_buf *out);

#endif
