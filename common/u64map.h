/*
 * u64map.h — an exact-key open-addressing map from uint64 keys to uint32
 * values, used by the views and the rollup (flame.c, rollup.c) to find
 * children, edges, names and cells without linear scans.
 *
 * Use: wt_u64map_slot() returns the slot of key — filled (vals[slot] !=
 * WT_U64MAP_EMPTY: found) or empty (store keys[slot], vals[slot] and
 * increment n to insert). Grows itself (load ≤ 1/2) before looking.
 * Ownership: the map owns its arrays; wt_u64map_free releases them.
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
/* Lookup only (never grows): 1 and *val when key is there, else 0. */
int wt_u64map_get(const wt_u64map *m, uint64_t key, uint32_t *val);
void wt_u64map_free(wt_u64map *m);

#endif
