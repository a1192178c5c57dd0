/*
 * u64map.h — an exact-key open-addressing map from uint64 keys to uint32
 * values, used by the views and the rollup (flame.c, rollup.c) to find
 * children, edges, names and cells without linear scans.
 *
 * Use: wt_u64map_slot() returns the slot of key — filled (vals[slot] !=
 * WT_U64MAP_EMPTY: found) or empty (store keys[slot], vals[slot] and
 * increment n to insert). Grows itself (load ≤ 1/2) before looking.
 * wt_u64map_del removes one key, wt_u64map_clear all (the hub's caches:
 * hub/stacklru.c, hub/stackcache.c).
 * Ownership: the map owns its arrays; wt_u64map_free releases them.
 *
 * wt_u64map64: the same map with uint64 values (the JFR decoder's constant
 * pools, class ids and caches): a per-slot value array beside the map's
 * own, moved by the same rehash, so there is still one implementation.
 */
#ifndef WT_U64MAP_H
#define WT_U64MAP_H

#include <stddef.h>
#include <stdint.h>

#define WT_U64MAP_EMPTY UINT32_MAX

typedef struct wt_u64map {
	uint64_t *keys;
	uint32_t *vals; /* WT_U64MAP_EMPTY = empty slot */
	size_t cap, n;
} wt_u64map;

/* 0, or WT_ENOMEM when growing failed (the map is unchanged). */
int wt_u64map_slot(wt_u64map *m, uint64_t key, size_t *slot);
/* The home-slot hash. Keys are often small or structured (parent << 32 |
 * name): mix them. */
static inline uint64_t wt_u64map_mix(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	return x;
}

/* Lookup only (never grows): 1 and *slot when key is there, else 0. */
static inline int wt_u64map_find(const wt_u64map *m, uint64_t key, size_t *slot)
{
	size_t j;

	if (!m->cap)
		return 0;
	for (j = wt_u64map_mix(key) & (m->cap - 1); m->vals[j] != WT_U64MAP_EMPTY; j = (j + 1) & (m->cap - 1))
		if (m->keys[j] == key) {
			*slot = j;
			return 1;
		}
	return 0;
}

/* Lookup only (never grows): 1 and *val when key is there, else 0. Inline:
 * the JFR decoder and the hub's frames cache call it per frame. */
static inline int wt_u64map_get(const wt_u64map *m, uint64_t key, uint32_t *val)
{
	size_t j;

	if (!wt_u64map_find(m, key, &j))
		return 0;
	*val = m->vals[j];
	return 1;
}
/* Remove key (backward-shift deletion: no tombstones, lookups stay as
 * short as before). 1 when it was there (*val, when val is not NULL, its
 * value), else 0. */
int wt_u64map_del(wt_u64map *m, uint64_t key, uint32_t *val);
/* Room for n keys without growing (sized once where the count is known
 * ahead). 0, or WT_ENOMEM (the map is unchanged). */
int wt_u64map_reserve(wt_u64map *m, size_t n);
/* Remove every key, keeping the slots allocated. */
void wt_u64map_clear(wt_u64map *m);
void wt_u64map_free(wt_u64map *m);

typedef struct wt_u64map64 {
	wt_u64map idx; /* its vals only mark slots used */
	uint64_t *v;   /* idx.cap values, by slot */
} wt_u64map64;

/* Set key's value (insert or replace). 0, or WT_ENOMEM (map unchanged). */
int wt_u64map64_put(wt_u64map64 *m, uint64_t key, uint64_t val);
/* 1 and *val when key is there, else 0. */
static inline int wt_u64map64_get(const wt_u64map64 *m, uint64_t key, uint64_t *val)
{
	size_t j;

	if (!wt_u64map_find(&m->idx, key, &j))
		return 0;
	*val = m->v[j];
	return 1;
}
void wt_u64map64_free(wt_u64map64 *m);

#endif
