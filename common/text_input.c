/*
 * text_input.c — shared input checks of the text parsers (see text_input.h).
 */
#include "text_input.h"

#include <string.h>

int wt_text_input_check(const char *what, const char *s, size_t len, const wt_limits *lim,
			size_t *skip, wt_err *err)
{
	const char *nul, *q;
	size_t line = 1;

	*skip = 0;
	if (len > lim->max_decompressed)
		return wt_err_set(err, WT_ELIMIT, "%s: input of %zu bytes exceeds max_decompressed %zu",
				  what, len, lim->max_decompressed);
	if (len && (nul = memchr(s, 0, len))) {
		for (q = s; (q = memchr(q, '\n', (size_t)(nul - q))); q++)
			line++;
		return wt_err_set(err, WT_EINVAL, "%s: line %zu: NUL byte at offset %zu", what, line,
				  (size_t)(nul - s));
	}
	if (len >= 3 && !memcmp(s, "\xEF\xBB\xBF", 3)) /* UTF-8 BOM */
		*skip = 3;
	return 0;
}
