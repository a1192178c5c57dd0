/*
 * jfr.c — JDK Flight Recorder recordings (.jfr) → wt_profile.
 *
 * A recording is a sequence of self-contained chunks. Each chunk has a
 * 68-byte header (magic "FLR\0", version, size, offsets of the last
 * constant-pool event and of the metadata event, start time in ns and in
 * ticks, ticks per second, flags: bit 0 = integers are LEB128-compressed),
 * then events: <size> <type id> <fields…>. Type id 0 is the metadata
 * event (a string table and an element tree describing every class and
 * its fields), type id 1 a checkpoint (constant pools: per class, key →
 * value; checkpoints are chained backwards by a delta from the one the
 * header names). Everything else is an event whose layout the metadata
 * gives.
 *
 * Work per chunk, done twice over the whole input: pass 1 parses header
 * and metadata and counts events by type (to know which sample types the
 * profile gets — they must be declared before the first sample); pass 2
 * indexes the constant pools (key → byte offset of the value, in a
 * wt_u64map64, common/u64map.h; values are
 * decoded lazily, and stack traces, methods and threads are cached per
 * chunk) and turns the profiling events into samples (event → sample type
 * table in docs/formats.md).
 *
 * Every count or length read from the file is checked against the bytes
 * left before it is used; nesting depth and the total decoding work are
 * bounded, so a hostile file costs time and memory linear in its size.
 */
#include "jfr.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "u64map.h"

#define HDR_SIZE 68
#define MAX_DEPTH 24   /* nesting of inline objects / metadata elements */
#define NSCR 10        /* scratch field-value arrays (one per nesting use) */

/* ---- metadata model ------------------------------------------------------- */
enum { K_OBJECT = 0, K_BOOL, K_BYTE, K_CHAR, K_SHORT, K_INT, K_LONG, K_FLOAT, K_DOUBLE, K_STRING };

/* Time units of @Timespan fields. */
enum { TU_NONE = 0, TU_TICKS, TU_NS, TU_US, TU_MS, TU_S };

/* Event kinds we map (EK_NONE: skipped). */
enum {
	EK_NONE = 0, EK_CPU, EK_WALL, EK_ALLOC_SAMPLE, EK_ALLOC_TLAB, EK_ALLOC_OUT, EK_LOCK,
	EK_EXC, EK_EXC_STATS, EK_GC, EK_GC_PHASE, EK_MALLOC, EK_LIVE, EK_SETTING, EK_DD_ALLOC,
	EK_DD_LIVE, EK_N
};

static const struct {
	const char *name;
	int kind;
} evnames[] = {
	{"jdk.ExecutionSample", EK_CPU},
	{"jdk.NativeMethodSample", EK_WALL},
	{"profiler.WallClockSample", EK_WALL},
	{"jdk.ObjectAllocationSample", EK_ALLOC_SAMPLE},
	{"jdk.ObjectAllocationInNewTLAB", EK_ALLOC_TLAB},
	{"jdk.ObjectAllocationOutsideTLAB", EK_ALLOC_OUT},
	{"jdk.JavaMonitorEnter", EK_LOCK},
	{"jdk.ThreadPark", EK_LOCK},
	{"jdk.JavaExceptionThrow", EK_EXC},
	{"jdk.ExceptionStatistics", EK_EXC_STATS},
	{"jdk.GarbageCollection", EK_GC},
	{"jdk.GCPhasePause", EK_GC_PHASE},
	{"profiler.Malloc", EK_MALLOC},
	{"profiler.LiveObject", EK_LIVE},
	{"jdk.ActiveSetting", EK_SETTING},
	/* the Datadog Java profiler (ddprof-lib jfrMetadata.cpp, dd-trace-java) */
	{"datadog.ExecutionSample", EK_CPU},
	{"datadog.MethodSample", EK_WALL},
	{"datadog.ObjectSample", EK_DD_ALLOC},
	{"datadog.HeapLiveObject", EK_DD_LIVE},
	{"datadog.ExceptionSample", EK_EXC},
};

/* Sample types, in declaration order. */
enum { T_CPU, T_WALL, T_AOBJ, T_ASPACE, T_LOCK, T_EXC, T_GC, T_NATIVE, T_IOBJ, T_ISPACE, T_N };
static const char *const tnames[T_N][2] = {
	{"cpu", "samples"},          {"wall", "samples"},       {"alloc_objects", "count"},
	{"alloc_space", "bytes"},    {"lock", "nanoseconds"},   {"exceptions", "count"},
	{"gc_pause", "nanoseconds"}, {"native_alloc", "bytes"}, {"inuse_objects", "count"},
	{"inuse_space", "bytes"},
};

/* Event field slots looked up once per event class. */
enum { F_START, F_DUR, F_THREAD, F_STACK, F_SPAN, F_STATE, F_A, F_B, F_C, F_NSLOT };

typedef struct jfield {
	uint32_t name;    /* metadata string index */
	int64_t type_id;
	uint32_t cls;     /* class index, resolved after the tree */
	uint8_t cpool, array, tunit;
	int64_t ann_cls;  /* a field annotation carrying a time unit (resolved later) */
	uint8_t ann_unit;
} jfield;

typedef struct jclass {
	int64_t id;
	uint32_t name; /* metadata string index */
	uint32_t field0, nfields;
	uint8_t kind;
	uint8_t ev;
	int32_t slot[F_NSLOT];
	wt_u64map64 pool; /* key → absolute byte offset of the value */
	uint64_t count; /* events of this class (pass 1) */
} jclass;

typedef struct fval {
	uint64_t v;   /* primitive value or constant-pool key */
	size_t off;   /* absolute offset of an inline string/object/array */
} fval;

typedef struct chunk {
	size_t base, end;
	int compressed;
	int64_t start_ns, dur_ns, start_ticks, tps;
	uint64_t cp_off, meta_off;

	char *arena; /* metadata strings, NUL-terminated */
	size_t arena_len, arena_cap;
	size_t *soff;
	size_t nstr;

	jclass *cls;
	size_t ncls, cls_cap;
	jfield *fld;
	size_t nfld, fld_cap;
	wt_u64map64 clsid;
	uint32_t maxf;
	int64_t string_cls; /* index of java.lang.String, -1 if none */
	int64_t exec_cls_id; /* id of jdk.ExecutionSample, -1 if none */

	wt_u64map64 stacks, methods, threads;
	fval *scr[NSCR];
} chunk;

typedef struct dec {
	const uint8_t *buf;
	size_t len;
	const wt_limits *lim;
	const char *hint;
	wt_profile *p;
	wt_err *err;
	unsigned chunk_no;
	chunk ch;

	int64_t tidx[T_N];
	uint64_t kind_count[EK_N];
	int use_exc_stats, use_gc_phase;
	int skip_alloc_sample;  /* the TLAB pair is present: ObjectAllocationSample is a 2nd estimate */
	int skip_jdk_alloc;     /* datadog.ObjectSample is present: the JDK's are other estimates */
	uint8_t *wall_chunk;    /* per chunk: async-profiler ran in wall-clock mode (pass 1) */
	size_t wall_cap;
	int any_wall_chunk;
	int have_exc_prev;
	uint64_t exc_prev;

	uint64_t budget;
	char *sbuf;
	size_t scap;
	char *nbuf;
	size_t ncap;
	uint32_t *frames;
	size_t frames_cap;

	wt_jfr_stats st;
	size_t st_cap;
} dec;

typedef struct rd {
	const uint8_t *b;
	size_t pos, end;
} rd;

/* ---- errors ------------------------------------------------------------- */
static int bad(dec *d, size_t at, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int bad(dec *d, size_t at, const char *fmt, ...)
{
	char msg[300];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return wt_err_set(d->err, WT_EINVAL, "jfr: chunk %u at byte %zu: %s", d->chunk_no, at, msg);
}

/* A model error (limit, OOM) gets the chunk and position prepended. */
static int ctxerr(dec *d, int rc, size_t at)
{
	if (rc == WT_ENOMEM)
		return wt_err_set(d->err, WT_ENOMEM, "jfr: out of memory");
	return wt_err_prefix(d->err, "jfr: chunk %u at byte %zu", d->chunk_no, at);
}

static int oom(dec *d)
{
	return wt_err_set(d->err, WT_ENOMEM, "jfr: out of memory");
}

#define TRY(x)                      \
	do {                        \
		int rc_ = (x);      \
		if (rc_)            \
			return rc_; \
	} while (0)

/* ---- primitive readers ---------------------------------------------------- */
static int need(dec *d, rd *r, size_t n, const char *what)
{
	if (r->end - r->pos < n)
		return bad(d, r->pos, "%s runs past the end of its %s (%zu bytes left, %zu needed)",
			   what, r->end < d->ch.end ? "event" : "chunk", r->end - r->pos, n);
	return 0;
}

static int rd_u8(dec *d, rd *r, uint8_t *v, const char *what)
{
	TRY(need(d, r, 1, what));
	*v = r->b[r->pos++];
	return 0;
}

static uint64_t be(const uint8_t *p, int n)
{
	uint64_t v = 0;
	int i;

	for (i = 0; i < n; i++)
		v = v << 8 | p[i];
	return v;
}

/* JFR's LEB128 variant: up to 8 bytes of 7 bits, a 9th byte of 8 bits. */
static int rd_varint(dec *d, rd *r, uint64_t *v, const char *what)
{
	uint64_t x = 0;
	int i;

	for (i = 0; i < 8; i++) {
		uint8_t b;
		if (r->pos >= r->end)
			return bad(d, r->pos, "%s: compressed integer runs past the end", what);
		b = r->b[r->pos++];
		x |= (uint64_t)(b & 0x7f) << (7 * i);
		if (!(b & 0x80)) {
			*v = x;
			return 0;
		}
	}
	if (r->pos >= r->end)
		return bad(d, r->pos, "%s: compressed integer runs past the end", what);
	x |= (uint64_t)r->b[r->pos++] << 56;
	*v = x;
	return 0;
}

static int rd_fixed(dec *d, rd *r, int n, uint64_t *v, const char *what)
{
	TRY(need(d, r, (size_t)n, what));
	*v = be(r->b + r->pos, n);
	r->pos += (size_t)n;
	return 0;
}

static int rd_long(dec *d, rd *r, uint64_t *v, const char *what)
{
	return d->ch.compressed ? rd_varint(d, r, v, what) : rd_fixed(d, r, 8, v, what);
}

/* int (32-bit, sign-extended into *v). */
static int rd_int(dec *d, rd *r, uint64_t *v, const char *what)
{
	uint64_t x;

	TRY(d->ch.compressed ? rd_varint(d, r, &x, what) : rd_fixed(d, r, 4, &x, what));
	*v = (uint64_t)(int64_t)(int32_t)(uint32_t)x;
	return 0;
}

/* A count or length: an int that must be >= 0 and at most `per` times the
 * bytes that remain (every counted item takes at least 1/per bytes). */
static int rd_count(dec *d, rd *r, size_t *n, size_t per, const char *what)
{
	size_t at = r->pos;
	uint64_t x;

	TRY(rd_int(d, r, &x, what));
	if ((int64_t)x < 0)
		return bad(d, at, "%s: negative count %" PRId64, what, (int64_t)x);
	if (x > (uint64_t)(r->end - r->pos) * per)
		return bad(d, at, "%s: count %" PRIu64 " exceeds the %zu bytes left", what, x,
			   r->end - r->pos);
	*n = (size_t)x;
	return 0;
}

/* ---- strings ---------------------------------------------------------------- */
static int sbuf_put(dec *d, size_t *n, const char *s, size_t len)
{
	if (*n + len + 1 > d->scap) {
		size_t cap = d->scap ? d->scap : 256;
		char *nb;
		while (cap < *n + len + 1)
			cap *= 2;
		if (!(nb = realloc(d->sbuf, cap)))
			return oom(d);
		d->sbuf = nb;
		d->scap = cap;
	}
	memcpy(d->sbuf + *n, s, len);
	*n += len;
	d->sbuf[*n] = 0;
	return 0;
}

static int put_utf8(dec *d, size_t *n, uint32_t c)
{
	char u[4];
	size_t k;

	if (c == 0)
		c = '?'; /* the profile model has NUL-terminated strings */
	if (c < 0x80) {
		u[0] = (char)c;
		k = 1;
	} else if (c < 0x800) {
		u[0] = (char)(0xc0 | c >> 6);
		u[1] = (char)(0x80 | (c & 0x3f));
		k = 2;
	} else if (c < 0x10000) {
		u[0] = (char)(0xe0 | c >> 12);
		u[1] = (char)(0x80 | ((c >> 6) & 0x3f));
		u[2] = (char)(0x80 | (c & 0x3f));
		k = 3;
	} else {
		u[0] = (char)(0xf0 | c >> 18);
		u[1] = (char)(0x80 | ((c >> 12) & 0x3f));
		u[2] = (char)(0x80 | ((c >> 6) & 0x3f));
		u[3] = (char)(0x80 | (c & 0x3f));
		k = 4;
	}
	return sbuf_put(d, n, u, k);
}

static int pool_pos(dec *d, int64_t ci, uint64_t key, size_t *pos);

/* Read a string value. With decode, its text goes to d->sbuf (length *n,
 * *isnull set for the null string); otherwise it is only skipped.
 * poolok: whether a constant-pool reference (encoding 2) may be followed. */
static int rd_string(dec *d, rd *r, int decode, int poolok, size_t *n, int *isnull)
{
	size_t at = r->pos, len, i;
	uint8_t enc;
	uint64_t x;

	if (decode) {
		*n = 0;
		*isnull = 0;
		TRY(sbuf_put(d, n, "", 0));
	}
	TRY(rd_u8(d, r, &enc, "string encoding"));
	switch (enc) {
	case 0: /* null */
		if (decode)
			*isnull = 1;
		return 0;
	case 1: /* "" */
		return 0;
	case 2: { /* constant pool java.lang.String */
		size_t pos;
		TRY(rd_long(d, r, &x, "string pool reference"));
		if (!decode)
			return 0;
		if (!poolok || d->ch.string_cls < 0)
			return bad(d, at, "string refers to constant pool entry %" PRIu64
				   " where no string pool is available", x);
		if (!pool_pos(d, d->ch.string_cls, x, &pos)) {
			*isnull = 1; /* dangling: treat as null */
			return 0;
		} else {
			rd sub = {d->buf, pos, d->ch.end};
			return rd_string(d, &sub, decode, 0, n, isnull);
		}
	}
	case 3: /* UTF-8 */
	case 5: /* Latin-1 */
		TRY(rd_count(d, r, &len, 1, "string length"));
		if (decode && len > d->lim->max_string_len)
			return wt_err_set(d->err, WT_ELIMIT,
					  "jfr: chunk %u at byte %zu: string of %zu bytes exceeds "
					  "max_string_len %zu", d->chunk_no, at, len,
					  d->lim->max_string_len);
		if (decode) {
			if (enc == 3) {
				const uint8_t *s = r->b + r->pos;
				for (i = 0; i < len; i++)
					TRY(sbuf_put(d, n, s[i] ? (const char *)s + i : "?", 1));
			} else {
				for (i = 0; i < len; i++)
					TRY(put_utf8(d, n, r->b[r->pos + i]));
			}
		}
		r->pos += len;
		return 0;
	case 4: /* UTF-16 code units, each an encoded char */
		TRY(rd_count(d, r, &len, 1, "string length"));
		if (decode && len > d->lim->max_string_len)
			return wt_err_set(d->err, WT_ELIMIT,
					  "jfr: chunk %u at byte %zu: string of %zu chars exceeds "
					  "max_string_len %zu", d->chunk_no, at, len,
					  d->lim->max_string_len);
		for (i = 0; i < len; i++) {
			uint32_t c;
			TRY(d->ch.compressed ? rd_varint(d, r, &x, "string char")
					     : rd_fixed(d, r, 2, &x, "string char"));
			c = (uint32_t)(x & 0xffff);
			if (!decode)
				continue;
			if (c >= 0xd800 && c < 0xdc00 && i + 1 < len) {
				size_t save = r->pos;
				TRY(d->ch.compressed ? rd_varint(d, r, &x, "string char")
						     : rd_fixed(d, r, 2, &x, "string char"));
				if ((x & 0xffff) >= 0xdc00 && (x & 0xffff) < 0xe000) {
					c = 0x10000 + ((c - 0xd800) << 10) + ((uint32_t)(x & 0xffff) - 0xdc00);
					i++;
				} else {
					r->pos = save;
					c = 0xfffd;
				}
			} else if (c >= 0xd800 && c < 0xe000) {
				c = 0xfffd;
			}
			TRY(put_utf8(d, n, c));
		}
		if (decode && *n > d->lim->max_string_len)
			return wt_err_set(d->err, WT_ELIMIT,
					  "jfr: chunk %u at byte %zu: string exceeds max_string_len %zu",
					  d->chunk_no, at, d->lim->max_string_len);
		return 0;
	default:
		return bad(d, at, "unknown string encoding %u", enc);
	}
}

/* ---- values ------------------------------------------------------------------ */
static int rd_field(dec *d, rd *r, const jfield *f, fval *out, int depth);

/* One value of class ci (a constant-pool key when cpool). out may be NULL. */
static int rd_value(dec *d, rd *r, uint32_t ci, int cpool, fval *out, int depth)
{
	const jclass *c = &d->ch.cls[ci];
	uint64_t v = 0;
	size_t at = r->pos, i;

	if (!d->budget--)
		return wt_err_set(d->err, WT_ELIMIT,
				  "jfr: chunk %u at byte %zu: decoding work limit exceeded "
				  "(nested empty values?)", d->chunk_no, at);
	if (cpool) {
		TRY(rd_long(d, r, &v, "constant pool reference"));
		if (out)
			out->v = v;
		return 0;
	}
	switch (c->kind) {
	case K_BOOL:
	case K_BYTE: {
		uint8_t b;
		TRY(rd_u8(d, r, &b, "byte"));
		v = c->kind == K_BYTE ? (uint64_t)(int64_t)(int8_t)b : b;
		break;
	}
	case K_CHAR:
	case K_SHORT:
		TRY(d->ch.compressed ? rd_varint(d, r, &v, "short") : rd_fixed(d, r, 2, &v, "short"));
		if (c->kind == K_SHORT)
			v = (uint64_t)(int64_t)(int16_t)(uint16_t)v;
		else
			v &= 0xffff;
		break;
	case K_INT:
		TRY(rd_int(d, r, &v, "int"));
		break;
	case K_LONG:
		TRY(rd_long(d, r, &v, "long"));
		break;
	case K_FLOAT:
		TRY(rd_fixed(d, r, 4, &v, "float"));
		break;
	case K_DOUBLE:
		TRY(rd_fixed(d, r, 8, &v, "double"));
		break;
	case K_STRING:
		TRY(rd_string(d, r, 0, 0, NULL, NULL));
		break;
	default:
		if (depth > MAX_DEPTH)
			return bad(d, at, "values of class %s nest deeper than %d",
				   d->ch.arena + d->ch.soff[c->name], MAX_DEPTH);
		for (i = 0; i < c->nfields; i++)
			TRY(rd_field(d, r, &d->ch.fld[c->field0 + i], NULL, depth + 1));
		break;
	}
	if (out) {
		out->v = v;
		out->off = at;
	}
	return 0;
}

static int rd_field(dec *d, rd *r, const jfield *f, fval *out, int depth)
{
	size_t n, i, at = r->pos;

	if (!f->array)
		return rd_value(d, r, f->cls, f->cpool, out, depth);
	TRY(rd_count(d, r, &n, 1, "array length"));
	for (i = 0; i < n; i++)
		TRY(rd_value(d, r, f->cls, f->cpool, NULL, depth + 1));
	if (out) {
		out->v = n;
		out->off = at;
	}
	return 0;
}

/* Read the fields of an object of class ci at absolute offset pos into vals. */
static int read_obj(dec *d, uint32_t ci, size_t pos, size_t end, fval *vals)
{
	const jclass *c = &d->ch.cls[ci];
	rd r = {d->buf, pos, end};
	size_t i;

	if (c->kind != K_OBJECT)
		return bad(d, pos, "class %s used where an object is expected",
			   d->ch.arena + d->ch.soff[c->name]);
	for (i = 0; i < c->nfields; i++) {
		vals[i].v = 0;
		vals[i].off = 0;
		TRY(rd_field(d, &r, &d->ch.fld[c->field0 + i], &vals[i], 1));
	}
	return 0;
}

static int pool_pos(dec *d, int64_t ci, uint64_t key, size_t *pos)
{
	uint64_t v;

	if (ci < 0 || !wt_u64map64_get(&d->ch.cls[ci].pool, key, &v))
		return 0;
	*pos = (size_t)v;
	return 1;
}

static const char *mstr(const dec *d, uint32_t idx)
{
	return d->ch.arena + d->ch.soff[idx];
}

static int32_t field_index(const dec *d, uint32_t ci, const char *name)
{
	const jclass *c = &d->ch.cls[ci];
	uint32_t i;

	for (i = 0; i < c->nfields; i++)
		if (!strcmp(mstr(d, d->ch.fld[c->field0 + i].name), name))
			return (int32_t)i;
	return -1;
}

/* Position of the object a field value denotes (pool entry or inline);
 * 0 when it is null / a dangling reference. */
static int elem_pos(dec *d, uint32_t ci, int cpool, const fval *v, size_t *pos)
{
	if (d->ch.cls[ci].kind != K_OBJECT)
		return 0;
	if (cpool)
		return pool_pos(d, ci, v->v, pos);
	*pos = v->off;
	return 1;
}

static int obj_pos(dec *d, const jfield *f, const fval *v, size_t *pos)
{
	return !f->array && elem_pos(d, f->cls, f->cpool, v, pos);
}

/* The text of a string-like field into d->sbuf: a String, or a pooled or
 * inline object (jdk.types.Symbol, …) whose first string-like field is
 * taken. *n = 0 and *isnull = 1 when there is none. lvl: scratch level. */
static int field_string(dec *d, const jfield *f, const fval *v, int lvl, size_t *n, int *isnull)
{
	const jclass *c = &d->ch.cls[f->cls];
	size_t pos;

	*n = 0;
	*isnull = 1;
	if (f->array || lvl >= NSCR)
		return 0;
	if (c->kind == K_STRING) {
		rd r = {d->buf, 0, d->ch.end};
		if (f->cpool) {
			if (!pool_pos(d, f->cls, v->v, &pos))
				return 0;
			r.pos = pos;
		} else {
			r.pos = v->off;
		}
		return rd_string(d, &r, 1, 1, n, isnull);
	}
	if (c->kind == K_OBJECT && obj_pos(d, f, v, &pos)) {
		fval *vals = d->ch.scr[lvl];
		uint32_t i;
		int32_t fi = field_index(d, f->cls, "string");

		TRY(read_obj(d, f->cls, pos, d->ch.end, vals));
		if (fi < 0)
			fi = field_index(d, f->cls, "name");
		for (i = 0; fi < 0 && i < c->nfields; i++)
			if (d->ch.cls[d->ch.fld[c->field0 + i].cls].kind == K_STRING)
				fi = (int32_t)i;
		if (fi >= 0)
			return field_string(d, &d->ch.fld[c->field0 + fi], &vals[fi], lvl + 1, n, isnull);
	}
	return 0;
}

/* ---- time ---------------------------------------------------------------------- */
static int64_t clamp128(__int128 x)
{
	if (x > INT64_MAX)
		return INT64_MAX;
	if (x < INT64_MIN)
		return INT64_MIN;
	return (int64_t)x;
}

static int64_t ticks_to_ns(const dec *d, uint64_t ticks)
{
	__int128 t = (__int128)((int64_t)ticks - (__int128)d->ch.start_ticks);
	return clamp128((__int128)d->ch.start_ns + t * 1000000000 / d->ch.tps);
}

/* A duration field in ns (by its @Timespan unit; no unit = ticks for a
 * field named "duration", else ns). */
static int64_t span_ns(const dec *d, const jfield *f, uint64_t v)
{
	int u = f->tunit;
	__int128 x = (int64_t)v;

	if (u == TU_NONE)
		u = !strcmp(mstr(d, f->name), "duration") ? TU_TICKS : TU_NS;
	switch (u) {
	case TU_TICKS: return clamp128(x * 1000000000 / d->ch.tps);
	case TU_US: return clamp128(x * 1000);
	case TU_MS: return clamp128(x * 1000000);
	case TU_S: return clamp128(x * 1000000000);
	default: return clamp128(x);
	}
}

/* ---- chunk header and metadata ---------------------------------------------------- */
static void chunk_free(chunk *c)
{
	size_t i;

	free(c->arena);
	free(c->soff);
	for (i = 0; i < c->ncls; i++)
		wt_u64map64_free(&c->cls[i].pool);
	free(c->cls);
	free(c->fld);
	wt_u64map64_free(&c->clsid);
	wt_u64map64_free(&c->stacks);
	wt_u64map64_free(&c->methods);
	wt_u64map64_free(&c->threads);
	for (i = 0; i < NSCR; i++)
		free(c->scr[i]);
	memset(c, 0, sizeof(*c));
}

static int parse_header(dec *d, size_t base)
{
	chunk *c = &d->ch;
	const uint8_t *h = d->buf + base;
	uint64_t size, major;

	if (d->len - base < HDR_SIZE)
		return bad(d, base, "truncated chunk header (%zu of %d bytes)", d->len - base, HDR_SIZE);
	if (memcmp(h, "FLR\0", 4))
		return bad(d, base, "bad chunk magic (expected FLR\\0)");
	major = be(h + 4, 2);
	if (major != 1 && major != 2)
		return bad(d, base + 4, "unsupported format version %u.%u", (unsigned)major,
			   (unsigned)be(h + 6, 2));
	size = be(h + 8, 8);
	if (size < HDR_SIZE || size > d->len - base)
		return bad(d, base + 8, "chunk size %" PRIu64 " does not fit the %zu bytes left", size,
			   d->len - base);
	c->base = base;
	c->end = base + (size_t)size;
	c->cp_off = be(h + 16, 8);
	c->meta_off = be(h + 24, 8);
	c->start_ns = (int64_t)be(h + 32, 8);
	c->dur_ns = (int64_t)be(h + 40, 8);
	c->start_ticks = (int64_t)be(h + 48, 8);
	c->tps = (int64_t)be(h + 56, 8);
	c->compressed = h[67] & 1;
	if (c->tps <= 0)
		return bad(d, base + 56, "ticks per second %" PRId64 " is not positive", c->tps);
	if (c->meta_off < HDR_SIZE || c->meta_off >= size)
		return bad(d, base + 24, "metadata offset %" PRIu64 " outside the chunk of %" PRIu64
			   " bytes", c->meta_off, size);
	if (c->cp_off && (c->cp_off < HDR_SIZE || c->cp_off >= size))
		return bad(d, base + 16, "constant pool offset %" PRIu64 " outside the chunk of %" PRIu64
			   " bytes", c->cp_off, size);
	return 0;
}

/* Event header at r->pos: size (whole event) and type; r->end becomes the
 * end of the event. */
static int event_header(dec *d, rd *r, size_t *evend, uint64_t *type)
{
	size_t at = r->pos;
	uint64_t size;

	TRY(rd_int(d, r, &size, "event size"));
	if ((int64_t)size <= 0 || size > r->end - at)
		return bad(d, at, "event size %" PRId64 " does not fit the %zu bytes left in the chunk",
			   (int64_t)size, r->end - at);
	if (r->pos - at > size)
		return bad(d, at, "event size %" PRIu64 " smaller than its own header", size);
	*evend = at + (size_t)size;
	r->end = *evend;
	TRY(rd_long(d, r, type, "event type"));
	return 0;
}

static int arena_add(dec *d, const char *s, size_t n, size_t *off)
{
	chunk *c = &d->ch;

	if (c->arena_len + n + 1 > c->arena_cap) {
		size_t cap = c->arena_cap ? c->arena_cap : 4096;
		char *na;
		while (cap < c->arena_len + n + 1)
			cap *= 2;
		if (!(na = realloc(c->arena, cap)))
			return oom(d);
		c->arena = na;
		c->arena_cap = cap;
	}
	memcpy(c->arena + c->arena_len, s, n);
	c->arena[c->arena_len + n] = 0;
	*off = c->arena_len;
	c->arena_len += n + 1;
	return 0;
}

static int parse_i64(const char *s, int64_t *v)
{
	char *e;
	long long x;

	errno = 0;
	x = strtoll(s, &e, 10);
	if (errno || e == s || *e)
		return -1;
	*v = x;
	return 0;
}

static uint8_t unit_of(const char *s)
{
	if (!strcmp(s, "TICKS")) return TU_TICKS;
	if (!strcmp(s, "NANOSECONDS")) return TU_NS;
	if (!strcmp(s, "MICROSECONDS")) return TU_US;
	if (!strcmp(s, "MILLISECONDS")) return TU_MS;
	if (!strcmp(s, "SECONDS")) return TU_S;
	return TU_NONE;
}

/* Element contexts. */
enum { E_OTHER, E_META, E_CLASS, E_FIELD };

static int element(dec *d, rd *r, int depth, int ctx, int64_t cur)
{
	chunk *c = &d->ch;
	size_t at = r->pos, nattr, nchild, i;
	uint64_t name;
	int kind = E_OTHER;
	int64_t me = -1;
	const char *en;

	if (depth > MAX_DEPTH)
		return bad(d, at, "metadata elements nest deeper than %d", MAX_DEPTH);
	if (!d->budget--)
		return wt_err_set(d->err, WT_ELIMIT, "jfr: chunk %u at byte %zu: decoding work limit "
				  "exceeded", d->chunk_no, at);
	TRY(rd_int(d, r, &name, "element name"));
	if (name >= c->nstr)
		return bad(d, at, "element name refers to string %" PRId64 " of %zu",
			   (int64_t)name, c->nstr);
	en = mstr(d, (uint32_t)name);
	if (!strcmp(en, "metadata")) {
		kind = E_META;
	} else if (!strcmp(en, "class") && ctx == E_META) {
		jclass *k;
		if (c->ncls == c->cls_cap) {
			size_t cap = c->cls_cap ? c->cls_cap * 2 : 64;
			jclass *nc = realloc(c->cls, cap * sizeof(*nc));
			if (!nc)
				return oom(d);
			c->cls = nc;
			c->cls_cap = cap;
		}
		me = (int64_t)c->ncls++;
		k = &c->cls[me];
		memset(k, 0, sizeof(*k));
		k->id = INT64_MIN;
		k->name = UINT32_MAX;
		k->field0 = (uint32_t)c->nfld;
		kind = E_CLASS;
	} else if (!strcmp(en, "field") && ctx == E_CLASS && cur >= 0 &&
		   c->cls[cur].field0 + c->cls[cur].nfields == c->nfld) {
		jfield *f;
		if (c->nfld == c->fld_cap) {
			size_t cap = c->fld_cap ? c->fld_cap * 2 : 256;
			jfield *nf = realloc(c->fld, cap * sizeof(*nf));
			if (!nf)
				return oom(d);
			c->fld = nf;
			c->fld_cap = cap;
		}
		me = (int64_t)c->nfld++;
		c->cls[cur].nfields++;
		f = &c->fld[me];
		memset(f, 0, sizeof(*f));
		f->name = UINT32_MAX;
		f->type_id = INT64_MIN;
		f->ann_cls = INT64_MIN;
		kind = E_FIELD;
	}
	TRY(rd_count(d, r, &nattr, 1, "element attribute count"));
	{
		int64_t ann_cls = INT64_MIN;
		uint8_t ann_unit = TU_NONE;
		for (i = 0; i < nattr; i++) {
			uint64_t k, v;
			size_t kat = r->pos;
			const char *ks, *vs;
			TRY(rd_int(d, r, &k, "attribute name"));
			TRY(rd_int(d, r, &v, "attribute value"));
			if (k >= c->nstr || v >= c->nstr)
				return bad(d, kat, "attribute refers to string %" PRId64 " of %zu",
					   (int64_t)(k >= c->nstr ? k : v), c->nstr);
			ks = mstr(d, (uint32_t)k);
			vs = mstr(d, (uint32_t)v);
			if (kind == E_CLASS) {
				jclass *kc = &c->cls[me];
				if (!strcmp(ks, "id")) {
					if (parse_i64(vs, &kc->id))
						return bad(d, kat, "class id \"%.40s\" is not a number", vs);
				} else if (!strcmp(ks, "name")) {
					kc->name = (uint32_t)v;
				}
			} else if (kind == E_FIELD) {
				jfield *f = &c->fld[me];
				if (!strcmp(ks, "name"))
					f->name = (uint32_t)v;
				else if (!strcmp(ks, "class")) {
					if (parse_i64(vs, &f->type_id))
						return bad(d, kat, "field class \"%.40s\" is not a number", vs);
				} else if (!strcmp(ks, "constantPool"))
					f->cpool = !strcmp(vs, "true");
				else if (!strcmp(ks, "dimension")) {
					int64_t dim;
					if (parse_i64(vs, &dim) || dim < 0 || dim > 1)
						return bad(d, kat, "field dimension \"%.40s\" unsupported", vs);
					f->array = (uint8_t)dim;
				}
			} else if (ctx == E_FIELD && !strcmp(en, "annotation")) {
				if (!strcmp(ks, "class"))
					parse_i64(vs, &ann_cls);
				else if (!strcmp(ks, "value"))
					ann_unit = unit_of(vs);
			}
		}
		if (ctx == E_FIELD && ann_unit != TU_NONE && ann_cls != INT64_MIN && cur >= 0) {
			c->fld[cur].ann_cls = ann_cls;
			c->fld[cur].ann_unit = ann_unit;
		}
	}
	if (kind == E_CLASS && (c->cls[me].id == INT64_MIN || c->cls[me].name == UINT32_MAX))
		return bad(d, at, "class element without id or name");
	if (kind == E_FIELD && (c->fld[me].name == UINT32_MAX || c->fld[me].type_id == INT64_MIN))
		return bad(d, at, "field element without name or class");
	TRY(rd_count(d, r, &nchild, 1, "element child count"));
	for (i = 0; i < nchild; i++)
		TRY(element(d, r, depth + 1, kind == E_OTHER && ctx != E_OTHER ? E_OTHER : kind,
			    kind == E_OTHER ? cur : me));
	return 0;
}

static int kind_of(const char *name)
{
	static const struct {
		const char *n;
		int k;
	} prim[] = {
		{"boolean", K_BOOL}, {"byte", K_BYTE},   {"char", K_CHAR},     {"short", K_SHORT},
		{"int", K_INT},      {"long", K_LONG},   {"float", K_FLOAT},   {"double", K_DOUBLE},
		{"java.lang.String", K_STRING},
	};
	size_t i;

	for (i = 0; i < sizeof(prim) / sizeof(prim[0]); i++)
		if (!strcmp(name, prim[i].n))
			return prim[i].k;
	return K_OBJECT;
}

static void set_slots(dec *d, uint32_t ci)
{
	jclass *c = &d->ch.cls[ci];
	const char *a = NULL, *b = NULL, *cc = NULL;
	int i;

	for (i = 0; i < F_NSLOT; i++)
		c->slot[i] = -1;
	c->slot[F_START] = field_index(d, ci, "startTime");
	c->slot[F_DUR] = field_index(d, ci, "duration");
	c->slot[F_THREAD] = field_index(d, ci, "sampledThread");
	if (c->slot[F_THREAD] < 0)
		c->slot[F_THREAD] = field_index(d, ci, "eventThread");
	c->slot[F_STACK] = field_index(d, ci, "stackTrace");
	c->slot[F_SPAN] = field_index(d, ci, "spanId");
	if (c->ev == EK_CPU || c->ev == EK_WALL)
		c->slot[F_STATE] = field_index(d, ci, "state");
	switch (c->ev) {
	case EK_CPU: a = "weight"; break; /* datadog.ExecutionSample */
	case EK_WALL:
		a = field_index(d, ci, "samples") >= 0 ? "samples" : "weight";
		break;
	case EK_DD_ALLOC:
	case EK_DD_LIVE: a = "size"; b = "weight"; break;
	case EK_ALLOC_SAMPLE: a = "weight"; break;
	case EK_ALLOC_TLAB: a = "tlabSize"; b = "allocationSize"; break;
	case EK_ALLOC_OUT: a = "allocationSize"; break;
	case EK_EXC_STATS: a = "throwables"; break;
	case EK_GC: a = "sumOfPauses"; b = "name"; break;
	case EK_GC_PHASE: b = "name"; break;
	case EK_MALLOC: a = "size"; break;
	case EK_LIVE: a = "allocationSize"; break;
	case EK_SETTING: a = "id"; b = "name"; cc = "value"; break;
	}
	if (a)
		c->slot[F_A] = field_index(d, ci, a);
	if (b)
		c->slot[F_B] = field_index(d, ci, b);
	if (cc)
		c->slot[F_C] = field_index(d, ci, cc);
}

static int parse_metadata(dec *d)
{
	chunk *c = &d->ch;
	size_t pos = c->base + (size_t)c->meta_off, evend, i, n;
	rd r = {d->buf, pos, c->end};
	uint64_t type, x;

	TRY(event_header(d, &r, &evend, &type));
	if (type != 0)
		return bad(d, pos, "metadata offset points at an event of type %" PRIu64
			   " instead of metadata (0)", type);
	TRY(rd_long(d, &r, &x, "metadata start time"));
	TRY(rd_long(d, &r, &x, "metadata duration"));
	TRY(rd_long(d, &r, &x, "metadata id"));
	TRY(rd_count(d, &r, &c->nstr, 1, "metadata string count"));
	if (!(c->soff = malloc((c->nstr ? c->nstr : 1) * sizeof(size_t))))
		return oom(d);
	c->string_cls = -1;
	for (i = 0; i < c->nstr; i++) {
		int isnull;
		TRY(rd_string(d, &r, 1, 0, &n, &isnull));
		TRY(arena_add(d, d->sbuf, n, &c->soff[i]));
	}
	TRY(element(d, &r, 0, E_OTHER, -1));

	/* resolve classes, field types, annotations */
	for (i = 0; i < c->ncls; i++) {
		uint64_t old;
		jclass *k = &c->cls[i];
		if (wt_u64map64_get(&c->clsid, (uint64_t)k->id, &old))
			return bad(d, pos, "metadata declares class id %" PRId64 " twice", k->id);
		TRY(wt_u64map64_put(&c->clsid, (uint64_t)k->id, i) ? oom(d) : 0);
		k->kind = (uint8_t)kind_of(mstr(d, k->name));
		if (k->nfields > c->maxf)
			c->maxf = k->nfields;
		if (k->kind == K_STRING)
			c->string_cls = (int64_t)i;
	}
	c->exec_cls_id = -1;
	for (i = 0; i < c->nfld; i++) {
		jfield *f = &c->fld[i];
		uint64_t ci;
		if (!wt_u64map64_get(&c->clsid, (uint64_t)f->type_id, &ci))
			return bad(d, pos, "field %s refers to unknown class id %" PRId64,
				   mstr(d, f->name), f->type_id);
		f->cls = (uint32_t)ci;
		if (f->ann_cls != INT64_MIN && wt_u64map64_get(&c->clsid, (uint64_t)f->ann_cls, &ci) &&
		    !strcmp(mstr(d, c->cls[ci].name), "jdk.jfr.Timespan"))
			f->tunit = f->ann_unit;
	}
	for (i = 0; i < NSCR; i++)
		if (!(c->scr[i] = calloc(c->maxf ? c->maxf : 1, sizeof(fval))))
			return oom(d);
	for (i = 0; i < c->ncls; i++) {
		jclass *k = &c->cls[i];
		size_t j;
		const char *nm = mstr(d, k->name);
		for (j = 0; j < sizeof(evnames) / sizeof(evnames[0]); j++)
			if (!strcmp(nm, evnames[j].name))
				k->ev = (uint8_t)evnames[j].kind;
		if (k->ev) {
			if (k->kind != K_OBJECT)
				return bad(d, pos, "event class %s is a primitive", nm);
			set_slots(d, (uint32_t)i);
		}
		if (k->ev == EK_CPU)
			c->exec_cls_id = k->id;
	}
	return 0;
}

/* ---- constant pools --------------------------------------------------------------- */
static int parse_pools(dec *d, uint64_t *ncheck)
{
	chunk *c = &d->ch;
	size_t pos;
	uint64_t delta;

	if (!c->cp_off)
		return 0;
	pos = c->base + (size_t)c->cp_off;
	for (;;) {
		rd r = {d->buf, pos, c->end};
		size_t evend, npools, i;
		uint64_t type, x;
		uint8_t flush;

		TRY(event_header(d, &r, &evend, &type));
		if (type != 1)
			return bad(d, pos, "constant pool offset points at an event of type %" PRIu64
				   " instead of a checkpoint (1)", type);
		(*ncheck)++;
		TRY(rd_long(d, &r, &x, "checkpoint start time"));
		TRY(rd_long(d, &r, &x, "checkpoint duration"));
		TRY(rd_long(d, &r, &delta, "checkpoint delta"));
		TRY(rd_u8(d, &r, &flush, "checkpoint type"));
		TRY(rd_count(d, &r, &npools, 1, "constant pool count"));
		for (i = 0; i < npools; i++) {
			uint64_t cid, ci, key;
			size_t n, j, at = r.pos;
			TRY(rd_long(d, &r, &cid, "constant pool class"));
			if (!wt_u64map64_get(&c->clsid, cid, &ci))
				return bad(d, at, "constant pool for unknown class id %" PRId64, (int64_t)cid);
			TRY(rd_count(d, &r, &n, 1, "constant pool size"));
			for (j = 0; j < n; j++) {
				size_t vpos;
				TRY(rd_long(d, &r, &key, "constant pool key"));
				vpos = r.pos;
				TRY(rd_value(d, &r, (uint32_t)ci, 0, NULL, 0));
				if (wt_u64map64_put(&c->cls[ci].pool, key, vpos))
					return oom(d);
			}
		}
		if (delta == 0)
			break;
		/* Checkpoints chain backwards: each delta leads to an earlier one,
		 * which also rules out cycles. */
		if ((int64_t)delta >= 0 || (uint64_t)-(int64_t)delta > pos - c->base - HDR_SIZE)
			return bad(d, pos, "checkpoint delta %" PRId64 " does not lead to an earlier "
				   "event of the chunk", (int64_t)delta);
		pos -= (size_t)-(int64_t)delta;
	}
	return 0;
}

/* ---- stacks, frames, threads ----------------------------------------------------- */
static int synth_frame(dec *d, const char *name, size_t len, uint32_t *frame)
{
	wt_frame fr = {0, WT_NO_MAPPING, 0, 0};
	int rc;

	if ((rc = wt_profile_add_function_named(d->p, name, len, NULL, &fr.function, d->err)) ||
	    (rc = wt_profile_add_frame(d->p, &fr, frame, d->err)))
		return rc;
	return 0;
}

static int nbuf_put(dec *d, size_t *n, const char *s, size_t len, int dots)
{
	size_t i;

	if (*n + len + 2 > d->ncap) {
		size_t cap = d->ncap ? d->ncap : 256;
		char *nb;
		while (cap < *n + len + 2)
			cap *= 2;
		if (!(nb = realloc(d->nbuf, cap)))
			return oom(d);
		d->nbuf = nb;
		d->ncap = cap;
	}
	for (i = 0; i < len; i++)
		d->nbuf[*n + i] = dots && s[i] == '/' ? '.' : s[i];
	*n += len;
	return 0;
}

/* jdk.types.Method (pooled or inline) → function "pkg.Class.method".
 * *hidden is set for methods the JVM marks hidden (lambda forms,
 * Invokers$Holder …): like `jfr print`, callers leave those frames out. */
#define METHOD_HIDDEN (1ULL << 32)
static int method_function(dec *d, const jfield *mf, const fval *mv, uint32_t *fid, int *hidden,
			   size_t at)
{
	chunk *c = &d->ch;
	uint64_t cached;
	size_t pos, n = 0, sn;
	int isnull, rc;
	int cacheable = mf->cpool && !mf->array;

	*hidden = 0;
	if (cacheable && wt_u64map64_get(&c->methods, mv->v, &cached)) {
		*fid = (uint32_t)cached;
		*hidden = (cached & METHOD_HIDDEN) != 0;
		return 0;
	}
	if (obj_pos(d, mf, mv, &pos)) {
		fval *vals = c->scr[3];
		int32_t ft, fn, fh;
		TRY(read_obj(d, mf->cls, pos, c->end, vals));
		ft = field_index(d, mf->cls, "type");
		fn = field_index(d, mf->cls, "name");
		fh = field_index(d, mf->cls, "hidden");
		if (fh >= 0)
			*hidden = vals[fh].v != 0;
		if (ft >= 0) {
			const jfield *tf = &c->fld[c->cls[mf->cls].field0 + ft];
			size_t tpos;
			if (obj_pos(d, tf, &vals[ft], &tpos)) {
				fval *cv = c->scr[4];
				int32_t cn = field_index(d, tf->cls, "name");
				TRY(read_obj(d, tf->cls, tpos, c->end, cv));
				if (cn >= 0) {
					TRY(field_string(d, &c->fld[c->cls[tf->cls].field0 + cn], &cv[cn],
							 5, &sn, &isnull));
					if (sn) {
						TRY(nbuf_put(d, &n, d->sbuf, sn, 1));
						TRY(nbuf_put(d, &n, ".", 1, 0));
					}
				}
			}
		}
		if (fn >= 0) {
			TRY(field_string(d, &c->fld[c->cls[mf->cls].field0 + fn], &vals[fn], 5, &sn,
					 &isnull));
			TRY(nbuf_put(d, &n, d->sbuf, sn, 0));
		}
	}
	if (n == 0)
		TRY(nbuf_put(d, &n, "[unknown]", 9, 0));
	if ((rc = wt_profile_add_function_named(d->p, d->nbuf, n, NULL, fid, d->err)))
		return ctxerr(d, rc, at);
	if (cacheable && wt_u64map64_put(&c->methods, mv->v, *fid | (*hidden ? METHOD_HIDDEN : 0)))
		return oom(d);
	return 0;
}

static int frames_room(dec *d, size_t n)
{
	if (n > d->frames_cap) {
		uint32_t *nf = realloc(d->frames, n * sizeof(uint32_t));
		if (!nf)
			return oom(d);
		d->frames = nf;
		d->frames_cap = n;
	}
	return 0;
}

/* jdk.types.StackTrace → stack id (leaf first, as JFR stores it). A
 * truncated trace gets a "[truncated]" root frame when there is room. */
static int get_stack(dec *d, const jfield *sf, const fval *sv, uint32_t *sid, size_t at)
{
	chunk *c = &d->ch;
	uint64_t cached;
	size_t pos, nf = 0, n, i;
	int truncated = 0, rc;
	int cacheable = sf->cpool && !sf->array;

	if (cacheable && wt_u64map64_get(&c->stacks, sv->v, &cached)) {
		*sid = (uint32_t)cached;
		return 0;
	}
	if (obj_pos(d, sf, sv, &pos)) {
		fval *vals = c->scr[1];
		int32_t ft = field_index(d, sf->cls, "truncated");
		int32_t ff = field_index(d, sf->cls, "frames");
		TRY(read_obj(d, sf->cls, pos, c->end, vals));
		if (ft >= 0)
			truncated = vals[ft].v != 0;
		if (ff >= 0 && c->fld[c->cls[sf->cls].field0 + ff].array) {
			const jfield *af = &c->fld[c->cls[sf->cls].field0 + ff];
			rd r = {d->buf, vals[ff].off, c->end};
			int32_t fm = field_index(d, af->cls, "method");
			int32_t fl = field_index(d, af->cls, "lineNumber");
			TRY(rd_count(d, &r, &n, 1, "stack frame count"));
			if (n > d->lim->max_stack_depth)
				return wt_err_set(d->err, WT_ELIMIT,
						  "jfr: chunk %u at byte %zu: stack trace of %zu frames "
						  "exceeds max_stack_depth %zu", d->chunk_no, pos, n,
						  d->lim->max_stack_depth);
			TRY(frames_room(d, n + 1));
			for (i = 0; i < n; i++) {
				fval e = {0, 0};
				size_t fpos;
				wt_frame fr = {0, WT_NO_MAPPING, 0, 0};
				TRY(rd_value(d, &r, af->cls, af->cpool, &e, 1));
				if (fm < 0 || !elem_pos(d, af->cls, af->cpool, &e, &fpos)) {
					TRY(synth_frame(d, "[unknown]", 9, &d->frames[nf]));
					nf++;
					continue;
				}
				{
					fval *fv = c->scr[2];
					const jclass *fc = &c->cls[af->cls];
					int hidden;
					TRY(read_obj(d, af->cls, fpos, c->end, fv));
					TRY(method_function(d, &c->fld[fc->field0 + fm], &fv[fm], &fr.function,
							    &hidden, at));
					if (hidden)
						continue;
					if (fl >= 0)
						fr.line = (int64_t)fv[fl].v;
				}
				if ((rc = wt_profile_add_frame(d->p, &fr, &d->frames[nf], d->err)))
					return ctxerr(d, rc, at);
				nf++;
			}
		}
	}
	if (truncated && nf < d->lim->max_stack_depth) {
		TRY(frames_room(d, nf + 1));
		if ((rc = synth_frame(d, "[truncated]", 11, &d->frames[nf])))
			return ctxerr(d, rc, at);
		nf++;
	}
	if ((rc = wt_profile_add_stack(d->p, d->frames, nf, sid, d->err)))
		return ctxerr(d, rc, at);
	if (cacheable && wt_u64map64_put(&c->stacks, sv->v, *sid))
		return oom(d);
	return 0;
}

/* Thread → profile string id of its name (UINT32_MAX: none). */
static int thread_name(dec *d, const jfield *tf, const fval *tv, uint32_t *sid, size_t at)
{
	chunk *c = &d->ch;
	uint64_t cached;
	size_t pos, n = 0;
	int isnull = 1, rc;
	int cacheable = tf->cpool && !tf->array;

	*sid = UINT32_MAX;
	if (cacheable && wt_u64map64_get(&c->threads, tv->v, &cached)) {
		*sid = (uint32_t)cached;
		return 0;
	}
	if (obj_pos(d, tf, tv, &pos)) {
		fval *vals = c->scr[1];
		int32_t fj = field_index(d, tf->cls, "javaName");
		int32_t fo = field_index(d, tf->cls, "osName");
		const jclass *k = &c->cls[tf->cls];
		TRY(read_obj(d, tf->cls, pos, c->end, vals));
		if (fj >= 0)
			TRY(field_string(d, &c->fld[k->field0 + fj], &vals[fj], 5, &n, &isnull));
		if (n == 0 && fo >= 0)
			TRY(field_string(d, &c->fld[k->field0 + fo], &vals[fo], 5, &n, &isnull));
		if (n > 0 && (rc = wt_profile_intern(d->p, d->sbuf, n, sid, d->err)))
			return ctxerr(d, rc, at);
	}
	if (cacheable && wt_u64map64_put(&c->threads, tv->v, *sid))
		return oom(d);
	return 0;
}

/* ---- events → samples ------------------------------------------------------------ */
static int64_t u2i(uint64_t v)
{
	return v > INT64_MAX ? INT64_MAX : (int64_t)v;
}

static int parse_duration_setting(const char *s, int64_t *ns)
{
	char *e;
	double v;

	errno = 0;
	v = strtod(s, &e);
	if (errno || e == s || v < 0)
		return -1;
	while (*e == ' ')
		e++;
	if (!strcmp(e, "ns")) *ns = (int64_t)v;
	else if (!strcmp(e, "us")) *ns = (int64_t)(v * 1e3);
	else if (!strcmp(e, "ms")) *ns = (int64_t)(v * 1e6);
	else if (!strcmp(e, "s")) *ns = (int64_t)(v * 1e9);
	else return -1;
	return 0;
}

/* k's first field in c's field table, NULL when the chunk has no fields
 * (a class without fields then has every slot at -1: nothing is read) */
static const jfield *class_fields(const chunk *c, const jclass *k)
{
	return c->fld ? c->fld + k->field0 : NULL;
}

static int on_setting(dec *d, const jclass *k, const fval *vals)
{
	chunk *c = &d->ch;
	size_t n;
	int isnull, is_period;
	int64_t ns;
	const jfield *f0 = class_fields(c, k);

	if (k->slot[F_A] < 0 || k->slot[F_B] < 0 || k->slot[F_C] < 0 || c->exec_cls_id < 0 ||
	    (int64_t)vals[k->slot[F_A]].v != c->exec_cls_id)
		return 0;
	TRY(field_string(d, &f0[k->slot[F_B]], &vals[k->slot[F_B]], 5, &n, &isnull));
	is_period = !strcmp(d->sbuf, "period");
	if (!is_period)
		return 0;
	TRY(field_string(d, &f0[k->slot[F_C]], &vals[k->slot[F_C]], 5, &n, &isnull));
	if (parse_duration_setting(d->sbuf, &ns) == 0 && ns > 0) {
		wt_err e;
		d->p->period = ns;
		if (wt_profile_intern_cstr(d->p, "cpu", &d->p->period_type, &e) ||
		    wt_profile_intern_cstr(d->p, "nanoseconds", &d->p->period_unit, &e))
			return ctxerr(d, e.code, 0);
	}
	return 0;
}

/* The float weight of a Datadog allocation or live-object sample (1 when
 * absent, not positive or not finite). */
static double dd_weight(const jclass *k, const fval *vals)
{
	uint32_t bits;
	float f;

	if (k->slot[F_B] < 0)
		return 1.0;
	bits = (uint32_t)vals[k->slot[F_B]].v;
	memcpy(&f, &bits, sizeof(f));
	return f > 0 && f < 1e12f ? (double)f : 1.0;
}

static int in_wall_chunk(const dec *d)
{
	return d->chunk_no < d->wall_cap && d->wall_chunk[d->chunk_no];
}

/* *yes = 1 when the sample's thread state is STATE_RUNNABLE (async-profiler's
 * jdk.types.ThreadState names; a sample without a state counts as running). */
static int runnable(dec *d, const jclass *k, const fval *vals, int64_t *yes)
{
	size_t n;
	int isnull;

	*yes = 1;
	if (k->slot[F_STATE] < 0)
		return 0;
	TRY(field_string(d, &d->ch.fld[k->field0 + k->slot[F_STATE]], &vals[k->slot[F_STATE]], 5, &n,
			 &isnull));
	*yes = isnull || !strcmp(d->sbuf, "STATE_RUNNABLE");
	return 0;
}

/* Pass 1: async-profiler's jdk.ActiveSetting "event" = "wall" marks a chunk
 * recorded in wall-clock mode. Its strings are inline, so no constant pool
 * is needed yet; a pooled string reads as null here and marks nothing. */
static int scan_setting(dec *d, uint32_t ci, size_t pos, size_t evend)
{
	chunk *c = &d->ch;
	const jclass *k = &c->cls[ci];
	const jfield *f0 = class_fields(c, k);
	fval *vals = c->scr[0];
	size_t n;
	int isnull;

	if (k->slot[F_B] < 0 || k->slot[F_C] < 0)
		return 0;
	TRY(read_obj(d, ci, pos, evend, vals));
	TRY(field_string(d, &f0[k->slot[F_B]], &vals[k->slot[F_B]], 5, &n, &isnull));
	if (isnull || strcmp(d->sbuf, "event"))
		return 0;
	TRY(field_string(d, &f0[k->slot[F_C]], &vals[k->slot[F_C]], 5, &n, &isnull));
	if (isnull || strcmp(d->sbuf, "wall"))
		return 0;
	if (d->chunk_no >= d->wall_cap) {
		size_t cap = d->chunk_no + 16;
		uint8_t *w = realloc(d->wall_chunk, cap);
		if (!w)
			return oom(d);
		memset(w + d->wall_cap, 0, cap - d->wall_cap);
		d->wall_chunk = w;
		d->wall_cap = cap;
	}
	d->wall_chunk[d->chunk_no] = 1;
	d->any_wall_chunk = 1;
	return 0;
}

static int on_event(dec *d, uint32_t ci, size_t pos, size_t evend)
{
	chunk *c = &d->ch;
	const jclass *k = &c->cls[ci];
	const jfield *f0 = class_fields(c, k);
	fval *vals = c->scr[0];
	int64_t values[T_N], t = 0;
	uint32_t stack = 0, ls = 0;
	wt_label lab[2];
	size_t nlab = 0;
	int rc, synth = 0;
	int ek = k->ev;

	if ((ek == EK_EXC_STATS && !d->use_exc_stats) || (ek == EK_GC_PHASE && !d->use_gc_phase))
		return 0;
	TRY(read_obj(d, ci, pos, evend, vals));
	if (ek == EK_SETTING)
		return on_setting(d, k, vals);
	memset(values, 0, sizeof(values));
#define VAL(s_) (k->slot[s_] >= 0 ? vals[k->slot[s_]].v : 0)
#define HAS(s_) (k->slot[s_] >= 0)
	switch (ek) {
	case EK_CPU: {
		/* datadog.ExecutionSample carries a weight (samples it stands for) */
		int64_t w = HAS(F_A) && VAL(F_A) > 0 ? u2i(VAL(F_A)) : 1;
		/* async-profiler event=wall samples every thread: wall time,
		 * and CPU time for the threads that were running */
		if (in_wall_chunk(d)) {
			int64_t r;
			values[T_WALL] = w;
			TRY(runnable(d, k, vals, &r));
			values[T_CPU] = r ? w : 0;
		} else {
			values[T_CPU] = w;
		}
		break;
	}
	case EK_WALL:
		values[T_WALL] = HAS(F_A) && VAL(F_A) > 0 ? u2i(VAL(F_A)) : 1;
		if (in_wall_chunk(d)) {
			int64_t r;
			TRY(runnable(d, k, vals, &r));
			values[T_CPU] = r ? values[T_WALL] : 0;
		}
		break;
	case EK_ALLOC_SAMPLE:
		if (d->skip_alloc_sample)
			return 0;
		/* fall through */
	case EK_ALLOC_OUT:
	case EK_ALLOC_TLAB:
		if (d->skip_jdk_alloc)
			return 0;
		values[T_AOBJ] = 1;
		values[T_ASPACE] = u2i(HAS(F_A) ? VAL(F_A) : VAL(F_B));
		break;
	case EK_LOCK:
		values[T_LOCK] = HAS(F_DUR) ? span_ns(d, &f0[k->slot[F_DUR]], VAL(F_DUR)) : 0;
		break;
	case EK_EXC:
		values[T_EXC] = 1;
		break;
	case EK_EXC_STATS: {
		/* cumulative count since JVM start: the first event is the
		 * baseline, later ones add what was thrown since */
		uint64_t v = VAL(F_A);
		values[T_EXC] = d->have_exc_prev && v > d->exc_prev ? u2i(v - d->exc_prev) : 0;
		if (!d->have_exc_prev || v > d->exc_prev)
			d->exc_prev = v;
		d->have_exc_prev = 1;
		synth = 1;
		break;
	}
	case EK_GC:
		values[T_GC] = HAS(F_A) ? span_ns(d, &f0[k->slot[F_A]], VAL(F_A))
					: HAS(F_DUR) ? span_ns(d, &f0[k->slot[F_DUR]], VAL(F_DUR)) : 0;
		synth = 2;
		break;
	case EK_GC_PHASE:
		values[T_GC] = HAS(F_DUR) ? span_ns(d, &f0[k->slot[F_DUR]], VAL(F_DUR)) : 0;
		synth = 2;
		break;
	case EK_MALLOC:
		values[T_NATIVE] = u2i(VAL(F_A));
		break;
	case EK_LIVE:
		values[T_IOBJ] = 1;
		values[T_ISPACE] = u2i(VAL(F_A));
		break;
	case EK_DD_ALLOC:
	case EK_DD_LIVE: {
		/* one sampled object of `size` bytes standing for `weight`
		 * objects (a float): the estimate is weight objects and
		 * size × weight bytes, as the Datadog profiler scales them */
		double w = dd_weight(k, vals);
		int64_t n = clamp128((__int128)(w + 0.5)), sz = u2i(VAL(F_A));
		int64_t bytes = clamp128((__int128)((double)sz * w + 0.5));
		values[ek == EK_DD_ALLOC ? T_AOBJ : T_IOBJ] = n;
		values[ek == EK_DD_ALLOC ? T_ASPACE : T_ISPACE] = bytes;
		break;
	}
	default:
		return 0;
	}
	if (HAS(F_START))
		t = ticks_to_ns(d, VAL(F_START));
	if (HAS(F_STACK) && (synth == 0 || VAL(F_STACK) != 0 || !f0[k->slot[F_STACK]].cpool))
		TRY(get_stack(d, &f0[k->slot[F_STACK]], &vals[k->slot[F_STACK]], &stack, pos));
	else if (synth) {
		uint32_t fr[2];
		size_t nf = 0, n = 0;
		int isnull;
		if (synth == 2 && HAS(F_B)) {
			TRY(field_string(d, &f0[k->slot[F_B]], &vals[k->slot[F_B]], 5, &n, &isnull));
			if (n && (rc = synth_frame(d, d->sbuf, n, &fr[nf++])))
				return ctxerr(d, rc, pos);
		}
		if ((rc = synth == 1 ? synth_frame(d, "[exception statistics]", 22, &fr[nf++])
				     : synth_frame(d, "[GC pause]", 10, &fr[nf++])))
			return ctxerr(d, rc, pos);
		if ((rc = wt_profile_add_stack(d->p, fr, nf, &stack, d->err)))
			return ctxerr(d, rc, pos);
	} else {
		if ((rc = wt_profile_add_stack(d->p, NULL, 0, &stack, d->err)))
			return ctxerr(d, rc, pos);
	}
	if (HAS(F_THREAD)) {
		uint32_t tn;
		TRY(thread_name(d, &f0[k->slot[F_THREAD]], &vals[k->slot[F_THREAD]], &tn, pos));
		if (tn != UINT32_MAX) {
			if ((rc = wt_profile_intern_cstr(d->p, "thread", &lab[nlab].key, d->err)))
				return ctxerr(d, rc, pos);
			lab[nlab].str = tn;
			lab[nlab].num = 0;
			lab[nlab].num_unit = 0;
			nlab++;
		}
	}
	if (HAS(F_SPAN) && VAL(F_SPAN) != 0 && c->cls[f0[k->slot[F_SPAN]].cls].kind == K_LONG) {
		char hex[17];
		snprintf(hex, sizeof(hex), "%016" PRIx64, VAL(F_SPAN));
		if ((rc = wt_profile_intern_cstr(d->p, "span_id", &lab[nlab].key, d->err)) ||
		    (rc = wt_profile_intern_cstr(d->p, hex, &lab[nlab].str, d->err)))
			return ctxerr(d, rc, pos);
		lab[nlab].num = 0;
		lab[nlab].num_unit = 0;
		nlab++;
	}
#undef VAL
#undef HAS
	if (nlab && (rc = wt_profile_add_labelset(d->p, lab, nlab, &ls, d->err)))
		return ctxerr(d, rc, pos);
	{
		int64_t row[T_N];
		size_t i;
		for (i = 0; i < T_N; i++)
			if (d->tidx[i] >= 0)
				row[d->tidx[i]] = values[i];
		if ((rc = wt_profile_add_sample(d->p, stack, ls, t, row, d->err)))
			return ctxerr(d, rc, pos);
	}
	d->st.used++;
	return 0;
}

/* ---- chunk passes ------------------------------------------------------------------ */
static int stats_add(dec *d, const char *name, uint64_t count)
{
	wt_jfr_stats *st = &d->st;

	if (st->ntypes == d->st_cap) {
		size_t cap = d->st_cap ? d->st_cap * 2 : 32;
		wt_jfr_count *nt = realloc(st->types, cap * sizeof(*nt));
		if (!nt)
			return oom(d);
		st->types = nt;
		d->st_cap = cap;
	}
	if (!(st->types[st->ntypes].name = strdup(name)))
		return oom(d);
	st->types[st->ntypes++].count = count;
	return 0;
}

/* pass: 1 = count events per type, 2 = pools + samples. */
static int do_chunk(dec *d, int pass)
{
	chunk *c = &d->ch;
	size_t pos = c->base + HDR_SIZE;
	uint64_t nmeta = 0, ncheck = 0, ncp = 0;

	TRY(parse_metadata(d));
	if (pass == 2)
		TRY(parse_pools(d, &ncp));
	while (pos < c->end) {
		rd r = {d->buf, pos, c->end};
		size_t evend;
		uint64_t type, ci;

		TRY(event_header(d, &r, &evend, &type));
		if (type == 0) {
			nmeta++;
		} else if (type == 1) {
			ncheck++;
		} else if (!wt_u64map64_get(&c->clsid, type, &ci)) {
			/* not described by the metadata: skippable, but not countable by name */
			if (pass == 1)
				d->st.events++;
		} else if (pass == 1) {
			c->cls[ci].count++;
			d->kind_count[c->cls[ci].ev]++;
			if (c->cls[ci].ev == EK_SETTING)
				TRY(scan_setting(d, (uint32_t)ci, r.pos, evend));
		} else if (c->cls[ci].ev) {
			TRY(on_event(d, (uint32_t)ci, r.pos, evend));
		}
		pos = evend;
	}
	if (pass == 1) {
		size_t i;
		d->st.metadata += nmeta;
		d->st.checkpoints += ncheck;
		for (i = 0; i < c->ncls; i++)
			if (c->cls[i].count) {
				d->st.events += c->cls[i].count;
				TRY(stats_add(d, mstr(d, c->cls[i].name), c->cls[i].count));
			}
	}
	return 0;
}

static int run_pass(dec *d, int pass)
{
	size_t pos = 0;

	d->chunk_no = 0;
	if (d->len == 0)
		return wt_err_set(d->err, WT_EINVAL, "jfr: empty input");
	while (pos < d->len) {
		int rc;
		memset(&d->ch, 0, sizeof(d->ch));
		rc = parse_header(d, pos);
		if (!rc)
			rc = do_chunk(d, pass);
		pos = d->ch.end;
		chunk_free(&d->ch);
		if (rc)
			return rc;
		d->chunk_no++;
	}
	return 0;
}

static int cmp_count(const void *a, const void *b)
{
	return strcmp(((const wt_jfr_count *)a)->name, ((const wt_jfr_count *)b)->name);
}

void wt_jfr_stats_free(wt_jfr_stats *st)
{
	size_t i;

	if (!st)
		return;
	for (i = 0; i < st->ntypes; i++)
		free(st->types[i].name);
	free(st->types);
	memset(st, 0, sizeof(*st));
}

/* Declare the sample types of the kinds present (cpu when none is). */
static int declare_types(dec *d)
{
	int want[T_N] = {0};
	size_t i, idx;
	int any = 0, rc;

	want[T_CPU] = d->kind_count[EK_CPU] > 0 || (d->any_wall_chunk && d->kind_count[EK_WALL] > 0);
	want[T_WALL] = d->kind_count[EK_WALL] > 0 || (d->any_wall_chunk && d->kind_count[EK_CPU] > 0);
	want[T_AOBJ] = want[T_ASPACE] = d->kind_count[EK_ALLOC_SAMPLE] + d->kind_count[EK_ALLOC_TLAB] +
					d->kind_count[EK_ALLOC_OUT] + d->kind_count[EK_DD_ALLOC] > 0;
	/* Two estimates of the same allocations are never added: the TLAB
	 * pair wins over jdk.ObjectAllocationSample (as async-profiler's
	 * converters read a recording that has both). */
	d->skip_alloc_sample = d->kind_count[EK_ALLOC_TLAB] + d->kind_count[EK_ALLOC_OUT] > 0;
	/* the Datadog profiler's own allocation samples win over the JDK's */
	d->skip_jdk_alloc = d->kind_count[EK_DD_ALLOC] > 0;
	want[T_LOCK] = d->kind_count[EK_LOCK] > 0;
	d->use_exc_stats = d->kind_count[EK_EXC] == 0 && d->kind_count[EK_EXC_STATS] > 0;
	want[T_EXC] = d->kind_count[EK_EXC] > 0 || d->use_exc_stats;
	d->use_gc_phase = d->kind_count[EK_GC] == 0 && d->kind_count[EK_GC_PHASE] > 0;
	want[T_GC] = d->kind_count[EK_GC] > 0 || d->use_gc_phase;
	want[T_NATIVE] = d->kind_count[EK_MALLOC] > 0;
	want[T_IOBJ] = want[T_ISPACE] = d->kind_count[EK_LIVE] + d->kind_count[EK_DD_LIVE] > 0;
	for (i = 0; i < T_N; i++)
		any |= want[i];
	if (!any)
		want[T_CPU] = 1;
	for (i = 0; i < T_N; i++) {
		d->tidx[i] = -1;
		if (!want[i])
			continue;
		if ((rc = wt_profile_add_type(d->p, tnames[i][0], tnames[i][1], d->hint, &idx, d->err)))
			return rc == WT_ENOMEM ? oom(d) : wt_err_prefix(d->err, "jfr");
		d->tidx[i] = (int64_t)idx;
		/* the default type: cpu when present, else the first declared */
		if (!d->p->default_type &&
		    (rc = wt_profile_intern_cstr(d->p, tnames[i][0], &d->p->default_type, d->err)))
			return rc == WT_ENOMEM ? oom(d) : wt_err_prefix(d->err, "jfr");
	}
	return 0;
}

int wt_jfr_decode_stats(const uint8_t *buf, size_t len, const wt_limits *lim, const char *hint,
			wt_profile **out, wt_jfr_stats *st, wt_err *err)
{
	dec d;
	wt_limits dl;
	int rc;
	size_t pos;

	*out = NULL;
	if (st)
		memset(st, 0, sizeof(*st));
	if (!lim) {
		wt_limits_default(&dl);
		lim = &dl;
	}
	memset(&d, 0, sizeof(d));
	d.buf = buf;
	d.len = len;
	d.lim = lim;
	d.hint = hint;
	d.err = err;
	d.budget = (uint64_t)len * 32 + (1u << 22);
	if (len > lim->max_decompressed) {
		rc = wt_err_set(err, WT_ELIMIT, "jfr: input of %zu bytes exceeds max_decompressed %zu",
				len, lim->max_decompressed);
		goto cleanup;
	}
	if (!(d.p = wt_profile_new(lim))) {
		rc = oom(&d);
		goto cleanup;
	}
	if ((rc = run_pass(&d, 1)) || (rc = declare_types(&d)) || (rc = run_pass(&d, 2)))
		goto cleanup;

	/* profile time span: first chunk start .. last chunk end */
	for (pos = 0; pos < len;) {
		int64_t s = (int64_t)be(buf + pos + 32, 8), du = (int64_t)be(buf + pos + 40, 8);
		if (d.p->time_ns == 0 || s < d.p->time_ns) {
			if (d.p->time_ns)
				d.p->duration_ns += d.p->time_ns - s;
			d.p->time_ns = s;
		}
		if (s + du - d.p->time_ns > d.p->duration_ns)
			d.p->duration_ns = s + du - d.p->time_ns;
		pos += (size_t)be(buf + pos + 8, 8);
	}
	/* samples as the profiler counts them: execution (cpu or wall) samples,
	 * else every event that became a sample */
	d.p->source_samples = (int64_t)(d.kind_count[EK_CPU] + d.kind_count[EK_WALL]);
	if (!d.p->source_samples)
		d.p->source_samples = (int64_t)d.st.used;
	d.st.chunks = d.chunk_no;
	d.st.skipped = d.st.events - d.st.used;
	if (st) {
		size_t i, j = 0;
		qsort(d.st.types, d.st.ntypes, sizeof(*d.st.types), cmp_count);
		for (i = 0; i < d.st.ntypes; i++) {
			if (j > 0 && !strcmp(d.st.types[j - 1].name, d.st.types[i].name)) {
				d.st.types[j - 1].count += d.st.types[i].count;
				free(d.st.types[i].name);
			} else {
				d.st.types[j++] = d.st.types[i];
			}
		}
		d.st.ntypes = j;
		*st = d.st;
		memset(&d.st, 0, sizeof(d.st));
	}
	*out = d.p;
	d.p = NULL;
	rc = 0;
cleanup:
	wt_jfr_stats_free(&d.st);
	wt_profile_free(d.p);
	chunk_free(&d.ch);
	free(d.sbuf);
	free(d.nbuf);
	free(d.frames);
	free(d.wall_chunk);
	return rc;
}

int wt_jfr_decode(const uint8_t *buf, size_t len, const wt_limits *lim, const char *hint,
		  wt_profile **out, wt_err *err)
{
	return wt_jfr_decode_stats(buf, len, lim, hint, out, NULL, err);
}
