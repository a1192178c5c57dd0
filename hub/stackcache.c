/*
 * stackcache.c — bounded open-addressing set of known (project, stack_id)
 * keys (see stackcache.h).
 */
#include "stackcache.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

struct hub_stackcache {
	pthread_mutex_t mu;
	uint64_t *keys; /* 0 = empty */
	size_t cap, n;
	long generation;
};

static uint64_t mix(uint64_t a, uint64_t b)
{
	uint64_t k = a ^ (b * 0x9E3779B97F4A7C15ULL);
	k ^= k >> 33;
	k *= 0xff51afd7ed558ccdULL;
	k ^= k >> 33;
	return k ? k : 1;
}

hub_stackcache *hub_stackcache_new(size_t capacity)
{
	hub_stackcache *c = calloc(1, sizeof(*c));
	size_t cap = 1024;

	if (!c)
		return NULL;
	while (cap < capacity * 2)
		cap <<= 1;
	c->keys = calloc(cap, sizeof(uint64_t));
	if (!c->keys) {
		free(c);
		return NULL;
	}
	c->cap = cap;
	pthread_mutex_init(&c->mu, NULL);
	return c;
}

void hub_stackcache_free(hub_stackcache *c)
{
	if (!c)
		return;
	pthread_mutex_destroy(&c->mu);
	free(c->keys);
	free(c);
}

int hub_stackcache_has(hub_stackcache *c, uint64_t project_hash, uint64_t stack_id, long generation)
{
	uint64_t k = mix(project_hash, stack_id);
	size_t i;
	int found = 0;

	pthread_mutex_lock(&c->mu);
	if (generation != c->generation) {
		memset(c->keys, 0, c->cap * sizeof(uint64_t));
		c->n = 0;
		c->generation = generation;
	}
	for (i = k & (c->cap - 1); c->keys[i]; i = (i + 1) & (c->cap - 1))
		if (c->keys[i] == k) {
			found = 1;
			break;
		}
	pthread_mutex_unlock(&c->mu);
	return found;
}

void hub_stackcache_add(hub_stackcache *c, uint64_t project_hash, uint64_t stack_id)
{
	uint64_t k = mix(project_hash, stack_id);
	size_t i;

	pthread_mutex_lock(&c->mu);
	if (c->n >= c->cap / 2) {
		memset(c->keys, 0, c->cap * sizeof(uint64_t));
		c->n = 0;
	}
	for (i = k & (c->cap - 1); c->keys[i]; i = (i + 1) & (c->cap - 1))
		if (c->keys[i] == k)
			goto out;
	c->keys[i] = k;
	c->n++;
out:
	pthread_mutex_unlock(&c->mu);
}
