/*
 * ch_format.h — the byte-level encodings the hub speaks to ClickHouse:
 * SQL string literals, TabSeparated escaping/unescaping, and RowBinary
 * writing (inserts) and reading (query results). Pure functions, no I/O;
 * unit-tested in tests/unit/hub/test_ch_format.c.
 *
 * ClickHouse 18.16 has no query parameters ({name:String}), so every value
 * that reaches SQL text goes through hub_sql_quote().
 */
#ifndef HUB_CH_FORMAT_H
#define HUB_CH_FORMAT_H

#include <stddef.h>
#include <stdint.h>

#include "buf.h"

/* Append s as a single-quoted SQL string literal ('a\'b\\c'); control bytes
 * are escaped (\n, \t, \0 ...). 0 or WT_ENOMEM. */
/* ns since the epoch → a ClickHouse Date literal YYYY-MM-DD, clamped to
 * what the Date type holds (1970-01-01 … 2149-06-06): a later day would
 * wrap around in ClickHouse and select nothing */
void hub_ch_date(int64_t ns, char out[11]);
/* Append " AND date <op> 'YYYY-MM-DD'" (op ">=" or "<=") for the day of ns,
 * or nothing when that day is past 2105-12-31: ClickHouse 18.16 parses a
 * later date literal as 1970-01-01 (its date tables end there), so such a
 * bound would select nothing (<=) or everything (>=). The callers' time_ns
 * conditions are the exact filter; the date bound only prunes partitions.
 * 0 or WT_ENOMEM. */
int hub_sql_date_cond(wt_buf *w, const char *op, int64_t ns);
int hub_sql_quote(wt_buf *b, const char *s);
int hub_sql_quote_n(wt_buf *b, const char *s, size_t n);

/* Append s TabSeparated-escaped (\\ \t \n \r \b \f \0 and \'). */
int hub_tsv_escape(wt_buf *b, const char *s, size_t n);
/* Unescape one TabSeparated field in place; returns the new length. */
size_t hub_tsv_unescape(char *s, size_t n);

/* Split a TabSeparated result into rows and fields, in place. Calls
 * fn(ctx, fields, nfields) for every row; fields are unescaped and
 * NUL-terminated. At most max_fields per row (extra fields are joined into
 * the last). Returns 0 or the first nonzero fn result. */
int hub_tsv_each(char *data, size_t len, size_t max_fields,
		 int (*fn)(void *ctx, char **fields, size_t n), void *ctx);

/* RowBinary writers (little-endian; strings = varuint length + bytes;
 * arrays = varuint count + elements; Date = UInt16 days since epoch). */
int hub_rb_varuint(wt_buf *b, uint64_t v);
int hub_rb_u8(wt_buf *b, uint8_t v);
int hub_rb_u16(wt_buf *b, uint16_t v);
int hub_rb_u32(wt_buf *b, uint32_t v);
int hub_rb_u64(wt_buf *b, uint64_t v);
int hub_rb_i64(wt_buf *b, int64_t v);
int hub_rb_str(wt_buf *b, const char *s, size_t n);
int hub_rb_cstr(wt_buf *b, const char *s);

/* RowBinary reader over a buffer it does not own. Every read returns 0 or
 * WT_EINVAL when the data ends early (sticky: r->bad). */
typedef struct hub_rb_reader {
	const uint8_t *p, *end;
	int bad;
} hub_rb_reader;

void hub_rb_reader_init(hub_rb_reader *r, const void *data, size_t len);
int hub_rb_read_varuint(hub_rb_reader *r, uint64_t *v);
int hub_rb_read_u64(hub_rb_reader *r, uint64_t *v);
int hub_rb_read_i64(hub_rb_reader *r, int64_t *v);
/* *s points into the buffer (not NUL-terminated), *n its length. */
int hub_rb_read_str(hub_rb_reader *r, const char **s, size_t *n);
static inline int hub_rb_eof(const hub_rb_reader *r) { return r->p >= r->end; }

#endif
