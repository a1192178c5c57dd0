/*
 * keys.h — byte layout of the edge's RocksDB keys and values, in one place
 * so the replication client, retention and queries agree.
 *
 * Column families (docs/operations.md "## Edge buffer and retention"):
 *   raw        BE64(seq)                          → raw record (edge_raw_*)
 *   rolluplog  BE64(seq)                          → zstd(JSON rollup delta of that upload)
 *   rollup     proj\0svc\0type\0 BE64(minute) function → LE64 self, LE64 total (merged)
 *   stacks     proj\0svc\0type\0 BE64(minute) BE64(labels hash) BE64(stack hash)
 *                                                → LE64 value, stack payload (merged)
 *   stackidx   proj\0svc\0type\0 BE64(minute)  → n × (LE64 labels hash, LE64 stack
 *                                                hash, LE64 value) (merged: appended)
 *              the minute's stacks rows without their payloads, so a local
 *              query reads 24 bytes per (minute, labels, stack) and one
 *              stackdict row per distinct stack (edge/query.c)
 *   stackdict  proj\0svc\0type\0 BE64(day) BE64(stack hash) → LE32 0, the
 *                                                frames (a stack payload without
 *                                                labels; merged: the first kept)
 *              one copy of each stack's frames per day it occurs in (day =
 *              minute / 1440), so they are read from a table that grows with
 *              distinct stacks, not from the stacks rows spread over minutes
 *   meta       "seq" → BE64 last assigned sequence
 *              "types/" proj\0svc\0type → unit
 *              "repl/raw_cursor" → BE64 highest seq the hub acknowledged
 *              "repl/ledger/" BE64(seq) → LE64 unix ns when seqs ≤ seq were acked
 *              "incarnation" → 32 hex chars, random, written when the data dir
 *                              is created (absent: a data dir from before)
 *   config     "local" → text of the config file last loaded
 * Big-endian numbers keep RocksDB's bytewise order equal to numeric order.
 *
 * Stack payload: LE32 nlabels, nlabels × (key\0value\0), then the frame
 * names ROOT FIRST, each NUL-terminated (names never contain NUL).
 */
#ifndef EDGE_KEYS_H
#define EDGE_KEYS_H

#include <stddef.h>
#include <stdint.h>

#include "buf.h"

#define EDGE_META_SEQ "seq"
#define EDGE_META_TYPES "types/"
#define EDGE_META_REPL_CURSOR "repl/raw_cursor"
#define EDGE_META_REPL_LEDGER "repl/ledger/"
#define EDGE_META_INCARNATION "incarnation"
/* BE64 minute from which stackidx holds every stacks row (absent until the
 * first open of a version that writes it; earlier minutes are read from
 * the stacks rows) */
#define EDGE_META_STACKIDX_SINCE "stackidx/since"
#define EDGE_STACKIDX_ENTRY 24
#define EDGE_MINUTES_PER_DAY 1440

void edge_be64_put(uint8_t *p, uint64_t v);
uint64_t edge_be64_get(const uint8_t *p);
void edge_le64_put(uint8_t *p, int64_t v);
int64_t edge_le64_get(const uint8_t *p);

/* proj\0svc\0type\0 — the series prefix of rollup, stacks and types keys. */
int edge_key_series(wt_buf *b, const char *proj, const char *svc, const char *type);
/* series + BE64(minute) + function */
int edge_key_rollup(wt_buf *b, const char *proj, const char *svc, const char *type,
		    int64_t minute, const char *function);
/* series + BE64(minute) + BE64(lh) + BE64(sh) */
int edge_key_stack(wt_buf *b, const char *proj, const char *svc, const char *type,
		   int64_t minute, uint64_t lh, uint64_t sh);

/* series + BE64(day) + BE64(sh) */
int edge_key_stackdict(wt_buf *b, const char *proj, const char *svc, const char *type, int64_t day, uint64_t sh);
/* series + BE64(minute) */
int edge_key_stackidx(wt_buf *b, const char *proj, const char *svc, const char *type, int64_t minute);

/* Split a key produced by edge_key_series()+suffix: fills pointers into key
 * (the three NUL-terminated names) and *rest, *restlen (what follows).
 * Returns 0 or -1 when the key is malformed. */
int edge_key_split(const uint8_t *key, size_t len, const char **proj, const char **svc,
		   const char **type, const uint8_t **rest, size_t *restlen);

/* Iterate a stack payload. Returns 0 and fills counts, or -1 if malformed.
 * labels[] receives 2*nlabels pointers (key, value) up to maxlabels pairs,
 * frames[] up to maxframes pointers (root first). */
int edge_stack_payload_parse(const uint8_t *p, size_t len, const char **labels, size_t maxlabels,
			     size_t *nlabels, const char **frames, size_t maxframes, size_t *nframes);

#endif
