/*
 * select.h — partial ordering for "the first k of n under an order" (the
 * views' top rows: common/flame.c's function tables, hub/http_diff.c's
 * changed functions): move the k first elements to the front, in any
 * order, in expected O(n), so that only those k are then sorted.
 */
#ifndef WT_SELECT_H
#define WT_SELECT_H

#include <stddef.h>

/* Quickselect over base[0..n) of elements of `size` bytes: afterwards the
 * `top` first elements under cmp (a total order; ctx passed through) are
 * base[0..top), in any order. top >= n: nothing moves. */
void wt_select_top(void *base, size_t n, size_t size, size_t top,
		   int (*cmp)(const void *, const void *, void *), void *ctx);

#endif
