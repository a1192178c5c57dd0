/*
 * perfmap.h — JIT symbol maps for the eBPF sampler: the text file
 * /tmp/perf-PID.map that JIT runtimes write for perf (Node.js
 * --perf-basic-prof, the JVM's `jcmd PID Compiler.perfmap`, .NET with
 * DOTNET_PerfMapEnabled=1, LuaJIT), one line per compiled function:
 *
 *     START SIZE NAME        (START and SIZE hexadecimal, 0x optional)
 *
 * JIT code lives in anonymous executable memory, which no ELF mapping
 * covers, so the sampler asks here for user addresses that miss every
 * mapping of the process (edge/ebpf_sampler.c user_frame).
 *
 * The file is read through the process's own root (/proc/PID/root/tmp/
 * perf-NSPID.map, NSPID being the pid inside the process's pid namespace),
 * so containers work. Runtimes only append to it; a file that grew is read
 * from where the last read stopped, at most once per sampler generation
 * (flush), and a later entry for the same address wins (code freed and
 * compiled again). A file that shrank was replaced: it is read anew.
 *
 * Limits: at most EDGE_PERFMAP_MAX_BYTES of a file are read and at most
 * EDGE_PERFMAP_MAX_ENTRIES entries kept; past either, the rest of the file
 * is ignored and counted (edge_perfmap_truncated).
 *
 * Ownership: an edge_perfmap belongs to one process (edge_proc) and is
 * used by the sampler thread only; names returned are valid until the next
 * lookup that re-reads the file, or edge_perfmap_free.
 */
#ifndef EDGE_PERFMAP_H
#define EDGE_PERFMAP_H

#include <stddef.h>
#include <stdint.h>

#define EDGE_PERFMAP_MAX_BYTES (64u << 20)
#define EDGE_PERFMAP_MAX_ENTRIES (1u << 20)

typedef struct edge_perfmap edge_perfmap;

/* The map of process tgid under proc_root ("/proc"; tests point
 * elsewhere). Nothing is read yet. NULL on OOM. */
edge_perfmap *edge_perfmap_new(const char *proc_root, uint32_t tgid);
void edge_perfmap_free(edge_perfmap *m);

/* Name of the JIT function whose code contains addr, or NULL. The file is
 * (re)read first when gen differs from the last read's and it grew or is
 * new (gen: the sampler's flush generation). */
const char *edge_perfmap_lookup(edge_perfmap *m, uint64_t addr, uint64_t gen);

/* Entries held now; 1 when the file exceeded a limit (diagnostics). */
size_t edge_perfmap_entries(const edge_perfmap *m);
int edge_perfmap_truncated(const edge_perfmap *m);

#endif
