/*
 * buf.c — growable byte buffer (see buf.h).
 */
#include "buf.h"
#include "err.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int wt_buf_reserve(wt_buf *b, size_t extra)
{
	size_t need, cap;
	uint8_t *d;

	if (b->oom)
		return WT_ENOMEM;
	if (extra > SIZE_MAX - b->len - 1)
		goto fail;
	need = b->len + extra + 1; /* +1 keeps room for a NUL terminator */
	if (need <= b->cap)
		return 0;
	cap = b->cap ? b->cap : 256;
	while (cap < need)
		cap = cap > SIZE_MAX / 2 ? need : cap * 2;
	d = realloc(b->data, cap);
	if (!d)
		goto fail;
	b->data = d;
	b->cap = cap;
	return 0;
fail:
	b->oom = 1;
	return WT_ENOMEM;
}

int wt_buf_append(wt_buf *b, const void *p, size_t n)
{
	if (wt_buf_reserve(b, n))
		return WT_ENOMEM;
	if (n)
		memcpy(b->data + b->len, p, n);
	b->len += n;
	b->data[b->len] = 0;
	return 0;
}

int wt_buf_puts(wt_buf *b, const char *s)
{
	return wt_buf_append(b, s, strlen(s));
}

int wt_buf_putc(wt_buf *b, char c)
{
	return wt_buf_append(b, &c, 1);
}

int wt_buf_printf(wt_buf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0 || wt_buf_reserve(b, (size_t)n))
		return WT_ENOMEM;
	va_start(ap, fmt);
	vsnprintf((char *)b->data + b->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
	return 0;
}

void wt_buf_reset(wt_buf *b)
{
	b->len = 0;
	if (b->data)
		b->data[0] = 0;
}

void wt_buf_free(wt_buf *b)
{
	free(b->data);
	b->data = NULL;
	b->len = b->cap = 0;
	b->oom = 0;
}

uint8_t *wt_buf_steal(wt_buf *b, size_t *len)
{
	uint8_t *d = b->data;

	if (len)
		*len = b->len;
	b->data = NULL;
	b->len = b->cap = 0;
	return d;
}

size_t wt_utf8_seq(const unsigned char *u, size_t avail)
{
	size_t n = 0, k;
	uint32_t cp = 0, min = 0;

	if (u[0] >= 0xC2 && u[0] <= 0xDF) {
		n = 2, cp = u[0] & 0x1F, min = 0x80;
	} else if (u[0] >= 0xE0 && u[0] <= 0xEF) {
		n = 3, cp = u[0] & 0x0F, min = 0x800;
	} else if (u[0] >= 0xF0 && u[0] <= 0xF4) {
		n = 4, cp = u[0] & 0x07, min = 0x10000;
	}
	if (n > avail)
		return 0;
	for (k = 1; k < n; k++) {
		if ((u[k] & 0xC0) != 0x80) /* also stops at a NUL */
			return 0;
		cp = (cp << 6) | (u[k] & 0x3F);
	}
	return n && cp >= min && cp <= 0x10FFFF && (cp < 0xD800 || cp > 0xDFFF) ? n : 0;
}

int wt_buf_json_str(wt_buf *b, const char *s)
{
	static const char hex[] = "0123456789ABCDEF";
	const unsigned char *u = (const unsigned char *)s;

	wt_buf_putc(b, '"');
	while (*u) {
		const unsigned char *run = u;

		/* the longest run that needs no escaping */
		while (*u >= 0x20 && *u < 0x80 && *u != '"' && *u != '\\')
			u++;
		if (u > run)
			wt_buf_append(b, run, (size_t)(u - run));
		if (!*u)
			break;
		if (*u == '"' || *u == '\\') {
			char e[2] = {'\\', (char)*u++};
			wt_buf_append(b, e, 2);
		} else if (*u < 0x20) {
			const char *sh = *u == '\b' ? "\\b" : *u == '\f' ? "\\f" : *u == '\n' ? "\\n"
				       : *u == '\r' ? "\\r" : *u == '\t' ? "\\t" : NULL;
			char e[6] = {'\\', 'u', '0', '0', hex[*u >> 4], hex[*u & 15]};

			if (sh)
				wt_buf_append(b, sh, 2);
			else
				wt_buf_append(b, e, 6);
			u++;
		} else {
			u += wt_buf_utf8_char(b, u);
		}
	}
	wt_buf_putc(b, '"');
	return b->oom ? WT_ENOMEM : 0;
}

size_t wt_buf_utf8_char(wt_buf *b, const unsigned char *u)
{
	size_t n = wt_utf8_seq(u, SIZE_MAX);

	if (n) {
		wt_buf_append(b, u, n);
		return n;
	}
	wt_buf_append(b, "\xEF\xBF\xBD", 3);
	return 1;
}

void wt_utf8_trim_tail(char *s)
{
	size_t n = strlen(s), k;

	/* the last lead byte within 3 bytes of the end, if any */
	for (k = 1; k <= 3 && k <= n; k++) {
		unsigned char c = (unsigned char)s[n - k];

		if ((c & 0xC0) == 0x80)
			continue;
		if (c >= 0xC0 && !wt_utf8_seq((const unsigned char *)s + n - k, SIZE_MAX))
			s[n - k] = '\0';
		return;
	}
}
