/*
 * ch_format.c — SQL literal quoting, TabSeparated escaping and RowBinary
 * encoding/decoding for the ClickHouse HTTP interface (see ch_format.h).
 */
#include "ch_format.h"

#include <string.h>
#include <time.h>

#include "err.h"

static const char *esc_for(unsigned char c)
{
	switch (c) {
	case '\\': return "\\\\";
	case '\'': return "\\'";
	case '\t': return "\\t";
	case '\n': return "\\n";
	case '\r': return "\\r";
	case '\b': return "\\b";
	case '\f': return "\\f";
	case '\0': return "\\0";
	default: return NULL;
	}
}

static int escape_into(wt_buf *b, const char *s, size_t n)
{
	size_t i, run = 0;

	if (wt_buf_reserve(b, n + 2))
		return WT_ENOMEM;
	for (i = 0; i < n; i++) {
		const char *e = esc_for((unsigned char)s[i]);
		if (!e)
			continue;
		if (wt_buf_append(b, s + run, i - run) || wt_buf_puts(b, e))
			return WT_ENOMEM;
		run = i + 1;
	}
	return wt_buf_append(b, s + run, n - run);
}

int hub_sql_quote_n(wt_buf *b, const char *s, size_t n)
{
	if (wt_buf_putc(b, '\'') || escape_into(b, s, n) || wt_buf_putc(b, '\''))
		return WT_ENOMEM;
	return 0;
}

int hub_sql_quote(wt_buf *b, const char *s)
{
	return hub_sql_quote_n(b, s ? s : "", s ? strlen(s) : 0);
}

int hub_tsv_escape(wt_buf *b, const char *s, size_t n)
{
	return escape_into(b, s, n);
}

size_t hub_tsv_unescape(char *s, size_t n)
{
	size_t i, o = 0;

	for (i = 0; i < n; i++) {
		char c = s[i];
		if (c == '\\' && i + 1 < n) {
			char d = s[++i];
			switch (d) {
			case 't': c = '\t'; break;
			case 'n': c = '\n'; break;
			case 'r': c = '\r'; break;
			case 'b': c = '\b'; break;
			case 'f': c = '\f'; break;
			case '0': c = '\0'; break;
			default: c = d; break; /* \\ \' and unknown escapes */
			}
		}
		s[o++] = c;
	}
	return o;
}

int hub_tsv_each(char *data, size_t len, size_t max_fields,
		 int (*fn)(void *ctx, char **fields, size_t n), void *ctx)
{
	char *fields[64];
	char *p = data, *end = data + len;

	if (max_fields == 0 || max_fields > 64)
		max_fields = 64;
	while (p < end) {
		char *eol = memchr(p, '\n', (size_t)(end - p));
		char *line_end = eol ? eol : end;
		size_t nf = 0;
		char *f = p;
		int rc;

		for (;;) {
			char *tab = nf + 1 < max_fields ? memchr(f, '\t', (size_t)(line_end - f)) : NULL;
			char *fe = tab ? tab : line_end;
			size_t n = hub_tsv_unescape(f, (size_t)(fe - f));
			f[n] = '\0';
			fields[nf++] = f;
			if (!tab)
				break;
			f = tab + 1;
		}
		rc = fn(ctx, fields, nf);
		if (rc)
			return rc;
		if (!eol)
			break;
		p = eol + 1;
	}
	return 0;
}

int hub_rb_varuint(wt_buf *b, uint64_t v)
{
	uint8_t tmp[10];
	size_t n = 0;

	do {
		uint8_t byte = v & 0x7f;
		v >>= 7;
		if (v)
			byte |= 0x80;
		tmp[n++] = byte;
	} while (v);
	return wt_buf_append(b, tmp, n);
}

static int put_le(wt_buf *b, uint64_t v, size_t n)
{
	uint8_t tmp[8];
	size_t i;

	for (i = 0; i < n; i++)
		tmp[i] = (uint8_t)(v >> (8 * i));
	return wt_buf_append(b, tmp, n);
}

int hub_rb_u8(wt_buf *b, uint8_t v) { return put_le(b, v, 1); }
int hub_rb_u16(wt_buf *b, uint16_t v) { return put_le(b, v, 2); }
int hub_rb_u32(wt_buf *b, uint32_t v) { return put_le(b, v, 4); }
int hub_rb_u64(wt_buf *b, uint64_t v) { return put_le(b, v, 8); }
int hub_rb_i64(wt_buf *b, int64_t v) { return put_le(b, (uint64_t)v, 8); }

int hub_rb_str(wt_buf *b, const char *s, size_t n)
{
	if (hub_rb_varuint(b, n))
		return WT_ENOMEM;
	return wt_buf_append(b, s, n);
}

int hub_rb_cstr(wt_buf *b, const char *s)
{
	return hub_rb_str(b, s ? s : "", s ? strlen(s) : 0);
}

void hub_rb_reader_init(hub_rb_reader *r, const void *data, size_t len)
{
	r->p = data;
	r->end = r->p + len;
	r->bad = 0;
}

static int fail(hub_rb_reader *r)
{
	r->bad = 1;
	return WT_EINVAL;
}

int hub_rb_read_varuint(hub_rb_reader *r, uint64_t *v)
{
	uint64_t x = 0;
	unsigned shift = 0;

	while (r->p < r->end && shift < 64) {
		uint8_t byte = *r->p++;
		x |= (uint64_t)(byte & 0x7f) << shift;
		if (!(byte & 0x80)) {
			*v = x;
			return 0;
		}
		shift += 7;
	}
	return fail(r);
}

int hub_rb_read_u64(hub_rb_reader *r, uint64_t *v)
{
	uint64_t x = 0;
	int i;

	if (r->end - r->p < 8)
		return fail(r);
	for (i = 7; i >= 0; i--)
		x = (x << 8) | r->p[i];
	r->p += 8;
	*v = x;
	return 0;
}

int hub_rb_read_i64(hub_rb_reader *r, int64_t *v)
{
	uint64_t u;
	int rc = hub_rb_read_u64(r, &u);
	if (!rc)
		*v = (int64_t)u;
	return rc;
}

int hub_rb_read_str(hub_rb_reader *r, const char **s, size_t *n)
{
	uint64_t len;

	if (hub_rb_read_varuint(r, &len))
		return WT_EINVAL;
	if ((uint64_t)(r->end - r->p) < len)
		return fail(r);
	*s = (const char *)r->p;
	*n = (size_t)len;
	r->p += len;
	return 0;
}

void hub_ch_date(int64_t ns, char out[11])
{
	/* 2149-06-06 is day 65535 of the Date type */
	const int64_t max_s = 65535LL * 86400;
	int64_t sec = ns / 1000000000LL;
	struct tm tm;
	time_t t;

	if (sec < 0)
		sec = 0;
	if (sec > max_s)
		sec = max_s;
	t = (time_t)sec;
	gmtime_r(&t, &tm);
	strftime(out, 11, "%Y-%m-%d", &tm);
}

/* 2105-12-31: the last day ClickHouse 18.16 reads from a date literal */
#define LAST_LITERAL_DAY 49672LL

int hub_sql_date_cond(wt_buf *w, const char *op, int64_t ns)
{
	char d[11];

	if (ns / 1000000000LL / 86400 > LAST_LITERAL_DAY)
		return w->oom ? WT_ENOMEM : 0;
	hub_ch_date(ns, d);
	return wt_buf_printf(w, " AND date %s '%s'", op, d);
}
