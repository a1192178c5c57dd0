/*
 * ebpf_procs.h — what the eBPF sampler knows about each sampled process:
 * executable mappings (with their ELF files from the symbolize.h cache),
 * labels (process name, container id, cgroup) and the resolved service.
 *
 * A process image — (tgid, image), image being the kernel's address space
 * of the process, new on every exec — is captured from /proc the first
 * time it shows up: the BPF program announces it at its first sample
 * (wt_new_procs), so processes that exit before the flush still symbolize,
 * and a process that execs gets the new binary's mappings while its
 * earlier samples keep the old ones. Capturing is the only time /proc is
 * read for an image (again only when an address misses every mapping:
 * dlopen). An image already gone when first seen is "lost": its samples
 * keep their kernel frames, its user frames stay bare addresses, and its
 * service falls back to the sampled comm.
 *
 * Ownership: the table owns its processes; pointers returned stay valid
 * until edge_procs_sweep or edge_procs_free. Threads: edge_procs_get may
 * run on the discovery thread while the sampler thread symbolizes (one
 * mutex inside); sweep, refresh and set_rules belong to the sampler
 * thread, which alone frees processes.
 */
#ifndef EDGE_EBPF_PROCS_H
#define EDGE_EBPF_PROCS_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "symbolize.h"

enum { EDGE_PROC_LIVE = 1, EDGE_PROC_LOST = 2, EDGE_PROC_KERNEL = 3 };

typedef struct edge_proc_map {
	uint64_t start, end, pgoff;
	edge_elf *elf; /* NULL: not readable as ELF (or [vdso]) */
	char *path;    /* as /proc/PID/maps names it */
} edge_proc_map;

typedef struct edge_proc {
	uint32_t tgid;
	int state;
	uint64_t image;   /* see struct wt_stack_key */
	int superseded;   /* a later image of the same tgid exists (exec) */
	uint64_t seen_ns; /* CLOCK_MONOTONIC time of its first sample (announced),
			   * or a lower bound of it (found at a flush or a scan) */
	char comm[16];    /* process name (thread-group leader) */
	char exe[256];    /* executable base name, "" if unknown */
	char container[65];
	char *cgroup;     /* cgroup v2 path, may be NULL */
	char *service;
	edge_proc_map *maps; /* sorted by start */
	size_t nmaps;
	uint64_t gen;     /* last flush generation with samples */
	uint64_t refreshed_gen; /* maps re-read in this generation */
	struct edge_perfmap *jit; /* /tmp/perf-PID.map, made (and pinned) at the
				     * capture, or at the first address that misses
				     * every mapping (perfmap.h) */
	int jit_sweeps;   /* sweeps since the capture while jit is pinned */
	void *user;       /* the sampler's per-flush slot, valid when user_gen == gen */
	uint64_t user_gen;
	atomic_int unwind_loaded; /* given its unwind tables (discovery or sampler thread) */
	_Atomic size_t unwind_nmaps; /* nmaps when it was given them (mappings re-read since: again) */
	_Atomic uint64_t py_epoch; /* the sampler's py_epoch when checked for CPython (0: never) */
	atomic_int unwind_mode;   /* EDGE_UNWIND_* it was given (its service's mode changed: again) */
	atomic_int lock_skipped; /* a musl process: its lock samples dropped (counted once) */
	int interp;       /* its executable names a dynamic loader (PT_INTERP):
			   * 1 yes, 0 no or not known (read at the capture) */
	struct edge_proc *next;
} edge_proc;

typedef struct edge_procs edge_procs;

/* root: "/proc" (tests may point elsewhere). rules are borrowed and must
 * outlive the table or be replaced with edge_procs_set_rules. */
edge_procs *edge_procs_new(const char *root, edge_elf_cache *elfs, const edge_ebpf_rule *rules, size_t nrules);
void edge_procs_free(edge_procs *t);
void edge_procs_set_rules(edge_procs *t, const edge_ebpf_rule *rules, size_t nrules);
/* on = 1: read mappings as /proc/PID/maps text instead of asking with the
 * PROCMAP_QUERY ioctl (Linux 6.11+). The table switches by itself on a
 * kernel without the ioctl; environment WT_EDGE_PROCMAPS=text sets it at
 * creation (tests of the older kernels' path on a newer one). */
void edge_procs_set_text_maps(edge_procs *t, int on);
/* Close the perf-map descriptors every process holds (perfmap.h): the
 * sampler stops, and a stopped sampler sweeps nothing. */
void edge_procs_close_files(edge_procs *t);

/* The process image (tgid, image), captured now if new (which marks the
 * tgid's earlier images superseded). cgroup_id is the cgroup v2 id sampled
 * with it (0: unknown): a cgroup already seen is not read from /proc again.
 * comm is the sampled thread name (may be NULL), used when /proc has
 * nothing, and instead of /proc/PID/comm when leader says the sampled
 * thread was the group leader. NULL only on OOM or when the table is full. */
edge_proc *edge_procs_get(edge_procs *t, uint32_t tgid, uint64_t image, uint64_t cgroup_id, const char *comm,
			  int leader);
/* The same, for an image first sampled at seen_ns (CLOCK_MONOTONIC, the
 * time bpf_ktime_get_ns gave its announcement, or a lower bound of it).
 * Of the tgid's images, the one sampled first latest is the current one
 * and marks the others superseded, whatever the order of the captures: a
 * pre-exec image captured late does not hide the image after the exec.
 * edge_procs_get is this with seen_ns = now (the order of captures). */
edge_proc *edge_procs_get_at(edge_procs *t, uint32_t tgid, uint64_t image, uint64_t cgroup_id, const char *comm,
			     int leader, uint64_t seen_ns);
/* Re-read the mappings (after an address missed them: exec, dlopen),
 * at most once per generation. */
void edge_procs_refresh(edge_procs *t, edge_proc *p, uint64_t gen);
/* Do p's mappings look like a capture that came too early (no executable;
 * the dynamic loader without libc yet; or a dynamic executable — interp —
 * alone: inside execve, before its loader is mapped)? A capture re-reads them a few
 * times while they do; a loaded machine can take longer than that. */
int edge_proc_maps_early(const edge_proc *p);
/* Which C library p's mappings hold: EDGE_LIBC_GLIBC (*libc, when not
 * NULL, = its libc.so.6 mapping), EDGE_LIBC_MUSL (ld-musl, libc.musl, or
 * a libc.so under a musl directory: Debian's musl-tools),
 * or EDGE_LIBC_NONE (statically linked, or not mapped yet: see
 * edge_proc_maps_early). Pure. */
enum { EDGE_LIBC_NONE = 0, EDGE_LIBC_GLIBC = 1, EDGE_LIBC_MUSL = 2 };
int edge_proc_libc(const edge_proc *p, const edge_proc_map **libc);
/* One executable mapping of a file or the vDSO, as a line of
 * /proc/PID/maps text gives it. */
typedef struct edge_maps_line {
	uint64_t start, end, pgoff, dev, ino; /* dev: major << 32 | minor */
	const char *name; /* "/path" (maybe ending " (deleted)") or "[vdso]"; in the line */
} edge_maps_line;
/* The one reader of /proc/PID/maps text (the process table when the kernel
 * has no PROCMAP_QUERY, the unwind loader's re-checks, the edge's own
 * [vdso]): reads fd, which it closes, calling fn with each executable
 * mapping of a file or [vdso] until fn returns nonzero or the text ends.
 * m->name is valid during the call only. */
void edge_maps_read(int fd, int (*fn)(void *arg, const edge_maps_line *m), void *arg);
/* Mapping containing addr, or NULL. O(log n). */
const edge_proc_map *edge_proc_find_map(const edge_proc *p, uint64_t addr);
/* Name of the JIT-compiled function at addr from the process's perf map
 * (perfmap.h), NULL when it has none there. Sampler thread only; the name
 * stays valid until the next generation's first lookup. */
const char *edge_proc_jit_lookup(edge_procs *t, edge_proc *p, uint64_t addr, uint64_t gen);
/* Drop images without samples in generation gen whose process no longer
 * exists or that a later exec superseded; gone(arg, tgid) is called for
 * each dropped image whose process is gone (may be NULL). */
void edge_procs_sweep(edge_procs *t, uint64_t gen, void (*gone)(void *arg, uint32_t tgid), void *arg);

/* fn(arg, p) for every process in the table (sampler thread: processes
 * are not freed meanwhile; the table's lock is not held during fn). */
void edge_procs_each(edge_procs *t, void (*fn)(void *arg, edge_proc *p), void *arg);

/* counters: processes captured, lost (gone before capture), tracked now,
 * re-reads of early captures */
void edge_procs_stats(const edge_procs *t, uint64_t *captured, uint64_t *lost, uint64_t *tracked,
		      uint64_t *rereads);

#endif
