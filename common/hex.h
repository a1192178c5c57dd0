/* hex.h — the value of one hexadecimal digit, shared by the text parsers
 * that read addresses and build ids (perf_script.c, symref.c). */
#ifndef WT_HEX_H
#define WT_HEX_H

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

#endif
