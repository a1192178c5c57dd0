/*
 * stacklru.c — the frame dictionary and bytes-bounded LRU of stacks as
 * frame ids (see stacklru.h): stack entries in a slot array indexed by a
 * common/u64map.h map (key → slot), which also sit on a recency list
 * (common/lru.h; put() evicts from the tail until the new entry fits), and
 * per generation a name pool with an xxh3(name) → id map (collisions
 * chained through next[]).
 */
#include "stacklru.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "err.h"
#include "lru.h"
#include "u64map.h"

typedef struct entry {
	wt_lru_node lru;           /* on hub_stacklru.lru */
	uint32_t slot;             /* in hub_stacklru.ents */
	uint64_t key;
	size_t nframes;
	uint32_t ids[];
} entry;

#define ENTRY_OVERHEAD (sizeof(entry) + 16)
/* per name: offset, chain link, hash-map slot (half full) */
#define NAME_OVERHEAD (4 + 4 + 2 * 12)

struct hub_framedict {
	int refs;       /* queries holding it, + 1 while current */
	char *pool;     /* names, NUL-terminated */
	size_t pool_len, pool_cap;
	uint32_t *off, *next; /* per id: offset into pool, next id of the same hash */
	size_t n, cap;
	wt_u64map idx;  /* xxh3(name) → first id */
	size_t bytes;
};

struct hub_stacklru {
	pthread_mutex_t mu;
	wt_u64map idx;     /* key → slot in ents */
	struct ent_slot {
		entry *e;           /* NULL: free */
		uint32_t next_free; /* free slots chained from free1 - 1 */
	} *ents;
	size_t ents_n, ents_cap;
	uint32_t free1;    /* first free slot + 1 (0: none) */
	wt_lru lru;        /* head = newest */
	size_t bytes, max_bytes, n;
	hub_framedict *cur;
};

#define LRU_ENTRY(n) wt_lru_entry(n, entry, lru)

hub_stacklru *hub_stacklru_new(size_t max_bytes)
{
	hub_stacklru *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->max_bytes = max_bytes;
	pthread_mutex_init(&c->mu, NULL);
	return c;
}

static void dict_free(hub_framedict *d)
{
	if (!d)
		return;
	free(d->pool);
	free(d->off);
	free(d->next);
	wt_u64map_free(&d->idx);
	free(d);
}

static void dict_unref(hub_framedict *d)
{
	if (d && --d->refs == 0)
		dict_free(d);
}

static void drop_all(hub_stacklru *c)
{
	wt_lru_node *n, *nx;

	for (n = c->lru.head; n; n = nx) {
		nx = n->next;
		free(LRU_ENTRY(n));
	}
	wt_u64map_clear(&c->idx);
	c->ents_n = 0;
	c->free1 = 0;
	c->lru.head = c->lru.tail = NULL;
	c->bytes = 0;
	c->n = 0;
}

void hub_stacklru_free(hub_stacklru *c)
{
	if (!c)
		return;
	drop_all(c);
	dict_unref(c->cur);
	wt_u64map_free(&c->idx);
	free(c->ents);
	pthread_mutex_destroy(&c->mu);
	free(c);
}

uint64_t hub_stacklru_key(const char *project, uint64_t stack_id)
{
	uint64_t k = XXH3_64bits_withSeed(project, strlen(project), stack_id);
	return k;
}

hub_framedict *hub_stacklru_acquire(hub_stacklru *c)
{
	hub_framedict *d;

	pthread_mutex_lock(&c->mu);
	if (!c->cur && (c->cur = calloc(1, sizeof(*c->cur))))
		c->cur->refs = 1;
	d = c->cur;
	if (d)
		d->refs++;
	pthread_mutex_unlock(&c->mu);
	return d;
}

void hub_stacklru_release(hub_stacklru *c, hub_framedict *d)
{
	pthread_mutex_lock(&c->mu);
	dict_unref(d);
	pthread_mutex_unlock(&c->mu);
}

/* The entry of key, or NULL. */
static entry *find(const hub_stacklru *c, uint64_t key)
{
	uint32_t i;

	return wt_u64map_get(&c->idx, key, &i) ? c->ents[i].e : NULL;
}

static size_t entry_bytes(const entry *e)
{
	return e->nframes * sizeof(uint32_t) + ENTRY_OVERHEAD;
}

static void drop(hub_stacklru *c, entry *e)
{
	wt_u64map_del(&c->idx, e->key, NULL);
	c->ents[e->slot].e = NULL;
	c->ents[e->slot].next_free = c->free1;
	c->free1 = e->slot + 1;
	wt_lru_unlink(&c->lru, &e->lru);
	c->bytes -= entry_bytes(e);
	c->n--;
	free(e);
}

int hub_stacklru_get(hub_stacklru *c, hub_framedict *d, uint64_t key, wt_buf *ids, size_t *nframes)
{
	entry *e;
	int found = 0;

	pthread_mutex_lock(&c->mu);
	if (d == c->cur && (e = find(c, key))) {
		wt_lru_touch(&c->lru, &e->lru);
		found = wt_buf_append(ids, e->ids, e->nframes * sizeof(uint32_t)) == 0;
		*nframes = e->nframes;
	}
	pthread_mutex_unlock(&c->mu);
	return found;
}

/* keys looked up together by hub_stacklru_get_many: each stage's memory
 * (index slots, entry slots, entries, their recency-list neighbours) is
 * prefetched for the whole chunk before the next stage reads it, so the
 * cache misses of a chunk overlap instead of following one another */
#define GET_CHUNK 32

int hub_stacklru_get_many(hub_stacklru *c, hub_framedict *d, const uint64_t *keys, size_t n, wt_buf *ids,
			  size_t *off, size_t *nframes)
{
	size_t i, j, m;
	int rc = 0;
	entry *es[GET_CHUNK];
	uint32_t sl[GET_CHUNK];

	pthread_mutex_lock(&c->mu);
	for (i = 0; i < n && !rc; i += m) {
		m = n - i < GET_CHUNK ? n - i : GET_CHUNK;
		for (j = 0; j < m; j++)
			nframes[i + j] = SIZE_MAX;
		if (d != c->cur || !c->idx.cap)
			continue;
		for (j = 0; j < m; j++) {
			size_t h = wt_u64map_mix(keys[i + j]) & (c->idx.cap - 1);
			__builtin_prefetch(&c->idx.keys[h]);
			__builtin_prefetch(&c->idx.vals[h]);
		}
		for (j = 0; j < m; j++)
			if (wt_u64map_get(&c->idx, keys[i + j], &sl[j]))
				__builtin_prefetch(&c->ents[sl[j]]);
			else
				sl[j] = UINT32_MAX;
		for (j = 0; j < m; j++) {
			es[j] = sl[j] == UINT32_MAX ? NULL : c->ents[sl[j]].e;
			if (es[j]) {
				__builtin_prefetch(es[j], 1);
				__builtin_prefetch((const char *)es[j] + 64);
			}
		}
		for (j = 0; j < m; j++)
			if (es[j]) {
				if (es[j]->lru.prev)
					__builtin_prefetch(es[j]->lru.prev, 1);
				if (es[j]->lru.next)
					__builtin_prefetch(es[j]->lru.next, 1);
			}
		for (j = 0; j < m; j++) {
			entry *e = es[j];

			if (!e)
				continue;
			wt_lru_touch(&c->lru, &e->lru);
			off[i + j] = ids->len / sizeof(uint32_t);
			if (wt_buf_append(ids, e->ids, e->nframes * sizeof(uint32_t))) {
				rc = WT_ENOMEM;
				break;
			}
			nframes[i + j] = e->nframes;
		}
	}
	pthread_mutex_unlock(&c->mu);
	return rc;
}

/* id of name (len bytes, no NUL) in d, added when new; under c->mu */
static int intern(hub_framedict *d, const char *name, size_t len, uint32_t *id)
{
	uint64_t h = XXH3_64bits(name, len);
	size_t slot;
	uint32_t i;

	if (wt_u64map_slot(&d->idx, h, &slot))
		return WT_ENOMEM;
	for (i = d->idx.vals[slot]; i != WT_U64MAP_EMPTY; i = d->next[i])
		if (!memcmp(d->pool + d->off[i], name, len) && d->pool[d->off[i] + len] == '\0') {
			*id = i;
			return 0;
		}
	if (d->n >= UINT32_MAX - 1 || d->pool_len + len + 1 > UINT32_MAX)
		return WT_ENOMEM;
	if (d->n == d->cap) {
		size_t nc = d->cap ? d->cap * 2 : 1024;
		uint32_t *a = realloc(d->off, nc * sizeof(*a)), *b;
		if (!a)
			return WT_ENOMEM;
		d->off = a;
		if (!(b = realloc(d->next, nc * sizeof(*b))))
			return WT_ENOMEM;
		d->next = b;
		d->cap = nc;
	}
	if (d->pool_len + len + 1 > d->pool_cap) {
		size_t nc = d->pool_cap ? d->pool_cap : 65536;
		char *p;
		while (nc < d->pool_len + len + 1)
			nc *= 2;
		if (!(p = realloc(d->pool, nc)))
			return WT_ENOMEM;
		d->pool = p;
		d->pool_cap = nc;
	}
	*id = (uint32_t)d->n;
	d->off[d->n] = (uint32_t)d->pool_len;
	memcpy(d->pool + d->pool_len, name, len);
	d->pool[d->pool_len + len] = '\0';
	d->pool_len += len + 1;
	d->next[d->n] = d->idx.vals[slot];
	if (d->idx.vals[slot] == WT_U64MAP_EMPTY) {
		d->idx.keys[slot] = h;
		d->idx.n++;
	}
	d->idx.vals[slot] = *id;
	d->n++;
	d->bytes += len + 1 + NAME_OVERHEAD;
	return 0;
}

/* Index e under its key in a free slot (c->mu held; key not present). 0 or
 * WT_ENOMEM (nothing changed). */
static int index_entry(hub_stacklru *c, entry *e)
{
	size_t slot;

	if (!c->free1 && c->ents_n == c->ents_cap) {
		/* first: room for an entry per KiB of budget (1024 to 2^20;
		 * the index sized with it), so a filling cache seldom rehashes */
		size_t nc = c->ents_cap ? c->ents_cap * 2 : c->max_bytes / 1024;
		struct ent_slot *ne;

		if (!c->ents_cap)
			nc = nc < 1024 ? 1024 : nc > ((size_t)1 << 20) ? (size_t)1 << 20 : nc;
		if (nc > UINT32_MAX - 1 || !(ne = realloc(c->ents, nc * sizeof(*ne))))
			return WT_ENOMEM;
		c->ents = ne;
		c->ents_cap = nc;
		if (wt_u64map_reserve(&c->idx, nc))
			return WT_ENOMEM;
	}
	if (wt_u64map_slot(&c->idx, e->key, &slot))
		return WT_ENOMEM;
	if (c->free1) {
		e->slot = c->free1 - 1;
		c->free1 = c->ents[e->slot].next_free;
	} else {
		e->slot = (uint32_t)c->ents_n++;
	}
	c->ents[e->slot].e = e;
	c->idx.keys[slot] = e->key;
	c->idx.vals[slot] = e->slot;
	c->idx.n++;
	return 0;
}

int hub_stacklru_put(hub_stacklru *c, hub_framedict *d, uint64_t key, const char *names, size_t len,
		     size_t nframes, wt_buf *ids)
{
	entry *e = NULL, *old;
	size_t i, pos = 0, start = ids->len, need = nframes * sizeof(uint32_t) + ENTRY_OVERHEAD;
	int rc = 0;

	pthread_mutex_lock(&c->mu);
	for (i = 0; i < nframes && pos < len; i++) {
		size_t l = strnlen(names + pos, len - pos);
		uint32_t id;

		if ((rc = intern(d, names + pos, l, &id)))
			goto out;
		if (wt_buf_append(ids, &id, sizeof(id))) {
			rc = WT_ENOMEM;
			goto out;
		}
		pos += l + 1;
	}
	nframes = i;
	if (d != c->cur)
		goto out; /* a retired generation: this query's own use only */
	if (d->bytes > c->max_bytes / 2) {
		/* the dictionary outgrew its half: start a new generation */
		drop_all(c);
		c->cur = NULL;
		dict_unref(d);
		goto out;
	}
	need = nframes * sizeof(uint32_t) + ENTRY_OVERHEAD;
	if (need > c->max_bytes - c->max_bytes / 2 || !(e = malloc(sizeof(*e) + nframes * sizeof(uint32_t))))
		goto out;
	e->key = key;
	e->nframes = nframes;
	memcpy(e->ids, ids->data + start, nframes * sizeof(uint32_t));
	if ((old = find(c, key)))
		drop(c, old);
	while (c->lru.tail && c->bytes + need > c->max_bytes - c->max_bytes / 2)
		drop(c, LRU_ENTRY(c->lru.tail));
	if (index_entry(c, e)) {
		free(e); /* caching is optional: the ids are in *ids already */
		goto out;
	}
	wt_lru_push(&c->lru, &e->lru);
	c->bytes += need;
	c->n++;
out:
	pthread_mutex_unlock(&c->mu);
	return rc;
}

int hub_stacklru_names(hub_stacklru *c, hub_framedict *d, const uint32_t *ids, size_t n, wt_buf *out,
		       size_t *offs)
{
	size_t i;
	int rc = 0;

	pthread_mutex_lock(&c->mu);
	for (i = 0; i < n && !rc; i++) {
		const char *s;

		if (ids[i] >= d->n) {
			rc = WT_EINVAL;
			break;
		}
		s = d->pool + d->off[ids[i]];
		offs[i] = out->len;
		if (wt_buf_append(out, s, strlen(s) + 1))
			rc = WT_ENOMEM;
	}
	pthread_mutex_unlock(&c->mu);
	return rc;
}

void hub_stacklru_usage(hub_stacklru *c, size_t *bytes, size_t *entries)
{
	pthread_mutex_lock(&c->mu);
	*bytes = c->bytes + (c->cur ? c->cur->bytes : 0);
	*entries = c->n;
	pthread_mutex_unlock(&c->mu);
}
