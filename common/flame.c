/*
 * flame.c — flame graph tree, function table and call graph (see flame.h).
 *
 * One builder keeps all three views up to date as stacks are added:
 *   tree      — nodes in flat arrays; a single hash map (parent, name) →
 *               child makes finding a child O(1) however wide the node is;
 *   table     — per distinct name: self (leaf) and total (once per stack);
 *   callgraph — per (caller, callee) name pair: value, once per stack.
 * "Once per stack" uses an epoch stamp per name / edge, so a recursive stack
 * (a;b;a;b) adds its value to a's and b's totals and to a→b exactly once.
 *
 * Names are interned in the builder's own pool; nothing points into the
 * caller's memory after wt_flame_add returns. Sums saturate at INT64 limits
 * instead of wrapping.
 */
#include "flame.h"
#include "json_str.h"
#include "select.h"
#include "symref.h"

#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "u64map.h"

#define ROOT_NAME "total"

/* ---- small containers ---------------------------------------------------------- */

static int grow(void **arr, size_t *cap, size_t need, size_t sz)
{
	size_t ncap;
	void *na;

	if (need <= *cap)
		return 0;
	ncap = *cap ? *cap : 64;
	while (ncap < need)
		ncap *= 2;
	if (!(na = realloc(*arr, ncap * sz)))
		return WT_ENOMEM;
	*arr = na;
	*cap = ncap;
	return 0;
}

static int64_t sat_add(int64_t a, int64_t b)
{
	int64_t r;

	if (__builtin_add_overflow(a, b, &r))
		return b > 0 ? INT64_MAX : INT64_MIN;
	return r;
}

/* ---- builder --------------------------------------------------------------------- */

typedef struct fnode {
	uint32_t name, parent, first_child, next_sibling;
	int64_t self, total;
} fnode;

/* (parent, name) → child node: open addressing with each key and value in
 * one 12-byte slot, so a lookup — the bulk of adding a stack — touches one
 * cache line where common/u64map.h's separate key and value arrays touch
 * two. Load at most 1/2; node UINT32_MAX = empty. */
typedef struct cslot {
	uint32_t parent, name, node;
} cslot;

typedef struct childmap {
	cslot *s;
	size_t cap, n;
} childmap;

static size_t cm_home(const childmap *m, uint32_t parent, uint32_t name)
{
	uint64_t x = (uint64_t)parent << 32 | name;

	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	return (size_t)x & (m->cap - 1);
}

/* Room for n entries (cap a power of two >= 2n). 0 or WT_ENOMEM (the map
 * unchanged). */
static int cm_reserve(childmap *m, size_t n)
{
	size_t cap = m->cap ? m->cap : 256, i, j;
	cslot *ns;

	while (cap < 2 * n)
		cap *= 2;
	if (cap == m->cap)
		return 0;
	if (!(ns = malloc(cap * sizeof(*ns))))
		return WT_ENOMEM;
	for (i = 0; i < cap; i++)
		ns[i].node = UINT32_MAX;
	for (i = 0; i < m->cap; i++) {
		childmap t = {ns, cap, 0};
		if (m->s[i].node == UINT32_MAX)
			continue;
		for (j = cm_home(&t, m->s[i].parent, m->s[i].name); ns[j].node != UINT32_MAX; j = (j + 1) & (cap - 1))
			;
		ns[j] = m->s[i];
	}
	free(m->s);
	m->s = ns;
	m->cap = cap;
	return 0;
}

/* The slot of (parent, name): filled (node != UINT32_MAX) or the empty
 * one to fill (then n++). Grows first. */
static int cm_slot(childmap *m, uint32_t parent, uint32_t name, cslot **out)
{
	size_t j;

	if ((m->n + 1) * 2 > m->cap && cm_reserve(m, m->n + 1 > 128 ? (m->n + 1) * 2 : 128))
		return WT_ENOMEM;
	for (j = cm_home(m, parent, name); m->s[j].node != UINT32_MAX; j = (j + 1) & (m->cap - 1))
		if (m->s[j].parent == parent && m->s[j].name == name)
			break;
	*out = &m->s[j];
	return 0;
}

typedef struct fedge {
	uint32_t from, to;
	uint64_t mark;
	int64_t value;
} fedge;

struct wt_flame {
	/* names */
	char *pool;
	size_t pool_len, pool_cap;
	uint32_t *name_off; /* name id → offset into pool */
	int64_t *fself, *ftotal;
	uint64_t *fmark;
	size_t nnames, names_cap;
	wt_u64map name_idx; /* xxh3(name) → first id; collisions chain via name_next */
	uint32_t *name_next;
	size_t name_next_cap;
	/* names [0, nindexed) are in name_idx; later ones (wt_flame_intern_new)
	 * are indexed by the next name_intern; names_hint: names expected
	 * (wt_flame_reserve), the index's size when it is next filled */
	size_t nindexed, names_hint;

	/* tree */
	fnode *nodes;
	size_t nnodes, nodes_cap;
	childmap child_idx; /* (parent, name) → node */
	/* child_idx lacks the nodes wt_flame_add_stacks made (rebuilt by the
	 * next child_of); child_hint: nodes expected (wt_flame_reserve), the
	 * map's first size */
	int child_stale;
	size_t child_hint;

	/* call graph */
	fedge *edges;
	size_t nedges, edges_cap;
	wt_u64map edge_idx; /* from << 32 | to → edge */

	int skip_edges, skip_tree, skip_fns;
	/* the previous stack added: its name ids, tree nodes and edges by
	 * depth, so a stack sharing a prefix with it skips the lookups of
	 * the shared part */
	uint32_t *prev_ids, *prev_nodes, *prev_edges;
	size_t prev_n, prev_cap;
	uint64_t epoch;
	uint32_t *ids; /* scratch: name ids of the stack being added */
	size_t ids_cap;
};

static const char *fname(const wt_flame *f, uint32_t id)
{
	return f->pool + f->name_off[id];
}

/* Room for ncap names in the per-name arrays. */
static int names_grow(wt_flame *f, size_t ncap)
{
	void *a;

	if (!(a = realloc(f->name_off, ncap * sizeof(*f->name_off))))
		return WT_ENOMEM;
	f->name_off = a;
	if (!(a = realloc(f->fself, ncap * sizeof(*f->fself))))
		return WT_ENOMEM;
	f->fself = a;
	if (!(a = realloc(f->ftotal, ncap * sizeof(*f->ftotal))))
		return WT_ENOMEM;
	f->ftotal = a;
	if (!(a = realloc(f->fmark, ncap * sizeof(*f->fmark))))
		return WT_ENOMEM;
	f->fmark = a;
	if (!(a = realloc(f->name_next, ncap * sizeof(*f->name_next))))
		return WT_ENOMEM;
	f->name_next = a;
	f->names_cap = ncap;
	return 0;
}

/* Put names [nindexed, nnames) into name_idx (added by
 * wt_flame_intern_new without it). 0 or WT_ENOMEM. */
static int index_pending(wt_flame *f)
{
	size_t slot, i;

	if (f->nindexed == f->nnames)
		return 0;
	if (wt_u64map_reserve(&f->name_idx, f->nnames > f->names_hint ? f->nnames : f->names_hint))
		return WT_ENOMEM;
	for (i = f->nindexed; i < f->nnames; i++) {
		const char *nm = fname(f, (uint32_t)i);
		uint64_t h = XXH3_64bits(nm, strlen(nm));

		if (wt_u64map_slot(&f->name_idx, h, &slot))
			return WT_ENOMEM;
		f->name_next[i] = f->name_idx.vals[slot];
		if (f->name_next[i] == UINT32_MAX)
			f->name_idx.n++;
		f->name_idx.keys[slot] = h;
		f->name_idx.vals[slot] = (uint32_t)i;
	}
	f->nindexed = f->nnames;
	return 0;
}

/* Append name s[0..len) as a new id (not indexed). 0 or WT_ENOMEM. */
static int name_append(wt_flame *f, const char *s, size_t len, uint32_t *id)
{
	uint32_t i;

	if (f->nnames >= UINT32_MAX - 1 || f->pool_len + len + 1 > UINT32_MAX)
		return WT_ENOMEM;
	if (f->nnames == f->names_cap && names_grow(f, f->names_cap ? f->names_cap * 2 : 256))
		return WT_ENOMEM;
	if (grow((void **)&f->pool, &f->pool_cap, f->pool_len + len + 1, 1))
		return WT_ENOMEM;
	memcpy(f->pool + f->pool_len, s, len);
	f->pool[f->pool_len + len] = '\0';
	i = (uint32_t)f->nnames++;
	f->name_off[i] = (uint32_t)f->pool_len;
	f->pool_len += len + 1;
	f->fself[i] = f->ftotal[i] = 0;
	f->fmark[i] = 0;
	f->name_next[i] = UINT32_MAX;
	*id = i;
	return 0;
}

/* Views show a stored unsymbolized frame without its " [bid:…]" suffix
 * (symref.h): frames differing only in it merge. */
static int name_intern(wt_flame *f, const char *s, uint32_t *id)
{
	size_t len = wt_symref_display_len(s, strlen(s)), slot;
	uint64_t h = XXH3_64bits(s, len);
	uint32_t i, head;

	if (index_pending(f) || wt_u64map_slot(&f->name_idx, h, &slot))
		return WT_ENOMEM;
	head = f->name_idx.vals[slot];
	for (i = head; i != UINT32_MAX; i = f->name_next[i])
		if (!strncmp(fname(f, i), s, len) && fname(f, i)[len] == '\0') {
			*id = i;
			return 0;
		}
	if (name_append(f, s, len, &i))
		return WT_ENOMEM;
	f->name_next[i] = head;
	if (head == UINT32_MAX)
		f->name_idx.n++;
	f->name_idx.keys[slot] = h;
	f->name_idx.vals[slot] = i;
	f->nindexed = f->nnames;
	*id = i;
	return 0;
}

/* names the builder may hold for wt_flame_intern_new to compare one by
 * one instead of through the index */
#define INTERN_NEW_FEW 16

int wt_flame_intern_new(wt_flame *f, const char *const *names, size_t n, uint32_t *ids)
{
	size_t i, j, few = f->nnames;

	if (few > INTERN_NEW_FEW)
		goto each;
	for (i = 0; i < n; i++) {
		size_t l = strlen(names[i]);
		if (wt_symref_display_len(names[i], l) != l)
			goto each; /* shown shorter: may equal another */
	}
	for (i = 0; i < n; i++) {
		for (j = 0; j < few; j++)
			if (!strcmp(fname(f, (uint32_t)j), names[i]))
				break;
		if (j < few)
			ids[i] = (uint32_t)j;
		else if (name_append(f, names[i], strlen(names[i]), &ids[i]))
			return WT_ENOMEM;
	}
	return 0;
each:
	for (i = 0; i < n; i++)
		if (name_intern(f, names[i], &ids[i]))
			return WT_ENOMEM;
	return 0;
}

void wt_flame_skip_edges(wt_flame *f)
{
	f->skip_edges = 1;
}

void wt_flame_skip_tree(wt_flame *f)
{
	f->skip_tree = 1;
}

void wt_flame_skip_functions(wt_flame *f)
{
	f->skip_fns = 1;
}

int wt_flame_reserve(wt_flame *f, size_t names, size_t nodes)
{
	if (names > UINT32_MAX / 2 || nodes > UINT32_MAX / 2)
		return WT_ENOMEM;
	/* the name index is sized when next filled (index_pending): names
	 * from wt_flame_intern_new may never need it */
	if (names > f->names_cap && names_grow(f, names))
		return WT_ENOMEM;
	if (names > f->names_hint)
		f->names_hint = names;
	if (!f->skip_tree && nodes > f->nodes_cap &&
	    grow((void **)&f->nodes, &f->nodes_cap, nodes, sizeof(*f->nodes)))
		return WT_ENOMEM;
	/* the child index is sized when first used: wt_flame_add_stacks
	 * builds a fresh tree without it */
	if (nodes > f->child_hint)
		f->child_hint = nodes;
	return 0;
}

wt_flame *wt_flame_new(void)
{
	wt_flame *f = calloc(1, sizeof(*f));
	uint32_t root_name;

	if (!f)
		return NULL;
	if (name_intern(f, ROOT_NAME, &root_name) ||
	    grow((void **)&f->nodes, &f->nodes_cap, 1, sizeof(*f->nodes))) {
		wt_flame_free(f);
		return NULL;
	}
	memset(&f->nodes[0], 0, sizeof(f->nodes[0]));
	f->nodes[0].name = root_name;
	f->nodes[0].parent = f->nodes[0].first_child = f->nodes[0].next_sibling = UINT32_MAX;
	f->nnodes = 1;
	return f;
}

void wt_flame_free(wt_flame *f)
{
	if (!f)
		return;
	free(f->pool);
	free(f->name_off);
	free(f->fself);
	free(f->ftotal);
	free(f->fmark);
	free(f->name_next);
	wt_u64map_free(&f->name_idx);
	free(f->nodes);
	free(f->child_idx.s);
	free(f->edges);
	wt_u64map_free(&f->edge_idx);
	free(f->ids);
	free(f->prev_ids);
	free(f->prev_nodes);
	free(f->prev_edges);
	free(f);
}

/* Index every node but the root in child_idx (after wt_flame_add_stacks
 * made nodes without it). 0 or WT_ENOMEM. */
static int child_index_rebuild(wt_flame *f)
{
	size_t i;
	cslot *sl;

	if (cm_reserve(&f->child_idx, f->nnodes))
		return WT_ENOMEM;
	for (i = 1; i < f->nnodes; i++) {
		if (cm_slot(&f->child_idx, f->nodes[i].parent, f->nodes[i].name, &sl))
			return WT_ENOMEM;
		if (sl->node == UINT32_MAX) {
			sl->parent = f->nodes[i].parent;
			sl->name = f->nodes[i].name;
			sl->node = (uint32_t)i;
			f->child_idx.n++;
		}
	}
	f->child_stale = 0;
	return 0;
}

/* A new node (parent, name), first among its parent's children, without
 * touching the child index (child_of updates it; the bulk builder leaves
 * it stale: the caller knows the child is new). 0 or WT_ENOMEM. */
static int new_child(wt_flame *f, uint32_t parent, uint32_t name, uint32_t *out)
{
	fnode *n;

	if (f->nnodes >= UINT32_MAX - 1 ||
	    grow((void **)&f->nodes, &f->nodes_cap, f->nnodes + 1, sizeof(*f->nodes)))
		return WT_ENOMEM;
	n = &f->nodes[f->nnodes];
	n->name = name;
	n->parent = parent;
	n->first_child = UINT32_MAX;
	n->next_sibling = f->nodes[parent].first_child;
	n->self = n->total = 0;
	f->nodes[parent].first_child = (uint32_t)f->nnodes;
	*out = (uint32_t)f->nnodes++;
	return 0;
}

static int child_of(wt_flame *f, uint32_t parent, uint32_t name, uint32_t *out)
{
	cslot *sl;

	if (!f->child_idx.cap && f->child_hint && cm_reserve(&f->child_idx, f->child_hint))
		return WT_ENOMEM;
	if (f->child_stale && child_index_rebuild(f))
		return WT_ENOMEM;
	if (cm_slot(&f->child_idx, parent, name, &sl))
		return WT_ENOMEM;
	if (sl->node != UINT32_MAX) {
		*out = sl->node;
		return 0;
	}
	if (new_child(f, parent, name, out))
		return WT_ENOMEM;
	sl->parent = parent;
	sl->name = name;
	sl->node = *out;
	f->child_idx.n++;
	return 0;
}

static void edge_value(wt_flame *f, uint32_t idx, int64_t value)
{
	fedge *e = &f->edges[idx];

	if (e->mark != f->epoch) {
		e->mark = f->epoch;
		e->value = sat_add(e->value, value);
	}
}

static int edge_add(wt_flame *f, uint32_t from, uint32_t to, int64_t value, uint32_t *idx)
{
	uint64_t key = (uint64_t)from << 32 | to;
	size_t slot;
	fedge *e;

	if (wt_u64map_slot(&f->edge_idx, key, &slot))
		return WT_ENOMEM;
	if (f->edge_idx.vals[slot] == UINT32_MAX) {
		if (grow((void **)&f->edges, &f->edges_cap, f->nedges + 1, sizeof(*f->edges)))
			return WT_ENOMEM;
		e = &f->edges[f->nedges];
		e->from = from;
		e->to = to;
		e->mark = 0;
		e->value = 0;
		f->edge_idx.keys[slot] = key;
		f->edge_idx.vals[slot] = (uint32_t)f->nedges++;
		f->edge_idx.n++;
	}
	*idx = f->edge_idx.vals[slot];
	edge_value(f, *idx, value);
	return 0;
}

/* ids: name ids ROOT FIRST. */
static int add_ids(wt_flame *f, const uint32_t *ids, size_t n, int64_t value)
{
	uint32_t node = 0;
	size_t i, shared = 0;

	if (n > f->prev_cap) {
		size_t c = n * 2;
		uint32_t *a = realloc(f->prev_ids, c * sizeof(*a)), *b, *e;
		if (a)
			f->prev_ids = a;
		b = a ? realloc(f->prev_nodes, c * sizeof(*b)) : NULL;
		if (b)
			f->prev_nodes = b;
		e = b ? realloc(f->prev_edges, c * sizeof(*e)) : NULL;
		if (!e) {
			f->prev_n = 0;
			return WT_ENOMEM;
		}
		f->prev_edges = e;
		f->prev_cap = c;
	}
	while (shared < n && shared < f->prev_n && f->prev_ids[shared] == ids[shared])
		shared++;
	f->epoch++;
	f->nodes[0].total = sat_add(f->nodes[0].total, value);
	for (i = 0; i < n; i++) {
		uint32_t id = ids[i];

		if (i < shared) {
			node = f->prev_nodes[i];
		} else {
			/* without a tree every frame stays at the root */
			if (!f->skip_tree && child_of(f, node, id, &node)) {
				f->prev_n = 0;
				return WT_ENOMEM;
			}
			f->prev_ids[i] = id;
			f->prev_nodes[i] = node;
		}
		if (!f->skip_tree)
			f->nodes[node].total = sat_add(f->nodes[node].total, value);
		if (!f->skip_fns && f->fmark[id] != f->epoch) {
			f->fmark[id] = f->epoch;
			f->ftotal[id] = sat_add(f->ftotal[id], value);
		}
		if (!i || f->skip_edges)
			continue;
		if (i < shared) {
			edge_value(f, f->prev_edges[i], value);
		} else if (edge_add(f, ids[i - 1], id, value, &f->prev_edges[i])) {
			f->prev_n = 0;
			return WT_ENOMEM;
		}
	}
	f->prev_n = n;
	if (!f->skip_tree)
		f->nodes[node].self = sat_add(f->nodes[node].self, value);
	if (n && !f->skip_fns)
		f->fself[ids[n - 1]] = sat_add(f->fself[ids[n - 1]], value);
	return 0;
}

static int ensure_ids(wt_flame *f, size_t n)
{
	return grow((void **)&f->ids, &f->ids_cap, n ? n : 1, sizeof(*f->ids));
}

int wt_flame_add(wt_flame *f, const char *const *frames, size_t n, int64_t value)
{
	size_t i;

	if (ensure_ids(f, n))
		return WT_ENOMEM;
	for (i = 0; i < n; i++)
		if (name_intern(f, frames[i] ? frames[i] : "", &f->ids[i]))
			return WT_ENOMEM;
	return add_ids(f, f->ids, n, value);
}

int wt_flame_intern(wt_flame *f, const char *frame, uint32_t *id)
{
	return name_intern(f, frame ? frame : "", id);
}

int wt_flame_add_ids(wt_flame *f, const uint32_t *ids, size_t n, int64_t value)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (ids[i] >= f->nnames)
			return WT_EINVAL;
	return add_ids(f, ids, n, value);
}

/* ---- bulk tree build (wt_flame_add_stacks) ---------------------------------------- */

/* Sort v[0..n) by the upper 32 bits, stably (the lower bits, stack
 * indices, arrive ascending within a group): insertion sort for small
 * groups, else LSD radix over the bits name ids use (tmp: room for n).
 * O(n) per pass whatever the input. */
#define BULK_SMALL 64
#define BULK_RADIX_BITS 11
static void sort_by_name(uint64_t *v, size_t n, uint64_t *tmp, unsigned name_bits)
{
	size_t i, j, cnt[1 << BULK_RADIX_BITS];
	unsigned shift;

	if (n <= BULK_SMALL) {
		for (i = 1; i < n; i++) {
			uint64_t x = v[i];
			for (j = i; j > 0 && v[j - 1] >> 32 > x >> 32; j--)
				v[j] = v[j - 1];
			v[j] = x;
		}
		return;
	}
	for (shift = 0; shift < name_bits; shift += BULK_RADIX_BITS) {
		uint64_t *t;
		size_t sum = 0;

		memset(cnt, 0, sizeof(cnt));
		for (i = 0; i < n; i++)
			cnt[(v[i] >> (32 + shift)) & ((1u << BULK_RADIX_BITS) - 1)]++;
		for (i = 0; i < (1u << BULK_RADIX_BITS); i++) {
			size_t c = cnt[i];
			cnt[i] = sum;
			sum += c;
		}
		for (i = 0; i < n; i++)
			tmp[cnt[(v[i] >> (32 + shift)) & ((1u << BULK_RADIX_BITS) - 1)]++] = v[i];
		/* copy back (v is a slice of the caller's array) */
		t = tmp;
		memcpy(v, t, n * sizeof(*v));
	}
}

size_t wt_flame_bulk_cols_frames = (size_t)4 << 20;

/* A stack still being placed by tree_bulk: where its frames are (pos,
 * see tree_bulk), how many, its value and its node one level up. Moved
 * along in group order from depth to depth, so what a stack needs is read
 * with it and not looked up by stack index (three cache misses per stack
 * and depth once the stacks outgrow the cache). */
typedef struct bulk_rec {
	uint32_t pos, len, node;
	int64_t value;
} bulk_rec;

/* The tree part of wt_flame_add_stacks, one depth at a time: the stacks
 * still deeper than d, grouped by their node at depth d - 1 (groups are
 * runs of equal node in cur[]), are sorted by their frame at depth d
 * within each group; each run of equal frames is one child, made (a fresh
 * tree: no lookup, the child index is rebuilt when next needed) or looked
 * up (child_of) once. No per-frame hash lookup.
 *
 * Many stacks (over wt_flame_bulk_cols_frames frames): the frames are first copied
 * a depth at a time (cols: depth d holds the frame of every stack deeper
 * than d, the stacks ranked deepest first so that they are a prefix), so
 * the one read per stack and depth that is out of order (groups are in
 * call-path order, not stack order) falls in one depth's 4 bytes per
 * stack instead of anywhere in the stacks' ids (1 M stacks of 11 frames:
 * 350 -> 290 ms in bench/bench_flame; 100 k: 20 -> 22 ms, so not below).
 * A record's pos is its rank there, else the offset of its ids. */
static int tree_bulk(wt_flame *f, const uint32_t *ids, const uint32_t *off, const uint32_t *len,
		     const int64_t *values, size_t n)
{
	bulk_rec *cur = NULL, *next = NULL, *t;
	uint64_t *v = NULL, *tmp = NULL;
	uint32_t *cols = NULL, *rank = NULL;
	size_t *base = NULL, *at = NULL;
	size_t ncur = 0, i, k, d, g0, g1, j, j2, maxlen = 0, total = 0;
	unsigned name_bits = 1;
	int fresh = f->nnodes == 1, rc = WT_ENOMEM;

	while (name_bits < 32 && ((size_t)1 << name_bits) < f->nnames)
		name_bits++;
	for (i = 0; i < n; i++) {
		if (len[i] > maxlen)
			maxlen = len[i];
		total += len[i];
	}
	if (!(cur = malloc(n * sizeof(*cur))) || !(next = malloc(n * sizeof(*next))) ||
	    !(v = malloc(n * sizeof(*v))) || !(tmp = malloc(n * sizeof(*tmp))))
		goto out;
	if (total <= wt_flame_bulk_cols_frames)
		goto place;
	if (!(rank = malloc(n * sizeof(*rank))) || !(cols = malloc(total * sizeof(*cols))) ||
	    !(base = calloc(maxlen + 1, sizeof(*base))) || !(at = calloc(maxlen + 2, sizeof(*at))))
		goto out;
	/* rank: deepest first (stable); base[d]: where depth d starts in
	 * cols, which holds one frame for each of the stacks deeper than d */
	for (i = 0; i < n; i++)
		at[len[i]]++; /* at[l]: stacks of len l */
	for (k = 0, d = maxlen + 1; d-- > 0;) {
		size_t c = at[d];
		at[d] = k;
		k += c;
	}
	for (i = 0; i < n; i++)
		rank[i] = (uint32_t)at[len[i]]++;
	/* at[l] is now the number of stacks of len >= l: depth d holds at[d + 1] */
	for (d = 1; d < maxlen; d++)
		base[d] = base[d - 1] + at[d];
	for (i = 0; i < n; i++)
		for (d = 0; d < len[i]; d++)
			cols[base[d] + rank[i]] = ids[off[i] + d];
place:
	for (i = 0; i < n; i++) {
		if (!len[i]) {
			f->nodes[0].self = sat_add(f->nodes[0].self, values[i]);
			continue;
		}
		cur[ncur].pos = cols ? rank[i] : off[i];
		cur[ncur].len = len[i];
		cur[ncur].node = 0;
		cur[ncur++].value = values[i];
	}
	for (d = 0; ncur; d++) {
		const uint32_t *col = cols ? cols + base[d] : ids + d;

		k = 0;
		for (g0 = 0; g0 < ncur; g0 = g1) {
			uint32_t parent = cur[g0].node;

			for (g1 = g0; g1 < ncur && cur[g1].node == parent; g1++)
				v[g1 - g0] = (uint64_t)col[cur[g1].pos] << 32 | (uint32_t)(g1 - g0);
			sort_by_name(v, g1 - g0, tmp, name_bits);
			for (j = 0; j < g1 - g0; j = j2) {
				uint32_t name = (uint32_t)(v[j] >> 32), node;
				fnode *nd;

				if (fresh ? new_child(f, parent, name, &node) : child_of(f, parent, name, &node))
					goto out;
				nd = &f->nodes[node];
				for (j2 = j; j2 < g1 - g0 && (uint32_t)(v[j2] >> 32) == name; j2++) {
					const bulk_rec *r = &cur[g0 + (uint32_t)v[j2]];

					nd->total = sat_add(nd->total, r->value);
					if (r->len == d + 1) {
						nd->self = sat_add(nd->self, r->value);
					} else {
						next[k] = *r;
						next[k++].node = node;
					}
				}
			}
		}
		t = cur, cur = next, next = t;
		ncur = k;
	}
	rc = 0;
out:
	if (fresh && f->nnodes > 1)
		f->child_stale = 1;
	free(cur);
	free(next);
	free(v);
	free(tmp);
	free(rank);
	free(cols);
	free(base);
	free(at);
	return rc;
}

int wt_flame_add_stacks(wt_flame *f, const uint32_t *ids, const uint32_t *off, const uint32_t *len,
			const int64_t *values, size_t n)
{
	size_t i, j;
	int rc = 0, st;

	if (n >= UINT32_MAX)
		return WT_ENOMEM;
	for (i = 0; i < n; i++)
		for (j = 0; j < len[i]; j++)
			if (ids[off[i] + j] >= f->nnames)
				return WT_EINVAL;
	if (!n)
		return 0;
	/* functions and edges (and the root's total) stack by stack, as
	 * wt_flame_add_ids does them; the tree below in one pass */
	st = f->skip_tree;
	f->skip_tree = 1;
	if (!f->skip_fns || !f->skip_edges) {
		for (i = 0; i < n && !rc; i++)
			rc = add_ids(f, ids + off[i], len[i], values[i]);
	} else {
		for (i = 0; i < n; i++)
			f->nodes[0].total = sat_add(f->nodes[0].total, values[i]);
	}
	f->skip_tree = st;
	/* the previous-stack shortcut of add_ids holds root nodes now */
	f->prev_n = 0;
	if (!rc && !f->skip_tree)
		rc = tree_bulk(f, ids, off, len, values, n);
	return rc;
}

size_t wt_flame_nnames(const wt_flame *f)
{
	return f->nnames;
}

int wt_flame_fn(const wt_flame *f, size_t id, const char **name, int64_t *self, int64_t *total)
{
	if (id >= f->nnames || !f->fmark[id])
		return 0;
	*name = fname(f, (uint32_t)id);
	*self = f->fself[id];
	*total = f->ftotal[id];
	return 1;
}

int wt_flame_add_profile(wt_flame *f, const wt_profile *p, size_t type_idx, wt_err *err)
{
	uint32_t *fmap = NULL;
	int64_t *sum = NULL;
	uint8_t *seen = NULL;
	char nbuf[256];
	size_t i, j;
	int rc = 0;

	if (!p->nsamples)
		return 0;
	if (type_idx >= p->ntypes)
		return wt_err_set(err, WT_EINVAL, "flame: sample type index %zu out of range (%zu types)",
				  type_idx, p->ntypes);
	if (!(fmap = malloc((p->nframes ? p->nframes : 1) * sizeof(*fmap))) ||
	    !(sum = calloc(p->nstacks, sizeof(*sum))) || !(seen = calloc(p->nstacks, 1)))
		goto oom;
	for (i = 0; i < p->nframes; i++)
		if (name_intern(f, wt_profile_frame_name(p, (uint32_t)i, nbuf, sizeof(nbuf)), &fmap[i]))
			goto oom;
	/* merge samples per stack first: labels and times do not matter here */
	for (i = 0; i < p->nsamples; i++) {
		uint32_t s = p->samples[i].stack;

		sum[s] = sat_add(sum[s], wt_profile_values(p, i)[type_idx]);
		seen[s] = 1;
	}
	for (i = 0; i < p->nstacks; i++) {
		const uint32_t *fr;
		size_t n;

		if (!seen[i])
			continue;
		fr = wt_profile_stack(p, (uint32_t)i, &n);
		if (ensure_ids(f, n))
			goto oom;
		for (j = 0; j < n; j++)
			f->ids[j] = fmap[fr[n - 1 - j]]; /* leaf first → root first */
		if (add_ids(f, f->ids, n, sum[i]))
			goto oom;
	}
	goto cleanup;
oom:
	rc = wt_err_set(err, WT_ENOMEM, "flame: out of memory");
cleanup:
	free(fmap);
	free(sum);
	free(seen);
	return rc;
}

int64_t wt_flame_total(const wt_flame *f)
{
	return f->nodes[0].total;
}

/* ---- JSON ---------------------------------------------------------------------------- */

static json_t *unit_json(const char *unit)
{
	return unit ? json_string(unit) : json_null();
}

/* Max-heap of node ids by total; ties by call path (node_path_cmp), so
 * where a tree is cut does not depend on the order its stacks were added
 * in (wt_flame_add_stacks numbers nodes otherwise than wt_flame_add). */
typedef struct heap {
	uint32_t *v;
	size_t n;
	const wt_flame *f;
} heap;

static size_t node_depth(const fnode *nodes, uint32_t x)
{
	size_t d = 0;

	for (; x; x = nodes[x].parent)
		d++;
	return d;
}

/* Order of distinct nodes a and b: the shallower first, else by their
 * call paths root first (names compared where the paths part; siblings
 * have distinct names). <0: a first. */
static int node_path_cmp(const wt_flame *f, uint32_t a, uint32_t b)
{
	const fnode *nodes = f->nodes;
	size_t da = node_depth(nodes, a), db = node_depth(nodes, b);

	if (da != db)
		return da < db ? -1 : 1;
	while (nodes[a].parent != nodes[b].parent) {
		a = nodes[a].parent;
		b = nodes[b].parent;
	}
	return strcmp(f->pool + f->name_off[nodes[a].name], f->pool + f->name_off[nodes[b].name]);
}

static int heap_less(const heap *h, uint32_t a, uint32_t b) /* a ranks below b */
{
	const fnode *nodes = h->f->nodes;

	if (nodes[a].total != nodes[b].total)
		return nodes[a].total < nodes[b].total;
	return a != b && node_path_cmp(h->f, a, b) > 0;
}

static void heap_push(heap *h, uint32_t x)
{
	size_t i = h->n++;

	while (i && heap_less(h, h->v[(i - 1) / 2], x)) {
		h->v[i] = h->v[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	h->v[i] = x;
}

static uint32_t heap_pop(heap *h)
{
	uint32_t top = h->v[0], x = h->v[--h->n];
	size_t i = 0;

	for (;;) {
		size_t c = 2 * i + 1;

		if (c >= h->n)
			break;
		if (c + 1 < h->n && heap_less(h, h->v[c], h->v[c + 1]))
			c++;
		if (!heap_less(h, x, h->v[c]))
			break;
		h->v[i] = h->v[c];
		i = c;
	}
	if (h->n)
		h->v[i] = x;
	return top;
}

/* qsort_r comparators: the builder is the context (no globals, so views
 * may be rendered from several threads at once). */
static int child_name_cmp(const void *a, const void *b, void *ctx)
{
	const wt_flame *f = ctx;
	const fnode *x = &f->nodes[*(const uint32_t *)a];
	const fnode *y = &f->nodes[*(const uint32_t *)b];

	return strcmp(fname(f, x->name), fname(f, y->name));
}

/* The nodes a tree of at most max_nodes keeps (keep[], nnodes bytes,
 * zeroed by the caller); *truncated when some are dropped. 0 or WT_ENOMEM. */
static int tree_keep(const wt_flame *f, size_t max_nodes, uint8_t *keep, int *truncated)
{
	heap h = {NULL, 0, f};
	size_t i;

	*truncated = 0;
	if (!max_nodes || f->nnodes <= max_nodes) {
		memset(keep, 1, f->nnodes);
		return 0;
	}
	/* grow the kept set from the root, always taking the biggest
	 * frontier node: the result is connected and drops the smallest
	 * subtrees */
	*truncated = 1;
	if (!(h.v = malloc(f->nnodes * sizeof(*h.v))))
		return WT_ENOMEM;
	heap_push(&h, 0);
	for (i = 0; i < max_nodes && h.n; i++) {
		uint32_t x = heap_pop(&h), c;

		keep[x] = 1;
		for (c = f->nodes[x].first_child; c != UINT32_MAX; c = f->nodes[c].next_sibling)
			heap_push(&h, c);
	}
	free(h.v);
	return 0;
}

json_t *wt_flame_tree_json(const wt_flame *f, const char *unit, size_t max_nodes)
{
	uint8_t *keep = NULL;
	json_t **kids = NULL; /* node → its "children" array */
	uint32_t *stack = NULL, *tmp = NULL;
	size_t sp = 0, i;
	json_t *root = NULL, *doc = NULL;
	int truncated = 0;

	if (!(keep = calloc(f->nnodes, 1)) || !(kids = calloc(f->nnodes, sizeof(*kids))) ||
	    !(stack = malloc(f->nnodes * sizeof(*stack))) || !(tmp = malloc(f->nnodes * sizeof(*tmp))) ||
	    tree_keep(f, max_nodes, keep, &truncated))
		goto fail;
	/* iterative pre-order walk; children sorted by name */
	stack[sp++] = 0;
	while (sp) {
		uint32_t x = stack[--sp], c;
		const fnode *n = &f->nodes[x];
		int64_t self = n->self;
		size_t nk = 0;
		json_t *obj, *arr;

		for (c = n->first_child; c != UINT32_MAX; c = f->nodes[c].next_sibling) {
			if (keep[c])
				tmp[nk++] = c;
			else
				self = sat_add(self, f->nodes[c].total);
		}
		arr = json_array();
		obj = json_pack("{s:o,s:I,s:I}", "name", wt_json_string(fname(f, n->name)), "self", (json_int_t)self,
				"total", (json_int_t)n->total);
		if (!arr || !obj || json_object_set_new(obj, "children", arr)) {
			json_decref(obj);
			goto fail;
		}
		if (x == 0)
			root = obj;
		else if (json_array_append_new(kids[n->parent], obj))
			goto fail;
		kids[x] = arr; /* borrowed: owned by obj */
		qsort_r(tmp, nk, sizeof(*tmp), child_name_cmp, (void *)f);
		for (i = nk; i > 0; i--)
			stack[sp++] = tmp[i - 1];
	}
	doc = json_pack("{s:o,s:I,s:b,s:o}", "unit", unit_json(unit), "total",
			(json_int_t)f->nodes[0].total, "truncated", truncated, "root", root);
	root = NULL;
fail:
	json_decref(root);
	free(keep);
	free(kids);
	free(stack);
	free(tmp);
	return doc;
}

/* Decimal of v. */
static void put_i64(wt_buf *b, int64_t v)
{
	char d[24], *e = d + sizeof(d), *q = e;
	uint64_t u = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;

	do {
		*--q = (char)('0' + u % 10);
		u /= 10;
	} while (u);
	if (v < 0)
		*--q = '-';
	wt_buf_append(b, q, (size_t)(e - q));
}

#define TEXT_CLOSE 0x80000000u /* stack entry: close the node's children and object */
#define TEXT_COMMA 0x40000000u /* stack entry: a sibling was written before it */

int wt_flame_tree_text(const wt_flame *f, const char *unit, size_t max_nodes, const char *extra, wt_buf *out)
{
	uint8_t *keep = NULL;
	uint32_t *stack = NULL, *tmp = NULL;
	size_t sp = 0, i;
	int truncated = 0, rc = WT_ENOMEM;

	if (f->nnodes >= TEXT_COMMA)
		return WT_ELIMIT;
	if (!(keep = calloc(f->nnodes, 1)) || !(stack = malloc(2 * f->nnodes * sizeof(*stack))) ||
	    !(tmp = malloc(f->nnodes * sizeof(*tmp))) || tree_keep(f, max_nodes, keep, &truncated))
		goto out;
	/* about 60 bytes a node: one allocation for most trees */
	if (wt_buf_reserve(out, f->nnodes * 64 + 256))
		goto out;
	wt_buf_puts(out, "{\"unit\":");
	if (unit)
		wt_buf_json_str(out, unit);
	else
		wt_buf_puts(out, "null");
	wt_buf_puts(out, ",\"total\":");
	put_i64(out, f->nodes[0].total);
	wt_buf_puts(out, truncated ? ",\"truncated\":true,\"root\":" : ",\"truncated\":false,\"root\":");
	/* iterative pre-order walk, children sorted by name, as
	 * wt_flame_tree_json; a CLOSE entry below a node's children ends it */
	stack[sp++] = 0;
	while (sp) {
		uint32_t e = stack[--sp], x = e & ~(TEXT_CLOSE | TEXT_COMMA), c;
		const fnode *n = &f->nodes[x];
		int64_t self = n->self;
		size_t nk = 0;

		if (e & TEXT_CLOSE) {
			wt_buf_puts(out, "]}");
			continue;
		}
		for (c = n->first_child; c != UINT32_MAX; c = f->nodes[c].next_sibling) {
			if (keep[c])
				tmp[nk++] = c;
			else
				self = sat_add(self, f->nodes[c].total);
		}
		wt_buf_puts(out, e & TEXT_COMMA ? ",{\"name\":" : "{\"name\":");
		wt_buf_json_str(out, fname(f, n->name));
		wt_buf_puts(out, ",\"self\":");
		put_i64(out, self);
		wt_buf_puts(out, ",\"total\":");
		put_i64(out, n->total);
		wt_buf_puts(out, ",\"children\":[");
		stack[sp++] = x | TEXT_CLOSE;
		qsort_r(tmp, nk, sizeof(*tmp), child_name_cmp, (void *)f);
		for (i = nk; i > 0; i--)
			stack[sp++] = tmp[i - 1] | (i > 1 ? TEXT_COMMA : 0);
	}
	if (extra)
		wt_buf_puts(out, extra);
	wt_buf_putc(out, '}');
	rc = out->oom ? WT_ENOMEM : 0;
out:
	free(keep);
	free(stack);
	free(tmp);
	return rc;
}

static int fn_rank_cmp(const void *a, const void *b, void *ctx)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	const wt_flame *f = ctx;

	if (f->fself[x] != f->fself[y])
		return f->fself[x] > f->fself[y] ? -1 : 1;
	if (f->ftotal[x] != f->ftotal[y])
		return f->ftotal[x] > f->ftotal[y] ? -1 : 1;
	return strcmp(fname(f, x), fname(f, y));
}

static int fn_total_cmp(const void *a, const void *b, void *ctx)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	const wt_flame *f = ctx;

	if (f->ftotal[x] != f->ftotal[y])
		return f->ftotal[x] > f->ftotal[y] ? -1 : 1;
	return fn_rank_cmp(a, b, ctx);
}

/* Function ids that appeared in some stack (not the root's name unless a
 * frame was literally named so), sorted with cmp; limit > 0: only the first
 * limit of that order are sorted and *n is at most limit. */
static uint32_t *functions_sorted(const wt_flame *f, int (*cmp)(const void *, const void *, void *),
				  size_t limit, size_t *n)
{
	uint32_t *ids = malloc((f->nnames ? f->nnames : 1) * sizeof(*ids));
	size_t i, k = 0;

	if (!ids)
		return NULL;
	for (i = 0; i < f->nnames; i++)
		if (f->fmark[i])
			ids[k++] = (uint32_t)i;
	if (limit && k > limit) {
		wt_select_top(ids, k, sizeof(*ids), limit, cmp, (void *)f);
		k = limit;
	}
	qsort_r(ids, k, sizeof(*ids), cmp, (void *)f);
	*n = k;
	return ids;
}

json_t *wt_flame_table_json(const wt_flame *f, const char *unit, size_t limit)
{
	size_t n, i;
	uint32_t *ids = functions_sorted(f, fn_rank_cmp, limit, &n);
	json_t *rows = json_array(), *doc = NULL;

	if (!ids || !rows)
		goto cleanup;
	if (limit && n > limit)
		n = limit;
	for (i = 0; i < n; i++) {
		json_t *r = json_pack("{s:o,s:I,s:I}", "function", wt_json_string(fname(f, ids[i])), "self",
				      (json_int_t)f->fself[ids[i]], "total", (json_int_t)f->ftotal[ids[i]]);

		if (!r || json_array_append_new(rows, r))
			goto cleanup;
	}
	doc = json_pack("{s:o,s:I,s:o}", "unit", unit_json(unit), "total",
			(json_int_t)f->nodes[0].total, "rows", rows);
	rows = NULL;
cleanup:
	json_decref(rows);
	free(ids);
	return doc;
}

static int edge_cmp(const void *a, const void *b)
{
	const fedge *x = a, *y = b;

	if (x->value != y->value)
		return x->value > y->value ? -1 : 1;
	if (x->from != y->from)
		return x->from < y->from ? -1 : 1;
	return x->to < y->to ? -1 : x->to > y->to;
}

json_t *wt_flame_callgraph_json(const wt_flame *f, const char *unit, size_t max_nodes)
{
	size_t n, i, k = 0, total_fn;
	uint32_t *ids = functions_sorted(f, fn_total_cmp, 0, &n);
	uint32_t *out_id = NULL; /* name id → node id in the output, or UINT32_MAX */
	fedge *es = NULL;
	json_t *nodes = json_array(), *edges = json_array(), *doc = NULL;

	if (!ids || !nodes || !edges)
		goto cleanup;
	total_fn = n;
	if (max_nodes && n > max_nodes)
		n = max_nodes;
	if (!(out_id = malloc((f->nnames ? f->nnames : 1) * sizeof(*out_id))))
		goto cleanup;
	memset(out_id, 0xff, (f->nnames ? f->nnames : 1) * sizeof(*out_id));
	for (i = 0; i < n; i++) {
		json_t *o = json_pack("{s:I,s:o,s:I,s:I}", "id", (json_int_t)i, "function",
				      wt_json_string(fname(f, ids[i])), "self", (json_int_t)f->fself[ids[i]], "total",
				      (json_int_t)f->ftotal[ids[i]]);

		if (!o || json_array_append_new(nodes, o))
			goto cleanup;
		out_id[ids[i]] = (uint32_t)i;
	}
	if (f->nedges && !(es = malloc(f->nedges * sizeof(*es))))
		goto cleanup;
	for (i = 0; i < f->nedges; i++) {
		const fedge *e = &f->edges[i];

		if (out_id[e->from] == UINT32_MAX || out_id[e->to] == UINT32_MAX)
			continue;
		es[k] = *e;
		es[k].from = out_id[e->from];
		es[k].to = out_id[e->to];
		k++;
	}
	if (k)
		qsort(es, k, sizeof(*es), edge_cmp);
	for (i = 0; i < k; i++) {
		json_t *o = json_pack("{s:I,s:I,s:I}", "from", (json_int_t)es[i].from, "to",
				      (json_int_t)es[i].to, "value", (json_int_t)es[i].value);

		if (!o || json_array_append_new(edges, o))
			goto cleanup;
	}
	doc = json_pack("{s:o,s:I,s:b,s:o,s:o}", "unit", unit_json(unit), "total",
			(json_int_t)f->nodes[0].total, "truncated", total_fn > n, "nodes", nodes,
			"edges", edges);
	nodes = edges = NULL;
cleanup:
	json_decref(nodes);
	json_decref(edges);
	free(ids);
	free(out_id);
	free(es);
	return doc;
}
