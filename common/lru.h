/*
 * lru.h — the one intrusive recency list of the hub's LRU caches
 * (hub/viewcache.c, hub/stacklru.c): a doubly linked list with head = most
 * recently used and tail = next to evict. An entry embeds a wt_lru_node and
 * is found again from it with wt_lru_entry(); the list owns nothing, so the
 * cache frees its entries (after wt_lru_unlink). All O(1); the caller locks.
 */
#ifndef WT_LRU_H
#define WT_LRU_H

#include <stddef.h>

typedef struct wt_lru_node {
	struct wt_lru_node *prev, *next; /* towards head (newer) / tail (older) */
} wt_lru_node;

typedef struct wt_lru {
	wt_lru_node *head, *tail; /* both NULL: empty */
} wt_lru;

/* The entry of type that holds node n as its member. */
#define wt_lru_entry(n, type, member) ((type *)((char *)(n) - offsetof(type, member)))

/* Take n (on l) off the list; its links are cleared. */
static inline void wt_lru_unlink(wt_lru *l, wt_lru_node *n)
{
	if (n->prev)
		n->prev->next = n->next;
	else
		l->head = n->next;
	if (n->next)
		n->next->prev = n->prev;
	else
		l->tail = n->prev;
	n->prev = n->next = NULL;
}

/* Put n (on no list) at the head, as the most recently used. */
static inline void wt_lru_push(wt_lru *l, wt_lru_node *n)
{
	n->prev = NULL;
	n->next = l->head;
	if (l->head)
		l->head->prev = n;
	l->head = n;
	if (!l->tail)
		l->tail = n;
}

/* Mark n (on l) as the most recently used. */
static inline void wt_lru_touch(wt_lru *l, wt_lru_node *n)
{
	wt_lru_unlink(l, n);
	wt_lru_push(l, n);
}

#endif
