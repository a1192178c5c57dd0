/*
 * test_stats.c — hub/stats.c against values from statistical tables and
 * hand calculation: two-proportion z (45/100 vs 60/100 → 2.12398), normal
 * quantiles (3.090232 for alpha 0.001), Student t 95% (tables), least
 * squares on a small worked example.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "hub/stats.h"

static void near(double got, double want, double tol)
{
	if (fabs(got - want) > tol)
		fail_msg("got %.9g, want %.9g (tolerance %g)", got, want, tol);
}

static void test_z(void **state)
{
	(void)state;
	near(hub_z_two_prop(45, 100, 60, 100), 2.1239769762, 1e-9);
	near(hub_z_two_prop(60, 100, 45, 100), -2.1239769762, 1e-9);
	near(hub_p_two_sided(2.1239769762), 0.0336720689, 1e-9);
	assert_true(hub_z_two_prop(5, 10, 50, 100) == 0);   /* equal shares */
	assert_true(hub_z_two_prop(1, 0, 5, 10) == 0);      /* no base sample */
	near(hub_z_two_prop(0, 10, 10, 10), 1 / sqrt(0.25 * 0.2), 1e-9); /* pooled p 0.5 */
	assert_true(hub_z_two_prop(0, 10, 0, 10) == 0);
}

static void test_normal(void **state)
{
	(void)state;
	near(hub_normal_isf(0.001), 3.090232306, 1e-8);
	near(hub_normal_isf(0.05), 1.644853627, 1e-8);
	near(hub_normal_isf(0.025), 1.959963985, 1e-8);
	near(hub_normal_isf(0.5), 0, 1e-9);
	near(hub_normal_sf(1.959963985), 0.025, 1e-9);
}

static void test_t95(void **state)
{
	(void)state;
	near(hub_t95(1), 6.3138, 1e-4);
	near(hub_t95(10), 1.8125, 1e-4);
	near(hub_t95(30), 1.6973, 1e-4);
	near(hub_t95(40), 1.683851, 2e-4);
	near(hub_t95(60), 1.670649, 1e-4);
	near(hub_t95(120), 1.657651, 1e-4);
}

static void test_linfit(void **state)
{
	double t[] = {1, 2, 3, 4, 5}, v[] = {2, 4, 5, 4, 5};
	double lt[] = {0, 1, 2, 3}, lv[] = {1, 3, 5, 7};
	double same[] = {2, 2, 2};
	hub_linfit f;

	(void)state;
	assert_int_equal(hub_linfit_compute(t, v, 5, &f), 0);
	near(f.slope, 0.6, 1e-12);
	near(f.intercept, 2.2, 1e-12);
	near(f.se, sqrt(0.08), 1e-12);
	near(f.t, 0.6 / sqrt(0.08), 1e-9);
	near(f.r2, 0.6, 1e-12);
	near(f.lower95, 0.6 - 2.353363 * sqrt(0.08), 1e-6);
	assert_true(f.lower95 < 0); /* not a steady growth at 95% */
	assert_int_equal(hub_linfit_compute(lt, lv, 4, &f), 0);
	near(f.slope, 2, 1e-12);
	assert_true(f.t >= 1e9);
	near(f.lower95, 2, 1e-12);
	assert_int_equal(hub_linfit_compute(same, lv, 3, &f), -1); /* all t equal */
	assert_int_equal(hub_linfit_compute(t, v, 1, &f), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_z),
		cmocka_unit_test(test_normal),
		cmocka_unit_test(test_t95),
		cmocka_unit_test(test_linfit),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
