/*
 * ebpf_python.h — CPython frames in the eBPF sampler's profiles: the user
 * side of bpf/python_walk.h (layout shared through bpf/python.h).
 *
 * Detection: a process image whose mappings include a python3.X binary or
 * a libpython3.X shared library that exports _PyRuntime is CPython; its
 * version comes from Py_Version (3.11+) in the same file. A version in the
 * offsets table (edge/ebpf_python.c, one row per version) registers the
 * process in the BPF map wt_py_procs, and the program walks its threads'
 * frames at every sample; any other version is counted and left to native
 * frames.
 *
 * Code objects: the program records code object addresses; their names,
 * files and line tables are read from the process (process_vm_readv) once
 * per (process, code object) and cached — right away when the program
 * announces a new stack (discovery thread), so processes that exit before
 * the flush keep their names, else at the flush.
 *
 * Threads: the discovery and sampler threads both call in; one mutex
 * inside.
 */
#ifndef EDGE_EBPF_PYTHON_H
#define EDGE_EBPF_PYTHON_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

typedef struct edge_py edge_py;

typedef struct edge_py_stats {
	uint64_t procs;      /* processes registered (known version) */
	uint64_t unknown;    /* CPython processes of a version without offsets (native frames only) */
	uint64_t codes;      /* code objects cached now */
	uint64_t read_fail;  /* code objects that could not be read (process gone, bad pointer) */
	uint64_t cache_full; /* code objects not cached: the cache was full */
	uint64_t reused;     /* cached code objects replaced: another one at the same address */
} edge_py_stats;

/* At most max_codes cached code objects. NULL on OOM. */
edge_py *edge_py_new(size_t max_codes);
void edge_py_free(edge_py *py);

/* 1 when a mapping of path may hold CPython (python3* or libpython3*). */
int edge_py_candidate(const char *path);
/* Look at process tgid (files through proc_root, normally "/proc"), whose
 * executable mapping of file (a candidate) starts at start with file
 * offset pgoff: CPython of a known version → registered in map_fd
 * (wt_py_procs; -1: nowhere), 1; anything else, or file NULL (no
 * candidate) → removed from it when it was there, 0. */
int edge_py_detect(edge_py *py, const char *proc_root, uint32_t tgid, const char *file, uint64_t start,
		   uint64_t pgoff, int map_fd);

/* Read and cache the code objects of slots (bpf/python.h) of process tgid
 * that are not cached yet. */
void edge_py_resolve(edge_py *py, uint32_t tgid, const uint64_t *slots, size_t n);

/* One Python frame: "module.qualname (file:line)" into name, the code
 * object's file into file, its line in *line. 0, or -1 when the code
 * object is not cached and cannot be read. */
int edge_py_frame(edge_py *py, uint32_t tgid, uint64_t slot, char *name, size_t ncap, char *file, size_t fcap,
		  int64_t *line);

/* Process tgid is gone (or exec'd): drop its code objects. */
void edge_py_forget(edge_py *py, uint32_t tgid);

void edge_py_get_stats(edge_py *py, edge_py_stats *out);

/* Line of the instruction at code unit idx in a CPython 3.11+ location
 * table (co_linetable) of a code object starting at firstlineno; 0 when
 * the table has no line there. Pure (tests). */
int64_t edge_py_addr2line(const uint8_t *tab, size_t len, int64_t firstlineno, uint32_t idx);
/* "module" of a code object's file: the path after site-packages/,
 * dist-packages/ or lib/pythonX.Y/ (else the base name), without ".py"
 * or "/__init__.py", '/' → '.'; X for "<frozen X>". Into buf (cap > 0).
 * Pure (tests). */
void edge_py_module(const char *file, char *buf, size_t cap);

#endif
