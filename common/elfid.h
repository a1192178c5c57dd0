/*
 * elfid.h — is this an ELF file, and what is its GNU build id (libelf +
 * libdw's dwelf). Used by wtctl (which files of a tree to upload as debug
 * files) and the hub (checking an upload names the file it carries).
 */
#ifndef WT_ELFID_H
#define WT_ELFID_H

#include <libelf.h>
#include <stddef.h>

#include "err.h"

/* 1 when data starts with the ELF magic. Pure. */
int wt_elf_magic(const void *data, size_t len);

/* The GNU build id of an open ELF (lower hex, NUL-terminated) into
 * hex[cap]: 0, or -1 when it has none or it does not fit. Shared by
 * wt_elf_build_id and the edge's symbolizer (edge/symbolize.c). */
int wt_elf_gnu_build_id(Elf *elf, char *hex, size_t cap);

/* Check that data[0..len) is an ELF file and write its GNU build id (lower
 * hex, NUL-terminated) into hex[cap]. WT_EINVAL "<what>: not an ELF file"
 * or "<what>: no GNU build id note". */
int wt_elf_build_id(const void *data, size_t len, const char *what, char *hex, size_t cap, wt_err *err);

/* 1 when the ELF file has a .symtab or .debug_info section (worth
 * uploading as a debug file); 0 otherwise or when it is not ELF. */
int wt_elf_has_symbols(const void *data, size_t len);

#endif
