/*
 * unwindwork.c — workload with a known call chain for the eBPF sampler's
 * unwinding without frame pointers (tests/integration/test_ebpf_unwind.py).
 * Build it like a release build, without frame pointers:
 *   cc -O2 -fomit-frame-pointer -o unwindwork unwindwork.c
 *
 *   unwindwork SECONDS   main → chain_a → chain_b → leaf_deep (~50 %),
 *                        main → chain_a → leaf_mid (~30 %),
 *                        main → leaf_top (~20 %) of the CPU; each leaf's
 *                        thread CPU time measured (CLOCK_THREAD_CPUTIME_ID)
 *   unwindwork SECONDS sleep
 *                        blocked time instead: main → wait_a → wait_b →
 *                        nanosleep(2 ms) in a loop (off-CPU stacks)
 * Output: one JSON object on stdout.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static volatile uint64_t sink;
static int64_t t_deep, t_mid, t_top;

static int64_t cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* the leaves keep a local array so that they need a stack frame of their
 * own (CFA = rsp + N with N > 8) */
#define LEAF(name, mul)                                                    \
	__attribute__((noinline)) void name(long n)                        \
	{                                                                  \
		volatile uint64_t a[8];                                    \
		uint64_t x = sink;                                         \
		for (long i = 0; i < n; i++) {                             \
			x = x * mul + 1442695040888963407ULL;              \
			a[i & 7] = x;                                      \
		}                                                          \
		sink = x + a[3];                                           \
	}
LEAF(leaf_deep, 6364136223846793005ULL)
LEAF(leaf_mid, 2862933555777941757ULL)
LEAF(leaf_top, 3935559000370003845ULL)

__attribute__((noinline)) void chain_b(long n)
{
	int64_t t0 = cpu_ns();
	leaf_deep(n);
	t_deep += cpu_ns() - t0;
	sink++;
}

__attribute__((noinline)) void chain_a(long n)
{
	chain_b(5 * n);
	int64_t t0 = cpu_ns();
	leaf_mid(3 * n);
	t_mid += cpu_ns() - t0;
	sink++;
}

__attribute__((noinline)) void wait_b(void)
{
	volatile uint64_t a[8];
	struct timespec d = {0, 2000000};
	a[sink & 7] = sink;
	nanosleep(&d, NULL);
	sink += a[3];
}

__attribute__((noinline)) void wait_a(void)
{
	wait_b();
	sink++;
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 5;
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	double end = ts.tv_sec + ts.tv_nsec / 1e9 + seconds;
	if (argc > 2 && !strcmp(argv[2], "sleep")) {
		long n = 0;
		do {
			wait_a();
			n++;
			clock_gettime(CLOCK_MONOTONIC, &ts);
		} while (ts.tv_sec + ts.tv_nsec / 1e9 < end);
		printf("{\"pid\":%d,\"sleeps\":%ld}\n", (int)getpid(), n);
		return 0;
	}
	const long unit = 40000;
	for (;;) {
		clock_gettime(CLOCK_MONOTONIC, &ts);
		if (ts.tv_sec + ts.tv_nsec / 1e9 >= end)
			break;
		chain_a(unit);
		int64_t t0 = cpu_ns();
		leaf_top(2 * unit);
		t_top += cpu_ns() - t0;
	}
	printf("{\"pid\":%d,\"cpu_ns\":{\"leaf_deep\":%lld,\"leaf_mid\":%lld,\"leaf_top\":%lld}}\n", (int)getpid(),
	       (long long)t_deep, (long long)t_mid, (long long)t_top);
	return 0;
}
