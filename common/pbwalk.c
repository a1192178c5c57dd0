/*
 * pbwalk.c — schema-driven validation walk over protobuf wire bytes (see
 * pbwalk.h). No allocation; recursion depth is bounded by WT_PB_MAX_DEPTH
 * and by the (non-recursive) schemas we use.
 */
#include "pbwalk.h"

#include <stdio.h>
#include <string.h>

enum { WT_VARINT = 0, WT_I64 = 1, WT_LEN = 2, WT_SGROUP = 3, WT_EGROUP = 4, WT_I32 = 5 };

typedef struct pb_frame {
	const char *name; /* field name that led here; NULL at the top */
	uint32_t index;   /* element index for repeated fields */
	int repeated;
} pb_frame;

struct wt_pb_walker {
	const uint8_t *buf;
	const char *what;
	wt_pb_check_fn check;
	void *ud;
	wt_err *err;
	int depth;
	pb_frame stack[WT_PB_MAX_DEPTH + 1];
	char path[256];
};

int wt_pb_varint(const uint8_t *buf, size_t len, size_t *off, uint64_t *v)
{
	uint64_t r = 0;
	size_t i = *off;
	int shift;

	for (shift = 0; shift < 64; shift += 7) {
		uint8_t b;

		if (i >= len)
			return -1;
		b = buf[i++];
		/* the 10th byte may only carry the top bit of a 64-bit value */
		if (shift == 63 && b > 1)
			return -1;
		r |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80)) {
			*off = i;
			*v = r;
			return 0;
		}
	}
	return -1;
}

const char *wt_pb_walker_path(wt_pb_walker *w)
{
	size_t n = 0;
	int d;

	w->path[0] = 0;
	for (d = 1; d <= w->depth && n < sizeof(w->path); d++) {
		const pb_frame *f = &w->stack[d];
		int k;

		if (f->repeated)
			k = snprintf(w->path + n, sizeof(w->path) - n, "%s%s[%u]",
				     n ? "." : "", f->name, f->index);
		else
			k = snprintf(w->path + n, sizeof(w->path) - n, "%s%s", n ? "." : "", f->name);
		if (k < 0)
			break;
		n += (size_t)k;
	}
	return w->path;
}

static const char *wire_name(int wt)
{
	static const char *const names[] = {"varint", "fixed64", "length-delimited",
					    "start-group", "end-group", "fixed32", "6", "7"};
	return names[wt & 7];
}

/* "what: path.field (field N) at byte OFF: " + message */
static int fail(wt_pb_walker *w, const ProtobufCFieldDescriptor *f, uint32_t num,
		size_t off, const char *msg)
{
	const char *path = wt_pb_walker_path(w);

	if (f)
		return wt_err_set(w->err, WT_EINVAL, "%s: %s%s%s (field %u) at byte %zu: %s",
				  w->what, path, *path ? "." : "", f->name, num, off, msg);
	if (num)
		return wt_err_set(w->err, WT_EINVAL, "%s: %s%sfield %u at byte %zu: %s",
				  w->what, path, *path ? "." : "", num, off, msg);
	return wt_err_set(w->err, WT_EINVAL, "%s: %s%sat byte %zu: %s", w->what, path,
			  *path ? " " : "", off, msg);
}

/* Wire type a scalar type is encoded with (non-packed). */
static int scalar_wire(ProtobufCType t)
{
	switch (t) {
	case PROTOBUF_C_TYPE_SFIXED32:
	case PROTOBUF_C_TYPE_FIXED32:
	case PROTOBUF_C_TYPE_FLOAT:
		return WT_I32;
	case PROTOBUF_C_TYPE_SFIXED64:
	case PROTOBUF_C_TYPE_FIXED64:
	case PROTOBUF_C_TYPE_DOUBLE:
		return WT_I64;
	case PROTOBUF_C_TYPE_STRING:
	case PROTOBUF_C_TYPE_BYTES:
	case PROTOBUF_C_TYPE_MESSAGE:
		return WT_LEN;
	default:
		return WT_VARINT;
	}
}

/* Count the elements of a packed payload; -1 if it is malformed. */
static int64_t packed_count(const uint8_t *buf, size_t start, size_t end, int wt)
{
	size_t off = start;
	int64_t n = 0;
	uint64_t v;

	if (wt == WT_I32)
		return (end - start) % 4 ? -1 : (int64_t)((end - start) / 4);
	if (wt == WT_I64)
		return (end - start) % 8 ? -1 : (int64_t)((end - start) / 8);
	{
		/* Fast path: count the bytes that end a varint. Exact when no
		 * varint is longer than 9 bytes (63 bits: nothing to overflow)
		 * and the last byte ends one; otherwise the checked loop below
		 * decides. */
		size_t i = start, run = 0, maxrun = 0;

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
		/* 8 bytes at a time: t has the top bit of each byte that ends
		 * a varint; run carries the continuation bytes since the last */
		for (; i + 8 <= end; i += 8) {
			uint64_t w, t;

			memcpy(&w, buf + i, 8);
			t = ~w & 0x8080808080808080ull;
			if (!t) {
				run += 8;
			} else {
				/* the count of set top bits, without a popcount call */
				n += (int64_t)(((t >> 7) * 0x0101010101010101ull) >> 56);
				if (run + (size_t)(__builtin_ctzll(t) >> 3) > maxrun)
					maxrun = run + (size_t)(__builtin_ctzll(t) >> 3);
				run = 7 - (size_t)((63 - __builtin_clzll(t)) >> 3);
			}
			if (run > maxrun)
				maxrun = run;
		}
#endif
		for (; i < end; i++) {
			size_t cont = buf[i] >> 7;

			n += (int64_t)(cont ^ 1);
			run = cont ? run + 1 : 0;
			maxrun = run > maxrun ? run : maxrun;
		}
		if (maxrun < 9 && run == 0)
			return n;
		n = 0;
	}
	while (off < end) {
		if (wt_pb_varint(buf, end, &off, &v))
			return -1;
		n++;
	}
	return n;
}

/* The field numbered num: the descriptor's own lookup (a binary search over
 * its ranges), skipped when fields[num-1] is that field, as it is in
 * schemas numbered 1..n without gaps. */
static inline const ProtobufCFieldDescriptor *field_of(const ProtobufCMessageDescriptor *d, uint32_t num)
{
	if (num - 1 < d->n_fields && d->fields[num - 1].id == num)
		return &d->fields[num - 1];
	return protobuf_c_message_descriptor_get_field(d, num);
}

static int walk(wt_pb_walker *w, const ProtobufCMessageDescriptor *d, size_t start, size_t end)
{
	uint32_t counts[WT_PB_MAX_FIELDS];
	size_t off = start;
	int rc;

	/* only the counts a field can reach (messages are many and small) */
	memset(counts, 0, (d->n_fields < WT_PB_MAX_FIELDS ? d->n_fields : WT_PB_MAX_FIELDS) *
			  sizeof(counts[0]));
	while (off < end) {
		const ProtobufCFieldDescriptor *f;
		size_t tag_off = off, fidx = 0;
		uint64_t tag, v;
		uint32_t num;
		int wt;

		if (wt_pb_varint(w->buf, end, &off, &tag))
			return fail(w, NULL, 0, tag_off, "truncated or overlong tag varint");
		wt = (int)(tag & 7);
		if (tag >> 3 == 0 || tag >> 3 > 0x1fffffff)
			return fail(w, NULL, 0, tag_off, "invalid field number");
		num = (uint32_t)(tag >> 3);
		f = field_of(d, num);
		if (f) {
			int want = scalar_wire(f->type);

			fidx = (size_t)(f - d->fields);
			if (wt != want && !(wt == WT_LEN && f->label == PROTOBUF_C_LABEL_REPEATED)) {
				char msg[96];
				snprintf(msg, sizeof(msg), "wire type %d (%s) where %s is expected",
					 wt, wire_name(wt), wire_name(want));
				return fail(w, f, num, tag_off, msg);
			}
		}
		switch (wt) {
		case WT_VARINT:
			if (wt_pb_varint(w->buf, end, &off, &v))
				return fail(w, f, num, tag_off, "truncated or overlong varint");
			break;
		case WT_I64:
			if (end - off < 8)
				return fail(w, f, num, tag_off, "truncated fixed64");
			off += 8;
			break;
		case WT_I32:
			if (end - off < 4)
				return fail(w, f, num, tag_off, "truncated fixed32");
			off += 4;
			break;
		case WT_LEN: {
			uint64_t n;
			size_t body;

			if (wt_pb_varint(w->buf, end, &off, &n))
				return fail(w, f, num, tag_off, "truncated or overlong length varint");
			if (n > end - off) {
				char msg[128];
				snprintf(msg, sizeof(msg),
					 "length %llu runs past the end of the enclosing message "
					 "(%zu bytes left)", (unsigned long long)n, end - off);
				return fail(w, f, num, tag_off, msg);
			}
			body = off;
			off += (size_t)n;
			if (!f)
				break;
			if (f->type == PROTOBUF_C_TYPE_MESSAGE) {
				pb_frame *fr;

				if (w->depth >= WT_PB_MAX_DEPTH)
					return fail(w, f, num, tag_off, "messages nested too deeply");
				fr = &w->stack[++w->depth];
				fr->name = f->name;
				fr->index = fidx < WT_PB_MAX_FIELDS ? counts[fidx] : 0;
				fr->repeated = f->label == PROTOBUF_C_LABEL_REPEATED;
				rc = walk(w, f->descriptor, body, off);
				w->depth--;
				if (rc)
					return rc;
			} else if (scalar_wire(f->type) != WT_LEN) {
				/* packed repeated scalars */
				int64_t k = packed_count(w->buf, body, off, scalar_wire(f->type));
				if (k < 0)
					return fail(w, f, num, tag_off, "malformed packed array");
				if (fidx < WT_PB_MAX_FIELDS)
					counts[fidx] += (uint32_t)(k > UINT32_MAX - counts[fidx]
						? UINT32_MAX - counts[fidx] : (uint64_t)k);
				continue;
			}
			break;
		}
		default: {
			char msg[64];
			snprintf(msg, sizeof(msg), "unsupported wire type %d (%s)", wt, wire_name(wt));
			return fail(w, f, num, tag_off, msg);
		}
		}
		if (f && fidx < WT_PB_MAX_FIELDS && counts[fidx] < UINT32_MAX)
			counts[fidx]++;
	}
	if (w->check)
		return w->check(w->ud, w, d, counts, start, w->err);
	return 0;
}

int wt_pb_walk(const ProtobufCMessageDescriptor *desc, const uint8_t *buf, size_t len,
	       const char *what, wt_pb_check_fn check, void *ud, wt_err *err)
{
	wt_pb_walker w;

	memset(&w, 0, sizeof(w));
	w.buf = buf;
	w.what = what ? what : "protobuf";
	w.check = check;
	w.ud = ud;
	w.err = err;
	return walk(&w, desc, 0, len);
}
