/*
 * test_lru.c — common/lru.h: pushing puts an entry at the head, touching
 * moves it there, unlinking from the head, middle and tail keeps both
 * directions of the list whole, and the tail is the least recently used
 * (the order hub/viewcache.c and hub/stacklru.c evict in).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "lru.h"

typedef struct item {
	int v;
	wt_lru_node lru; /* not first: wt_lru_entry must subtract the offset */
} item;

/* The list's values head to tail into out (at most max); checks that the
 * backward links mirror the forward ones. Returns the count. */
static size_t order(const wt_lru *l, int *out, size_t max)
{
	const wt_lru_node *n, *last = NULL;
	size_t k = 0;

	for (n = l->head; n; last = n, n = n->next) {
		assert_ptr_equal(n->prev, last);
		assert_true(k < max);
		out[k++] = wt_lru_entry(n, item, lru)->v;
	}
	assert_ptr_equal(l->tail, last);
	return k;
}

static void push_touch_unlink(void **state)
{
	item it[4] = {{0, {0}}, {1, {0}}, {2, {0}}, {3, {0}}};
	wt_lru l = {0};
	int o[4];
	size_t i;

	(void)state;
	assert_int_equal(order(&l, o, 4), 0);
	for (i = 0; i < 4; i++)
		wt_lru_push(&l, &it[i].lru);
	assert_int_equal(order(&l, o, 4), 4);
	assert_int_equal(o[0], 3); assert_int_equal(o[1], 2);
	assert_int_equal(o[2], 1); assert_int_equal(o[3], 0);

	wt_lru_touch(&l, &it[1].lru); /* middle → head */
	wt_lru_touch(&l, &it[0].lru); /* tail → head */
	wt_lru_touch(&l, &it[0].lru); /* head stays */
	assert_int_equal(order(&l, o, 4), 4);
	assert_int_equal(o[0], 0); assert_int_equal(o[1], 1);
	assert_int_equal(o[2], 3); assert_int_equal(o[3], 2);
	assert_int_equal(wt_lru_entry(l.tail, item, lru)->v, 2);

	wt_lru_unlink(&l, &it[1].lru); /* middle */
	assert_null(it[1].lru.prev);
	assert_null(it[1].lru.next);
	wt_lru_unlink(&l, &it[2].lru); /* tail */
	assert_int_equal(order(&l, o, 4), 2);
	assert_int_equal(o[0], 0); assert_int_equal(o[1], 3);
	wt_lru_unlink(&l, &it[0].lru); /* head */
	assert_int_equal(order(&l, o, 4), 1);
	assert_int_equal(o[0], 3);
	wt_lru_unlink(&l, &it[3].lru); /* the last one */
	assert_null(l.head);
	assert_null(l.tail);
	wt_lru_push(&l, &it[2].lru); /* reusable after emptying */
	assert_int_equal(order(&l, o, 4), 1);
	assert_int_equal(o[0], 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(push_touch_unlink),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
