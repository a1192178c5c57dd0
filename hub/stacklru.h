/*
 * stacklru.h — the query side's cache of stack frames: (project, stack_id)
 * → frame names (root first), bounded by bytes, least recently used
 * evicted first. The aggregate query path (selection.c) reads (stack_id,
 * value) pairs from ClickHouse and takes the frames from here, fetching
 * only the misses from profile_stacks_v1. Stack ids are content hashes of
 * the frames (ch_rows.c), so an entry never goes stale. Thread-safe (one
 * mutex; every call is O(1) plus the copy).
 */
#ifndef HUB_STACKLRU_H
#define HUB_STACKLRU_H

#include <stddef.h>
#include <stdint.h>

#include "buf.h"

typedef struct hub_stacklru hub_stacklru;

/* max_bytes: bound on names + per-entry overhead; 0 = cache nothing. */
hub_stacklru *hub_stacklru_new(size_t max_bytes);
void hub_stacklru_free(hub_stacklru *c);

/* Key of (project, stack_id). Pure. */
uint64_t hub_stacklru_key(const char *project, uint64_t stack_id);

/* Found: appends the entry's names (NUL-terminated each, root first) to
 * out, sets *nframes and returns 1; else 0 (also when out ran out of
 * memory: check out->oom). */
int hub_stacklru_get(hub_stacklru *c, uint64_t key, wt_buf *out, size_t *nframes);

/* Insert (or refresh) key: names = nframes NUL-terminated strings, len
 * bytes in all. Entries larger than the bound are not kept. */
void hub_stacklru_put(hub_stacklru *c, uint64_t key, const char *names, size_t len, size_t nframes);

/* Bytes and entries held (metrics, tests). */
void hub_stacklru_usage(hub_stacklru *c, size_t *bytes, size_t *entries);

#endif
