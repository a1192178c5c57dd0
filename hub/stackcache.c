/*
 * stackcache.c — bounded set of known (project, stack_id) keys (see
 * stackcache.h): a common/u64map.h map of the mixed key, cleared when it
 * holds its bound.
 */
#include "stackcache.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "u64map.h"

struct hub_stackcache {
	pthread_mutex_t mu;
	wt_u64map set; /* mixed key → 0 */
	size_t max;    /* entries before it is cleared */
	long generation;
};

static uint64_t mix(uint64_t a, uint64_t b)
{
	uint64_t k = a ^ (b * 0x9E3779B97F4A7C15ULL);
	k ^= k >> 33;
	k *= 0xff51afd7ed558ccdULL;
	k ^= k >> 33;
	return k;
}

hub_stackcache *hub_stackcache_new(size_t capacity)
{
	hub_stackcache *c = calloc(1, sizeof(*c));
	size_t max = 512;

	if (!c)
		return NULL;
	while (max < capacity)
		max <<= 1;
	c->max = max;
	pthread_mutex_init(&c->mu, NULL);
	return c;
}

void hub_stackcache_free(hub_stackcache *c)
{
	if (!c)
		return;
	pthread_mutex_destroy(&c->mu);
	wt_u64map_free(&c->set);
	free(c);
}

int hub_stackcache_has(hub_stackcache *c, uint64_t project_hash, uint64_t stack_id, long generation)
{
	uint32_t v;
	int found;

	pthread_mutex_lock(&c->mu);
	if (generation != c->generation) {
		wt_u64map_clear(&c->set);
		c->generation = generation;
	}
	found = wt_u64map_get(&c->set, mix(project_hash, stack_id), &v);
	pthread_mutex_unlock(&c->mu);
	return found;
}

void hub_stackcache_add(hub_stackcache *c, uint64_t project_hash, uint64_t stack_id)
{
	uint64_t k = mix(project_hash, stack_id);
	size_t slot;

	pthread_mutex_lock(&c->mu);
	if (c->set.n >= c->max)
		wt_u64map_clear(&c->set);
	/* out of memory: not remembered (a miss costs a duplicate row) */
	if (!wt_u64map_slot(&c->set, k, &slot) && c->set.vals[slot] == WT_U64MAP_EMPTY) {
		c->set.keys[slot] = k;
		c->set.vals[slot] = 0;
		c->set.n++;
	}
	pthread_mutex_unlock(&c->mu);
}
