/*
 * bytemap.h — byte-string keys → uint32 values, the keys copied into the
 * map's own arena: open addressing, linear probing, load <= 1/2. Used by
 * the text parsers' frame caches (folded.c, perf_script.c: raw frame text →
 * interned frame id). For uint64 keys see u64map.h; for an index over
 * elements kept in the caller's own array, hindex.h. Hash keys with
 * XXH3_64bits.
 *
 * Use: wt_bytemap_reserve(m) before each lookup (grows when half full),
 * then e = wt_bytemap_find(m, key, len, hash): e->used → hit (e->val);
 * otherwise wt_bytemap_put(m, e, key, len, hash, val) inserts there.
 * reserve and find are inline: they sit in the parsers' innermost loop.
 * Ownership: the map owns its slots and key copies; wt_bytemap_free.
 * Bounds: at most 4 GiB of key bytes (put answers WT_ENOMEM past that).
 */
#ifndef WT_BYTEMAP_H
#define WT_BYTEMAP_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

typedef struct wt_bytemap_ent {
	uint64_t hash;
	uint32_t off, len; /* key bytes in keys[] */
	uint32_t val;
	uint32_t used;
} wt_bytemap_ent;

typedef struct wt_bytemap {
	wt_bytemap_ent *ents;
	size_t cap, n; /* cap is a power of two (or 0) */
	char *keys;
	size_t keys_len, keys_cap;
} wt_bytemap;

/* Double the slots (first size 1024). 0 or WT_ENOMEM (map unchanged). */
int wt_bytemap_grow(wt_bytemap *m);
int wt_bytemap_put(wt_bytemap *m, wt_bytemap_ent *e, const void *key, size_t len, uint64_t hash, uint32_t val);
void wt_bytemap_free(wt_bytemap *m);

/* Room for one more key: grows when half full. 0 or WT_ENOMEM. */
static inline int wt_bytemap_reserve(wt_bytemap *m)
{
	return m->n * 2 < m->cap ? 0 : wt_bytemap_grow(m);
}

/* The slot of (key, len, hash): used → found, unused → where to put it. */
static inline wt_bytemap_ent *wt_bytemap_find(wt_bytemap *m, const void *key, size_t len, uint64_t hash)
{
	size_t j;

	for (j = hash & (m->cap - 1);; j = (j + 1) & (m->cap - 1)) {
		wt_bytemap_ent *e = &m->ents[j];

		if (!e->used || (e->hash == hash && e->len == len && !memcmp(m->keys + e->off, key, len)))
			return e;
	}
}

#endif
