/*
 * stacklru.c — bytes-bounded LRU of stack frames (see stacklru.h): a
 * chained hash table of entries that also sit on a doubly linked recency
 * list; put() evicts from the tail until the new entry fits.
 */
#include "stacklru.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

typedef struct entry {
	struct entry *hnext;       /* hash chain */
	struct entry *prev, *next; /* recency: head = newest */
	uint64_t key;
	size_t len, nframes;
	char names[];
} entry;

#define ENTRY_OVERHEAD (sizeof(entry) + 16)

struct hub_stacklru {
	pthread_mutex_t mu;
	entry **tab;
	size_t cap; /* power of two */
	entry *head, *tail;
	size_t bytes, max_bytes, n;
};

hub_stacklru *hub_stacklru_new(size_t max_bytes)
{
	hub_stacklru *c = calloc(1, sizeof(*c));
	size_t cap = 1024;

	if (!c)
		return NULL;
	/* about one bucket per 256 bytes of budget, at most 2^22 */
	while (cap < max_bytes / 256 && cap < ((size_t)1 << 22))
		cap <<= 1;
	c->tab = calloc(cap, sizeof(*c->tab));
	if (!c->tab) {
		free(c);
		return NULL;
	}
	c->cap = cap;
	c->max_bytes = max_bytes;
	pthread_mutex_init(&c->mu, NULL);
	return c;
}

void hub_stacklru_free(hub_stacklru *c)
{
	entry *e, *nx;

	if (!c)
		return;
	for (e = c->head; e; e = nx) {
		nx = e->next;
		free(e);
	}
	free(c->tab);
	pthread_mutex_destroy(&c->mu);
	free(c);
}

uint64_t hub_stacklru_key(const char *project, uint64_t stack_id)
{
	uint64_t k = XXH3_64bits_withSeed(project, strlen(project), stack_id);
	return k;
}

static entry **slot_of(hub_stacklru *c, uint64_t key)
{
	entry **p = &c->tab[(key ^ (key >> 29)) & (c->cap - 1)];

	while (*p && (*p)->key != key)
		p = &(*p)->hnext;
	return p;
}

static void list_unlink(hub_stacklru *c, entry *e)
{
	if (e->prev)
		e->prev->next = e->next;
	else
		c->head = e->next;
	if (e->next)
		e->next->prev = e->prev;
	else
		c->tail = e->prev;
	e->prev = e->next = NULL;
}

static void list_push(hub_stacklru *c, entry *e)
{
	e->prev = NULL;
	e->next = c->head;
	if (c->head)
		c->head->prev = e;
	c->head = e;
	if (!c->tail)
		c->tail = e;
}

static void drop(hub_stacklru *c, entry *e)
{
	entry **p = slot_of(c, e->key);

	if (*p == e)
		*p = e->hnext;
	list_unlink(c, e);
	c->bytes -= e->len + ENTRY_OVERHEAD;
	c->n--;
	free(e);
}

int hub_stacklru_get(hub_stacklru *c, uint64_t key, wt_buf *out, size_t *nframes)
{
	entry *e;
	int found = 0;

	pthread_mutex_lock(&c->mu);
	e = *slot_of(c, key);
	if (e) {
		list_unlink(c, e);
		list_push(c, e);
		found = wt_buf_append(out, e->names, e->len) == 0;
		*nframes = e->nframes;
	}
	pthread_mutex_unlock(&c->mu);
	return found;
}

void hub_stacklru_put(hub_stacklru *c, uint64_t key, const char *names, size_t len, size_t nframes)
{
	entry **p, *e;
	size_t need = len + ENTRY_OVERHEAD;

	if (need > c->max_bytes)
		return;
	e = malloc(sizeof(*e) + len);
	if (!e)
		return;
	e->key = key;
	e->len = len;
	e->nframes = nframes;
	e->hnext = NULL;
	memcpy(e->names, names, len);
	pthread_mutex_lock(&c->mu);
	if (*(p = slot_of(c, key)))
		drop(c, *p);
	while (c->tail && c->bytes + need > c->max_bytes)
		drop(c, c->tail);
	p = slot_of(c, key);
	*p = e;
	list_push(c, e);
	c->bytes += need;
	c->n++;
	pthread_mutex_unlock(&c->mu);
}

void hub_stacklru_usage(hub_stacklru *c, size_t *bytes, size_t *entries)
{
	pthread_mutex_lock(&c->mu);
	*bytes = c->bytes;
	*entries = c->n;
	pthread_mutex_unlock(&c->mu);
}
