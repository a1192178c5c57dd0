/*
 * json_str.c — jansson strings from bytes that may not be UTF-8 (see
 * json_str.h).
 */
#include "json_str.h"

#include <stdint.h>
#include <string.h>

#include "buf.h"

json_t *wt_json_string(const char *s)
{
	const unsigned char *u = (const unsigned char *)s;
	wt_buf b = WT_BUF_INIT;
	json_t *j;

	if (!s)
		return NULL;
	if ((j = json_string(s)))
		return j;
	while (*u) {
		if (*u < 0x80)
			wt_buf_putc(&b, (char)*u++);
		else
			u += wt_buf_utf8_char(&b, u);
	}
	j = b.oom ? NULL : json_stringn(b.data ? (const char *)b.data : "", b.len);
	wt_buf_free(&b);
	return j;
}
