/*
 * bench_flame.c — the flame builder's tree build (common/flame.c) on the
 * shape bench/hub_query.sh stores: S stacks of 11 frames, frame i of stack
 * s named fn<i>_<s mod 3^(i+1)> (~290 k tree nodes for S = 100 k), added in
 * stack order as the hub's aggregate path adds them. Baseline in the same
 * run: wt_flame_add_ids stack by stack (a hash lookup per frame) against
 * wt_flame_add_stacks (the tree a depth at a time). Both builders render
 * the same flame graph (checked, byte for byte, whole and cut at 2048
 * nodes). Medians of --runs runs (default 5), CPU time of this process.
 *
 *   bench_flame [--stacks S] [--runs N]
 *
 * Exit status non-zero when the two renderings differ.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "buf.h"
#include "flame.h"

#define DEPTH 11
#define MAX_RUNS 15

static double cpu_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int dbl_cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), dbl_cmp);
	return v[n / 2];
}

/* A builder with the stacks' names interned; ids[s * DEPTH + i] = name
 * id of frame i of stack s. NULL when out of memory. */
static wt_flame *prepared(size_t ns, uint32_t *ids, int tree_only)
{
	wt_flame *f = wt_flame_new();
	char name[64];
	size_t s, i;
	uint64_t mod;

	if (!f)
		return NULL;
	wt_flame_skip_edges(f);
	if (tree_only)
		wt_flame_skip_functions(f);
	for (s = 0; s < ns; s++)
		for (i = 0, mod = 3; i < DEPTH; i++, mod *= 3) {
			snprintf(name, sizeof(name), "fn%zu_%llu", i, (unsigned long long)(s % mod));
			if (wt_flame_intern(f, name, &ids[s * DEPTH + i])) {
				wt_flame_free(f);
				return NULL;
			}
		}
	return f;
}

int main(int argc, char **argv)
{
	size_t ns = 100000, s;
	int runs = 5, r, tree_only, rc = 0;
	uint32_t *ids, *off, *len;
	int64_t *vals;

	for (r = 1; r + 1 < argc; r += 2) {
		if (!strcmp(argv[r], "--stacks"))
			ns = strtoull(argv[r + 1], NULL, 10);
		else if (!strcmp(argv[r], "--runs"))
			runs = atoi(argv[r + 1]);
	}
	if (runs < 1 || runs > MAX_RUNS || ns < 1 || ns > 10000000) {
		fprintf(stderr, "usage: bench_flame [--stacks 1..10000000] [--runs 1..%d]\n", MAX_RUNS);
		return 2;
	}
	ids = malloc(ns * DEPTH * sizeof(*ids));
	off = malloc(ns * sizeof(*off));
	len = malloc(ns * sizeof(*len));
	vals = malloc(ns * sizeof(*vals));
	if (!ids || !off || !len || !vals)
		return 1;
	for (s = 0; s < ns; s++) {
		off[s] = (uint32_t)(s * DEPTH);
		len[s] = DEPTH;
		vals[s] = 10000000 * (int64_t)(1 + s % 7);
	}
	for (tree_only = 1; tree_only >= 0; tree_only--) {
		double old_t[MAX_RUNS], new_t[MAX_RUNS];
		size_t nodes_note = 0;

		for (r = 0; r < runs; r++) {
			wt_flame *a = prepared(ns, ids, tree_only), *b = prepared(ns, ids, tree_only);
			wt_buf ta = WT_BUF_INIT, tb = WT_BUF_INIT;
			double t;

			if (!a || !b)
				return 1;
			wt_flame_reserve(a, 0, ns * 3);
			wt_flame_reserve(b, 0, ns * 3);
			t = cpu_s();
			for (s = 0; s < ns; s++)
				if (wt_flame_add_ids(a, ids + s * DEPTH, DEPTH, vals[s]))
					return 1;
			old_t[r] = cpu_s() - t;
			t = cpu_s();
			if (wt_flame_add_stacks(b, ids, off, len, vals, ns))
				return 1;
			new_t[r] = cpu_s() - t;
			if (r == 0) {
				size_t cut[2] = {0, 2048}, k;
				for (k = 0; k < 2; k++) {
					wt_buf_reset(&ta);
					wt_buf_reset(&tb);
					if (wt_flame_tree_text(a, "ns", cut[k], NULL, &ta) ||
					    wt_flame_tree_text(b, "ns", cut[k], NULL, &tb))
						return 1;
					if (ta.len != tb.len || memcmp(ta.data, tb.data, ta.len)) {
						fprintf(stderr, "bench_flame: renderings differ (max_nodes %zu)\n", cut[k]);
						rc = 1;
					}
				}
				nodes_note = ta.len;
			}
			wt_buf_free(&ta);
			wt_buf_free(&tb);
			wt_flame_free(a);
			wt_flame_free(b);
		}
		(void)nodes_note;
		printf("flame %s, %zu stacks x %d frames: add_ids per stack %.1f ms, add_stacks %.1f ms"
		       "  ratio %.2fx (median of %d, CPU)\n", tree_only ? "tree only (flamegraph)" : "tree + functions (diff)",
		       ns, DEPTH, median(old_t, runs) * 1e3, median(new_t, runs) * 1e3,
		       median(old_t, runs) / median(new_t, runs), runs);
	}
	free(ids);
	free(off);
	free(len);
	free(vals);
	return rc;
}
