/*
 * stats.c — z-test, normal tail, t critical values, least squares (see
 * stats.h). Formulas are the textbook ones; comments say where a choice
 * was made.
 */
#include "stats.h"

#include <math.h>

double hub_z_two_prop(double x1, double n1, double x2, double n2)
{
	double p1, p2, p, var;

	if (!(n1 > 0) || !(n2 > 0))
		return 0;
	p1 = x1 / n1;
	p2 = x2 / n2;
	if (p1 == p2)
		return 0;
	p = (x1 + x2) / (n1 + n2);
	var = p * (1 - p) * (1 / n1 + 1 / n2);
	if (!(var > 0))
		return p2 > p1 ? 1e6 : -1e6;
	return (p2 - p1) / sqrt(var);
}

double hub_normal_sf(double z)
{
	return 0.5 * erfc(z / M_SQRT2);
}

double hub_p_two_sided(double z)
{
	return erfc(fabs(z) / M_SQRT2);
}

double hub_normal_isf(double alpha)
{
	double lo = -40, hi = 40;
	int i;

	if (!(alpha > 0))
		return 40;
	if (!(alpha < 1))
		return -40;
	for (i = 0; i < 200 && hi - lo > 1e-12; i++) {
		double mid = (lo + hi) / 2;
		if (hub_normal_sf(mid) > alpha)
			lo = mid;
		else
			hi = mid;
	}
	return (lo + hi) / 2;
}

double hub_t95(int df)
{
	/* t_{0.95, df}, df = 1..30 (standard tables) */
	static const double tab[30] = {
		6.313752, 2.919986, 2.353363, 2.131847, 2.015048, 1.943180, 1.894579, 1.859548,
		1.833113, 1.812461, 1.795885, 1.782288, 1.770933, 1.761310, 1.753050, 1.745884,
		1.739607, 1.734064, 1.729133, 1.724718, 1.720743, 1.717144, 1.713872, 1.710882,
		1.708141, 1.705618, 1.703288, 1.701131, 1.699127, 1.697261,
	};
	double z = 1.6448536269514722, z3, z5, d;

	if (df < 1)
		df = 1;
	if (df <= 30)
		return tab[df - 1];
	/* Cornish-Fisher expansion of the t quantile around the normal one
	 * (error < 1e-4 for df > 30) */
	z3 = z * z * z;
	z5 = z3 * z * z;
	d = df;
	return z + (z3 + z) / (4 * d) + (5 * z5 + 16 * z3 + 3 * z) / (96 * d * d);
}

int hub_linfit_compute(const double *t, const double *v, size_t n, hub_linfit *out)
{
	double mt = 0, mv = 0, sxx = 0, sxy = 0, syy = 0, sse;
	size_t i;

	out->n = n;
	out->slope = out->intercept = out->se = out->t = out->lower95 = out->r2 = 0;
	if (n < 2)
		return -1;
	for (i = 0; i < n; i++) {
		mt += t[i];
		mv += v[i];
	}
	mt /= (double)n;
	mv /= (double)n;
	for (i = 0; i < n; i++) {
		double dt = t[i] - mt, dv = v[i] - mv;
		sxx += dt * dt;
		sxy += dt * dv;
		syy += dv * dv;
	}
	if (!(sxx > 0))
		return -1;
	out->slope = sxy / sxx;
	out->intercept = mv - out->slope * mt;
	sse = syy - out->slope * sxy;
	if (sse < 0)
		sse = 0; /* rounding */
	out->r2 = syy > 0 ? 1 - sse / syy : 1;
	if (n >= 3) {
		out->se = sqrt(sse / (double)(n - 2) / sxx);
		if (out->se > 0)
			out->t = out->slope / out->se;
		else
			out->t = out->slope > 0 ? 1e9 : out->slope < 0 ? -1e9 : 0;
		out->lower95 = out->slope - hub_t95((int)(n - 2)) * out->se;
	} else {
		out->lower95 = -INFINITY; /* two points say nothing about noise */
	}
	return 0;
}
