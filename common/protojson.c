/*
 * protojson.c — proto3 JSON → protobuf wire bytes (see protojson.h).
 *
 * The encoder walks the descriptor and the parsed JSON together; the JSON
 * path of the value being encoded is kept in ctx.path for error messages.
 */
#include "protojson.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct ctx {
	const char *const *aliases;
	size_t max_out;
	size_t unknown;
	const char *what;
	wt_err *err;
	char path[512];
	size_t plen;
	wt_buf scratch[WT_PROTOJSON_MAX_DEPTH + 1]; /* one per nesting level, reused */
} ctx;

static int fail(ctx *c, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(ctx *c, int code, const char *fmt, ...)
{
	char msg[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return wt_err_set(c->err, code, "%s: %s: %s", c->what, c->plen ? c->path : "(top)", msg);
}

/* Append ".key" or "[i]" to the path; returns the old length to restore. */
static size_t path_push(ctx *c, const char *key, long idx)
{
	size_t old = c->plen;
	int n;

	if (c->plen >= sizeof(c->path) - 1)
		return old;
	if (key)
		n = snprintf(c->path + c->plen, sizeof(c->path) - c->plen, "%s%s", c->plen ? "." : "", key);
	else
		n = snprintf(c->path + c->plen, sizeof(c->path) - c->plen, "[%ld]", idx);
	if (n > 0)
		c->plen = c->plen + (size_t)n < sizeof(c->path) ? c->plen + (size_t)n : sizeof(c->path) - 1;
	return old;
}

static void path_pop(ctx *c, size_t old)
{
	c->plen = old;
	c->path[old] = '\0';
}

/* Does key name the field: its proto name, or its lowerCamelCase JSON name
 * ("scope_profiles" → "scopeProfiles")? */
static int key_is(const ProtobufCFieldDescriptor *f, const char *key)
{
	const char *p = f->name, *k = key;

	if (!strcmp(p, key))
		return 1;
	while (*p && *k) {
		if (*p == '_' && p[1]) {
			p++;
			if ((*p >= 'a' && *p <= 'z' ? *p - 'a' + 'A' : *p) != *k)
				return 0;
		} else if (*p != *k) {
			return 0;
		}
		p++;
		k++;
	}
	return !*p && !*k;
}

/* ---- wire output ------------------------------------------------------------ */
static int put(ctx *c, wt_buf *b, const void *p, size_t n)
{
	if (b->len + n > c->max_out)
		return fail(c, WT_ELIMIT, "the protobuf encoding exceeds %zu bytes", c->max_out);
	if (wt_buf_append(b, p, n))
		return fail(c, WT_ENOMEM, "out of memory");
	return 0;
}

static int put_varint(ctx *c, wt_buf *b, uint64_t v)
{
	uint8_t tmp[10];
	size_t n = 0;

	do {
		tmp[n] = (uint8_t)(v & 0x7f);
		v >>= 7;
		if (v)
			tmp[n] |= 0x80;
		n++;
	} while (v);
	return put(c, b, tmp, n);
}

static int put_fixed(ctx *c, wt_buf *b, uint64_t v, size_t n)
{
	uint8_t tmp[8];

	for (size_t i = 0; i < n; i++)
		tmp[i] = (uint8_t)(v >> (8 * i));
	return put(c, b, tmp, n);
}

static int put_tag(ctx *c, wt_buf *b, unsigned id, unsigned wire)
{
	return put_varint(c, b, ((uint64_t)id << 3) | wire);
}

/* ---- scalars ---------------------------------------------------------------- */
static int is_packable(ProtobufCType t)
{
	return t != PROTOBUF_C_TYPE_STRING && t != PROTOBUF_C_TYPE_BYTES && t != PROTOBUF_C_TYPE_MESSAGE;
}

static unsigned wire_of(ProtobufCType t)
{
	switch (t) {
	case PROTOBUF_C_TYPE_SFIXED32:
	case PROTOBUF_C_TYPE_FIXED32:
	case PROTOBUF_C_TYPE_FLOAT: return 5;
	case PROTOBUF_C_TYPE_SFIXED64:
	case PROTOBUF_C_TYPE_FIXED64:
	case PROTOBUF_C_TYPE_DOUBLE: return 1;
	case PROTOBUF_C_TYPE_STRING:
	case PROTOBUF_C_TYPE_BYTES:
	case PROTOBUF_C_TYPE_MESSAGE: return 2;
	default: return 0;
	}
}

/* An integer from a JSON number or a decimal string, as a signed or an
 * unsigned 64-bit value. */
static int get_int(ctx *c, const json_t *v, int is_signed, int64_t *s, uint64_t *u)
{
	char *end;

	if (json_is_integer(v)) {
		json_int_t x = json_integer_value(v);
		if (!is_signed && x < 0)
			return fail(c, WT_EINVAL, "negative value %" JSON_INTEGER_FORMAT " for an unsigned field", x);
		*s = (int64_t)x;
		*u = (uint64_t)x;
		return 0;
	}
	if (json_is_real(v)) {
		double d = json_real_value(v);
		if (d != floor(d) || fabs(d) > 9007199254740992.0 || (!is_signed && d < 0))
			return fail(c, WT_EINVAL, "%g is not an integer of this field's type", d);
		*s = (int64_t)d;
		*u = (uint64_t)(int64_t)d;
		return 0;
	}
	if (json_is_string(v)) {
		const char *t = json_string_value(v);
		errno = 0;
		if (is_signed) {
			*s = strtoll(t, &end, 10);
			*u = (uint64_t)*s;
		} else {
			*u = strtoull(t, &end, 10);
			*s = (int64_t)*u;
		}
		if (!*t || *end || errno || (!is_signed && t[0] == '-'))
			return fail(c, WT_EINVAL, "\"%.40s\" is not a %s 64-bit integer", t,
				    is_signed ? "signed" : "unsigned");
		return 0;
	}
	return fail(c, WT_EINVAL, "expected an integer (a number or a decimal string)");
}

static int get_double(ctx *c, const json_t *v, double *d)
{
	if (json_is_number(v)) {
		*d = json_number_value(v);
		return 0;
	}
	if (json_is_string(v)) {
		const char *t = json_string_value(v);
		char *end;
		if (!strcmp(t, "NaN"))
			*d = NAN;
		else if (!strcmp(t, "Infinity"))
			*d = INFINITY;
		else if (!strcmp(t, "-Infinity"))
			*d = -INFINITY;
		else {
			*d = strtod(t, &end);
			if (!*t || *end)
				return fail(c, WT_EINVAL, "\"%.40s\" is not a number", t);
		}
		return 0;
	}
	return fail(c, WT_EINVAL, "expected a number");
}

static int b64_val(int ch)
{
	if (ch >= 'A' && ch <= 'Z') return ch - 'A';
	if (ch >= 'a' && ch <= 'z') return ch - 'a' + 26;
	if (ch >= '0' && ch <= '9') return ch - '0' + 52;
	if (ch == '+' || ch == '-') return 62;
	if (ch == '/' || ch == '_') return 63;
	return -1;
}

static int hex_val(int ch)
{
	if (ch >= '0' && ch <= '9') return ch - '0';
	if (ch >= 'a' && ch <= 'f') return ch - 'a' + 10;
	if (ch >= 'A' && ch <= 'F') return ch - 'A' + 10;
	return -1;
}

/* Decode a bytes value into *out (a scratch buffer). */
static int get_bytes(ctx *c, const ProtobufCFieldDescriptor *f, const json_t *v, wt_buf *out)
{
	const char *s;
	size_t n, i, nl = strlen(f->name);
	uint32_t acc = 0;
	int bits = 0;

	if (!json_is_string(v))
		return fail(c, WT_EINVAL, "expected a string (base64, or hex for ids)");
	s = json_string_value(v);
	n = json_string_length(v);
	if (nl > 3 && !strcmp(f->name + nl - 3, "_id") && n % 2 == 0) {
		for (i = 0; i < n && hex_val(s[i]) >= 0; i++)
			;
		if (i == n) { /* OTLP/JSON writes trace, span and profile ids in hex */
			for (i = 0; i < n; i += 2) {
				uint8_t b = (uint8_t)(hex_val(s[i]) << 4 | hex_val(s[i + 1]));
				if (put(c, out, &b, 1))
					return c->err->code;
			}
			return 0;
		}
	}
	while (n && s[n - 1] == '=')
		n--;
	for (i = 0; i < n; i++) {
		int x = b64_val((unsigned char)s[i]);
		if (x < 0)
			return fail(c, WT_EINVAL, "invalid base64 at character %zu", i);
		acc = acc << 6 | (uint32_t)x;
		bits += 6;
		if (bits >= 8) {
			uint8_t b = (uint8_t)(acc >> (bits - 8));
			bits -= 8;
			if (put(c, out, &b, 1))
				return c->err->code;
		}
	}
	if (bits >= 6)
		return fail(c, WT_EINVAL, "truncated base64 (%zu characters)", n);
	return 0;
}

/* One scalar value, without its tag (packed or not). */
static int put_scalar(ctx *c, const ProtobufCFieldDescriptor *f, const json_t *v, wt_buf *b)
{
	int64_t s = 0;
	uint64_t u = 0;
	double d;

	switch (f->type) {
	case PROTOBUF_C_TYPE_BOOL:
		if (!json_is_boolean(v))
			return fail(c, WT_EINVAL, "expected true or false");
		return put_varint(c, b, json_is_true(v));
	case PROTOBUF_C_TYPE_ENUM: {
		const ProtobufCEnumDescriptor *ed = f->descriptor;
		if (json_is_string(v)) {
			const ProtobufCEnumValue *ev =
				protobuf_c_enum_descriptor_get_value_by_name(ed, json_string_value(v));
			if (!ev)
				return fail(c, WT_EINVAL, "\"%.40s\" is not a value of %s", json_string_value(v),
					    ed->name);
			return put_varint(c, b, (uint64_t)(int64_t)ev->value);
		}
		if (get_int(c, v, 1, &s, &u))
			return c->err->code;
		if (s < INT32_MIN || s > INT32_MAX)
			return fail(c, WT_EINVAL, "enum value %" PRId64 " out of range", s);
		return put_varint(c, b, (uint64_t)s);
	}
	case PROTOBUF_C_TYPE_INT32:
	case PROTOBUF_C_TYPE_SINT32:
	case PROTOBUF_C_TYPE_SFIXED32:
		if (get_int(c, v, 1, &s, &u))
			return c->err->code;
		if (s < INT32_MIN || s > INT32_MAX)
			return fail(c, WT_EINVAL, "%" PRId64 " does not fit a 32-bit integer", s);
		if (f->type == PROTOBUF_C_TYPE_SINT32)
			return put_varint(c, b, (uint32_t)(((uint32_t)s << 1) ^ (uint32_t)(s >> 31)));
		if (f->type == PROTOBUF_C_TYPE_SFIXED32)
			return put_fixed(c, b, (uint32_t)s, 4);
		return put_varint(c, b, (uint64_t)s); /* negative int32: 10 bytes, as protobuf does */
	case PROTOBUF_C_TYPE_UINT32:
	case PROTOBUF_C_TYPE_FIXED32:
		if (get_int(c, v, 0, &s, &u))
			return c->err->code;
		if (u > UINT32_MAX)
			return fail(c, WT_EINVAL, "%" PRIu64 " does not fit an unsigned 32-bit integer", u);
		return f->type == PROTOBUF_C_TYPE_FIXED32 ? put_fixed(c, b, u, 4) : put_varint(c, b, u);
	case PROTOBUF_C_TYPE_INT64:
	case PROTOBUF_C_TYPE_SINT64:
	case PROTOBUF_C_TYPE_SFIXED64:
		if (get_int(c, v, 1, &s, &u))
			return c->err->code;
		if (f->type == PROTOBUF_C_TYPE_SINT64)
			return put_varint(c, b, ((uint64_t)s << 1) ^ (uint64_t)(s >> 63));
		if (f->type == PROTOBUF_C_TYPE_SFIXED64)
			return put_fixed(c, b, (uint64_t)s, 8);
		return put_varint(c, b, (uint64_t)s);
	case PROTOBUF_C_TYPE_UINT64:
	case PROTOBUF_C_TYPE_FIXED64:
		if (get_int(c, v, 0, &s, &u))
			return c->err->code;
		return f->type == PROTOBUF_C_TYPE_FIXED64 ? put_fixed(c, b, u, 8) : put_varint(c, b, u);
	case PROTOBUF_C_TYPE_FLOAT: {
		float x;
		uint32_t bits32;
		if (get_double(c, v, &d))
			return c->err->code;
		x = (float)d;
		memcpy(&bits32, &x, 4);
		return put_fixed(c, b, bits32, 4);
	}
	case PROTOBUF_C_TYPE_DOUBLE: {
		uint64_t bits64;
		if (get_double(c, v, &d))
			return c->err->code;
		memcpy(&bits64, &d, 8);
		return put_fixed(c, b, bits64, 8);
	}
	default:
		return fail(c, WT_EINVAL, "internal: not a scalar field");
	}
}

static int encode_msg(ctx *c, const ProtobufCMessageDescriptor *d, const json_t *obj, wt_buf *out,
		      int depth);

/* One non-packed value with its tag: string, bytes, message, or a scalar of
 * a singular field. */
static int put_value(ctx *c, const ProtobufCFieldDescriptor *f, const json_t *v, wt_buf *out, int depth)
{
	wt_buf *tmp;

	switch (f->type) {
	case PROTOBUF_C_TYPE_STRING:
		if (!json_is_string(v))
			return fail(c, WT_EINVAL, "expected a string");
		if (put_tag(c, out, f->id, 2) || put_varint(c, out, json_string_length(v)) ||
		    put(c, out, json_string_value(v), json_string_length(v)))
			return c->err->code;
		return 0;
	case PROTOBUF_C_TYPE_BYTES:
	case PROTOBUF_C_TYPE_MESSAGE:
		if (depth >= WT_PROTOJSON_MAX_DEPTH)
			return fail(c, WT_ELIMIT, "nested deeper than %d messages", WT_PROTOJSON_MAX_DEPTH);
		tmp = &c->scratch[depth + 1];
		wt_buf_reset(tmp);
		if (f->type == PROTOBUF_C_TYPE_BYTES ? get_bytes(c, f, v, tmp)
						     : encode_msg(c, f->descriptor, v, tmp, depth + 1))
			return c->err->code;
		if (put_tag(c, out, f->id, 2) || put_varint(c, out, tmp->len) || put(c, out, tmp->data, tmp->len))
			return c->err->code;
		return 0;
	default:
		if (put_tag(c, out, f->id, wire_of(f->type)))
			return c->err->code;
		return put_scalar(c, f, v, out);
	}
}

static int encode_field(ctx *c, const ProtobufCFieldDescriptor *f, const json_t *v, wt_buf *out, int depth)
{
	size_t i;

	if (json_is_null(v))
		return 0;
	if (f->label != PROTOBUF_C_LABEL_REPEATED)
		return put_value(c, f, v, out, depth);
	if (!json_is_array(v))
		return fail(c, WT_EINVAL, "expected an array");
	if (is_packable(f->type)) {
		wt_buf *tmp;
		if (!json_array_size(v))
			return 0;
		if (depth >= WT_PROTOJSON_MAX_DEPTH)
			return fail(c, WT_ELIMIT, "nested deeper than %d messages", WT_PROTOJSON_MAX_DEPTH);
		tmp = &c->scratch[depth + 1];
		wt_buf_reset(tmp);
		for (i = 0; i < json_array_size(v); i++) {
			size_t old = path_push(c, NULL, (long)i);
			int rc = put_scalar(c, f, json_array_get(v, i), tmp);
			path_pop(c, old);
			if (rc)
				return rc;
		}
		if (put_tag(c, out, f->id, 2) || put_varint(c, out, tmp->len) || put(c, out, tmp->data, tmp->len))
			return c->err->code;
		return 0;
	}
	for (i = 0; i < json_array_size(v); i++) {
		size_t old = path_push(c, NULL, (long)i);
		const json_t *e = json_array_get(v, i);
		int rc = json_is_null(e) ? fail(c, WT_EINVAL, "null inside an array") : put_value(c, f, e, out, depth);
		path_pop(c, old);
		if (rc)
			return rc;
	}
	return 0;
}

static int encode_msg(ctx *c, const ProtobufCMessageDescriptor *d, const json_t *obj, wt_buf *out,
		      int depth)
{
	const char *key;
	json_t *v;

	if (!json_is_object(obj))
		return fail(c, WT_EINVAL, "expected an object (message %s)", d->short_name);
	json_object_foreach((json_t *)obj, key, v) {
		const ProtobufCFieldDescriptor *f = NULL;
		size_t old;
		int rc;

		for (unsigned i = 0; i < d->n_fields && !f; i++)
			if (key_is(&d->fields[i], key))
				f = &d->fields[i];
		for (const char *const *a = c->aliases; !f && a && a[0]; a += 3)
			if (!strcmp(a[0], d->name) && !strcmp(a[1], key))
				f = protobuf_c_message_descriptor_get_field_by_name(d, a[2]);
		if (!f) {
			c->unknown++;
			continue;
		}
		old = path_push(c, key, 0);
		rc = encode_field(c, f, v, out, depth);
		path_pop(c, old);
		if (rc)
			return rc;
	}
	return 0;
}

int wt_protojson_encode(const ProtobufCMessageDescriptor *d, const json_t *root, size_t max_out,
			const char *what, const char *const *aliases, wt_buf *out, size_t *unknown,
			wt_err *err)
{
	ctx *c = calloc(1, sizeof(*c));
	int rc;

	*unknown = 0;
	if (!c)
		return wt_err_set(err, WT_ENOMEM, "%s: out of memory", what);
	c->max_out = max_out;
	c->aliases = aliases;
	c->what = what;
	c->err = err;
	rc = encode_msg(c, d, root, out, 0);
	*unknown = c->unknown;
	for (size_t i = 0; i <= WT_PROTOJSON_MAX_DEPTH; i++)
		wt_buf_free(&c->scratch[i]);
	free(c);
	return rc;
}
