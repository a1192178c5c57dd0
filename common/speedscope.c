/*
 * speedscope.c — decoder for speedscope JSON files (speedscope.h).
 *
 * Parsed in memory with jansson after checking the size against
 * lim.max_body. shared.frames[] are interned once; each profile adds its
 * samples labelled thread=<profile name>.
 *
 * Sample types, from each profile's unit (docs/formats.md "speedscope"):
 *   nanoseconds|microseconds|milliseconds|seconds
 *       sampled → cpu/nanoseconds, evented → wall/nanoseconds (an evented
 *       profile measures elapsed time between open and close); weights are
 *       scaled to nanoseconds and rounded half up, per sample / interval;
 *   bytes → alloc_space/bytes;
 *   none  → cpu/samples (samples/count when a cpu/nanoseconds type exists).
 * Evented profiles: events are walked in order with a stack of open
 * frames; the time between two consecutive events goes to the stack open
 * during it (so it is the innermost frame's self time). A close that does
 * not match the innermost open frame, an "at" that goes backwards, or
 * frames still open at the end are errors naming the event.
 */
#include "speedscope.h"

#include <jansson.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum kind { K_TIME_SAMPLED, K_TIME_EVENTED, K_BYTES, K_NONE, K_N };

typedef struct dec {
	wt_profile *p;
	wt_err *err;
	uint32_t *frames; /* shared.frames[i] → frame id */
	size_t nframes;
	int type_of[K_N];  /* type index per kind, -1 = not declared */
	int64_t *vals;
	int64_t sums[K_N]; /* per type index (< K_N types): totals stay in int64 */
	uint32_t *ids;     /* leaf-first scratch stack */
	uint32_t *open;    /* evented: open frame indices, root first */
	size_t nopen;
	int64_t base;
} dec;

static int oom(dec *d)
{
	return wt_err_set(d->err, WT_ENOMEM, "speedscope: out of memory");
}

/* Unit → kind and multiplier to nanoseconds (1 for bytes/none). */
static int parse_unit(const char *u, bool evented, enum kind *k, double *mult)
{
	static const struct {
		const char *name;
		double mult;
	} tu[] = {{"nanoseconds", 1}, {"microseconds", 1e3}, {"milliseconds", 1e6}, {"seconds", 1e9}};
	size_t i;

	*mult = 1;
	if (!u || !strcmp(u, "none")) {
		*k = K_NONE;
		return 0;
	}
	if (!strcmp(u, "bytes")) {
		*k = K_BYTES;
		return 0;
	}
	for (i = 0; i < sizeof(tu) / sizeof(tu[0]); i++)
		if (!strcmp(u, tu[i].name)) {
			*k = evented ? K_TIME_EVENTED : K_TIME_SAMPLED;
			*mult = tu[i].mult;
			return 0;
		}
	return -1;
}

/* Round x (>= 0) half up into an int64; -1 when out of range. */
static int to_i64(double x, int64_t *v)
{
	if (!(x >= 0) || x >= 9.2e18)
		return -1;
	*v = (int64_t)floor(x + 0.5);
	return 0;
}

static int load_frames(dec *d, json_t *root)
{
	json_t *shared = json_object_get(root, "shared");
	json_t *frames = json_object_get(shared, "frames");
	size_t i;
	int rc;

	if (!json_is_object(shared))
		return wt_err_set(d->err, WT_EINVAL, "speedscope: \"shared\" is missing or not an object");
	if (!json_is_array(frames))
		return wt_err_set(d->err, WT_EINVAL,
				  "speedscope: \"shared.frames\" is missing or not an array");
	d->nframes = json_array_size(frames);
	if (d->nframes > d->p->lim.max_strings)
		return wt_err_set(d->err, WT_ELIMIT, "speedscope: %zu frames exceed max_strings %zu",
				  d->nframes, d->p->lim.max_strings);
	if (!(d->frames = malloc((d->nframes ? d->nframes : 1) * sizeof(*d->frames))))
		return oom(d);
	for (i = 0; i < d->nframes; i++) {
		json_t *f = json_array_get(frames, i), *name, *file, *line;
		wt_function fn = {0, 0, 0, 0, 0};
		wt_frame fr = {0, WT_NO_MAPPING, 0, 0};

		if (!json_is_object(f))
			return wt_err_set(d->err, WT_EINVAL, "speedscope: shared.frames[%zu]: not an object", i);
		name = json_object_get(f, "name");
		file = json_object_get(f, "file");
		line = json_object_get(f, "line");
		if (!json_is_string(name))
			return wt_err_set(d->err, WT_EINVAL,
					  "speedscope: shared.frames[%zu].name: missing or not a string", i);
		if (file && !json_is_null(file) && !json_is_string(file))
			return wt_err_set(d->err, WT_EINVAL,
					  "speedscope: shared.frames[%zu].file: not a string", i);
		if (line && !json_is_null(line) && !json_is_integer(line))
			return wt_err_set(d->err, WT_EINVAL,
					  "speedscope: shared.frames[%zu].line: not an integer", i);
		if (json_string_length(name) > d->p->lim.max_string_len ||
		    (json_is_string(file) && json_string_length(file) > d->p->lim.max_string_len))
			return wt_err_set(d->err, WT_ELIMIT,
					  "speedscope: shared.frames[%zu]: name or file exceeds max_string_len %zu",
					  i, d->p->lim.max_string_len);
		if ((rc = wt_profile_intern(d->p, json_string_value(name), json_string_length(name),
					    &fn.name, d->err)) ||
		    (json_is_string(file) &&
		     (rc = wt_profile_intern(d->p, json_string_value(file), json_string_length(file),
					     &fn.filename, d->err))) ||
		    (rc = wt_profile_add_function(d->p, &fn, &fr.function, d->err)))
			return wt_err_prefix(d->err, "speedscope: shared.frames[%zu]", i);
		if (json_is_integer(line) && json_integer_value(line) > 0)
			fr.line = json_integer_value(line);
		if ((rc = wt_profile_add_frame(d->p, &fr, &d->frames[i], d->err)))
			return wt_err_prefix(d->err, "speedscope: shared.frames[%zu]", i);
	}
	return 0;
}

static int profile_kind(dec *d, json_t *prof, size_t pi, enum kind *k, double *mult, bool *evented)
{
	json_t *type = json_object_get(prof, "type"), *unit = json_object_get(prof, "unit");

	if (!json_is_object(prof))
		return wt_err_set(d->err, WT_EINVAL, "speedscope: profiles[%zu]: not an object", pi);
	if (!json_is_string(type) || (strcmp(json_string_value(type), "sampled") &&
				       strcmp(json_string_value(type), "evented")))
		return wt_err_set(d->err, WT_EINVAL,
				  "speedscope: profiles[%zu].type: must be \"sampled\" or \"evented\"", pi);
	*evented = !strcmp(json_string_value(type), "evented");
	if (unit && !json_is_string(unit))
		return wt_err_set(d->err, WT_EINVAL, "speedscope: profiles[%zu].unit: not a string", pi);
	if (parse_unit(json_string_value(unit), *evented, k, mult))
		return wt_err_set(d->err, WT_EINVAL,
				  "speedscope: profiles[%zu].unit: unknown unit \"%.40s\" (expected "
				  "none, nanoseconds, microseconds, milliseconds, seconds or bytes)",
				  pi, json_string_value(unit));
	return 0;
}

static int declare_types(dec *d, json_t *profiles)
{
	bool used[K_N] = {false};
	size_t i;
	int k, rc;
	static const char *const tname[K_N] = {"cpu", "wall", "alloc_space", "cpu"};
	static const char *const tunit[K_N] = {"nanoseconds", "nanoseconds", "bytes", "samples"};

	for (i = 0; i < json_array_size(profiles); i++) {
		enum kind kd;
		double mult;
		bool ev;

		if ((rc = profile_kind(d, json_array_get(profiles, i), i, &kd, &mult, &ev)))
			return rc;
		used[kd] = true;
	}
	for (k = 0; k < K_N; k++) {
		const char *name = tname[k], *unit = tunit[k];
		size_t idx;

		d->type_of[k] = -1;
		if (!used[k])
			continue;
		if (k == K_NONE && used[K_TIME_SAMPLED]) {
			name = "samples";
			unit = "count";
		}
		if ((rc = wt_profile_add_type(d->p, name, unit, NULL, &idx, d->err)))
			return wt_err_prefix(d->err, "speedscope");
		d->type_of[k] = (int)idx;
	}
	if (!(d->vals = calloc(d->p->ntypes ? d->p->ntypes : 1, sizeof(*d->vals))) ||
	    !(d->ids = malloc((d->p->lim.max_stack_depth + 1) * sizeof(*d->ids))) ||
	    !(d->open = malloc((d->p->lim.max_stack_depth + 1) * sizeof(*d->open))))
		return oom(d);
	return 0;
}

static int thread_labelset(dec *d, json_t *prof, uint32_t *ls)
{
	json_t *name = json_object_get(prof, "name");
	wt_label l = {0, 0, 0, 0};
	int rc;

	*ls = 0;
	if (!json_is_string(name) || !json_string_length(name))
		return 0;
	if (json_string_length(name) > d->p->lim.max_string_len)
		return wt_err_set(d->err, WT_ELIMIT, "speedscope: profile name exceeds max_string_len");
	if ((rc = wt_profile_intern_cstr(d->p, "thread", &l.key, d->err)) ||
	    (rc = wt_profile_intern(d->p, json_string_value(name), json_string_length(name), &l.str,
				    d->err)) ||
	    (rc = wt_profile_add_labelset(d->p, &l, 1, ls, d->err)))
		return wt_err_prefix(d->err, "speedscope");
	return 0;
}

static int add(dec *d, int type, uint32_t ls, size_t n, int64_t v, const char *what, size_t pi,
	       size_t i)
{
	uint32_t stack;
	int rc;

	if ((rc = wt_profile_add_stack(d->p, d->ids, n, &stack, d->err)))
		return wt_err_prefix(d->err, "speedscope: profiles[%zu].%s[%zu]", pi, what, i);
	if (__builtin_add_overflow(d->sums[type], v, &d->sums[type]))
		return wt_err_set(d->err, WT_EINVAL,
				  "speedscope: profiles[%zu].%s[%zu]: sum of weights overflows int64", pi,
				  what, i);
	memset(d->vals, 0, d->p->ntypes * sizeof(*d->vals));
	d->vals[type] = v;
	if ((rc = wt_profile_add_sample(d->p, stack, ls, d->base, d->vals, d->err)))
		return wt_err_prefix(d->err, "speedscope: profiles[%zu].%s[%zu]", pi, what, i);
	return 0;
}

/* Resolve frame index x into *id; error names the path. */
static int frame_index(dec *d, json_t *x, uint32_t *id, size_t pi, const char *what, size_t i,
		       long long j)
{
	char where[64];

	if (j >= 0)
		snprintf(where, sizeof(where), "%s[%zu][%lld]", what, i, j);
	else
		snprintf(where, sizeof(where), "%s[%zu].frame", what, i);
	if (!json_is_integer(x))
		return wt_err_set(d->err, WT_EINVAL, "speedscope: profiles[%zu].%s: frame index is not an integer",
				  pi, where);
	if (json_integer_value(x) < 0 || (uint64_t)json_integer_value(x) >= d->nframes)
		return wt_err_set(d->err, WT_EINVAL,
				  "speedscope: profiles[%zu].%s: frame index %lld out of range (%zu frames)",
				  pi, where, (long long)json_integer_value(x), d->nframes);
	*id = (uint32_t)json_integer_value(x);
	return 0;
}

static int decode_sampled(dec *d, json_t *prof, size_t pi, int type, double mult, uint32_t ls)
{
	json_t *samples = json_object_get(prof, "samples"), *weights = json_object_get(prof, "weights");
	size_t i, j, n;
	int rc;

	if (!json_is_array(samples))
		return wt_err_set(d->err, WT_EINVAL, "speedscope: profiles[%zu].samples: missing or not an array", pi);
	if (!json_is_array(weights))
		return wt_err_set(d->err, WT_EINVAL, "speedscope: profiles[%zu].weights: missing or not an array", pi);
	if (json_array_size(weights) != json_array_size(samples))
		return wt_err_set(d->err, WT_EINVAL,
				  "speedscope: profiles[%zu]: %zu weights for %zu samples", pi,
				  json_array_size(weights), json_array_size(samples));
	if (d->p->source_samples < 0)
		d->p->source_samples = 0;
	d->p->source_samples += (int64_t)json_array_size(samples);
	for (i = 0; i < json_array_size(samples); i++) {
		json_t *s = json_array_get(samples, i), *w = json_array_get(weights, i);
		int64_t v;

		if (!json_is_array(s))
			return wt_err_set(d->err, WT_EINVAL, "speedscope: profiles[%zu].samples[%zu]: not an array", pi, i);
		if (!json_is_number(w) || to_i64(json_number_value(w) * mult, &v))
			return wt_err_set(d->err, WT_EINVAL,
					  "speedscope: profiles[%zu].weights[%zu]: not a non-negative number in range",
					  pi, i);
		n = json_array_size(s);
		if (n > d->p->lim.max_stack_depth)
			return wt_err_set(d->err, WT_ELIMIT,
					  "speedscope: profiles[%zu].samples[%zu]: %zu frames exceed max_stack_depth %zu",
					  pi, i, n, d->p->lim.max_stack_depth);
		for (j = 0; j < n; j++) { /* root first in the file, leaf first here */
			uint32_t fi;

			if ((rc = frame_index(d, json_array_get(s, j), &fi, pi, "samples", i, (long long)j)))
				return rc;
			d->ids[n - 1 - j] = d->frames[fi];
		}
		if ((rc = add(d, type, ls, n, v, "samples", pi, i)))
			return rc;
	}
	return 0;
}

static int decode_evented(dec *d, json_t *prof, size_t pi, int type, double mult, uint32_t ls)
{
	json_t *events = json_object_get(prof, "events");
	double prev = 0;
	size_t i, j;
	int rc;

	if (!json_is_array(events))
		return wt_err_set(d->err, WT_EINVAL, "speedscope: profiles[%zu].events: missing or not an array", pi);
	d->nopen = 0;
	for (i = 0; i < json_array_size(events); i++) {
		json_t *e = json_array_get(events, i), *t, *at;
		const char *ts;
		uint32_t fi;
		double a;

		if (!json_is_object(e))
			return wt_err_set(d->err, WT_EINVAL, "speedscope: profiles[%zu].events[%zu]: not an object", pi, i);
		t = json_object_get(e, "type");
		at = json_object_get(e, "at");
		ts = json_string_value(t);
		if (!ts || (strcmp(ts, "O") && strcmp(ts, "C")))
			return wt_err_set(d->err, WT_EINVAL,
					  "speedscope: profiles[%zu].events[%zu].type: must be \"O\" or \"C\"", pi, i);
		if (!json_is_number(at) || !isfinite(json_number_value(at)))
			return wt_err_set(d->err, WT_EINVAL,
					  "speedscope: profiles[%zu].events[%zu].at: not a number", pi, i);
		if ((rc = frame_index(d, json_object_get(e, "frame"), &fi, pi, "events", i, -1)))
			return rc;
		a = json_number_value(at);
		if (i && a < prev)
			return wt_err_set(d->err, WT_EINVAL,
					  "speedscope: profiles[%zu].events[%zu].at: %g goes backwards (previous %g)",
					  pi, i, a, prev);
		if (d->nopen && a > prev) {
			int64_t v;

			if (to_i64((a - prev) * mult, &v))
				return wt_err_set(d->err, WT_EINVAL,
						  "speedscope: profiles[%zu].events[%zu].at: interval out of range", pi, i);
			for (j = 0; j < d->nopen; j++)
				d->ids[d->nopen - 1 - j] = d->frames[d->open[j]];
			if (v && (rc = add(d, type, ls, d->nopen, v, "events", pi, i)))
				return rc;
		}
		prev = a;
		if (ts[0] == 'O') {
			if (d->nopen >= d->p->lim.max_stack_depth)
				return wt_err_set(d->err, WT_ELIMIT,
						  "speedscope: profiles[%zu].events[%zu]: more than max_stack_depth %zu open frames",
						  pi, i, d->p->lim.max_stack_depth);
			d->open[d->nopen++] = fi;
		} else {
			if (!d->nopen)
				return wt_err_set(d->err, WT_EINVAL,
						  "speedscope: profiles[%zu].events[%zu]: close of frame %u but no frame is open",
						  pi, i, fi);
			if (d->open[d->nopen - 1] != fi)
				return wt_err_set(d->err, WT_EINVAL,
						  "speedscope: profiles[%zu].events[%zu]: close of frame %u but frame %u is the innermost open one",
						  pi, i, fi, d->open[d->nopen - 1]);
			d->nopen--;
		}
	}
	if (d->nopen)
		return wt_err_set(d->err, WT_EINVAL,
				  "speedscope: profiles[%zu].events: %zu frames still open at the end (unbalanced O/C events)",
				  pi, d->nopen);
	return 0;
}

static int decode_doc(dec *d, json_t *root)
{
	json_t *profiles;
	size_t i;
	int rc;

	if (!json_is_object(root))
		return wt_err_set(d->err, WT_EINVAL, "speedscope: the top-level value is not an object");
	profiles = json_object_get(root, "profiles");
	if (!json_is_array(profiles))
		return wt_err_set(d->err, WT_EINVAL, "speedscope: \"profiles\" is missing or not an array");
	if ((rc = load_frames(d, root)) || (rc = declare_types(d, profiles)))
		return rc;
	d->p->time_ns = d->base;
	if (d->p->ntypes) {
		d->p->default_type = d->p->types[0].type;
	}
	for (i = 0; i < json_array_size(profiles); i++) {
		json_t *prof = json_array_get(profiles, i);
		enum kind k;
		double mult;
		bool ev;
		uint32_t ls;

		if ((rc = profile_kind(d, prof, i, &k, &mult, &ev)) || (rc = thread_labelset(d, prof, &ls)))
			return rc;
		rc = ev ? decode_evented(d, prof, i, d->type_of[k], mult, ls)
			: decode_sampled(d, prof, i, d->type_of[k], mult, ls);
		if (rc)
			return rc;
	}
	return 0;
}

int wt_speedscope_decode(const uint8_t *buf, size_t len, const wt_limits *lim,
			 int64_t time_ns, wt_profile **out, wt_err *err)
{
	json_error_t jerr;
	json_t *root = NULL;
	dec d;
	int rc;

	*out = NULL;
	memset(&d, 0, sizeof(d));
	d.err = err;
	d.base = time_ns;
	if (!(d.p = wt_profile_new(lim)))
		return wt_err_set(err, WT_ENOMEM, "speedscope: out of memory");
	if (len > d.p->lim.max_body) {
		rc = wt_err_set(err, WT_ELIMIT,
				"speedscope: JSON of %zu bytes exceeds max_body %zu (JSON is parsed in memory)",
				len, d.p->lim.max_body);
		goto cleanup;
	}
	root = json_loadb((const char *)buf, len, JSON_REJECT_DUPLICATES, &jerr);
	if (!root) {
		rc = wt_err_set(err, WT_EINVAL, "speedscope: JSON error at line %d, column %d (byte %d): %s",
				jerr.line, jerr.column, jerr.position, jerr.text);
		goto cleanup;
	}
	if ((rc = decode_doc(&d, root)))
		goto cleanup;
	*out = d.p;
	d.p = NULL;
cleanup:
	json_decref(root);
	wt_profile_free(d.p);
	free(d.frames);
	free(d.vals);
	free(d.ids);
	free(d.open);
	return rc;
}
