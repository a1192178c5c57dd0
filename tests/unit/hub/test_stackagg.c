/*
 * test_stackagg.c — the aggregate query path's pure parts: the split of a
 * range into raw and per-resolution pieces (stackagg.c) and the
 * bytes-bounded frames LRU (stacklru.c).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "hub/stackagg.h"
#include "hub/stacklru.h"

#define S 1000000000LL

/* pieces are in order, disjoint, cover [from, until), aligned, and no
 * piece could use a coarser resolution */
static void check_cover(int64_t from, int64_t until, int64_t cover, int64_t step)
{
	hub_agg_seg g[HUB_AGG_MAX_SEGS];
	size_t n = hub_agg_segments(from, until, cover, step, g), i;
	int64_t at = from;

	if (from >= until) {
		assert_int_equal(n, 0);
		return;
	}
	assert_true(n >= 1 && n <= HUB_AGG_MAX_SEGS);
	for (i = 0; i < n; i++) {
		assert_int_equal(g[i].from_ns, at);
		assert_true(g[i].until_ns > g[i].from_ns);
		if (g[i].res) {
			assert_int_equal(g[i].from_ns % (g[i].res * S), 0);
			assert_int_equal(g[i].until_ns % (g[i].res * S), 0);
			assert_true(g[i].from_ns >= cover);
			if (step)
				assert_int_equal(step % (g[i].res * S), 0);
		} else if (i + 1 < n) {
			assert_int_not_equal(g[i + 1].res, 0); /* adjacent raw pieces merge */
		}
		at = g[i].until_ns;
	}
	assert_int_equal(at, until);
}

/* signed pieces: aggregate pieces aligned and within [cover, max(until,
 * stable)); the signed sum of all pieces is exactly [from, until) (checked
 * at every piece boundary, the coverage being constant between them); and
 * no end reads more than half a bucket of the next finer level */
static void check_signed(int64_t from, int64_t until, int64_t cover, int64_t stable)
{
	hub_agg_seg g[HUB_AGG_MAX_SIGNED];
	size_t n = hub_agg_segments_signed(from, until, cover, stable, g), i, j;
	int64_t hi = until > stable ? until : stable;

	if (from >= until) {
		assert_int_equal(n, 0);
		return;
	}
	assert_true(n >= 1 && n <= HUB_AGG_MAX_SIGNED);
	for (i = 0; i < n; i++) {
		assert_true(g[i].until_ns > g[i].from_ns);
		assert_true(g[i].sign == 1 || g[i].sign == -1);
		assert_true(g[i].res || g[i].sign == 1); /* raw rows are never subtracted */
		if (g[i].res) {
			assert_int_equal(g[i].from_ns % (g[i].res * S), 0);
			assert_int_equal(g[i].until_ns % (g[i].res * S), 0);
			assert_true(g[i].from_ns >= cover);
			assert_true(g[i].until_ns <= hi);
		}
	}
	for (i = 0; i < 2 * n; i++) {
		int64_t t = i % 2 ? g[i / 2].until_ns : g[i / 2].from_ns;
		int64_t pts[3] = {t - 1, t, from}, c;
		for (int k = 0; k < 3; k++) {
			c = 0;
			for (j = 0; j < n; j++)
				if (pts[k] >= g[j].from_ns && pts[k] < g[j].until_ns)
					c += g[j].sign;
			assert_int_equal(c, pts[k] >= from && pts[k] < until ? 1 : 0);
		}
	}
}

static void test_segments_shapes(void **state)
{
	hub_agg_seg g[HUB_AGG_MAX_SEGS];
	int64_t day = 86400 * S, h = 3600 * S, m = 60 * S, t0 = 19675 * day;
	size_t n;
	(void)state;

	/* one aligned day: one day piece */
	n = hub_agg_segments(t0, t0 + day, 0, 0, g);
	assert_int_equal(n, 1);
	assert_int_equal(g[0].res, 86400);
	/* unaligned hour: raw head, minutes, raw tail */
	n = hub_agg_segments(t0 + 20 * S, t0 + h + 30 * S, 0, 0, g);
	assert_int_equal(n, 3);
	assert_int_equal(g[0].res, 0);
	assert_int_equal(g[0].until_ns, t0 + m);
	assert_int_equal(g[1].res, 60);
	assert_int_equal(g[1].until_ns, t0 + h);
	assert_int_equal(g[2].res, 0);
	/* across an hour boundary: raw, minutes, the hour, raw */
	n = hub_agg_segments(t0 + 20 * S, t0 + 2 * h + 30 * S, 0, 0, g);
	assert_int_equal(n, 4);
	assert_int_equal(g[1].res, 60);
	assert_int_equal(g[2].res, 3600);
	assert_int_equal(g[2].from_ns, t0 + h);
	assert_int_equal(g[2].until_ns, t0 + 2 * h);
	assert_int_equal(g[3].res, 0);
	/* coverage: the part before it is raw */
	n = hub_agg_segments(t0, t0 + 3 * day, t0 + day + 7 * S, 0, g);
	assert_int_equal(g[0].res, 0);
	assert_int_equal(g[0].until_ns, t0 + day + m);
	/* nothing covered: a single raw piece */
	n = hub_agg_segments(t0, t0 + 3 * day, INT64_MAX, 0, g);
	assert_int_equal(n, 1);
	assert_int_equal(g[0].res, 0);
	/* a 30 s step cannot use minutes; a 2 h step uses hours, not days */
	n = hub_agg_segments(t0, t0 + day, 0, 30 * S, g);
	assert_int_equal(n, 1);
	assert_int_equal(g[0].res, 0);
	n = hub_agg_segments(t0, t0 + day, 0, 2 * h, g);
	assert_int_equal(n, 1);
	assert_int_equal(g[0].res, 3600);
}

static void test_segments_random(void **state)
{
	int64_t day = 86400 * S, t0 = 19675 * day;
	static const int64_t steps[] = {0, 0, 30 * S, 60 * S, 300 * S, 3600 * S, 7200 * S, 86400 * S};
	int i;
	(void)state;

	srand(7);
	for (i = 0; i < 20000; i++) {
		int64_t a = t0 + ((int64_t)rand() % (5 * 86400)) * S + (rand() % 3 ? 0 : rand() % S);
		int64_t b = a + ((int64_t)rand() % (3 * 86400)) * S + rand() % 1000;
		int64_t cover = rand() % 2 ? 0 : t0 + ((int64_t)rand() % (6 * 86400)) * S;
		check_cover(a, b, cover, steps[rand() % 8]);
	}
	check_cover(t0, t0, 0, 0);
	for (i = 0; i < 20000; i++) {
		int64_t a = t0 + ((int64_t)rand() % (5 * 86400)) * S + (rand() % 3 ? 0 : rand() % S);
		int64_t b = a + ((int64_t)rand() % (rand() % 2 ? 3 * 86400 : 4000)) * S + rand() % 1000;
		int64_t cover = rand() % 2 ? 0 : t0 + ((int64_t)rand() % (6 * 86400)) / 86400 * 86400 * S;
		int64_t stable = rand() % 2 ? b : t0 + ((int64_t)rand() % (9 * 86400)) * S;
		check_signed(a, b, cover, stable);
	}
	check_signed(t0, t0, 0, 0);
	{
		/* 45 min from 917 s past the hour, in the past: the hour minus
		 * 16 minutes plus 43 s of raw rows, not 44 minute pieces */
		hub_agg_seg g[HUB_AGG_MAX_SIGNED];
		size_t n = hub_agg_segments_signed(t0 + 917 * S, t0 + 3600 * S, 0, t0 + 86400 * S, g);
		assert_int_equal(n, 3);
		for (i = 0; i < 3; i++) {
			if (g[i].res == 0)
				assert_true(g[i].sign == 1 && g[i].from_ns == t0 + 917 * S &&
					    g[i].until_ns == t0 + 960 * S);
			else if (g[i].res == 60)
				assert_true(g[i].sign == -1 && g[i].from_ns == t0 && g[i].until_ns == t0 + 960 * S);
			else
				assert_true(g[i].res == 3600 && g[i].sign == 1 && g[i].from_ns == t0);
		}
		/* live (stable before the end): no bucket past until */
		n = hub_agg_segments_signed(t0 + 917 * S, t0 + 3590 * S, 0, t0, g);
		for (i = 0; i < (int)n; i++)
			assert_true(g[i].res == 0 || g[i].until_ns <= t0 + 3590 * S);
	}
}

static void test_lru(void **state)
{
	hub_stacklru *c = hub_stacklru_new(8192);
	hub_framedict *d, *d2;
	wt_buf ids = WT_BUF_INIT, names = WT_BUF_INIT;
	size_t nf = 0, bytes, entries, i, offs[2];
	char nm[64];
	uint32_t id[2];
	(void)state;

	assert_non_null(c);
	d = hub_stacklru_acquire(c);
	assert_non_null(d);
	assert_int_equal(hub_stacklru_get(c, d, 1, &ids, &nf), 0);
	assert_int_equal(hub_stacklru_put(c, d, 1, "main\0run\0", 9, 2, &ids), 0);
	assert_int_equal(ids.len, 2 * sizeof(uint32_t));
	memcpy(id, ids.data, sizeof(id));
	wt_buf_reset(&ids);
	assert_int_equal(hub_stacklru_get(c, d, 1, &ids, &nf), 1);
	assert_int_equal(nf, 2);
	assert_memory_equal(ids.data, id, sizeof(id));
	assert_int_equal(hub_stacklru_names(c, d, id, 2, &names, offs), 0);
	assert_string_equal((const char *)names.data + offs[0], "main");
	assert_string_equal((const char *)names.data + offs[1], "run");
	/* a frame is stored once: another stack with "run" gets the same id */
	wt_buf_reset(&ids);
	assert_int_equal(hub_stacklru_put(c, d, 2, "run\0", 4, 1, &ids), 0);
	assert_int_equal(((uint32_t *)ids.data)[0], id[1]);
	/* keys differ per project */
	assert_true(hub_stacklru_key("a", 5) != hub_stacklru_key("b", 5));
	/* the byte bound holds; the most recently used survive */
	for (i = 3; i < 500; i++) {
		snprintf(nm, sizeof(nm), "frame%zu", i % 20);
		wt_buf_reset(&ids);
		assert_int_equal(hub_stacklru_put(c, d, i, nm, strlen(nm) + 1, 1, &ids), 0);
		hub_stacklru_usage(c, &bytes, &entries);
		assert_true(bytes <= 8192);
	}
	assert_true(entries > 10);
	wt_buf_reset(&ids);
	assert_int_equal(hub_stacklru_get(c, d, 499, &ids, &nf), 1);
	wt_buf_reset(&names);
	assert_int_equal(hub_stacklru_names(c, d, (uint32_t *)ids.data, 1, &names, offs), 0);
	assert_string_equal((const char *)names.data, "frame19");
	assert_int_equal(hub_stacklru_get(c, d, 3, &ids, &nf), 0);
	/* replacing a key keeps one entry */
	hub_stacklru_usage(c, &bytes, &entries);
	wt_buf_reset(&ids);
	assert_int_equal(hub_stacklru_put(c, d, 499, "x\0", 2, 1, &ids), 0);
	hub_stacklru_usage(c, &bytes, &i);
	assert_int_equal(i, entries);
	/* many distinct names: the dictionary is retired, the stacks with it;
	 * the query holding it keeps valid ids */
	for (i = 0; i < 400; i++) {
		snprintf(nm, sizeof(nm), "a_rather_long_distinct_frame_name_%zu", i);
		wt_buf_reset(&ids);
		assert_int_equal(hub_stacklru_put(c, d, 1000 + i, nm, strlen(nm) + 1, 1, &ids), 0);
	}
	wt_buf_reset(&names);
	assert_int_equal(hub_stacklru_names(c, d, (uint32_t *)ids.data, 1, &names, offs), 0);
	assert_string_equal((const char *)names.data, "a_rather_long_distinct_frame_name_399");
	d2 = hub_stacklru_acquire(c);
	assert_true(d2 != d);
	wt_buf_reset(&ids);
	assert_int_equal(hub_stacklru_get(c, d2, 1, &ids, &nf), 0);
	assert_int_equal(hub_stacklru_get(c, d, 1, &ids, &nf), 0);
	hub_stacklru_usage(c, &bytes, &entries);
	assert_true(bytes <= 8192);
	/* an id the generation never gave */
	id[0] = 12345;
	assert_int_equal(hub_stacklru_names(c, d2, id, 1, &names, offs), WT_EINVAL);
	hub_stacklru_release(c, d);
	hub_stacklru_release(c, d2);
	wt_buf_free(&ids);
	wt_buf_free(&names);
	hub_stacklru_free(c);
	/* no cache: a query still gets a dictionary of its own */
	c = hub_stacklru_new(0);
	d = hub_stacklru_acquire(c);
	ids = (wt_buf)WT_BUF_INIT;
	names = (wt_buf)WT_BUF_INIT;
	assert_int_equal(hub_stacklru_put(c, d, 1, "main\0", 5, 1, &ids), 0);
	assert_int_equal(hub_stacklru_get(c, d, 1, &ids, &nf), 0);
	wt_buf_reset(&names);
	assert_int_equal(hub_stacklru_names(c, d, (uint32_t *)ids.data, 1, &names, offs), 0);
	assert_string_equal((const char *)names.data, "main");
	hub_stacklru_release(c, d);
	wt_buf_free(&ids);
	wt_buf_free(&names);
	hub_stacklru_free(c);
}

/* hub_stacklru_get_many (chunked, prefetching) answers what
 * hub_stacklru_get answers key by key, over more keys than a chunk, found
 * and missing mixed; the stacks it returns count as recently used (they
 * outlive the ones not asked for when the cache evicts). */
static void test_lru_get_many(void **state)
{
	enum { NS = 150, NK = 301 };
	hub_stacklru *c = hub_stacklru_new(1 << 20);
	hub_framedict *d;
	wt_buf ids = WT_BUF_INIT, one = WT_BUF_INIT;
	uint64_t keys[NK];
	size_t off[NK], nf[NK], i, k, n1, bytes, entries;
	char nm[256];
	(void)state;

	assert_non_null(c);
	d = hub_stacklru_acquire(c);
	assert_non_null(d);
	for (i = 0; i < NS; i++) {
		size_t len = 0, nfr = 1 + i % 9;
		for (k = 0; k < nfr; k++)
			len += (size_t)snprintf(nm + len, sizeof(nm) - len, "f%zu_%zu", k, i % (k + 2)) + 1;
		wt_buf_reset(&ids);
		assert_int_equal(hub_stacklru_put(c, d, 10 * i, nm, len, nfr, &ids), 0);
	}
	for (i = 0; i < NK; i++)
		keys[i] = 5 * i; /* even multiples of 5 are stacks, odd ones not */
	wt_buf_reset(&ids);
	assert_int_equal(hub_stacklru_get_many(c, d, keys, NK, &ids, off, nf), 0);
	for (i = 0; i < NK; i++) {
		wt_buf_reset(&one);
		if (i % 2 || keys[i] >= 10 * NS) {
			assert_int_equal(nf[i], SIZE_MAX);
			assert_int_equal(hub_stacklru_get(c, d, keys[i], &one, &n1), 0);
			continue;
		}
		assert_int_equal(hub_stacklru_get(c, d, keys[i], &one, &n1), 1);
		assert_int_equal(nf[i], n1);
		assert_int_equal(nf[i], 1 + (keys[i] / 10) % 9);
		assert_memory_equal(ids.data + off[i] * sizeof(uint32_t), one.data, n1 * sizeof(uint32_t));
	}
	hub_stacklru_release(c, d);
	hub_stacklru_free(c);
	/* recency: a small cache, stacks 0..39 asked for, then new stacks
	 * evict the rest first */
	c = hub_stacklru_new(16384);
	d = hub_stacklru_acquire(c);
	for (i = 0; i < 80; i++) {
		snprintf(nm, sizeof(nm), "g%zu", i % 5);
		wt_buf_reset(&ids);
		assert_int_equal(hub_stacklru_put(c, d, i, nm, strlen(nm) + 1, 1, &ids), 0);
	}
	hub_stacklru_usage(c, &bytes, &entries);
	assert_true(entries >= 80);
	for (i = 0; i < 40; i++)
		keys[i] = i;
	wt_buf_reset(&ids);
	assert_int_equal(hub_stacklru_get_many(c, d, keys, 40, &ids, off, nf), 0);
	for (i = 0; i < 40; i++)
		assert_int_equal(nf[i], 1);
	/* new stacks until 40 were evicted: exactly the 40 not asked for */
	for (k = 0; k < 10000; k++) {
		snprintf(nm, sizeof(nm), "g%zu", k % 5);
		wt_buf_reset(&ids);
		assert_int_equal(hub_stacklru_put(c, d, 1000 + k, nm, strlen(nm) + 1, 1, &ids), 0);
		hub_stacklru_usage(c, &bytes, &entries);
		if (80 + k + 1 - entries >= 40)
			break;
	}
	assert_true(k < 10000);
	wt_buf_reset(&ids);
	assert_int_equal(hub_stacklru_get_many(c, d, keys, 40, &ids, off, nf), 0);
	for (i = 0; i < 40; i++)
		assert_int_equal(nf[i], 1);
	for (i = 0; i < 40; i++)
		keys[i] = 40 + i;
	assert_int_equal(hub_stacklru_get_many(c, d, keys, 40, &ids, off, nf), 0);
	for (i = 0; i < 40; i++)
		assert_int_equal(nf[i], SIZE_MAX);
	hub_stacklru_release(c, d);
	hub_stacklru_free(c);
	wt_buf_free(&ids);
	wt_buf_free(&one);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_segments_shapes),
		cmocka_unit_test(test_segments_random),
		cmocka_unit_test(test_lru),
		cmocka_unit_test(test_lru_get_many),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
