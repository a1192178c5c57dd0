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
 * The JVM's `jcmd PID Compiler.perfmap` writes the whole file again each
 * time (same inode, entries in code-cache order, new ones anywhere): the
 * last bytes read before are compared first, and a file changed there is
 * read anew.
 *
 * A process that exits before the flush that names its samples has no
 * /proc entry left. So that its names survive, the map is pinned at the
 * process's capture (an O_PATH descriptor of its /tmp, taken while it
 * runs) until the first sweep after it, and from the first time the file
 * is opened on its descriptor stays open (runtimes keep writing to the
 * same file): reads after the exit use those. At most
 * EDGE_PERFMAP_MAX_HELD descriptors are held by all maps together; past
 * that, maps are read by path only (names of code compiled in the last
 * flush interval of an exited process are then lost).
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
#define EDGE_PERFMAP_MAX_HELD 512u

typedef struct edge_perfmap edge_perfmap;

/* The map of process tgid under proc_root ("/proc"; tests point
 * elsewhere). Nothing is read yet. NULL on OOM. */
edge_perfmap *edge_perfmap_new(const char *proc_root, uint32_t tgid);
void edge_perfmap_free(edge_perfmap *m);

/* Pin the process's /tmp (call while the process runs: at its capture).
 * 0, or -1 when it is gone already or the descriptor limit is reached. */
int edge_perfmap_pin(edge_perfmap *m);
/* Release the pin, keeping the map itself open when it exists by now. */
void edge_perfmap_unpin(edge_perfmap *m);
int edge_perfmap_pinned(const edge_perfmap *m);
/* Close the descriptors m holds (pin, open map): the sampler stopped. The
 * entries stay; the map is read by path again. */
void edge_perfmap_close(edge_perfmap *m);

/* Name of the JIT function whose code contains addr, or NULL. The file is
 * (re)read first when gen differs from the last read's and it grew or is
 * new (gen: the sampler's flush generation). */
const char *edge_perfmap_lookup(edge_perfmap *m, uint64_t addr, uint64_t gen);

/* Entries held now; 1 when the file exceeded a limit (diagnostics). */
size_t edge_perfmap_entries(const edge_perfmap *m);
int edge_perfmap_truncated(const edge_perfmap *m);

#endif
