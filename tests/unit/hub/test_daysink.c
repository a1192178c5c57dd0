/*
 * test_daysink.c — hub/daysink.c: rows of one day cut into blocks of at
 * most block_rows rows (the replication inserts' bounded blocks), block
 * offsets that cover the buffer exactly once, days kept apart, and the
 * "no limit" case, and dropping inserted blocks (a live replication
 * batch inserts each block as it fills). Rows are counted by hand.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "hub/daysink.h"

/* Append one row of n bytes (each byte = row number) to day. */
static void row(hub_daysink *s, uint16_t day, unsigned no, size_t n)
{
	hub_dayrows *dr = hub_daysink_get(s, day);
	assert_non_null(dr);
	for (size_t i = 0; i < n; i++)
		assert_int_equal(wt_buf_putc(&dr->rows, (char)no), 0);
	assert_int_equal(hub_dayrows_row_done(s, dr), 0);
}

static void test_blocks(void **state)
{
	hub_daysink s = {0};
	size_t off, len, b, total = 0;
	(void)state;

	s.block_rows = 3;
	/* 7 rows of sizes 1..7 on day 100, 2 rows on day 101, interleaved */
	for (unsigned i = 1; i <= 7; i++) {
		row(&s, 100, i, i);
		if (i == 2 || i == 5)
			row(&s, 101, 50 + i, 4);
	}
	assert_int_equal(s.n, 2);
	hub_dayrows *d = hub_daysink_get(&s, 100);
	assert_int_equal(d->nrows, 7);
	assert_int_equal(d->ncuts, 2); /* after rows 3 and 6 */
	hub_dayrows_block(d, 0, &off, &len);
	assert_int_equal(off, 0);
	assert_int_equal(len, 1 + 2 + 3);
	hub_dayrows_block(d, 1, &off, &len);
	assert_int_equal(off, 6);
	assert_int_equal(len, 4 + 5 + 6);
	assert_int_equal(d->rows.data[off], 4); /* block 1 starts with row 4 */
	hub_dayrows_block(d, 2, &off, &len);
	assert_int_equal(off, 21);
	assert_int_equal(len, 7);
	for (b = 0; b <= d->ncuts; b++) {
		hub_dayrows_block(d, b, &off, &len);
		total += len;
	}
	assert_int_equal(total, d->rows.len);
	/* a day with fewer rows than a block is one block */
	d = hub_daysink_get(&s, 101);
	assert_int_equal(d->ncuts, 0);
	hub_dayrows_block(d, 0, &off, &len);
	assert_int_equal(off, 0);
	assert_int_equal(len, 8);
	hub_daysink_free(&s);
}

static void test_exact_multiple_and_unbounded(void **state)
{
	hub_daysink s = {0};
	size_t off, len;
	(void)state;

	s.block_rows = 2;
	for (unsigned i = 0; i < 4; i++)
		row(&s, 7, i, 1);
	hub_dayrows *d = hub_daysink_get(&s, 7);
	assert_int_equal(d->ncuts, 2);
	hub_dayrows_block(d, 2, &off, &len); /* the last block is empty */
	assert_int_equal(len, 0);
	hub_daysink_free(&s);

	s.block_rows = 0; /* one block per day */
	for (unsigned i = 0; i < 5; i++)
		row(&s, 7, i, 1);
	d = hub_daysink_get(&s, 7);
	assert_int_equal(d->ncuts, 0);
	hub_dayrows_block(d, 0, &off, &len);
	assert_int_equal(len, 5);
	hub_daysink_free(&s);
}

/* Dropping the complete blocks keeps the rest as block 0, and later cuts
 * stay on row boundaries of the shortened buffer. */
static void test_drop_blocks(void **state)
{
	hub_daysink s = {0};
	size_t off, len;
	(void)state;

	s.block_rows = 2;
	for (unsigned i = 1; i <= 5; i++)
		row(&s, 9, i, i); /* 1, 2 | 3, 4 | 5 */
	hub_dayrows *d = hub_daysink_get(&s, 9);
	assert_int_equal(d->ncuts, 2);
	hub_dayrows_drop_blocks(d);
	assert_int_equal(d->ncuts, 0);
	assert_int_equal(d->rows.len, 5);
	assert_int_equal(d->rows.data[0], 5);
	hub_dayrows_drop_blocks(d); /* nothing complete: unchanged */
	assert_int_equal(d->rows.len, 5);
	row(&s, 9, 6, 6); /* block ends after row 6 */
	assert_int_equal(d->ncuts, 1);
	hub_dayrows_block(d, 0, &off, &len);
	assert_int_equal(off, 0);
	assert_int_equal(len, 5 + 6);
	assert_int_equal(d->rows.data[len - 1], 6);
	hub_dayrows_block(d, 1, &off, &len);
	assert_int_equal(len, 0);
	hub_dayrows_drop_blocks(d);
	assert_int_equal(d->rows.len, 0);
	assert_int_equal(d->nrows, 6);
	hub_daysink_free(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_blocks),
		cmocka_unit_test(test_exact_multiple_and_unbounded),
		cmocka_unit_test(test_drop_blocks),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
