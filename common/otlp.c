/*
 * otlp.c — OTLP profiles requests (protobuf) → wt_profile per service.
 *
 * Steps:
 *   1. detect the schema layout from the wire structure (detect()): the
 *      profiles signal changed field numbers between opentelemetry-proto
 *      releases, so the same bytes mean different things per version;
 *   2. wt_pb_walk() the bytes against that layout's descriptor (first bad
 *      byte and field path; limits checked before protobuf-c allocates);
 *   3. protobuf-c unpacks;
 *   4. every version's tables are normalised (ndict/nprof/nsample) so one
 *      mapping routine serves all: plan() finds each sample's service and
 *      the sample types per service, build() fills one wt_profile per
 *      service, resolving and bounds-checking every index.
 *
 * Layouts and how they are told apart (field numbers from upstream tags):
 *   1.5  no dictionary; tables inside Profile (string_table = 10).
 *        v1.3/v1.4 share every field we read.
 *   1.7  top-level dictionary with KeyValue attributes (attribute entry
 *        field 1 is a string); Profile.location_indices = 3 (packed),
 *        period_type = 6 (message).
 *   1.8  dictionary with KeyValueAndUnit (field 1 varint) and stacks;
 *        Profile time = 3 (fixed64), period = 6 (varint); Sample values = 2,
 *        attribute_indices = 3 (packed), link_index = 4 (varint);
 *        Profile.profile_id = 8 (bytes), dropped_attributes_count = 9.
 *   1.9  1.8 Sample + 1.10 Profile (profile_id = 7, dropped = 8 varint,
 *        original_payload_format = 9 string).
 *   1.10 Sample attribute_indices = 2, link_index = 3 (varint), values = 4.
 * Votes that contradict each other are WT_EINVAL ("ambiguous"); with no
 * evidence at all the target layout 1.10 is used. 1.6 requests (tables in
 * ProfilesData, which ExportProfilesServiceRequest did not carry) fail the
 * 1.5 walk with a wire-type error.
 *
 * Index conventions: from 1.8 on, table[0] is the zero value and index 0 of
 * a mapping, function or link means "none"; in 1.5/1.7 indices are plain
 * positions and mapping_index / link_index are optional.
 *
 * Values: with sample types T, values V and timestamps S of one sample:
 * V = 0, S > 0 → 1 per timestamp (at that time); T = 1, V = S → value i at
 * timestamp i; V = T → the values at the first timestamp (or the profile
 * time); T = 1, S = 0 → the sum of the values; anything else is WT_EINVAL.
 * eBPF profiler types: samples/count with period type cpu/nanoseconds →
 * cpu in nanoseconds (count × period); events/nanoseconds without a period
 * type (off-CPU) → offcpu.
 */
#include "otlp.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pbwalk.h"
#include "protojson.h"
#include "proto/otlp_common.pb-c.h"
#include "proto/otlp_profiles.pb-c.h"
#include "proto/otlp_profiles_service.pb-c.h"
#include "proto/otlp_profiles_v1_5.pb-c.h"
#include "proto/otlp_profiles_v1_7.pb-c.h"
#include "proto/otlp_profiles_v1_8.pb-c.h"
#include "proto/otlp_profiles_v1_9.pb-c.h"

typedef Opentelemetry__Proto__Common__V1__AnyValue anyval;
typedef Opentelemetry__Proto__Common__V1__KeyValue pb_kv;
typedef Opentelemetry__Proto__Common__V1__InstrumentationScope pb_scope;
typedef Opentelemetry__Proto__Resource__V1__Resource pb_resource;
typedef Opentelemetry__Proto__Profiles__V1development__Mapping pb_mapping;
typedef Opentelemetry__Proto__Profiles__V1development__Function pb_function;
typedef Opentelemetry__Proto__Profiles__V1development__Link pb_link;
typedef Opentelemetry__Proto__Profiles__V1development__Line pb_line;
typedef Opentelemetry__Proto__Profiles__V1development__ValueType pb_vt;
typedef Opentelemetry__Proto__Profiles__V1development__Stack pb_stack;
typedef Opentelemetry__Proto__Profiles__V1development__ProfilesDictionary pb_dict;
typedef Opentelemetry__Proto__Collector__Profiles__V1development__ExportProfilesServiceRequest pb_req110;

enum ver { V15, V17, V18, V19, V110 };
static const char *const vname[] = {"1.5", "1.7", "1.8", "1.9", "1.10"};

#define MAX_TARGET_TYPES 32
#define HEX_MAX 64 /* bytes of a bytes attribute rendered as hex */

/* ---- normalised view ------------------------------------------------------ */
typedef struct nattr {
	const char *key;
	const anyval *val;
} nattr;

typedef struct nloc {
	int64_t mapping; /* -1 = none */
	uint64_t address;
	pb_line **lines;
	size_t nlines;
	const int32_t *attrs;
	size_t nattrs;
} nloc;

typedef struct ndict {
	char **strings;
	size_t nstrings;
	pb_mapping **mappings;
	size_t nmappings;
	nloc *locs; /* owned */
	size_t nlocs;
	pb_function **functions;
	size_t nfunctions;
	pb_link **links;
	size_t nlinks;
	nattr *attrs; /* owned */
	size_t nattrs;
	pb_stack **stacks;
	size_t nstacks;
	int null0; /* index 0 of mapping/function/link = none */
} ndict;

typedef struct nsample {
	const int32_t *locs;
	size_t nlocs;
	size_t locs_base;  /* 1.5/1.7: position of locs[0] in location_indices */
	int32_t stack;     /* 1.8+: stack_index */
	const int32_t *attrs;
	size_t nattrs;
	int64_t link; /* -1 = none */
	const int64_t *values;
	size_t nvalues;
	const uint64_t *ts;
	size_t nts;
} nsample;

typedef struct nprof {
	enum ver v;
	const ndict *d;
	pb_vt *const *types;
	size_t ntypes;
	pb_vt *one_type[1];
	const pb_vt *period_type;
	int64_t period, time_ns, duration_ns;
	const int32_t *attrs;
	size_t nattrs;
	const int32_t *loc_indices; /* 1.5/1.7 */
	size_t nloc_indices;
	void *const *samples;
	size_t nsamples;
	const pb_resource *resource;
	const pb_scope *scope;
	char path[96];
} nprof;

/* ---- conversion state ----------------------------------------------------- */
typedef struct ttype {
	char name[64], unit[64];
} ttype;

typedef struct target {
	char *service;
	wt_profile *p;
	size_t nprofiles;
	ttype types[MAX_TARGET_TYPES];
	size_t ntypes;
	int64_t tmin, tmax;
	size_t last_seq; /* plan pass: last OTLP profile counted */
	/* frame cache for the dictionary last used with this target */
	const ndict *cd;
	uint32_t *loc_off, *loc_n; /* per location; loc_n 0 = not yet */
	uint32_t *fr;              /* frames of cached locations */
	size_t frlen, frcap;
	uint32_t *map_idx;         /* per mapping + 1; 0 = not yet */
} target;

typedef struct conv {
	enum ver v;
	const wt_limits *lim;
	wt_err *err;
	int merged;
	target *t;
	size_t nt, tcap;
	size_t nprofiles;
	size_t seq; /* OTLP profiles visited in this pass */
	uint32_t *stack; /* scratch */
	wt_label *labels;
	size_t nlabels;
	int64_t *vals;
} conv;

static int fail(conv *c, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(conv *c, int code, const char *fmt, ...)
{
	char msg[WT_ERR_MSG_MAX - 16];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return wt_err_set(c->err, code, "otlp %s: %s", vname[c->v], msg);
}

/* ---- 1. layout detection -------------------------------------------------- */
enum { W_VARINT = 0, W_I64 = 1, W_LEN = 2, W_I32 = 5 };

typedef struct pbf {
	uint32_t num;
	int wt;
	const uint8_t *p;
	size_t n;
} pbf;

/* Next field of b[0..len) at *off: 1, 0 at the end, -1 when malformed. */
static int pb_next(const uint8_t *b, size_t len, size_t *off, pbf *f)
{
	uint64_t tag, v;

	if (*off >= len)
		return 0;
	if (wt_pb_varint(b, len, off, &tag))
		return -1;
	f->num = (uint32_t)(tag >> 3);
	f->wt = (int)(tag & 7);
	f->p = b + *off;
	f->n = 0;
	switch (f->wt) {
	case W_VARINT:
		return wt_pb_varint(b, len, off, &v) ? -1 : 1;
	case W_I64:
		if (len - *off < 8)
			return -1;
		*off += 8;
		return 1;
	case W_I32:
		if (len - *off < 4)
			return -1;
		*off += 4;
		return 1;
	case W_LEN:
		if (wt_pb_varint(b, len, off, &v) || v > len - *off)
			return -1;
		f->p = b + *off;
		f->n = (size_t)v;
		*off += (size_t)v;
		return 1;
	}
	return -1;
}

typedef struct votes {
	int dict;
	int f15, f17, f18; /* profile family */
	int s18, s110;     /* Sample layout */
	int p18, p110;     /* Profile layout within 1.8+ */
} votes;

static void vote_sample(votes *vt, const uint8_t *b, size_t len)
{
	size_t off = 0;
	pbf f;

	while (pb_next(b, len, &off, &f) == 1) {
		if (f.num == 2)
			f.wt == W_VARINT ? vt->f17++ : 0; /* 1.5/1.7 locations_length */
		if (f.num == 3)
			f.wt == W_LEN ? vt->s18++ : f.wt == W_VARINT ? vt->s110++ : 0;
		if (f.num == 4)
			f.wt == W_VARINT ? vt->s18++ : f.wt == W_LEN ? vt->s110++ : 0;
	}
}

static void vote_profile(votes *vt, const uint8_t *b, size_t len)
{
	size_t off = 0;
	pbf f;

	while (pb_next(b, len, &off, &f) == 1) {
		switch (f.num) {
		case 2:
			if (f.wt == W_LEN)
				vote_sample(vt, f.p, f.n);
			break;
		case 3: /* 1.5 mapping_table / 1.7 location_indices vs 1.8+ time */
			if (f.wt == W_LEN)
				vt->dict ? vt->f17++ : vt->f15++;
			else if (f.wt == W_I64)
				vt->f18++;
			break;
		case 6: /* 1.5 function_table / 1.7 period_type vs 1.8+ period */
			if (f.wt == W_LEN)
				vt->dict ? vt->f17++ : vt->f15++;
			else if (f.wt == W_VARINT)
				vt->f18++;
			break;
		case 10: /* 1.5 string_table */
			if (!vt->dict && f.wt == W_LEN)
				vt->f15++;
			break;
		case 8:
			f.wt == W_LEN ? vt->p18++ : f.wt == W_VARINT ? vt->p110++ : 0;
			break;
		case 9:
			f.wt == W_VARINT ? vt->p18++ : f.wt == W_LEN ? vt->p110++ : 0;
			break;
		case 12:
			vt->p18++;
			break;
		}
	}
}

static void vote_dict(votes *vt, const uint8_t *b, size_t len)
{
	size_t off = 0, o2;
	pbf f, g;

	while (pb_next(b, len, &off, &f) == 1) {
		if (f.num != 6 || f.wt != W_LEN)
			continue;
		o2 = 0;
		while (pb_next(f.p, f.n, &o2, &g) == 1)
			if (g.num == 1)
				g.wt == W_LEN ? vt->f17++ : vt->f18++;
	}
}

/* Walk request → resource_profiles → scope_profiles → profiles. */
static int detect(const uint8_t *b, size_t len, enum ver *v, wt_err *err)
{
	votes vt;
	size_t off = 0, o1, o2;
	pbf f, g, h;
	int fam;

	memset(&vt, 0, sizeof(vt));
	while (pb_next(b, len, &off, &f) == 1)
		if (f.num == 2 && f.wt == W_LEN) {
			vt.dict = 1;
			vote_dict(&vt, f.p, f.n);
		}
	off = 0;
	while (pb_next(b, len, &off, &f) == 1) {
		if (f.num != 1 || f.wt != W_LEN)
			continue;
		o1 = 0;
		while (pb_next(f.p, f.n, &o1, &g) == 1) {
			if (g.num != 2 || g.wt != W_LEN)
				continue;
			o2 = 0;
			while (pb_next(g.p, g.n, &o2, &h) == 1)
				if (h.num == 2 && h.wt == W_LEN)
					vote_profile(&vt, h.p, h.n);
		}
	}
	/* family */
	if (!vt.dict && vt.f15 && !vt.f18)
		fam = V15;
	else if (vt.dict && vt.f17 && !vt.f18)
		fam = V17;
	else if (vt.f18 && !vt.f17 && !vt.f15)
		fam = V18;
	else if (!vt.f15 && !vt.f17 && !vt.f18)
		fam = vt.dict ? V18 : V15;
	else
		return wt_err_set(err, WT_EINVAL,
				  "otlp: ambiguous request: its structure matches both the "
				  "opentelemetry-proto 1.5/1.7 and the 1.8+ profiles layouts");
	if (fam != V18) {
		*v = (enum ver)fam;
		return 0;
	}
	if ((vt.s18 && vt.s110) || (vt.p18 && vt.p110) || (vt.p18 && vt.s110))
		return wt_err_set(err, WT_EINVAL,
				  "otlp: ambiguous request: samples or profiles match both the "
				  "opentelemetry-proto 1.8/1.9 and 1.10 layouts");
	if (vt.s18)
		*v = vt.p110 ? V19 : V18;
	else if (vt.p18)
		*v = V18;
	else
		*v = V110;
	return 0;
}

/* ---- 2. walk with limits -------------------------------------------------- */
typedef struct walk_ud {
	const wt_limits *lim;
	uint64_t samples;
} walk_ud;

static uint32_t count_named(const ProtobufCMessageDescriptor *d, const uint32_t *counts,
			    const char *name)
{
	const ProtobufCFieldDescriptor *f = protobuf_c_message_descriptor_get_field_by_name(d, name);
	return f ? counts[f - d->fields] : 0;
}

static int walk_check(void *ud, wt_pb_walker *w, const ProtobufCMessageDescriptor *d,
		      const uint32_t *counts, size_t offset, wt_err *err)
{
	walk_ud *u = ud;
	const wt_limits *lim = u->lim;
	uint32_t n;

	if ((n = count_named(d, counts, "string_table")) > lim->max_strings)
		return wt_err_set(err, WT_ELIMIT, "otlp: %s (byte %zu): string_table of %u entries "
				  "exceeds the limit of %zu", wt_pb_walker_path(w), offset, n,
				  lim->max_strings);
	if ((n = count_named(d, counts, "samples") + count_named(d, counts, "sample")) &&
	    (u->samples += n) > lim->max_samples)
		return wt_err_set(err, WT_ELIMIT, "otlp: %s (byte %zu): more than %zu samples",
				  wt_pb_walker_path(w), offset, lim->max_samples);
	if ((n = count_named(d, counts, "location_indices")) > lim->max_stack_depth &&
	    d == &opentelemetry__proto__profiles__v1development__stack__descriptor)
		return wt_err_set(err, WT_ELIMIT, "otlp: %s (byte %zu): stack of %u locations "
				  "exceeds the depth limit of %zu", wt_pb_walker_path(w), offset,
				  n, lim->max_stack_depth);
	if ((n = count_named(d, counts, "sample_type")) > lim->max_types)
		return wt_err_set(err, WT_ELIMIT, "otlp: %s (byte %zu): %u sample types exceed "
				  "the limit of %zu", wt_pb_walker_path(w), offset, n, lim->max_types);
	return 0;
}

/* ---- 4a. normalisation ---------------------------------------------------- */
static int str_at(conv *c, const ndict *d, int64_t i, const char **out, const char *path,
		  const char *field)
{
	if (i == 0 && d->nstrings == 0) {
		*out = "";
		return 0;
	}
	if (i < 0 || (uint64_t)i >= d->nstrings)
		return fail(c, WT_EINVAL, "%s.%s %" PRId64 " out of range (string_table has %zu "
			    "entries)", path, field, i, d->nstrings);
	*out = d->strings[i] ? d->strings[i] : "";
	return 0;
}

static void ndict_free(ndict *d)
{
	free(d->locs);
	free(d->attrs);
	memset(d, 0, sizeof(*d));
}

/* 1.5 / 1.7 tables (KeyValue attributes, optional mapping index). */
static int ndict_old(conv *c, ndict *d, char **strings, size_t nstrings, pb_mapping **maps,
		     size_t nmaps, Wt__Otlp__V17__Location **locs, size_t nlocs,
		     pb_function **fns, size_t nfns, pb_link **links, size_t nlinks, pb_kv **attrs,
		     size_t nattrs)
{
	size_t i;

	memset(d, 0, sizeof(*d));
	d->strings = strings;
	d->nstrings = nstrings;
	d->mappings = maps;
	d->nmappings = nmaps;
	d->functions = fns;
	d->nfunctions = nfns;
	d->links = links;
	d->nlinks = nlinks;
	d->locs = calloc(nlocs ? nlocs : 1, sizeof(nloc));
	d->attrs = calloc(nattrs ? nattrs : 1, sizeof(nattr));
	if (!d->locs || !d->attrs)
		return fail(c, WT_ENOMEM, "out of memory");
	d->nlocs = nlocs;
	d->nattrs = nattrs;
	for (i = 0; i < nlocs; i++) {
		nloc *l = &d->locs[i];
		l->mapping = locs[i]->has_mapping_index ? locs[i]->mapping_index : -1;
		l->address = locs[i]->address;
		l->lines = locs[i]->line;
		l->nlines = locs[i]->n_line;
		l->attrs = locs[i]->attribute_indices;
		l->nattrs = locs[i]->n_attribute_indices;
	}
	for (i = 0; i < nattrs; i++) {
		d->attrs[i].key = attrs[i]->key ? attrs[i]->key : "";
		d->attrs[i].val = attrs[i]->value;
	}
	return 0;
}

static int ndict_new(conv *c, ndict *d, const pb_dict *pd)
{
	static const pb_dict empty = OPENTELEMETRY__PROTO__PROFILES__V1DEVELOPMENT__PROFILES_DICTIONARY__INIT;
	size_t i;
	int rc;

	if (!pd)
		pd = &empty;
	memset(d, 0, sizeof(*d));
	d->null0 = 1;
	d->strings = pd->string_table;
	d->nstrings = pd->n_string_table;
	d->mappings = pd->mapping_table;
	d->nmappings = pd->n_mapping_table;
	d->functions = pd->function_table;
	d->nfunctions = pd->n_function_table;
	d->links = pd->link_table;
	d->nlinks = pd->n_link_table;
	d->stacks = pd->stack_table;
	d->nstacks = pd->n_stack_table;
	d->locs = calloc(pd->n_location_table ? pd->n_location_table : 1, sizeof(nloc));
	d->attrs = calloc(pd->n_attribute_table ? pd->n_attribute_table : 1, sizeof(nattr));
	if (!d->locs || !d->attrs)
		return fail(c, WT_ENOMEM, "out of memory");
	d->nlocs = pd->n_location_table;
	d->nattrs = pd->n_attribute_table;
	for (i = 0; i < d->nlocs; i++) {
		const Opentelemetry__Proto__Profiles__V1development__Location *pl = pd->location_table[i];
		nloc *l = &d->locs[i];
		l->mapping = pl->mapping_index ? pl->mapping_index : -1;
		l->address = pl->address;
		l->lines = pl->lines;
		l->nlines = pl->n_lines;
		l->attrs = pl->attribute_indices;
		l->nattrs = pl->n_attribute_indices;
	}
	for (i = 0; i < d->nattrs; i++) {
		char path[64];
		snprintf(path, sizeof(path), "dictionary.attribute_table[%zu]", i);
		if ((rc = str_at(c, d, pd->attribute_table[i]->key_strindex, &d->attrs[i].key, path,
				 "key_strindex")))
			return rc;
		d->attrs[i].val = pd->attribute_table[i]->value;
	}
	return 0;
}

/* Sample i of profile np in normalised form; stack slices are checked. */
static int get_sample(conv *c, const nprof *np, size_t i, nsample *s)
{
	memset(s, 0, sizeof(*s));
	s->link = -1;
	if (np->v == V15 || np->v == V17) {
		const Wt__Otlp__V17__Sample *ps = np->samples[i];
		int64_t start = ps->locations_start_index, n = ps->locations_length;

		if (start < 0 || n < 0 || (uint64_t)start > np->nloc_indices ||
		    (uint64_t)n > np->nloc_indices - (uint64_t)start)
			return fail(c, WT_EINVAL, "%s.sample[%zu]: locations_start_index %" PRId64
				    " + locations_length %" PRId64 " out of range "
				    "(location_indices has %zu entries)", np->path, i, start, n,
				    np->nloc_indices);
		s->locs = np->loc_indices + start;
		s->locs_base = (size_t)start;
		s->nlocs = (size_t)n;
		s->attrs = ps->attribute_indices;
		s->nattrs = ps->n_attribute_indices;
		s->link = ps->has_link_index ? ps->link_index : -1;
		s->values = ps->value;
		s->nvalues = ps->n_value;
		s->ts = ps->timestamps_unix_nano;
		s->nts = ps->n_timestamps_unix_nano;
		return 0;
	}
	{
		int32_t si;
		if (np->v == V110) {
			const Opentelemetry__Proto__Profiles__V1development__Sample *ps = np->samples[i];
			si = ps->stack_index;
			s->attrs = ps->attribute_indices;
			s->nattrs = ps->n_attribute_indices;
			s->link = ps->link_index ? ps->link_index : -1;
			s->values = ps->values;
			s->nvalues = ps->n_values;
			s->ts = ps->timestamps_unix_nano;
			s->nts = ps->n_timestamps_unix_nano;
		} else {
			const Wt__Otlp__V18__Sample *ps = np->samples[i];
			si = ps->stack_index;
			s->attrs = ps->attribute_indices;
			s->nattrs = ps->n_attribute_indices;
			s->link = ps->link_index ? ps->link_index : -1;
			s->values = ps->values;
			s->nvalues = ps->n_values;
			s->ts = ps->timestamps_unix_nano;
			s->nts = ps->n_timestamps_unix_nano;
		}
		if (si < 0 || (size_t)si >= np->d->nstacks)
			return fail(c, WT_EINVAL, "%s.samples[%zu].stack_index %" PRId32 " out of range "
				    "(dictionary.stack_table has %zu entries)", np->path, i, si,
				    np->d->nstacks);
		s->stack = si;
		s->locs = np->d->stacks[si]->location_indices;
		s->nlocs = np->d->stacks[si]->n_location_indices;
	}
	return 0;
}

/* ---- 4b. labels ------------------------------------------------------------- */
static const char *label_key(const char *k)
{
	if (!strcmp(k, "thread.name"))
		return "thread";
	if (!strcmp(k, "container.id"))
		return "container";
	if (!strcmp(k, "host.name"))
		return "host";
	return k;
}

/* Append attribute (key, val) as a label of target t; skips empty values,
 * composite values and service.name. */
static int add_label(conv *c, target *t, const ndict *d, const char *key, const anyval *v,
		     const char *path)
{
	wt_label *l;
	char buf[2 * HEX_MAX + 1];
	const char *s = NULL;
	size_t i;
	int rc;

	if (!v || !key || !*key || !strcmp(key, "service.name"))
		return 0;
	if (c->nlabels >= c->lim->max_labels)
		return fail(c, WT_ELIMIT, "%s: more than %zu labels on one sample", path,
			    c->lim->max_labels);
	l = &c->labels[c->nlabels];
	memset(l, 0, sizeof(*l));
	switch (v->value_case) {
	case OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_STRING_VALUE:
		s = v->string_value;
		break;
	case OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_STRING_VALUE_STRINDEX:
		if ((rc = str_at(c, d, v->string_value_strindex, &s, path, "string_value_strindex")))
			return rc;
		break;
	case OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_BOOL_VALUE:
		s = v->bool_value ? "true" : "false";
		break;
	case OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_DOUBLE_VALUE:
		snprintf(buf, sizeof(buf), "%.17g", v->double_value);
		s = buf;
		break;
	case OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_BYTES_VALUE:
		for (i = 0; i < v->bytes_value.len && i < HEX_MAX; i++)
			snprintf(buf + 2 * i, 3, "%02x", v->bytes_value.data[i]);
		buf[2 * i] = 0;
		s = buf;
		break;
	case OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_INT_VALUE:
		l->num = v->int_value;
		break;
	default:
		return 0;
	}
	if (s && !*s)
		return 0;
	key = label_key(key);
	if ((rc = wt_profile_intern_cstr(t->p, key, &l->key, c->err)) ||
	    (s && (rc = wt_profile_intern_cstr(t->p, s, &l->str, c->err))))
		return wt_err_prefix(c->err, "otlp %s: %s", vname[c->v], path);
	c->nlabels++;
	return 0;
}

static int attr_at(conv *c, const ndict *d, int32_t i, const nattr **a, const char *path,
		   size_t j)
{
	if (i < 0 || (size_t)i >= d->nattrs)
		return fail(c, WT_EINVAL, "%s.attribute_indices[%zu] %" PRId32 " out of range "
			    "(attribute_table has %zu entries)", path, j, i, d->nattrs);
	*a = &d->attrs[i];
	return 0;
}

static const char *any_str(const ndict *d, const anyval *v)
{
	if (!v)
		return NULL;
	if (v->value_case == OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_STRING_VALUE)
		return v->string_value;
	if (v->value_case == OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_STRING_VALUE_STRINDEX &&
	    v->string_value_strindex >= 0 && (size_t)v->string_value_strindex < d->nstrings)
		return d->strings[v->string_value_strindex];
	return NULL;
}

static const char *kv_key(const ndict *d, const pb_kv *kv)
{
	if (kv->key && *kv->key)
		return kv->key;
	if (kv->key_strindex > 0 && (size_t)kv->key_strindex < d->nstrings)
		return d->strings[kv->key_strindex];
	return "";
}

/* Service of a sample: its own service.name attribute, else the resource's. */
static int sample_service(conv *c, const nprof *np, const nsample *s, size_t i, const char **svc)
{
	const nattr *a = NULL;
	const char *v;
	char path[128];
	size_t j;
	int rc;

	*svc = NULL;
	snprintf(path, sizeof(path), "%s.samples[%zu]", np->path, i);
	for (j = 0; j < s->nattrs; j++) {
		if ((rc = attr_at(c, np->d, s->attrs[j], &a, path, j)))
			return rc;
		if (!strcmp(a->key, "service.name") && (v = any_str(np->d, a->val)) && *v)
			*svc = v;
	}
	if (!*svc && np->resource)
		for (j = 0; j < np->resource->n_attributes; j++)
			if (!strcmp(kv_key(np->d, np->resource->attributes[j]), "service.name") &&
			    (v = any_str(np->d, np->resource->attributes[j]->value)) && *v)
				*svc = v;
	if (!*svc)
		*svc = WT_OTLP_UNKNOWN_SERVICE;
	return 0;
}

/* ---- 4c. types ---------------------------------------------------------------- */
static int type_of(conv *c, const nprof *np, size_t j, ttype *tt, int64_t *scale)
{
	const char *t, *u, *pt = "", *pu = "";
	char path[128];
	int rc;

	snprintf(path, sizeof(path), "%s.sample_type[%zu]", np->path, j);
	if ((rc = str_at(c, np->d, np->types[j]->type_strindex, &t, path, "type_strindex")) ||
	    (rc = str_at(c, np->d, np->types[j]->unit_strindex, &u, path, "unit_strindex")))
		return rc;
	if (np->period_type &&
	    ((rc = str_at(c, np->d, np->period_type->type_strindex, &pt, np->path,
			  "period_type.type_strindex")) ||
	     (rc = str_at(c, np->d, np->period_type->unit_strindex, &pu, np->path,
			  "period_type.unit_strindex"))))
		return rc;
	*scale = 1;
	if (!strcmp(t, "samples") && !strcmp(u, "count") && !strcmp(pt, "cpu")) {
		t = "cpu";
		if (!strcmp(pu, "nanoseconds") && np->period > 0) {
			u = "nanoseconds";
			*scale = np->period;
		}
	} else if (!strcmp(t, "events") && !strcmp(u, "nanoseconds") && !*pt) {
		t = "offcpu"; /* the eBPF profiler's off-CPU profiles */
	}
	snprintf(tt->name, sizeof(tt->name), "%s", t);
	snprintf(tt->unit, sizeof(tt->unit), "%s", u);
	return 0;
}

static int target_type(conv *c, target *t, const ttype *tt, size_t *slot)
{
	size_t i;

	for (i = 0; i < t->ntypes; i++)
		if (!strcmp(t->types[i].name, tt->name) && !strcmp(t->types[i].unit, tt->unit)) {
			*slot = i;
			return 0;
		}
	if (t->ntypes >= MAX_TARGET_TYPES || t->ntypes >= c->lim->max_types)
		return fail(c, WT_ELIMIT, "service %s: more than %zu sample types", t->service,
			    t->ntypes);
	t->types[t->ntypes] = *tt;
	*slot = t->ntypes++;
	return 0;
}

static int get_target(conv *c, const char *svc, target **out)
{
	size_t i;

	if (c->merged)
		svc = "";
	for (i = 0; i < c->nt; i++)
		if (!strcmp(c->t[i].service, svc)) {
			*out = &c->t[i];
			return 0;
		}
	if (c->nt == c->tcap) {
		size_t nc = c->tcap ? c->tcap * 2 : 4;
		target *nt = realloc(c->t, nc * sizeof(*nt));
		if (!nt)
			return fail(c, WT_ENOMEM, "out of memory");
		c->t = nt;
		c->tcap = nc;
	}
	memset(&c->t[c->nt], 0, sizeof(target));
	c->t[c->nt].service = strdup(svc);
	if (!c->t[c->nt].service)
		return fail(c, WT_ENOMEM, "out of memory");
	*out = &c->t[c->nt++];
	return 0;
}

/* ---- 4d. frames ------------------------------------------------------------- */
static const char *const build_id_keys[] = {
	"process.executable.build_id.gnu", "process.executable.build_id.go",
	"process.executable.build_id.htlhash", "process.executable.build_id.profiling",
};

static int mapping_of(conv *c, target *t, const ndict *d, int64_t mi, uint32_t *out,
		      const char *path)
{
	const pb_mapping *pm;
	wt_mapping m;
	const char *fn, *bid = NULL;
	size_t j, k;
	int rc, best = 99;

	*out = WT_NO_MAPPING;
	if (mi < 0 || (d->null0 && mi == 0))
		return 0;
	if ((size_t)mi >= d->nmappings)
		return fail(c, WT_EINVAL, "%s.mapping_index %" PRId64 " out of range (mapping_table "
			    "has %zu entries)", path, mi, d->nmappings);
	if (t->map_idx[mi]) {
		*out = t->map_idx[mi] - 1;
		return 0;
	}
	pm = d->mappings[mi];
	memset(&m, 0, sizeof(m));
	m.start = pm->memory_start;
	m.limit = pm->memory_limit;
	m.offset = pm->file_offset;
	if ((rc = str_at(c, d, pm->filename_strindex, &fn, path, "mapping.filename_strindex")))
		return rc;
	for (j = 0; j < pm->n_attribute_indices; j++) {
		const nattr *a = NULL;
		if ((rc = attr_at(c, d, pm->attribute_indices[j], &a, path, j)))
			return rc;
		for (k = 0; k < sizeof(build_id_keys) / sizeof(build_id_keys[0]); k++)
			if (!strcmp(a->key, build_id_keys[k]) && (int)k < best && any_str(d, a->val)) {
				bid = any_str(d, a->val);
				best = (int)k;
			}
	}
	if ((rc = wt_profile_intern_cstr(t->p, fn, &m.filename, c->err)) ||
	    (bid && (rc = wt_profile_intern_cstr(t->p, bid, &m.build_id, c->err))) ||
	    (rc = wt_profile_add_mapping(t->p, &m, out, c->err)))
		return wt_err_prefix(c->err, "otlp %s: %s", vname[c->v], path);
	t->map_idx[mi] = *out + 1;
	return 0;
}

static int fr_push(conv *c, target *t, uint32_t f)
{
	if (t->frlen == t->frcap) {
		size_t nc = t->frcap ? t->frcap * 2 : 256;
		uint32_t *n = realloc(t->fr, nc * sizeof(uint32_t));
		if (!n)
			return fail(c, WT_ENOMEM, "out of memory");
		t->fr = n;
		t->frcap = nc;
	}
	t->fr[t->frlen++] = f;
	return 0;
}

/* Frames of location li (cached per target and dictionary). */
static int loc_frames(conv *c, target *t, const ndict *d, int32_t li, const uint32_t **fr,
		      size_t *n, const char *path)
{
	const nloc *l;
	wt_frame f;
	uint32_t build_id = 0;
	size_t j;
	int rc;

	if (li < 0 || (size_t)li >= d->nlocs)
		return fail(c, WT_EINVAL, "%s: location index %" PRId32 " out of range "
			    "(location_table has %zu entries)", path, li, d->nlocs);
	if (t->cd != d) { /* new dictionary: reset the caches */
		free(t->loc_off);
		free(t->loc_n);
		free(t->map_idx);
		t->loc_off = calloc(d->nlocs ? d->nlocs : 1, sizeof(uint32_t));
		t->loc_n = calloc(d->nlocs ? d->nlocs : 1, sizeof(uint32_t));
		t->map_idx = calloc(d->nmappings ? d->nmappings : 1, sizeof(uint32_t));
		t->frlen = 0;
		t->cd = d;
		if (!t->loc_off || !t->loc_n || !t->map_idx) {
			t->cd = NULL;
			return fail(c, WT_ENOMEM, "out of memory");
		}
	}
	if (t->loc_n[li]) {
		*fr = t->fr + t->loc_off[li];
		*n = t->loc_n[li];
		return 0;
	}
	l = &d->locs[li];
	memset(&f, 0, sizeof(f));
	f.address = l->address;
	{
		char lp[160];
		snprintf(lp, sizeof(lp), "%s: location_table[%" PRId32 "]", path, li);
		if ((rc = mapping_of(c, t, d, l->mapping, &f.mapping, lp)))
			return rc;
		if (f.mapping != WT_NO_MAPPING)
			build_id = t->p->mappings[f.mapping].build_id;
		if (t->frlen + (l->nlines ? l->nlines : 1) > UINT32_MAX)
			return fail(c, WT_ELIMIT, "too many frames");
		t->loc_off[li] = (uint32_t)t->frlen;
		if (!l->nlines) {
			uint32_t id;
			f.function = WT_NO_FUNCTION;
			if ((rc = wt_profile_add_frame(t->p, &f, &id, c->err)))
				return wt_err_prefix(c->err, "otlp %s: %s", vname[c->v], lp);
			if ((rc = fr_push(c, t, id)))
				return rc;
		}
		for (j = 0; j < l->nlines; j++) {
			const pb_line *ln = l->lines[j];
			int64_t fi = ln->function_index;
			uint32_t id;

			f.function = WT_NO_FUNCTION;
			f.line = ln->line;
			if (fi < 0 || (size_t)fi >= d->nfunctions) {
				if (!(d->null0 && fi == 0 && d->nfunctions == 0))
					return fail(c, WT_EINVAL, "%s.line[%zu].function_index %" PRId64
						    " out of range (function_table has %zu entries)",
						    lp, j, fi, d->nfunctions);
			} else if (!(d->null0 && fi == 0)) {
				const pb_function *pf = d->functions[fi];
				const char *name, *sys, *file;
				wt_function wf;

				memset(&wf, 0, sizeof(wf));
				if ((rc = str_at(c, d, pf->name_strindex, &name, lp, "function.name_strindex")) ||
				    (rc = str_at(c, d, pf->system_name_strindex, &sys, lp,
						 "function.system_name_strindex")) ||
				    (rc = str_at(c, d, pf->filename_strindex, &file, lp,
						 "function.filename_strindex")))
					return rc;
				wf.start_line = pf->start_line;
				wf.build_id = build_id;
				if ((rc = wt_profile_intern_cstr(t->p, name, &wf.name, c->err)) ||
				    (rc = wt_profile_intern_cstr(t->p, sys, &wf.system_name, c->err)) ||
				    (rc = wt_profile_intern_cstr(t->p, file, &wf.filename, c->err)) ||
				    (rc = wt_profile_add_function(t->p, &wf, &f.function, c->err)))
					return wt_err_prefix(c->err, "otlp %s: %s", vname[c->v], lp);
			}
			if ((rc = wt_profile_add_frame(t->p, &f, &id, c->err)))
				return wt_err_prefix(c->err, "otlp %s: %s", vname[c->v], lp);
			if ((rc = fr_push(c, t, id)))
				return rc;
		}
		t->loc_n[li] = (uint32_t)(t->frlen - t->loc_off[li]);
	}
	*fr = t->fr + t->loc_off[li];
	*n = t->loc_n[li];
	return 0;
}

/* ---- 4e. profiles ------------------------------------------------------------ */
static int64_t clamp_ts(uint64_t t)
{
	return t > INT64_MAX ? INT64_MAX : (int64_t)t;
}

/* pass 0: which services and types; pass 1: samples. */
static int do_profile(conv *c, const nprof *np, int pass)
{
	ttype tt[MAX_TARGET_TYPES];
	int64_t scale[MAX_TARGET_TYPES];
	size_t slot[MAX_TARGET_TYPES];
	size_t i, j, k;
	target *last = NULL;
	int rc;

	c->seq++;
	if (np->ntypes == 0) {
		if (np->nsamples == 0)
			return 0;
		return fail(c, WT_EINVAL, "%s: %zu samples but no sample_type", np->path,
			    np->nsamples);
	}
	if (np->ntypes > MAX_TARGET_TYPES)
		return fail(c, WT_ELIMIT, "%s: %zu sample types", np->path, np->ntypes);
	for (j = 0; j < np->ntypes; j++)
		if ((rc = type_of(c, np, j, &tt[j], &scale[j])))
			return rc;
	for (i = 0; i < np->nsamples; i++) {
		nsample s;
		const char *svc;
		target *t = NULL;
		char path[128];

		snprintf(path, sizeof(path), "%s.samples[%zu]", np->path, i);
		if ((rc = get_sample(c, np, i, &s)) || (rc = sample_service(c, np, &s, i, &svc)) ||
		    (rc = get_target(c, svc, &t)))
			return rc;
		if (pass == 0) {
			if (t != last) {
				for (j = 0; j < np->ntypes; j++)
					if ((rc = target_type(c, t, &tt[j], &slot[j])))
						return rc;
				if (t->last_seq != c->seq) {
					t->last_seq = c->seq;
					t->nprofiles++;
				}
				last = t;
			}
			continue;
		}
		for (j = 0; j < np->ntypes; j++)
			if ((rc = target_type(c, t, &tt[j], &slot[j])))
				return rc;
		/* stack */
		{
			size_t depth = 0;
			for (j = 0; j < s.nlocs; j++) {
				const uint32_t *fr = NULL;
				size_t n = 0;
				char lp[160];
				if (np->v == V15 || np->v == V17)
					snprintf(lp, sizeof(lp), "%s.location_indices[%zu] (of sample[%zu])",
						 np->path, s.locs_base + j, i);
				else
					snprintf(lp, sizeof(lp), "dictionary.stack_table[%" PRId32
						 "].location_indices[%zu] (of %s)", s.stack, j, path);
				if ((rc = loc_frames(c, t, np->d, s.locs[j], &fr, &n, lp)))
					return rc;
				if (depth + n > c->lim->max_stack_depth)
					return fail(c, WT_ELIMIT, "%s: stack deeper than the limit of %zu "
						    "frames", path, c->lim->max_stack_depth);
				memcpy(c->stack + depth, fr, n * sizeof(uint32_t));
				depth += n;
			}
			/* labels: resource < scope < profile < sample < link */
			uint32_t st, ls;
			c->nlabels = 0;
			if (c->merged) {
				wt_label *l = &c->labels[c->nlabels++];
				memset(l, 0, sizeof(*l));
				if ((rc = wt_profile_intern_cstr(t->p, "service", &l->key, c->err)) ||
				    (rc = wt_profile_intern_cstr(t->p, svc, &l->str, c->err)))
					return rc;
			}
			if (np->resource)
				for (j = 0; j < np->resource->n_attributes; j++)
					if ((rc = add_label(c, t, np->d, kv_key(np->d, np->resource->attributes[j]),
							    np->resource->attributes[j]->value, path)))
						return rc;
			if (np->scope)
				for (j = 0; j < np->scope->n_attributes; j++)
					if ((rc = add_label(c, t, np->d, kv_key(np->d, np->scope->attributes[j]),
							    np->scope->attributes[j]->value, path)))
						return rc;
			for (j = 0; j < np->nattrs; j++) {
				const nattr *a = NULL;
				if ((rc = attr_at(c, np->d, np->attrs[j], &a, np->path, j)) ||
				    (rc = add_label(c, t, np->d, a->key, a->val, path)))
					return rc;
			}
			for (j = 0; j < s.nattrs; j++) {
				const nattr *a = NULL;
				if ((rc = attr_at(c, np->d, s.attrs[j], &a, path, j)) ||
				    (rc = add_label(c, t, np->d, a->key, a->val, path)))
					return rc;
			}
			if (s.link >= 0 && !(np->d->null0 && s.link == 0)) {
				const pb_link *lk;
				anyval av = OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__INIT;
				if ((size_t)s.link >= np->d->nlinks)
					return fail(c, WT_EINVAL, "%s.link_index %" PRId64 " out of range "
						    "(link_table has %zu entries)", path, s.link,
						    np->d->nlinks);
				lk = np->d->links[s.link];
				av.value_case = OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_BYTES_VALUE;
				av.bytes_value = lk->span_id;
				if ((rc = add_label(c, t, np->d, "span_id", &av, path)))
					return rc;
				av.bytes_value = lk->trace_id;
				if ((rc = add_label(c, t, np->d, "trace_id", &av, path)))
					return rc;
			}
			if ((rc = wt_profile_add_stack(t->p, c->stack, depth, &st, c->err)) ||
			    (rc = wt_profile_add_labelset(t->p, c->labels, c->nlabels, &ls, c->err)))
				return wt_err_prefix(c->err, "otlp %s: %s", vname[c->v], path);
			/* values */
#define EMIT(ti_, val_, when_)                                                                      \
	do {                                                                                     \
		int64_t x_;                                                                      \
		memset(c->vals, 0, t->ntypes * sizeof(int64_t));                                 \
		if (__builtin_mul_overflow((int64_t)(val_), scale[ti_], &x_))                      \
			return fail(c, WT_EINVAL, "%s: value %" PRId64 " x period %" PRId64      \
				    " overflows", path, (int64_t)(val_), scale[ti_]);              \
		c->vals[slot[ti_]] = x_;                                                        \
		if ((rc = wt_profile_add_sample(t->p, st, ls, (when_), c->vals, c->err)))        \
			return wt_err_prefix(c->err, "otlp %s: %s", vname[c->v], path);          \
	} while (0)
			if (s.nvalues == 0) {
				if (s.nts && np->ntypes != 1)
					return fail(c, WT_EINVAL, "%s: %zu timestamps without values "
						    "but %zu sample types", path, s.nts, np->ntypes);
				for (k = 0; k < s.nts; k++)
					EMIT(0, 1, clamp_ts(s.ts[k]));
			} else if (np->ntypes == 1 && s.nvalues == s.nts) {
				for (k = 0; k < s.nts; k++)
					EMIT(0, s.values[k], clamp_ts(s.ts[k]));
			} else if (s.nvalues == np->ntypes) {
				int64_t when = s.nts ? clamp_ts(s.ts[0]) : 0;
				int64_t x;
				memset(c->vals, 0, t->ntypes * sizeof(int64_t));
				for (j = 0; j < np->ntypes; j++) {
					if (__builtin_mul_overflow(s.values[j], scale[j], &x))
						return fail(c, WT_EINVAL, "%s: value %" PRId64 " x period %"
							    PRId64 " overflows", path, s.values[j], scale[j]);
					c->vals[slot[j]] = x;
				}
				if ((rc = wt_profile_add_sample(t->p, st, ls, when, c->vals, c->err)))
					return wt_err_prefix(c->err, "otlp %s: %s", vname[c->v], path);
			} else if (np->ntypes == 1 && s.nts == 0) {
				int64_t sum = 0;
				for (k = 0; k < s.nvalues; k++)
					if (__builtin_add_overflow(sum, s.values[k], &sum))
						return fail(c, WT_EINVAL, "%s: values overflow", path);
				EMIT(0, sum, 0);
			} else {
				return fail(c, WT_EINVAL, "%s: %zu values and %zu timestamps do not fit "
					    "%zu sample types", path, s.nvalues, s.nts, np->ntypes);
			}
#undef EMIT
		}
		if (np->time_ns > 0) {
			if (!t->tmin || np->time_ns < t->tmin)
				t->tmin = np->time_ns;
			if (np->time_ns + np->duration_ns > t->tmax)
				t->tmax = np->time_ns + np->duration_ns;
		}
		if (np->period > 0 && !t->p->period && np->period_type) {
			const char *pt, *pu;
			if (!str_at(c, np->d, np->period_type->type_strindex, &pt, np->path, "period_type") &&
			    !str_at(c, np->d, np->period_type->unit_strindex, &pu, np->path, "period_type")) {
				t->p->period = np->period;
				if (wt_profile_intern_cstr(t->p, pt, &t->p->period_type, c->err) ||
				    wt_profile_intern_cstr(t->p, pu, &t->p->period_unit, c->err))
					return c->err->code;
			}
		}
	}
	return 0;
}

/* Fill the common part of an nprof. */
static void np_init(nprof *np, enum ver v, const ndict *d, const pb_resource *res,
		    const pb_scope *scope, size_t r, size_t s, size_t k)
{
	memset(np, 0, sizeof(*np));
	np->v = v;
	np->d = d;
	np->resource = res;
	np->scope = scope;
	snprintf(np->path, sizeof(np->path), "resource_profiles[%zu].scope_profiles[%zu].profiles[%zu]",
		 r, s, k);
}

/* Run pass over every profile of the unpacked request msg. */
static int run_pass(conv *c, const ProtobufCMessage *msg, const ndict *shared, int pass)
{
	size_t r, s, k;
	int rc;
	nprof np;

#define ITER(RP, NRP)                                                                         \
	for (r = 0; r < (NRP); r++)                                                           \
		for (s = 0; s < (RP)[r]->n_scope_profiles; s++)                               \
			for (k = 0; k < (RP)[r]->scope_profiles[s]->n_profiles; k++)

	switch (c->v) {
	case V15: {
		const Wt__Otlp__V15__ProfilesData *m = (const void *)msg;
		ITER(m->resource_profiles, m->n_resource_profiles) {
			const Wt__Otlp__V15__Profile *p = m->resource_profiles[r]->scope_profiles[s]->profiles[k];
			ndict d;
			rc = ndict_old(c, &d, p->string_table, p->n_string_table, p->mapping_table,
				       p->n_mapping_table, p->location_table, p->n_location_table,
				       p->function_table, p->n_function_table, p->link_table,
				       p->n_link_table, p->attribute_table, p->n_attribute_table);
			if (!rc) {
				np_init(&np, c->v, &d, m->resource_profiles[r]->resource,
					m->resource_profiles[r]->scope_profiles[s]->scope, r, s, k);
				np.types = p->sample_type;
				np.ntypes = p->n_sample_type;
				np.period_type = p->period_type;
				np.period = p->period;
				np.time_ns = p->time_nanos;
				np.duration_ns = p->duration_nanos;
				np.attrs = p->attribute_indices;
				np.nattrs = p->n_attribute_indices;
				np.loc_indices = p->location_indices;
				np.nloc_indices = p->n_location_indices;
				np.samples = (void *const *)p->sample;
				np.nsamples = p->n_sample;
				rc = do_profile(c, &np, pass);
			}
			/* the per-profile dictionary dies here: drop target caches */
			for (size_t i = 0; i < c->nt; i++)
				if (c->t[i].cd == &d)
					c->t[i].cd = NULL;
			ndict_free(&d);
			if (rc)
				return rc;
		}
		break;
	}
	case V17: {
		const Wt__Otlp__V17__ProfilesData *m = (const void *)msg;
		ITER(m->resource_profiles, m->n_resource_profiles) {
			const Wt__Otlp__V17__Profile *p = m->resource_profiles[r]->scope_profiles[s]->profiles[k];
			np_init(&np, c->v, shared, m->resource_profiles[r]->resource,
				m->resource_profiles[r]->scope_profiles[s]->scope, r, s, k);
			np.types = p->sample_type;
			np.ntypes = p->n_sample_type;
			np.period_type = p->period_type;
			np.period = p->period;
			np.time_ns = p->time_nanos;
			np.duration_ns = p->duration_nanos;
			np.attrs = p->attribute_indices;
			np.nattrs = p->n_attribute_indices;
			np.loc_indices = p->location_indices;
			np.nloc_indices = p->n_location_indices;
			np.samples = (void *const *)p->sample;
			np.nsamples = p->n_sample;
			if ((rc = do_profile(c, &np, pass)))
				return rc;
		}
		break;
	}
#define NEWPROF(P, SAMPLES, NSAMPLES)                                                         \
	do {                                                                                  \
		np.one_type[0] = (P)->sample_type;                                            \
		np.types = np.one_type;                                                       \
		np.ntypes = (P)->sample_type ? 1 : 0;                                         \
		np.period_type = (P)->period_type;                                            \
		np.period = (P)->period;                                                      \
		np.time_ns = clamp_ts((P)->time_unix_nano);                                   \
		np.duration_ns = clamp_ts((P)->duration_nano);                                \
		np.attrs = (P)->attribute_indices;                                            \
		np.nattrs = (P)->n_attribute_indices;                                         \
		np.samples = (void *const *)(SAMPLES);                                        \
		np.nsamples = (NSAMPLES);                                                     \
	} while (0)
	case V18: {
		const Wt__Otlp__V18__ProfilesData *m = (const void *)msg;
		ITER(m->resource_profiles, m->n_resource_profiles) {
			const Wt__Otlp__V18__Profile *p = m->resource_profiles[r]->scope_profiles[s]->profiles[k];
			np_init(&np, c->v, shared, m->resource_profiles[r]->resource,
				m->resource_profiles[r]->scope_profiles[s]->scope, r, s, k);
			NEWPROF(p, p->sample, p->n_sample);
			if ((rc = do_profile(c, &np, pass)))
				return rc;
		}
		break;
	}
	case V19: {
		const Wt__Otlp__V19__ProfilesData *m = (const void *)msg;
		ITER(m->resource_profiles, m->n_resource_profiles) {
			const Wt__Otlp__V19__Profile *p = m->resource_profiles[r]->scope_profiles[s]->profiles[k];
			np_init(&np, c->v, shared, m->resource_profiles[r]->resource,
				m->resource_profiles[r]->scope_profiles[s]->scope, r, s, k);
			NEWPROF(p, p->samples, p->n_samples);
			if ((rc = do_profile(c, &np, pass)))
				return rc;
		}
		break;
	}
	case V110: {
		const pb_req110 *m = (const void *)msg;
		ITER(m->resource_profiles, m->n_resource_profiles) {
			const Opentelemetry__Proto__Profiles__V1development__Profile *p =
				m->resource_profiles[r]->scope_profiles[s]->profiles[k];
			np_init(&np, c->v, shared, m->resource_profiles[r]->resource,
				m->resource_profiles[r]->scope_profiles[s]->scope, r, s, k);
			NEWPROF(p, p->samples, p->n_samples);
			if ((rc = do_profile(c, &np, pass)))
				return rc;
		}
		break;
	}
	}
#undef NEWPROF
#undef ITER
	return 0;
}

static size_t count_profiles(enum ver v, const ProtobufCMessage *msg)
{
	size_t n = 0, r, s;
#define COUNT(M)                                                                          \
	for (r = 0; r < (M)->n_resource_profiles; r++)                                    \
		for (s = 0; s < (M)->resource_profiles[r]->n_scope_profiles; s++)         \
			n += (M)->resource_profiles[r]->scope_profiles[s]->n_profiles;
	switch (v) {
	case V15: COUNT((const Wt__Otlp__V15__ProfilesData *)(const void *)msg); break;
	case V17: COUNT((const Wt__Otlp__V17__ProfilesData *)(const void *)msg); break;
	case V18: COUNT((const Wt__Otlp__V18__ProfilesData *)(const void *)msg); break;
	case V19: COUNT((const Wt__Otlp__V19__ProfilesData *)(const void *)msg); break;
	case V110: COUNT((const pb_req110 *)(const void *)msg); break;
	}
#undef COUNT
	return n;
}

static const ProtobufCMessageDescriptor *const top_desc[] = {
	&wt__otlp__v1_5__profiles_data__descriptor,
	&wt__otlp__v1_7__profiles_data__descriptor,
	&wt__otlp__v1_8__profiles_data__descriptor,
	&wt__otlp__v1_9__profiles_data__descriptor,
	&opentelemetry__proto__collector__profiles__v1development__export_profiles_service_request__descriptor,
};

static void target_free_cache(target *t)
{
	free(t->loc_off);
	free(t->loc_n);
	free(t->map_idx);
	free(t->fr);
	t->loc_off = t->loc_n = t->map_idx = t->fr = NULL;
	t->cd = NULL;
}

/* OTLP/JSON: parse the document once, encode it as protobuf with each
 * layout's descriptor (newest first) and keep the one whose field names
 * the document uses — the JSON names changed between releases too ("sample"
 * and "line" in 1.8, "samples" and "lines" in 1.10); unknown names are
 * ignored, as OTLP/JSON receivers must, so the layout with the fewest wins.
 * *pb is the caller's (free()). */
static int from_json(const uint8_t *buf, size_t len, const wt_limits *lim, uint8_t **pb, size_t *pblen,
		     wt_err *err)
{
	static const int order[] = {V110, V19, V18, V17, V15};
	/* 1.8's Location.line (field 3) became lines in 1.10; our 1.8 layout
	 * shares the 1.10 dictionary messages */
	static const char *const aliases[] = {
		"opentelemetry.proto.profiles.v1development.Location", "line", "lines", NULL};
	json_error_t jerr;
	json_t *root;
	wt_buf best = WT_BUF_INIT;
	size_t best_unknown = SIZE_MAX, i;
	int rc = 0;

	if (len > lim->max_body)
		return wt_err_set(err, WT_ELIMIT,
				  "otlp json: document of %zu bytes exceeds max_body %zu (JSON is parsed in memory)",
				  len, lim->max_body);
	root = json_loadb((const char *)buf, len, JSON_REJECT_DUPLICATES, &jerr);
	if (!root)
		return wt_err_set(err, WT_EINVAL, "otlp json: JSON error at line %d, column %d (byte %d): %s",
				  jerr.line, jerr.column, jerr.position, jerr.text);
	for (i = 0; i < sizeof(order) / sizeof(order[0]) && best_unknown; i++) {
		wt_buf b = WT_BUF_INIT;
		size_t unknown;
		char what[32];
		wt_err e = {0};

		snprintf(what, sizeof(what), "otlp json %s", vname[order[i]]);
		rc = wt_protojson_encode(top_desc[order[i]], root, lim->max_decompressed, what,
					 order[i] == V18 || order[i] == V19 ? aliases : NULL, &b, &unknown, &e);
		if (rc == WT_ENOMEM || rc == WT_ELIMIT) {
			*err = e;
			wt_buf_free(&b);
			goto done;
		}
		if (rc && i == 0)
			*err = e; /* reported when no layout can hold the document */
		if (!rc && unknown < best_unknown) {
			wt_buf_free(&best);
			best = b;
			best_unknown = unknown;
		} else {
			wt_buf_free(&b);
		}
	}
	if (best_unknown == SIZE_MAX) {
		rc = err->code ? err->code : WT_EINVAL;
		goto done;
	}
	rc = 0;
	*pblen = best.len;
	*pb = wt_buf_steal(&best, pblen);
	if (!*pb) /* an empty request: nothing to steal */
		*pb = malloc(1);
	if (!*pb)
		rc = wt_err_set(err, WT_ENOMEM, "otlp json: out of memory");
done:
	wt_buf_free(&best);
	json_decref(root);
	return rc;
}

static int decode_pb(const uint8_t *buf, size_t len, const wt_limits *lim_in, int merged,
		     wt_otlp_result *out, wt_err *err);

static int decode(const uint8_t *buf, size_t len, const wt_limits *lim_in, int merged,
		  wt_otlp_result *out, wt_err *err)
{
	wt_limits lim;
	size_t off = 0, pblen = 0;
	uint8_t *pb = NULL;
	int rc;

	memset(out, 0, sizeof(*out));
	if (lim_in)
		lim = *lim_in;
	else
		wt_limits_default(&lim);
	while (off < len && (buf[off] == ' ' || buf[off] == '\n' || buf[off] == '\r' || buf[off] == '\t'))
		off++;
	if (off < len && (buf[off] == '{' || buf[off] == '[')) {
		if ((rc = from_json(buf, len, &lim, &pb, &pblen, err)))
			return rc;
		rc = decode_pb(pb, pblen, &lim, merged, out, err);
		free(pb);
		return rc;
	}
	return decode_pb(buf, len, &lim, merged, out, err);
}

static int decode_pb(const uint8_t *buf, size_t len, const wt_limits *lim_in, int merged,
		     wt_otlp_result *out, wt_err *err)
{
	wt_limits lim;
	ProtobufCMessage *msg = NULL;
	ndict shared;
	conv c;
	walk_ud wu;
	size_t i, j;
	int rc;

	memset(out, 0, sizeof(*out));
	memset(&c, 0, sizeof(c));
	memset(&shared, 0, sizeof(shared));
	if (lim_in)
		lim = *lim_in;
	else
		wt_limits_default(&lim);
	c.lim = &lim;
	c.err = err;
	c.merged = merged;
	if (len > lim.max_decompressed)
		return wt_err_set(err, WT_ELIMIT, "otlp: request of %zu bytes exceeds the limit of %zu",
				  len, lim.max_decompressed);
	if ((rc = detect(buf, len, &c.v, err)))
		return rc;
	{
		char what[32];
		snprintf(what, sizeof(what), "otlp %s", vname[c.v]);
		wu.lim = &lim;
		wu.samples = 0;
		if ((rc = wt_pb_walk(top_desc[c.v], buf, len, what, walk_check, &wu, err)))
			return rc;
	}
	msg = protobuf_c_message_unpack(top_desc[c.v], NULL, len, buf);
	if (!msg)
		return wt_err_set(err, WT_EINVAL, "otlp %s: protobuf-c could not unpack the %zu-byte "
				  "request", vname[c.v], len);
	c.stack = malloc((lim.max_stack_depth + 1) * sizeof(uint32_t));
	c.labels = malloc((lim.max_labels + 2) * sizeof(wt_label));
	c.vals = calloc(MAX_TARGET_TYPES, sizeof(int64_t));
	if (!c.stack || !c.labels || !c.vals) {
		rc = fail(&c, WT_ENOMEM, "out of memory");
		goto cleanup;
	}
	if (c.v == V17) {
		const Wt__Otlp__V17__ProfilesDictionary *d = ((Wt__Otlp__V17__ProfilesData *)msg)->dictionary;
		static const Wt__Otlp__V17__ProfilesDictionary empty = WT__OTLP__V1_7__PROFILES_DICTIONARY__INIT;
		if (!d)
			d = &empty;
		rc = ndict_old(&c, &shared, d->string_table, d->n_string_table, d->mapping_table,
			       d->n_mapping_table, d->location_table, d->n_location_table,
			       d->function_table, d->n_function_table, d->link_table, d->n_link_table,
			       d->attribute_table, d->n_attribute_table);
	} else if (c.v != V15) {
		const pb_dict *d = c.v == V110 ? ((pb_req110 *)msg)->dictionary
			: c.v == V18 ? ((Wt__Otlp__V18__ProfilesData *)msg)->dictionary
				     : ((Wt__Otlp__V19__ProfilesData *)msg)->dictionary;
		rc = ndict_new(&c, &shared, d);
	}
	if (rc)
		goto cleanup;
	c.nprofiles = count_profiles(c.v, msg);
	if ((rc = run_pass(&c, msg, &shared, 0)))
		goto cleanup;
	for (i = 0; i < c.nt; i++) {
		target *t = &c.t[i];
		t->p = wt_profile_new(&lim);
		if (!t->p) {
			rc = fail(&c, WT_ENOMEM, "out of memory");
			goto cleanup;
		}
		for (j = 0; j < t->ntypes; j++)
			if ((rc = wt_profile_add_type(t->p, t->types[j].name, t->types[j].unit, NULL, NULL,
						      err))) {
				wt_err_prefix(err, "otlp %s: service %s", vname[c.v], t->service);
				goto cleanup;
			}
	}
	if ((rc = run_pass(&c, msg, &shared, 1)))
		goto cleanup;
	out->items = calloc(c.nt ? c.nt : 1, sizeof(wt_otlp_item));
	if (!out->items) {
		rc = fail(&c, WT_ENOMEM, "out of memory");
		goto cleanup;
	}
	for (i = 0; i < c.nt; i++) {
		target *t = &c.t[i];
		t->p->time_ns = t->tmin;
		t->p->duration_ns = t->tmax > t->tmin ? t->tmax - t->tmin : 0;
		out->items[i].service = t->service;
		out->items[i].profile = t->p;
		out->items[i].nprofiles = t->nprofiles;
		t->service = NULL;
		t->p = NULL;
	}
	out->n = c.nt;
	out->version = vname[c.v];
	out->nprofiles = c.nprofiles;
cleanup:
	for (i = 0; i < c.nt; i++) {
		target_free_cache(&c.t[i]);
		free(c.t[i].service);
		wt_profile_free(c.t[i].p);
	}
	free(c.t);
	free(c.stack);
	free(c.labels);
	free(c.vals);
	ndict_free(&shared);
	if (msg)
		protobuf_c_message_free_unpacked(msg, NULL);
	if (rc)
		wt_otlp_result_free(out);
	return rc;
}

int wt_otlp_decode(const uint8_t *buf, size_t len, const wt_limits *lim, wt_otlp_result *out,
		   wt_err *err)
{
	return decode(buf, len, lim, 0, out, err);
}

void wt_otlp_result_free(wt_otlp_result *r)
{
	size_t i;

	if (!r)
		return;
	for (i = 0; i < r->n; i++) {
		free(r->items[i].service);
		wt_profile_free(r->items[i].profile);
	}
	free(r->items);
	memset(r, 0, sizeof(*r));
}

int wt_otlp_decode_merged(const uint8_t *buf, size_t len, const wt_limits *lim, wt_profile **out,
			  wt_err *err)
{
	wt_otlp_result r;
	int rc;

	*out = NULL;
	if ((rc = decode(buf, len, lim, 1, &r, err)))
		return rc;
	if (r.n == 0) { /* no samples: an empty profile */
		wt_otlp_result_free(&r);
		*out = wt_profile_new(lim);
		return *out ? 0 : wt_err_set(err, WT_ENOMEM, "otlp: out of memory");
	}
	*out = r.items[0].profile;
	r.items[0].profile = NULL;
	wt_otlp_result_free(&r);
	return 0;
}
