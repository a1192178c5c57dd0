/*
 * lockwork.c — lock contention workload of tests/integration/test_ebpf_lock.py
 * and bench/ebpf_lock.sh (built there with -O2, no frame pointers).
 *
 *   lockwork contend SECONDS   N threads on one pthread mutex in
 *       contend_mutex, one rwlock writer and two readers in contend_rwlock,
 *       one thread locking its own mutex in uncontended, one thread waiting
 *       on a condition variable in cond_waiter (signalled by cond_signaler
 *       every millisecond). Each thread times its own lock calls with
 *       clock_gettime and counts those that found the lock taken (a failed
 *       trylock first); prints one JSON line {pid, wait_ns{fn}, contentions{fn}}.
 *   lockwork loop PAIRS        PAIRS uncontended lock/unlock pairs on one
 *       mutex, one thread; prints {pairs_per_s, cpu_ns_per_op} (process CPU
 *       time per operation, here and below).
 *   lockwork bench SECONDS     four threads taking one mutex around a short
 *       critical section (contended: futex waits all the time); prints
 *       {locks_per_s, cpu_ns_per_op}.
 *   lockwork syscalls N        N getppid() calls; prints {calls_per_s, cpu_ns_per_op}.
 *
 * (contend only) The first half second spins (the sampler meets the process and gives
 * it its unwind tables), the next half sleeps, then the work starts.
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

#define MUTEX_THREADS 3
#define READERS 2

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_rwlock_t rw = PTHREAD_RWLOCK_INITIALIZER;
static pthread_mutex_t cmu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static atomic_int stop;
static atomic_long signals;
static atomic_llong mutex_ns, rwlock_ns, unc_ns, cond_ns;
static atomic_llong mutex_cont, rwlock_cont, unc_cont;
static volatile uint64_t sink;

static int64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static int64_t cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void busy(int64_t ns)
{
	int64_t end = now_ns() + ns;
	while (now_ns() < end)
		sink++;
}

__attribute__((noinline)) static void contend_mutex(void)
{
	while (!atomic_load(&stop)) {
		int64_t t0 = now_ns();
		if (pthread_mutex_trylock(&mu)) {
			atomic_fetch_add(&mutex_cont, 1);
			pthread_mutex_lock(&mu);
		}
		atomic_fetch_add(&mutex_ns, now_ns() - t0);
		busy(20000);
		pthread_mutex_unlock(&mu);
		busy(20000);
	}
}

__attribute__((noinline)) static void contend_rwlock(int writer)
{
	while (!atomic_load(&stop)) {
		int64_t t0 = now_ns();
		int taken = writer ? pthread_rwlock_trywrlock(&rw) : pthread_rwlock_tryrdlock(&rw);
		if (taken) {
			atomic_fetch_add(&rwlock_cont, 1);
			if (writer)
				pthread_rwlock_wrlock(&rw);
			else
				pthread_rwlock_rdlock(&rw);
		}
		atomic_fetch_add(&rwlock_ns, now_ns() - t0);
		busy(writer ? 200000 : 50000);
		pthread_rwlock_unlock(&rw);
		if (writer) {
			struct timespec ts = {0, 300000};
			nanosleep(&ts, NULL);
		} else {
			busy(30000);
		}
	}
}

__attribute__((noinline)) static void uncontended(void)
{
	pthread_mutex_t own = PTHREAD_MUTEX_INITIALIZER;
	while (!atomic_load(&stop)) {
		int64_t t0 = now_ns();
		pthread_mutex_lock(&own);
		atomic_fetch_add(&unc_ns, now_ns() - t0);
		busy(5000);
		pthread_mutex_unlock(&own);
	}
}

__attribute__((noinline)) static void cond_waiter(void)
{
	long seen = 0;
	pthread_mutex_lock(&cmu);
	while (!atomic_load(&stop)) {
		int64_t t0 = now_ns();
		while (atomic_load(&signals) == seen && !atomic_load(&stop))
			pthread_cond_wait(&cv, &cmu);
		seen = atomic_load(&signals);
		atomic_fetch_add(&cond_ns, now_ns() - t0);
	}
	pthread_mutex_unlock(&cmu);
}

__attribute__((noinline)) static void cond_signaler(void)
{
	while (!atomic_load(&stop)) {
		struct timespec ts = {0, 1000000};
		nanosleep(&ts, NULL);
		pthread_mutex_lock(&cmu);
		atomic_fetch_add(&signals, 1);
		pthread_mutex_unlock(&cmu);
		pthread_cond_signal(&cv);
	}
	pthread_cond_broadcast(&cv);
}

static atomic_llong bench_locks;

static void *bench_thread(void *arg)
{
	long long n = 0;
	(void)arg;
	while (!atomic_load(&stop)) {
		pthread_mutex_lock(&mu);
		for (int i = 0; i < 200; i++)
			sink++;
		pthread_mutex_unlock(&mu);
		for (int i = 0; i < 200; i++)
			sink++;
		n++;
	}
	atomic_fetch_add(&bench_locks, n);
	return NULL;
}

static void *run(void *arg)
{
	switch ((int)(intptr_t)arg) {
	case 0: contend_mutex(); break;
	case 1: contend_rwlock(1); break;
	case 2: contend_rwlock(0); break;
	case 3: uncontended(); break;
	case 4: cond_waiter(); break;
	default: cond_signaler(); break;
	}
	return NULL;
}

static void warm_up(void)
{
	busy(500000000);
	struct timespec ts = {0, 500000000};
	nanosleep(&ts, NULL);
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "loop")) {
		long long pairs = atoll(argv[2]);
		pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
		int64_t t0 = now_ns(), c0 = cpu_ns();
		for (long long i = 0; i < pairs; i++) {
			pthread_mutex_lock(&m);
			sink++;
			pthread_mutex_unlock(&m);
		}
		double s = (double)(now_ns() - t0) / 1e9;
		printf("{\"pairs_per_s\": %.0f, \"cpu_ns_per_op\": %.3f}\n", (double)pairs / s,
		       (double)(cpu_ns() - c0) / (double)pairs);
		return 0;
	}
	if (argc == 3 && !strcmp(argv[1], "syscalls")) {
		long long n = atoll(argv[2]);
		int64_t t0 = now_ns(), c0 = cpu_ns();
		for (long long i = 0; i < n; i++)
			sink += (uint64_t)getppid();
		printf("{\"calls_per_s\": %.0f, \"cpu_ns_per_op\": %.3f}\n", (double)n / ((double)(now_ns() - t0) / 1e9),
		       (double)(cpu_ns() - c0) / (double)n);
		return 0;
	}
	if (argc == 3 && !strcmp(argv[1], "bench")) {
		double secs = atof(argv[2]);
		pthread_t bt[4];
		int64_t t0 = now_ns(), c0 = cpu_ns();
		for (int i = 0; i < 4; i++)
			pthread_create(&bt[i], NULL, bench_thread, NULL);
		struct timespec ts = {(time_t)secs, (long)((secs - (time_t)secs) * 1e9)};
		nanosleep(&ts, NULL);
		atomic_store(&stop, 1);
		for (int i = 0; i < 4; i++)
			pthread_join(bt[i], NULL);
		printf("{\"locks_per_s\": %.0f, \"cpu_ns_per_op\": %.3f}\n", (double)bench_locks / ((double)(now_ns() - t0) / 1e9),
		       (double)(cpu_ns() - c0) / (double)bench_locks);
		return 0;
	}
	if (argc != 3 || strcmp(argv[1], "contend")) {
		fprintf(stderr, "usage: lockwork contend SECONDS | loop PAIRS | bench SECONDS | syscalls N\n");
		return 2;
	}
	double secs = atof(argv[2]);
	int kinds[] = {0, 0, 0, 1, 2, 2, 3, 4, 5};
	size_t n = sizeof(kinds) / sizeof(kinds[0]);
	pthread_t th[16];
	warm_up();
	for (size_t i = 0; i < n; i++)
		pthread_create(&th[i], NULL, run, (void *)(intptr_t)kinds[i]);
	struct timespec ts = {(time_t)secs, (long)((secs - (time_t)secs) * 1e9)};
	nanosleep(&ts, NULL);
	atomic_store(&stop, 1);
	for (size_t i = 0; i < n; i++)
		pthread_join(th[i], NULL);
	printf("{\"pid\": %d, \"wait_ns\": {\"contend_mutex\": %lld, \"contend_rwlock\": %lld, \"uncontended\": %lld, "
	       "\"cond_waiter\": %lld}, \"contentions\": {\"contend_mutex\": %lld, \"contend_rwlock\": %lld, "
	       "\"uncontended\": %lld}, \"mutex_addr\": %llu, \"rwlock_addr\": %llu, \"rwlock_size\": %zu}\n",
	       (int)getpid(), (long long)mutex_ns, (long long)rwlock_ns, (long long)unc_ns, (long long)cond_ns,
	       (long long)mutex_cont, (long long)rwlock_cont, (long long)unc_cont, (unsigned long long)(uintptr_t)&mu,
	       (unsigned long long)(uintptr_t)&rw, sizeof(rw));
	return 0;
}
