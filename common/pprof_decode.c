/*
 * pprof_decode.c — profile.proto bytes (gzip or raw) → wt_profile.
 *
 * Two passes over the wire bytes, no intermediate message tree:
 *   1. wt_pb_walk() checks the wire format against the schema (first bad
 *      byte and field path) and counts samples, strings, labels, location
 *      lines ... so that limits are enforced, and every table below sized
 *      once, before anything proportional to them is allocated;
 *   2. a direct reader over the (now known well-formed) bytes maps the
 *      message into wt_profile, resolving every id and string index (an
 *      unresolved one is WT_EINVAL naming the field). The top level is read
 *      twice: first strings (interned in table order), sample types,
 *      mappings, and where each function and location is (they are read
 *      when converted, ids first), then the samples, so fields may come
 *      in any order. Scalars follow protobuf rules: the
 *      last occurrence wins, repeated scalars may be packed or not, unknown
 *      fields are skipped, a string ends at its first NUL byte (as C
 *      strings did when protobuf-c unpacked them).
 *
 * Mapping: one frame per Location.Line, leaf-most line first (line[0] is
 * the innermost inlined function); a location without lines becomes one
 * unsymbolized frame (WT_NO_FUNCTION) carrying its address and mapping.
 * A function's build id is taken from the mapping of the location that
 * uses it. Id 0 is an ordinary id when an object with id 0 exists;
 * otherwise a reference to id 0 means "none". When every object of a kind
 * has id 0 (the .NET profiler writes functions without ids and refers to
 * them by position), ids are taken as index+1. pprof has no per-sample
 * times: samples get time_ns 0.
 *
 * Memory: the decompressed bytes, the wt_profile, and per-object arrays
 * of the sizes the walk counted (bounded by the input and the limits).
 */
#include "pprof.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "compress.h"
#include "pbwalk.h"
#include "proto/profile.pb-c.h"

/* ---- pass 1: limits checked during the wire walk ------------------------- */
typedef struct walk_lim {
	const wt_limits *lim;
	/* what the walk counted: top-level repeated fields, and frames (one
	 * per location line, one for a location without lines) */
	uint32_t n_types, n_samples, n_mappings, n_locations, n_functions, n_strings;
	uint64_t n_frames;
	uint64_t n_loc_ids; /* location ids of all samples */
} walk_lim;

/* counts[] is indexed by the descriptor's field order; look fields up by
 * number so the code does not depend on that order. */
static uint32_t count_of(const ProtobufCMessageDescriptor *d, const uint32_t *counts, unsigned num)
{
	const ProtobufCFieldDescriptor *f;

	if (num - 1 < d->n_fields && d->fields[num - 1].id == num) /* numbered 1..n: no search */
		return counts[num - 1];
	f = protobuf_c_message_descriptor_get_field(d, num);
	return f ? counts[f - d->fields] : 0;
}

static int walk_check(void *ud, wt_pb_walker *w, const ProtobufCMessageDescriptor *d,
		      const uint32_t *counts, size_t offset, wt_err *err)
{
	walk_lim *wl = ud;
	const wt_limits *lim = wl->lim;
	uint32_t n;

	if (d == &perftools__profiles__location__descriptor) {
		n = count_of(d, counts, 4);
		wl->n_frames += n ? n : 1;
	} else if (d == &perftools__profiles__sample__descriptor) {
		if ((n = count_of(d, counts, 3)) > lim->max_labels)
			return wt_err_set(err, WT_ELIMIT,
					  "pprof: %s (byte %zu): %u labels exceed the limit of %zu",
					  wt_pb_walker_path(w), offset, n, lim->max_labels);
		n = count_of(d, counts, 1);
		wl->n_loc_ids += n;
		if (n > lim->max_stack_depth)
			return wt_err_set(err, WT_ELIMIT,
					  "pprof: %s (byte %zu): stack of %u locations exceeds the "
					  "depth limit of %zu", wt_pb_walker_path(w), offset, n,
					  lim->max_stack_depth);
	} else if (d == &perftools__profiles__profile__descriptor) {
		if ((n = count_of(d, counts, 2)) > lim->max_samples)
			return wt_err_set(err, WT_ELIMIT, "pprof: %u samples exceed the limit of %zu",
					  n, lim->max_samples);
		if ((n = count_of(d, counts, 6)) > lim->max_strings)
			return wt_err_set(err, WT_ELIMIT,
					  "pprof: string_table of %u entries exceeds the limit of %zu",
					  n, lim->max_strings);
		if ((n = count_of(d, counts, 1)) > lim->max_types)
			return wt_err_set(err, WT_ELIMIT,
					  "pprof: %u sample types exceed the limit of %zu",
					  n, lim->max_types);
		wl->n_types = n;
		wl->n_samples = count_of(d, counts, 2);
		wl->n_mappings = count_of(d, counts, 3);
		wl->n_locations = count_of(d, counts, 4);
		wl->n_functions = count_of(d, counts, 5);
		wl->n_strings = count_of(d, counts, 6);
	}
	return 0;
}

/* ---- id → index maps ------------------------------------------------------
 * Ids are usually 1..n; then a direct table is used, otherwise a sorted
 * array and binary search. */
typedef struct idpair {
	uint64_t id;
	uint32_t idx;
} idpair;

typedef struct idmap {
	uint32_t *dense; /* dense[id] = idx+1, 0 = absent */
	size_t ndense;
	idpair *pairs;
	size_t npairs;
} idmap;

static int idpair_cmp(const void *a, const void *b)
{
	const idpair *x = a, *y = b;
	return x->id < y->id ? -1 : x->id > y->id;
}

/* ids[i] for i < n; on a duplicate, *dup receives it and 1 is returned. */
static int idmap_build(idmap *m, const uint64_t *ids, size_t n, uint64_t *dup)
{
	uint64_t maxid = 0;
	size_t i;

	memset(m, 0, sizeof(*m));
	for (i = 0; i < n; i++)
		if (ids[i] > maxid)
			maxid = ids[i];
	if (maxid == 0 && n > 0) {
		/* No object has an id (the .NET profiler leaves Function.id unset
		 * and refers to functions by position): ids are index+1. A lone
		 * object with id 0 also answers to 0. */
		m->ndense = n + 1;
		m->dense = calloc(m->ndense, sizeof(uint32_t));
		if (!m->dense)
			return -1;
		for (i = 0; i < n; i++)
			m->dense[i + 1] = (uint32_t)i + 1;
		if (n == 1)
			m->dense[0] = 1;
		return 0;
	}
	if (maxid < (uint64_t)n * 2 + 1024) {
		m->ndense = (size_t)maxid + 1;
		m->dense = calloc(m->ndense, sizeof(uint32_t));
		if (!m->dense)
			return -1;
		for (i = 0; i < n; i++) {
			if (m->dense[ids[i]]) {
				*dup = ids[i];
				return 1;
			}
			m->dense[ids[i]] = (uint32_t)i + 1;
		}
		return 0;
	}
	m->pairs = malloc((n ? n : 1) * sizeof(idpair));
	if (!m->pairs)
		return -1;
	for (i = 0; i < n; i++) {
		m->pairs[i].id = ids[i];
		m->pairs[i].idx = (uint32_t)i;
	}
	m->npairs = n;
	qsort(m->pairs, n, sizeof(idpair), idpair_cmp);
	for (i = 1; i < n; i++)
		if (m->pairs[i].id == m->pairs[i - 1].id) {
			*dup = m->pairs[i].id;
			return 1;
		}
	return 0;
}

/* Index for id, or -1. */
static int64_t idmap_get(const idmap *m, uint64_t id)
{
	size_t lo = 0, hi = m->npairs;

	if (m->dense)
		return id < m->ndense && m->dense[id] ? (int64_t)m->dense[id] - 1 : -1;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (m->pairs[mid].id == id)
			return m->pairs[mid].idx;
		if (m->pairs[mid].id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return -1;
}

static void idmap_free(idmap *m)
{
	free(m->dense);
	free(m->pairs);
	memset(m, 0, sizeof(*m));
}

/* ---- pass 2: the wire reader ----------------------------------------------
 * Only ever runs on bytes the walk accepted; every read is still bounds
 * checked (a failure here is reported, never trusted). */
enum { PB_VARINT = 0, PB_I64 = 1, PB_LEN = 2, PB_I32 = 5 };

typedef struct rd {
	const uint8_t *p, *end;
} rd;

/* One field: its number, wire type, scalar value (varint or fixed) or
 * body (length-delimited). */
typedef struct fld {
	uint32_t num;
	int wt;
	uint64_t v;
	rd body;
} fld;

static inline int rd_varint(rd *r, uint64_t *v)
{
	const uint8_t *p = r->p;
	uint64_t x;
	int shift;

	if (p < r->end && !(*p & 0x80)) { /* one byte: the common case */
		*v = *p;
		r->p = p + 1;
		return 0;
	}
	if (r->end - p >= 3) { /* two or three bytes (ids of large tables) */
		if (!(p[1] & 0x80)) {
			*v = (uint64_t)(p[0] & 0x7f) | (uint64_t)p[1] << 7;
			r->p = p + 2;
			return 0;
		}
		if (!(p[2] & 0x80)) {
			*v = (uint64_t)(p[0] & 0x7f) | (uint64_t)(p[1] & 0x7f) << 7 | (uint64_t)p[2] << 14;
			r->p = p + 3;
			return 0;
		}
	}
	x = 0;
	for (shift = 0; shift < 64; shift += 7) {
		uint8_t b;

		if (p >= r->end)
			return -1;
		b = *p++;
		x |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80)) {
			r->p = p;
			*v = x;
			return 0;
		}
	}
	return -1;
}

/* 1 and *f filled, 0 at the end, -1 on malformed bytes. */
static inline int rd_field(rd *r, fld *f)
{
	uint64_t tag, n;

	if (r->p >= r->end)
		return 0;
	if (rd_varint(r, &tag))
		return -1;
	f->num = (uint32_t)(tag >> 3);
	f->wt = (int)(tag & 7);
	switch (f->wt) {
	case PB_VARINT:
		return rd_varint(r, &f->v) ? -1 : 1;
	case PB_I64:
		if (r->end - r->p < 8)
			return -1;
		memcpy(&f->v, r->p, 8);
		r->p += 8;
		return 1;
	case PB_I32: {
		uint32_t x;

		if (r->end - r->p < 4)
			return -1;
		memcpy(&x, r->p, 4);
		f->v = x;
		r->p += 4;
		return 1;
	}
	case PB_LEN:
		if (rd_varint(r, &n) || n > (uint64_t)(r->end - r->p))
			return -1;
		f->body.p = r->p;
		f->body.end = r->p + n;
		r->p += n;
		f->v = 0;
		return 1;
	default:
		return -1;
	}
}

/* Next element of a repeated scalar field f (packed in f->body, or the one
 * unpacked value): 1 and *v, 0 when done, -1 malformed. *pos starts 0. */
static inline int rd_repeated(fld *f, int *pos, uint64_t *v)
{
	if (f->wt != PB_LEN) {
		if (*pos)
			return 0;
		*pos = 1;
		*v = f->v;
		return 1;
	}
	if (f->body.p >= f->body.end)
		return 0;
	return rd_varint(&f->body, v) ? -1 : 1;
}

/* A field number's scalar, when the field has the scalar wire type (the
 * walk already refused any other). */
#define SCALAR(f) ((f).wt == PB_VARINT || (f).wt == PB_I64 || (f).wt == PB_I32)

/* ---- pass 2: mapping ------------------------------------------------------ */
typedef struct pb_vt {
	int64_t type, unit;
} pb_vt;

typedef struct pb_map {
	uint64_t id, start, limit, offset;
	int64_t filename, build_id;
} pb_map;

typedef struct pb_fn {
	uint64_t id;
	int64_t name, system_name, filename, start_line;
} pb_fn;

typedef struct pb_loc {
	uint64_t id, mapping_id, address;
	uint32_t nline; /* Line fields */
} pb_loc;

typedef struct pb_meta {
	int64_t time_nanos, duration_nanos, period, default_sample_type;
	int has_period_type;
	pb_vt period_type;
} pb_meta;

/* A location's frames: n == 1 → first is the frame id itself, else the
 * offset of its frames in loc_frames. */
typedef struct loc_ent {
	uint32_t first, n;
} loc_ent;

typedef struct conv {
	const uint8_t *bytes;
	size_t len;
	wt_profile *p;
	wt_err *err;
	const walk_lim *wl;
	uint32_t *sid;       /* string_table index → wt string id */
	size_t nstr;
	pb_vt *types;
	size_t ntypes;
	pb_map *mapv;
	size_t nmapv;
	/* Function and Location bodies, read when they are converted (after
	 * the strings, mappings and functions they refer to): spans into
	 * bytes (not owned: the decompressed buffer or the caller's input,
	 * both alive until wt_pprof_decode returns); 16 bytes an object
	 * instead of its parsed fields, fewer fresh pages a decode */
	rd *fnb;
	size_t nfnb;
	rd *locb;
	size_t nlocb;
	pb_meta meta;
	idmap maps, funcs, locs;
	uint32_t *map_idx;   /* pb mapping index → wt mapping index */
	uint32_t *fn_idx;    /* pb function index → wt function (no build id) */
	uint32_t *loc_off;   /* pb location index → first frame in loc_frames */
	uint32_t *loc_n;     /* ... and number of frames */
	uint32_t *loc_frames;
	loc_ent *loc_by_id;  /* dense location ids: id → frames (n 0 = absent) */
	size_t nloc_by_id;
	uint32_t *stack;     /* scratch: one sample's frames */
	uint64_t *loc_ids;   /* scratch: one sample's location ids */
	rd *label_body;      /* scratch: one sample's Label messages */
	wt_label *labels;    /* scratch: one sample's labels */
	int64_t *values;     /* scratch */
} conv;

static int malformed(conv *c, const uint8_t *at)
{
	return wt_err_set(c->err, WT_EINVAL, "pprof: malformed field near byte %zu",
			  (size_t)(at - c->bytes));
}

/* Resolve string index idx of field `what`; 0 or WT_EINVAL. */
static int str_at(conv *c, int64_t idx, uint32_t *out, const char *what, size_t i)
{
	if (idx == 0 && c->nstr == 0) {
		*out = 0;
		return 0;
	}
	if (idx < 0 || (uint64_t)idx >= c->nstr)
		return wt_err_set(c->err, WT_EINVAL,
				  "pprof: %s[%zu]: string index %" PRId64 " out of range "
				  "(string_table has %zu entries)", what, i, idx, c->nstr);
	*out = c->sid[idx];
	return 0;
}

static void *alloc_n(size_t n, size_t sz)
{
	return calloc(n ? n : 1, sz);
}

static int read_vt(rd r, pb_vt *vt)
{
	fld f;
	int k;

	while ((k = rd_field(&r, &f)) > 0) {
		if (f.num == 1 && SCALAR(f))
			vt->type = (int64_t)f.v;
		else if (f.num == 2 && SCALAR(f))
			vt->unit = (int64_t)f.v;
	}
	return k;
}

static int read_map(rd r, pb_map *m)
{
	fld f;
	int k;

	memset(m, 0, sizeof(*m));
	while ((k = rd_field(&r, &f)) > 0) {
		if (!SCALAR(f))
			continue;
		switch (f.num) {
		case 1: m->id = f.v; break;
		case 2: m->start = f.v; break;
		case 3: m->limit = f.v; break;
		case 4: m->offset = f.v; break;
		case 5: m->filename = (int64_t)f.v; break;
		case 6: m->build_id = (int64_t)f.v; break;
		default: break;
		}
	}
	return k;
}

static int read_fn(rd r, pb_fn *fn)
{
	fld f;
	int k;

	memset(fn, 0, sizeof(*fn));
	while ((k = rd_field(&r, &f)) > 0) {
		if (!SCALAR(f))
			continue;
		switch (f.num) {
		case 1: fn->id = f.v; break;
		case 2: fn->name = (int64_t)f.v; break;
		case 3: fn->system_name = (int64_t)f.v; break;
		case 4: fn->filename = (int64_t)f.v; break;
		case 5: fn->start_line = (int64_t)f.v; break;
		default: break;
		}
	}
	return k;
}

static int read_loc(rd r, pb_loc *l)
{
	fld f;
	int k;

	memset(l, 0, sizeof(*l));
	while ((k = rd_field(&r, &f)) > 0) {
		if (f.num == 4 && f.wt == PB_LEN)
			l->nline++;
		else if (SCALAR(f) && f.num == 1)
			l->id = f.v;
		else if (SCALAR(f) && f.num == 2)
			l->mapping_id = f.v;
		else if (SCALAR(f) && f.num == 3)
			l->address = f.v;
	}
	return k;
}

/* The first pass over the top level: everything but the samples. */
static int scan_top(conv *c)
{
	const walk_lim *wl = c->wl;
	rd r = {c->bytes, c->bytes + c->len};
	fld f;
	int k, rc;

	if (!(c->sid = alloc_n(wl->n_strings, sizeof(*c->sid))) ||
	    !(c->types = alloc_n(wl->n_types, sizeof(*c->types))) ||
	    !(c->mapv = alloc_n(wl->n_mappings, sizeof(*c->mapv))) ||
	    !(c->fnb = alloc_n(wl->n_functions, sizeof(*c->fnb))) ||
	    !(c->locb = alloc_n(wl->n_locations, sizeof(*c->locb))))
		return wt_err_set(c->err, WT_ENOMEM, "pprof: out of memory (tables)");
	for (;;) {
		const uint8_t *at = r.p;

		if ((k = rd_field(&r, &f)) <= 0)
			break;
		if (f.wt == PB_LEN) {
			switch (f.num) {
			case 1:
				if (c->ntypes >= wl->n_types)
					return malformed(c, at);
				memset(&c->types[c->ntypes], 0, sizeof(pb_vt));
				k = read_vt(f.body, &c->types[c->ntypes++]);
				break;
			case 3:
				if (c->nmapv >= wl->n_mappings)
					return malformed(c, at);
				k = read_map(f.body, &c->mapv[c->nmapv++]);
				break;
			case 4:
				if (c->nlocb >= wl->n_locations)
					return malformed(c, at);
				c->locb[c->nlocb++] = f.body;
				break;
			case 5:
				if (c->nfnb >= wl->n_functions)
					return malformed(c, at);
				c->fnb[c->nfnb++] = f.body;
				break;
			case 6: {
				/* strings are interned in table order, before anything else */
				const uint8_t *nul = memchr(f.body.p, 0, (size_t)(f.body.end - f.body.p));
				size_t n = (size_t)((nul ? nul : f.body.end) - f.body.p);

				if (c->nstr >= wl->n_strings)
					return malformed(c, at);
				if ((rc = wt_profile_intern(c->p, (const char *)f.body.p, n, &c->sid[c->nstr],
							    c->err)))
					return wt_err_prefix(c->err, "pprof: string_table[%zu]", c->nstr);
				c->nstr++;
				break;
			}
			case 11:
				/* a later period_type replaces an earlier one whole (as
				 * protobuf-c unpacked it; test_matches_protobuf_c) */
				c->meta.has_period_type = 1;
				memset(&c->meta.period_type, 0, sizeof(pb_vt));
				k = read_vt(f.body, &c->meta.period_type);
				break;
			default:
				break;
			}
			if (k < 0)
				return malformed(c, at);
			k = 1;
			continue;
		}
		switch (f.num) {
		case 9: c->meta.time_nanos = (int64_t)f.v; break;
		case 10: c->meta.duration_nanos = (int64_t)f.v; break;
		case 12: c->meta.period = (int64_t)f.v; break;
		case 14: c->meta.default_sample_type = (int64_t)f.v; break;
		default: break;
		}
	}
	if (k < 0)
		return malformed(c, r.p);
	return 0;
}

static int conv_types(conv *c, const char *hint)
{
	size_t i;
	int rc;

	for (i = 0; i < c->ntypes; i++) {
		const pb_vt *vt = &c->types[i];
		uint32_t t, u;

		if ((rc = str_at(c, vt->type, &t, "sample_type", i)) ||
		    (rc = str_at(c, vt->unit, &u, "sample_type", i)))
			return rc;
		/* wt_profile_str() pointers move when strings are added: copy. */
		{
			char *ts = strdup(wt_profile_str(c->p, t));
			char *us = strdup(wt_profile_str(c->p, u));
			if (!ts || !us)
				rc = wt_err_set(c->err, WT_ENOMEM, "pprof: out of memory");
			else
				rc = wt_profile_add_type(c->p, ts, us, hint, NULL, c->err);
			free(ts);
			free(us);
		}
		if (rc)
			return wt_err_prefix(c->err, "pprof: sample_type[%zu]", i);
	}
	return 0;
}

/* m from ids[0..n) (the caller's); 0, WT_ENOMEM or WT_EINVAL (a duplicate). */
static int build_ids(conv *c, idmap *m, const uint64_t *ids, size_t n, const char *what)
{
	uint64_t dup = 0;
	int r = idmap_build(m, ids, n, &dup);

	if (r < 0)
		return wt_err_set(c->err, WT_ENOMEM, "pprof: out of memory (%s ids)", what);
	if (r > 0)
		return wt_err_set(c->err, WT_EINVAL, "pprof: duplicate %s id %" PRIu64, what, dup);
	return 0;
}

/* An array for n ids (the caller frees it), or NULL with *rc WT_ENOMEM. */
static uint64_t *ids_alloc(conv *c, size_t n, const char *what, int *rc)
{
	uint64_t *ids = malloc((n ? n : 1) * sizeof(uint64_t));

	if (!ids)
		*rc = wt_err_set(c->err, WT_ENOMEM, "pprof: out of memory (%s ids)", what);
	return ids;
}

static int conv_mappings(conv *c)
{
	size_t i, n = c->nmapv;
	uint64_t *ids;
	int rc = 0;

	if (!(ids = ids_alloc(c, n, "mapping", &rc)))
		return rc;
	for (i = 0; i < n; i++)
		ids[i] = c->mapv[i].id;
	rc = build_ids(c, &c->maps, ids, n, "mapping");
	free(ids);
	if (rc)
		return rc;
	c->map_idx = malloc((n ? n : 1) * sizeof(uint32_t));
	if (!c->map_idx)
		return wt_err_set(c->err, WT_ENOMEM, "pprof: out of memory (mappings)");
	for (i = 0; i < n; i++) {
		const pb_map *pm = &c->mapv[i];
		wt_mapping m = {pm->start, pm->limit, pm->offset, 0, 0};

		if ((rc = str_at(c, pm->filename, &m.filename, "mapping", i)) ||
		    (rc = str_at(c, pm->build_id, &m.build_id, "mapping", i)))
			return rc;
		if ((rc = wt_profile_add_mapping(c->p, &m, &c->map_idx[i], c->err)))
			return wt_err_prefix(c->err, "pprof: mapping[%zu]", i);
	}
	return 0;
}

static int fill_function(conv *c, size_t i, const pb_fn *pf, wt_function *f)
{
	int rc;

	memset(f, 0, sizeof(*f));
	f->start_line = pf->start_line;
	if ((rc = str_at(c, pf->name, &f->name, "function", i)) ||
	    (rc = str_at(c, pf->system_name, &f->system_name, "function", i)) ||
	    (rc = str_at(c, pf->filename, &f->filename, "function", i)))
		return rc;
	return 0;
}

/* Functions are read twice: their ids first (a duplicate is reported
 * before any bad string index, as when they were read once into a table),
 * then the rest. */
static int conv_functions(conv *c)
{
	size_t i, n = c->nfnb;
	uint64_t *ids;
	pb_fn pf;
	int rc = 0;

	if (!(ids = ids_alloc(c, n, "function", &rc)))
		return rc;
	for (i = 0; i < n; i++) {
		if (read_fn(c->fnb[i], &pf) < 0) {
			free(ids);
			return malformed(c, c->fnb[i].p);
		}
		ids[i] = pf.id;
	}
	rc = build_ids(c, &c->funcs, ids, n, "function");
	free(ids);
	if (rc)
		return rc;
	c->fn_idx = malloc((n ? n : 1) * sizeof(uint32_t));
	if (!c->fn_idx)
		return wt_err_set(c->err, WT_ENOMEM, "pprof: out of memory (functions)");
	for (i = 0; i < n; i++) {
		wt_function f;

		if (read_fn(c->fnb[i], &pf) < 0)
			return malformed(c, c->fnb[i].p);
		if ((rc = fill_function(c, i, &pf, &f)))
			return rc;
		if ((rc = wt_profile_add_function(c->p, &f, &c->fn_idx[i], c->err)))
			return wt_err_prefix(c->err, "pprof: function[%zu]", i);
	}
	return 0;
}

/* One Line message: function id and line (last occurrence wins). */
static int read_line(rd r, uint64_t *function_id, int64_t *line)
{
	fld f;
	int k;

	*function_id = 0;
	*line = 0;
	while ((k = rd_field(&r, &f)) > 0) {
		if (f.num == 1 && SCALAR(f))
			*function_id = f.v;
		else if (f.num == 2 && SCALAR(f))
			*line = (int64_t)f.v;
	}
	return k;
}

static int conv_locations(conv *c)
{
	size_t i, j, n = c->nlocb, nframes = 0, k = 0;
	uint64_t *ids;
	pb_loc pl;
	int rc = 0;

	/* read twice, as functions are: ids, then the rest */
	if (!(ids = ids_alloc(c, n, "location", &rc)))
		return rc;
	for (i = 0; i < n; i++) {
		if (read_loc(c->locb[i], &pl) < 0) {
			free(ids);
			return malformed(c, c->locb[i].p);
		}
		ids[i] = pl.id;
		nframes += pl.nline ? pl.nline : 1;
	}
	rc = build_ids(c, &c->locs, ids, n, "location");
	free(ids);
	if (rc)
		return rc;
	if (nframes > UINT32_MAX)
		return wt_err_set(c->err, WT_ELIMIT, "pprof: too many location lines");
	c->loc_off = malloc((n ? n : 1) * sizeof(uint32_t));
	c->loc_n = malloc((n ? n : 1) * sizeof(uint32_t));
	c->loc_frames = malloc((nframes ? nframes : 1) * sizeof(uint32_t));
	if (!c->loc_off || !c->loc_n || !c->loc_frames)
		return wt_err_set(c->err, WT_ENOMEM, "pprof: out of memory (locations)");
	for (i = 0; i < n; i++) {
		wt_frame fr;
		uint32_t build_id = 0;
		rd r;
		fld f;
		int kk;

		if (read_loc(c->locb[i], &pl) < 0)
			return malformed(c, c->locb[i].p);
		memset(&fr, 0, sizeof(fr));
		fr.function = WT_NO_FUNCTION;
		fr.mapping = WT_NO_MAPPING;
		fr.address = pl.address;
		{
			int64_t mi = idmap_get(&c->maps, pl.mapping_id);
			if (mi >= 0) {
				fr.mapping = c->map_idx[mi];
				build_id = c->p->mappings[fr.mapping].build_id;
			} else if (pl.mapping_id != 0) {
				return wt_err_set(c->err, WT_EINVAL,
						  "pprof: location[%zu] (id %" PRIu64 "): no mapping with id %"
						  PRIu64, i, pl.id, pl.mapping_id);
			}
		}
		c->loc_off[i] = (uint32_t)k;
		c->loc_n[i] = pl.nline ? pl.nline : 1;
		if (!pl.nline) {
			if ((rc = wt_profile_add_frame(c->p, &fr, &c->loc_frames[k++], c->err)))
				return wt_err_prefix(c->err, "pprof: location[%zu]", i);
			continue;
		}
		r = c->locb[i];
		j = 0;
		while ((kk = rd_field(&r, &f)) > 0) {
			uint64_t function_id;
			int64_t fi;

			if (f.num != 4 || f.wt != PB_LEN)
				continue;
			if (read_line(f.body, &function_id, &fr.line) < 0)
				return malformed(c, f.body.p);
			fi = idmap_get(&c->funcs, function_id);
			fr.function = WT_NO_FUNCTION;
			if (fi >= 0) {
				fr.function = c->fn_idx[fi];
				if (build_id) { /* native code: the function carries its build id */
					/* the function as added without one (a copy:
					 * adding may move the table) */
					wt_function fn = c->p->functions[fr.function];

					fn.build_id = build_id;
					if ((rc = wt_profile_add_function(c->p, &fn, &fr.function, c->err)))
						return wt_err_prefix(c->err, "pprof: location[%zu]", i);
				}
			} else if (function_id != 0) {
				return wt_err_set(c->err, WT_EINVAL,
						  "pprof: location[%zu].line[%zu] (location id %" PRIu64
						  "): no function with id %" PRIu64,
						  i, j, pl.id, function_id);
			}
			if ((rc = wt_profile_add_frame(c->p, &fr, &c->loc_frames[k++], c->err)))
				return wt_err_prefix(c->err, "pprof: location[%zu].line[%zu]", i, j);
			j++;
		}
		if (kk < 0 || j != pl.nline)
			return malformed(c, c->locb[i].p);
	}
	if (c->locs.dense) {
		/* samples resolve ids with one load (the idmap takes three) */
		c->nloc_by_id = c->locs.ndense;
		if (!(c->loc_by_id = calloc(c->nloc_by_id, sizeof(*c->loc_by_id))))
			return wt_err_set(c->err, WT_ENOMEM, "pprof: out of memory (locations)");
		for (i = 0; i < c->nloc_by_id; i++) {
			uint32_t li = c->locs.dense[i];

			if (!li--)
				continue;
			c->loc_by_id[i].n = c->loc_n[li];
			c->loc_by_id[i].first = c->loc_n[li] == 1 ? c->loc_frames[c->loc_off[li]] : c->loc_off[li];
		}
	}
	return 0;
}

/* One Label message (last occurrence of each field wins). */
static int read_label(rd r, int64_t v[4])
{
	fld f;
	int k;

	v[0] = v[1] = v[2] = v[3] = 0;
	while ((k = rd_field(&r, &f)) > 0)
		if (f.num >= 1 && f.num <= 4 && SCALAR(f))
			v[f.num - 1] = (int64_t)f.v;
	return k;
}

/* One Sample message at body → c->p. */
static int conv_sample(conv *c, rd body, size_t i, size_t nt)
{
	const wt_limits *lim = &c->p->lim;
	size_t j, depth = 0, nids = 0, nv = 0, nlab = 0, nl = 0;
	uint32_t stack, ls;
	uint64_t x;
	fld f;
	int k, rc;

	while ((k = rd_field(&body, &f)) > 0) {
		int pos = 0, e;

		if (f.num == 1 && (f.wt == PB_LEN || f.wt == PB_VARINT)) {
			while ((e = rd_repeated(&f, &pos, &x)) > 0) {
				if (nids >= lim->max_stack_depth) /* the walk bounds this */
					return wt_err_set(c->err, WT_ELIMIT,
							  "pprof: sample[%zu]: stack deeper than the limit of %zu frames",
							  i, lim->max_stack_depth);
				c->loc_ids[nids++] = x;
			}
		} else if (f.num == 2 && (f.wt == PB_LEN || f.wt == PB_VARINT)) {
			while ((e = rd_repeated(&f, &pos, &x)) > 0) {
				if (nv < nt)
					c->values[nv] = (int64_t)x;
				nv++;
			}
		} else if (f.num == 3 && f.wt == PB_LEN) {
			if (nlab < lim->max_labels) /* the walk bounds this too */
				c->label_body[nlab] = f.body;
			nlab++;
			continue;
		} else {
			continue;
		}
		if (e < 0)
			return malformed(c, body.p);
	}
	if (k < 0)
		return malformed(c, body.p);
	if (nv != nt)
		return wt_err_set(c->err, WT_EINVAL,
				  "pprof: sample[%zu]: %zu values but %zu sample types", i, nv, nt);
	for (j = 0; j < nids; j++) {
		uint64_t id = c->loc_ids[j];
		loc_ent e = {0, 0};

		if (c->loc_by_id) {
			if (id < c->nloc_by_id)
				e = c->loc_by_id[id];
		} else {
			int64_t li = idmap_get(&c->locs, id);

			if (li >= 0) {
				e.n = c->loc_n[li];
				e.first = e.n == 1 ? c->loc_frames[c->loc_off[li]] : c->loc_off[li];
			}
		}
		if (!e.n) /* every location has at least one frame */
			return wt_err_set(c->err, WT_EINVAL,
					  "pprof: sample[%zu].location_id[%zu]: no location with id %"
					  PRIu64, i, j, id);
		if (depth + e.n > lim->max_stack_depth)
			return wt_err_set(c->err, WT_ELIMIT,
					  "pprof: sample[%zu]: stack deeper than the limit of %zu frames",
					  i, lim->max_stack_depth);
		if (e.n == 1)
			c->stack[depth] = e.first;
		else
			memcpy(c->stack + depth, c->loc_frames + e.first, e.n * sizeof(uint32_t));
		depth += e.n;
	}
	if (nlab > lim->max_labels)
		return wt_err_set(c->err, WT_ELIMIT, "pprof: sample[%zu]: %zu labels exceed the limit of %zu",
				  i, nlab, lim->max_labels);
	for (j = 0; j < nlab; j++) {
		wt_label *l = &c->labels[nl++];
		int64_t v[4];

		if (read_label(c->label_body[j], v) < 0)
			return malformed(c, c->label_body[j].p);
		memset(l, 0, sizeof(*l));
		if ((rc = str_at(c, v[0], &l->key, "sample.label.key", i)) ||
		    (rc = str_at(c, v[1], &l->str, "sample.label.str", i)) ||
		    (rc = str_at(c, v[3], &l->num_unit, "sample.label.num_unit", i)))
			return rc;
		if (l->str == 0)
			l->num = v[2];
		else
			l->num_unit = 0;
	}
	if ((rc = wt_profile_add_stack(c->p, c->stack, depth, &stack, c->err)) ||
	    (rc = wt_profile_add_labelset(c->p, c->labels, nl, &ls, c->err)))
		return wt_err_prefix(c->err, "pprof: sample[%zu]", i);
	if ((rc = wt_profile_add_sample(c->p, stack, ls, 0, c->values, c->err)))
		return wt_err_prefix(c->err, "pprof: sample[%zu]", i);
	return 0;
}

/* The second pass over the top level: the samples, in order. */
static int conv_samples(conv *c)
{
	const wt_limits *lim = &c->p->lim;
	size_t i = 0, nt = c->ntypes;
	rd r = {c->bytes, c->bytes + c->len};
	fld f = {0, 0, 0, {NULL, NULL}};
	int k, rc;

	c->stack = malloc((lim->max_stack_depth + 1) * sizeof(uint32_t));
	c->loc_ids = malloc((lim->max_stack_depth + 1) * sizeof(uint64_t));
	c->labels = malloc((lim->max_labels + 1) * sizeof(wt_label));
	c->label_body = malloc((lim->max_labels + 1) * sizeof(rd));
	c->values = calloc(nt ? nt : 1, sizeof(int64_t));
	if (!c->stack || !c->loc_ids || !c->labels || !c->label_body || !c->values)
		return wt_err_set(c->err, WT_ENOMEM, "pprof: out of memory (samples)");
	while ((k = rd_field(&r, &f)) > 0) {
		if (f.num != 2 || f.wt != PB_LEN)
			continue;
		if ((rc = conv_sample(c, f.body, i, nt)))
			return rc;
		i++;
	}
	if (k < 0)
		return malformed(c, r.p);
	return 0;
}

static int conv_meta(conv *c)
{
	const pb_meta *m = &c->meta;
	int rc;

	c->p->time_ns = m->time_nanos;
	c->p->duration_ns = m->duration_nanos;
	c->p->period = m->period;
	if (m->has_period_type &&
	    ((rc = str_at(c, m->period_type.type, &c->p->period_type, "period_type", 0)) ||
	     (rc = str_at(c, m->period_type.unit, &c->p->period_unit, "period_type", 0))))
		return rc;
	if ((rc = str_at(c, m->default_sample_type, &c->p->default_type, "default_sample_type", 0)))
		return rc;
	return 0;
}

static void conv_free(conv *c)
{
	free(c->sid);
	free(c->types);
	free(c->mapv);
	free(c->fnb);
	free(c->locb);
	idmap_free(&c->maps);
	idmap_free(&c->funcs);
	idmap_free(&c->locs);
	free(c->map_idx);
	free(c->fn_idx);
	free(c->loc_off);
	free(c->loc_n);
	free(c->loc_frames);
	free(c->loc_by_id);
	free(c->stack);
	free(c->loc_ids);
	free(c->labels);
	free(c->label_body);
	free(c->values);
}

int wt_pprof_decode(const uint8_t *buf, size_t len, const wt_limits *lim_in,
		    const char *hint, wt_profile **out, wt_err *err)
{
	wt_limits lim;
	uint8_t *raw = NULL;
	size_t rawlen = len;
	const uint8_t *bytes = buf;
	wt_profile *p = NULL;
	walk_lim wl;
	conv c;
	int rc;

	*out = NULL;
	memset(&c, 0, sizeof(c));
	memset(&wl, 0, sizeof(wl));
	if (lim_in)
		lim = *lim_in;
	else
		wt_limits_default(&lim);
	if (wt_is_gzip(buf, len)) {
		if (len > lim.max_body)
			return wt_err_set(err, WT_ELIMIT,
					  "pprof: compressed input of %zu bytes exceeds the limit of %zu",
					  len, lim.max_body);
		if ((rc = wt_gunzip(buf, len, lim.max_decompressed, &raw, &rawlen, err))) {
			wt_err_prefix(err, "pprof");
			goto cleanup;
		}
		bytes = raw;
	} else if (len > lim.max_decompressed) {
		/* Raw bytes are bounded like decompressed ones (the body limit
		 * is applied by whoever received them, see format.c). */
		return wt_err_set(err, WT_ELIMIT, "pprof: input of %zu bytes exceeds the limit of %zu",
				  len, lim.max_decompressed);
	}
	wl.lim = &lim;
	if ((rc = wt_pb_walk(&perftools__profiles__profile__descriptor, bytes, rawlen, "pprof",
			     walk_check, &wl, err)))
		goto cleanup;
	p = wt_profile_new(&lim);
	if (!p) {
		rc = wt_err_set(err, WT_ENOMEM, "pprof: out of memory");
		goto cleanup;
	}
	{
		/* size the tables once from what the walk counted (clamped to
		 * the limits; a failure here only means they grow as they go) */
		wt_profile_sizes sz = {wl.n_strings, wl.n_functions, (size_t)wl.n_frames,
				       wl.n_samples, wl.n_samples, (size_t)wl.n_loc_ids};
		(void)wt_profile_reserve(p, &sz);
	}
	c.bytes = bytes;
	c.len = rawlen;
	c.p = p;
	c.err = err;
	c.wl = &wl;
	if ((rc = scan_top(&c)) || (rc = conv_types(&c, hint)) || (rc = conv_mappings(&c)) ||
	    (rc = conv_functions(&c)) || (rc = conv_locations(&c)) || (rc = conv_samples(&c)) ||
	    (rc = conv_meta(&c)))
		goto cleanup;
	p->source_samples = (int64_t)wl.n_samples;
	*out = p;
	p = NULL;
cleanup:
	conv_free(&c);
	wt_profile_free(p);
	free(raw);
	return rc;
}
