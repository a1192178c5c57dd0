/*
 * pbwalk.h — a validating walk over protobuf wire bytes, driven by a
 * protoc-c message descriptor, run BEFORE protobuf_c_message_unpack().
 *
 * protobuf-c only says "NULL" when bytes are bad and allocates in
 * proportion to the input before any limit can be checked. The walk
 * allocates nothing, checks every tag, varint, length and wire type against
 * the schema, and reports the first problem with the byte offset and the
 * field path ("sample[3].label[0].key (field 1) at byte 4711"). It also
 * counts repeated elements (packed or not) so that callers can enforce
 * limits (number of samples, labels per sample, ...) before unpacking.
 *
 * Also used for format detection: a buffer that walks cleanly against a
 * schema is that message (as far as the wire format can tell).
 */
#ifndef WT_PBWALK_H
#define WT_PBWALK_H

#include <stddef.h>
#include <stdint.h>

#include <protobuf-c/protobuf-c.h>

#include "err.h"

#define WT_PB_MAX_DEPTH 16
#define WT_PB_MAX_FIELDS 64 /* fields per message type the walk counts */

typedef struct wt_pb_walker wt_pb_walker;

/* Called when the walk has finished one message of type `desc`. counts[i]
 * is the number of elements seen for desc->fields[i] (repeated fields:
 * elements, including packed ones; others: occurrences); `offset` is the
 * byte where the message started. Return 0 to continue, or a WT_E* code
 * after filling err to stop the walk with that error. */
typedef int (*wt_pb_check_fn)(void *ud, wt_pb_walker *w, const ProtobufCMessageDescriptor *desc,
			      const uint32_t *counts, size_t offset, wt_err *err);

/* Path of the message being checked, e.g. "sample[3]" ("" at the top).
 * Valid until the callback returns. */
const char *wt_pb_walker_path(wt_pb_walker *w);

/* Walk buf[0..len) as message `desc`. what: prefix for messages ("pprof").
 * Unknown fields are skipped (they must still be well formed); groups
 * (wire types 3/4) and wire types 6/7 are errors. check may be NULL.
 * Returns 0 or WT_EINVAL / whatever check returned, with *err filled. */
int wt_pb_walk(const ProtobufCMessageDescriptor *desc, const uint8_t *buf, size_t len,
	       const char *what, wt_pb_check_fn check, void *ud, wt_err *err);

/* Read one varint at buf[*off..len); 0 or -1 (truncated / longer than 10
 * bytes / overflowing 64 bits). Advances *off on success. */
int wt_pb_varint(const uint8_t *buf, size_t len, size_t *off, uint64_t *v);

#endif
