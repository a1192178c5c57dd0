/*
 * pool.h — a fixed set of worker threads running queued jobs (upload
 * parsing, local queries) off the event-loop thread.
 * Ownership: the pool never frees a job's arg; the job function does.
 */
#ifndef EDGE_POOL_H
#define EDGE_POOL_H

#include <stddef.h>

typedef struct edge_pool edge_pool;

/* Start n threads. NULL on failure. */
edge_pool *edge_pool_new(int n);
/* Queue fn(arg). Returns 0, or -1 when the pool is stopping or holds max
 * queued jobs already (caller answers 503). */
int edge_pool_submit(edge_pool *p, void (*fn)(void *), void *arg, size_t max_queued);
/* Run every queued job, then join the threads and free the pool. */
void edge_pool_free(edge_pool *p);

#endif
