/* hex.h — hexadecimal digits both ways: the value of one digit (the text
 * parsers that read addresses and build ids: perf_script.c, symref.c) and
 * bytes written as lower hex (build ids: elfid.c). */
#ifndef WT_HEX_H
#define WT_HEX_H

#include <stddef.h>

/* 0..15, or -1 when c is not a hex digit. */
static inline int wt_hex_digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* n bytes as lower hex into out[cap], NUL-terminated; stops early (whole
 * bytes) when out is too small. cap >= 1. */
static inline void wt_hex_encode(const void *bytes, size_t n, char *out, size_t cap)
{
	static const char d[] = "0123456789abcdef";
	const unsigned char *b = bytes;
	size_t j = 0;

	for (size_t i = 0; i < n && j + 2 < cap; i++) {
		out[j++] = d[b[i] >> 4];
		out[j++] = d[b[i] & 15];
	}
	out[j] = '\0';
}

#endif
