/*
 * viewcache.c — cache of rendered query views (viewcache.h). Entries are
 * few (each is a whole rendered view, kilobytes to megabytes), so they sit
 * in a recency list (common/lru.h), searched linearly by key.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "lru.h"
#include "prom.h"
#include "viewcache.h"

typedef struct entry {
	wt_lru_node lru; /* on hub_viewcache.lru */
	uint64_t fp;
	size_t klen, tlen;
	char *key, *text;
} entry;

struct hub_viewcache {
	pthread_mutex_t mu;
	size_t max_bytes, bytes, n;
	uint64_t hits, misses; /* lookups since start (metrics) */
	wt_lru lru; /* head = most recent */
};

#define LRU_ENTRY(n) wt_lru_entry(n, entry, lru)

#define ENTRY_OVERHEAD (sizeof(entry) + 32)

static size_t entry_bytes(const entry *e)
{
	return e->klen + e->tlen + ENTRY_OVERHEAD;
}

hub_viewcache *hub_viewcache_new(size_t max_bytes)
{
	hub_viewcache *c;

	if (!max_bytes || !(c = calloc(1, sizeof(*c))))
		return NULL;
	pthread_mutex_init(&c->mu, NULL);
	c->max_bytes = max_bytes;
	return c;
}

static void drop(hub_viewcache *c, entry *e)
{
	wt_lru_unlink(&c->lru, &e->lru);
	c->bytes -= entry_bytes(e);
	c->n--;
	free(e->key);
	free(e->text);
	free(e);
}

void hub_viewcache_free(hub_viewcache *c)
{
	if (!c)
		return;
	while (c->lru.head)
		drop(c, LRU_ENTRY(c->lru.head));
	pthread_mutex_destroy(&c->mu);
	free(c);
}

static entry *find(hub_viewcache *c, const char *key, size_t klen)
{
	wt_lru_node *n;

	for (n = c->lru.head; n; n = n->next) {
		entry *e = LRU_ENTRY(n);

		if (e->klen == klen && !memcmp(e->key, key, klen))
			return e;
	}
	return NULL;
}

int hub_viewcache_get(hub_viewcache *c, const char *key, uint64_t fp, char **text, size_t *len)
{
	entry *e;
	int hit = 0;

	*text = NULL;
	*len = 0;
	if (!c)
		return 0;
	pthread_mutex_lock(&c->mu);
	e = find(c, key, strlen(key));
	if (e && e->fp == fp && (*text = malloc(e->tlen + 1))) {
		memcpy(*text, e->text, e->tlen);
		(*text)[e->tlen] = '\0';
		*len = e->tlen;
		wt_lru_touch(&c->lru, &e->lru);
		hit = 1;
	}
	if (hit)
		c->hits++;
	else
		c->misses++;
	pthread_mutex_unlock(&c->mu);
	return hit;
}

void hub_viewcache_put(hub_viewcache *c, const char *key, uint64_t fp, const char *text, size_t len)
{
	size_t klen;
	entry *e, *old;

	if (!c)
		return;
	klen = strlen(key);
	if (klen + len + ENTRY_OVERHEAD > c->max_bytes / 4)
		return;
	if (!(e = calloc(1, sizeof(*e))) || !(e->key = malloc(klen)) || !(e->text = malloc(len ? len : 1))) {
		if (e)
			free(e->key);
		free(e);
		return; /* out of memory: simply not cached */
	}
	memcpy(e->key, key, klen);
	memcpy(e->text, text, len);
	e->klen = klen;
	e->tlen = len;
	e->fp = fp;
	pthread_mutex_lock(&c->mu);
	if ((old = find(c, key, klen)))
		drop(c, old);
	while (c->lru.tail && c->bytes + entry_bytes(e) > c->max_bytes)
		drop(c, LRU_ENTRY(c->lru.tail));
	wt_lru_push(&c->lru, &e->lru);
	c->bytes += entry_bytes(e);
	c->n++;
	pthread_mutex_unlock(&c->mu);
}

void hub_viewcache_usage(hub_viewcache *c, size_t *bytes, size_t *entries)
{
	*bytes = *entries = 0;
	if (!c)
		return;
	pthread_mutex_lock(&c->mu);
	*bytes = c->bytes;
	*entries = c->n;
	pthread_mutex_unlock(&c->mu);
}

int hub_viewcache_metrics_render(hub_viewcache *c, wt_buf *out)
{
	uint64_t hits = 0, misses = 0;
	size_t bytes = 0, n = 0;

	if (c) {
		pthread_mutex_lock(&c->mu);
		hits = c->hits;
		misses = c->misses;
		bytes = c->bytes;
		n = c->n;
		pthread_mutex_unlock(&c->mu);
	}
	wt_prom_counter(out, "wt_hub_view_cache_hits_total", "Views answered from the view cache.", hits);
	wt_prom_counter(out, "wt_hub_view_cache_misses_total",
			"Cacheable views not found in the view cache (built from ClickHouse rows).", misses);
	wt_prom_gauge(out, "wt_hub_view_cache_bytes", "Bytes held by the view cache.", (int64_t)bytes);
	wt_prom_gauge(out, "wt_hub_view_cache_entries", "Views held by the view cache.", (int64_t)n);
	return out->oom ? -2 : 0;
}
