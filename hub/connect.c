/*
 * connect.c — Connect unary calls over protobuf-c messages (connect.h):
 * the proto3 JSON mapping both ways, driven by the descriptors protoc-c
 * generates, so every message of proto/ gets JSON without per-message code.
 *
 * Memory: decoded messages are built with malloc in the layout
 * protobuf_c_message_free_unpacked(…, NULL) frees (strings, arrays,
 * sub-messages, bytes), so callers free JSON and protobuf decodes alike.
 */
#include "connect.h"

#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http_server.h"

#define JSON_MAX_DEPTH 32

static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/* ---- field helpers ---------------------------------------------------------- */

static size_t elem_size(ProtobufCType t)
{
	switch (t) {
	case PROTOBUF_C_TYPE_INT64: case PROTOBUF_C_TYPE_SINT64: case PROTOBUF_C_TYPE_SFIXED64:
	case PROTOBUF_C_TYPE_UINT64: case PROTOBUF_C_TYPE_FIXED64: case PROTOBUF_C_TYPE_DOUBLE:
		return 8;
	case PROTOBUF_C_TYPE_STRING: return sizeof(char *);
	case PROTOBUF_C_TYPE_BYTES: return sizeof(ProtobufCBinaryData);
	case PROTOBUF_C_TYPE_MESSAGE: return sizeof(ProtobufCMessage *);
	case PROTOBUF_C_TYPE_BOOL: return sizeof(protobuf_c_boolean);
	default: return 4; /* 32-bit integers, float, enum */
	}
}

/* lowerCamelCase JSON name of a proto field name. */
static void json_name(const char *name, char *out, size_t cap)
{
	size_t o = 0;
	int up = 0;

	for (; *name && o + 1 < cap; name++) {
		if (*name == '_') {
			up = 1;
			continue;
		}
		out[o++] = up && *name >= 'a' && *name <= 'z' ? (char)(*name - 'a' + 'A') : *name;
		up = 0;
	}
	out[o] = '\0';
}

/* ---- encode ------------------------------------------------------------------- */

static json_t *msg_to_json(const ProtobufCMessage *m);

static json_t *i64_json(int64_t v)
{
	char s[24];
	snprintf(s, sizeof(s), "%" PRId64, v);
	return json_string(s);
}

static json_t *bytes_json(const ProtobufCBinaryData *b)
{
	wt_buf o = WT_BUF_INIT;
	json_t *j;
	size_t i;

	for (i = 0; i < b->len; i += 3) {
		uint32_t v = (uint32_t)b->data[i] << 16;
		size_t n = b->len - i < 3 ? b->len - i : 3;
		if (n > 1)
			v |= (uint32_t)b->data[i + 1] << 8;
		if (n > 2)
			v |= b->data[i + 2];
		wt_buf_putc(&o, b64[(v >> 18) & 63]);
		wt_buf_putc(&o, b64[(v >> 12) & 63]);
		wt_buf_putc(&o, n > 1 ? b64[(v >> 6) & 63] : '=');
		wt_buf_putc(&o, n > 2 ? b64[v & 63] : '=');
	}
	wt_buf_putc(&o, '\0');
	j = o.oom ? NULL : json_string((const char *)o.data);
	wt_buf_free(&o);
	return j;
}

/* JSON of one element at p of field f. */
static json_t *elem_json(const ProtobufCFieldDescriptor *f, const void *p)
{
	switch (f->type) {
	case PROTOBUF_C_TYPE_INT32: case PROTOBUF_C_TYPE_SINT32: case PROTOBUF_C_TYPE_SFIXED32:
		return json_integer(*(const int32_t *)p);
	case PROTOBUF_C_TYPE_UINT32: case PROTOBUF_C_TYPE_FIXED32:
		return json_integer(*(const uint32_t *)p);
	case PROTOBUF_C_TYPE_INT64: case PROTOBUF_C_TYPE_SINT64: case PROTOBUF_C_TYPE_SFIXED64:
		return i64_json(*(const int64_t *)p);
	case PROTOBUF_C_TYPE_UINT64: case PROTOBUF_C_TYPE_FIXED64: {
		char s[24];
		snprintf(s, sizeof(s), "%" PRIu64, *(const uint64_t *)p);
		return json_string(s);
	}
	case PROTOBUF_C_TYPE_FLOAT: case PROTOBUF_C_TYPE_DOUBLE: {
		double d = f->type == PROTOBUF_C_TYPE_FLOAT ? *(const float *)p : *(const double *)p;
		if (isnan(d))
			return json_string("NaN");
		if (isinf(d))
			return json_string(d > 0 ? "Infinity" : "-Infinity");
		return json_real(d);
	}
	case PROTOBUF_C_TYPE_BOOL:
		return json_boolean(*(const protobuf_c_boolean *)p);
	case PROTOBUF_C_TYPE_ENUM: {
		const ProtobufCEnumValue *ev =
			protobuf_c_enum_descriptor_get_value(f->descriptor, *(const int *)p);
		return ev ? json_string(ev->name) : json_integer(*(const int *)p);
	}
	case PROTOBUF_C_TYPE_STRING: {
		const char *s = *(char *const *)p;
		return json_string(s ? s : "");
	}
	case PROTOBUF_C_TYPE_BYTES:
		return bytes_json(p);
	case PROTOBUF_C_TYPE_MESSAGE: {
		const ProtobufCMessage *sub = *(ProtobufCMessage *const *)p;
		return sub ? msg_to_json(sub) : json_object();
	}
	}
	return NULL;
}

/* 1 when a proto3 (no presence) field holds its default and is left out. */
static int is_default(const ProtobufCFieldDescriptor *f, const void *p)
{
	switch (f->type) {
	case PROTOBUF_C_TYPE_STRING: {
		const char *s = *(char *const *)p;
		return !s || !*s;
	}
	case PROTOBUF_C_TYPE_BYTES: return ((const ProtobufCBinaryData *)p)->len == 0;
	case PROTOBUF_C_TYPE_MESSAGE: return *(ProtobufCMessage *const *)p == NULL;
	case PROTOBUF_C_TYPE_DOUBLE: return *(const double *)p == 0;
	case PROTOBUF_C_TYPE_FLOAT: return *(const float *)p == 0;
	default: {
		size_t n = elem_size(f->type);
		static const uint8_t zero[8];
		return !memcmp(p, zero, n);
	}
	}
}

static json_t *msg_to_json(const ProtobufCMessage *m)
{
	const ProtobufCMessageDescriptor *d = m->descriptor;
	json_t *o = json_object();
	unsigned i;

	for (i = 0; o && i < d->n_fields; i++) {
		const ProtobufCFieldDescriptor *f = &d->fields[i];
		const uint8_t *base = (const uint8_t *)m;
		const void *p = base + f->offset;
		char name[128];
		json_t *v = NULL;

		json_name(f->name, name, sizeof(name));
		if (f->label == PROTOBUF_C_LABEL_REPEATED) {
			size_t n = *(const size_t *)(base + f->quantifier_offset), k;
			const uint8_t *arr = *(uint8_t *const *)p;
			if (!n)
				continue;
			v = json_array();
			for (k = 0; v && k < n; k++)
				if (json_array_append_new(v, elem_json(f, arr + k * elem_size(f->type)))) {
					json_decref(v);
					v = NULL;
				}
		} else {
			if (f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF) {
				if (*(const uint32_t *)(base + f->quantifier_offset) != f->id)
					continue;
			} else if (f->label == PROTOBUF_C_LABEL_OPTIONAL && f->quantifier_offset &&
				   f->type != PROTOBUF_C_TYPE_MESSAGE && f->type != PROTOBUF_C_TYPE_STRING) {
				if (!*(const protobuf_c_boolean *)(base + f->quantifier_offset))
					continue;
			} else if (is_default(f, p)) {
				continue;
			}
			v = elem_json(f, p);
		}
		if (!v || json_object_set_new(o, name, v)) {
			json_decref(o);
			o = NULL;
		}
	}
	return o;
}

int hub_connect_encode(const ProtobufCMessage *m, int enc, wt_buf *out)
{
	if (enc == HUB_CONNECT_JSON) {
		json_t *j = msg_to_json(m);
		char *s = j ? json_dumps(j, JSON_COMPACT) : NULL;
		int rc = s ? wt_buf_puts(out, s) : WT_ENOMEM;
		free(s);
		json_decref(j);
		return rc;
	}
	{
		size_t n = protobuf_c_message_get_packed_size(m);
		if (wt_buf_reserve(out, n ? n : 1))
			return WT_ENOMEM;
		protobuf_c_message_pack(m, out->data + out->len);
		out->len += n;
	}
	return 0;
}

/* ---- decode ------------------------------------------------------------------- */

static int json_to_msg(const ProtobufCMessageDescriptor *d, json_t *o, ProtobufCMessage **out, int depth,
		       const char *path, wt_err *err);

static int b64_val(int c)
{
	const char *p;
	if (c == '-')
		return 62;
	if (c == '_')
		return 63;
	p = c ? strchr(b64, c) : NULL;
	return p ? (int)(p - b64) : -1;
}

static int parse_i64(json_t *v, int64_t *out)
{
	char *end;
	if (json_is_integer(v)) {
		*out = json_integer_value(v);
		return 0;
	}
	if (json_is_real(v) && json_real_value(v) == (double)(int64_t)json_real_value(v)) {
		*out = (int64_t)json_real_value(v);
		return 0;
	}
	if (!json_is_string(v) || !*json_string_value(v))
		return -1;
	*out = strtoll(json_string_value(v), &end, 10);
	return *end ? -1 : 0;
}

/* Parse one element of field f from v into p. */
static int elem_from_json(const ProtobufCFieldDescriptor *f, json_t *v, void *p, int depth, const char *path,
			  wt_err *err)
{
	int64_t i;

	switch (f->type) {
	case PROTOBUF_C_TYPE_INT32: case PROTOBUF_C_TYPE_SINT32: case PROTOBUF_C_TYPE_SFIXED32:
		if (parse_i64(v, &i) || i < INT32_MIN || i > INT32_MAX)
			goto bad;
		*(int32_t *)p = (int32_t)i;
		return 0;
	case PROTOBUF_C_TYPE_UINT32: case PROTOBUF_C_TYPE_FIXED32:
		if (parse_i64(v, &i) || i < 0 || i > UINT32_MAX)
			goto bad;
		*(uint32_t *)p = (uint32_t)i;
		return 0;
	case PROTOBUF_C_TYPE_INT64: case PROTOBUF_C_TYPE_SINT64: case PROTOBUF_C_TYPE_SFIXED64:
	case PROTOBUF_C_TYPE_UINT64: case PROTOBUF_C_TYPE_FIXED64:
		if (parse_i64(v, &i))
			goto bad;
		*(int64_t *)p = i;
		return 0;
	case PROTOBUF_C_TYPE_FLOAT: case PROTOBUF_C_TYPE_DOUBLE: {
		double d;
		if (json_is_number(v))
			d = json_number_value(v);
		else if (json_is_string(v) && !strcmp(json_string_value(v), "NaN"))
			d = NAN;
		else if (json_is_string(v) && !strcmp(json_string_value(v), "Infinity"))
			d = INFINITY;
		else if (json_is_string(v) && !strcmp(json_string_value(v), "-Infinity"))
			d = -INFINITY;
		else if (json_is_string(v)) {
			char *end;
			d = strtod(json_string_value(v), &end);
			if (*end || !*json_string_value(v))
				goto bad;
		} else
			goto bad;
		if (f->type == PROTOBUF_C_TYPE_FLOAT)
			*(float *)p = (float)d;
		else
			*(double *)p = d;
		return 0;
	}
	case PROTOBUF_C_TYPE_BOOL:
		if (!json_is_boolean(v))
			goto bad;
		*(protobuf_c_boolean *)p = json_is_true(v);
		return 0;
	case PROTOBUF_C_TYPE_ENUM:
		if (json_is_string(v)) {
			const ProtobufCEnumValue *ev =
				protobuf_c_enum_descriptor_get_value_by_name(f->descriptor, json_string_value(v));
			if (!ev)
				return wt_err_set(err, WT_EINVAL, "%s: unknown enum value \"%.64s\"", path,
						  json_string_value(v));
			*(int *)p = ev->value;
			return 0;
		}
		if (parse_i64(v, &i) || i < INT32_MIN || i > INT32_MAX)
			goto bad;
		*(int *)p = (int)i;
		return 0;
	case PROTOBUF_C_TYPE_STRING: {
		char *s;
		if (!json_is_string(v))
			goto bad;
		if (!(s = strdup(json_string_value(v))))
			return wt_err_set(err, WT_ENOMEM, "out of memory");
		*(char **)p = s;
		return 0;
	}
	case PROTOBUF_C_TYPE_BYTES: {
		ProtobufCBinaryData *b = p;
		const char *s;
		size_t n, k, o = 0;
		uint32_t acc = 0;
		int bits = 0;
		if (!json_is_string(v))
			goto bad;
		s = json_string_value(v);
		n = strlen(s);
		if (!(b->data = malloc(n / 4 * 3 + 3)))
			return wt_err_set(err, WT_ENOMEM, "out of memory");
		for (k = 0; k < n && s[k] != '='; k++) {
			int c = b64_val((unsigned char)s[k]);
			if (c < 0)
				return wt_err_set(err, WT_EINVAL, "%s: not base64 at character %zu", path, k);
			acc = acc << 6 | (uint32_t)c;
			bits += 6;
			if (bits >= 8) {
				bits -= 8;
				b->data[o++] = (uint8_t)(acc >> bits);
			}
		}
		b->len = o;
		return 0;
	}
	case PROTOBUF_C_TYPE_MESSAGE:
		if (!json_is_object(v))
			goto bad;
		return json_to_msg(f->descriptor, v, (ProtobufCMessage **)p, depth + 1, path, err);
	}
bad:
	return wt_err_set(err, WT_EINVAL, "%s: not a valid %s value", path,
			  f->type == PROTOBUF_C_TYPE_MESSAGE ? "message" : f->type == PROTOBUF_C_TYPE_STRING ? "string"
			  : f->type == PROTOBUF_C_TYPE_BOOL ? "bool" : "number");
}

static const ProtobufCFieldDescriptor *find_field(const ProtobufCMessageDescriptor *d, const char *key)
{
	const ProtobufCFieldDescriptor *f = protobuf_c_message_descriptor_get_field_by_name(d, key);
	unsigned i;
	char jn[128];

	if (f)
		return f;
	for (i = 0; i < d->n_fields; i++) {
		json_name(d->fields[i].name, jn, sizeof(jn));
		if (!strcmp(jn, key))
			return &d->fields[i];
	}
	return NULL;
}

static int json_to_msg(const ProtobufCMessageDescriptor *d, json_t *o, ProtobufCMessage **out, int depth,
		       const char *path, wt_err *err)
{
	ProtobufCMessage *m;
	const char *key;
	json_t *v;
	int rc = 0;

	if (depth > JSON_MAX_DEPTH)
		return wt_err_set(err, WT_EINVAL, "%s: nested deeper than %d", path, JSON_MAX_DEPTH);
	if (!(m = malloc(d->sizeof_message)))
		return wt_err_set(err, WT_ENOMEM, "out of memory");
	protobuf_c_message_init(d, m);
	*out = m;
	json_object_foreach(o, key, v) {
		const ProtobufCFieldDescriptor *f = find_field(d, key);
		uint8_t *base = (uint8_t *)m;
		char sub[256];

		if (!f || json_is_null(v))
			continue; /* unknown fields are skipped, as Connect servers do */
		snprintf(sub, sizeof(sub), "%s%s%s", path, *path ? "." : "", key);
		if (f->label == PROTOBUF_C_LABEL_REPEATED) {
			size_t n = json_array_size(v), k, es = elem_size(f->type);
			uint8_t *arr;
			if (!json_is_array(v))
				return wt_err_set(err, WT_EINVAL, "%s: expected an array", sub);
			if (!n)
				continue;
			if (!(arr = calloc(n, es)))
				return wt_err_set(err, WT_ENOMEM, "out of memory");
			*(uint8_t **)(base + f->offset) = arr;
			for (k = 0; k < n; k++) {
				/* count each element as it is set so a failure frees what exists */
				char el[300];
				snprintf(el, sizeof(el), "%s[%zu]", sub, k);
				if (f->type == PROTOBUF_C_TYPE_STRING)
					*(char **)(arr + k * es) = NULL;
				*(size_t *)(base + f->quantifier_offset) = k + 1;
				if ((rc = elem_from_json(f, json_array_get(v, k), arr + k * es, depth, el, err)))
					return rc;
			}
			continue;
		}
		if (f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF)
			*(uint32_t *)(base + f->quantifier_offset) = f->id;
		else if (f->label == PROTOBUF_C_LABEL_OPTIONAL && f->quantifier_offset &&
			 f->type != PROTOBUF_C_TYPE_MESSAGE && f->type != PROTOBUF_C_TYPE_STRING)
			*(protobuf_c_boolean *)(base + f->quantifier_offset) = 1;
		if (f->type == PROTOBUF_C_TYPE_STRING || f->type == PROTOBUF_C_TYPE_MESSAGE) {
			/* replace (and free) a value a duplicate key set before */
			void **slot = (void **)(base + f->offset);
			if (*slot && *slot != f->default_value) {
				if (f->type == PROTOBUF_C_TYPE_MESSAGE)
					protobuf_c_message_free_unpacked(*slot, NULL);
				else
					free(*slot);
			}
			*slot = (void *)f->default_value;
		}
		if ((rc = elem_from_json(f, v, base + f->offset, depth, sub, err)))
			return rc;
	}
	return 0;
}

int hub_connect_decode(const ProtobufCMessageDescriptor *d, int enc, const uint8_t *body, size_t len,
		       ProtobufCMessage **out, wt_err *err)
{
	*out = NULL;
	if (enc == HUB_CONNECT_JSON) {
		json_error_t je;
		json_t *o = json_loadb((const char *)body, len, 0, &je);
		int rc;

		if (!len) /* an empty body is the empty message */
			o = json_object();
		if (!json_is_object(o)) {
			json_decref(o);
			return wt_err_set(err, WT_EINVAL, "%s: JSON body is not an object (byte %d: %s)", d->name,
					  je.position, je.text);
		}
		rc = json_to_msg(d, o, out, 0, "", err);
		json_decref(o);
		if (rc && *out) {
			protobuf_c_message_free_unpacked(*out, NULL);
			*out = NULL;
		}
		return rc;
	}
	*out = protobuf_c_message_unpack(d, NULL, len, body);
	if (!*out)
		return wt_err_set(err, WT_EINVAL, "%s: body is not a valid protobuf message", d->name);
	return 0;
}

/* ---- replies ------------------------------------------------------------------ */

const char *hub_connect_code(int wt_code)
{
	switch (wt_code) {
	case WT_EINVAL: return "invalid_argument";
	case WT_ELIMIT: return "resource_exhausted";
	case WT_EFORMAT: return "invalid_argument";
	case WT_EAUTH: return "unauthenticated";
	case WT_ENOTFOUND: return "not_found";
	case WT_EUNAVAIL: return "unavailable";
	case WT_EFORBIDDEN: return "permission_denied";
	default: return "internal";
	}
}

static int connect_status(int wt_code)
{
	switch (wt_code) {
	case WT_EINVAL: case WT_EFORMAT: return 400;
	case WT_ELIMIT: return 429;
	case WT_EAUTH: return 401;
	case WT_ENOTFOUND: return 404;
	case WT_EUNAVAIL: return 503;
	case WT_EFORBIDDEN: return 403;
	default: return 500;
	}
}

void hub_connect_fail(hub_req *r, const wt_err *err)
{
	int code = err->code ? err->code : WT_EIO;
	json_t *o = json_pack("{s:s, s:s}", "code", hub_connect_code(code), "message", err->msg);
	char *s = o ? json_dumps(o, JSON_COMPACT) : NULL;
	int status = connect_status(code);

	if (code == WT_EAUTH)
		evhttp_add_header(evhttp_request_get_output_headers(r->req), "WWW-Authenticate", "Bearer");
	hub_req_count(r, status);
	wt_http_send_bytes(r->req, status, "application/json", s ? s : "{\"code\":\"internal\"}",
			   s ? strlen(s) : 19);
	free(s);
	json_decref(o);
}

void hub_connect_reply(hub_req *r, int enc, const ProtobufCMessage *m)
{
	wt_buf b = WT_BUF_INIT;
	wt_err err = {0, ""};

	if (hub_connect_encode(m, enc, &b) || b.oom) {
		wt_err_set(&err, WT_ENOMEM, "out of memory encoding the reply");
		hub_connect_fail(r, &err);
	} else {
		hub_req_count(r, 200);
		wt_http_send_bytes(r->req, 200, enc == HUB_CONNECT_JSON ? "application/json" : "application/proto",
				   b.data ? (const char *)b.data : "", b.len);
	}
	wt_buf_free(&b);
}
