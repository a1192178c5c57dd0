/*
 * symfile.h — symbol lookups in one ELF debug file (an unstripped binary or
 * a separate `.debug` file) with libdw: FILE OFFSET → function name and,
 * where DWARF is present, file:line and the chain of inlined functions
 * (what `addr2line -f -i -C` prints: DWARF names, demangled); without
 * DWARF the name comes from .symtab/.dynsym. Bytes between functions
 * (alignment padding) have no name here, where addr2line names the
 * function before them.
 *
 * The offset is translated to the ELF virtual address through the PT_LOAD
 * program header that holds it (p_offset/p_vaddr), so PIE and non-PIE
 * binaries and shared libraries work alike; objcopy --only-keep-debug keeps
 * the program headers, so separate debug files translate the same way.
 * In a non-PIE executable (ET_EXEC) a value at or above its lowest load
 * address is taken as a virtual address (what perf script prints there).
 *
 * Thread-safety: a hub_symfile is not thread-safe (libdwfl is not); the
 * symbolizer (symbols.c) serialises calls per file. Ownership: hub_symfile_open()
 * returns a handle owned by the caller (hub_symfile_close), which keeps the
 * file open.
 */
#ifndef HUB_SYMFILE_H
#define HUB_SYMFILE_H

#include <stddef.h>
#include <stdint.h>

#include "err.h"

#define HUB_SYMFRAME_NAME 256
#define HUB_SYMFRAME_FILE 256
#define HUB_SYMFRAMES_MAX 16 /* inline depth kept per address */

typedef struct hub_symframe {
	char name[HUB_SYMFRAME_NAME]; /* function (or inlined function) name */
	char file[HUB_SYMFRAME_FILE]; /* source file, "" when unknown */
	int line;                     /* 0 when unknown */
} hub_symframe;

typedef struct hub_symfile hub_symfile;

/* Open path (an ELF file). WT_EINVAL naming path when it is not ELF. */
int hub_symfile_open(const char *path, hub_symfile **out, wt_err *err);
void hub_symfile_close(hub_symfile *sf);

/* Frames for file offset off, OUTERMOST FIRST (the real function, then
 * the functions inlined into it, the innermost last); returns how many
 * (0 when nothing covers off), at most max. */
size_t hub_symfile_lookup(hub_symfile *sf, uint64_t off, hub_symframe *out, size_t max);

#endif
