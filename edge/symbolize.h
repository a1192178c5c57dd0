/*
 * symbolize.h — addresses to function names for the eBPF sampler.
 *
 * Kernel: /proc/kallsyms, text symbols sorted by address, binary search.
 * User: ELF files (libelf; .symtab, else .dynsym) opened through
 * /proc/PID/root so container binaries resolve, cached by file identity
 * (device, inode, size, mtime) with their build id and PT_LOAD segments, so
 * the cache survives process churn: a process that exits keeps its
 * references and the next process mapping the same file reuses the entry.
 * Names are demangled by the caller (common/demangle.h).
 *
 * Threads: not thread-safe; the sampler thread alone uses them.
 */
#ifndef EDGE_SYMBOLIZE_H
#define EDGE_SYMBOLIZE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "err.h"

/* ---- kernel -------------------------------------------------------------- */
typedef struct edge_ksyms edge_ksyms;

/* Read path (normally "/proc/kallsyms"). Errors: WT_EIO when unreadable,
 * WT_EINVAL when it lists no addresses (kptr_restrict hides them). Caller
 * frees with edge_ksyms_free. O(N log N). */
int edge_ksyms_load(const char *path, edge_ksyms **out, wt_err *err);
void edge_ksyms_free(edge_ksyms *k);
/* Symbol containing addr (the nearest one at or below it), NULL if addr is
 * below the first or past the last symbol. *module receives the module name
 * or NULL for the kernel image. Pointers live as long as k. O(log N). */
const char *edge_ksyms_find(const edge_ksyms *k, uint64_t addr, const char **module);
size_t edge_ksyms_count(const edge_ksyms *k);

/* ---- ELF files ------------------------------------------------------------ */
typedef struct edge_elf edge_elf;
typedef struct edge_elf_cache edge_elf_cache;

/* A cache of at most max_files unreferenced ELF files (referenced ones are
 * never evicted). NULL on OOM. */
edge_elf_cache *edge_elf_cache_new(size_t max_files);
void edge_elf_cache_free(edge_elf_cache *c);
/* Parse every file opened by a capture but not looked up yet, which closes
 * its descriptor: the sampler calls it when it stops, so a disabled
 * sampler holds no file open. Not concurrently with edge_elf_get. */
void edge_elf_cache_parse_pending(edge_elf_cache *c);

/* The ELF file at path (open(2)-able, e.g. /proc/PID/root/usr/lib/x.so)
 * with a new reference. A file new to the cache is only opened here (its
 * fd kept, at most 256 such files at a time, then parsed at once): it is
 * parsed by its first edge_elf_lookup/build_id/nsyms, so capturing a
 * process that maps a large new binary costs an open, not the parse.
 * NULL when it cannot be opened; a file that is not ELF gets no symbols
 * (its frames keep file offsets). Release with edge_elf_unref.
 * Threads: get/unref under the caller's lock (the process table's);
 * lookups (which may parse) from one thread at a time (the sampler's). */
edge_elf *edge_elf_get(edge_elf_cache *c, const char *path);
/* The same, for a file /proc/PID/maps lists with device map_dev and inode
 * map_ino: a file already in the cache under that identity is returned
 * without opening path (each open through /proc/PID/root walks the path
 * again); otherwise as edge_elf_get, remembering the identity. A file
 * rewritten in place (same inode) keeps its cached symbols until evicted
 * (running binaries cannot be written: ETXTBSY). */
edge_elf *edge_elf_get_mapped(edge_elf_cache *c, uint64_t map_dev, uint64_t map_ino, const char *path);
void edge_elf_unref(edge_elf_cache *c, edge_elf *e);

/* Function containing the file offset off (of an executable mapping), or
 * NULL. The name is the symbol as stored (possibly mangled); valid while e
 * is referenced. */
const char *edge_elf_lookup(edge_elf *e, uint64_t off);
/* Lower-case hex build id, "" when the file has none. */
const char *edge_elf_build_id(edge_elf *e);
size_t edge_elf_nsyms(edge_elf *e);
/* 1 once e has been parsed (tests, diagnostics). */
int edge_elf_parsed(const edge_elf *e);

/* Parse a 64-hex container id out of a cgroup path (docker, containerd,
 * cri-o, kubepods layouts all embed one): the last such run wins. Writes
 * "" when there is none. out must hold 65 bytes. */
void edge_container_id(const char *cgroup_path, char out[65]);

#endif
