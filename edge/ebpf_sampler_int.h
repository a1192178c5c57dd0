/*
 * ebpf_sampler_int.h — state shared by the eBPF sampler's two halves:
 * ebpf_sampler.c (thread, live configuration, process discovery, load and
 * unload, /metrics) and ebpf_build.c (drained samples → symbolized frames →
 * one wt_profile per service → the ingest pipeline). Private to edge/ebpf_*.c.
 */
#ifndef WT_EDGE_EBPF_SAMPLER_INT_H
#define WT_EDGE_EBPF_SAMPLER_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "ebpf.h"
#include "ebpf_probe.h"
#include "ebpf_procs.h"
#include "ebpf_python.h"
#include "profile.h"
#include "server.h"
#include "symbolize.h"
#include "u64map.h"

#define NS_PER_S 1000000000LL

/* per-flush, per-service state */
typedef struct svc {
	char *name;
	wt_profile *p;
	size_t cpu_idx, off_idx, lock_idx, cont_idx;
	size_t alloc_idx, aobj_idx, inuse_idx, iobj_idx; /* native allocations (has_alloc) */
	int has_off, has_lock, has_alloc, has_inuse;
	wt_u64map fc; /* symbol name pointer → function id */
	struct svc *next;
} svc;

struct edge_ebpf {
	edge_server *srv;
	const edge_config *cfg;
	char *config_path;
	pthread_t th, dth; /* sampler, discovery */
	int started, dstarted;
	atomic_int hup; /* SIGHUP seen (edge_ebpf_reload): re-read the ebpf section */
	pthread_mutex_t pmu; /* cpu/off pointers: sampler writes, discovery reads */
	_Atomic int pmu_wanted; /* the sampler thread waits for pmu: discovery steps aside */
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int stop, reload;
	edge_ebpf_cfg pending;
	int has_pending;

	/* sampler thread only */
	edge_ebpf_cfg cur;
	edge_ebpf_cpu *cpu;
	edge_ebpf_off *off;
	edge_ebpf_lock *lock; /* lock contention (ebpf_lock.c); NULL when off */
	edge_ebpf_alloc *alloc; /* native allocations (ebpf_alloc.c); NULL when off */
	edge_ksyms *ksyms;
	edge_elf_cache *elfs;
	edge_procs *procs;
	uint64_t gen;
	int64_t window_ns;
	/* CLOCK_MONOTONIC start of the generation the last flush drained (the
	 * flush before it began there; 0 until two flushes): a lower bound of
	 * the first sample's time of an image found at a flush or a scan,
	 * which carries no time (edge_procs_get_at) */
	_Atomic int64_t drained_since_ns, gen_since_ns;
	char host[256];
	svc *svcs;
	wt_err flush_err;
	int period_ns_cached;

	/* CPython frames (ebpf_python.c) */
	edge_py *py;
	pthread_mutex_t pymu;     /* guards pycfg: the sampler thread writes, discovery reads */
	edge_ebpf_cfg pycfg;      /* a copy of the current settings for edge_ebpf_py_on */
	_Atomic uint64_t py_epoch; /* bumped at each load and settings change: processes are checked again */

	/* commits in flight */
	pthread_mutex_t cmu;
	pthread_cond_t ccv;
	int inflight;

	/* metrics */
	edge_ebpf_counters ctr[EDGE_EBPF_NKINDS];
	_Atomic int enabled, offcpu_on, lock_on, alloc_on, frequency;
	_Atomic uint64_t flushes, profiles, flush_errors, load_errors, commit_errors, truncated, unsym_frames,
		frames, no_proc, samples_cpu, offcpu_ns, lock_ns, lock_contentions, alloc_bytes, alloc_files, alloc_procs,
		alloc_skipped_static, alloc_skipped_musl, lock_skipped_musl, alloc_live, reloads, lost_procs, captured_procs, tracked_procs,
		reread_procs, jit_frames, py_frames, py_unnamed, unwind_files, unwind_rows, unwind_failed, unwind_pending,
		unwind_built, unwind_build_ns, unwind_cfi_bytes, unwind_from_cache;
	_Atomic int64_t last_flush_us;
};

/* ebpf_build.c: one drain of the programs into per-service profiles,
 * stored through the ingest pipeline; called on the sampler thread. */
void edge_ebpf_flush(edge_ebpf *e);
/* Free the per-flush service profiles (after a flush, at stop). */
void edge_ebpf_svcs_free(edge_ebpf *e);
/* ebpf_sampler.c: interpreter frames wanted for service (policy, local
 * ebpf.python); check a process once per py_epoch (register it in the
 * program when it is CPython and wanted). Any thread. */
int edge_ebpf_py_on(edge_ebpf *e, const char *service);
void edge_ebpf_py_check(edge_ebpf *e, edge_proc *pr);
/* 1 when pr's lock samples are dropped: a musl process (counted in
 * lock_skipped_musl and logged once, when first met or sampled). */
int edge_ebpf_lock_skips(edge_ebpf *e, edge_proc *pr);
/* Queue a live process for its unwind tables (see ebpf_build.c). */
void edge_ebpf_unwind_give(edge_ebpf *e, edge_proc *pr);
/* ebpf_sampler.c: process pr's unwinding mode (EDGE_UNWIND_*) under the
 * current policy (service rules, then ebpf.unwind). */
int edge_ebpf_unwind_mode(const edge_ebpf *e, const edge_proc *pr);

#endif
