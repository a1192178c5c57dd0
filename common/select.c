/*
 * select.c — wt_select_top (select.h): Lomuto-partition quickselect with
 * the middle element as the pivot, kept at the end of the range while the
 * range is partitioned, so no element is copied out.
 */
#include "select.h"

#include <stdint.h>
#include <string.h>

static void swap_bytes(unsigned char *a, unsigned char *b, size_t size)
{
	unsigned char t[64];

	while (size) {
		size_t k = size < sizeof(t) ? size : sizeof(t);

		memcpy(t, a, k);
		memcpy(a, b, k);
		memcpy(b, t, k);
		a += k;
		b += k;
		size -= k;
	}
}

void wt_select_top(void *base, size_t n, size_t size, size_t top,
		   int (*cmp)(const void *, const void *, void *), void *ctx)
{
	unsigned char *e = base;
	size_t lo = 0, hi = n; /* the boundary `top` lies in [lo, hi) */

	if (top >= n)
		return;
	while (hi - lo > 1) {
		size_t i, st = lo, mid = lo + (hi - lo) / 2;
		unsigned char *pivot = e + (hi - 1) * size;

		if (mid != hi - 1)
			swap_bytes(e + mid * size, pivot, size);
		for (i = lo; i < hi - 1; i++)
			if (cmp(e + i * size, pivot, ctx) < 0) {
				if (i != st)
					swap_bytes(e + i * size, e + st * size, size);
				st++;
			}
		if (st != hi - 1)
			swap_bytes(e + st * size, pivot, size);
		if (st == top || st + 1 == top)
			return;
		if (st > top)
			hi = st;
		else
			lo = st + 1;
	}
}
