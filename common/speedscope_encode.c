/*
 * speedscope_encode.c — wt_profile → speedscope JSON (speedscope.h,
 * https://www.speedscope.app/file-format-schema.json), the output of
 * `wtctl profile convert --to speedscope`.
 *
 * Layout of the document:
 *   shared.frames[]  one entry per distinct (printable name, file) among the
 *                    frames the written stacks use — the granularity of a
 *                    folded line, so speedscope's flame graph merges what
 *                    `--to folded` merges; "line" is the function's start
 *                    line when known;
 *   profiles[]       one "sampled" profile per selected sample type and,
 *                    when samples carry a `thread` label, per thread
 *                    (sorted by name); samples[] are distinct stacks ROOT
 *                    FIRST with their summed value as weights[i].
 * Units: nanoseconds, microseconds, milliseconds, seconds and bytes are kept;
 * every other unit (count, samples, ...) is "none". startValue is 0 and
 * endValue the sum of the weights (what speedscope's own exporter writes).
 *
 * The JSON is written straight into a wt_buf (no document tree): memory is
 * the output plus one record per non-zero (thread, stack) pair. Strings are
 * escaped per RFC 8259; invalid UTF-8 bytes become U+FFFD so the output is
 * always valid JSON.
 */
#include "speedscope.h"
#include "hindex.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#define SS_SCHEMA "https://www.speedscope.app/file-format-schema.json"
#define SS_NONE UINT32_MAX

typedef struct rec {
	uint32_t group; /* rank of the thread name; 0 = no thread label */
	uint32_t stack;
	int64_t value;
} rec;

/* (name, file) → shared frame index; keys live in `keys` as offsets. */
typedef struct frame_table {
	wt_hindex idx;
	size_t *key_off; /* per shared frame: offset of "name\0file\0" in keys */
	int64_t *line;   /* per shared frame: start line, 0 = unknown */
	size_t n, rows_cap;
	wt_buf keys;
} frame_table;

typedef struct enc {
	const wt_profile *p;
	wt_err *err;
	uint32_t *fmap;   /* wt frame id → shared frame index, SS_NONE = not yet */
	frame_table ft;
	uint32_t *ls_group; /* labelset → group */
	uint32_t *group_name; /* group → thread string id (group 0: none) */
	size_t ngroups;
	rec *recs;
	size_t nrecs;
	char nbuf[256];
} enc;

static int oom(enc *e)
{
	return wt_err_set(e->err, WT_ENOMEM, "speedscope: out of memory");
}

static uint64_t hash_key(const char *name, const char *file)
{
	return XXH3_64bits_withSeed(file, strlen(file), XXH3_64bits(name, strlen(name)));
}

static const char *key_name(const frame_table *t, size_t i)
{
	return (const char *)t->keys.data + t->key_off[i];
}

static const char *key_file(const frame_table *t, size_t i)
{
	const char *k = key_name(t, i);

	return k + strlen(k) + 1;
}

typedef struct ft_key {
	const char *name, *file;
} ft_key;

static int ft_eq(const void *ctx, uint32_t v, const void *key)
{
	const frame_table *t = ctx;
	const ft_key *k = key;

	return !strcmp(key_name(t, v), k->name) && !strcmp(key_file(t, v), k->file);
}

/* Shared frame index of (name, file), adding it when new. */
static int ft_get(frame_table *t, const char *name, const char *file, int64_t line, uint32_t *idx)
{
	ft_key k = {name, file};
	uint64_t h = hash_key(name, file);
	size_t slot;
	int r = wt_hindex_lookup(&t->idx, h, &k, ft_eq, t, idx, &slot);

	if (r)
		return r < 0 ? r : 0;
	if (t->n == t->rows_cap) {
		size_t nc = t->rows_cap ? t->rows_cap * 2 : 256;
		size_t *ko = realloc(t->key_off, nc * sizeof(*ko));
		if (!ko)
			return WT_ENOMEM;
		t->key_off = ko;
		int64_t *ln = realloc(t->line, nc * sizeof(*ln));
		if (!ln)
			return WT_ENOMEM;
		t->line = ln;
		t->rows_cap = nc;
	}
	t->key_off[t->n] = t->keys.len;
	t->line[t->n] = line;
	if (wt_buf_append(&t->keys, name, strlen(name) + 1) ||
	    wt_buf_append(&t->keys, file, strlen(file) + 1))
		return WT_ENOMEM;
	*idx = (uint32_t)t->n++;
	wt_hindex_put(&t->idx, slot, h, *idx);
	return 0;
}

/* Shared index of wt frame f (interned on first use). */
static int frame_index(enc *e, uint32_t f, uint32_t *idx)
{
	const wt_frame *fr = &e->p->frames[f];
	const char *name, *file = "";
	int64_t line = 0;

	if (e->fmap[f] != SS_NONE) {
		*idx = e->fmap[f];
		return 0;
	}
	name = wt_profile_frame_name(e->p, f, e->nbuf, sizeof(e->nbuf));
	if (fr->function != WT_NO_FUNCTION && fr->function < e->p->nfunctions) {
		const wt_function *fn = &e->p->functions[fr->function];
		file = wt_profile_str(e->p, fn->filename);
		line = fn->start_line;
	}
	if (ft_get(&e->ft, name, file, line, idx))
		return oom(e);
	e->fmap[f] = *idx;
	return 0;
}

/* JSON string: escapes, and U+FFFD for bytes that are not valid UTF-8. */
static void put_json_str(wt_buf *b, const char *s)
{
	const unsigned char *u = (const unsigned char *)s;

	wt_buf_putc(b, '"');
	while (*u) {
		const unsigned char *run = u;
		/* copy the longest run that needs no escaping */
		while (*u >= 0x20 && *u < 0x80 && *u != '"' && *u != '\\')
			u++;
		if (u > run)
			wt_buf_append(b, run, (size_t)(u - run));
		if (!*u)
			break;
		if (*u == '"' || *u == '\\') {
			wt_buf_putc(b, '\\');
			wt_buf_putc(b, (char)*u++);
		} else if (*u < 0x20) {
			wt_buf_printf(b, "\\u%04x", *u++);
		} else {
			u += wt_buf_utf8_char(b, u);
		}
	}
	wt_buf_putc(b, '"');
}

static const char *ss_unit(const char *unit)
{
	static const char *const keep[] = {"nanoseconds", "microseconds", "milliseconds", "seconds",
					   "bytes"};

	for (size_t i = 0; i < sizeof(keep) / sizeof(keep[0]); i++)
		if (!strcmp(unit, keep[i]))
			return keep[i];
	return "none";
}

static const wt_profile *cmp_p; /* qsort has no context argument */

static int cmp_thread(const void *a, const void *b)
{
	return strcmp(wt_profile_str(cmp_p, *(const uint32_t *)a),
		      wt_profile_str(cmp_p, *(const uint32_t *)b));
}

static int cmp_rec(const void *a, const void *b)
{
	const rec *x = a, *y = b;

	if (x->group != y->group)
		return x->group < y->group ? -1 : 1;
	return x->stack < y->stack ? -1 : x->stack > y->stack;
}

/* Thread groups: group 0 = no thread label, then one per distinct thread
 * name in name order. */
static int make_groups(enc *e)
{
	const wt_profile *p = e->p;
	uint32_t thread_key = 0;
	uint32_t *ids = NULL;
	size_t nids = 0;

	if (!(e->ls_group = calloc(p->nlabelsets ? p->nlabelsets : 1, sizeof(*e->ls_group))))
		return oom(e);
	for (uint32_t s = 1; s < p->nstrings && !thread_key; s++)
		if (!strcmp(wt_profile_str(p, s), "thread"))
			thread_key = s;
	if (!(ids = malloc((p->nlabelsets ? p->nlabelsets : 1) * sizeof(*ids))))
		return oom(e);
	/* per labelset: the thread string id (0 = none) */
	for (size_t ls = 0; thread_key && ls < p->nlabelsets; ls++) {
		size_t n;
		const wt_label *l = wt_profile_labelset(p, (uint32_t)ls, &n);
		for (size_t k = 0; k < n; k++)
			if (l[k].key == thread_key && l[k].str) {
				e->ls_group[ls] = l[k].str;
				ids[nids++] = l[k].str;
			}
	}
	cmp_p = p;
	qsort(ids, nids, sizeof(*ids), cmp_thread);
	if (!(e->group_name = malloc((nids + 1) * sizeof(*e->group_name)))) {
		free(ids);
		return oom(e);
	}
	e->group_name[0] = 0;
	e->ngroups = 1;
	for (size_t i = 0; i < nids; i++)
		if (e->group_name[e->ngroups - 1] != ids[i] || e->ngroups == 1)
			e->group_name[e->ngroups++] = ids[i];
	free(ids);
	/* string id → group: binary search over the sorted names */
	for (size_t ls = 0; ls < p->nlabelsets; ls++) {
		uint32_t sid = e->ls_group[ls];
		size_t lo = 1, hi = e->ngroups;
		if (!sid)
			continue;
		while (lo < hi) {
			size_t mid = (lo + hi) / 2;
			int c = strcmp(wt_profile_str(p, e->group_name[mid]), wt_profile_str(p, sid));
			if (c < 0)
				lo = mid + 1;
			else
				hi = mid;
		}
		e->ls_group[ls] = (uint32_t)lo;
	}
	return 0;
}

/* Records of type t: (group, stack) → summed value, sorted, zeros dropped. */
static int collect(enc *e, size_t t)
{
	const wt_profile *p = e->p;
	size_t n = 0;

	for (size_t i = 0; i < p->nsamples; i++) {
		int64_t v = wt_profile_values(p, i)[t];
		if (!v)
			continue;
		e->recs[n].group = e->ls_group[p->samples[i].labelset];
		e->recs[n].stack = p->samples[i].stack;
		e->recs[n].value = v;
		n++;
	}
	qsort(e->recs, n, sizeof(*e->recs), cmp_rec);
	e->nrecs = 0;
	for (size_t i = 0; i < n; i++) {
		rec *last = e->nrecs ? &e->recs[e->nrecs - 1] : NULL;
		if (last && last->group == e->recs[i].group && last->stack == e->recs[i].stack) {
			if (__builtin_add_overflow(last->value, e->recs[i].value, &last->value))
				return wt_err_set(e->err, WT_EINVAL,
						  "speedscope: type %s: stack %u: value overflows int64",
						  wt_profile_str(p, p->types[t].canonical), last->stack);
		} else {
			e->recs[e->nrecs++] = e->recs[i];
		}
	}
	/* drop stacks that sum to zero; refuse negative weights */
	n = e->nrecs;
	e->nrecs = 0;
	for (size_t i = 0; i < n; i++) {
		if (e->recs[i].value < 0)
			return wt_err_set(e->err, WT_EINVAL,
					  "speedscope: type %s: stack %u has negative value %" PRId64
					  "; speedscope weights are non-negative",
					  wt_profile_str(p, p->types[t].canonical), e->recs[i].stack,
					  e->recs[i].value);
		if (e->recs[i].value)
			e->recs[e->nrecs++] = e->recs[i];
	}
	return 0;
}

/* Assign shared indices to every frame of the collected stacks. */
static int index_frames(enc *e)
{
	for (size_t i = 0; i < e->nrecs; i++) {
		size_t n;
		const uint32_t *fr = wt_profile_stack(e->p, e->recs[i].stack, &n);
		uint32_t idx;
		int rc;

		for (size_t k = 0; k < n; k++)
			if ((rc = frame_index(e, fr[k], &idx)))
				return rc;
	}
	return 0;
}

static void write_profile(enc *e, wt_buf *b, size_t t, size_t lo, size_t hi, int multi_type,
			  int *first)
{
	const wt_profile *p = e->p;
	const char *tname = wt_profile_str(p, p->types[t].canonical);
	uint32_t g = lo < hi ? e->recs[lo].group : 0;
	int64_t total = 0;

	for (size_t i = lo; i < hi; i++)
		total += e->recs[i].value; /* no overflow: collect() summed per type */
	if (!*first)
		wt_buf_putc(b, ',');
	*first = 0;
	wt_buf_puts(b, "{\"type\":\"sampled\",\"name\":");
	if (!g) {
		put_json_str(b, tname);
	} else if (!multi_type) {
		put_json_str(b, wt_profile_str(p, e->group_name[g]));
	} else {
		wt_buf nm = WT_BUF_INIT;
		wt_buf_printf(&nm, "%s: %s", tname, wt_profile_str(p, e->group_name[g]));
		wt_buf_putc(&nm, '\0');
		put_json_str(b, nm.oom ? tname : (const char *)nm.data);
		wt_buf_free(&nm);
	}
	wt_buf_puts(b, ",\"unit\":");
	put_json_str(b, ss_unit(wt_profile_str(p, p->types[t].unit)));
	wt_buf_printf(b, ",\"startValue\":0,\"endValue\":%" PRId64 ",\"samples\":[", total);
	for (size_t i = lo; i < hi; i++) {
		size_t n;
		const uint32_t *fr = wt_profile_stack(p, e->recs[i].stack, &n);

		if (i > lo)
			wt_buf_putc(b, ',');
		wt_buf_putc(b, '[');
		for (size_t k = n; k > 0; k--) /* root first */
			wt_buf_printf(b, k == n ? "%" PRIu32 : ",%" PRIu32, e->fmap[fr[k - 1]]);
		wt_buf_putc(b, ']');
	}
	wt_buf_puts(b, "],\"weights\":[");
	for (size_t i = lo; i < hi; i++)
		wt_buf_printf(b, i > lo ? ",%" PRId64 : "%" PRId64, e->recs[i].value);
	wt_buf_puts(b, "]}");
}

int wt_speedscope_encode(const wt_profile *p, const size_t *types, size_t ntypes,
			 const char *name, wt_buf *out, wt_err *err)
{
	enc e;
	wt_buf profs = WT_BUF_INIT;
	int rc = 0, first = 1;

	memset(&e, 0, sizeof(e));
	e.p = p;
	e.err = err;
	for (size_t i = 0; i < ntypes; i++)
		if (types[i] >= p->ntypes)
			return wt_err_set(err, WT_EINVAL, "speedscope: sample type index %zu out of range (%zu types)",
					  types[i], p->ntypes);
	if (!(e.fmap = malloc((p->nframes ? p->nframes : 1) * sizeof(*e.fmap))) ||
	    !(e.recs = malloc((p->nsamples ? p->nsamples : 1) * sizeof(*e.recs)))) {
		rc = oom(&e);
		goto cleanup;
	}
	memset(e.fmap, 0xff, (p->nframes ? p->nframes : 1) * sizeof(*e.fmap));
	if ((rc = make_groups(&e)))
		goto cleanup;
	/* profiles first (into their own buffer): they decide which frames are
	 * shared */
	for (size_t ti = 0; ti < ntypes; ti++) {
		size_t t = types[ti];

		if ((rc = collect(&e, t)) || (rc = index_frames(&e)))
			goto cleanup;
		if (!e.nrecs) /* keep the type visible: an empty profile */
			write_profile(&e, &profs, t, 0, 0, ntypes > 1, &first);
		for (size_t lo = 0, hi; lo < e.nrecs; lo = hi) {
			for (hi = lo + 1; hi < e.nrecs && e.recs[hi].group == e.recs[lo].group; hi++)
				;
			write_profile(&e, &profs, t, lo, hi, ntypes > 1, &first);
		}
	}
	wt_buf_puts(out, "{\"$schema\":\"" SS_SCHEMA "\",\"exporter\":\"wtctl\",\"name\":");
	put_json_str(out, name && *name ? name : "profile");
	wt_buf_puts(out, ",\"activeProfileIndex\":0,\"shared\":{\"frames\":[");
	for (size_t i = 0; i < e.ft.n; i++) {
		const char *file = key_file(&e.ft, i);

		wt_buf_puts(out, i ? ",{\"name\":" : "{\"name\":");
		put_json_str(out, key_name(&e.ft, i));
		if (*file) {
			wt_buf_puts(out, ",\"file\":");
			put_json_str(out, file);
		}
		if (e.ft.line[i] > 0)
			wt_buf_printf(out, ",\"line\":%" PRId64, e.ft.line[i]);
		wt_buf_putc(out, '}');
	}
	wt_buf_puts(out, "]},\"profiles\":[");
	if (profs.len)
		wt_buf_append(out, profs.data, profs.len);
	wt_buf_puts(out, "]}\n");
	if (out->oom || profs.oom)
		rc = oom(&e);
cleanup:
	wt_buf_free(&profs);
	free(e.fmap);
	free(e.recs);
	free(e.ls_group);
	free(e.group_name);
	wt_hindex_free(&e.ft.idx);
	free(e.ft.key_off);
	free(e.ft.line);
	wt_buf_free(&e.ft.keys);
	return rc;
}
