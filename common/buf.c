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
