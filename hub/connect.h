/*
 * connect.h — the Connect protocol's unary calls (connectrpc.com) for
 * protobuf-c messages: a request body in `application/proto` (protobuf
 * bytes) or `application/json` (the proto3 JSON mapping) decoded into a
 * message, a reply encoded the same way the request came, and errors as
 * Connect's JSON error body with its HTTP status. hub/pyroscope_api.c
 * serves Pyroscope's QuerierService with it.
 *
 * The JSON mapping is driven by the protobuf-c descriptors: field names in
 * lowerCamelCase (the proto name is accepted too), 64-bit integers as
 * strings (numbers accepted), enums by name (numbers accepted), bytes as
 * base64, default values left out, unknown fields ignored.
 */
#ifndef HUB_CONNECT_H
#define HUB_CONNECT_H

#include <protobuf-c/protobuf-c.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "err.h"
#include "hub.h"

/* Encoding of a call's body. */
enum { HUB_CONNECT_PROTO = 0, HUB_CONNECT_JSON = 1 };

/* Decode body as a message of type d in encoding enc. On success *out is a
 * new message the caller frees with protobuf_c_message_free_unpacked(*out,
 * NULL). WT_EINVAL naming the field (JSON) or the message (proto). */
int hub_connect_decode(const ProtobufCMessageDescriptor *d, int enc, const uint8_t *body, size_t len,
		       ProtobufCMessage **out, wt_err *err);

/* Append m encoded as enc to out. 0 or WT_ENOMEM. */
int hub_connect_encode(const ProtobufCMessage *m, int enc, wt_buf *out);

/* Reply 200 with m in encoding enc (m stays the caller's). */
void hub_connect_reply(hub_req *r, int enc, const ProtobufCMessage *m);

/* Reply with err as a Connect error: {"code":"invalid_argument",
 * "message":…} and the status Connect assigns to that code. */
void hub_connect_fail(hub_req *r, const wt_err *err);

/* Connect's code name for a WT_E* code ("invalid_argument", …). Pure. */
const char *hub_connect_code(int wt_code);

#endif
