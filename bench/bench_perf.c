/*
 * bench_perf.c — parser-only throughput of the perf script decoder
 * (wt_perf_script_decode + wt_folded_encode), without file reading or
 * process start-up, for bench/bench_perf_collapse.sh:
 *   bench_perf FILE [RUNS]     prints "decode_s MBps encode_s" (best of RUNS)
 * Without arguments (bench/run starts every bench binary that way) it only
 * says that bench_perf_collapse.sh drives it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "folded.h"
#include "perf_script.h"

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	double best_dec = 1e30, best_enc = 1e30;
	wt_limits lim;
	char *buf = NULL;
	long n;
	int runs = argc > 2 ? atoi(argv[2]) : 3, r, rc = 1;
	FILE *f;

	if (argc < 2) {
		puts("bench_perf: driven by bench/bench_perf_collapse.sh (bench_perf FILE [RUNS])");
		return 0;
	}
	if (!(f = fopen(argv[1], "rb")) || fseek(f, 0, SEEK_END) || (n = ftell(f)) < 0) {
		perror(argv[1]);
		return 1;
	}
	rewind(f);
	if (!(buf = malloc((size_t)n + 1)) || fread(buf, 1, (size_t)n, f) != (size_t)n) {
		perror(argv[1]);
		goto out;
	}
	wt_limits_default(&lim);
	lim.max_decompressed = (size_t)n + 1;
	for (r = 0; r < (runs > 0 ? runs : 1); r++) {
		wt_profile *p = NULL;
		wt_buf o = WT_BUF_INIT;
		wt_err e;
		double t0 = now(), t1, t2;

		if (wt_perf_script_decode((const uint8_t *)buf, (size_t)n, &lim, 0, &p, &e)) {
			fprintf(stderr, "bench_perf: %s: %s\n", argv[1], e.msg);
			goto out;
		}
		t1 = now();
		if (wt_folded_encode(p, (size_t)wt_profile_find_type(p, "cpu"), &o, &e)) {
			fprintf(stderr, "bench_perf: encode: %s\n", e.msg);
			wt_profile_free(p);
			goto out;
		}
		t2 = now();
		if (t1 - t0 < best_dec)
			best_dec = t1 - t0;
		if (t2 - t1 < best_enc)
			best_enc = t2 - t1;
		wt_profile_free(p);
		wt_buf_free(&o);
	}
	printf("%.4f %.1f %.4f\n", best_dec, (double)n / 1e6 / best_dec, best_enc);
	rc = 0;
out:
	if (f)
		fclose(f);
	free(buf);
	return rc;
}
