/*
 * repl_client.h — the edge's side of edge→hub replication.
 *
 * One thread reads the buffer after the durable cursor meta
 * "repl/raw_cursor" in sequence order, packs up to
 * replication.batch_max_uploads / batch_max_bytes uploads into a
 * watchtower.repl.Batch (proto/repl.proto), compresses it with zstd and
 * POSTs it to {hub.url}/v1/replicate over mutual TLS (edge/tls_client.h).
 * A 200 answer {"last_seq":N,...} means every seq <= N is durable at the
 * hub: the cursor moves to N and the ledger key repl/ledger/BE64(N) gets
 * the ack time (one synced write), which the store's retention uses to
 * expire raw originals later. Failures are retried with the SAME batch
 * after an exponential backoff with jitter; the hub makes retries no-ops.
 * While a batch is in flight a second thread builds the next one (seqs
 * after the in-flight batch), used only after a full acknowledgement.
 * Wire contract: docs/operations.md "## Replication".
 *
 * Ownership: edge_repl_start() returns a client that reads cfg and store
 * until edge_repl_stop(), which must run before the store is closed.
 */
#ifndef EDGE_REPL_CLIENT_H
#define EDGE_REPL_CLIENT_H

#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "config.h"
#include "err.h"
#include "buffer.h"

#define EDGE_REPL_PATH "/v1/replicate"
#define EDGE_REPL_CONTENT_TYPE "application/x-wt-repl-batch"

/* One packed batch. */
typedef struct edge_repl_batch {
	uint8_t *pb;            /* serialised watchtower.repl.Batch (owned) */
	size_t pb_len;
	uint64_t first_seq, last_seq;
	size_t nuploads;
	size_t nrows;           /* rollup rows over all uploads */
	size_t raw_missing;     /* uploads sent rollup-only: raw dropped by the quota or unreadable */
	size_t corrupt;         /* rolluplog values that could not be decoded (sent without rows) */
	size_t rows_omitted;    /* uploads sent with their original but without rollup rows (large) */
	uint64_t original_bytes; /* sum of the originals' sizes */
} edge_repl_batch;

/* Build the next batch from the uploads with seq > after, in seq order,
 * stopping at max_uploads, before the estimated size exceeds max_bytes
 * (one upload always goes, however big) or before a hole in the seqs.
 * edge_id goes into Batch.edge_id. Returns 0 with b->nuploads == 0 when
 * nothing is pending; WT_EIO / WT_ENOMEM otherwise. Free with
 * edge_repl_batch_free(). */
int edge_repl_batch_build(edge_buffer *s, const char *edge_id, uint64_t after, size_t max_uploads,
			  size_t max_bytes, edge_repl_batch *b, wt_err *err);
void edge_repl_batch_free(edge_repl_batch *b);

/* Parse the hub's 200 answer. Returns 0 or WT_EINVAL (message in err). */
typedef struct edge_repl_ack {
	uint64_t last_seq;
	uint64_t applied, duplicates, rejected;
	/* the hub last knew this edge id under another incarnation */
	int other_known;
	char other_incarnation[72];
	uint64_t other_last_seq;
} edge_repl_ack;
int edge_repl_ack_parse(const uint8_t *body, size_t len, edge_repl_ack *ack, wt_err *err);

/* Persist an acknowledgement: meta repl/raw_cursor = BE64(seq) and
 * repl/ledger/BE64(seq) = LE64(acked_ns), one synced write. */
int edge_repl_cursor_save(edge_buffer *s, uint64_t seq, int64_t acked_ns, wt_err *err);
uint64_t edge_repl_cursor_load(edge_buffer *s);

typedef struct edge_repl edge_repl;

/* Start the replication thread when cfg->hub_url is set (else *out = NULL
 * and 0). Errors: unreadable certificate files (WT_EINVAL), WT_ENOMEM. */
int edge_repl_start(const edge_config *cfg, edge_buffer *store, edge_repl **out, wt_err *err);
/* Stop: an in-flight request is abandoned within about a second; joins
 * the thread and frees r. NULL is a no-op. */
void edge_repl_stop(edge_repl *r);

/* Append the wt_edge_repl_* metrics (Prometheus text). r may be NULL
 * (replication off): counters are 0, the backlog comes from the store. */
void edge_repl_metrics(edge_repl *r, edge_buffer *store, const edge_buffer_stats *st, wt_buf *b);

#endif
