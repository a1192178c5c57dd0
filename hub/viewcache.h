/*
 * viewcache.h — the hub's cache of rendered query views (flamegraph, table,
 * callgraph as their JSON text), so that the same selection asked again
 * (an explorer reloading, a dashboard polling a past range) is answered
 * without rebuilding the flame from ClickHouse rows (http_query.c).
 *
 * An entry is (key string → fingerprint, JSON text). The caller builds the
 * key from everything the rendering depends on that does not change with
 * stored data (view, project, resolved range and type, request parameters,
 * aggregate coverage, symbol index) and the fingerprint from the stored
 * data it read (the active ClickHouse parts of the tables and days
 * involved: any insert, merge, mutation or dropped partition changes it).
 * A lookup hits only when both are equal; a put replaces the key's entry.
 * Bounded by bytes (keys + texts); the least recently used entries are
 * evicted first. Thread-safe (one mutex; lookups copy the text out).
 */
#ifndef HUB_VIEWCACHE_H
#define HUB_VIEWCACHE_H

#include <stddef.h>
#include <stdint.h>

#include "buf.h"

typedef struct hub_viewcache hub_viewcache;

/* max_bytes 0: NULL (no cache; the other calls accept NULL). NULL also on
 * out of memory. */
hub_viewcache *hub_viewcache_new(size_t max_bytes);
void hub_viewcache_free(hub_viewcache *c);

/* 1 and *text (malloc'd copy, NUL-terminated, owned by the caller) and
 * *len when key is cached with fingerprint fp; else 0 (also on out of
 * memory). */
int hub_viewcache_get(hub_viewcache *c, const char *key, uint64_t fp, char **text, size_t *len);

/* Cache text[0..len) under (key, fp), replacing the key's older entry;
 * entries larger than a quarter of the bound are not kept. */
void hub_viewcache_put(hub_viewcache *c, const char *key, uint64_t fp, const char *text, size_t len);

/* Bytes and entries held (metrics, tests). */
void hub_viewcache_usage(hub_viewcache *c, size_t *bytes, size_t *entries);

/* Append wt_hub_view_cache_* (hits, misses, bytes, entries; zeros for a
 * NULL cache) to out. 0, or -2 when out ran out of memory. */
int hub_viewcache_metrics_render(hub_viewcache *c, wt_buf *out);

#endif
