/*
 * pprof.h — pprof (google/pprof profile.proto) decoding into wt_profile and
 * encoding from it. Wire format from proto/profile.proto (protoc-c).
 *
 * wt_pprof_decode accepts gzip or raw bytes (detected by magic); input size
 * and decompressed size are bounded by lim; ids that do not resolve, wrong
 * wire types, truncated messages and values arrays of the wrong length are
 * WT_EINVAL with a message naming the field ("pprof: sample[3].location_id[1]:
 * no location with id 77").
 * Ownership: *out is a new profile owned by the caller.
 */
#ifndef WT_PPROF_H
#define WT_PPROF_H

#include <stddef.h>
#include <stdint.h>

#include "err.h"
#include "profile.h"

/* hint: uploader's profile kind for canonical type names (sample_types.h);
 * may be NULL. */
int wt_pprof_decode(const uint8_t *buf, size_t len, const wt_limits *lim,
		    const char *hint, wt_profile **out, wt_err *err);

/* Encode p as profile.proto; gzip it when gzip != 0. *out is malloc'd,
 * caller frees. Frame/function/mapping ids are index+1. */
int wt_pprof_encode(const wt_profile *p, int gzip, uint8_t **out, size_t *outlen, wt_err *err);

#endif
