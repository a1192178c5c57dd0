/*
 * ebpf_unwind.h — unwind tables for the eBPF sampler: from an ELF file's
 * call frame information (.eh_frame, and .debug_frame where present) to
 * sorted compact rows (bpf/unwind.h) that a BPF unwinder looks up by pc.
 * x86-64 register numbers; the DWARF CFI interpreter itself is
 * architecture-neutral (an arm64 table would map its own registers).
 *
 * Tables are built once per file identity (a build id where the file has
 * one) and cached on disk (edge_unwind_get) so a restart or another process
 * of the same binary does not parse again. Ownership: tables are owned by
 * the caller and released with edge_unwind_free.
 */
#ifndef EDGE_EBPF_UNWIND_H
#define EDGE_EBPF_UNWIND_H

#include <linux/types.h>
#include <stddef.h>
#include <stdint.h>

#include "bpf/unwind.h"
#include "err.h"

/* rows bounded per file (the largest binaries have a few million) */
#define EDGE_UNWIND_MAX_ROWS (16u << 20)

typedef struct edge_unwind_table {
	struct wt_unwind_row *rows; /* sorted by pc; consecutive rows differ */
	size_t n;
	size_t fdes;       /* FDEs interpreted */
	size_t coarse;     /* rules an 8-byte row cannot hold, unwound by frame pointers instead */
	size_t cfi_bytes;  /* bytes of .eh_frame + .debug_frame read */
	int from_cache;    /* edge_unwind_get found it on disk */
	/* PT_LOAD segments (file offset → ELF address of a mapping) */
	uint64_t load_off[8], load_vaddr[8], load_filesz[8];
	uint32_t nloads;
} edge_unwind_table;

/* Build the table of the ELF file at path. A file without CFI gets an
 * empty table (n 0), not an error; WT_EINVAL for malformed CFI only where
 * nothing could be read. */
int edge_unwind_build(const char *path, edge_unwind_table **out, wt_err *err);
/* The same through the cache directory cache_dir (created if missing):
 * cache_dir/<key>.wtu, key a build id or another file identity in hex.
 * A damaged cache file is rebuilt. */
int edge_unwind_get(const char *cache_dir, const char *key, const char *path, edge_unwind_table **out,
		    wt_err *err);
/* The row covering ELF virtual address vaddr, or NULL (before the first). */
const struct wt_unwind_row *edge_unwind_find(const edge_unwind_table *t, uint64_t vaddr);
void edge_unwind_free(edge_unwind_table *t);



/* ---- loading tables into the BPF maps (the on-CPU probe's) --------------- */
struct edge_proc;
typedef struct edge_unwind_loader edge_unwind_loader;

/* rows_fd: BPF array of max_rows struct wt_unwind_row; procs_fd: hash
 * tgid → struct wt_unwind_proc; cache_dir: the on-disk table cache (NULL:
 * none). Each file's table is written into the array once (kept until the
 * loader is freed with the maps; when the array is full, further files
 * get no table and their frames fall back to frame pointers). */
edge_unwind_loader *edge_unwind_loader_new(int rows_fd, uint32_t max_rows, int procs_fd, const char *cache_dir);
/* Give process p (live) its mappings with tables: written at once when
 * every file already has its table, else queued (a copy of its mappings)
 * for the loader's own thread, which builds (or reads from the cache) and
 * loads the tables of files seen for the first time, then writes the
 * process's entry with mode (enum wt_unwind_mode). Thread-safe: called on the discovery thread
 * when a process is captured, and on the sampler thread for processes
 * found at a flush. */
void edge_unwind_loader_add(edge_unwind_loader *l, const struct edge_proc *p, uint32_t mode);
/* Take tgid's entry out (the process is gone, or its service now unwinds
 * by frame pointers); its jobs still queued are dropped. */
void edge_unwind_loader_forget(edge_unwind_loader *l, uint32_t tgid);
/* files loaded, rows used, files without a table (not ELF, no CFI,
 * error, array full, queue full), processes waiting for their tables */
void edge_unwind_loader_stats(edge_unwind_loader *l, uint64_t *files, uint64_t *rows, uint64_t *failed,
			      uint64_t *pending);
/* tables built from CFI (not read from the disk cache), the time that
 * took, the CFI bytes they read; tables read from the cache */
void edge_unwind_loader_build_stats(edge_unwind_loader *l, uint64_t *built, uint64_t *build_ns, uint64_t *cfi_bytes,
				    uint64_t *from_cache);
void edge_unwind_loader_free(edge_unwind_loader *l);
#endif
