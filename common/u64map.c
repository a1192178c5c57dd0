/*
 * u64map.c — uint64 → uint32 open-addressing map (see u64map.h).
 */
#include "u64map.h"

#include <stdlib.h>
#include <string.h>

#include "err.h"

#define mix64 wt_u64map_mix

/* Rehash into ncap slots (a power of two above 2n); *pv (when pv is not
 * NULL): a per-slot uint64 array (wt_u64map64's values) moved along. */
static int rehash(wt_u64map *m, size_t ncap, uint64_t **pv)
{
	size_t i, j;
	uint64_t *nk = malloc(ncap * sizeof(*nk)), *np = pv ? malloc(ncap * sizeof(*np)) : NULL;
	uint32_t *nv = malloc(ncap * sizeof(*nv));

	if (!nk || !nv || (pv && !np)) {
		free(nk);
		free(nv);
		free(np);
		return WT_ENOMEM;
	}
	memset(nv, 0xff, ncap * sizeof(*nv));
	for (i = 0; i < m->cap; i++) {
		if (m->vals[i] == WT_U64MAP_EMPTY)
			continue;
		for (j = mix64(m->keys[i]) & (ncap - 1); nv[j] != WT_U64MAP_EMPTY; j = (j + 1) & (ncap - 1))
			;
		nk[j] = m->keys[i];
		nv[j] = m->vals[i];
		if (pv)
			np[j] = (*pv)[i];
	}
	if (pv) {
		free(*pv);
		*pv = np;
	}
	free(m->keys);
	free(m->vals);
	m->keys = nk;
	m->vals = nv;
	m->cap = ncap;
	return 0;
}

/* The slot of key (see wt_u64map_slot), growing first with *pv along. */
static int slot_of(wt_u64map *m, uint64_t key, size_t *slot, uint64_t **pv)
{
	size_t j;

	if ((m->n + 1) * 2 > m->cap && rehash(m, m->cap ? m->cap * 2 : 256, pv))
		return WT_ENOMEM;
	for (j = mix64(key) & (m->cap - 1); m->vals[j] != WT_U64MAP_EMPTY; j = (j + 1) & (m->cap - 1))
		if (m->keys[j] == key)
			break;
	*slot = j;
	return 0;
}

int wt_u64map_reserve(wt_u64map *m, size_t n)
{
	size_t cap = m->cap ? m->cap : 256;

	while (cap < 2 * n)
		cap *= 2;
	return cap == m->cap ? 0 : rehash(m, cap, NULL);
}

int wt_u64map_slot(wt_u64map *m, uint64_t key, size_t *slot)
{
	return slot_of(m, key, slot, NULL);
}

int wt_u64map_del(wt_u64map *m, uint64_t key, uint32_t *val)
{
	size_t mask = m->cap - 1, i, j;

	if (!m->cap)
		return 0;
	for (i = mix64(key) & mask; m->vals[i] != WT_U64MAP_EMPTY; i = (i + 1) & mask)
		if (m->keys[i] == key)
			break;
	if (m->vals[i] == WT_U64MAP_EMPTY)
		return 0;
	if (val)
		*val = m->vals[i];
	/* close the gap: a later key of the run moves back into it when its
	 * home is not between the gap and where it sits */
	for (j = (i + 1) & mask; m->vals[j] != WT_U64MAP_EMPTY; j = (j + 1) & mask) {
		size_t home = mix64(m->keys[j]) & mask;

		if (((j - home) & mask) >= ((j - i) & mask)) {
			m->keys[i] = m->keys[j];
			m->vals[i] = m->vals[j];
			i = j;
		}
	}
	m->vals[i] = WT_U64MAP_EMPTY;
	m->n--;
	return 1;
}

void wt_u64map_clear(wt_u64map *m)
{
	if (m->cap)
		memset(m->vals, 0xff, m->cap * sizeof(*m->vals));
	m->n = 0;
}

void wt_u64map_free(wt_u64map *m)
{
	free(m->keys);
	free(m->vals);
	memset(m, 0, sizeof(*m));
}

int wt_u64map64_put(wt_u64map64 *m, uint64_t key, uint64_t val)
{
	size_t slot;

	if (slot_of(&m->idx, key, &slot, &m->v))
		return WT_ENOMEM;
	if (m->idx.vals[slot] == WT_U64MAP_EMPTY) {
		m->idx.keys[slot] = key;
		m->idx.vals[slot] = 0;
		m->idx.n++;
	}
	m->v[slot] = val;
	return 0;
}

void wt_u64map64_free(wt_u64map64 *m)
{
	wt_u64map_free(&m->idx);
	free(m->v);
	memset(m, 0, sizeof(*m));
}
