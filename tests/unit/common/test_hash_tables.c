/*
 * test_hash_tables.c — the shared hash tables of common/: hindex.h (an
 * index over the caller's own array, with an eq callback) and bytemap.h
 * (byte keys → uint32, keys copied), u64map.h's lookup-only get and its
 * uint64-valued wt_u64map64 (insert, replace, full 64-bit values).
 * Each is checked against the keys it was given, 20,000 of them with
 * colliding hashes forced in, through several growths.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <xxhash.h>

#include "bytemap.h"
#include "err.h"
#include "hindex.h"
#include "u64map.h"

#define N 20000

static char keys[N][16];

static void make_keys(void)
{
	for (int i = 0; i < N; i++)
		snprintf(keys[i], sizeof(keys[i]), "k%d", i);
}

/* every 7th key gets the same hash: probing must compare keys */
static uint64_t hash_of(const char *k)
{
	int i = atoi(k + 1);
	return i % 7 == 0 ? 42 : XXH3_64bits(k, strlen(k));
}

typedef struct arr {
	const char *items[N];
	uint32_t n;
} arr;

static int arr_eq(const void *ctx, uint32_t id, const void *key)
{
	const arr *a = ctx;
	return !strcmp(a->items[id], key);
}

static void hindex_matches_scan(void **state)
{
	static arr a;
	wt_hindex h = {0};
	uint32_t id;
	size_t slot;

	make_keys();
	a.n = 0;
	for (int round = 0; round < 2; round++)
		for (int i = 0; i < N; i++) {
			uint64_t hh = hash_of(keys[i]);
			int r = wt_hindex_lookup(&h, hh, keys[i], arr_eq, &a, &id, &slot);
			if (round == 0) {
				assert_int_equal(r, 0);
				a.items[a.n] = keys[i];
				wt_hindex_put(&h, slot, hh, a.n++);
			} else {
				assert_int_equal(r, 1);
				assert_int_equal(id, (uint32_t)i);
			}
		}
	assert_int_equal(h.n, N);
	assert_true(h.cap >= N * 4 / 3 && (h.cap & (h.cap - 1)) == 0);
	assert_int_equal(wt_hindex_lookup(&h, hash_of("k7"), "absent", arr_eq, &a, &id, &slot), 0);
	wt_hindex_free(&h);
	assert_true(h.slots == NULL && h.cap == 0 && h.n == 0);
}

static void bytemap_matches_scan(void **state)
{
	wt_bytemap m = {0};
	wt_bytemap_ent *e;

	make_keys();
	for (int round = 0; round < 2; round++)
		for (int i = 0; i < N; i++) {
			size_t len = strlen(keys[i]);
			uint64_t hh = hash_of(keys[i]);
			assert_int_equal(wt_bytemap_reserve(&m), 0);
			e = wt_bytemap_find(&m, keys[i], len, hh);
			if (round == 0) {
				assert_false(e->used);
				assert_int_equal(wt_bytemap_put(&m, e, keys[i], len, hh, (uint32_t)i * 3), 0);
			} else {
				assert_true(e->used);
				assert_int_equal(e->val, (uint32_t)i * 3);
				assert_memory_equal(m.keys + e->off, keys[i], len);
			}
		}
	assert_int_equal(m.n, N);
	assert_true(m.n * 2 <= m.cap);
	/* a prefix of a stored key is a different key; so is the empty key */
	assert_int_equal(wt_bytemap_reserve(&m), 0);
	assert_false(wt_bytemap_find(&m, "k1", 1, hash_of("k1"))->used);
	e = wt_bytemap_find(&m, "", 0, 5);
	assert_false(e->used);
	assert_int_equal(wt_bytemap_put(&m, e, "", 0, 5, 9), 0);
	assert_true(wt_bytemap_find(&m, "", 0, 5)->used);
	wt_bytemap_free(&m);
	assert_true(m.ents == NULL && m.keys == NULL && m.n == 0);
}

static void u64map_get_matches_slot(void **state)
{
	wt_u64map m = {0};
	uint32_t v;
	size_t slot;

	assert_int_equal(wt_u64map_get(&m, 7, &v), 0); /* empty map: no slots yet */
	for (uint64_t k = 0; k < N; k++) {
		assert_int_equal(wt_u64map_slot(&m, k * 0x100000000ull + 3, &slot), 0);
		assert_int_equal(m.vals[slot], WT_U64MAP_EMPTY);
		m.keys[slot] = k * 0x100000000ull + 3;
		m.vals[slot] = (uint32_t)k;
		m.n++;
	}
	for (uint64_t k = 0; k < N; k++) {
		assert_int_equal(wt_u64map_get(&m, k * 0x100000000ull + 3, &v), 1);
		assert_int_equal(v, (uint32_t)k);
	}
	assert_int_equal(wt_u64map_get(&m, 4, &v), 0);
	assert_int_equal(m.n, N);
	wt_u64map_free(&m);
}

/* Deleting keys (every third, then the rest) leaves exactly the others
 * findable, however the runs were laid out; clear empties the map. */
static void u64map_del_matches_model(void **state)
{
	wt_u64map m = {0};
	uint32_t v;
	size_t slot;

	for (uint64_t k = 0; k < N; k++) {
		assert_int_equal(wt_u64map_slot(&m, k * 7919, &slot), 0);
		m.keys[slot] = k * 7919;
		m.vals[slot] = (uint32_t)k;
		m.n++;
	}
	for (uint64_t k = 0; k < N; k += 3) {
		assert_int_equal(wt_u64map_del(&m, k * 7919, &v), 1);
		assert_int_equal(v, (uint32_t)k);
		assert_int_equal(wt_u64map_del(&m, k * 7919, NULL), 0);
	}
	for (uint64_t k = 0; k < N; k++) {
		int there = wt_u64map_get(&m, k * 7919, &v);
		assert_int_equal(there, k % 3 != 0);
		if (there)
			assert_int_equal(v, (uint32_t)k);
	}
	assert_int_equal(m.n, N - (N + 2) / 3);
	for (uint64_t k = 0; k < N; k++)
		if (k % 3)
			assert_int_equal(wt_u64map_del(&m, k * 7919, NULL), 1);
	assert_int_equal(m.n, 0);
	for (size_t i = 0; i < m.cap; i++)
		assert_int_equal(m.vals[i], WT_U64MAP_EMPTY);
	assert_int_equal(wt_u64map_slot(&m, 42, &slot), 0);
	m.keys[slot] = 42;
	m.vals[slot] = 1;
	m.n++;
	wt_u64map_clear(&m);
	assert_int_equal(m.n, 0);
	assert_int_equal(wt_u64map_get(&m, 42, &v), 0);
	wt_u64map_free(&m);
}

static void u64map64_puts_and_replaces(void **state)
{
	wt_u64map64 m = {0};
	uint64_t v;

	assert_int_equal(wt_u64map64_get(&m, 7, &v), 0);
	for (uint64_t k = 0; k < N; k++)
		assert_int_equal(wt_u64map64_put(&m, k << 40 | 5, ~k), 0);
	for (uint64_t k = 0; k < N; k += 2) /* replace every other value */
		assert_int_equal(wt_u64map64_put(&m, k << 40 | 5, k * 0x9e3779b97f4a7c15ull), 0);
	assert_int_equal(m.idx.n, N);
	for (uint64_t k = 0; k < N; k++) {
		assert_int_equal(wt_u64map64_get(&m, k << 40 | 5, &v), 1);
		assert_true(v == (k % 2 ? ~k : k * 0x9e3779b97f4a7c15ull));
	}
	assert_int_equal(wt_u64map64_get(&m, 6, &v), 0);
	wt_u64map64_free(&m);
	assert_true(m.v == NULL && m.idx.n == 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(u64map_get_matches_slot),
		cmocka_unit_test(u64map64_puts_and_replaces),
		cmocka_unit_test(u64map_del_matches_model),
		cmocka_unit_test(hindex_matches_scan),
		cmocka_unit_test(bytemap_matches_scan),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
