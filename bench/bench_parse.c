/*
 * bench_parse.c — parser benchmarks against a baseline measured in the same
 * run on the same bytes (ratios, never absolute thresholds):
 *   (a) pprof decode + rollup of a Go CPU profile vs `gunzip -c` of the file,
 *       the two alternating run by run (so both see the same machine load),
 *       in wall time (the headline ratio) and in CPU time (ours: this
 *       process; gunzip: the shell and gunzip it ran, from getrusage).
 *       `gunzip -c` is GNU gzip's own inflater (and a process start);
 *       ours inflates with libdeflate (wt_gunzip), so the run also prints
 *       wt_gunzip alone in this process: the same inflater on both sides;
 *       and the page faults of one decode + rollup (fresh pages touched);
 *   (b) folded decode throughput (MB/s) on a large folded file vs an awk
 *       collapse (sum counts per distinct stack) of the same file.
 * Each figure is the median of --runs runs (default 5).
 *
 *   bench_parse --pprof FILE.pb.gz --folded FILE.folded [--runs N]
 *
 * bench/run generates the folded file and passes the inputs. Exit status is
 * non-zero only when an input cannot be read or decoded.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "compress.h"
#include "err.h"
#include "folded.h"
#include "pprof.h"
#include "profile.h"
#include "rollup.h"

#define MAX_RUNS 15

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int dcmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), dcmp);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static uint8_t *slurp(const char *path, size_t *len)
{
	FILE *fp = fopen(path, "rb");
	uint8_t *buf;
	long n;

	if (!fp)
		return NULL;
	if (fseek(fp, 0, SEEK_END) || (n = ftell(fp)) < 0) {
		fclose(fp);
		return NULL;
	}
	rewind(fp);
	buf = malloc((size_t)n + 1);
	if (buf && fread(buf, 1, (size_t)n, fp) != (size_t)n) {
		free(buf);
		buf = NULL;
	}
	fclose(fp);
	*len = (size_t)n;
	return buf;
}

static double cpu_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Minor page faults of this process so far (fresh pages touched). */
static double self_faults(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_minflt;
}

static double children_cpu_s(void)
{
	struct rusage ru;

	getrusage(RUSAGE_CHILDREN, &ru);
	return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
	       (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

/* Wall time of a shell command (the baseline tools), or -1; *cpu: the
 * CPU time it used (when cpu is not NULL). */
static double time_cmd(const char *cmd, double *cpu)
{
	double t0 = now_s(), c0 = children_cpu_s();

	if (system(cmd) != 0)
		return -1;
	if (cpu)
		*cpu = children_cpu_s() - c0;
	return now_s() - t0;
}

static int bench_pprof(const char *path, int runs)
{
	double ours[MAX_RUNS], dec[MAX_RUNS], base[MAX_RUNS], m_ours, m_base, m_dec;
	double ours_cpu[MAX_RUNS], base_cpu[MAX_RUNS], inf[MAX_RUNS], inf_cpu[MAX_RUNS];
	double faults[MAX_RUNS];
	size_t len, nrows = 0, nsamples = 0;
	int64_t count = 0;
	uint8_t *buf = slurp(path, &len);
	char cmd[4200];
	wt_limits lim;
	int i;

	if (!buf) {
		fprintf(stderr, "bench_parse: cannot read %s\n", path);
		return 1;
	}
	wt_limits_default(&lim);
	snprintf(cmd, sizeof(cmd), "gunzip -c '%s' >/dev/null", path);
	for (i = 0; i < runs; i++) {
		wt_profile *p = NULL;
		wt_rollup r;
		wt_err err;
		double f0 = self_faults(), c0 = cpu_s(), t0 = now_s();
		int ti;

		int bad = wt_pprof_decode(buf, len, &lim, "cpu", &p, &err);

		dec[i] = now_s() - t0;
		if (bad || wt_rollup_build(p, 0, &r, &err)) {
			fprintf(stderr, "bench_parse: %s: %s\n", path, err.msg);
			wt_profile_free(p);
			free(buf);
			return 1;
		}
		ours[i] = now_s() - t0;
		ours_cpu[i] = cpu_s() - c0;
		faults[i] = self_faults() - f0;
		nrows = r.n;
		nsamples = p->nsamples;
		ti = wt_profile_find_type(p, "samples");
		count = ti >= 0 ? wt_profile_total(p, (size_t)ti) : 0;
		wt_rollup_free(&r);
		wt_profile_free(p);
		{
			/* the inflater of wt_pprof_decode alone, on the same bytes */
			uint8_t *raw = NULL;
			size_t rawlen;
			double c1 = cpu_s(), t1 = now_s();

			if (wt_gunzip(buf, len, lim.max_decompressed, &raw, &rawlen, &err)) {
				fprintf(stderr, "bench_parse: %s: %s\n", path, err.msg);
				free(buf);
				return 1;
			}
			inf[i] = now_s() - t1;
			inf_cpu[i] = cpu_s() - c1;
			free(raw);
		}
		if ((base[i] = time_cmd(cmd, &base_cpu[i])) < 0) {
			fprintf(stderr, "bench_parse: gunzip -c %s failed\n", path);
			free(buf);
			return 1;
		}
	}
	m_ours = median(ours, runs);
	m_base = median(base, runs);
	m_dec = median(dec, runs);
	printf("pprof   %s: %zu bytes, %zu sample records, %lld samples, %zu rollup rows\n", path, len,
	       nsamples, (long long)count, nrows);
	printf("pprof   decode+rollup median %.2f ms | gunzip -c median %.2f ms | ratio ours/gunzip %.2f\n",
	       m_ours * 1e3, m_base * 1e3, m_ours / m_base);
	{
		/* the mean too: whether freed memory went back to the kernel
		 * between runs differs run by run (0 faults in some) */
		double sum = 0;

		for (i = 0; i < runs; i++)
			sum += faults[i];
		printf("pprof   (of which decode %.2f ms, rollup %.2f ms; page faults mean %.0f, median %.0f)\n",
		       m_dec * 1e3, (m_ours - m_dec) * 1e3, sum / runs, median(faults, runs));
	}
	{
		double m_inf = median(inf, runs), m_inf_cpu = median(inf_cpu, runs);

		m_ours = median(ours_cpu, runs);
		m_base = median(base_cpu, runs);
		printf("pprof   CPU time: decode+rollup median %.2f ms | gunzip -c median %.2f ms | ratio %.2f\n",
		       m_ours * 1e3, m_base * 1e3, m_base > 0 ? m_ours / m_base : 0.0);
		printf("pprof   same inflater (wt_gunzip = libdeflate, in process): median %.2f ms wall, %.2f ms CPU"
		       " | ratio ours/it %.2f wall, %.2f CPU\n", m_inf * 1e3, m_inf_cpu * 1e3,
		       m_inf > 0 ? median(ours, runs) / m_inf : 0.0, m_inf_cpu > 0 ? m_ours / m_inf_cpu : 0.0);
	}
	if (count < 20000 && nsamples < 20000)
		printf("pprof   NOTE: fewer than 20,000 samples; figures are less meaningful\n");
	free(buf);
	return 0;
}

static int bench_folded(const char *path, int runs)
{
	double ours[MAX_RUNS], base[MAX_RUNS], m_ours, m_base;
	size_t len, nsamples = 0;
	int64_t total = 0;
	uint8_t *buf = slurp(path, &len);
	char cmd[4200];
	wt_limits lim;
	wt_folded_opts opts = {&lim, NULL, NULL, 0, 0};
	int i;

	if (!buf) {
		fprintf(stderr, "bench_parse: cannot read %s\n", path);
		return 1;
	}
	wt_limits_default(&lim);
	lim.max_decompressed = len + 1;
	for (i = 0; i < runs; i++) {
		wt_profile *p = NULL;
		wt_err err;
		double t0 = now_s();

		if (wt_folded_decode(buf, len, &opts, &p, &err)) {
			fprintf(stderr, "bench_parse: %s: %s\n", path, err.msg);
			free(buf);
			return 1;
		}
		ours[i] = now_s() - t0;
		nsamples = p->nsamples;
		total = wt_profile_total(p, 0);
		wt_profile_free(p);
	}
	/* baseline: an awk collapse — sum the counts per distinct stack */
	snprintf(cmd, sizeof(cmd),
		 "awk '{ c = $NF; $NF = \"\"; s[$0] += c } END { for (k in s) n++; print n > \"/dev/null\" }' '%s'",
		 path);
	for (i = 0; i < runs; i++)
		if ((base[i] = time_cmd(cmd, NULL)) < 0) {
			fprintf(stderr, "bench_parse: awk over %s failed\n", path);
			free(buf);
			return 1;
		}
	m_ours = median(ours, runs);
	m_base = median(base, runs);
	printf("folded  %s: %.1f MB, %zu distinct stacks, total %lld\n", path, (double)len / 1e6,
	       nsamples, (long long)total);
	printf("folded  decode median %.1f ms = %.0f MB/s | awk collapse median %.1f ms = %.0f MB/s | speedup vs awk %.1fx\n",
	       m_ours * 1e3, (double)len / 1e6 / m_ours, m_base * 1e3, (double)len / 1e6 / m_base,
	       m_base / m_ours);
	if (len < 50 * 1000 * 1000)
		printf("folded  NOTE: input is smaller than 50 MB\n");
	free(buf);
	return 0;
}

int main(int argc, char **argv)
{
	const char *pprof = NULL, *folded = NULL;
	int runs = 5, i, rc = 0;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--pprof") && i + 1 < argc)
			pprof = argv[++i];
		else if (!strcmp(argv[i], "--folded") && i + 1 < argc)
			folded = argv[++i];
		else if (!strcmp(argv[i], "--runs") && i + 1 < argc)
			runs = atoi(argv[++i]);
		else {
			fprintf(stderr, "usage: bench_parse [--pprof FILE] [--folded FILE] [--runs N]\n");
			return 2;
		}
	}
	if (runs < 1)
		runs = 1;
	if (runs > MAX_RUNS)
		runs = MAX_RUNS;
	if (pprof)
		rc |= bench_pprof(pprof, runs);
	if (folded)
		rc |= bench_folded(folded, runs);
	return rc;
}
