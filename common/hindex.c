/*
 * hindex.c — growth, reservation and release of the hash index (see
 * hindex.h); lookup and insertion are inline in the header.
 */
#include "hindex.h"

#include <stdlib.h>

static int resize(wt_hindex *h, size_t ncap)
{
	wt_hindex_slot *ns = calloc(ncap, sizeof(*ns));
	size_t i;

	if (!ns)
		return WT_ENOMEM;
	for (i = 0; i < h->cap; i++) {
		size_t j;
		if (!h->slots[i].id1)
			continue;
		for (j = wt_hindex_home(h->slots[i].tag, ncap); ns[j].id1; j = j + 1 == ncap ? 0 : j + 1)
			;
		ns[j] = h->slots[i];
	}
	free(h->slots);
	h->slots = ns;
	h->cap = ncap;
	return 0;
}

int wt_hindex_grow(wt_hindex *h)
{
	return resize(h, h->cap ? h->cap * 2 : 64);
}

int wt_hindex_reserve(wt_hindex *h, size_t n)
{
	size_t need = n + n / 3 + 2;
	return need > h->cap ? resize(h, need) : 0;
}

void wt_hindex_free(wt_hindex *h)
{
	free(h->slots);
	h->slots = NULL;
	h->cap = h->n = 0;
}
