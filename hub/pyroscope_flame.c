/*
 * pyroscope_flame.c — our flame trees in Pyroscope's flame graph, diff and
 * pprof shapes (pyroscope_flame.h).
 */
#include "pyroscope_flame.h"

#include <stdlib.h>
#include <string.h>

void hub_pf_node_free(hub_pf_node *d)
{
	size_t i;
	for (i = 0; i < d->nkids; i++)
		hub_pf_node_free(&d->kids[i]);
	free(d->kids);
}

int hub_pf_node_add(hub_pf_node *d, json_t *j, int side)
{
	json_t *kids = json_object_get(j, "children"), *k;
	size_t i, m;

	d->total[side] += json_integer_value(json_object_get(j, "total"));
	d->self[side] += json_integer_value(json_object_get(j, "self"));
	json_array_foreach(kids, i, k) {
		const char *name = json_string_value(json_object_get(k, "name"));
		if (!name)
			continue;
		for (m = 0; m < d->nkids && strcmp(d->kids[m].name, name); m++)
			;
		if (m == d->nkids) {
			if (d->nkids == d->cap) {
				size_t nc = d->cap ? d->cap * 2 : 4;
				hub_pf_node *nk = realloc(d->kids, nc * sizeof(*nk));
				if (!nk)
					return WT_ENOMEM;
				d->kids = nk;
				d->cap = nc;
			}
			memset(&d->kids[m], 0, sizeof(hub_pf_node));
			d->kids[m].name = name;
			d->nkids++;
		}
		if (hub_pf_node_add(&d->kids[m], k, side))
			return WT_ENOMEM;
	}
	return 0;
}

static int hub_pf_node_cmp(const void *a, const void *b)
{
	return strcmp(((const hub_pf_node *)a)->name, ((const hub_pf_node *)b)->name);
}

/* Output being built: names (deduplicated) and levels of values. */
typedef struct fg_out {
	json_t *name_idx; /* name → index */
	char **names;
	size_t nnames, cap_names;
	struct level { int64_t *v; size_t n, cap; } *levels;
	size_t nlevels, cap_levels;
	int64_t max_self;
	int width; /* 4 (flame graph) or 7 (diff) */
} fg_out;

static int lvl_push(struct level *l, int64_t v)
{
	if (l->n == l->cap) {
		size_t nc = l->cap ? l->cap * 2 : 64;
		int64_t *nv = realloc(l->v, nc * sizeof(*nv));
		if (!nv)
			return WT_ENOMEM;
		l->v = nv;
		l->cap = nc;
	}
	l->v[l->n++] = v;
	return 0;
}

static int name_index(fg_out *o, const char *name, int64_t *idx)
{
	json_t *j = json_object_get(o->name_idx, name);

	if (j) {
		*idx = json_integer_value(j);
		return 0;
	}
	if (o->nnames == o->cap_names) {
		size_t nc = o->cap_names ? o->cap_names * 2 : 64;
		char **nn = realloc(o->names, nc * sizeof(*nn));
		if (!nn)
			return WT_ENOMEM;
		o->names = nn;
		o->cap_names = nc;
	}
	if (!(o->names[o->nnames] = strdup(name)))
		return WT_ENOMEM;
	*idx = (int64_t)o->nnames++;
	return json_object_set_new(o->name_idx, name, json_integer(*idx)) ? WT_ENOMEM : 0;
}

/* Emit d at level lv and x offsets x[0..1]; its children start after its
 * self value (Pyroscope's layout), sorted by name. */
static int emit(fg_out *o, hub_pf_node *d, size_t lv, int64_t x0, int64_t x1)
{
	int64_t idx, cx0, cx1;
	size_t i;

	if (lv == o->nlevels) {
		if (o->nlevels == o->cap_levels) {
			size_t nc = o->cap_levels ? o->cap_levels * 2 : 16;
			struct level *nl = realloc(o->levels, nc * sizeof(*nl));
			if (!nl)
				return WT_ENOMEM;
			o->levels = nl;
			o->cap_levels = nc;
		}
		memset(&o->levels[o->nlevels++], 0, sizeof(struct level));
	}
	if (name_index(o, lv ? d->name : "total", &idx))
		return WT_ENOMEM;
	if (d->self[0] > o->max_self)
		o->max_self = d->self[0];
	if (o->width == 7 && d->self[1] > o->max_self)
		o->max_self = d->self[1];
	if (lvl_push(&o->levels[lv], x0) || lvl_push(&o->levels[lv], d->total[0]) ||
	    lvl_push(&o->levels[lv], d->self[0]))
		return WT_ENOMEM;
	if (o->width == 7 && (lvl_push(&o->levels[lv], x1) || lvl_push(&o->levels[lv], d->total[1]) ||
			      lvl_push(&o->levels[lv], d->self[1])))
		return WT_ENOMEM;
	if (lvl_push(&o->levels[lv], idx))
		return WT_ENOMEM;
	if (d->nkids > 1)
		qsort(d->kids, d->nkids, sizeof(hub_pf_node), hub_pf_node_cmp);
	cx0 = x0 + d->self[0];
	cx1 = x1 + d->self[1];
	for (i = 0; i < d->nkids; i++) {
		if (emit(o, &d->kids[i], lv + 1, cx0, cx1))
			return WT_ENOMEM;
		cx0 += d->kids[i].total[0];
		cx1 += d->kids[i].total[1];
	}
	return 0;
}

/* Delta-encode the x offsets of every level (at value positions `at`). */
static void delta_encode(fg_out *o, size_t at)
{
	size_t l, i;

	for (l = 0; l < o->nlevels; l++) {
		int64_t prev = 0;
		struct level *lv = &o->levels[l];
		for (i = at; i + 1 < lv->n; i += (size_t)o->width) {
			int64_t x = lv->v[i];
			lv->v[i] = x - prev;
			prev = x + lv->v[i + 1];
		}
	}
}

static void fg_free(fg_out *o)
{
	size_t i;
	for (i = 0; i < o->nnames; i++)
		free(o->names[i]);
	free(o->names);
	for (i = 0; i < o->nlevels; i++)
		free(o->levels[i].v);
	free(o->levels);
	json_decref(o->name_idx);
}

/* Move o's names and levels into the repeated fields of a FlameGraph or
 * FlameGraphDiff (same layout of fields 1 and 2). */
static int fg_take(fg_out *o, char ***names, size_t *nnames, Querier__V1__Level ***levels, size_t *nlevels)
{
	size_t i;

	*levels = calloc(o->nlevels ? o->nlevels : 1, sizeof(**levels));
	if (!*levels)
		return WT_ENOMEM;
	for (i = 0; i < o->nlevels; i++) {
		Querier__V1__Level *l = malloc(sizeof(*l));
		if (!l)
			return WT_ENOMEM;
		querier__v1__level__init(l);
		l->values = o->levels[i].v;
		l->n_values = o->levels[i].n;
		o->levels[i].v = NULL;
		(*levels)[i] = l;
		*nlevels = i + 1;
	}
	*names = o->names;
	*nnames = o->nnames;
	o->names = NULL;
	o->nnames = 0;
	return 0;
}

/* One pprof sample per tree node with a self value: the path from the
 * root is the stack (leaf first in pprof), functions by name. */
static int to_profile(wt_profile *p, hub_pf_node *d, uint32_t *frames, size_t depth, size_t max_depth, wt_err *err)
{
	size_t i;
	int rc;

	if (depth > 0) {
		uint32_t fn, fr;
		wt_frame f = {0, WT_NO_MAPPING, 0, 0};
		if ((rc = wt_profile_add_function_named(p, d->name, strlen(d->name), NULL, &fn, err)))
			return rc;
		f.function = fn;
		if ((rc = wt_profile_add_frame(p, &f, &fr, err)))
			return rc;
		frames[max_depth - depth] = fr; /* filled from the end: leaf first at the front */
		if (d->self[0]) {
			uint32_t st;
			if ((rc = wt_profile_add_stack(p, frames + max_depth - depth, depth, &st, err)) ||
			    (rc = wt_profile_add_sample(p, st, 0, 0, &d->self[0], err)))
				return rc;
		}
	}
	if (depth + 1 >= max_depth)
		return 0;
	for (i = 0; i < d->nkids; i++)
		if ((rc = to_profile(p, &d->kids[i], frames, depth + 1, max_depth, err)))
			return rc;
	return 0;
}

int hub_pf_flamegraph(hub_pf_node *root, Querier__V1__FlameGraph *fg)
{
	fg_out o;
	int rc = WT_ENOMEM;

	memset(&o, 0, sizeof(o));
	o.width = 4;
	if ((o.name_idx = json_object()) && !emit(&o, root, 0, 0, 0)) {
		delta_encode(&o, 0);
		fg->total = root->total[0];
		fg->max_self = o.max_self;
		rc = fg_take(&o, &fg->names, &fg->n_names, &fg->levels, &fg->n_levels);
	}
	fg_free(&o);
	return rc;
}

int hub_pf_diff(hub_pf_node *root, Querier__V1__FlameGraphDiff *fd)
{
	fg_out o;
	int rc = WT_ENOMEM;

	memset(&o, 0, sizeof(o));
	o.width = 7;
	if ((o.name_idx = json_object()) && !emit(&o, root, 0, 0, 0)) {
		delta_encode(&o, 0);
		delta_encode(&o, 3);
		fd->leftticks = root->total[0];
		fd->rightticks = root->total[1];
		fd->total = root->total[0] + root->total[1];
		fd->max_self = o.max_self;
		rc = fg_take(&o, &fd->names, &fd->n_names, &fd->levels, &fd->n_levels);
	}
	fg_free(&o);
	return rc;
}

int hub_pf_to_profile(hub_pf_node *root, wt_profile *p, wt_err *err)
{
	uint32_t *frames = malloc(HUB_PF_MAX_DEPTH * sizeof(*frames));
	int rc;

	if (!frames)
		return wt_err_set(err, WT_ENOMEM, "out of memory");
	rc = to_profile(p, root, frames, 0, HUB_PF_MAX_DEPTH, err);
	free(frames);
	return rc;
}
