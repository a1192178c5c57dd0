/*
 * keys.c — encoding/decoding of the edge's RocksDB keys (layout in keys.h).
 */
#include "keys.h"

#include <string.h>

void edge_be64_put(uint8_t *p, uint64_t v)
{
	for (int i = 7; i >= 0; i--) {
		p[i] = (uint8_t)v;
		v >>= 8;
	}
}

uint64_t edge_be64_get(const uint8_t *p)
{
	uint64_t v = 0;
	for (int i = 0; i < 8; i++)
		v = v << 8 | p[i];
	return v;
}

void edge_le64_put(uint8_t *p, int64_t v)
{
	uint64_t u = (uint64_t)v;
	for (int i = 0; i < 8; i++) {
		p[i] = (uint8_t)u;
		u >>= 8;
	}
}

int64_t edge_le64_get(const uint8_t *p)
{
	uint64_t u = 0;
	for (int i = 7; i >= 0; i--)
		u = u << 8 | p[i];
	return (int64_t)u;
}

int edge_key_series(wt_buf *b, const char *proj, const char *svc, const char *type)
{
	wt_buf_append(b, proj, strlen(proj) + 1);
	wt_buf_append(b, svc, strlen(svc) + 1);
	return wt_buf_append(b, type, strlen(type) + 1);
}

/* Minutes before 1970 are clamped to 0: keys are unsigned. */
static int put_minute(wt_buf *b, int64_t minute)
{
	uint8_t m[8];
	edge_be64_put(m, minute < 0 ? 0 : (uint64_t)minute);
	return wt_buf_append(b, m, 8);
}

int edge_key_rollup(wt_buf *b, const char *proj, const char *svc, const char *type,
		    int64_t minute, const char *function)
{
	edge_key_series(b, proj, svc, type);
	put_minute(b, minute);
	return wt_buf_append(b, function, strlen(function));
}

int edge_key_stack(wt_buf *b, const char *proj, const char *svc, const char *type,
		   int64_t minute, uint64_t lh, uint64_t sh)
{
	uint8_t h[16];
	edge_key_series(b, proj, svc, type);
	put_minute(b, minute);
	edge_be64_put(h, lh);
	edge_be64_put(h + 8, sh);
	return wt_buf_append(b, h, 16);
}

int edge_key_stackdict(wt_buf *b, const char *proj, const char *svc, const char *type, int64_t day, uint64_t sh)
{
	uint8_t h[8];
	edge_key_series(b, proj, svc, type);
	put_minute(b, day); /* the same clamping */
	edge_be64_put(h, sh);
	return wt_buf_append(b, h, 8);
}

int edge_key_stackidx(wt_buf *b, const char *proj, const char *svc, const char *type, int64_t minute)
{
	edge_key_series(b, proj, svc, type);
	return put_minute(b, minute);
}

int edge_key_split(const uint8_t *key, size_t len, const char **proj, const char **svc,
		   const char **type, const uint8_t **rest, size_t *restlen)
{
	const char *parts[3];
	size_t off = 0;
	for (int i = 0; i < 3; i++) {
		const uint8_t *z = memchr(key + off, 0, len - off);
		if (!z)
			return -1;
		parts[i] = (const char *)key + off;
		off = (size_t)(z - key) + 1;
	}
	*proj = parts[0];
	*svc = parts[1];
	*type = parts[2];
	*rest = key + off;
	*restlen = len - off;
	return 0;
}

int edge_stack_payload_parse(const uint8_t *p, size_t len, const char **labels, size_t maxlabels,
			     size_t *nlabels, const char **frames, size_t maxframes, size_t *nframes)
{
	size_t off = 4, nl, nf = 0;
	if (len < 4)
		return -1;
	nl = (size_t)p[0] | (size_t)p[1] << 8 | (size_t)p[2] << 16 | (size_t)p[3] << 24;
	for (size_t i = 0; i < 2 * nl; i++) {
		const uint8_t *z = off < len ? memchr(p + off, 0, len - off) : NULL;
		if (!z)
			return -1;
		if (i / 2 < maxlabels)
			labels[i] = (const char *)p + off;
		off = (size_t)(z - p) + 1;
	}
	while (off < len) {
		const uint8_t *z = memchr(p + off, 0, len - off);
		if (!z)
			return -1;
		if (nf >= maxframes)
			return -1;
		frames[nf++] = (const char *)p + off;
		off = (size_t)(z - p) + 1;
	}
	*nlabels = nl < maxlabels ? nl : maxlabels;
	*nframes = nf;
	return 0;
}
