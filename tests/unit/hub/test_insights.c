/*
 * test_insights.c — hub/insights.c on hand-built 100 ms series whose cards
 * are known by construction: a 12 s burst at 90% (with the window edge
 * trimmed back to the last busy bucket), a 9.9 s one that is too short, a
 * 2 s full core, gaps of 300 ms (starvation), 3 s (idle, not starvation)
 * and a trailing idle end (no busy bucket after it).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>

#include "hub/insights.h"

#define MS 1000000LL
#define B (100 * MS)

static void fill(int64_t *s, int from, int to, int64_t v)
{
	for (int i = from; i < to; i++)
		s[i] = v;
}

static void test_cards(void **state)
{
	int64_t s[400] = {0};
	hub_insight_opts o;
	hub_insight_card *c = NULL;
	size_t n = 0;

	(void)state;
	hub_insight_opts_default(&o);
	fill(s, 0, 120, 90 * MS);    /* 0-12 s at 90%: burst */
	/* 12-15 s idle (3 s: longer than starve_max) */
	fill(s, 150, 170, 100 * MS); /* 15-17 s at 100%: saturation */
	fill(s, 200, 299, 80 * MS);  /* 20-29.9 s at 80%: 9.9 s, too short for a burst */
	s[250] = s[251] = s[252] = 0; /* 300 ms gap: starvation */
	fill(s, 320, 330, 60 * MS);  /* 32-33 s, then idle to the end */
	assert_int_equal(hub_insights_find(s, 400, 1000, &o, &c, &n), 0);
	assert_int_equal(n, 3);
	assert_int_equal(c[0].kind, HUB_INSIGHT_BURST);
	assert_int_equal(c[0].from_ns, 1000 * B);
	assert_int_equal(c[0].until_ns, 1120 * B);
	assert_true(c[0].value > 0.8999 && c[0].value < 0.9001);
	assert_int_equal(c[1].kind, HUB_INSIGHT_SATURATION);
	assert_int_equal(c[1].from_ns, 1150 * B);
	assert_int_equal(c[1].until_ns, 1170 * B);
	assert_int_equal(c[2].kind, HUB_INSIGHT_STARVATION);
	assert_int_equal(c[2].from_ns, 1250 * B);
	assert_int_equal(c[2].until_ns, 1253 * B);
	assert_true(c[2].value > 0.2999 && c[2].value < 0.3001);
	free(c);
}

static void test_thresholds(void **state)
{
	int64_t s[200] = {0};
	hub_insight_opts o;
	hub_insight_card *c = NULL;
	size_t n = 0;

	(void)state;
	hub_insight_opts_default(&o);
	fill(s, 0, 200, 75 * MS);    /* exactly 75%: not "over 75%" */
	assert_int_equal(hub_insights_find(s, 200, 0, &o, &c, &n), 0);
	assert_int_equal(n, 0);
	fill(s, 0, 200, 99 * MS);    /* 99%: a burst, not a saturation */
	assert_int_equal(hub_insights_find(s, 200, 0, &o, &c, &n), 0);
	assert_int_equal(n, 1);
	assert_int_equal(c[0].kind, HUB_INSIGHT_BURST);
	s[100] = 0;                  /* a 100 ms gap in a 99% run: starvation too */
	n = 0;
	assert_int_equal(hub_insights_find(s, 200, 0, &o, &c, &n), 0);
	assert_int_equal(n, 2);
	assert_int_equal(c[1].kind, HUB_INSIGHT_STARVATION);
	assert_int_equal(c[1].until_ns - c[1].from_ns, B);
	/* shorter than one window: nothing at all */
	n = 0;
	assert_int_equal(hub_insights_find(s, 5, 0, &o, &c, &n), 0);
	assert_int_equal(n, 0);
	free(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cards),
		cmocka_unit_test(test_thresholds),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
