/*
 * test_repl_rollup.c — the hub's own rollup of a replicated upload
 * (hub/repl_rollup.c): rows counted by hand from a folded profile, and the
 * comparison with the rows an edge sent (forged, reordered, zero rows).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "format.h"
#include "hub/repl_rollup.h"

#define T0_NS 1700000000000000000LL /* samples at this time, minute T0_NS / 60e9 */

static wt_profile *decode(const char *text)
{
	wt_decode_opts o;
	wt_profile *p = NULL;
	wt_format det;
	wt_err err = {0, ""};

	wt_decode_opts_default(&o);
	o.time_ns = T0_NS;
	assert_int_equal(wt_format_decode((const uint8_t *)text, strlen(text), WT_FMT_FOLDED, &o, &p, &det, &err), 0);
	return p;
}

static const wt_rollup_row *row_of(const hub_repl_rollup *r, const char *fn)
{
	for (size_t i = 0; i < r->n; i++)
		if (!strcmp(r->r.rows[i].function, fn))
			return &r->r.rows[i];
	return NULL;
}

/* rows as an edge sends them */
static void as_edge(const hub_repl_rollup *r, Watchtower__Repl__RollupRow *rows, Watchtower__Repl__RollupRow **ptrs)
{
	for (size_t i = 0; i < r->n; i++) {
		watchtower__repl__rollup_row__init(&rows[i]);
		rows[i].type = (char *)r->r.rows[i].type;
		rows[i].unit = (char *)r->r.rows[i].unit;
		rows[i].function = (char *)r->r.rows[i].function;
		rows[i].minute = r->r.rows[i].minute;
		rows[i].self = r->r.rows[i].self;
		rows[i].total = r->r.rows[i].total;
		ptrs[i] = &rows[i];
	}
}

static void test_build_and_diff(void **state)
{
	wt_profile *p = decode("main;work;leaf 7\nmain;idle 3\nmain;work;work 2\n");
	hub_repl_rollup own, again;
	wt_err err = {0, ""};
	const wt_rollup_row *r;
	Watchtower__Repl__RollupRow forged, *edge[8], again_rows[8], *again_ptrs[8];

	(void)state;
	assert_int_equal(hub_repl_rollup_build(p, T0_NS, &own, &err), 0);
	/* by hand: leaf 7/7, idle 3/3, work self 2 total 9 (counted once per
	 * stack although it recurses), main 0/12 */
	assert_non_null(r = row_of(&own, "leaf"));
	assert_int_equal(r->self, 7);
	assert_int_equal(r->total, 7);
	assert_non_null(r = row_of(&own, "work"));
	assert_int_equal(r->self, 2);
	assert_int_equal(r->total, 9);
	assert_non_null(r = row_of(&own, "main"));
	assert_int_equal(r->self, 0);
	assert_int_equal(r->total, 12);
	assert_int_equal(r->minute, T0_NS / 60000000000LL);
	assert_string_equal(r->type, "cpu");

	/* the same rows compare equal; one forged value, a missing and an extra row differ */
	assert_int_equal(hub_repl_rollup_build(p, T0_NS, &again, &err), 0);
	assert_true(own.n <= 8);
	as_edge(&again, again_rows, again_ptrs);
	for (size_t i = 0; i < own.n; i++)
		edge[i] = again_ptrs[i];
	assert_int_equal(hub_repl_rollup_diff(&own, edge, own.n), 0);
	forged = *edge[0];
	forged.self += 1000000;
	edge[0] = &forged;
	assert_int_equal(hub_repl_rollup_diff(&own, edge, own.n), 1);
	assert_int_equal(hub_repl_rollup_diff(&own, again_ptrs, own.n - 1), 1);
	edge[0] = again_ptrs[0];
	forged = *again_ptrs[0];
	forged.function = "evil";
	forged.self = forged.total = 5;
	edge[own.n] = &forged;
	assert_true(hub_repl_rollup_diff(&own, edge, own.n + 1) >= 1);
	/* a row of zeros on either side is not a difference */
	forged.self = forged.total = 0;
	assert_int_equal(hub_repl_rollup_diff(&own, edge, own.n + 1), 0);
	hub_repl_rollup_free(&again);
	hub_repl_rollup_free(&own);
	hub_repl_rollup_free(&own); /* twice is harmless */
	wt_profile_free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_build_and_diff),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
