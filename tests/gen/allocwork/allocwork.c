/*
 * allocwork.c — native allocation workload of
 * tests/integration/test_ebpf_alloc.py and bench/ebpf_alloc.sh.
 *
 *   allocwork run SECONDS GOFILE [STOPFILE]   spins (on CPU, allocating
 *       nothing) until GOFILE exists (the edge has met the process and
 *       probed its libc), then two threads run rounds for SECONDS (and
 *       after that until STOPFILE exists, when given: at most 120 s more;
 *       a loaded machine's edge flushes, and snapshots, less often): in each, small_allocs
 *       (64 x malloc(256)), page_allocs (4 x malloc(4096)), calloc_allocs
 *       (4 x calloc(100, 40)), big_allocs (1 x malloc(96 KiB)) and
 *       realloc_allocs (realloc from NULL through 1..64 KiB, doubling) free
 *       what they allocate at once; leak_allocs (16 x malloc(1024)) never
 *       frees, paced to 8 MiB/s per thread (up to 128 MiB per thread): a
 *       leak that grows with time, not with how fast the machine (or its
 *       kernel's uprobes) runs the rounds. Prints one JSON line {pid, bytes{fn}, calls{fn}, leaked}:
 *       the bytes each function asked for (realloc: each call's new size).
 *   allocwork loop CALLS [GOFILE]  CALLS malloc(64)/free pairs, one thread
 *       (after GOFILE exists, when given); prints {calls, cpu_ns_per_pair}
 *       (process CPU time per pair).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define THREADS 2
#define LEAK_CAP (128LL << 20)  /* per thread */
#define LEAK_PER_S (8LL << 20) /* per thread */
enum { SMALL, PAGE, CALLOC, BIG, REALLOC, LEAK, NFN };
static const char *const names[NFN] = {"small_allocs", "page_allocs", "calloc_allocs",
				       "big_allocs",   "realloc_allocs", "leak_allocs"};
static atomic_llong bytes[NFN], calls[NFN];
static double seconds;
static const char *stopfile;
static void *volatile keep; /* the optimizer must not drop malloc/free pairs */

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static int64_t cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void touch(void *p)
{
	if (!p) {
		perror("allocation");
		exit(1);
	}
	((volatile char *)p)[0] = 1;
	keep = p;
}

__attribute__((noinline)) static void small_allocs(long long *b, long long *c)
{
	for (int i = 0; i < 64; i++) {
		void *p = malloc(256);
		touch(p);
		free(p);
	}
	*b += 64 * 256;
	*c += 64;
}

__attribute__((noinline)) static void page_allocs(long long *b, long long *c)
{
	for (int i = 0; i < 4; i++) {
		void *p = malloc(4096);
		touch(p);
		free(p);
	}
	*b += 4 * 4096;
	*c += 4;
}

__attribute__((noinline)) static void calloc_allocs(long long *b, long long *c)
{
	for (int i = 0; i < 4; i++) {
		void *p = calloc(100, 40);
		touch(p);
		free(p);
	}
	*b += 4 * 4000;
	*c += 4;
}

__attribute__((noinline)) static void big_allocs(long long *b, long long *c)
{
	void *p = malloc(96 * 1024);
	touch(p);
	free(p);
	*b += 96 * 1024;
	*c += 1;
}

__attribute__((noinline)) static void realloc_allocs(long long *b, long long *c)
{
	void *p = NULL;
	for (size_t n = 1024; n <= 64 * 1024; n *= 2) {
		p = realloc(p, n);
		touch(p);
		*b += (long long)n;
		*c += 1;
	}
	free(p);
}

__attribute__((noinline)) static void leak_allocs(long long *b, long long *c, double elapsed)
{
	/* a run without probes would leak gigabytes; a fast one would reach
	 * the cap in a second and show a flat line after it */
	if (*b >= LEAK_CAP || *b >= (long long)(elapsed * LEAK_PER_S))
		return;
	for (int i = 0; i < 16; i++)
		touch(malloc(1024)); /* never freed */
	*b += 16 * 1024;
	*c += 16;
}

static void *worker(void *arg)
{
	long long b[NFN] = {0}, c[NFN] = {0};
	double start = now_s(), end = start + seconds;
	(void)arg;
	for (;;) {
		double t = now_s();
		if (t >= end && (!stopfile || t >= end + 120 || access(stopfile, F_OK) == 0))
			break;
		for (int r = 0; r < 16; r++) {
			small_allocs(&b[SMALL], &c[SMALL]);
			page_allocs(&b[PAGE], &c[PAGE]);
			calloc_allocs(&b[CALLOC], &c[CALLOC]);
			big_allocs(&b[BIG], &c[BIG]);
			realloc_allocs(&b[REALLOC], &c[REALLOC]);
			leak_allocs(&b[LEAK], &c[LEAK], t - start);
		}
	}
	for (int i = 0; i < NFN; i++) {
		atomic_fetch_add(&bytes[i], b[i]);
		atomic_fetch_add(&calls[i], c[i]);
	}
	return NULL;
}

/* spin (on CPU: the sampler meets the process) until gofile exists */
static int wait_go(const char *gofile)
{
	double give_up = now_s() + 60;
	volatile uint64_t spin = 0;
	while (access(gofile, F_OK) != 0) {
		if (now_s() > give_up) {
			fprintf(stderr, "allocwork: %s never appeared\n", gofile);
			return 2;
		}
		for (int i = 0; i < 100000; i++)
			spin += (uint64_t)i;
	}
	return 0;
}

static int run(const char *gofile)
{
	pthread_t t[THREADS];
	if (wait_go(gofile))
		return 2;
	for (int i = 0; i < THREADS; i++)
		pthread_create(&t[i], NULL, worker, NULL);
	for (int i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	printf("{\"pid\": %d, \"bytes\": {", (int)getpid());
	for (int i = 0; i < NFN; i++)
		printf("%s\"%s\": %lld", i ? ", " : "", names[i], (long long)atomic_load(&bytes[i]));
	printf("}, \"calls\": {");
	for (int i = 0; i < NFN; i++)
		printf("%s\"%s\": %lld", i ? ", " : "", names[i], (long long)atomic_load(&calls[i]));
	printf("}, \"leaked\": %lld}\n", (long long)atomic_load(&bytes[LEAK]));
	return 0;
}

__attribute__((noinline)) static void loop(long n)
{
	for (long i = 0; i < n; i++) {
		void *p = malloc(64);
		touch(p);
		free(p);
	}
}

int main(int argc, char **argv)
{
	if ((argc == 4 || argc == 5) && !strcmp(argv[1], "run")) {
		seconds = atof(argv[2]);
		stopfile = argc == 5 ? argv[4] : NULL;
		return run(argv[3]);
	}
	if ((argc == 3 || argc == 4) && !strcmp(argv[1], "loop")) {
		long n = atol(argv[2]);
		if (argc == 4 && wait_go(argv[3]))
			return 2;
		int64_t c0 = cpu_ns();
		loop(n);
		int64_t c1 = cpu_ns();
		printf("{\"calls\": %ld, \"cpu_ns_per_pair\": %.1f}\n", n, (double)(c1 - c0) / (double)n);
		return 0;
	}
	fprintf(stderr, "usage: allocwork run SECONDS GOFILE [STOPFILE] | loop CALLS [GOFILE]\n");
	return 2;
}
