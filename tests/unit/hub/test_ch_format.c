/*
 * test_ch_format.c — SQL quoting, TabSeparated escaping and RowBinary
 * encoding of hub/ch_format.c, against byte strings written out by hand
 * from the ClickHouse format documentation.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "hub/ch_format.h"

static void assert_buf(const wt_buf *b, const void *want, size_t n)
{
	assert_int_equal(b->len, n);
	assert_memory_equal(b->data, want, n);
}

static void test_sql_quote(void **state)
{
	wt_buf b = WT_BUF_INIT;
	(void)state;
	hub_sql_quote(&b, "it's a\\b\n\tc");
	assert_buf(&b, "'it\\'s a\\\\b\\n\\tc'", 17);
	wt_buf_reset(&b);
	hub_sql_quote_n(&b, "x\0y", 3);
	assert_buf(&b, "'x\\0y'", 6);
	wt_buf_reset(&b);
	hub_sql_quote(&b, "'); DROP TABLE t; --");
	assert_buf(&b, "'\\'); DROP TABLE t; --'", 23);
	wt_buf_free(&b);
}

static void test_sql_date_cond(void **state)
{
	wt_buf b = WT_BUF_INIT;
	(void)state;
	assert_int_equal(hub_sql_date_cond(&b, ">=", 86400LL * 1000000000 * 20000 + 5), 0);
	/* 2105-12-31 is the last day a literal may name; later days add nothing */
	assert_int_equal(hub_sql_date_cond(&b, "<=", 86400LL * 1000000000 * 49672 + 86399999999999LL), 0);
	assert_int_equal(hub_sql_date_cond(&b, "<=", 86400LL * 1000000000 * 49673), 0);
	assert_int_equal(hub_sql_date_cond(&b, "<=", 5000000000LL * 1000000000), 0);
	assert_int_equal(hub_sql_date_cond(&b, ">=", -1), 0);
	assert_int_equal(wt_buf_putc(&b, '\0'), 0);
	assert_string_equal((const char *)b.data,
			    " AND date >= '2024-10-04' AND date <= '2105-12-31' AND date >= '1970-01-01'");
	wt_buf_free(&b);
}

static void test_tsv_roundtrip(void **state)
{
	const char raw[] = "a\tb\nc\\d'e\r\b\f";
	wt_buf b = WT_BUF_INIT;
	char tmp[64];
	size_t n;
	(void)state;
	hub_tsv_escape(&b, raw, sizeof(raw) - 1);
	assert_buf(&b, "a\\tb\\nc\\\\d\\'e\\r\\b\\f", 19);
	memcpy(tmp, b.data, b.len);
	n = hub_tsv_unescape(tmp, b.len);
	assert_int_equal(n, sizeof(raw) - 1);
	assert_memory_equal(tmp, raw, n);
	wt_buf_free(&b);
}

typedef struct rows {
	int n;
	char got[4][3][32];
	size_t nf[4];
} rows;

static int row_cb(void *ctx, char **f, size_t n)
{
	rows *r = ctx;
	size_t i;
	for (i = 0; i < n && i < 3; i++)
		snprintf(r->got[r->n][i], 32, "%s", f[i]);
	r->nf[r->n++] = n;
	return 0;
}

static void test_tsv_each(void **state)
{
	char data[] = "a\tb\\tx\tc\nd\te\n\n";
	rows r;
	(void)state;
	memset(&r, 0, sizeof(r));
	hub_tsv_each(data, strlen(data), 3, row_cb, &r);
	assert_int_equal(r.n, 3);
	assert_int_equal(r.nf[0], 3);
	assert_string_equal(r.got[0][1], "b\tx");
	assert_string_equal(r.got[0][2], "c");
	assert_int_equal(r.nf[1], 2);
	assert_string_equal(r.got[1][1], "e");
	assert_int_equal(r.nf[2], 1); /* the empty last line is one empty field */
	assert_string_equal(r.got[2][0], "");
}

static void test_rowbinary_write(void **state)
{
	wt_buf b = WT_BUF_INIT;
	(void)state;
	hub_rb_varuint(&b, 0);
	hub_rb_varuint(&b, 127);
	hub_rb_varuint(&b, 128);
	hub_rb_varuint(&b, 300);
	assert_buf(&b, "\x00\x7f\x80\x01\xac\x02", 6);
	wt_buf_reset(&b);
	hub_rb_u16(&b, 19675); /* Date 2023-11-14 */
	hub_rb_u64(&b, 0x0102030405060708ULL);
	hub_rb_i64(&b, -2);
	assert_buf(&b, "\xdb\x4c" "\x08\x07\x06\x05\x04\x03\x02\x01" "\xfe\xff\xff\xff\xff\xff\xff\xff", 18);
	wt_buf_reset(&b);
	hub_rb_cstr(&b, "héllo");
	assert_buf(&b, "\x06h\xc3\xa9llo", 7);
	wt_buf_free(&b);
}

static void test_rowbinary_read(void **state)
{
	const uint8_t in[] = {0x2a, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
			      0x02, 0x01, 'a', 0x02, 'b', 'c', 0x05, 'x'};
	hub_rb_reader r;
	uint64_t u, n;
	int64_t i;
	const char *s;
	size_t sl;
	(void)state;
	hub_rb_reader_init(&r, in, sizeof(in));
	assert_int_equal(hub_rb_read_u64(&r, &u), 0);
	assert_int_equal(u, 42);
	assert_int_equal(hub_rb_read_i64(&r, &i), 0);
	assert_int_equal(i, -1);
	assert_int_equal(hub_rb_read_varuint(&r, &n), 0);
	assert_int_equal(n, 2);
	assert_int_equal(hub_rb_read_str(&r, &s, &sl), 0);
	assert_int_equal(sl, 1);
	assert_memory_equal(s, "a", 1);
	assert_int_equal(hub_rb_read_str(&r, &s, &sl), 0);
	assert_memory_equal(s, "bc", 2);
	/* length 5 but one byte left: truncated, sticky */
	assert_int_not_equal(hub_rb_read_str(&r, &s, &sl), 0);
	assert_true(r.bad);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sql_quote),
		cmocka_unit_test(test_sql_date_cond),
		cmocka_unit_test(test_tsv_roundtrip),
		cmocka_unit_test(test_tsv_each),
		cmocka_unit_test(test_rowbinary_write),
		cmocka_unit_test(test_rowbinary_read),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
