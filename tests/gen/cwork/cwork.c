/*
 * cwork.c — a small CPU workload for tests/gen/gen-perf-folded: a few
 * distinct, non-inlined functions (build with -O1 -fno-omit-frame-pointer
 * -fno-inline) so that `perf record -g` sees stable, named stacks.
 *   cwork SECONDS     run for about SECONDS (default 1), print a checksum
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define NOINLINE __attribute__((noinline))

static volatile uint64_t sink;

NOINLINE static uint64_t cw_hash_bytes(const unsigned char *p, size_t n)
{
	uint64_t h = 1469598103934665603ULL;

	for (size_t i = 0; i < n; i++)
		h = (h ^ p[i]) * 1099511628211ULL;
	return h;
}

NOINLINE static int cw_cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

NOINLINE static void cw_sort_ints(uint32_t *v, size_t n, uint32_t seed)
{
	for (size_t i = 0; i < n; i++) {
		seed = seed * 1664525u + 1013904223u;
		v[i] = seed;
	}
	qsort(v, n, sizeof(*v), cw_cmp_u32);
}

NOINLINE static double cw_matmul(const double *a, const double *b, double *c, int n)
{
	for (int i = 0; i < n; i++)
		for (int j = 0; j < n; j++) {
			double s = 0;

			for (int k = 0; k < n; k++)
				s += a[i * n + k] * b[k * n + j];
			c[i * n + j] = s;
		}
	return c[0];
}

NOINLINE static uint64_t cw_fib(int n)
{
	return n < 2 ? (uint64_t)n : cw_fib(n - 1) + cw_fib(n - 2);
}

NOINLINE static void cw_level2(unsigned char *buf, size_t n, uint32_t *v, double *m)
{
	sink += cw_hash_bytes(buf, n);
	cw_sort_ints(v, 20000, (uint32_t)sink);
	sink += (uint64_t)cw_matmul(m, m + 64 * 64, m + 2 * 64 * 64, 64);
}

NOINLINE static void cw_level1(unsigned char *buf, size_t n, uint32_t *v, double *m)
{
	cw_level2(buf, n, v, m);
	sink += cw_fib(22);
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 1.0, t0 = now();
	size_t n = 1 << 18;
	unsigned char *buf = malloc(n);
	uint32_t *v = malloc(20000 * sizeof(*v));
	double *m = malloc(3 * 64 * 64 * sizeof(*m));

	if (!buf || !v || !m)
		return 1;
	memset(buf, 7, n);
	for (int i = 0; i < 2 * 64 * 64; i++)
		m[i] = i % 17;
	while (now() - t0 < secs)
		cw_level1(buf, n, v, m);
	printf("%llu\n", (unsigned long long)sink);
	free(buf);
	free(v);
	free(m);
	return 0;
}
