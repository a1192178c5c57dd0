/*
 * hindex.h — a hash index over elements the caller keeps in its own dense
 * array (ids 0..n-1): open addressing, linear probing, load <= 3/4. Slots
 * are 8 bytes, the hash's high 32 bits and id+1, so most mismatches are
 * rejected without touching the caller's array; an eq callback compares a key with
 * element id. Used where the elements already live in a table of their own
 * (the profile model's interned tables, the speedscope encoder's frames,
 * wtctl's summary rows). For keys that are plain bytes with a uint32 value
 * see bytemap.h; for uint64 keys, u64map.h. Hash keys with XXH3_64bits.
 *
 * Use: r = wt_hindex_lookup(...): 1 = found (*id set), 0 = absent (append
 * the element, then wt_hindex_put(h, slot, hash, new_id)), WT_ENOMEM.
 * Lookup and put are inline: they sit in the parsers' innermost loops.
 * Ownership: the index owns its slots; wt_hindex_free releases them.
 */
#ifndef WT_HINDEX_H
#define WT_HINDEX_H

#include <stddef.h>
#include <stdint.h>

#include "err.h"

/* 8 bytes: the high 32 bits of the element's hash and id + 1 (0 = empty). */
typedef struct wt_hindex_slot {
	uint32_t tag;
	uint32_t id1;
} wt_hindex_slot;

typedef struct wt_hindex {
	wt_hindex_slot *slots;
	size_t cap, n; /* any capacity (or 0) */
} wt_hindex;

/* Nonzero when element id equals key; ctx is the lookup's ctx. */
typedef int (*wt_hindex_eq)(const void *ctx, uint32_t id, const void *key);

/* Double the slots (first size 64). 0, or WT_ENOMEM (index unchanged). */
int wt_hindex_grow(wt_hindex *h);
/* Room for at least n entries under the 3/4 load bound (sized to what an
 * input declares, so large inputs do not double their way up). 0 or
 * WT_ENOMEM (index unchanged). */
int wt_hindex_reserve(wt_hindex *h, size_t n);
void wt_hindex_free(wt_hindex *h);

static inline uint32_t wt_hindex_tag(uint64_t hash)
{
	return (uint32_t)(hash >> 32);
}

/* Home slot by multiply-shift of the tag: any capacity, not only powers
 * of two. */
static inline size_t wt_hindex_home(uint32_t tag, size_t cap)
{
	return (size_t)(((uint64_t)tag * cap) >> 32);
}

static inline int wt_hindex_lookup(wt_hindex *h, uint64_t hash, const void *key, wt_hindex_eq eq,
				   const void *ctx, uint32_t *id, size_t *slot)
{
	uint32_t tag = wt_hindex_tag(hash);
	size_t j;

	*slot = 0;
	if ((h->n + 1) * 4 > h->cap * 3 && wt_hindex_grow(h))
		return WT_ENOMEM;
	for (j = wt_hindex_home(tag, h->cap);; j = j + 1 == h->cap ? 0 : j + 1) {
		const wt_hindex_slot *s = &h->slots[j];
		if (!s->id1) {
			*slot = j;
			return 0;
		}
		if (s->tag == tag && eq(ctx, s->id1 - 1, key)) {
			*id = s->id1 - 1;
			*slot = j;
			return 1;
		}
	}
}

static inline void wt_hindex_put(wt_hindex *h, size_t slot, uint64_t hash, uint32_t id)
{
	h->slots[slot].tag = wt_hindex_tag(hash);
	h->slots[slot].id1 = id + 1;
	h->n++;
}

#endif
