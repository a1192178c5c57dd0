/*
 * compress.h — bounded decompression (gzip, zstd) and compression helpers.
 * Every decompressor takes a max output size: a gzip/zstd bomb ends in
 * WT_ELIMIT, never in an unbounded allocation.
 * Ownership: *out is malloc'd and owned by the caller (free()).
 */
#ifndef WT_COMPRESS_H
#define WT_COMPRESS_H

#include <stddef.h>
#include <stdint.h>

#include "err.h"

int wt_is_gzip(const uint8_t *buf, size_t len);
int wt_is_zstd(const uint8_t *buf, size_t len);

/* Inflate a gzip stream (all members) into at most max_out bytes. */
int wt_gunzip(const uint8_t *in, size_t inlen, size_t max_out,
	      uint8_t **out, size_t *outlen, wt_err *err);
int wt_gzip(const uint8_t *in, size_t inlen, int level, uint8_t **out, size_t *outlen, wt_err *err);

int wt_zstd_compress(const uint8_t *in, size_t inlen, int level,
		     uint8_t **out, size_t *outlen, wt_err *err);
int wt_zstd_decompress(const uint8_t *in, size_t inlen, size_t max_out,
		       uint8_t **out, size_t *outlen, wt_err *err);

/* The first (at most) cap bytes of what in decompresses to (gzip or zstd;
 * other input is copied as it is) into out, without decompressing the
 * rest: enough to sniff a format before committing memory to a body.
 * *outlen < cap when the stream is shorter. Returns 0 or WT_EINVAL
 * (corrupt within the head). */
int wt_decompress_head(const uint8_t *in, size_t inlen, uint8_t *out, size_t cap, size_t *outlen,
		       wt_err *err);

#endif
