/*
 * arena.c — the per-request bump allocator with destructors of arena.h.
 * Small allocations are carved from 4 KiB chunks; a large one gets a chunk
 * of its own so a single big reply does not waste a chunk's tail.
 */
#include "arena.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"

#define ALIGN _Alignof(max_align_t)

struct wt_arena_chunk {
	wt_arena_chunk *next;
	_Alignas(max_align_t) unsigned char data[];
};

struct wt_arena_dtor {
	wt_arena_dtor *next;
	void (*fn)(void *);
	void *p;
};

void wt_arena_init(wt_arena *a, size_t limit)
{
	memset(a, 0, sizeof(*a));
	a->limit = limit;
}

static wt_arena_chunk *chunk_new(wt_arena *a, size_t payload)
{
	size_t n = sizeof(wt_arena_chunk) + payload;
	wt_arena_chunk *c;

	if (payload > SIZE_MAX - sizeof(wt_arena_chunk) || (a->limit && a->total + n > a->limit))
		return NULL;
	c = malloc(n);
	if (c)
		a->total += n;
	return c;
}

void *wt_arena_alloc(wt_arena *a, size_t n)
{
	wt_arena_chunk *c;
	size_t need;

	if (n == 0)
		n = 1;
	if (n > WT_ARENA_LARGE) {
		c = chunk_new(a, n);
		if (!c)
			return NULL;
		c->next = a->large;
		a->large = c;
		return c->data;
	}
	need = (n + ALIGN - 1) & ~(size_t)(ALIGN - 1);
	if (!a->chunks || a->off + need > WT_ARENA_CHUNK) {
		c = chunk_new(a, WT_ARENA_CHUNK);
		if (!c)
			return NULL;
		c->next = a->chunks;
		a->chunks = c;
		a->off = 0;
	}
	c = a->chunks;
	a->off += need;
	return c->data + a->off - need;
}

void *wt_arena_calloc(wt_arena *a, size_t nmemb, size_t size)
{
	void *p;

	if (size && nmemb > SIZE_MAX / size)
		return NULL;
	p = wt_arena_alloc(a, nmemb * size);
	if (p)
		memset(p, 0, nmemb * size);
	return p;
}

char *wt_arena_strdup(wt_arena *a, const char *s)
{
	size_t n;
	char *p;

	if (!s)
		return NULL;
	n = strlen(s) + 1;
	p = wt_arena_alloc(a, n);
	if (p)
		memcpy(p, s, n);
	return p;
}

char *wt_arena_printf(wt_arena *a, const char *fmt, ...)
{
	va_list ap;
	int n;
	char *p;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0 || !(p = wt_arena_alloc(a, (size_t)n + 1)))
		return NULL;
	va_start(ap, fmt);
	vsnprintf(p, (size_t)n + 1, fmt, ap);
	va_end(ap);
	return p;
}

int wt_arena_defer(wt_arena *a, void (*fn)(void *), void *p)
{
	wt_arena_dtor *d;

	if (!fn || !p)
		return 0;
	d = wt_arena_alloc(a, sizeof(*d));
	if (!d) {
		fn(p);
		return WT_ENOMEM;
	}
	d->fn = fn;
	d->p = p;
	d->next = a->dtors;
	a->dtors = d;
	return 0;
}

static void buf_dtor(void *p)
{
	wt_buf_free(p);
}

wt_buf *wt_arena_buf(wt_arena *a)
{
	wt_buf *b = wt_arena_calloc(a, 1, sizeof(*b));

	if (b && wt_arena_defer(a, buf_dtor, b))
		return NULL;
	return b;
}

static void free_chunks(wt_arena_chunk *c)
{
	while (c) {
		wt_arena_chunk *next = c->next;
		free(c);
		c = next;
	}
}

void wt_arena_clear(wt_arena *a)
{
	size_t limit = a->limit;

	/* a destructor may itself defer (it then runs in this same loop) */
	while (a->dtors) {
		wt_arena_dtor *d = a->dtors;
		a->dtors = d->next;
		d->fn(d->p);
	}
	free_chunks(a->chunks);
	free_chunks(a->large);
	wt_arena_init(a, limit);
}
