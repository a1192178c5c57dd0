/*
 * hindex.c — growth and release of the hash index (see hindex.h); lookup
 * and insertion are inline in the header.
 */
#include "hindex.h"

#include <stdlib.h>

int wt_hindex_grow(wt_hindex *h)
{
	size_t ncap = h->cap ? h->cap * 2 : 64, i;
	wt_hindex_slot *ns = calloc(ncap, sizeof(*ns));

	if (!ns)
		return WT_ENOMEM;
	for (i = 0; i < h->cap; i++) {
		size_t j;
		if (!h->slots[i].id1)
			continue;
		for (j = h->slots[i].hash & (ncap - 1); ns[j].id1; j = (j + 1) & (ncap - 1))
			;
		ns[j] = h->slots[i];
	}
	free(h->slots);
	h->slots = ns;
	h->cap = ncap;
	return 0;
}

void wt_hindex_free(wt_hindex *h)
{
	free(h->slots);
	h->slots = NULL;
	h->cap = h->n = 0;
}
