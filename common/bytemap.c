/*
 * bytemap.c — growth, insertion and release for the byte-key map (see
 * bytemap.h); the room check and the lookup are inline in the header.
 */
#include "bytemap.h"

#include <stdlib.h>

#include "err.h"

int wt_bytemap_grow(wt_bytemap *m)
{
	size_t ncap, i, j;
	wt_bytemap_ent *ne;

	ncap = m->cap ? m->cap * 2 : 1024;
	if (!(ne = calloc(ncap, sizeof(*ne))))
		return WT_ENOMEM;
	for (i = 0; i < m->cap; i++) {
		if (!m->ents[i].used)
			continue;
		for (j = m->ents[i].hash & (ncap - 1); ne[j].used; j = (j + 1) & (ncap - 1))
			;
		ne[j] = m->ents[i];
	}
	free(m->ents);
	m->ents = ne;
	m->cap = ncap;
	return 0;
}

int wt_bytemap_put(wt_bytemap *m, wt_bytemap_ent *e, const void *key, size_t len, uint64_t hash, uint32_t val)
{
	if (m->keys_len + len > UINT32_MAX)
		return WT_ENOMEM;
	if (m->keys_len + len > m->keys_cap) {
		size_t ncap = m->keys_cap ? m->keys_cap : 65536;
		char *nk;

		while (ncap < m->keys_len + len)
			ncap *= 2;
		if (!(nk = realloc(m->keys, ncap)))
			return WT_ENOMEM;
		m->keys = nk;
		m->keys_cap = ncap;
	}
	if (len)
		memcpy(m->keys + m->keys_len, key, len);
	e->hash = hash;
	e->off = (uint32_t)m->keys_len;
	e->len = (uint32_t)len;
	e->val = val;
	e->used = 1;
	m->keys_len += len;
	m->n++;
	return 0;
}

void wt_bytemap_free(wt_bytemap *m)
{
	free(m->ents);
	free(m->keys);
	memset(m, 0, sizeof(*m));
}
