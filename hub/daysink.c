/*
 * daysink.c — per-day row buffers cut into bounded blocks (see
 * daysink.h). Batches touch few days, so a linear scan is enough.
 */
#include "daysink.h"

#include <stdlib.h>
#include <string.h>

#include "err.h"

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

int hub_dayrows_row_done(const hub_daysink *s, hub_dayrows *dr)
{
	dr->nrows++;
	if (!s->block_rows || dr->nrows % s->block_rows)
		return 0;
	if (dr->ncuts == dr->capcuts) {
		size_t nc = dr->capcuts ? dr->capcuts * 2 : 8;
		size_t *n = realloc(dr->cuts, nc * sizeof(*n));
		if (!n) {
			dr->oom = 1;
			return WT_ENOMEM;
		}
		dr->cuts = n;
		dr->capcuts = nc;
	}
	dr->cuts[dr->ncuts++] = dr->rows.len;
	return 0;
}

void hub_dayrows_block(const hub_dayrows *dr, size_t b, size_t *off, size_t *len)
{
	size_t start = b ? dr->cuts[b - 1] : 0, end = b < dr->ncuts ? dr->cuts[b] : dr->rows.len;

	*off = start;
	*len = end - start;
}

void hub_dayrows_drop_blocks(hub_dayrows *dr)
{
	size_t end;

	if (!dr->ncuts)
		return;
	end = dr->cuts[dr->ncuts - 1];
	memmove(dr->rows.data, dr->rows.data + end, dr->rows.len - end);
	dr->rows.len -= end;
	dr->ncuts = 0;
}

void hub_daysink_free(hub_daysink *s)
{
	size_t i;

	for (i = 0; i < s->n; i++) {
		wt_buf_free(&s->d[i].rows);
		free(s->d[i].cuts);
	}
	free(s->d);
	memset(s, 0, sizeof(*s));
}
