/*
 * ebpfwork.c — workload with known truth for tests/integration/test_ebpf.py
 * and bench/ebpf_overhead.sh. Build with frame pointers and no inlining:
 *   cc -O1 -fno-omit-frame-pointer -fno-inline -o ebpfwork ebpfwork.c
 *
 *   ebpfwork cpu SECONDS      hot_alpha/hot_beta/hot_gamma ~ 50/30/20 % of
 *                             CPU in calls of random length and order,
 *                             each call's thread CPU time measured
 *                             (CLOCK_THREAD_CPUTIME_ID) and printed as JSON
 *   ebpfwork syscall SECONDS  write(2) to /dev/null in syscall_loop: kernel
 *                             frames under a known user function
 *   ebpfwork sleep N MS       N blocking sleeps of MS ms inside
 *                             sleep_in_known_function (raw nanosleep
 *                             syscall, so that function is the user leaf);
 *                             prints the total slept ns measured
 *   ebpfwork spin SECONDS     one busy function (overhead benchmark);
 *                             prints iterations per second
 *   ebpfwork exec SECONDS PROG ARG...
 *                             spins in before_exec_spin, prints its pid,
 *                             then execv(PROG, PROG ARG...) in the same
 *                             process (a new binary under the same pid)
 * Output: one JSON object on stdout.
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static int64_t ns(clockid_t c)
{
	struct timespec ts;
	clock_gettime(c, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static volatile uint64_t sink;

/* the three hot functions differ only in how long they spin */
__attribute__((noinline)) void hot_alpha(long n)
{
	uint64_t x = sink;
	for (long i = 0; i < n; i++)
		x = x * 6364136223846793005ULL + 1442695040888963407ULL;
	sink = x;
}

__attribute__((noinline)) void hot_beta(long n)
{
	uint64_t x = sink;
	for (long i = 0; i < n; i++)
		x = x * 6364136223846793005ULL + 1442695040888963407ULL;
	sink = x;
}

__attribute__((noinline)) void hot_gamma(long n)
{
	uint64_t x = sink;
	for (long i = 0; i < n; i++)
		x = x * 6364136223846793005ULL + 1442695040888963407ULL;
	sink = x;
}

/* one call of hot function i (0 alpha, 1 beta, 2 gamma) with its CPU time */
static void timed_hot(int i, long n, int64_t *t)
{
	int64_t t0 = ns(CLOCK_THREAD_CPUTIME_ID);

	if (i == 0)
		hot_alpha(n);
	else if (i == 1)
		hot_beta(n);
	else
		hot_gamma(n);
	t[i] += ns(CLOCK_THREAD_CPUTIME_ID) - t0;
}

/* The calls vary in length (0.5-1.5x) and order at random: a fixed cycle
 * could beat against the sampler's fixed period and land its samples on
 * one phase of the cycle, biasing the shares whatever the sampler does. */
__attribute__((noinline)) static int run_cpu(double seconds)
{
	const long unit = 200000; /* ~0.1-0.3 ms per call */
	static const long weight[3] = {5, 3, 2};
	uint64_t rng = 0x9e3779b97f4a7c15ULL ^ (uint64_t)ns(CLOCK_MONOTONIC);
	int64_t t[3] = {0, 0, 0}, end = ns(CLOCK_MONOTONIC) + (int64_t)(seconds * 1e9);

	while (ns(CLOCK_MONOTONIC) < end) {
		int first;

		rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17; /* xorshift64 */
		first = (int)(rng % 3);
		for (int k = 0; k < 3; k++) {
			int i = (first + k) % 3;
			long n = weight[i] * unit / 2 + (long)((rng >> (16 + 8 * k)) % (uint64_t)(weight[i] * unit));

			timed_hot(i, n, t);
		}
	}
	int64_t t_a = t[0], t_b = t[1], t_c = t[2];

	printf("{\"mode\":\"cpu\",\"pid\":%d,\"cpu_ns\":{\"hot_alpha\":%lld,\"hot_beta\":%lld,\"hot_gamma\":%lld}}\n",
	       (int)getpid(), (long long)t_a, (long long)t_b, (long long)t_c);
	return 0;
}

__attribute__((noinline)) static int syscall_loop(double seconds)
{
	int fd = open("/dev/null", O_WRONLY);
	char buf[4096];
	long calls = 0;
	int64_t end = ns(CLOCK_MONOTONIC) + (int64_t)(seconds * 1e9);
	if (fd < 0)
		return 1;
	memset(buf, 'x', sizeof(buf));
	while (ns(CLOCK_MONOTONIC) < end) {
		for (int i = 0; i < 1000; i++) {
			if (write(fd, buf, sizeof(buf)) < 0)
				return 1;
			calls++;
		}
	}
	close(fd);
	printf("{\"mode\":\"syscall\",\"pid\":%d,\"calls\":%ld}\n", (int)getpid(), calls);
	return 0;
}

/* The syscall instruction is in this function's body, so the user stack
 * of the blocked thread has this function as its leaf. */
__attribute__((noinline)) void sleep_in_known_function(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
	long ret;
	__asm__ volatile("syscall"
			 : "=a"(ret)
			 : "0"((long)SYS_nanosleep), "D"(&ts), "S"(0L)
			 : "rcx", "r11", "memory");
	(void)ret;
}

__attribute__((noinline)) static int run_sleep(int n, long ms)
{
	int64_t total = 0;
	for (int i = 0; i < n; i++) {
		int64_t t0 = ns(CLOCK_MONOTONIC);
		sleep_in_known_function(ms);
		total += ns(CLOCK_MONOTONIC) - t0;
	}
	printf("{\"mode\":\"sleep\",\"pid\":%d,\"slept_ns\":%lld}\n", (int)getpid(), (long long)total);
	return 0;
}

__attribute__((noinline)) static int run_spin(double seconds)
{
	int64_t t0 = ns(CLOCK_MONOTONIC), end = t0 + (int64_t)(seconds * 1e9);
	long iters = 0;
	while (ns(CLOCK_MONOTONIC) < end) {
		hot_alpha(100000);
		iters++;
	}
	double el = (double)(ns(CLOCK_MONOTONIC) - t0) / 1e9;
	printf("{\"mode\":\"spin\",\"pid\":%d,\"iters_per_s\":%.1f}\n", (int)getpid(), iters / el);
	return 0;
}

__attribute__((noinline)) void before_exec_spin(double seconds)
{
	int64_t end = ns(CLOCK_MONOTONIC) + (int64_t)(seconds * 1e9);
	uint64_t x = sink;
	while (ns(CLOCK_MONOTONIC) < end)
		for (int i = 0; i < 100000; i++)
			x = x * 6364136223846793005ULL + 1442695040888963407ULL;
	sink = x;
}

__attribute__((noinline)) static int run_exec(double seconds, char **argv)
{
	before_exec_spin(seconds);
	printf("{\"mode\":\"exec\",\"pid\":%d}\n", (int)getpid());
	fflush(stdout);
	execv(argv[0], argv);
	perror("execv");
	return 1;
}

__attribute__((noinline)) static void churn_leaf(void)
{
	int64_t end = ns(CLOCK_THREAD_CPUTIME_ID) + 1000000;
	struct timespec nap = {0, 100000};
	while (ns(CLOCK_THREAD_CPUTIME_ID) < end)
		hot_alpha(20000);
	nanosleep(&nap, NULL);
	sleep_in_known_function(3);
}

/* Two functions calling each other or themselves as the path's bits say:
 * every path is a different sequence of return addresses. The increment
 * after each call keeps the calls from becoming tail calls. */
__attribute__((noinline)) void churn_b(int d, unsigned p);

__attribute__((noinline)) void churn_a(int d, unsigned p)
{
	if (d == 0)
		churn_leaf();
	else if (p & 1)
		churn_a(d - 1, p >> 1);
	else
		churn_b(d - 1, p >> 1);
	sink++;
}

__attribute__((noinline)) void churn_b(int d, unsigned p)
{
	if (d == 0)
		churn_leaf();
	else if (p & 1)
		churn_a(d - 1, p >> 1);
	else
		churn_b(d - 1, p >> 1);
	sink++;
}

__attribute__((noinline)) static int run_churn(double seconds, int levels)
{
	int64_t end = ns(CLOCK_MONOTONIC) + (int64_t)(seconds * 1e9);
	unsigned p = 0;
	while (ns(CLOCK_MONOTONIC) < end)
		churn_a(levels, p++);
	printf("{\"mode\":\"churn\",\"pid\":%d,\"paths\":%u}\n", (int)getpid(), p);
	return 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc >= 3 && !strcmp(argv[1], "cpu"))
		return run_cpu(atof(argv[2]));
	if (argc >= 3 && !strcmp(argv[1], "syscall"))
		return syscall_loop(atof(argv[2]));
	if (argc >= 4 && !strcmp(argv[1], "sleep"))
		return run_sleep(atoi(argv[2]), atol(argv[3]));
	if (argc >= 3 && !strcmp(argv[1], "spin"))
		return run_spin(atof(argv[2]));
	if (argc >= 4 && !strcmp(argv[1], "churn"))
		return run_churn(atof(argv[2]), atoi(argv[3]));
	if (argc >= 4 && !strcmp(argv[1], "exec"))
		return run_exec(atof(argv[2]), argv + 3);
	fprintf(stderr, "usage: ebpfwork cpu S | syscall S | sleep N MS | spin S | exec S PROG ARG...\n");
	return 2;
}
