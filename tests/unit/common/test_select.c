/*
 * test_select.c — wt_select_top (common/select.h): after it, the first
 * `top` elements are exactly those a full sort puts first, for random
 * arrays with ties broken by a total order, element sizes of 4 and 72
 * bytes (larger than the swap buffer), every top from 0 to n.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "common/select.h"

typedef struct big {
	uint32_t key, id;
	char pad[64];
} big;

static int cmp_u32(const void *a, const void *b, void *ctx)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	(void)ctx;
	return x < y ? -1 : x > y;
}

static int cmp_big(const void *a, const void *b, void *ctx)
{
	const big *x = a, *y = b;
	int *calls = ctx;

	(*calls)++;
	if (x->key != y->key)
		return x->key > y->key ? -1 : 1; /* descending by key */
	return x->id < y->id ? -1 : x->id > y->id;
}

static int cmp_big_q(const void *a, const void *b)
{
	int calls = 0;
	return cmp_big(a, b, &calls);
}

static int cmp_u32_q(const void *a, const void *b)
{
	return cmp_u32(a, b, NULL);
}

static void test_u32_matches_sort(void **state)
{
	uint32_t a[97], sorted[97], got[97];
	unsigned seed = 7;

	(void)state;
	for (size_t n = 0; n <= 97; n += 8) {
		for (size_t i = 0; i < n; i++)
			a[i] = (uint32_t)i * 2654435761u ^ (uint32_t)rand_r(&seed);
		memcpy(sorted, a, n * sizeof(*a));
		qsort(sorted, n, sizeof(*a), cmp_u32_q);
		for (size_t top = 0; top <= n; top++) {
			memcpy(got, a, n * sizeof(*a));
			wt_select_top(got, n, sizeof(*got), top, cmp_u32, NULL);
			qsort(got, top, sizeof(*got), cmp_u32_q);
			assert_memory_equal(got, sorted, top * sizeof(*got));
			/* nothing lost: the whole array is a permutation */
			qsort(got, n, sizeof(*got), cmp_u32_q);
			assert_memory_equal(got, sorted, n * sizeof(*got));
		}
	}
}

static void test_big_elements_with_ties(void **state)
{
	enum { N = 300 };
	big *a = calloc(N, sizeof(*a)), *sorted = calloc(N, sizeof(*a)), *got = calloc(N, sizeof(*a));
	unsigned seed = 11;
	int calls = 0;

	(void)state;
	assert_non_null(a);
	assert_non_null(sorted);
	assert_non_null(got);
	for (size_t i = 0; i < N; i++) {
		a[i].key = (uint32_t)(rand_r(&seed) % 10); /* many ties */
		a[i].id = (uint32_t)i;
		memset(a[i].pad, (int)(i & 0xff), sizeof(a[i].pad));
	}
	memcpy(sorted, a, N * sizeof(*a));
	qsort(sorted, N, sizeof(*a), cmp_big_q);
	for (size_t top = 0; top <= N; top += 37) {
		memcpy(got, a, N * sizeof(*a));
		wt_select_top(got, N, sizeof(*got), top, cmp_big, &calls);
		qsort(got, top, sizeof(*got), cmp_big_q);
		/* whole elements moved (padding included) */
		assert_memory_equal(got, sorted, top * sizeof(*got));
	}
	assert_true(calls > 0);
	free(a);
	free(sorted);
	free(got);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_u32_matches_sort),
		cmocka_unit_test(test_big_elements_with_ties),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
