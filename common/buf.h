/*
 * buf.h — a growable byte buffer used by encoders and HTTP/JSON writers.
 * Ownership: the buffer owns `data`; wt_buf_free() releases it, and
 * wt_buf_steal() hands it to the caller (who then free()s it).
 */
#ifndef WT_BUF_H
#define WT_BUF_H

#include <stddef.h>
#include <stdint.h>

typedef struct wt_buf {
	uint8_t *data;
	size_t len, cap;
	int oom; /* sticky: set once an append failed; further appends are no-ops */
} wt_buf;

#define WT_BUF_INIT {NULL, 0, 0, 0}

int wt_buf_reserve(wt_buf *b, size_t extra);              /* 0 or WT_ENOMEM */
int wt_buf_append(wt_buf *b, const void *p, size_t n);    /* 0 or WT_ENOMEM */
int wt_buf_puts(wt_buf *b, const char *s);
int wt_buf_printf(wt_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int wt_buf_putc(wt_buf *b, char c);
void wt_buf_reset(wt_buf *b);
void wt_buf_free(wt_buf *b);
uint8_t *wt_buf_steal(wt_buf *b, size_t *len);
/* s as a JSON string, in jansson's compact form (json_dumps): " and \
 * escaped, \b \f \n \r \t, other control bytes as \u00XX, UTF-8 as is;
 * a byte that is not valid UTF-8 (where jansson refuses the string)
 * becomes U+FFFD. 0 or WT_ENOMEM. */
int wt_buf_json_str(wt_buf *b, const char *s);
/* Length (2-4) of the valid UTF-8 sequence (RFC 3629: no overlongs, no
 * surrogates) at u, whose first byte is >= 0x80, within avail bytes
 * (SIZE_MAX for a NUL-terminated string: the NUL ends it), or 0. */
size_t wt_utf8_seq(const unsigned char *u, size_t avail);
/* Append the character at u (NUL-terminated, first byte >= 0x80): its
 * UTF-8 sequence when valid, else U+FFFD for that one byte. Returns the
 * bytes of u consumed (>= 1). */
size_t wt_buf_utf8_char(wt_buf *b, const unsigned char *u);
/* Cut a UTF-8 sequence left incomplete at the end of NUL-terminated s
 * (as snprintf leaves one when it truncates), so that a string that was
 * UTF-8 before truncation still is. */
void wt_utf8_trim_tail(char *s);

#endif
