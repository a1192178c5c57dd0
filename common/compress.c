/*
 * compress.c — bounded gzip (zlib, libdeflate) and zstd helpers behind
 * compress.h.
 *
 * Decompression is streaming into a buffer that doubles up to max_out: a
 * bomb stops as soon as it would produce byte max_out+1 (WT_ELIMIT), so the
 * most we ever allocate for hostile input is about max_out. Errors name the
 * byte offset in the compressed input where decoding failed.
 *
 * gunzip first tries libdeflate's whole-buffer decoder (2-3x zlib's
 * inflate) into a buffer of the size the gzip trailer announces, when that
 * size is within max_out; anything it does not decode exactly (several
 * members, a wrong trailer, corrupt data) is decoded again by the zlib path,
 * which gives the errors their byte offsets.
 */
#include "compress.h"

#include <stdlib.h>
#include <string.h>

#include <libdeflate.h>
#include <zlib.h>
#include <zstd.h>

#define GROW_MIN (64u * 1024)

int wt_is_gzip(const uint8_t *buf, size_t len)
{
	return len >= 2 && buf[0] == 0x1f && buf[1] == 0x8b;
}

int wt_is_zstd(const uint8_t *buf, size_t len)
{
	return len >= 4 && buf[0] == 0x28 && buf[1] == 0xb5 && buf[2] == 0x2f && buf[3] == 0xfd;
}

/* Output buffer growing by doubling, never beyond max+1 bytes (one byte of
 * slack lets us tell "exactly max" from "more than max"). */
typedef struct obuf {
	uint8_t *data;
	size_t len, cap, max;
} obuf;

static int obuf_grow(obuf *o, size_t hint)
{
	size_t hard = o->max == SIZE_MAX ? SIZE_MAX : o->max + 1;
	size_t ncap = o->cap ? o->cap * 2 : (hint > GROW_MIN ? hint : GROW_MIN);
	uint8_t *n;

	if (o->cap >= hard)
		return WT_ELIMIT;
	if (ncap < o->cap || ncap > hard)
		ncap = hard;
	n = realloc(o->data, ncap);
	if (!n)
		return WT_ENOMEM;
	o->data = n;
	o->cap = ncap;
	return 0;
}

/* Only zero bytes (padding some writers leave) may follow the last member. */
static int all_zero(const uint8_t *p, size_t n)
{
	while (n--)
		if (*p++)
			return 0;
	return 1;
}

/* The one-shot path: 1 and the whole output (caller frees) when the input
 * is one gzip member whose trailer's size (ISIZE) is right and <= max_out;
 * 0 otherwise (nothing allocated). */
static int gunzip_whole(const uint8_t *in, size_t inlen, size_t max_out, uint8_t **out, size_t *outlen)
{
	struct libdeflate_decompressor *dec;
	size_t isize, ain = 0, aout = 0;
	uint8_t *buf;
	enum libdeflate_result r;

	if (inlen < 18)
		return 0;
	isize = (size_t)in[inlen - 4] | (size_t)in[inlen - 3] << 8 | (size_t)in[inlen - 2] << 16 |
		(size_t)in[inlen - 1] << 24;
	if (isize > max_out || isize == 0)
		return 0;
	if (!(buf = malloc(isize)))
		return 0;
	if (!(dec = libdeflate_alloc_decompressor())) {
		free(buf);
		return 0;
	}
	r = libdeflate_gzip_decompress_ex(dec, in, inlen, buf, isize, &ain, &aout);
	libdeflate_free_decompressor(dec);
	if (r != LIBDEFLATE_SUCCESS || ain != inlen || aout != isize) {
		free(buf);
		return 0;
	}
	*out = buf;
	*outlen = aout;
	return 1;
}

int wt_gunzip(const uint8_t *in, size_t inlen, size_t max_out,
	      uint8_t **out, size_t *outlen, wt_err *err)
{
	z_stream zs;
	obuf o = {NULL, 0, 0, max_out};
	size_t hint;
	int rc = 0, zrc, members = 0;

	*out = NULL;
	*outlen = 0;
	if (!wt_is_gzip(in, inlen))
		return wt_err_set(err, WT_EINVAL, "gzip: bad magic at byte 0 (not a gzip stream)");
	if (gunzip_whole(in, inlen, max_out, out, outlen))
		return 0;
	memset(&zs, 0, sizeof(zs));
	/* 15+32: gzip or zlib header auto-detected, full 32 KiB window. */
	if (inflateInit2(&zs, 15 + 32) != Z_OK)
		return wt_err_set(err, WT_ENOMEM, "gzip: inflateInit2 failed");
	/* Start near the expected size (ratio ~4 is typical for profiles). */
	hint = inlen > SIZE_MAX / 4 ? SIZE_MAX : inlen * 4;
	if (hint > max_out)
		hint = max_out;
	zs.next_in = (Bytef *)in;
	for (;;) {
		/* zlib counts in uInt: feed at most 1 GiB at a time. */
		size_t in_off = (size_t)(zs.next_in - in);
		size_t left = inlen - in_off;

		if (zs.avail_in == 0 && left)
			zs.avail_in = (uInt)(left > (1u << 30) ? (1u << 30) : left);
		if (o.len == o.cap) {
			rc = obuf_grow(&o, hint);
			if (rc == WT_ELIMIT) {
				rc = wt_err_set(err, WT_ELIMIT,
						"gzip: decompressed size exceeds the limit of %zu bytes "
						"(at input byte %zu of %zu)", max_out, in_off, inlen);
				goto cleanup;
			}
			if (rc) {
				rc = wt_err_set(err, rc, "gzip: out of memory at %zu bytes", o.len);
				goto cleanup;
			}
		}
		{
			size_t room = o.cap - o.len;
			zs.next_out = o.data + o.len;
			zs.avail_out = (uInt)(room > (1u << 30) ? (1u << 30) : room);
		}
		{
			uInt before = zs.avail_out;
			zrc = inflate(&zs, Z_NO_FLUSH);
			o.len += before - zs.avail_out;
		}
		if (o.len > max_out) {
			rc = wt_err_set(err, WT_ELIMIT,
					"gzip: decompressed size exceeds the limit of %zu bytes "
					"(at input byte %zu of %zu)", max_out,
					(size_t)(zs.next_in - in), inlen);
			goto cleanup;
		}
		if (zrc == Z_STREAM_END) {
			size_t off = (size_t)(zs.next_in - in);
			members++;
			if (off == inlen)
				break;
			if (wt_is_gzip(in + off, inlen - off)) {
				/* Next member of a multi-member file (cat a.gz b.gz). */
				if (inflateReset(&zs) != Z_OK) {
					rc = wt_err_set(err, WT_EINVAL, "gzip: cannot reset at byte %zu", off);
					goto cleanup;
				}
				continue;
			}
			if (all_zero(in + off, inlen - off))
				break;
			rc = wt_err_set(err, WT_EINVAL,
					"gzip: trailing garbage at byte %zu after member %d (%zu bytes left)",
					off, members, inlen - off);
			goto cleanup;
		}
		if (zrc == Z_OK)
			continue;
		if (zrc == Z_BUF_ERROR && zs.avail_out != 0) {
			/* No progress with room to spare: input ended mid-stream. */
			rc = wt_err_set(err, WT_EINVAL,
					"gzip: truncated stream: input ends at byte %zu inside member %d",
					inlen, members + 1);
			goto cleanup;
		}
		if (zrc == Z_BUF_ERROR)
			continue;
		if (zrc == Z_MEM_ERROR) {
			rc = wt_err_set(err, WT_ENOMEM, "gzip: out of memory in inflate");
			goto cleanup;
		}
		rc = wt_err_set(err, WT_EINVAL, "gzip: corrupt data near byte %zu of %zu: %s",
				(size_t)(zs.next_in - in), inlen, zs.msg ? zs.msg : "inflate error");
		goto cleanup;
	}
	*out = o.data;
	*outlen = o.len;
	o.data = NULL;
	if (!*out) { /* empty output: still hand back a valid pointer */
		*out = malloc(1);
		if (!*out)
			rc = wt_err_set(err, WT_ENOMEM, "gzip: out of memory");
	}
cleanup:
	inflateEnd(&zs);
	free(o.data);
	return rc;
}

int wt_gzip(const uint8_t *in, size_t inlen, int level, uint8_t **out, size_t *outlen, wt_err *err)
{
	z_stream zs;
	uint8_t *buf = NULL;
	size_t cap;
	int rc = 0, zrc;

	*out = NULL;
	*outlen = 0;
	memset(&zs, 0, sizeof(zs));
	if (level < 0 || level > 9)
		level = Z_DEFAULT_COMPRESSION;
	/* 15+16: gzip wrapper. */
	if (deflateInit2(&zs, level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
		return wt_err_set(err, WT_ENOMEM, "gzip: deflateInit2 failed");
	cap = deflateBound(&zs, (uLong)inlen) + 64;
	buf = malloc(cap);
	if (!buf) {
		rc = wt_err_set(err, WT_ENOMEM, "gzip: out of memory (%zu bytes)", cap);
		goto cleanup;
	}
	zs.next_in = (Bytef *)in;
	zs.next_out = buf;
	for (;;) {
		size_t in_left = inlen - (size_t)(zs.next_in - in);
		size_t out_left = cap - (size_t)(zs.next_out - buf);
		int flush;

		zs.avail_in = (uInt)(in_left > (1u << 30) ? (1u << 30) : in_left);
		zs.avail_out = (uInt)(out_left > (1u << 30) ? (1u << 30) : out_left);
		flush = in_left == zs.avail_in ? Z_FINISH : Z_NO_FLUSH;
		zrc = deflate(&zs, flush);
		if (zrc == Z_STREAM_END)
			break;
		if (zrc != Z_OK && zrc != Z_BUF_ERROR) {
			rc = wt_err_set(err, WT_EINVAL, "gzip: deflate failed (%d)", zrc);
			goto cleanup;
		}
		if ((size_t)(zs.next_out - buf) == cap) { /* deflateBound lied */
			rc = wt_err_set(err, WT_ENOMEM, "gzip: output larger than bound");
			goto cleanup;
		}
	}
	*outlen = (size_t)(zs.next_out - buf);
	*out = buf;
	buf = NULL;
cleanup:
	deflateEnd(&zs);
	free(buf);
	return rc;
}

int wt_zstd_compress(const uint8_t *in, size_t inlen, int level,
		     uint8_t **out, size_t *outlen, wt_err *err)
{
	size_t cap = ZSTD_compressBound(inlen), n;
	uint8_t *buf;

	*out = NULL;
	*outlen = 0;
	if (ZSTD_isError(cap))
		return wt_err_set(err, WT_ELIMIT, "zstd: input of %zu bytes too large", inlen);
	buf = malloc(cap ? cap : 1);
	if (!buf)
		return wt_err_set(err, WT_ENOMEM, "zstd: out of memory (%zu bytes)", cap);
	n = ZSTD_compress(buf, cap, in, inlen, level);
	if (ZSTD_isError(n)) {
		free(buf);
		return wt_err_set(err, WT_EINVAL, "zstd: compress failed: %s", ZSTD_getErrorName(n));
	}
	*out = buf;
	*outlen = n;
	return 0;
}

int wt_zstd_decompress(const uint8_t *in, size_t inlen, size_t max_out,
		       uint8_t **out, size_t *outlen, wt_err *err)
{
	ZSTD_DCtx *dctx;
	ZSTD_inBuffer ib = {in, inlen, 0};
	obuf o = {NULL, 0, 0, max_out};
	unsigned long long fsz;
	size_t hint, zr = 1;
	int rc = 0;

	*out = NULL;
	*outlen = 0;
	if (!wt_is_zstd(in, inlen))
		return wt_err_set(err, WT_EINVAL, "zstd: bad magic at byte 0 (not a zstd frame)");
	/* A declared content size is only a hint (it is attacker controlled). */
	fsz = ZSTD_getFrameContentSize(in, inlen);
	hint = inlen > SIZE_MAX / 4 ? SIZE_MAX : inlen * 4;
	if (fsz != ZSTD_CONTENTSIZE_UNKNOWN && fsz != ZSTD_CONTENTSIZE_ERROR && fsz < SIZE_MAX)
		hint = (size_t)fsz + 1;
	if (hint > max_out)
		hint = max_out;
	dctx = ZSTD_createDCtx();
	if (!dctx)
		return wt_err_set(err, WT_ENOMEM, "zstd: cannot create context");
	/* Refuse frames that need more than 128 MiB of window. */
	ZSTD_DCtx_setParameter(dctx, ZSTD_d_windowLogMax, 27);
	for (;;) {
		ZSTD_outBuffer ob;

		if (o.len == o.cap) {
			rc = obuf_grow(&o, hint);
			if (rc == WT_ELIMIT) {
				rc = wt_err_set(err, WT_ELIMIT,
						"zstd: decompressed size exceeds the limit of %zu bytes "
						"(at input byte %zu of %zu)", max_out, ib.pos, inlen);
				goto cleanup;
			}
			if (rc) {
				rc = wt_err_set(err, rc, "zstd: out of memory at %zu bytes", o.len);
				goto cleanup;
			}
		}
		ob.dst = o.data + o.len;
		ob.size = o.cap - o.len;
		ob.pos = 0;
		zr = ZSTD_decompressStream(dctx, &ob, &ib);
		o.len += ob.pos;
		if (ZSTD_isError(zr)) {
			rc = wt_err_set(err, WT_EINVAL, "zstd: corrupt data near byte %zu of %zu: %s",
					ib.pos, inlen, ZSTD_getErrorName(zr));
			goto cleanup;
		}
		if (o.len > max_out) {
			rc = wt_err_set(err, WT_ELIMIT,
					"zstd: decompressed size exceeds the limit of %zu bytes "
					"(at input byte %zu of %zu)", max_out, ib.pos, inlen);
			goto cleanup;
		}
		if (zr == 0 && ib.pos == inlen)
			break; /* last frame decoded and fully flushed */
		if (ib.pos == inlen && ob.pos < ob.size) {
			/* All input consumed and the decoder did not fill the room
			 * it had: it has nothing more to flush. */
			break;
		}
	}
	if (zr != 0) {
		rc = wt_err_set(err, WT_EINVAL,
				"zstd: truncated stream: input ends at byte %zu inside a frame", inlen);
		goto cleanup;
	}
	*out = o.data;
	*outlen = o.len;
	o.data = NULL;
	if (!*out) {
		*out = malloc(1);
		if (!*out)
			rc = wt_err_set(err, WT_ENOMEM, "zstd: out of memory");
	}
cleanup:
	ZSTD_freeDCtx(dctx);
	free(o.data);
	return rc;
}

int wt_decompress_head(const uint8_t *in, size_t inlen, uint8_t *out, size_t cap, size_t *outlen,
		       wt_err *err)
{
	int rc = 0;

	*outlen = 0;
	if (wt_is_gzip(in, inlen)) {
		z_stream zs;
		int zrc;

		memset(&zs, 0, sizeof(zs));
		if (inflateInit2(&zs, 15 + 32) != Z_OK)
			return wt_err_set(err, WT_ENOMEM, "gzip: inflateInit2 failed");
		zs.next_in = (Bytef *)in;
		zs.avail_in = (uInt)(inlen > (1u << 30) ? (1u << 30) : inlen);
		zs.next_out = out;
		zs.avail_out = (uInt)cap;
		/* stops when cap bytes are out, the member ends or input runs out */
		while ((zrc = inflate(&zs, Z_NO_FLUSH)) == Z_OK && zs.avail_out && zs.avail_in)
			;
		if (zrc != Z_OK && zrc != Z_STREAM_END && zrc != Z_BUF_ERROR)
			rc = wt_err_set(err, WT_EINVAL, "gzip: corrupt data near byte %zu of %zu: %s",
					(size_t)(zs.next_in - in), inlen, zs.msg ? zs.msg : "inflate error");
		*outlen = cap - zs.avail_out;
		inflateEnd(&zs);
	} else if (wt_is_zstd(in, inlen)) {
		ZSTD_DCtx *dctx = ZSTD_createDCtx();
		ZSTD_inBuffer ib = {in, inlen, 0};
		ZSTD_outBuffer ob = {out, cap, 0};
		size_t zr;

		if (!dctx)
			return wt_err_set(err, WT_ENOMEM, "zstd: cannot create context");
		ZSTD_DCtx_setParameter(dctx, ZSTD_d_windowLogMax, 27);
		while (ob.pos < ob.size && ib.pos < ib.size) {
			size_t before_in = ib.pos, before_out = ob.pos;
			zr = ZSTD_decompressStream(dctx, &ob, &ib);
			if (ZSTD_isError(zr)) {
				rc = wt_err_set(err, WT_EINVAL, "zstd: corrupt data near byte %zu of %zu: %s",
						ib.pos, inlen, ZSTD_getErrorName(zr));
				break;
			}
			if (ib.pos == before_in && ob.pos == before_out)
				break;
		}
		*outlen = ob.pos;
		ZSTD_freeDCtx(dctx);
	} else {
		*outlen = inlen < cap ? inlen : cap;
		memcpy(out, in, *outlen);
	}
	return rc;
}
