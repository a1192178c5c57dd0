/*
 * daysink.c — per-day row buffers for atomic per-partition inserts
 * (see daysink.h). Batches touch few days, so a linear scan is enough.
 */
#include "daysink.h"

#include <stdlib.h>
#include <string.h>

hub_dayrows *hub_daysink_get(hub_daysink *s, uint16_t day)
{
	size_t i;

	for (i = 0; i < s->n; i++)
		if (s->d[i].day == day)
			return &s->d[i];
	if (s->n == s->cap) {
		size_t nc = s->cap ? s->cap * 2 : 4;
		hub_dayrows *nd = realloc(s->d, nc * sizeof(*nd));
		if (!nd)
			return NULL;
		s->d = nd;
		s->cap = nc;
	}
	memset(&s->d[s->n], 0, sizeof(s->d[0]));
	s->d[s->n].day = day;
	return &s->d[s->n++];
}

void hub_daysink_free(hub_daysink *s)
{
	size_t i;

	for (i = 0; i < s->n; i++)
		wt_buf_free(&s->d[i].rows);
	free(s->d);
	memset(s, 0, sizeof(*s));
}
