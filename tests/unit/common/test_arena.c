/*
 * test_arena.c — the per-request arena of common/arena.c: alignment,
 * large allocations, the byte limit, destructors (order, on clear, on OOM
 * of the record) and reuse after clear.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "arena.h"
#include "err.h"

static int order[8], norder;

static void record(void *p)
{
	order[norder++] = *(int *)p;
}

static void small_and_aligned(void **state)
{
	wt_arena a;
	char *s;

	(void)state;
	wt_arena_init(&a, 0);
	for (int i = 1; i < 2000; i++) {
		void *p = wt_arena_alloc(&a, (size_t)(i % 37) + 1);
		assert_non_null(p);
		assert_int_equal((uintptr_t)p % _Alignof(max_align_t), 0);
		memset(p, 0xab, (size_t)(i % 37) + 1); /* ASan: writable */
	}
	s = wt_arena_printf(&a, "%s-%d", "route", 42);
	assert_string_equal(s, "route-42");
	assert_string_equal(wt_arena_strdup(&a, "x/y"), "x/y");
	assert_null(wt_arena_strdup(&a, NULL));
	wt_arena_clear(&a);
	assert_null(a.chunks);
	assert_int_equal(a.total, 0);
}

static void large_allocations(void **state)
{
	wt_arena a;
	unsigned char *big, *small;

	(void)state;
	wt_arena_init(&a, 0);
	small = wt_arena_alloc(&a, 16);
	big = wt_arena_calloc(&a, 1, 1 << 20);
	assert_non_null(big);
	assert_int_equal(big[(1 << 20) - 1], 0);
	/* the big one has its own chunk: the small chunk goes on being used */
	assert_ptr_equal(wt_arena_alloc(&a, 16), small + 16);
	assert_null(wt_arena_calloc(&a, SIZE_MAX / 2, 4)); /* overflow */
	wt_arena_clear(&a);
}

static void limit(void **state)
{
	wt_arena a;

	(void)state;
	wt_arena_init(&a, 64 << 10);
	assert_non_null(wt_arena_alloc(&a, 32 << 10));
	assert_null(wt_arena_alloc(&a, 40 << 10));  /* 72 KiB > 64 KiB */
	assert_non_null(wt_arena_alloc(&a, 100));    /* small ones still fit */
	wt_arena_clear(&a);
	assert_int_equal(a.limit, 64 << 10);         /* kept for reuse */
	assert_non_null(wt_arena_alloc(&a, 40 << 10));
	wt_arena_clear(&a);
}

static void destructors(void **state)
{
	wt_arena a;
	int one = 1, two = 2, three = 3;
	wt_buf *b;

	(void)state;
	norder = 0;
	wt_arena_init(&a, 0);
	assert_int_equal(wt_arena_defer(&a, record, &one), 0);
	assert_int_equal(wt_arena_defer(&a, record, &two), 0);
	b = wt_arena_buf(&a);
	assert_non_null(b);
	assert_int_equal(wt_buf_puts(b, "owned by the arena"), 0); /* freed at clear (ASan/LSan) */
	assert_int_equal(wt_arena_defer(&a, record, &three), 0);
	assert_int_equal(norder, 0);
	wt_arena_clear(&a);
	assert_int_equal(norder, 3);
	assert_int_equal(order[0], 3);  /* newest first */
	assert_int_equal(order[1], 2);
	assert_int_equal(order[2], 1);
	assert_null(a.dtors);
	/* no room for the record: the destructor runs at once, the caller learns it */
	norder = 0;
	wt_arena_init(&a, 8);
	assert_int_equal(wt_arena_defer(&a, record, &one), WT_ENOMEM);
	assert_int_equal(norder, 1);
	wt_arena_clear(&a);
	assert_int_equal(norder, 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(small_and_aligned),
		cmocka_unit_test(large_allocations),
		cmocka_unit_test(limit),
		cmocka_unit_test(destructors),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
