/*
 * stats.h — the small statistics the analysis endpoints and the regression
 * worker use, as pure functions (unit-tested in tests/unit/hub/test_stats.c
 * against values from statistical tables).
 *
 *  - two-proportion z-test: did the share x/n of a function change between
 *    two samples of sizes n1 and n2? (pooled standard error)
 *  - normal tail and its inverse (one-sided critical values for alpha);
 *  - least-squares line through (t, v) points with the slope's standard
 *    error, t statistic and the one-sided 95% lower confidence bound.
 */
#ifndef HUB_STATS_H
#define HUB_STATS_H

#include <stddef.h>

/* z = (x2/n2 − x1/n1) / sqrt(p(1−p)(1/n1 + 1/n2)), p = (x1+x2)/(n1+n2).
 * 0 when n1 or n2 is not positive or both shares are equal; capped at
 * ±1e6 when the pooled variance is 0 but the shares differ. */
double hub_z_two_prop(double x1, double n1, double x2, double n2);

/* P(Z > z) for a standard normal Z. */
double hub_normal_sf(double z);
/* Two-sided p-value of z: P(|Z| > |z|). */
double hub_p_two_sided(double z);
/* z such that P(Z > z) = alpha (0 < alpha < 1), by bisection (|error| < 1e-9). */
double hub_normal_isf(double alpha);
/* One-sided 95% critical value of Student's t with df degrees of freedom
 * (df ≥ 1; table up to 30, Cornish-Fisher expansion beyond). */
double hub_t95(int df);

typedef struct hub_linfit {
	size_t n;
	double slope, intercept;
	double se;       /* standard error of the slope (0 when n < 3) */
	double t;        /* slope / se (capped at 1e9 for an exact line) */
	double lower95;  /* slope − t95(n−2)·se */
	double r2;
} hub_linfit;

/* Least-squares fit of v against t over n points. 0, or -1 when n < 2 or
 * every t is equal. */
int hub_linfit_compute(const double *t, const double *v, size_t n, hub_linfit *out);

#endif
