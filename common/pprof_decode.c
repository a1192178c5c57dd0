/*
 * pprof_decode.c — profile.proto bytes (gzip or raw) → wt_profile.
 *
 * Three passes:
 *   1. wt_pb_walk() checks the wire format against the schema (first bad
 *      byte and field path) and counts samples, strings, labels, ... so that
 *      limits are enforced before anything proportional to them is
 *      allocated;
 *   2. protobuf-c unpacks into a bump arena (memory proportional to the
 *      input, which is itself bounded by max_decompressed);
 *   3. the message is mapped into wt_profile, resolving every id and string
 *      index (an unresolved one is WT_EINVAL naming the field).
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
 */
#include "pprof.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "compress.h"
#include "pbwalk.h"
#include "proto/profile.pb-c.h"

typedef Perftools__Profiles__Profile pb_profile;
typedef Perftools__Profiles__Sample pb_sample;
typedef Perftools__Profiles__Location pb_location;
typedef Perftools__Profiles__Function pb_function;
typedef Perftools__Profiles__Mapping pb_mapping;

/* ---- pass 1: limits checked during the wire walk ------------------------- */
typedef struct walk_lim {
	const wt_limits *lim;
} walk_lim;

/* counts[] is indexed by the descriptor's field order; look fields up by
 * number so the code does not depend on that order. */
static uint32_t count_of(const ProtobufCMessageDescriptor *d, const uint32_t *counts, unsigned num)
{
	const ProtobufCFieldDescriptor *f = protobuf_c_message_descriptor_get_field(d, num);
	return f ? counts[f - d->fields] : 0;
}

static int walk_check(void *ud, wt_pb_walker *w, const ProtobufCMessageDescriptor *d,
		      const uint32_t *counts, size_t offset, wt_err *err)
{
	const wt_limits *lim = ((walk_lim *)ud)->lim;
	uint32_t n;

	if (d == &perftools__profiles__sample__descriptor) {
		if ((n = count_of(d, counts, 3)) > lim->max_labels)
			return wt_err_set(err, WT_ELIMIT,
					  "pprof: %s (byte %zu): %u labels exceed the limit of %zu",
					  wt_pb_walker_path(w), offset, n, lim->max_labels);
		if ((n = count_of(d, counts, 1)) > lim->max_stack_depth)
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

/* ---- pass 2 allocator -------------------------------------------------------
 * protobuf-c allocates every sub-message and array separately; a bump arena
 * freed in one go makes unpacking several times cheaper than malloc/free. */
typedef struct arena_chunk {
	struct arena_chunk *next;
	size_t used, cap;
	max_align_t data[];
} arena_chunk;

typedef struct arena {
	arena_chunk *head;
} arena;

static void *arena_alloc(void *ud, size_t size)
{
	arena *a = ud;
	arena_chunk *c = a->head;
	size_t need = (size + 15) & ~(size_t)15;

	if (need < size)
		return NULL;
	if (!c || c->cap - c->used < need) {
		size_t cap = need > (1u << 20) ? need : (1u << 20);
		c = malloc(sizeof(arena_chunk) + cap);
		if (!c)
			return NULL;
		c->next = a->head;
		c->used = 0;
		c->cap = cap;
		a->head = c;
	}
	c->used += need;
	return (char *)c->data + c->used - need;
}

static void arena_free_one(void *ud, void *ptr)
{
	(void)ud;
	(void)ptr; /* everything goes at once in arena_release() */
}

static void arena_release(arena *a)
{
	while (a->head) {
		arena_chunk *n = a->head->next;
		free(a->head);
		a->head = n;
	}
}

/* ---- pass 3: mapping ------------------------------------------------------ */
typedef struct conv {
	const pb_profile *pb;
	wt_profile *p;
	wt_err *err;
	uint32_t *sid;       /* string_table index → wt string id */
	idmap maps, funcs, locs;
	uint32_t *map_idx;   /* pb mapping index → wt mapping index */
	uint32_t *fn_idx;    /* pb function index → wt function (no build id) */
	uint32_t *loc_off;   /* pb location index → first frame in loc_frames */
	uint32_t *loc_n;     /* ... and number of frames */
	uint32_t *loc_frames;
	uint32_t *stack;     /* scratch: one sample's frames */
	wt_label *labels;    /* scratch: one sample's labels */
	int64_t *values;     /* scratch */
} conv;

/* Resolve string index idx of field `what`; 0 or WT_EINVAL. */
static int str_at(conv *c, int64_t idx, uint32_t *out, const char *what, size_t i)
{
	if (idx == 0 && c->pb->n_string_table == 0) {
		*out = 0;
		return 0;
	}
	if (idx < 0 || (uint64_t)idx >= c->pb->n_string_table)
		return wt_err_set(c->err, WT_EINVAL,
				  "pprof: %s[%zu]: string index %" PRId64 " out of range "
				  "(string_table has %zu entries)", what, i, idx, c->pb->n_string_table);
	*out = c->sid[idx];
	return 0;
}

static int conv_strings(conv *c)
{
	size_t i, n = c->pb->n_string_table;
	int rc;

	c->sid = malloc((n ? n : 1) * sizeof(uint32_t));
	if (!c->sid)
		return wt_err_set(c->err, WT_ENOMEM, "pprof: out of memory (string table)");
	for (i = 0; i < n; i++) {
		const char *s = c->pb->string_table[i] ? c->pb->string_table[i] : "";
		if ((rc = wt_profile_intern(c->p, s, strlen(s), &c->sid[i], c->err)))
			return wt_err_prefix(c->err, "pprof: string_table[%zu]", i);
	}
	return 0;
}

static int conv_types(conv *c, const char *hint)
{
	size_t i;
	int rc;

	for (i = 0; i < c->pb->n_sample_type; i++) {
		const Perftools__Profiles__ValueType *vt = c->pb->sample_type[i];
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

static int build_ids(conv *c, idmap *m, size_t n, uint64_t (*get)(const pb_profile *, size_t),
		     const char *what)
{
	uint64_t *ids = malloc((n ? n : 1) * sizeof(uint64_t)), dup = 0;
	size_t i;
	int r;

	if (!ids)
		return wt_err_set(c->err, WT_ENOMEM, "pprof: out of memory (%s ids)", what);
	for (i = 0; i < n; i++)
		ids[i] = get(c->pb, i);
	r = idmap_build(m, ids, n, &dup);
	free(ids);
	if (r < 0)
		return wt_err_set(c->err, WT_ENOMEM, "pprof: out of memory (%s ids)", what);
	if (r > 0)
		return wt_err_set(c->err, WT_EINVAL, "pprof: duplicate %s id %" PRIu64, what, dup);
	return 0;
}

static uint64_t mapping_id(const pb_profile *pb, size_t i) { return pb->mapping[i]->id; }
static uint64_t function_id(const pb_profile *pb, size_t i) { return pb->function[i]->id; }
static uint64_t location_id(const pb_profile *pb, size_t i) { return pb->location[i]->id; }

static int conv_mappings(conv *c)
{
	size_t i, n = c->pb->n_mapping;
	int rc;

	if ((rc = build_ids(c, &c->maps, n, mapping_id, "mapping")))
		return rc;
	c->map_idx = malloc((n ? n : 1) * sizeof(uint32_t));
	if (!c->map_idx)
		return wt_err_set(c->err, WT_ENOMEM, "pprof: out of memory (mappings)");
	for (i = 0; i < n; i++) {
		const pb_mapping *pm = c->pb->mapping[i];
		wt_mapping m = {pm->memory_start, pm->memory_limit, pm->file_offset, 0, 0};

		if ((rc = str_at(c, pm->filename, &m.filename, "mapping", i)) ||
		    (rc = str_at(c, pm->build_id, &m.build_id, "mapping", i)))
			return rc;
		if ((rc = wt_profile_add_mapping(c->p, &m, &c->map_idx[i], c->err)))
			return wt_err_prefix(c->err, "pprof: mapping[%zu]", i);
	}
	return 0;
}

static int fill_function(conv *c, size_t i, wt_function *f)
{
	const pb_function *pf = c->pb->function[i];
	int rc;

	memset(f, 0, sizeof(*f));
	f->start_line = pf->start_line;
	if ((rc = str_at(c, pf->name, &f->name, "function", i)) ||
	    (rc = str_at(c, pf->system_name, &f->system_name, "function", i)) ||
	    (rc = str_at(c, pf->filename, &f->filename, "function", i)))
		return rc;
	return 0;
}

static int conv_functions(conv *c)
{
	size_t i, n = c->pb->n_function;
	int rc;

	if ((rc = build_ids(c, &c->funcs, n, function_id, "function")))
		return rc;
	c->fn_idx = malloc((n ? n : 1) * sizeof(uint32_t));
	if (!c->fn_idx)
		return wt_err_set(c->err, WT_ENOMEM, "pprof: out of memory (functions)");
	for (i = 0; i < n; i++) {
		wt_function f;

		if ((rc = fill_function(c, i, &f)))
			return rc;
		if ((rc = wt_profile_add_function(c->p, &f, &c->fn_idx[i], c->err)))
			return wt_err_prefix(c->err, "pprof: function[%zu]", i);
	}
	return 0;
}

static int conv_locations(conv *c)
{
	size_t i, j, n = c->pb->n_location, nframes = 0, k = 0;
	int rc;

	if ((rc = build_ids(c, &c->locs, n, location_id, "location")))
		return rc;
	for (i = 0; i < n; i++)
		nframes += c->pb->location[i]->n_line ? c->pb->location[i]->n_line : 1;
	if (nframes > UINT32_MAX)
		return wt_err_set(c->err, WT_ELIMIT, "pprof: too many location lines");
	c->loc_off = malloc((n ? n : 1) * sizeof(uint32_t));
	c->loc_n = malloc((n ? n : 1) * sizeof(uint32_t));
	c->loc_frames = malloc((nframes ? nframes : 1) * sizeof(uint32_t));
	if (!c->loc_off || !c->loc_n || !c->loc_frames)
		return wt_err_set(c->err, WT_ENOMEM, "pprof: out of memory (locations)");
	for (i = 0; i < n; i++) {
		const pb_location *pl = c->pb->location[i];
		wt_frame fr;
		uint32_t build_id = 0;

		memset(&fr, 0, sizeof(fr));
		fr.function = WT_NO_FUNCTION;
		fr.mapping = WT_NO_MAPPING;
		fr.address = pl->address;
		{
			int64_t mi = idmap_get(&c->maps, pl->mapping_id);
			if (mi >= 0) {
				fr.mapping = c->map_idx[mi];
				build_id = c->p->mappings[fr.mapping].build_id;
			} else if (pl->mapping_id != 0) {
				return wt_err_set(c->err, WT_EINVAL,
						  "pprof: location[%zu] (id %" PRIu64 "): no mapping with id %"
						  PRIu64, i, pl->id, pl->mapping_id);
			}
		}
		c->loc_off[i] = (uint32_t)k;
		c->loc_n[i] = pl->n_line ? (uint32_t)pl->n_line : 1;
		if (!pl->n_line) {
			if ((rc = wt_profile_add_frame(c->p, &fr, &c->loc_frames[k++], c->err)))
				return wt_err_prefix(c->err, "pprof: location[%zu]", i);
			continue;
		}
		for (j = 0; j < pl->n_line; j++) {
			const Perftools__Profiles__Line *ln = pl->line[j];
			int64_t fi = idmap_get(&c->funcs, ln->function_id);

			fr.function = WT_NO_FUNCTION;
			fr.line = ln->line;
			if (fi >= 0) {
				fr.function = c->fn_idx[fi];
				if (build_id) { /* native code: the function carries its build id */
					wt_function f;
					if ((rc = fill_function(c, (size_t)fi, &f)))
						return rc;
					f.build_id = build_id;
					if ((rc = wt_profile_add_function(c->p, &f, &fr.function, c->err)))
						return wt_err_prefix(c->err, "pprof: location[%zu]", i);
				}
			} else if (ln->function_id != 0) {
				return wt_err_set(c->err, WT_EINVAL,
						  "pprof: location[%zu].line[%zu] (location id %" PRIu64
						  "): no function with id %" PRIu64,
						  i, j, pl->id, ln->function_id);
			}
			if ((rc = wt_profile_add_frame(c->p, &fr, &c->loc_frames[k++], c->err)))
				return wt_err_prefix(c->err, "pprof: location[%zu].line[%zu]", i, j);
		}
	}
	return 0;
}

static int conv_samples(conv *c)
{
	const wt_limits *lim = &c->p->lim;
	size_t i, j, nt = c->pb->n_sample_type;
	int rc;

	c->stack = malloc((lim->max_stack_depth + 1) * sizeof(uint32_t));
	c->labels = malloc((lim->max_labels + 1) * sizeof(wt_label));
	c->values = calloc(nt ? nt : 1, sizeof(int64_t));
	if (!c->stack || !c->labels || !c->values)
		return wt_err_set(c->err, WT_ENOMEM, "pprof: out of memory (samples)");
	for (i = 0; i < c->pb->n_sample; i++) {
		const pb_sample *ps = c->pb->sample[i];
		size_t depth = 0, nl = 0;
		uint32_t stack, ls;

		if (ps->n_value != nt)
			return wt_err_set(c->err, WT_EINVAL,
					  "pprof: sample[%zu]: %zu values but %zu sample types",
					  i, ps->n_value, nt);
		for (j = 0; j < ps->n_location_id; j++) {
			int64_t li = idmap_get(&c->locs, ps->location_id[j]);
			uint32_t n;

			if (li < 0)
				return wt_err_set(c->err, WT_EINVAL,
						  "pprof: sample[%zu].location_id[%zu]: no location with id %"
						  PRIu64, i, j, ps->location_id[j]);
			n = c->loc_n[li];
			if (depth + n > lim->max_stack_depth)
				return wt_err_set(c->err, WT_ELIMIT,
						  "pprof: sample[%zu]: stack deeper than the limit of %zu frames",
						  i, lim->max_stack_depth);
			memcpy(c->stack + depth, c->loc_frames + c->loc_off[li], n * sizeof(uint32_t));
			depth += n;
		}
		if (ps->n_label > lim->max_labels)
			return wt_err_set(c->err, WT_ELIMIT,
					  "pprof: sample[%zu]: %zu labels exceed the limit of %zu",
					  i, ps->n_label, lim->max_labels);
		for (j = 0; j < ps->n_label; j++) {
			const Perftools__Profiles__Label *pl = ps->label[j];
			wt_label *l = &c->labels[nl++];

			memset(l, 0, sizeof(*l));
			if ((rc = str_at(c, pl->key, &l->key, "sample.label.key", i)) ||
			    (rc = str_at(c, pl->str, &l->str, "sample.label.str", i)) ||
			    (rc = str_at(c, pl->num_unit, &l->num_unit, "sample.label.num_unit", i)))
				return rc;
			if (l->str == 0)
				l->num = pl->num;
			else
				l->num_unit = 0;
		}
		if ((rc = wt_profile_add_stack(c->p, c->stack, depth, &stack, c->err)) ||
		    (rc = wt_profile_add_labelset(c->p, c->labels, nl, &ls, c->err)))
			return wt_err_prefix(c->err, "pprof: sample[%zu]", i);
		for (j = 0; j < nt; j++)
			c->values[j] = ps->value[j];
		if ((rc = wt_profile_add_sample(c->p, stack, ls, 0, c->values, c->err)))
			return wt_err_prefix(c->err, "pprof: sample[%zu]", i);
	}
	return 0;
}

static int conv_meta(conv *c)
{
	const pb_profile *pb = c->pb;
	int rc;

	c->p->time_ns = pb->time_nanos;
	c->p->duration_ns = pb->duration_nanos;
	c->p->period = pb->period;
	if (pb->period_type &&
	    ((rc = str_at(c, pb->period_type->type, &c->p->period_type, "period_type", 0)) ||
	     (rc = str_at(c, pb->period_type->unit, &c->p->period_unit, "period_type", 0))))
		return rc;
	if ((rc = str_at(c, pb->default_sample_type, &c->p->default_type, "default_sample_type", 0)))
		return rc;
	return 0;
}

static void conv_free(conv *c)
{
	free(c->sid);
	idmap_free(&c->maps);
	idmap_free(&c->funcs);
	idmap_free(&c->locs);
	free(c->map_idx);
	free(c->fn_idx);
	free(c->loc_off);
	free(c->loc_n);
	free(c->loc_frames);
	free(c->stack);
	free(c->labels);
	free(c->values);
}

int wt_pprof_decode(const uint8_t *buf, size_t len, const wt_limits *lim_in,
		    const char *hint, wt_profile **out, wt_err *err)
{
	wt_limits lim;
	uint8_t *raw = NULL;
	size_t rawlen = len;
	const uint8_t *bytes = buf;
	pb_profile *pb = NULL;
	wt_profile *p = NULL;
	walk_lim wl;
	arena ar = {NULL};
	ProtobufCAllocator pbal = {arena_alloc, arena_free_one, &ar};
	conv c;
	int rc;

	*out = NULL;
	memset(&c, 0, sizeof(c));
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
	pb = perftools__profiles__profile__unpack(&pbal, rawlen, bytes);
	if (!pb) {
		rc = wt_err_set(err, WT_EINVAL,
				"pprof: protobuf-c could not unpack the %zu-byte profile message", rawlen);
		goto cleanup;
	}
	free(raw); /* protobuf-c copied what it needs */
	raw = NULL;
	p = wt_profile_new(&lim);
	if (!p) {
		rc = wt_err_set(err, WT_ENOMEM, "pprof: out of memory");
		goto cleanup;
	}
	c.pb = pb;
	c.p = p;
	c.err = err;
	if ((rc = conv_strings(&c)) || (rc = conv_types(&c, hint)) || (rc = conv_mappings(&c)) ||
	    (rc = conv_functions(&c)) || (rc = conv_locations(&c)) || (rc = conv_samples(&c)) ||
	    (rc = conv_meta(&c)))
		goto cleanup;
	p->source_samples = (int64_t)pb->n_sample;
	*out = p;
	p = NULL;
cleanup:
	conv_free(&c);
	arena_release(&ar); /* frees pb */
	wt_profile_free(p);
	free(raw);
	return rc;
}
