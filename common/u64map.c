/*
 * u64map.c — uint64 → uint32 open-addressing map (see u64map.h).
 */
#include "u64map.h"

#include <stdlib.h>
#include <string.h>

#include "err.h"

/* Keys are often small or structured (parent << 32 | name): mix them. */
static uint64_t mix64(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ULL;
	x ^= x >> 33;
	return x;
}

static int grow(wt_u64map *m)
{
	size_t ncap = m->cap ? m->cap * 2 : 256, i, j;
	uint64_t *nk = malloc(ncap * sizeof(*nk));
	uint32_t *nv = malloc(ncap * sizeof(*nv));

	if (!nk || !nv) {
		free(nk);
		free(nv);
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
	}
	free(m->keys);
	free(m->vals);
	m->keys = nk;
	m->vals = nv;
	m->cap = ncap;
	return 0;
}

int wt_u64map_slot(wt_u64map *m, uint64_t key, size_t *slot)
{
	size_t j;

	if ((m->n + 1) * 2 > m->cap && grow(m))
		return WT_ENOMEM;
	for (j = mix64(key) & (m->cap - 1); m->vals[j] != WT_U64MAP_EMPTY; j = (j + 1) & (m->cap - 1))
		if (m->keys[j] == key)
			break;
	*slot = j;
	return 0;
}

int wt_u64map_get(const wt_u64map *m, uint64_t key, uint32_t *val)
{
	size_t j;

	if (!m->cap)
		return 0;
	for (j = mix64(key) & (m->cap - 1); m->vals[j] != WT_U64MAP_EMPTY; j = (j + 1) & (m->cap - 1))
		if (m->keys[j] == key) {
			*val = m->vals[j];
			return 1;
		}
	return 0;
}

void wt_u64map_free(wt_u64map *m)
{
	free(m->keys);
	free(m->vals);
	memset(m, 0, sizeof(*m));
}
