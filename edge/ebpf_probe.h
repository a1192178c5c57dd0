/*
 * ebpf_probe.h — what the sampler (ebpf_sampler.c) needs from the user side
 * of each BPF probe: the on-CPU sampler (ebpf_profile.c, bpf/profile.bpf.c),
 * off-CPU time (ebpf_offcpu.c, bpf/offcpu.bpf.c), lock contention
 * (ebpf_lock.c, bpf/lock.bpf.c) and native allocations (ebpf_alloc.c,
 * bpf/alloc.bpf.c). Internal to edge/.
 *
 * Each probe loads its skeleton, attaches, and on drain hands every
 * aggregated (key, value, user stack, kernel stack) to a callback, then
 * forgets it. Stacks come leaf first as raw instruction pointers. Future
 * unwinders (DWARF, interpreters) slot in as further probes of this shape.
 *
 * Threads: a probe is used by the sampler thread only, except the
 * counters, which are atomics read by /metrics.
 */
#ifndef EDGE_EBPF_PROBE_H
#define EDGE_EBPF_PROBE_H

#include <linux/types.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "bpf/profile.h"
#include "config.h"
#include "err.h"

enum { EDGE_EBPF_CPU = 0, EDGE_EBPF_OFFCPU = 1, EDGE_EBPF_LOCK = 2, EDGE_EBPF_ALLOC = 3, EDGE_EBPF_NKINDS };

/* One aggregated entry. ustack/kstack are NULL (n 0) when the stack is
 * absent: kernel thread, collision, or the stack map entry went missing.
 * py: the sampled thread's CPython frames (bpf/python.h slots, innermost
 * first; NULL when none), pyflags their stack's WT_STACK_* flags. */
typedef void (*edge_ebpf_sink)(void *arg, int kind, const struct wt_stack_key *k, uint64_t value,
			       const uint64_t *ustack, size_t nu, const uint64_t *kstack, size_t nk,
			       const uint64_t *py, size_t npy, uint32_t pyflags);

/* Called for process images (tgid, image: see struct wt_stack_key; with
 * the thread, cgroup and name sampled) seen since the last drain
 * (discovery: lets the sampler read /proc/PID/maps while the process
 * lives). */
typedef void (*edge_ebpf_seen)(void *arg, const struct wt_proc_event *ev);

/* Cumulative counters of one probe kind (across reloads). */
typedef struct edge_ebpf_counters {
	_Atomic uint64_t stat[WT_STAT_MAX]; /* enum wt_stat */
	_Atomic uint64_t missing_stacks;    /* stack ids gone before the drain */
	_Atomic uint64_t entries;           /* aggregated entries drained */
} edge_ebpf_counters;

/* The two generations of a probe's counts and stacks maps (bpf/stacks.h):
 * the programs write the one wt_gen names. */
typedef struct edge_ebpf_gen {
	uint32_t *gen; /* the program's wt_gen (its mmapped .bss) */
	int counts_fd[2], stacks_fd[2];
	size_t max_keys, max_stacks;
} edge_ebpf_gen;

/* Flip the generation, let the programs that still write the old one
 * finish, then read and delete every entry of the old counts and stacks
 * maps (which are therefore empty before they are written again) and hand
 * each entry with its stacks to fn. Shared by both probes. */
int edge_ebpf_drain_gen(const edge_ebpf_gen *g, int kind, edge_ebpf_sink fn, void *arg, edge_ebpf_counters *ctr,
			wt_err *err);
/* Read a hash map (deleting what is read when del) in batches handed to
 * fn (n entries: keys and values packed), at most max entries; fn
 * returning nonzero stops. Returns the entries read. */
typedef int (*edge_ebpf_walk_fn)(void *arg, const void *keys, const void *vals, size_t n);
size_t edge_ebpf_walk(int fd, int del, size_t ksz, size_t vsz, size_t max, edge_ebpf_walk_fn fn, void *arg);
/* Keys only: fn(arg, tgid) for each entry (no deletion). */
void edge_ebpf_scan_keys(int counts_fd, size_t max_keys, edge_ebpf_seen fn, void *arg);
/* Fold the per-CPU stats array into ctr (deltas since prev; prev updated). */
void edge_ebpf_read_stats(int stats_fd, uint64_t prev[WT_STAT_MAX], edge_ebpf_counters *ctr);

/* ---- on-CPU (ebpf_profile.c) -------------------------------------------- */
typedef struct edge_ebpf_cpu edge_ebpf_cpu;

/* Load bpf/profile.bpf.c (mode, map sizes from cfg) and attach one
 * software cpu-clock perf event per online CPU at cfg->frequency_hz.
 * Errors name the step that failed (and the errno). */
/* cache_dir: where unwind tables are cached (when edge_ebpf_cfg_unwinds(cfg)). */
int edge_ebpf_cpu_open(const edge_ebpf_cfg *cfg, const char *cache_dir, edge_ebpf_counters *ctr, edge_ebpf_cpu **out,
		       wt_err *err);
/* Unwinding with tables loaded: process p is unwound as mode
 * (EDGE_UNWIND_*) says: auto / eh_frame give it its tables (first sample
 * of an image; builds and loads the tables of files seen for the first
 * time), fp takes them away (the kernel's frame-pointer walk). No-op when
 * the program was loaded without the unwinder. */
struct edge_proc;
void edge_ebpf_cpu_unwind_add(edge_ebpf_cpu *c, const struct edge_proc *p, int mode);
/* The unwind maps' fds (rows array, process entries): 0, or -1 when the
 * probe was loaded without the unwinder. */
int edge_ebpf_cpu_unwind_fds(const edge_ebpf_cpu *c, int *rows_fd, int *procs_fd);
/* fd of the probe's wt_procs (which 0) or wt_new_procs ring (which 1) */
int edge_ebpf_cpu_procs_fd(const edge_ebpf_cpu *c, int which);
/* files with a table loaded, rows used, files without a table, processes
 * waiting for their tables */
void edge_ebpf_cpu_unwind_stats(edge_ebpf_cpu *c, uint64_t *files, uint64_t *rows, uint64_t *failed,
				uint64_t *pending);
/* edge_unwind_loader_build_stats of the probe's loader (zeros without) */
void edge_ebpf_cpu_unwind_build_stats(edge_ebpf_cpu *c, uint64_t *built, uint64_t *build_ns, uint64_t *cfi_bytes,
				      uint64_t *from_cache);
/* Re-attach the perf events at hz without reloading the program. */
int edge_ebpf_cpu_set_frequency(edge_ebpf_cpu *c, int hz, wt_err *err);
int edge_ebpf_cpu_frequency(const edge_ebpf_cpu *c);
/* Ring mode: consume streamed samples for up to timeout_ms (0 in hash
 * mode: returns at once). seen() is called for new tgids. */
int edge_ebpf_cpu_poll(edge_ebpf_cpu *c, int timeout_ms, edge_ebpf_seen seen, void *arg);
/* Wait up to timeout_ms for process images sampled for the first time
 * (announced by the program through wt_new_procs) and call seen() for
 * each: the discovery thread's loop. Returns the number handled. */
int edge_ebpf_cpu_poll_procs(edge_ebpf_cpu *c, int timeout_ms, edge_ebpf_seen seen, void *arg);
/* The same without waiting: what is announced now (the off-CPU scan calls
 * it between keys, so a long scan does not hold up new processes). */
int edge_ebpf_cpu_consume_procs(edge_ebpf_cpu *c, edge_ebpf_seen seen, void *arg);
/* The process tgid is gone: forget it in the kernel, so that the pid's next
 * process is announced again and the table does not fill up. */
void edge_ebpf_cpu_forget(edge_ebpf_cpu *c, uint32_t tgid);
int edge_ebpf_cpu_drain(edge_ebpf_cpu *c, edge_ebpf_sink fn, void *arg, wt_err *err);
/* CPython frames (bpf/python_walk.h): fn(arg, tgid, slots, n) for each
 * Python stack new in a flush generation, called from the process
 * announcement polls above (the discovery thread); the fd of wt_py_procs,
 * where the edge registers CPython processes (edge/ebpf_python.c). */
typedef void (*edge_ebpf_py_new)(void *arg, uint32_t tgid, const uint64_t *slots, size_t n);
void edge_ebpf_cpu_set_py(edge_ebpf_cpu *c, edge_ebpf_py_new fn, void *arg);
int edge_ebpf_cpu_py_fd(const edge_ebpf_cpu *c);
/* fds of wt_py_procs, wt_py_threads, wt_py_new_stacks (for the off-CPU
 * program to share): 0, or -1 when c is NULL */
int edge_ebpf_cpu_py_fds(const edge_ebpf_cpu *c, int fds[3]);
/* Detach and unload everything (links, perf fds, maps, programs). */
void edge_ebpf_cpu_close(edge_ebpf_cpu *c);

/* ---- off-CPU (ebpf_offcpu.c) ---------------------------------------------- */
typedef struct edge_ebpf_off edge_ebpf_off;

/* cpu: the loaded on-CPU probe, whose CPython maps and unwind tables the
 * off-CPU program shares (NULL: off-CPU samples keep native frames only and
 * frame-pointer stacks; loaded without the unwinder: frame pointers). */
int edge_ebpf_off_open(const edge_ebpf_cfg *cfg, const edge_ebpf_cpu *cpu, edge_ebpf_counters *ctr,
		       edge_ebpf_off **out, wt_err *err);
void edge_ebpf_off_scan(edge_ebpf_off *o, edge_ebpf_seen fn, void *arg);
int edge_ebpf_off_drain(edge_ebpf_off *o, edge_ebpf_sink fn, void *arg, wt_err *err);
void edge_ebpf_off_close(edge_ebpf_off *o);

/* ---- lock contention (ebpf_lock.c) ---------------------------------------- */
typedef struct edge_ebpf_lock edge_ebpf_lock;

/* Load bpf/lock.bpf.c and attach it to the futex syscall's tracepoints.
 * cpu: the loaded on-CPU probe, whose unwind tables and process
 * announcements the program shares (NULL, or loaded without the
 * unwinder: frame-pointer stacks). Entries handed to the sink carry the
 * value kind in key->pad (enum wt_lock_value, bpf/lock.h). */
int edge_ebpf_lock_open(const edge_ebpf_cfg *cfg, const edge_ebpf_cpu *cpu, edge_ebpf_counters *ctr,
			edge_ebpf_lock **out, wt_err *err);
/* addresses: keep each wait's futex word address in the key's
 * kern_stack from now on (bpf/lock.h), for the lock_address label */
int edge_ebpf_lock_drain(edge_ebpf_lock *l, int addresses, edge_ebpf_sink fn, void *arg, wt_err *err);
void edge_ebpf_lock_close(edge_ebpf_lock *l);

/* ---- native allocations (ebpf_alloc.c) ------------------------------------ */
typedef struct edge_ebpf_alloc edge_ebpf_alloc;

/* Values handed to the sink with EDGE_EBPF_ALLOC, in key->pad: the flush's
 * estimates (enum wt_alloc_value, bpf/alloc.h) and the in-use snapshot. */
enum { EDGE_ALLOC_INUSE_BYTES = 2, EDGE_ALLOC_INUSE_OBJECTS = 3 };

/* Load bpf/alloc.bpf.c (nothing attached yet; cfg->alloc_sample_bytes,
 * cfg->alloc_max_live). cpu as for the lock program: its unwind tables. */
int edge_ebpf_alloc_open(const edge_ebpf_cfg *cfg, const edge_ebpf_cpu *cpu, edge_ebpf_counters *ctr,
			 edge_ebpf_alloc **out, wt_err *err);
/* Process p's allocations sampled (on) or not; on: its libc file gets the
 * probes if it has none yet (every process mapping that file runs them);
 * a process without glibc (statically linked, musl) is skipped and
 * counted. Called on the discovery or the sampler thread (a mutex
 * inside); a no-op once decided for p's tgid and on. */
void edge_ebpf_alloc_proc(edge_ebpf_alloc *a, const struct edge_proc *p, int on);
/* The process is gone: its sampled state and live allocations go. */
void edge_ebpf_alloc_forget(edge_ebpf_alloc *a, uint32_t tgid);
/* This flush's estimates (values in key->pad, objects still scaled by
 * WT_ALLOC_OBJ_SCALE) and the in-use snapshot (EDGE_ALLOC_INUSE_*, objects
 * scaled the same). */
int edge_ebpf_alloc_drain(edge_ebpf_alloc *a, edge_ebpf_sink fn, void *arg, wt_err *err);
/* libc files with probes, processes sampled, processes skipped (no glibc:
 * static, musl), live sampled allocations at the last drain */
void edge_ebpf_alloc_stats(edge_ebpf_alloc *a, uint64_t *files, uint64_t *procs, uint64_t *skipped_static,
			   uint64_t *skipped_musl, uint64_t *live);
void edge_ebpf_alloc_close(edge_ebpf_alloc *a);

#endif
