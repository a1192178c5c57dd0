/*
 * stacklru.h — the query side's cache of stacks: a frame dictionary (frame
 * name → 32-bit frame id, each name stored once) and (project, stack_id) →
 * the stack's frame ids (root first), bounded by bytes, least recently used
 * stacks evicted first. The aggregate query path (selection.c) reads
 * (stack_id, value) pairs from ClickHouse, takes each stack's frame ids from
 * here (4 bytes a frame, no string work), fetches only the misses from
 * profile_stacks_v1, and then symbolizes and interns each distinct frame
 * once per query instead of once per stack and frame. Stack ids are content
 * hashes of the frames (ch_rows.c), so an entry never goes stale.
 *
 * Frame ids belong to one dictionary generation (hub_framedict). A query
 * holds one generation from hub_stacklru_acquire to hub_stacklru_release,
 * so its ids stay valid while it runs. When the dictionary outgrows half of
 * the byte bound it is retired: a new generation starts empty and every
 * cached stack (whose ids are the old generation's) is dropped; the retired
 * dictionary is freed when its last query releases it. Thread-safe (one
 * mutex; get/put are O(frames of the stack)).
 */
#ifndef HUB_STACKLRU_H
#define HUB_STACKLRU_H

#include <stddef.h>
#include <stdint.h>

#include "buf.h"

typedef struct hub_stacklru hub_stacklru;
typedef struct hub_framedict hub_framedict;

/* max_bytes: bound on stacks + frame names + per-entry overhead; 0 =
 * cache nothing across queries (each query still gets a dictionary). */
hub_stacklru *hub_stacklru_new(size_t max_bytes);
void hub_stacklru_free(hub_stacklru *c);

/* Key of (project, stack_id). Pure. */
uint64_t hub_stacklru_key(const char *project, uint64_t stack_id);

/* The current dictionary generation, referenced until
 * hub_stacklru_release. NULL: out of memory. */
hub_framedict *hub_stacklru_acquire(hub_stacklru *c);
void hub_stacklru_release(hub_stacklru *c, hub_framedict *d);

/* Found (with ids of d's generation): appends the stack's frame ids
 * (uint32_t each, root first) to ids, sets *nframes and returns 1; else 0
 * (also when ids ran out of memory: check ids->oom). */
int hub_stacklru_get(hub_stacklru *c, hub_framedict *d, uint64_t key, wt_buf *ids, size_t *nframes);

/* hub_stacklru_get for keys[0..n) under one lock: for each key found,
 * off[i] = its first id's index (in uint32s) in ids and nframes[i] = its
 * frame count; not found: nframes[i] = SIZE_MAX. 0 or WT_ENOMEM. */
int hub_stacklru_get_many(hub_stacklru *c, hub_framedict *d, const uint64_t *keys, size_t n, wt_buf *ids,
			  size_t *off, size_t *nframes);

/* Intern names (nframes NUL-terminated strings, len bytes in all) into d,
 * append their ids to ids and, while d is the current generation, cache
 * key → ids (entries larger than the bound are not kept). 0 or WT_ENOMEM. */
int hub_stacklru_put(hub_stacklru *c, hub_framedict *d, uint64_t key, const char *names, size_t len,
		     size_t nframes, wt_buf *ids);

/* Copy the names of ids[0..n) (ids of d) into out, NUL-terminated each;
 * offs[i] = offset of name i in out. 0, WT_EINVAL (an id d did not give) or
 * WT_ENOMEM. */
int hub_stacklru_names(hub_stacklru *c, hub_framedict *d, const uint32_t *ids, size_t n, wt_buf *out,
		       size_t *offs);

/* Bytes (stacks and the current dictionary) and cached stacks (metrics,
 * tests). */
void hub_stacklru_usage(hub_stacklru *c, size_t *bytes, size_t *entries);

#endif
