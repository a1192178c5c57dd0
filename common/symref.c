/*
 * symref.c — parse and write the stored form of unsymbolized native frames
 * (see symref.h).
 */
#include "symref.h"
#include "hex.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

/* Where " [bid:HEX]" starts in s[0..n), or n. */
static size_t bid_start(const char *s, size_t n, const char **bid, size_t *bid_len)
{
	size_t i;

	*bid = NULL;
	*bid_len = 0;
	if (n < 8 || s[n - 1] != ']')
		return n;
	for (i = n - 1; i > 0 && wt_hex_digit(s[i - 1]) >= 0; i--)
		;
	/* s[i..n-1) are the hex digits */
	if (i == n - 1 || n - 1 - i > WT_BUILD_ID_MAX || i < 6 || memcmp(s + i - 6, " [bid:", 6))
		return n;
	*bid = s + i;
	*bid_len = n - 1 - i;
	return i - 6;
}

size_t wt_symref_display_len(const char *s, size_t n)
{
	const char *b;
	size_t bl;

	return bid_start(s, n, &b, &bl);
}

int wt_symref_parse(const char *s, size_t n, wt_symref *out)
{
	size_t e = bid_start(s, n, &out->build_id, &out->build_id_len), j;
	uint64_t off = 0;

	for (j = e; j > 0 && wt_hex_digit(s[j - 1]) >= 0; j--)
		;
	/* s[j..e) hex digits after "+0x", a non-empty module before it */
	if (j == e || e - j > 16 || j < 4 || memcmp(s + j - 3, "+0x", 3))
		return 0;
	for (size_t k = j; k < e; k++)
		off = off << 4 | (uint64_t)wt_hex_digit(s[k]);
	out->module = s;
	out->module_len = j - 3;
	out->offset = off;
	return 1;
}

const char *wt_symref_format(char *buf, size_t cap, const char *module, uint64_t offset,
			     const char *build_id)
{
	const char *base = strrchr(module, '/');

	base = base ? base + 1 : module;
	if (build_id && *build_id)
		snprintf(buf, cap, "%s+0x%" PRIx64 " [bid:%s]", base, offset, build_id);
	else
		snprintf(buf, cap, "%s+0x%" PRIx64, base, offset);
	return buf;
}

const char *wt_profile_frame_key(const wt_profile *p, uint32_t frame, char *buf, size_t buflen)
{
	const wt_frame *f;
	const wt_mapping *m;
	const char *file, *bid;
	uint64_t off;

	if (frame >= p->nframes)
		return wt_profile_frame_name(p, frame, buf, buflen);
	f = &p->frames[frame];
	if ((f->function != WT_NO_FUNCTION &&
	     (p->functions[f->function].name || p->functions[f->function].system_name)) ||
	    f->mapping == WT_NO_MAPPING || !p->mappings[f->mapping].filename)
		return wt_profile_frame_name(p, frame, buf, buflen);
	m = &p->mappings[f->mapping];
	file = wt_profile_str(p, m->filename);
	bid = m->build_id ? wt_profile_str(p, m->build_id) : NULL;
	off = f->address;
	if (m->limit > m->start && off >= m->start && off < m->limit)
		off = off - m->start + m->offset;
	/* only plain hex build ids go into the bracket (parse must round-trip) */
	if (bid && (strlen(bid) > WT_BUILD_ID_MAX || strspn(bid, "0123456789abcdefABCDEF") != strlen(bid)))
		bid = NULL;
	return wt_symref_format(buf, buflen, file, off, bid);
}
