/*
 * arena.h — a per-request memory pool: a bump allocator over 4 KiB chunks
 * plus a list of destructors, all released at once by wt_arena_clear when
 * the request ends (the model is h2o's h2o_mem_pool_t). Request handlers
 * allocate from r->arena (hub/hub.h, edge/server.h) and hand objects that
 * have their own free function (json_t, wt_buf, evkeyvalq, ...) to it with
 * wt_arena_defer, so no handler frees by hand.
 *
 * Not thread-safe: one arena serves one request on one thread.
 */
#ifndef WT_ARENA_H
#define WT_ARENA_H

#include <stddef.h>

#include "buf.h"

typedef struct wt_arena_chunk wt_arena_chunk;
typedef struct wt_arena_dtor wt_arena_dtor;

typedef struct wt_arena {
	wt_arena_chunk *chunks;  /* bump chunks, newest first */
	wt_arena_chunk *large;   /* allocations over WT_ARENA_LARGE, one chunk each */
	wt_arena_dtor *dtors;    /* run newest first by wt_arena_clear */
	size_t off;              /* bytes used in chunks->data */
	size_t total;            /* bytes obtained from malloc, headers included */
	size_t limit;            /* 0 = unlimited; allocations past it fail */
} wt_arena;

/* Bump chunk payload and the size above which an allocation gets its own chunk. */
#define WT_ARENA_CHUNK 4000
#define WT_ARENA_LARGE 1024

/* An empty arena that will hold at most limit bytes (0 = no limit).
 * Allocates nothing until the first use. */
void wt_arena_init(wt_arena *a, size_t limit);

/* n bytes aligned for any type, valid until wt_arena_clear. NULL on OOM
 * or past the limit. O(1) for small n. */
void *wt_arena_alloc(wt_arena *a, size_t n);
/* As wt_arena_alloc, zero-filled; NULL also when nmemb * size overflows. */
void *wt_arena_calloc(wt_arena *a, size_t nmemb, size_t size);
/* A copy of s (NULL → NULL) in the arena. */
char *wt_arena_strdup(wt_arena *a, const char *s);
/* A printf-formatted string in the arena; NULL on OOM. */
char *wt_arena_printf(wt_arena *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Run fn(p) when the arena is cleared (destructors run newest first, before
 * the memory is released, so p may live in the arena). When the record
 * cannot be allocated fn(p) runs at once and WT_ENOMEM is returned, so
 * ownership of p always passes to the arena. fn NULL or p NULL: no-op. */
int wt_arena_defer(wt_arena *a, void (*fn)(void *), void *p);

/* An empty wt_buf whose data is freed when the arena is cleared; NULL on
 * OOM. */
wt_buf *wt_arena_buf(wt_arena *a);

/* Run the destructors, release every chunk, and leave a empty and reusable
 * (same limit). */
void wt_arena_clear(wt_arena *a);

#endif
