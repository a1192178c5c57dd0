/*
 * stackcache.h — the set of (project, stack_id) pairs this hub has already
 * written to profile_stacks_v1, so repeated uploads of the same stacks do
 * not re-insert their frame arrays. Bounded: when full it is cleared
 * (a miss only costs a duplicate row that ReplacingMergeTree folds away).
 * Cleared too whenever ClickHouse comes back from an outage (its data may
 * have been restored from elsewhere). Thread-safe.
 */
#ifndef HUB_STACKCACHE_H
#define HUB_STACKCACHE_H

#include <stddef.h>
#include <stdint.h>

typedef struct hub_stackcache hub_stackcache;

hub_stackcache *hub_stackcache_new(size_t capacity);
void hub_stackcache_free(hub_stackcache *c);
/* 1 if (project_hash, stack_id) is known. generation: clears the cache
 * when it differs from the last one seen. */
int hub_stackcache_has(hub_stackcache *c, uint64_t project_hash, uint64_t stack_id, long generation);
void hub_stackcache_add(hub_stackcache *c, uint64_t project_hash, uint64_t stack_id);

#endif
