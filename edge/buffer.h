/*
 * buffer.h — the edge's durable buffer: one RocksDB database with column
 * families raw, rolluplog, rollup, stacks, meta, config, stackidx,
 * stackdict (layout in keys.h),
 * a group-commit writer thread and the local retention job.
 *
 * Group commit: upload workers hand fully prepared edge_commit items to
 * edge_buffer_submit(); one committer thread takes every item queued so far,
 * assigns consecutive sequence numbers (the raw/rolluplog keys, so
 * replication can read them in commit order), writes all of them in ONE
 * WriteBatch with one synced write (WAL fsync when edge.sync is true) and
 * then calls each item's done() — only then may the upload be answered 2xx.
 *
 * Ownership: the store owns the DB. A submitted item stays owned by the
 * caller, who must not touch it until done() has been called (from the
 * committer thread).
 */
#ifndef EDGE_STORE_H
#define EDGE_STORE_H

#include <rocksdb/c.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "config.h"
#include "err.h"

enum { EDGE_CF_DEFAULT, EDGE_CF_RAW, EDGE_CF_ROLLUPLOG, EDGE_CF_ROLLUP, EDGE_CF_STACKS,
       EDGE_CF_META, EDGE_CF_CONFIG, EDGE_CF_STACKIDX, EDGE_CF_STACKDICT, EDGE_CF_COUNT };

enum { EDGE_OP_PUT = 1, EDGE_OP_MERGE = 2 };

/* edge_commit.rc when the group was refused because edge.data_dir has less
 * than retention.min_free_mb free (nothing of it was written). */
#define EDGE_COMMIT_DISK_FULL (-100)

typedef struct edge_commit {
	/* in */
	uint8_t *raw;         /* raw record (edge_raw_encode) */
	size_t raw_len;
	uint8_t *rolluplog;   /* rolluplog value */
	size_t rolluplog_len;
	wt_buf ops;           /* edge_commit_op() records */
	struct edge_spill *spill; /* edge_commit_spill(): see there */
	void (*done)(struct edge_commit *c); /* called on the committer thread */
	void *arg;
	/* out */
	int rc;
	uint64_t seq;
	struct edge_commit *next; /* queue link (store-private) */
} edge_commit;

/* Append an operation on cf to c->ops. 0 or WT_ENOMEM. */
int edge_commit_op(edge_commit *c, int cf, int kind, const void *key, size_t klen,
		   const void *val, size_t vlen);

/* From now on keep c's stacks and rollup merges apart from its other
 * operations and, once they pass the size at which a group is split (32
 * MiB), compress them as they come (zstd, in pieces of 4 MiB), so a large
 * upload does not hold its derived merges uncompressed while it is built;
 * the committer writes them after the group's atomic batch, as it writes
 * every large group's (buffer.c, write_chunked). Only for rollup_mode
 * "merge" (read-modify-write rollups need the batch's view). 0 or
 * WT_ENOMEM. */
int edge_commit_spill(edge_commit *c);

/* Free c->ops and c->spill (the committer does it after writing; callers
 * on an error path before submitting). */
void edge_commit_ops_free(edge_commit *c);

typedef struct edge_buffer edge_buffer;

typedef struct edge_buffer_stats {
	uint64_t last_seq;
	uint64_t repl_cursor;
	uint64_t disk_bytes;          /* SST + memtables of all column families */
	uint64_t raw_bytes;           /* estimated live bytes in CF raw */
	int64_t oldest_unreplicated_ns; /* received time of the oldest seq > cursor, 0 = none */
	uint64_t unreplicated;        /* last_seq - cursor */
	uint64_t raw_dropped, raw_dropped_bytes, raw_expired;
	uint64_t commit_groups, commit_items, commit_errors;
	int over_quota;               /* quota reached and nothing droppable left */
	int disk_full;                /* commits refused: data_dir under min_free */
	uint64_t disk_free;           /* free bytes in data_dir at the last check */
	uint64_t disk_full_refused;   /* uploads refused because of it */
} edge_buffer_stats;

/* The answer for an upload whose commit failed with rc: sets *err to
 * WT_EUNAVAIL (shutting down, disk full: retry later) or WT_EIO, with a
 * message saying that nothing was stored. */
void edge_commit_error(const edge_buffer *s, int rc, wt_err *err);

/* Open (creating) the DB under cfg->data_dir and start the committer and
 * retention threads. cfg must outlive the store. config_text (may be NULL)
 * is saved under config/"local". */
int edge_buffer_open(const edge_config *cfg, const char *config_text, edge_buffer **out, wt_err *err);
/* Drain the commit queue, stop the threads, flush and close the DB. */
void edge_buffer_close(edge_buffer *s);

/* Queue c for the next group commit. Never blocks on I/O. After close has
 * begun, c->done is called at once with rc = WT_EUNAVAIL. */
void edge_buffer_submit(edge_buffer *s, edge_commit *c);

/* Call fn(arg) on the committer thread after every group commit (with the
 * store's queue lock held: fn must only signal, never block or call back
 * into the store). fn = NULL removes the hook; once this returns, the old
 * fn is not running and will not be called again. One hook at a time. */
void edge_buffer_on_commit(edge_buffer *s, void (*fn)(void *arg), void *arg);

/* The data dir's incarnation: 32 random hex chars created with it (seqs
 * restart at 1 in a new one, so the hub keys its ledger by it), or "" for a
 * data dir that holds uploads from before incarnations existed. Owned by
 * the store; valid until close. */
const char *edge_buffer_incarnation(const edge_buffer *s);

/* The first minute whose stacks rows all have their stackidx entries
 * (keys.h): 0 for a data dir created by a version that writes them; for an
 * older one, the minute after its last stacks row (or after the minute it
 * was opened in, whichever is later). */
int64_t edge_buffer_stackidx_since(const edge_buffer *s);

rocksdb_t *edge_buffer_db(edge_buffer *s);
rocksdb_column_family_handle_t *edge_buffer_cf(edge_buffer *s, int cf);
void edge_buffer_stats_get(edge_buffer *s, edge_buffer_stats *st);

/* Run the retention job once now (also runs every retention.interval_s). */
void edge_buffer_retention_run(edge_buffer *s);

/* Raw record: "WTR1" LE64(received_ns) LE32(hdrlen) header-JSON zstd(body).
 * *out is malloc'd (caller frees). */
int edge_raw_encode(int64_t received_ns, const char *header_json, const uint8_t *body, size_t len,
		    uint8_t **out, size_t *outlen, wt_err *err);

#endif
