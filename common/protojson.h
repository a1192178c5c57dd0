/*
 * protojson.h — proto3 JSON ("protojson", what OTLP/JSON exporters send)
 * re-encoded as protobuf wire bytes, driven by a protobuf-c message
 * descriptor, so that a format's binary decoder (common/otlp.c) reads both
 * encodings with the same checks and limits.
 *
 * Mapping (the proto3 JSON mapping, plus the OTLP/JSON rules):
 *   object key       the field's lowerCamelCase JSON name or its proto name;
 *                    unknown keys are skipped and counted (OTLP/JSON
 *                    receivers ignore unknown fields)
 *   null             the field is absent
 *   64-bit integers  a JSON number or a decimal string ("806680624");
 *                    32-bit ones a number (a string is accepted too)
 *   enums            the value's name or its number
 *   bytes            base64 (standard or URL-safe, padding optional); fields
 *                    named *_id (trace_id, span_id, profile_id) hex, as
 *                    OTLP/JSON writes them
 *   repeated         a JSON array; scalars are written packed
 * Anything else (a string where a message is expected, 1.5 for an integer,
 * an integer out of its type's range, bad base64) is WT_EINVAL naming the
 * JSON path ("resourceProfiles[0].scopeProfiles[0].profiles[0].period: ...").
 *
 * Cost: one pass over the parsed document; nested messages are encoded
 * into a scratch buffer per nesting level and copied into their parent
 * (O(depth × output)). Output is bounded by max_out (WT_ELIMIT), nesting by
 * WT_PROTOJSON_MAX_DEPTH.
 */
#ifndef WT_PROTOJSON_H
#define WT_PROTOJSON_H

#include <jansson.h>
#include <protobuf-c/protobuf-c.h>
#include <stddef.h>

#include "buf.h"
#include "err.h"

#define WT_PROTOJSON_MAX_DEPTH 64

/* Encode the JSON object root as message d, appending the wire bytes to
 * *out (caller owns the buffer). *unknown receives the number of keys that
 * name no field. what prefixes error messages ("otlp json"). aliases (may
 * be NULL): triples {message full name, JSON key, proto field name}, NULL
 * terminated, for fields renamed between schema releases that kept their
 * number (OTLP Location "line" → "lines"). Returns 0,
 * WT_EINVAL, WT_ELIMIT (output beyond max_out or nesting beyond the
 * limit) or WT_ENOMEM; on error *out holds a partial encoding. */
int wt_protojson_encode(const ProtobufCMessageDescriptor *d, const json_t *root, size_t max_out,
			const char *what, const char *const *aliases, wt_buf *out, size_t *unknown,
			wt_err *err);

#endif
