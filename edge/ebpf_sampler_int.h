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
#include "profile.h"
#include "server.h"
#include "symbolize.h"

#define NS_PER_S 1000000000LL

/* per-flush, per-service state */
typedef struct fcache_ent {
	const void *key;
	uint32_t fn;
} fcache_ent;

typedef struct svc {
	char *name;
	wt_profile *p;
	size_t cpu_idx, off_idx;
	int has_off;
	fcache_ent *fc; /* symbol name pointer → function id */
	size_t fc_cap, fc_n;
	struct svc *next;
} svc;

struct edge_ebpf {
	edge_server *srv;
	const edge_config *cfg;
	char *config_path;
	pthread_t th, dth; /* sampler, discovery */
	int started, dstarted;
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
	edge_ksyms *ksyms;
	edge_elf_cache *elfs;
	edge_procs *procs;
	uint64_t gen;
	int64_t window_ns;
	char host[256];
	svc *svcs;
	wt_err flush_err;
	int period_ns_cached;

	/* commits in flight */
	pthread_mutex_t cmu;
	pthread_cond_t ccv;
	int inflight;

	/* metrics */
	edge_ebpf_counters ctr[EDGE_EBPF_NKINDS];
	_Atomic int enabled, offcpu_on, frequency;
	_Atomic uint64_t flushes, profiles, flush_errors, load_errors, commit_errors, truncated, unsym_frames,
		frames, no_proc, samples_cpu, offcpu_ns, reloads, lost_procs, captured_procs, tracked_procs,
		reread_procs, jit_frames, unwind_files, unwind_rows, unwind_failed, unwind_pending,
		unwind_built, unwind_build_ns, unwind_cfi_bytes, unwind_from_cache;
	_Atomic int64_t last_flush_us;
};

/* ebpf_build.c: one drain of both programs into per-service profiles,
 * stored through the ingest pipeline; called on the sampler thread. */
void edge_ebpf_flush(edge_ebpf *e);
/* Free the per-flush service profiles (after a flush, at stop). */
void edge_ebpf_svcs_free(edge_ebpf *e);
/* Queue a live process for its unwind tables (see ebpf_build.c). */
void edge_ebpf_unwind_give(edge_ebpf *e, edge_proc *pr);
/* ebpf_sampler.c: process pr's unwinding mode (EDGE_UNWIND_*) under the
 * current policy (service rules, then ebpf.unwind). */
int edge_ebpf_unwind_mode(const edge_ebpf *e, const edge_proc *pr);

#endif
