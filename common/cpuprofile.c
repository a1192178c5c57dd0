/*
 * cpuprofile.c — decoder for V8 / Node.js .cpuprofile JSON (cpuprofile.h).
 *
 * The document is parsed in memory with jansson, so its size is checked
 * against lim.max_body first (a JSON tree costs several times its text).
 * Nodes form a tree (children[] ids, or a parent id); each sample names a
 * node, whose stack is the path from that node up to the root, leaf first.
 * The synthetic "(root)" node is not a frame; "(program)", "(idle)" and
 * "(garbage collector)" are kept as frames, so the totals equal the
 * profiler's own and a user sees where the time went.
 *
 * Values (docs/formats.md "V8 cpuprofile"):
 *   cpu/nanoseconds  sample i carries timeDeltas[i] (the time since the
 *                    previous sample, or since startTime for the first),
 *                    ×1000; a negative delta (V8 can log a late tick)
 *                    counts 0. Old-layout "timestamps" (absolute µs, one
 *                    per sample, possibly plus the end time) give the
 *                    deltas between consecutive samples (0 for the first:
 *                    that layout's startTime is in whole seconds).
 *   samples/count    1 per sample.
 * Without samples[] (very old files) each node's hitCount is used as its
 * sample count and cpu is not available (cpu/samples only).
 */
#include "cpuprofile.h"

#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CP_NAME_MAX 4096 /* bytes of a synthesized "(anonymous) url:line" */

typedef struct cnode {
	int64_t id;
	json_t *obj;       /* the node object (borrowed from the document) */
	uint32_t parent;   /* index into nodes, UINT32_MAX = none */
	uint32_t frame;    /* frame id, UINT32_MAX = not yet interned / no frame */
	uint32_t stack;    /* stack id, UINT32_MAX = not yet computed */
	bool is_root;      /* the synthetic (root): not a frame */
	char path[48];     /* "nodes[12]" or "head.children[..]" for errors */
} cnode;

typedef struct dec {
	wt_profile *p;
	wt_err *err;
	cnode *n;
	size_t nn, ncap;
	struct idref { int64_t id; uint32_t idx; } *order; /* sorted by id */
	uint32_t *ids;   /* scratch stack */
} dec;

static int oom(dec *d)
{
	return wt_err_set(d->err, WT_ENOMEM, "cpuprofile: out of memory");
}

static int add_node(dec *d, json_t *obj, const char *path, uint32_t *idx)
{
	json_t *id = json_object_get(obj, "id");

	if (!json_is_integer(id))
		return wt_err_set(d->err, WT_EINVAL, "cpuprofile: %s.id: missing or not an integer",
				  path);
	if (d->nn >= d->p->lim.max_samples)
		return wt_err_set(d->err, WT_ELIMIT, "cpuprofile: %s: more than %zu nodes", path,
				  d->nn);
	if (d->nn == d->ncap) {
		size_t ncap = d->ncap ? d->ncap * 2 : 256;
		cnode *nn = realloc(d->n, ncap * sizeof(*nn));

		if (!nn)
			return oom(d);
		d->n = nn;
		d->ncap = ncap;
	}
	memset(&d->n[d->nn], 0, sizeof(cnode));
	d->n[d->nn].id = json_integer_value(id);
	d->n[d->nn].obj = obj;
	d->n[d->nn].parent = UINT32_MAX;
	d->n[d->nn].frame = UINT32_MAX;
	d->n[d->nn].stack = UINT32_MAX;
	snprintf(d->n[d->nn].path, sizeof(d->n[d->nn].path), "%s", path);
	*idx = (uint32_t)d->nn++;
	return 0;
}

static int cmp_id(const void *a, const void *b)
{
	const struct idref *x = a, *y = b;

	return x->id < y->id ? -1 : x->id > y->id;
}

static uint32_t find_id(const dec *d, int64_t id)
{
	size_t lo = 0, hi = d->nn;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		int64_t v = d->order[mid].id;

		if (v == id)
			return d->order[mid].idx;
		if (v < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return UINT32_MAX;
}

/* Old layout: a "head" node with nested children objects (depth is bounded
 * by jansson's parser depth limit). */
static int walk_head(dec *d, json_t *obj, uint32_t parent, const char *path)
{
	json_t *ch;
	uint32_t me;
	size_t i;
	int rc;

	if (!json_is_object(obj))
		return wt_err_set(d->err, WT_EINVAL, "cpuprofile: %s: not an object", path);
	if ((rc = add_node(d, obj, path, &me)))
		return rc;
	d->n[me].parent = parent;
	ch = json_object_get(obj, "children");
	if (ch && !json_is_array(ch))
		return wt_err_set(d->err, WT_EINVAL, "cpuprofile: %s.children: not an array", path);
	for (i = 0; i < json_array_size(ch); i++) {
		char sub[48];

		snprintf(sub, sizeof(sub), "node %lld.children[%zu]", (long long)d->n[me].id, i);
		if ((rc = walk_head(d, json_array_get(ch, i), me, sub)))
			return rc;
	}
	return 0;
}

/* Field f of the node's callFrame (new layout) or of the node itself (old). */
static json_t *cf_get(json_t *node, const char *f)
{
	json_t *cf = json_object_get(node, "callFrame");

	return json_object_get(cf ? cf : node, f);
}

static int node_frame(dec *d, uint32_t i, uint32_t *out)
{
	cnode *c = &d->n[i];
	json_t *fn, *url, *ln;
	const char *name, *file;
	char buf[CP_NAME_MAX];
	wt_function f = {0, 0, 0, 0, 0};
	wt_frame fr = {0, WT_NO_MAPPING, 0, 0};
	int64_t line = 0;
	size_t name_len;
	int rc;

	if (c->frame != UINT32_MAX) {
		*out = c->frame;
		return 0;
	}
	if (json_object_get(c->obj, "callFrame") && !json_is_object(json_object_get(c->obj, "callFrame")))
		return wt_err_set(d->err, WT_EINVAL, "cpuprofile: %s.callFrame: not an object", c->path);
	fn = cf_get(c->obj, "functionName");
	url = cf_get(c->obj, "url");
	ln = cf_get(c->obj, "lineNumber");
	if (!json_is_string(fn))
		return wt_err_set(d->err, WT_EINVAL,
				  "cpuprofile: %s.callFrame.functionName: missing or not a string",
				  c->path);
	if (url && !json_is_string(url))
		return wt_err_set(d->err, WT_EINVAL, "cpuprofile: %s.callFrame.url: not a string",
				  c->path);
	if (ln && !json_is_integer(ln))
		return wt_err_set(d->err, WT_EINVAL,
				  "cpuprofile: %s.callFrame.lineNumber: not an integer", c->path);
	name = json_string_value(fn);
	name_len = json_string_length(fn);
	file = url ? json_string_value(url) : "";
	/* V8 line numbers are 0-based; -1 = none */
	if (ln && json_integer_value(ln) >= 0 && json_integer_value(ln) < INT32_MAX)
		line = json_integer_value(ln) + 1;
	if (!name_len) {
		if (*file)
			name_len = (size_t)snprintf(buf, sizeof(buf), "(anonymous) %s:%lld", file,
						    (long long)line);
		else
			name_len = (size_t)snprintf(buf, sizeof(buf), "(anonymous)");
		if (name_len >= sizeof(buf))
			name_len = sizeof(buf) - 1;
		name = buf;
	}
	if (name_len > d->p->lim.max_string_len || strlen(file) > d->p->lim.max_string_len)
		return wt_err_set(d->err, WT_ELIMIT,
				  "cpuprofile: %s.callFrame: name or url exceeds max_string_len %zu",
				  c->path, d->p->lim.max_string_len);
	f.start_line = line;
	if ((rc = wt_profile_intern(d->p, name, name_len, &f.name, d->err)) ||
	    (*file && (rc = wt_profile_intern_cstr(d->p, file, &f.filename, d->err))) ||
	    (rc = wt_profile_add_function(d->p, &f, &fr.function, d->err)))
		return wt_err_prefix(d->err, "cpuprofile: %s", c->path);
	fr.line = line;
	if ((rc = wt_profile_add_frame(d->p, &fr, out, d->err)))
		return wt_err_prefix(d->err, "cpuprofile: %s", c->path);
	c->frame = *out;
	return 0;
}

static int node_stack(dec *d, uint32_t i, uint32_t *out)
{
	size_t n = 0, hops = 0, maxd = d->p->lim.max_stack_depth;
	uint32_t j;
	int rc;

	if (d->n[i].stack != UINT32_MAX) {
		*out = d->n[i].stack;
		return 0;
	}
	for (j = i; j != UINT32_MAX; j = d->n[j].parent) {
		if (++hops > d->nn)
			return wt_err_set(d->err, WT_EINVAL,
					  "cpuprofile: %s: the parent chain has a cycle", d->n[i].path);
		if (d->n[j].is_root)
			continue;
		if (n >= maxd)
			return wt_err_set(d->err, WT_ELIMIT,
					  "cpuprofile: %s: stack deeper than max_stack_depth %zu",
					  d->n[i].path, maxd);
		if ((rc = node_frame(d, j, &d->ids[n])))
			return rc;
		n++;
	}
	if ((rc = wt_profile_add_stack(d->p, d->ids, n, out, d->err)))
		return wt_err_prefix(d->err, "cpuprofile: %s", d->n[i].path);
	d->n[i].stack = *out;
	return 0;
}

/* Index nodes by id and link parents. */
static int link_nodes(dec *d, bool old_layout)
{
	size_t i, k;

	if (!(d->order = malloc((d->nn ? d->nn : 1) * sizeof(*d->order))) ||
	    !(d->ids = malloc((d->p->lim.max_stack_depth + 1) * sizeof(*d->ids))))
		return oom(d);
	for (i = 0; i < d->nn; i++) {
		d->order[i].id = d->n[i].id;
		d->order[i].idx = (uint32_t)i;
	}
	qsort(d->order, d->nn, sizeof(*d->order), cmp_id);
	for (i = 1; i < d->nn; i++)
		if (d->order[i].id == d->order[i - 1].id)
			return wt_err_set(d->err, WT_EINVAL, "cpuprofile: %s.id: duplicate node id %lld",
					  d->n[d->order[i].idx].path, (long long)d->order[i].id);
	if (!old_layout) {
		for (i = 0; i < d->nn; i++) {
			json_t *ch = json_object_get(d->n[i].obj, "children");
			json_t *par = json_object_get(d->n[i].obj, "parent");

			if (ch && !json_is_array(ch))
				return wt_err_set(d->err, WT_EINVAL,
						  "cpuprofile: %s.children: not an array", d->n[i].path);
			for (k = 0; k < json_array_size(ch); k++) {
				json_t *c = json_array_get(ch, k);
				uint32_t ci;

				if (!json_is_integer(c))
					return wt_err_set(d->err, WT_EINVAL,
							  "cpuprofile: %s.children[%zu]: not an integer",
							  d->n[i].path, k);
				ci = find_id(d, json_integer_value(c));
				if (ci == UINT32_MAX)
					return wt_err_set(d->err, WT_EINVAL,
							  "cpuprofile: %s.children[%zu]: unknown node id %lld",
							  d->n[i].path, k, (long long)json_integer_value(c));
				if (d->n[ci].parent != UINT32_MAX && d->n[ci].parent != i)
					return wt_err_set(d->err, WT_EINVAL,
							  "cpuprofile: %s.children[%zu]: node %lld already has a parent",
							  d->n[i].path, k, (long long)json_integer_value(c));
				d->n[ci].parent = (uint32_t)i;
			}
			if (par) {
				uint32_t pi;

				if (!json_is_integer(par) ||
				    (pi = find_id(d, json_integer_value(par))) == UINT32_MAX)
					return wt_err_set(d->err, WT_EINVAL,
							  "cpuprofile: %s.parent: not a known node id",
							  d->n[i].path);
				if (d->n[i].parent != UINT32_MAX && d->n[i].parent != pi)
					return wt_err_set(d->err, WT_EINVAL,
							  "cpuprofile: %s.parent: contradicts children[]",
							  d->n[i].path);
				d->n[i].parent = pi;
			}
		}
	}
	for (i = 0; i < d->nn; i++) {
		json_t *fn = cf_get(d->n[i].obj, "functionName");

		d->n[i].is_root = d->n[i].parent == UINT32_MAX && json_is_string(fn) &&
				  !strcmp(json_string_value(fn), "(root)");
	}
	return 0;
}

static int number_at(dec *d, json_t *arr, size_t i, const char *what, int64_t *v)
{
	json_t *x = json_array_get(arr, i);

	if (json_is_integer(x)) {
		*v = json_integer_value(x);
		return 0;
	}
	if (json_is_real(x) && json_real_value(x) > -9e15 && json_real_value(x) < 9e15) {
		*v = (int64_t)json_real_value(x);
		return 0;
	}
	return wt_err_set(d->err, WT_EINVAL, "cpuprofile: %s[%zu]: not a number", what, i);
}

static int decode_doc(dec *d, json_t *root, int64_t base)
{
	json_t *nodes = json_object_get(root, "nodes"), *head = json_object_get(root, "head");
	json_t *samples = json_object_get(root, "samples"), *deltas = json_object_get(root, "timeDeltas");
	json_t *stamps = json_object_get(root, "timestamps");
	json_t *st = json_object_get(root, "startTime"), *et = json_object_get(root, "endTime");
	bool old_layout = !nodes && head, timed;
	size_t i, ns, tcpu = 0, tsamples = 0;
	int64_t vals[2], t_us = 0, start_us = 0, cpu_sum = 0;
	uint32_t id;
	int rc;

	if (!json_is_object(root))
		return wt_err_set(d->err, WT_EINVAL, "cpuprofile: the top-level value is not an object");
	if (nodes) {
		if (!json_is_array(nodes))
			return wt_err_set(d->err, WT_EINVAL, "cpuprofile: \"nodes\" is not an array");
		for (i = 0; i < json_array_size(nodes); i++) {
			char path[48];
			uint32_t k;

			snprintf(path, sizeof(path), "nodes[%zu]", i);
			if (!json_is_object(json_array_get(nodes, i)))
				return wt_err_set(d->err, WT_EINVAL, "cpuprofile: %s: not an object", path);
			if ((rc = add_node(d, json_array_get(nodes, i), path, &k)))
				return rc;
		}
	} else if (head) {
		if ((rc = walk_head(d, head, UINT32_MAX, "head")))
			return rc;
	} else {
		return wt_err_set(d->err, WT_EINVAL, "cpuprofile: neither \"nodes\" nor \"head\" present");
	}
	if ((rc = link_nodes(d, old_layout)))
		return rc;
	if (samples && !json_is_array(samples))
		return wt_err_set(d->err, WT_EINVAL, "cpuprofile: \"samples\" is not an array");
	if (deltas && !json_is_array(deltas))
		return wt_err_set(d->err, WT_EINVAL, "cpuprofile: \"timeDeltas\" is not an array");
	if (stamps && !json_is_array(stamps))
		return wt_err_set(d->err, WT_EINVAL, "cpuprofile: \"timestamps\" is not an array");
	if ((st && !json_is_number(st)) || (et && !json_is_number(et)))
		return wt_err_set(d->err, WT_EINVAL, "cpuprofile: startTime/endTime is not a number");
	ns = json_array_size(samples);
	if (deltas && json_array_size(deltas) != ns)
		return wt_err_set(d->err, WT_EINVAL,
				  "cpuprofile: \"timeDeltas\" has %zu entries but \"samples\" has %zu",
				  json_array_size(deltas), ns);
	/* old layout: one timestamp per sample, sometimes plus the end time */
	if (!deltas && stamps && json_array_size(stamps) != ns && json_array_size(stamps) != ns + 1)
		return wt_err_set(d->err, WT_EINVAL,
				  "cpuprofile: \"timestamps\" has %zu entries but \"samples\" has %zu",
				  json_array_size(stamps), ns);
	timed = samples && (deltas || stamps);
	/* types: cpu first (the default) */
	if (timed) {
		if ((rc = wt_profile_add_type(d->p, "cpu", "nanoseconds", NULL, &tcpu, d->err)) ||
		    (rc = wt_profile_add_type(d->p, "samples", "count", NULL, &tsamples, d->err)))
			return rc;
	} else if ((rc = wt_profile_add_type(d->p, "cpu", "samples", NULL, &tsamples, d->err))) {
		return rc;
	}
	if ((rc = wt_profile_intern_cstr(d->p, "cpu", &id, d->err)))
		return rc;
	d->p->default_type = id;
	if (st && !old_layout)
		start_us = (int64_t)json_number_value(st);
	t_us = start_us;
	if (json_is_number(st) && json_is_number(et) && !old_layout &&
	    json_number_value(et) >= json_number_value(st))
		d->p->duration_ns = (int64_t)((json_number_value(et) - json_number_value(st)) * 1000.0);
	d->p->time_ns = base;

	if (!samples) { /* hitCount per node */
		for (i = 0; i < d->nn; i++) {
			json_t *hc = json_object_get(d->n[i].obj, "hitCount");
			uint32_t s;

			if (!hc || d->n[i].is_root)
				continue;
			if (!json_is_integer(hc) || json_integer_value(hc) < 0)
				return wt_err_set(d->err, WT_EINVAL,
						  "cpuprofile: %s.hitCount: not a non-negative integer",
						  d->n[i].path);
			if (!json_integer_value(hc))
				continue;
			vals[0] = json_integer_value(hc);
			if (__builtin_add_overflow(cpu_sum, vals[0], &cpu_sum))
				return wt_err_set(d->err, WT_EINVAL,
						  "cpuprofile: %s.hitCount: sum of hit counts overflows int64",
						  d->n[i].path);
			if ((rc = node_stack(d, (uint32_t)i, &s)) ||
			    (rc = wt_profile_add_sample(d->p, s, 0, base, vals, d->err)))
				return rc;
		}
		return 0;
	}
	for (i = 0; i < ns; i++) {
		int64_t nid, delta = 0, t = 0;
		uint32_t ni, s;

		if ((rc = number_at(d, samples, i, "samples", &nid)))
			return rc;
		if ((ni = find_id(d, nid)) == UINT32_MAX)
			return wt_err_set(d->err, WT_EINVAL, "cpuprofile: samples[%zu]: unknown node id %lld",
					  i, (long long)nid);
		if (deltas) {
			if ((rc = number_at(d, deltas, i, "timeDeltas", &delta)))
				return rc;
			if (__builtin_add_overflow(t_us, delta, &t_us))
				return wt_err_set(d->err, WT_EINVAL, "cpuprofile: timeDeltas[%zu]: overflow", i);
		} else if (stamps) {
			int64_t ts;

			if ((rc = number_at(d, stamps, i, "timestamps", &ts)))
				return rc;
			if (i == 0)
				start_us = t_us = ts;
			if (__builtin_sub_overflow(ts, t_us, &delta))
				return wt_err_set(d->err, WT_EINVAL, "cpuprofile: timestamps[%zu]: overflow", i);
			t_us = ts;
		}
		if ((rc = node_stack(d, ni, &s)))
			return rc;
		if (timed) {
			if (delta < 0)
				delta = 0;
			if (delta > INT64_MAX / 1000)
				return wt_err_set(d->err, WT_EINVAL, "cpuprofile: sample %zu: delta overflows", i);
			vals[tcpu] = delta * 1000;
			vals[tsamples] = 1;
			if (__builtin_add_overflow(cpu_sum, vals[tcpu], &cpu_sum))
				return wt_err_set(d->err, WT_EINVAL,
						  "cpuprofile: timeDeltas[%zu]: sum of deltas overflows int64", i);
		} else {
			vals[tsamples] = 1;
		}
		if (base && __builtin_mul_overflow(t_us - start_us, (int64_t)1000, &t))
			return wt_err_set(d->err, WT_EINVAL, "cpuprofile: sample %zu: time overflows", i);
		if (base && __builtin_add_overflow(t, base, &t))
			return wt_err_set(d->err, WT_EINVAL, "cpuprofile: sample %zu: time overflows", i);
		if ((rc = wt_profile_add_sample(d->p, s, 0, base ? t : 0, vals, d->err)))
			return wt_err_prefix(d->err, "cpuprofile: samples[%zu]", i);
	}
	return 0;
}

int wt_cpuprofile_decode(const uint8_t *buf, size_t len, const wt_limits *lim,
			 int64_t time_ns, wt_profile **out, wt_err *err)
{
	json_error_t jerr;
	json_t *root = NULL;
	dec d;
	int rc;

	*out = NULL;
	memset(&d, 0, sizeof(d));
	d.err = err;
	if (!(d.p = wt_profile_new(lim)))
		return wt_err_set(err, WT_ENOMEM, "cpuprofile: out of memory");
	if (len > d.p->lim.max_body) {
		rc = wt_err_set(err, WT_ELIMIT,
				"cpuprofile: JSON of %zu bytes exceeds max_body %zu (JSON is parsed in memory)",
				len, d.p->lim.max_body);
		goto cleanup;
	}
	root = json_loadb((const char *)buf, len, JSON_REJECT_DUPLICATES, &jerr);
	if (!root) {
		rc = wt_err_set(err, WT_EINVAL, "cpuprofile: JSON error at line %d, column %d (byte %d): %s",
				jerr.line, jerr.column, jerr.position, jerr.text);
		goto cleanup;
	}
	if ((rc = decode_doc(&d, root, time_ns)))
		goto cleanup;
	*out = d.p;
	d.p = NULL;
cleanup:
	json_decref(root);
	wt_profile_free(d.p);
	free(d.n);
	free(d.order);
	free(d.ids);
	return rc;
}
